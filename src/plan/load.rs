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
use super::trust::{self, Trust};

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

/// Loads a plan as data: program-running keys are errors (see [`super::trust`]).
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    load_file_with(path, Trust::Data)
}

pub fn load_file_with(path: &Path, trust: Trust) -> Result<Loaded, LoadError> {
    let (name, bytes) = read_file(path)?;
    parse_bytes_with(&name, &bytes, trust).map_err(LoadError::Invalid)
}

/// The plan file's bytes, bounded by [`MAX_PLAN_BYTES`] actually read; an oversized plan is a
/// diagnostic like any other invalid plan.
pub fn read_file(path: &Path) -> Result<(String, Vec<u8>), LoadError> {
    use crate::input::{ReadError, read_bounded};
    let name = path.display().to_string();
    match read_bounded(path, MAX_PLAN_BYTES, "plan") {
        Ok(bytes) => Ok((name, bytes)),
        Err(ReadError::TooBig { size, .. }) => {
            let mut r = Report::new(&name, "");
            r.push(too_big(&format!("at least {size}")));
            Err(LoadError::Invalid(r))
        }
        Err(e) => Err(LoadError::Io {
            path: name,
            source: e.into_io(),
        }),
    }
}

/// `len` says how many bytes, as text: a bounded read knows only a lower bound.
fn too_big(len: &str) -> Diagnostic {
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

/// Deepest nesting of YAML lists and mappings; real plans use about six levels.
const MAX_DEPTH: usize = 48;
/// Most YAML nodes (scalars, lists, mappings) in one plan.
const MAX_NODES: usize = 200_000;
/// Most aliases (`*name`) in one plan.
const MAX_ALIASES: usize = 1_000;
/// Most YAML events that aliases may replay in total.
const MAX_REPLAYED_EVENTS: usize = 100_000;

/// `duplicates` is `PassThrough` for the located tree, so that the structural pass reports every
/// duplicate key with the line of its first occurrence, and `Error` for the typed pass.
pub(crate) fn options(duplicates: serde_saphyr::DuplicateKeyPolicy) -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    let mut b = serde_saphyr::Budget::default();
    b.max_depth = MAX_DEPTH;
    b.flow_nesting_limit = MAX_DEPTH;
    b.max_nodes = MAX_NODES;
    b.max_aliases = MAX_ALIASES;
    b.max_total_scalar_bytes = MAX_PLAN_BYTES;
    b.max_documents = 1;
    o.budget = Some(b);
    o.duplicate_keys = duplicates;
    // YAML 1.2 booleans only: `NCCL_IB_DISABLE: no` or `P: y` must stay the text the user wrote.
    o.strict_booleans = true;
    // Aliases are legitimate (shared criteria), but a plan never needs more than this many
    // replayed events; an alias bomb stops here instead of expanding exponentially.
    o.alias_limits.max_total_replayed_events = MAX_REPLAYED_EVENTS;
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

/// Parses and checks plan bytes (UTF-8 YAML) as data. `file` names it in diagnostics.
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Loaded, Report> {
    parse_bytes_with(file, bytes, Trust::Data)
}

pub fn parse_bytes_with(file: &str, bytes: &[u8], trust: Trust) -> Result<Loaded, Report> {
    if bytes.len() > MAX_PLAN_BYTES {
        let mut r = Report::new(file, "");
        r.push(too_big(&bytes.len().to_string()));
        return Err(r);
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            // Not text: never quoted, named by line and column.
            let mut r = Report::new(file, "");
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
    parse_str_with(file, text, trust)
}

/// Stack for parsing a plan. The YAML deserializer recurses once per nesting level, with frames
/// of about 40 KiB in debug builds: a plan at the [`MAX_DEPTH`] limit needs about 2 MiB, all of a
/// spawned thread's default stack (every `cargo test` thread), so a caller's stack must not decide
/// whether hostile nesting ends in a diagnostic or in an abort.
const PARSE_STACK_BYTES: usize = 16 << 20;

/// Parses and checks plan text as data. `file` names it in diagnostics.
pub fn parse_str(file: &str, text: &str) -> Result<Loaded, Report> {
    parse_str_with(file, text, Trust::Data)
}

pub fn parse_str_with(file: &str, text: &str, trust: Trust) -> Result<Loaded, Report> {
    on_parse_stack(|| parse_on_this_stack(file, text, trust))
}

/// Runs a parse on a thread with [`PARSE_STACK_BYTES`] of stack.
fn on_parse_stack<T: Send>(parse: impl FnOnce() -> T + Send + Copy) -> T {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("baton-plan-parse".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(scope, parse);
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had (a process at its thread limit): the caller's stack it is.
            Err(_) => parse(),
        }
    })
}

