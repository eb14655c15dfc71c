//! Reading a plan file: bounded input checks, the structural pass, the typed pass, then the
//! semantic checks. Hostile input (alias bombs, huge or binary files, deep nesting) ends in a
//! diagnostic, never a panic or an unbounded allocation.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use super::check;
use super::diag::{Diagnostic, Report};
use super::loc::{Loc, Node, Pos};
use super::model::Plan;
use super::raw::{RawPlan, plan_schema};
use super::structure;

/// Largest plan file accepted. Real plans are a few KiB; anything near this is a mistake.
pub const MAX_PLAN_BYTES: usize = 8 * 1024 * 1024;

/// A checked plan and the warnings found on the way.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub plan: Plan,
    pub report: Report,
}

/// Why a plan file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read plan {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{} has {} error(s)", .0.file, .0.errors().count())]
    Invalid(Report),
}

pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let name = path.display().to_string();
    let io = |source| LoadError::Io {
        path: name.clone(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        return Err(io(std::io::Error::other("it is a directory")));
    }
    if meta.len() > MAX_PLAN_BYTES as u64 {
        let mut r = Report::new(&name, "");
        r.push(too_big(meta.len() as usize));
        return Err(LoadError::Invalid(r));
    }
    let bytes = std::fs::read(path).map_err(io)?;
    parse_bytes(&name, &bytes).map_err(LoadError::Invalid)
}

fn too_big(len: usize) -> Diagnostic {
    Diagnostic::error(
        format!(
            "plan is {len} bytes; plans are limited to {} MiB",
            MAX_PLAN_BYTES >> 20
        ),
        None,
    )
    .help("a plan is a short YAML file; check that this is the file you meant")
}

fn schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(plan_schema)
}

fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    let mut b = serde_saphyr::Budget::default();
    b.max_depth = 48;
    b.max_nodes = 200_000;
    b.max_aliases = 1_000;
    b.max_total_scalar_bytes = MAX_PLAN_BYTES;
    b.max_documents = 1;
    o.budget = Some(b);
    o.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    // YAML 1.2 booleans only: `NCCL_IB_DISABLE: no` or `P: y` must stay the text the user wrote.
    o.strict_booleans = true;
    // Aliases are legitimate (shared criteria), but a plan never needs more than this many
    // replayed events; an alias bomb stops here instead of expanding exponentially.
    o.alias_limits.max_total_replayed_events = 100_000;
    o
}

fn pos_of_byte(text: &[u8], at: usize) -> Pos {
    let before = &text[..at.min(text.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() as u64 + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count() as u64
        + 1;
    Pos {
        line,
        col,
        offset: None,
        len: 1,
    }
}

/// Parses and checks plan text. `file` names it in diagnostics.
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Loaded, Report> {
    if bytes.len() > MAX_PLAN_BYTES {
        let mut r = Report::new(file, "");
        r.push(too_big(bytes.len()));
        return Err(r);
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let lossy = String::from_utf8_lossy(bytes).into_owned();
            let mut r = Report::new(file, lossy);
            let p = pos_of_byte(bytes, e.valid_up_to());
            r.push(
                Diagnostic::error(
                    format!(
                        "plan is not valid UTF-8 (byte 0x{:02x} at line {}, column {})",
                        bytes[e.valid_up_to()],
                        p.line,
                        p.col
                    ),
                    Some(p),
                )
                .help("plans are UTF-8 YAML text; re-save the file as UTF-8"),
            );
            return Err(r);
        }
    };
    parse_str(file, text)
}

pub fn parse_str(file: &str, text: &str) -> Result<Loaded, Report> {
    let mut report = Report::new(file, text);
    if let Some(i) =
        text.find(|c: char| c == '\0' || (c.is_control() && !matches!(c, '\n' | '\r' | '\t')))
    {
        let p = pos_of_byte(text.as_bytes(), i);
        report.push(
            Diagnostic::error(
                format!(
                    "plan contains a control character (U+{:04X}) at line {}, column {}",
                    text[i..].chars().next().map_or(0, |c| c as u32),
                    p.line,
                    p.col
                ),
                Some(p),
            )
            .help("is this a binary file? plans are YAML text"),
        );
        return Err(report);
    }
    let node: Loc<Node> = match serde_saphyr::from_str_with_options(text, options()) {
        Ok(n) => n,
        Err(e) => {
            report.push(yaml_error(&e));
            return Err(report);
        }
    };
    if matches!(node.value, Node::Scalar(super::loc::Scalar::Null)) {
        report.push(
            Diagnostic::error("plan is empty", None)
                .help("a plan needs at least `version: 1`, `name:` and `tests:`"),
        );
        return Err(report);
    }
    let mut diags = Vec::new();
    structure::check(schema(), &node, &mut diags);
    if !diags.is_empty() {
        report.diagnostics = diags;
        return Err(report);
    }
    let raw: RawPlan = match serde_saphyr::from_str_with_options(text, options()) {
        Ok(r) => r,
        Err(e) => {
            report.push(yaml_error(&e));
            return Err(report);
        }
    };
    match check::check(raw) {
        Ok((plan, warnings)) => {
            report.diagnostics = warnings;
            Ok(Loaded { plan, report })
        }
        Err(diags) => {
            report.diagnostics = diags;
            Err(report)
        }
    }
}

fn yaml_error(e: &serde_saphyr::Error) -> Diagnostic {
    let msg = e.without_snippet().to_string();
    // The library prefixes its own location; ours is shown separately.
    let msg = msg
        .split_once(" at line ")
        .map_or(msg.as_str(), |(m, _)| m)
        .trim()
        .to_string();
    Diagnostic::error(format!("invalid YAML: {msg}"), Pos::from_error(e))
}
