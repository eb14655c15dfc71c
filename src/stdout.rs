//! Standard output for commands whose reader may leave early.
//!
//! `baton check plans/*.yaml | head -1` or `baton expand PLAN | head` closes the pipe while baton
//! still has lines to print. That is the reader's choice, not a failure: `print!` would panic
//! (exit 101) and a propagated error would print `Broken pipe` and exit 3. Here a closed pipe
//! drops the rest of the output quietly, so the command finishes its work and still ends with its
//! own exit code (`check` of an invalid plan exits 2 whether or not anyone reads its stdout).

use std::io::{self, Write};

/// Writes `text` to stdout and flushes it; a closed pipe is not an error.
pub fn print(text: &str) -> io::Result<()> {
    write_with(|out| out.write_all(text.as_bytes()))
}

/// Runs `write` against a buffered, locked stdout and flushes it; a closed pipe is not an error.
/// For output too large to build as one string first (`expand --format json` of a big plan).
pub fn write_with(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