fn parse_on_this_stack(file: &str, text: &str, trust: Trust) -> Result<Loaded, Report> {
    parse_checked(file, text, trust, &|_| false, true).map(|(loaded, _)| loaded)
}

/// Whether the program-running key at a position was vouched for by someone other than the
/// plan's author (a site file's own lines), so that it stands without `--trust-plan`.
pub type Vouched<'a> = &'a (dyn Fn(Pos) -> bool + Sync);

/// Parses and checks plan text whose program-running keys stand where `vouched` says so;
/// also says whether any did (the plan then carries keys a site vouched for).
pub fn parse_str_vouched(
    file: &str,
    text: &str,
    trust: Trust,
    vouched: Vouched<'_>,
) -> Result<(Loaded, bool), Report> {
    on_parse_stack(|| parse_checked(file, text, trust, vouched, true))
}

/// A YAML document as a located tree, under the plan's bounds (size, depth, nodes, aliases,
/// control characters): what a site file and a `--set` value are read with. `what` names the
/// document in diagnostics ("site file").
pub fn parse_tree(file: &str, text: &str, what: &str) -> Result<Loc<Node>, Report> {
    on_parse_stack(|| tree_on_this_stack(file, text, what))
}

fn tree_on_this_stack(file: &str, text: &str, what: &str) -> Result<Loc<Node>, Report> {
    // What does not parse as YAML is not quoted: `/proc/self/environ`, a credentials file.
    let mut report = Report::new(file, "");
    if let Some(d) = control_character(text, what) {
        report.push(d);
        return Err(report);
    }
    serde_saphyr::from_str_with_options(text, options(serde_saphyr::DuplicateKeyPolicy::Error))
        .map_err(|e| {
            report.push(yaml_error(&e, text));
            report
        })
}

fn control_character(text: &str, what: &str) -> Option<Diagnostic> {
    let i =
        text.find(|c: char| c == '\0' || (c.is_control() && !matches!(c, '\n' | '\r' | '\t')))?;
    let p = pos_of_byte(text.as_bytes(), i);
    Some(
        Diagnostic::error(
            format!(
                "{what} contains a control character (U+{:04X}) at line {}, column {}",
                text[i..].chars().next().map_or(0, |c| c as u32),
                p.line,
                p.col
            ),
            Some(p),
        )
        .help(format!("is this a binary file? a {what} is YAML text")),
    )
}

/// `and_the_rest`: after structural errors in some tests, check the other tests too.
fn parse_checked(
    file: &str,
    text: &str,
    trust: Trust,
    vouched: Vouched<'_>,
    and_the_rest: bool,
) -> Result<(Loaded, bool), Report> {
    // Until the text parses as YAML it is not quoted (a plan that is a link to
    // `/proc/self/environ` or to a credentials file): its errors name line and column only.
    let unquoted = |d: Diagnostic| {
        let mut r = Report::new(file, "");
        r.push(d);
        r
    };
    if let Some(d) = control_character(text, "plan") {
        return Err(unquoted(d));
    }
    let node: Loc<Node> = match serde_saphyr::from_str_with_options(
        text,
        options(serde_saphyr::DuplicateKeyPolicy::PassThrough),
    ) {
        Ok(n) => n,
        Err(e) => return Err(unquoted(yaml_error(&e, text))),
    };
    let mut report = Report::new(file, text);
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
        let rest = and_the_rest
            .then(|| super::partial::without_broken_tests(text, &node, &diags))
            .flatten()
            // What is left must still be YAML on its own: an alias whose anchor was blanked
            // would be an error of the check, not of the plan as written.
            .filter(|rest| {
                serde_saphyr::from_str_with_options::<Loc<Node>>(
                    rest,
                    options(serde_saphyr::DuplicateKeyPolicy::PassThrough),
                )
                .is_ok()
            });
        if let Some(rest) = rest {
            let more = match parse_checked(file, &rest, trust, vouched, false) {
                Ok((loaded, _)) => loaded.report.diagnostics,
                Err(r) => r.diagnostics,
            };
            diags.extend(more);
            diags.sort_by_key(|d| d.pos.map(|p| (p.line, p.col)));
        }
        report.diagnostics = diags;
        return Err(report);
    }
    let raw: RawPlan = match serde_saphyr::from_str_with_options(
        text,
        options(serde_saphyr::DuplicateKeyPolicy::Error),
    ) {
        Ok(r) => r,
        Err(e) => {
            report.push(yaml_error(&e, text));
            return Err(report);
        }
    };
    let (untrusted, any_vouched) = match trust {
        Trust::Data => {
            let all = trust::review(&raw);
            let n = all.len();
            let left: Vec<Diagnostic> = all
                .into_iter()
                .filter(|d| !d.pos.is_some_and(vouched))
                .collect();
            let any = left.len() < n;
            (left, any)
        }
        Trust::Trusted => (Vec::new(), false),
    };
    match check::check(raw, text) {
        Ok((plan, warnings)) if untrusted.is_empty() => {
            report.diagnostics = warnings;
            Ok((Loaded { plan, report }, any_vouched))
        }
        Ok((_, diags)) | Err(diags) => {
            report.diagnostics = untrusted;
            report.diagnostics.extend(diags);
            Err(report)
        }
    }
}

