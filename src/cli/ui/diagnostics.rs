//! A plan's diagnostics (miette snippets or one line each) on stderr, and the colour they are
//! drawn in: decided once, when the command line is read, and nowhere else.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

/// Whether diagnostics are drawn in colour; unset until [`decide_color`] (then no colour).
static COLOR: OnceLock<bool> = OnceLock::new();

/// `--color`: `Some(true)` always, `Some(false)` never, `None` when stderr is a terminal and
/// `NO_COLOR` is unset.
pub fn decide_color(asked: Option<bool>) {
    let on = asked.unwrap_or_else(|| {
        std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
    });
    let _ = COLOR.set(on);
}

fn color() -> bool {
    COLOR.get().copied().unwrap_or(false)
}

/// How a plan's diagnostics are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagFormat {
    /// Snippets with carets, in colour when [`decide_color`] said so.
    Human,
    /// One line per diagnostic.
    Short,
    /// Snippets with carets, never in colour (a plan named only to check a baseline's run).
    Plain,
}

/// Prints `report`'s diagnostics, if it has any. Written as they are: the plan's text in them
/// is already made visible, and the colour's escape sequences must stay.
pub fn diagnostics(report: &baton::plan::Report, format: DiagFormat) {
    if report.diagnostics.is_empty() {
        return;
    }
    let text = match format {
        DiagFormat::Human => report.render(color()),
        DiagFormat::Plain => report.render(false),
        DiagFormat::Short => report.short(),
    };
    let _ = write!(std::io::stderr(), "{text}");
}
