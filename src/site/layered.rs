//! The one layering every command uses: a plan, the site file over it, each `--set` over
//! both, checked as one plan. The layered plan is written back as YAML text (what runs carry
//! and workers read) with each line's origin, so a diagnostic names the file and line its value
//! came from, and the site's own program-running keys stand without `--trust-plan`.

use std::path::Path;

use super::emit::{Emitted, emit};
use super::set::{self, Set};
use super::tree::{At, Item, Source};
use super::{Site, SiteRef};
use crate::plan::{Diagnostic, LoadError, Loaded, Node, Report, Trust};

/// What is laid over a plan: the site file and the command line's `--set`s.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    pub site: Option<Site>,
    sets: Vec<Set>,
    set_args: Vec<String>,
}

impl Layers {
    /// `set_args` as given (`key.path=value` each); `Err` names each one that is not.
    pub fn new(site: Option<Site>, set_args: &[String]) -> Result<Layers, Report> {
        Ok(Layers {
            site,
            sets: set::parse(set_args)?,
            set_args: set_args.to_vec(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.site.is_none() && self.sets.is_empty()
    }

    /// The `--set` arguments, for scripts that carry the layered plan (they name it).
    pub fn set_args(&self) -> &[String] {
        &self.set_args
    }

    fn name(&self, s: Source, plan: &str) -> String {
        match s {
            Source::Plan => plan.to_string(),
            Source::Site => self
                .site
                .as_ref()
                .map_or(String::new(), |s| s.path.display().to_string()),
            Source::Set(_) => "--set".into(),
        }
    }

    fn text<'a>(&'a self, s: Source, plan: &'a str) -> String {
        match s {
            Source::Plan => plan.to_string(),
            Source::Site => self.site.as_ref().map_or(String::new(), |s| s.text.clone()),
            Source::Set(_) => set::source(&self.set_args),
        }
    }
}

/// A plan with its layers laid over it and checked.
#[derive(Debug, Clone)]
pub struct Layered {
    pub loaded: Loaded,
    /// The text the plan was checked from: the plan file's own when nothing was laid over it,
    /// else the layered plan as YAML, which is what a run carries and its workers read.
    pub text: String,
    /// The layered plan holds program-running keys the site file vouched for: scripts that
    /// carry it run it as trusted.
    pub vouched: bool,
    pub site: Option<SiteRef>,
    /// Every value with where it was written, for `baton config`.
    pub entries: Vec<super::Entry>,
}

/// Reads the plan at `path` and lays `layers` over it.
pub fn load_layered(path: &Path, trust: Trust, layers: &Layers) -> Result<Layered, LoadError> {
    let (name, bytes) = crate::plan::read_file(path)?;
    let invalid = |r| LoadError::Invalid(r);
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        crate::plan::parse_bytes_with(&name, &bytes, trust)
            .err()
            .map_or_else(|| invalid(Report::new(&name, "")), invalid)
    })?;
    parse_layered(&name, text, trust, layers).map_err(invalid)
}

/// Lays `layers` over the plan text `text` (named `file` in diagnostics) and checks the result.
pub fn parse_layered(
    file: &str,
    text: &str,
    trust: Trust,
    layers: &Layers,
) -> Result<Layered, Report> {
    let plain = || crate::plan::parse_str_with(file, text, trust);
    let tree = match crate::plan::parse_tree(file, text, "plan") {
        Ok(t) if matches!(t.value, Node::Map(_)) => t,
        // Not a plan's shape: the plan's own checks say why.
        _ => return Err(plain().err().unwrap_or_else(|| Report::new(file, text))),
    };
    let mut root = Item::from_loc(&tree, Source::Plan, text);
    if layers.is_empty() {
        let loaded = plain()?;
        let entries = super::origin::entries(&root, file, layers);
        return Ok(Layered {
            loaded,
            text: text.to_string(),
            vouched: false,
            site: None,
            entries,
        });
    }
    if let Some(site) = &layers.site {
        root.merge(site.tree.clone());
    }
    for s in &layers.sets {
        set::apply(&mut root, s.clone()).map_err(|d| {
            let mut r = Report::new("--set", set::source(&layers.set_args));
            r.push(d);
            r
        })?;
    }
    let emitted = emit(&root, &header(file, layers));
    // The site vouches for what it wrote: the whole entry at the key, its value included.
    let vouched_here = |p: crate::plan::Pos| emitted.all_from(p.line, Source::Site);
    let (mut loaded, vouched) =
        crate::plan::parse_str_vouched(file, &emitted.text, trust, &vouched_here)
            .map_err(|r| relocate(r, &emitted, file, text, layers))?;
    loaded.report = relocate(loaded.report, &emitted, file, text, layers);
    let mut entries = super::origin::entries(&root, file, layers);
    if let Some(site) = &layers.site {
        entries.extend(site.outputs.entries(&site.path.display().to_string()));
    }
    Ok(Layered {
        loaded,
        text: emitted.text,
        vouched,
        site: layers.site.as_ref().map(Site::reference),
        entries,
    })
}

/// The comment at the top of a layered plan: what it was made from.
fn header(file: &str, layers: &Layers) -> String {
    let clean = |s: &str| {
        s.chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect::<String>()
    };
    let mut h = format!("# baton: the plan {} with layers over it", clean(file));
    if let Some(s) = &layers.site {
        h.push_str(&format!(
            "\n# site: {} ({})",
            clean(&s.path.display().to_string()),
            s.hash
        ));
    }
    for a in &layers.set_args {
        h.push_str(&format!("\n# --set {}", clean(a)));
    }
    h
}

/// The layered text's diagnostics told at the places their values were written: in the plan's
/// own report when they all come from one layer, else in the plan's with the others' places
/// in their words.
fn relocate(
    report: Report,
    emitted: &Emitted,
    file: &str,
    plan_text: &str,
    layers: &Layers,
) -> Report {
    let placed: Vec<(Option<At>, Diagnostic)> = report
        .diagnostics
        .into_iter()
        .map(|d| (d.pos.and_then(|p| emitted.origin(p.line, p.col)), d))
        .collect();
    let mut sources = placed.iter().filter_map(|(at, _)| at.map(|a| a.source));
    let home = match sources.next() {
        Some(first) if sources.all(|s| same(s, first)) => first,
        _ => Source::Plan,
    };
    let mut out = Report::new(layers.name(home, file), layers.text(home, plan_text));
    for (at, mut d) in placed {
        match at {
            Some(at) if same(at.source, home) => d.pos = Some(at.pos).filter(|p| p.is_known()),
            Some(at) => {
                d.message = format!(
                    "{}:{}:{}: {}",
                    layers.name(at.source, file),
                    at.pos.line,
                    at.pos.col,
                    d.message
                );
                d.pos = None;
            }
            None => d.pos = None,
        }
        out.push(d);
    }
    out
}

fn same(a: Source, b: Source) -> bool {
    matches!(
        (a, b),
        (Source::Plan, Source::Plan)
            | (Source::Site, Source::Site)
            | (Source::Set(_), Source::Set(_))
    )
}