/// serde-saphyr words some errors for the developer who configures it ("budget breached:
/// Depth { depth: 49 }", "set DuplicateKeyPolicy in Options"); the ones a plan's author can meet
/// become a plain sentence about the plan. The rest take the library's user-facing wording.
fn yaml_error(e: &serde_saphyr::Error, text: &str) -> Diagnostic {
    use serde_saphyr::Error as E;
    use serde_saphyr::budget::BudgetBreach as B;
    let alias_bomb = || {
        (
            "too many alias expansions (YAML alias bomb?)".to_string(),
            Some(format!(
                "a plan may use at most {MAX_ALIASES} aliases (`*name`), expanding to at most \
                 {MAX_REPLAYED_EVENTS} YAML nodes in all"
            )),
        )
    };
    let depth = || {
        (
            format!("the plan nests deeper than {MAX_DEPTH} levels"),
            Some("plans nest a few levels deep; look for unclosed `[` or `{`".to_string()),
        )
    };
    let (message, help) = match innermost(e) {
        E::Budget {
            breach: B::Documents { .. },
            ..
        }
        | E::MultipleDocuments { .. } => (
            "a plan is one YAML document; found a second one (`---`)".to_string(),
            Some(
                "remove the `---` line and what follows it, or move that into its own plan file"
                    .to_string(),
            ),
        ),
        E::Budget {
            breach: B::Depth { .. },
            ..
        } => depth(),
        // The scanner's own limit on nested `[`/`{`, which it reports before the budget sees them.
        E::ExternalMessage { msg, .. } if msg.contains("recursion limit exceeded") => depth(),
        E::Budget {
            breach: B::Nodes { .. },
            ..
        } => (
            format!("the plan has more than {MAX_NODES} YAML nodes"),
            Some("a plan is a short YAML file; check that this is the file you meant".to_string()),
        ),
        E::Budget {
            breach: B::Aliases { .. } | B::AliasAnchorRatio { .. },
            ..
        }
        | E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. } => alias_bomb(),
        E::Budget { .. } => (
            "the plan is too large or too complex for a plan file".to_string(),
            Some("a plan is a short YAML file; check that this is the file you meant".to_string()),
        ),
        E::UnknownAnchor { .. } => (
            "this alias names no anchor defined before it; write `&name` on a value before using `*name`".to_string(),
            None,
        ),
        E::DuplicateMappingKey { key: Some(k), .. } => (format!("duplicate key `{k}`"), None),
        E::DuplicateMappingKey { key: None, .. } => ("duplicate key".to_string(), None),
        other => (
            format!(
                "invalid YAML: {}",
                serde_saphyr::MessageFormatter::format_message(
                    &serde_saphyr::UserMessageFormatter,
                    other
                )
            ),
            None,
        ),
    };
    let pos = Pos::from_error(e);
    // Only the parser's own wording gets the hint: the budget and alias errors above already
    // name the plan's problem.
    let generic = message.starts_with("invalid YAML:");
    if let Some(quote) = pos
        .filter(|_| generic)
        .and_then(|p| super::hints::unquoted_value(text, p))
    {
        return Diagnostic::error(quote, pos).label("YAML syntax here, not text");
    }
    let d = Diagnostic::error(message, pos);
    match help {
        Some(h) => d.help(h),
        None => d,
    }
}

/// The error itself, without the snippet and alias wrappers that carry no message of their own.
fn innermost(mut e: &serde_saphyr::Error) -> &serde_saphyr::Error {
    loop {
        match e {
            serde_saphyr::Error::WithSnippet { error, .. }
            | serde_saphyr::Error::AliasError { error, .. } => e = error,
            other => return other,
        }
    }
}
