//! `--set key.path=value`: one value laid over the plan and the site, at the plan's own key
//! path (`launch.nodes=4`, `env.NCCL_DEBUG=INFO`, `tests.0.iters=50`); the value is YAML
//! (`4`, `"00:30:00"`, `[a, b]`, `{K: v}`).

use super::tree::{At, Item, Source, Tree};
use crate::plan::{Diagnostic, Pos, Report};

/// One `--set`, parsed.
#[derive(Debug, Clone)]
pub struct Set {
    /// The argument as given, which is its line in the `--set` report.
    pub arg: String,
    pub path: Vec<String>,
    pub value: Item,
}

/// The `--set` arguments as one text, a line each: diagnostics about them point there.
pub fn source(args: &[String]) -> String {
    args.join("\n")
}

/// Parses every `--set`; `Err` names each bad one.
pub fn parse(args: &[String]) -> Result<Vec<Set>, Report> {
    let text = source(args);
    let mut report = Report::new("--set", text.as_str());
    let mut offset = 0;
    let mut out = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        match parse_one(i, arg, offset) {
            Ok(s) => out.push(s),
            Err(d) => report.push(d),
        }
        offset += arg.len() + 1;
    }
    if report.has_errors() {
        Err(report)
    } else {
        Ok(out)
    }
}

fn parse_one(i: usize, arg: &str, offset: usize) -> Result<Set, Diagnostic> {
    let line = i as u64 + 1;
    let whole = Pos {
        line,
        col: 1,
        offset: Some(offset),
        len: arg.len(),
    };
    let Some((key, value)) = arg.split_once('=') else {
        return Err(
            Diagnostic::error(format!("`{arg}` is not KEY.PATH=VALUE"), Some(whole))
                .help("e.g. --set launch.nodes=4 or --set env.NCCL_DEBUG=INFO"),
        );
    };
    let path: Vec<String> = key.split('.').map(str::to_string).collect();
    if path.iter().any(|p| p.trim().is_empty()) {
        return Err(Diagnostic::error(
            format!("`{key}` is not a key path (names joined by `.`)"),
            Some(Pos {
                len: key.len(),
                ..whole
            }),
        ));
    }
    let tree = crate::plan::parse_tree("--set", value, "--set value").map_err(|r| {
        let why = r
            .diagnostics
            .first()
            .map_or("invalid", |d| d.message.as_str());
        Diagnostic::error(format!("the value of `{key}`: {why}"), Some(whole))
    })?;
    let mut value = Item::from_loc(&tree, Source::Set(i), value);
    let skip = key.len() + 1;
    value.shift(line - 1, skip as u64, offset + skip);
    if !value.at.pos.is_known() {
        value.at.pos = Pos {
            line,
            col: skip as u64 + 1,
            offset: Some(offset + skip),
            len: arg.len() - skip,
        };
    }
    Ok(Set {
        arg: arg.to_string(),
        path,
        value,
    })
}

/// Lays `set` onto `root` at its path; the mappings on the way are made when missing. `Err`
/// when the path runs into a value that is not a mapping or a list (or past a list's end).
pub fn apply(root: &mut Item, set: Set) -> Result<(), Diagnostic> {
    // Keys a `--set` makes point at its key path.
    let key_at = At {
        source: set.value.at.source,
        pos: Pos {
            col: 1,
            offset: set
                .value
                .at
                .pos
                .offset
                .map(|o| o.saturating_sub(set.arg.find('=').map_or(0, |k| k + 1))),
            len: set.arg.find('=').unwrap_or(0),
            ..set.value.at.pos
        },
    };
    let mut here = root;
    let (last, walk) = set.path.split_last().expect("a key path has a name");
    for (depth, name) in walk.iter().enumerate() {
        if !steps_into(here, name) {
            return Err(refused(&set, depth, here));
        }
        // `steps_into` said it goes; `None` cannot be, but is an error rather than a panic.
        here = step(here, name, key_at).ok_or_else(|| {
            Diagnostic::error(format!("--set {}: cannot set this path", set.arg), None)
        })?;
    }
    match &mut here.value {
        Tree::Map(entries) => match entries.iter_mut().find(|(k, _)| &k.name == last) {
            Some((_, slot)) => slot.merge(set.value),
            None => entries.push((
                super::tree::Key {
                    name: last.clone(),
                    at: key_at,
                },
                set.value,
            )),
        },
        Tree::Seq(items) => match last.parse::<usize>().ok().filter(|n| *n < items.len()) {
            Some(n) => items[n].merge(set.value),
            None => return Err(refused(&set, walk.len(), here)),
        },
        Tree::Scalar(_) => return Err(refused(&set, walk.len(), here)),
    }
    Ok(())
}

/// Whether [`step`] can go down `name` from `here`: a mapping, or a list with that item.
fn steps_into(here: &Item, name: &str) -> bool {
    match &here.value {
        Tree::Map(_) => true,
        Tree::Seq(items) => name.parse::<usize>().is_ok_and(|n| n < items.len()),
        Tree::Scalar(_) => false,
    }
}

/// One step down a key path where [`steps_into`] says it goes: a mapping's entry (made when
/// missing) or a list's item.
fn step<'a>(here: &'a mut Item, name: &str, at: At) -> Option<&'a mut Item> {
    match &mut here.value {
        Tree::Map(entries) => {
            let i = match entries.iter().position(|(k, _)| k.name == name) {
                Some(i) => i,
                None => {
                    let key = super::tree::Key {
                        name: name.to_string(),
                        at,
                    };
                    entries.push((key, Item::empty_map(at)));
                    entries.len() - 1
                }
            };
            entries.get_mut(i).map(|(_, v)| v)
        }
        Tree::Seq(items) => items.get_mut(name.parse::<usize>().ok()?),
        Tree::Scalar(_) => None,
    }
}

/// Why the `depth`-th name of `set`'s path cannot be stepped into from `here`, its container.
fn refused(set: &Set, depth: usize, here: &Item) -> Diagnostic {
    let container = set.path[..depth].join(".");
    let container = if container.is_empty() {
        "the plan".to_string()
    } else {
        format!("`{container}`")
    };
    let why = match &here.value {
        Tree::Seq(items) => format!(
            "{container} is a list of {} item(s): `{}` is no index of it",
            items.len(),
            set.path[depth]
        ),
        Tree::Map(_) => format!("{container} has no `{}`", set.path[depth]),
        Tree::Scalar(s) => format!(
            "{container} is {}, not a mapping: nothing can be set inside it",
            s.kind()
        ),
    };
    Diagnostic::error(format!("--set {}: {why}", set.arg), Some(set.value.at.pos))
}
