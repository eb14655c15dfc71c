//! Standard output for commands whose reader may leave early.
//!
//! `baton check plans/*.yaml | head -1` or `baton expand PLAN | head` closes the pipe while baton
//! still has lines to print. That is the reader's choice, not a failure: `print!` would panic
//! (exit 101) and a propagated error would print `Broken pipe` and exit 3. Here a closed pipe
//! drops the rest of the output quietly, so the command finishes its work and still ends with its
//! own exit code (`check` of an invalid plan exits 2 whether or not anyone reads its stdout).

//!
//! Everything printed here may hold text from input (env values, host names, log lines), and
//! baton itself prints no escape sequences on stdout: so every control character but newline and
//! tab is written as a visible `\u00XX` instead. A plan or log cannot clear the screen, move the
//! cursor or overwrite a line with a fake `PASS`. Inside JSON strings (the only place JSON can hold
//! one) `\u00XX` is the same character, so `--format json` output stays valid and equal.

use std::borrow::Cow;
use std::io::{self, Write};

/// Makes C's stdout line-buffered in this process. NCCL prints its WARN lines through it, which
/// into a pipe is fully buffered: a worker's NCCL lines would reach baton when the worker
/// exits, behind the marks of every later job (`runner::job_marks`) — measured on the H200:
/// three jobs' WARN lines all placed on the last. Call it before anything writes to C's stdout
/// (a worker's start, before NCCL is loaded).
pub fn line_buffer_c_stdout() {
    unsafe extern "C" {
        static mut stdout: *mut libc::FILE;
    }
    // SAFETY: `stdout` is the C library's own stream, set up before `main`; setvbuf is called
    // before this process wrote to it, with no buffer of ours to outlive.
    unsafe {
        libc::setvbuf(stdout, std::ptr::null_mut(), libc::_IOLBF, 0);
    }
}

/// Writes `text` to stdout and flushes it; a closed pipe is not an error.
pub fn print(text: &str) -> io::Result<()> {
    write_with(|out| out.write_all(text.as_bytes()))
}

/// Runs `write` against a buffered, locked stdout and flushes it; a closed pipe is not an error.
/// For output too large to build as one string first (`expand --format json` of a big plan).
pub fn write_with(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut out = Visible {
        inner: io::BufWriter::new(io::stdout().lock()),
        c2: false,
    };
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// `s` with every control character but newline and tab as a visible `\u00XX`: for text from
/// input that goes to a terminal by another way than [`print`] (stderr warnings).
pub fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hidden) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if hidden(c) {
            o.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

/// `s` as one cell of a table, one line: as [`visible`], and newline and tab too, so a value
/// (a job ID from a log's file name) cannot start a row of its own or move the columns.
pub fn visible_cell(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| match c.is_control() {
                true => format!("\\u{:04x}", c as u32),
                false => c.to_string(),
            })
            .collect(),
    )
}

/// C0 controls but newline and tab, DEL, and the C1 controls (U+0080–U+009F: U+009B is a CSI).
fn hidden(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// A writer that makes control characters visible on the way through, byte by byte. UTF-8 puts
/// a C1 control in two bytes (0xC2 0x80–0x9F), which may arrive in two writes: `c2` remembers a
/// pending 0xC2.
struct Visible<W: Write> {
    inner: W,
    c2: bool,
}

impl<W: Write> Write for Visible<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut start = 0;
        for (i, &b) in buf.iter().enumerate() {
            // A held 0xC2 is the byte just before this one (and `start == i`).
            if std::mem::take(&mut self.c2) {
                if (0x80..=0x9f).contains(&b) {
                    write!(self.inner, "\\u{b:04x}")?;
                    start = i + 1;
                    continue;
                }
                self.inner.write_all(&[0xc2])?;
            }
            if (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f {
                self.inner.write_all(&buf[start..i])?;
                write!(self.inner, "\\u{b:04x}")?;
                start = i + 1;
            } else if b == 0xc2 {
                self.inner.write_all(&buf[start..i])?;
                self.c2 = true;
                start = i + 1;
            }
        }
        self.inner.write_all(&buf[start..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.c2) {
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(parts: &[&[u8]]) -> String {
        let mut v = Visible {
            inner: Vec::new(),
            c2: false,
        };
        for p in parts {
            v.write_all(p).unwrap();
        }
        v.flush().unwrap();
        String::from_utf8(v.inner).unwrap()
    }

    #[test]
    fn control_characters_become_visible() {
        let fake = "NCCL_ALGO=\u{1b}[2J\u{1b}[1;1HPASS\r\u{7f}é\u{9b}31m\tok\n";
        let want = "NCCL_ALGO=\\u001b[2J\\u001b[1;1HPASS\\u000d\\u007fé\\u009b31m\tok\n";
        assert_eq!(through(&[fake.as_bytes()]), want);
        assert_eq!(visible(fake), want);
        // Split anywhere, even inside a two-byte character, the result is the same.
        let b = fake.as_bytes();
        for cut in 0..b.len() {
            assert_eq!(through(&[&b[..cut], &b[cut..]]), want, "cut at {cut}");
        }
        assert!(matches!(visible("plain\ttext\n"), Cow::Borrowed(_)));
    }
}
