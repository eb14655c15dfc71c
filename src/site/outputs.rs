//! The site file's `outputs:`: where every command at a site reports without a flag — the
//! metrics textfile directory, the webhook, the history store. Site-only keys, taken out of the
//! tree before it is laid over a plan, so they never reach a carried plan or a results file;
//! their values are checked here, where their line is known.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::origin::{Entry, Origin};
use super::tree::{Item, Tree};
use crate::notify::Target;
use crate::plan::{Diagnostic, Pos, Scalar};
use crate::secrets::{REDACTED, url_redacted};

/// What a site's `outputs:` names; each `None` when it names nothing.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// `--metrics`'s default, resolved against the site file's directory.
    pub metrics: Option<PathBuf>,
    /// `--notify`'s default.
    pub notify: Option<Target>,
    /// `--notify-within`'s default.
    pub notify_within: Option<Duration>,
    /// `--history`/`--store`'s default: a file resolved like `metrics`, or a postgres:// URL.
    pub history: Option<PathBuf>,
    /// Each value as `baton config` shows it (secrets redacted) and its line.
    shown: Vec<(&'static str, String, u64)>,
}

impl Outputs {
    /// `outputs` (the mapping the site's structural pass passed) of the site file in `dir`.
    pub(super) fn read(outputs: &Item, dir: &Path) -> Result<Outputs, Diagnostic> {
        let mut o = Outputs::default();
        let Tree::Map(entries) = &outputs.value else {
            return Ok(o);
        };
        for (key, item) in entries {
            let at = item.at.pos;
            match key.name.as_str() {
                "metrics" => {
                    let p = dir.join(text(item, "metrics")?);
                    o.note("metrics", p.display().to_string(), at);
                    o.metrics = Some(p);
                }
                "notify" => {
                    let url = text(item, "notify")?;
                    let t = Target::parse(url).map_err(|e| {
                        Diagnostic::error(format!("`outputs.notify`: {e}"), Some(at))
                    })?;
                    let shown = match t.has_secret() {
                        true => format!("{t}/{REDACTED}"),
                        false => t.url(),
                    };
                    o.note("notify", shown, at);
                    o.notify = Some(t);
                }
                "notify_within" => {
                    let secs = within(item)?;
                    o.note("notify_within", secs.to_string(), at);
                    o.notify_within = Some(Duration::from_secs(secs));
                }
                "history" => {
                    let s = text(item, "history")?;
                    // A libpq string or another scheme's URL is kept as written, to be refused
                    // where the store is opened, and never shown with its values.
                    let foreign = crate::secrets::store_name_shown(s);
                    let url = s.starts_with("postgres://") || s.starts_with("postgresql://");
                    let p = match url || foreign.is_some() {
                        true => PathBuf::from(s),
                        false => dir.join(s),
                    };
                    let shown = foreign.unwrap_or_else(|| url_redacted(&p.display().to_string()));
                    o.note("history", shown, at);
                    o.history = Some(p);
                }
                _ => {}
            }
        }
        Ok(o)
    }

    fn note(&mut self, key: &'static str, shown: String, at: Pos) {
        self.shown.push((key, shown, at.line));
    }

    /// `baton config`'s lines of these values, each at its line of the site file `file`.
    pub(super) fn entries(&self, file: &str) -> Vec<Entry> {
        self.shown
            .iter()
            .map(|(key, shown, line)| Entry {
                key: format!("outputs.{key}"),
                value: match *key {
                    "notify_within" => shown.clone(),
                    _ => super::emit::scalar(&Scalar::Str(shown.clone())),
                },
                origin: Origin::Site {
                    file: file.to_string(),
                    line: *line,
                },
            })
            .collect()
    }
}

fn text<'a>(item: &'a Item, key: &str) -> Result<&'a str, Diagnostic> {
    match &item.value {
        Tree::Scalar(Scalar::Str(s)) if !s.is_empty() => Ok(s),
        _ => Err(Diagnostic::error(
            format!("`outputs.{key}` is a non-empty string"),
            Some(item.at.pos),
        )),
    }
}

fn within(item: &Item) -> Result<u64, Diagnostic> {
    match &item.value {
        Tree::Scalar(Scalar::Int(n)) if (1..=3600).contains(n) => Ok(*n as u64),
        _ => Err(Diagnostic::error(
            "`outputs.notify_within` is a number of seconds from 1 to 3600",
            Some(item.at.pos),
        )),
    }
}
