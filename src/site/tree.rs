//! A located YAML tree that remembers which layer wrote each value (the plan, the site file, a
//! `--set`), so the layered plan's diagnostics and `baton config` name the file and line a value
//! came from.

use crate::plan::{Loc, Node, Pos, Scalar};

/// Which layer wrote a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Plan,
    Site,
    /// The `--set` at this index of the command line.
    Set(usize),
}

/// Where a value was written: its layer and its place in that layer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub source: Source,
    pub pos: Pos,
}

/// A mapping key and where it was written.
#[derive(Debug, Clone)]
pub struct Key {
    pub name: String,
    pub at: At,
}

#[derive(Debug, Clone)]
pub enum Tree {
    Scalar(Scalar),
    Seq(Vec<Item>),
    Map(Vec<(Key, Item)>),
}

#[derive(Debug, Clone)]
pub struct Item {
    pub value: Tree,
    pub at: At,
    /// A non-string scalar's text as its layer wrote it (`1.10`, `0x10`): the plan keeps
    /// environment values as written, so the layered text must too.
    pub written: Option<String>,
}

impl Item {
    /// `text` is the layer's source, for scalars kept as written.
    pub fn from_loc(node: &Loc<Node>, source: Source, text: &str) -> Item {
        let at = At {
            source,
            pos: node.pos,
        };
        let value = match &node.value {
            Node::Scalar(s) => {
                return Item {
                    written: as_written(s, node, text),
                    value: Tree::Scalar(s.clone()),
                    at,
                };
            }
            Node::Seq(items) => Tree::Seq(
                items
                    .iter()
                    .map(|i| Item::from_loc(i, source, text))
                    .collect(),
            ),
            Node::Map(entries) => Tree::Map(
                entries
                    .iter()
                    .map(|(k, v)| {
                        let key = Key {
                            name: k.value.text(),
                            at: At { source, pos: k.pos },
                        };
                        (key, Item::from_loc(v, source, text))
                    })
                    .collect(),
            ),
        };
        Item {
            value,
            at,
            written: None,
        }
    }

    pub fn empty_map(at: At) -> Item {
        Item {
            value: Tree::Map(Vec::new()),
            at,
            written: None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Item> {
        match &self.value {
            Tree::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes `key` out of a mapping.
    pub fn remove(&mut self, key: &str) -> Option<(Key, Item)> {
        match &mut self.value {
            Tree::Map(entries) => {
                let i = entries.iter().position(|(k, _)| k.name == key)?;
                Some(entries.remove(i))
            }
            _ => None,
        }
    }

    /// Lays `over` onto this value: mappings merge key by key, anything else is replaced.
    pub fn merge(&mut self, over: Item) {
        match (&mut self.value, over.value) {
            (Tree::Map(mine), Tree::Map(theirs)) => {
                for (k, v) in theirs {
                    match mine.iter_mut().find(|(m, _)| m.name == k.name) {
                        Some((_, slot)) => slot.merge(v),
                        None => mine.push((k, v)),
                    }
                }
            }
            (_, value) => {
                *self = Item {
                    value,
                    at: over.at,
                    written: over.written,
                }
            }
        }
    }

    /// Moves every position by `line` lines, `col` columns and `offset` bytes (a `--set` value
    /// parsed on its own, placed after its key on its line).
    pub fn shift(&mut self, line: u64, col: u64, offset: usize) {
        let move_pos = |p: &mut Pos| {
            if p.is_known() {
                p.line += line;
                p.col += col;
                p.offset = p.offset.map(|o| o + offset);
            }
        };
        move_pos(&mut self.at.pos);
        match &mut self.value {
            Tree::Scalar(_) => {}
            Tree::Seq(items) => items.iter_mut().for_each(|i| i.shift(line, col, offset)),
            Tree::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                move_pos(&mut k.at.pos);
                v.shift(line, col, offset);
            }),
        }
    }

    /// Every scalar and empty collection with its dotted path (`launch.slurm.partition`,
    /// `tests.0.name`), in document order.
    pub fn leaves(&self) -> Vec<(String, &Item)> {
        let mut out = Vec::new();
        self.collect("", &mut out);
        out
    }

    fn collect<'a>(&'a self, path: &str, out: &mut Vec<(String, &'a Item)>) {
        let join = |k: &str| {
            if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            }
        };
        match &self.value {
            Tree::Seq(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    item.collect(&join(&i.to_string()), out);
                }
            }
            Tree::Map(entries) if !entries.is_empty() => {
                for (k, v) in entries {
                    v.collect(&join(&k.name), out);
                }
            }
            _ => out.push((path.to_string(), self)),
        }
    }
}

/// The plan's own rule for values kept as written (`check::env`'s `as_written`): one plain
/// scalar's text, never a quoted one.
fn as_written(s: &Scalar, node: &Loc<Node>, text: &str) -> Option<String> {
    if matches!(s, Scalar::Str(_)) {
        return None;
    }
    let start = node.defined.offset?;
    let t = text.get(start..start.checked_add(node.defined.len)?)?;
    let plain = !t.is_empty() && !t.starts_with(['"', '\'']) && !t.contains(char::is_whitespace);
    plain.then(|| t.to_string())
}
