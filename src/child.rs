//! A helper program's output, bounded in time and bytes: `git` for a plan's revision and the
//! probe's helpers (`mpirun --version`, `journalctl -k`, …) are run alike, so neither a helper
//! that prints too much nor one that hangs can hold baton up.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` (stdin and stderr closed to it) and returns what it printed on stdout (lossy
/// UTF-8, at most `max` bytes) and whether it exited 0; killed, and an error, past `limit`.
pub fn bounded_output(
    cmd: &mut Command,
    limit: Duration,
    max: u64,
) -> Result<(String, bool), String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    // Read on a thread: the reader stops at `max` bytes, the deadline kills the process.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.take(max).read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => break Err(format!("{program} ran past {} ms", limit.as_millis())),
            Err(e) => break Err(format!("{program}: {e}")),
        }
    };
    if status.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let out = reader.join().unwrap_or_default();
    let status = status?;
    Ok((String::from_utf8_lossy(&out).into_owned(), status.success()))
}
