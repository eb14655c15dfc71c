//! A helper program run by the probe (`journalctl -k`, `systemctl is-active`, `mpirun
//! --version`): bounded in time and in output, stdin closed, so a hung or chatty program costs
//! at most its deadline and never blocks the probe.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most bytes of a helper's stdout kept.
pub const OUTPUT_LIMIT: u64 = 4 << 20;

/// What a helper printed on stdout (lossy UTF-8, at most [`OUTPUT_LIMIT`] bytes) and whether it
/// exited zero; why when it could not be started or ran past `limit`.
pub fn output(program: &str, args: &[&str], limit: Duration) -> Result<(String, bool), String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.take(OUTPUT_LIMIT).read_to_end(&mut out);
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
