//! Located YAML values: what lets every plan error point at file:line:col.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A position in the plan source: 1-based line and column (characters), plus the byte span when
/// known, for snippets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u64,
    pub col: u64,
    pub offset: Option<usize>,
    pub len: usize,
}

impl Pos {
    fn from_location(l: serde_saphyr::Location) -> Pos {
        let span = l.span();
        Pos {
            line: l.line(),
            col: l.column(),
            offset: span.byte_offset().map(|o| o as usize),
            len: span.byte_len().unwrap_or(0) as usize,
        }
    }

    pub fn from_error(e: &serde_saphyr::Error) -> Option<Pos> {
        e.location()
            .filter(|l| *l != serde_saphyr::Location::UNKNOWN)
            .map(Pos::from_location)
    }

    pub fn is_known(&self) -> bool {
        self.line > 0
    }
}

/// A deserialized value with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Loc<T> {
    pub value: T,
    /// Where the value is used, which diagnostics point at: an alias (`*name`) is its own place.
    pub pos: Pos,
    /// Where the value itself is written: the anchored value for an alias (or a merge key),
    /// otherwise `pos`. Its span is the text the user typed, for values kept as written.
    pub defined: Pos,
}

impl<T> Loc<T> {
    pub fn new(value: T, pos: Pos) -> Self {
        Loc {
            value,
            pos,
            defined: pos,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Loc<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = serde_saphyr::Spanned::<T>::deserialize(d)?;
        Ok(Loc {
            value: s.value,
            pos: Pos::from_location(s.referenced),
            defined: Pos::from_location(s.defined),
        })
    }
}

impl<T: JsonSchema> JsonSchema for Loc<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        T::json_schema(g)
    }
}

/// Any YAML scalar. Plan leaves that need semantic parsing (sizes, thresholds, names of dtypes)
/// are read as scalars so that one bad value never hides the others behind a serde error.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

impl Scalar {
    /// The scalar as the user would read it back (numbers without quotes).
    pub fn text(&self) -> String {
        match self {
            Scalar::Null => String::new(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Str(s) => s.clone(),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Scalar::Null => "null",
            Scalar::Bool(_) => "a boolean",
            Scalar::Int(_) => "an integer",
            Scalar::Float(_) => "a number",
            Scalar::Str(_) => "a string",
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scalar (string, number or boolean)")
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v.into()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Scalar, E> {
        i128::try_from(v)
            .map(Scalar::Int)
            .map_err(|_| E::custom("integer too large"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

impl JsonSchema for Scalar {
    fn schema_name() -> Cow<'static, str> {
        "Scalar".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": ["string", "number", "boolean"] })
    }
}

/// A generic located YAML tree, used for the structural pass (unknown and missing keys, wrong
/// shapes) that reports every such error at once, before the typed pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Scalar(Scalar),
    Seq(Vec<Loc<Node>>),
    Map(Vec<(Loc<Scalar>, Loc<Node>)>),
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Null))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Int(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Int(v.into())))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Int(v)))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        ScalarVisitor.visit_u128(v).map(Node::Scalar)
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Str(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(Scalar::Str(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Loc<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(k) = map.next_key::<Loc<Scalar>>()? {
            let v = map.next_value::<Loc<Node>>()?;
            entries.push((k, v));
        }
        Ok(Node::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

impl Node {
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Scalar(s) => s.kind(),
            Node::Seq(_) => "a list",
            Node::Map(_) => "a mapping",
        }
    }
}
