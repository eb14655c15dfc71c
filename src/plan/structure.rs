//! The structural pass: walks the located YAML tree against the plan's JSON Schema and reports
//! every unknown key (with the nearest valid one), missing key and wrong shape at once. serde
//! alone stops at the first; a user fixing a plan in CI wants them all.

use serde_json::Value;

use super::diag::Diagnostic;
use super::loc::{Loc, Node, Scalar};

pub fn check(schema: &Value, node: &Loc<Node>, out: &mut Vec<Diagnostic>) {
    Walker { root: schema }.walk(schema, node, "", out);
}

struct Walker<'a> {
    root: &'a Value,
}

impl<'a> Walker<'a> {
    fn resolve(&self, mut s: &'a Value) -> &'a Value {
        for _ in 0..32 {
            match s.get("$ref").and_then(Value::as_str) {
                Some(r) => {
                    let path = r.trim_start_matches('#');
                    match self.root.pointer(path) {
                        Some(t) => s = t,
                        None => return s,
                    }
                }
                None => return s,
            }
        }
        s
    }

    /// The schema alternatives, flattened through anyOf/oneOf.
    fn alternatives(&self, s: &'a Value, out: &mut Vec<&'a Value>) {
        let s = self.resolve(s);
        let mut nested = false;
        for key in ["anyOf", "oneOf"] {
            if let Some(arr) = s.get(key).and_then(Value::as_array) {
                nested = true;
                for a in arr {
                    self.alternatives(a, out);
                }
            }
        }
        if !nested {
            out.push(s);
        }
    }

    fn walk(&self, schema: &'a Value, node: &Loc<Node>, path: &str, out: &mut Vec<Diagnostic>) {
        let mut alts = Vec::new();
        self.alternatives(schema, &mut alts);
        let Some(alt) = alts.iter().copied().find(|a| accepts(a, &node.value)) else {
            let mut message = format!(
                "{} must be {}, found {}",
                describe_path(path),
                expected_kinds(&alts),
                node.value.kind()
            );
            if let Some(form) = super::hints::accepted_threshold(path, &node.value) {
                message.push_str(&format!("; write it as {form}"));
            }
            out.push(
                Diagnostic::error(message, Some(node.pos))
                    .label(format!("expected {}", expected_kinds(&alts))),
            );
            return;
        };
        match &node.value {
            Node::Map(entries) => self.walk_map(alt, entries, node, path, out),
            Node::Seq(items) => {
                if let Some(items_schema) = alt.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.walk(items_schema, item, &format!("{path}[{i}]"), out);
                    }
                }
            }
            Node::Scalar(_) => {}
        }
    }

    fn walk_map(
        &self,
        schema: &'a Value,
        entries: &[(Loc<Scalar>, Loc<Node>)],
        node: &Loc<Node>,
        path: &str,
        out: &mut Vec<Diagnostic>,
    ) {
        let props = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        let known: Vec<&str> = props
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        // Keys with where each was first set: the located tree keeps duplicates (see
        // `load::options`) so that each one can name the line of the key it repeats.
        let mut seen: Vec<(String, u64)> = Vec::new();
        for (k, v) in entries {
            let key = k.value.text();
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if let Some((_, first)) = seen.iter().find(|(s, _)| *s == key) {
                out.push(
                    Diagnostic::error(
                        format!("duplicate key `{key}` (first set on line {first})"),
                        Some(k.pos),
                    )
                    .label("already set above")
                    .help("a key may appear once per mapping; keep one of them"),
                );
                continue;
            }
            seen.push((key.clone(), k.pos.line));
            if let Some(ps) = props.and_then(|p| p.get(&key)) {
                self.walk(ps, v, &child, out);
            } else if let Some(ap) = additional.filter(|a| a.is_object()) {
                self.walk(ap, v, &child, out);
            } else if additional == Some(&Value::Bool(false)) || props.is_some() {
                let mut d = Diagnostic::error(
                    match suggest(&key, &known) {
                        Some(s) => format!("unknown key `{key}` — did you mean `{s}`?"),
                        None => format!("unknown key `{key}`{}", in_path(path)),
                    },
                    Some(k.pos),
                )
                .label("unknown key");
                if !known.is_empty() {
                    d = d.help(format!("valid keys here: {}", known.join(", ")));
                }
                out.push(d);
            }
        }
        if let Some(req) = schema.get("required").and_then(Value::as_array) {
            for r in req.iter().filter_map(Value::as_str) {
                if !seen.iter().any(|(s, _)| s == r) {
                    out.push(
                        Diagnostic::error(
                            format!("missing required key `{r}`{}", in_path(path)),
                            Some(node.pos),
                        )
                        .label(format!("`{r}` is required here")),
                    );
                }
            }
        }
    }
}

fn in_path(path: &str) -> String {
    if path.is_empty() {
        " at the top level of the plan".to_string()
    } else {
        format!(" in `{path}`")
    }
}

fn describe_path(path: &str) -> String {
    if path.is_empty() {
        "the plan".to_string()
    } else {
        format!("`{path}`")
    }
}

fn types_of(s: &Value) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => {
            if s.get("properties").is_some() {
                vec!["object"]
            } else if s.get("items").is_some() {
                vec!["array"]
            } else if let Some(c) = s.get("const") {
                match c {
                    Value::Number(_) => vec!["integer"],
                    Value::String(_) => vec!["string"],
                    _ => vec![],
                }
            } else {
                vec![]
            }
        }
    }
}

fn accepts(s: &Value, n: &Node) -> bool {
    let types = types_of(s);
    if types.is_empty() {
        return true;
    }
    types.iter().any(|t| {
        matches!(
            (*t, n),
            ("object", Node::Map(_))
                | ("array", Node::Seq(_))
                | ("string", Node::Scalar(Scalar::Str(_)))
                | ("integer", Node::Scalar(Scalar::Int(_)))
                | ("number", Node::Scalar(Scalar::Int(_) | Scalar::Float(_)))
                | ("boolean", Node::Scalar(Scalar::Bool(_)))
                | ("null", Node::Scalar(Scalar::Null))
        )
    })
}

fn expected_kinds(alts: &[&Value]) -> String {
    let mut words: Vec<&str> = Vec::new();
    for a in alts {
        for t in types_of(a) {
            let w = match t {
                "object" => "a mapping",
                "array" => "a list",
                "string" => "a string",
                "integer" => "an integer",
                "number" => "a number",
                "boolean" => "true or false",
                _ => continue,
            };
            if !words.contains(&w) {
                words.push(w);
            }
        }
    }
    match words.len() {
        0 => "a value".to_string(),
        1 => words[0].to_string(),
        _ => {
            let last = words.pop().unwrap_or_default();
            format!("{} or {last}", words.join(", "))
        }
    }
}

/// The known name closest to `word`, if it is close enough to be a typo.
pub fn suggest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let lw = word.to_ascii_lowercase();
    known
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&lw, &k.to_ascii_lowercase()),
                *k,
            )
        })
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let known = ["collective", "sizes", "split", "name"];
        assert_eq!(suggest("colective", &known), Some("collective"));
        assert_eq!(suggest("size", &known), Some("sizes"));
        assert_eq!(suggest("zzzzzz", &known), None);
    }
}
