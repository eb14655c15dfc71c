//! Plan diagnostics: every problem found in one pass, each naming file:line:col with a snippet.

use std::fmt;

use miette::{Diagnostic as MietteDiagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan};

use super::loc::Pos;

/// Most diagnostics shown for one plan; the rest are counted.
pub const MAX_SHOWN: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
}

/// One problem in a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub level: Level,
    pub message: String,
    pub pos: Option<Pos>,
    /// Short text under the caret.
    pub label: Option<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, pos: Option<Pos>) -> Self {
        Diagnostic {
            level: Level::Error,
            message: message.into(),
            pos,
            label: None,
            help: None,
        }
    }

    pub fn warning(message: impl Into<String>, pos: Option<Pos>) -> Self {
        Diagnostic {
            level: Level::Warning,
            ..Diagnostic::error(message, pos)
        }
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Every diagnostic of one plan file, with the source to show snippets from. Every way a
/// report is shown ([`Report::render`], [`Report::short`]) passes the file's text and the
/// words through the one redaction (`crate::secrets`): a diagnostic quotes no secret. A file
/// that is not YAML text has no source here (`Report::new(file, "")`): it is never quoted.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub file: String,
    pub source: String,
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    pub fn new(file: impl Into<String>, source: impl Into<String>) -> Self {
        Report {
            file: file.into(),
            source: source.into(),
            diagnostics: Vec::new(),
        }
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.level == Level::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.level == Level::Warning)
    }

    /// One line per diagnostic, `file:line:col: level: message`, for logs and editors.
    pub fn short(&self) -> String {
        let mut out = String::new();
        for d in &self.diagnostics {
            out.push_str(&self.locate(d));
            out.push_str(&format!(
                ": {}: {}\n",
                level_word(d.level),
                crate::secrets::line_redacted(&d.message)
            ));
        }
        out
    }

    /// `file:line:col` of a diagnostic (just the file when the position is unknown).
    pub fn locate(&self, d: &Diagnostic) -> String {
        match d.pos {
            Some(p) if p.is_known() => format!("{}:{}:{}", self.file, p.line, p.col),
            _ => self.file.clone(),
        }
    }

    /// Snippets with carets, errors first, capped at [`MAX_SHOWN`].
    pub fn render(&self, color: bool) -> String {
        let theme = if color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        let handler = GraphicalReportHandler::new_themed(theme).with_width(110);
        let mut sorted: Vec<&Diagnostic> = self.errors().chain(self.warnings()).collect();
        let hidden = sorted.len().saturating_sub(MAX_SHOWN);
        sorted.truncate(MAX_SHOWN);
        let mut out = String::new();
        // A user's file goes to a terminal and a CI log here: its secrets are masked (the one
        // redaction, `crate::secrets`), and its control characters must not act there.
        let source = same_length_visible(&crate::secrets::masked(&self.source));
        let file = crate::stdout::visible(&self.file);
        for d in sorted {
            let shown =
                |s: &String| crate::stdout::visible(&crate::secrets::line_redacted(s)).into_owned();
            let d = &Diagnostic {
                message: shown(&d.message),
                label: d.label.as_ref().map(shown),
                help: d.help.as_ref().map(shown),
                ..d.clone()
            };
            out.push_str(&format!(
                "{}: {}\n",
                level_word(d.level),
                crate::stdout::visible(&self.locate(d))
            ));
            let m = Rendered {
                d,
                src: NamedSrc {
                    name: &file,
                    text: &source,
                },
            };
            if handler.render_report(&mut out, &m).is_err() {
                out.push_str(&d.message);
                out.push('\n');
            }
        }
        if hidden > 0 {
            out.push_str(&format!("… and {hidden} more diagnostics not shown\n"));
        }
        let (e, w) = (self.errors().count(), self.warnings().count());
        if e + w > 0 {
            out.push_str(&format!(
                "{}: {} error{}, {} warning{}\n",
                file,
                e,
                if e == 1 { "" } else { "s" },
                w,
                if w == 1 { "" } else { "s" }
            ));
        }
        out
    }
}

/// `text` with each control character but newline, tab and the CR of a CRLF as `?` (`??` for a
/// two-byte C1 control): the same length, so diagnostic positions still point where they did.
fn same_length_visible(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let crlf = c == '\r' && chars.peek() == Some(&'\n');
        if c.is_control() && c != '\n' && c != '\t' && !crlf {
            o.push_str(&"?".repeat(c.len_utf8()));
        } else {
            o.push(c);
        }
    }
    o
}

fn level_word(l: Level) -> &'static str {
    match l {
        Level::Error => "error",
        Level::Warning => "warning",
    }
}

struct Rendered<'a> {
    d: &'a Diagnostic,
    src: NamedSrc<'a>,
}

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.d.message)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.d.message)
    }
}

impl std::error::Error for Rendered<'_> {}

struct NamedSrc<'a> {
    name: &'a str,
    text: &'a str,
}

impl miette::SourceCode for NamedSrc<'_> {
    fn read_span<'b>(
        &'b self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'b> + 'b>, miette::MietteError> {
        let inner = self.text.read_span(span, before, after)?;
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.to_string(),
            inner.data(),
            *inner.span(),
            inner.line(),
            inner.column(),
            inner.line_count(),
        )))
    }
}

impl MietteDiagnostic for Rendered<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.level {
            Level::Error => miette::Severity::Error,
            Level::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.d
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.span().map(|_| &self.src as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let (off, len) = self.span()?;
        Some(Box::new(std::iter::once(LabeledSpan::new(
            self.d.label.clone(),
            off,
            len,
        ))))
    }
}

impl Rendered<'_> {
    fn span(&self) -> Option<(usize, usize)> {
        let p = self.d.pos?;
        let text = self.src.text;
        let off = p.offset.or_else(|| offset_of(text, p.line, p.col))?;
        if off > text.len() || !text.is_char_boundary(off) {
            return None;
        }
        let len = p.len.max(1).min(text.len().saturating_sub(off));
        Some((off, len))
    }
}

/// Byte offset of a 1-based line and character column.
fn offset_of(text: &str, line: u64, col: u64) -> Option<usize> {
    if line == 0 || col == 0 {
        return None;
    }
    let start = if line == 1 {
        0
    } else {
        text.match_indices('\n').nth(line as usize - 2)?.0 + 1
    };
    let rest = &text[start..];
    let mut chars = rest.char_indices();
    let off = chars
        .nth(col as usize - 1)
        .map(|(i, _)| i)
        .unwrap_or(rest.len());
    Some(start + off)
}
