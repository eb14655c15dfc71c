//! NCCL's own diagnostics lines as node evidence: the `[INFO]` findings of NCCL 2.31's RAS and
//! active diagnostics (`NCCL_RUN_RAS_DIAGNOSTICS`, `NCCL_RUN_DIAGNOSTICS`: `host:pid NCCL DIAG
//! [INFO] CHECK: …`), `NCCL WARN` lines (timestamped where `NCCL_DEBUG_TIMESTAMP_FORMAT` stamps
//! them), and an IB port's "GID table changed", read from a rank's captured output into the
//! probe's event model (`EventKind::Nccl`), so a verdict can cite them beside the kernel's.
//! The formats come from NCCL's documentation and source (`tests/data/nccl-diag/` says where
//! each came from); no NCCL 2.31 was at hand to record them from. `[OK]` lines are not kept:
//! evidence is what needs review. Anything may be in that output: nothing here panics, and what
//! is kept is bounded.

use crate::probe::kernel_log::{EventKind, KernelEvent, LINE_LIMIT, cut};

/// Most findings kept from one output; the rest are counted.
pub const FINDING_LIMIT: usize = 256;

/// One finding NCCL printed, with the host and pid of the process that printed it where the
/// line names them (NCCL's own prefix, `host:pid`).
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// The line carried its own time (NCCL's `[YYYY-MM-DD HH:MM:SS]`, to the second).
    pub stamped: bool,
    pub event: KernelEvent,
}

/// The most bytes of a finding's short name (`NCCL WARN` and its message).
const WHAT_LIMIT: usize = 120;

/// The findings of one output, and how many past [`FINDING_LIMIT`] were not kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    pub found: Vec<Finding>,
    pub left_out: u64,
}

/// The findings in `text`; a line without a stamp of its own is dated `seen_unix_ms` (when the
/// output was read).
pub fn findings(text: &str, seen_unix_ms: u64) -> Findings {
    let mut out = Findings::default();
    for l in text.lines() {
        let Some(f) = line(l, seen_unix_ms) else {
            continue;
        };
        if out.found.len() < FINDING_LIMIT {
            out.found.push(f);
        } else {
            out.left_out += 1;
        }
    }
    out
}

/// The finding of one line of output, if it is one; dated `seen_unix_ms` when it has no stamp.
/// Secrets' values in it are redacted (`crate::secrets::line_redacted`).
pub fn line(raw: &str, seen_unix_ms: u64) -> Option<Finding> {
    let (stamp, l) = stamped(raw.trim());
    let (prefix, subject, what) = if let Some((prefix, body)) = l.split_once("NCCL DIAG ") {
        let (check, said) = body.trim_start().strip_prefix("[INFO]")?.split_once(':')?;
        let check = cut(check.trim(), 64);
        (prefix, check.clone(), format!("NCCL DIAG {check}:{said}"))
    } else {
        let (prefix, msg) = l.split_once(" NCCL WARN ")?;
        match gid_change(msg) {
            Some(port) => (prefix, port.clone(), format!("{port} GID table changed")),
            None => (prefix, source(prefix), format!("NCCL WARN {}", msg.trim())),
        }
    };
    let what = cut(&crate::secrets::line_redacted(&what), WHAT_LIMIT);
    let named = prefix
        .split_whitespace()
        .next()
        .and_then(|t| t.split_once(':'));
    let host = named.map(|(h, _)| cut(h, 64)).filter(|h| !h.is_empty());
    let pid = named.and_then(|(_, rest)| rest.split(':').next()?.parse().ok());
    Some(Finding {
        host,
        pid,
        stamped: stamp.is_some(),
        event: KernelEvent {
            at_unix_ms: stamp.unwrap_or(seen_unix_ms),
            kind: EventKind::Nccl { subject, what },
            line: cut(&crate::secrets::line_redacted(raw.trim()), LINE_LIMIT),
        },
    })
}

/// `NET/IB : mlx5_3:1 GID table changed` → `mlx5_3:1`.
fn gid_change(msg: &str) -> Option<String> {
    let port = msg
        .strip_prefix("NET/IB : ")?
        .strip_suffix("GID table changed")?;
    Some(cut(port.trim(), 64)).filter(|p| !p.is_empty())
}

/// The source location NCCL printed before `NCCL WARN` (`plugin/net.cc:334`), else `NCCL`.
fn source(prefix: &str) -> String {
    prefix
        .split_whitespace()
        .last()
        .filter(|t| !t.starts_with('[') && t.contains('.') && t.contains(':'))
        .map_or_else(|| "NCCL".to_string(), |t| cut(t, 64))
}

/// A leading `[YYYY-MM-DD HH:MM:SS] ` (NCCL's default timestamp format), read as UTC — NCCL
/// prints the node's local time, which on the nodes baton runs on is UTC as a rule — and the
/// rest of the line; the line itself when it has none.
fn stamped(l: &str) -> (Option<u64>, &str) {
    let Some((stamp, rest)) = l.strip_prefix('[').and_then(|r| r.split_once("] ")) else {
        return (None, l);
    };
    match unix_ms(stamp) {
        Some(ms) => (Some(ms), rest.trim_start()),
        None => (None, l),
    }
}

/// `2026-11-30 21:04:05` → milliseconds since the epoch.
fn unix_ms(s: &str) -> Option<u64> {
    let (date, time) = s.split_once(' ')?;
    let d: Vec<u64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let t: Vec<u64> = time
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let ([y, m, day], [hh, mm, ss]) = (d.as_slice(), t.as_slice()) else {
        return None;
    };
    if !(1970..=9999).contains(y) || !(1..=12).contains(m) || !(1..=31).contains(day) {
        return None;
    }
    if *hh > 23 || *mm > 59 || *ss > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm), March-based years.
    let (y, m) = if *m <= 2 { (y - 1, m + 9) } else { (*y, m - 3) };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/nccl-diag")
            .join(name);
        // The `#` lines say where the format came from; they are not output.
        let text = std::fs::read_to_string(p).unwrap();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    fn said(f: &Findings) -> Vec<(Option<&str>, String)> {
        f.found
            .iter()
            .map(|x| (x.host.as_deref(), x.event.kind.short()))
            .collect()
    }

    #[test]
    fn ras_diagnostics_keep_the_environment_mismatch_not_the_ok_checks() {
        let f = findings(&fixture("ras-diagnostics.log"), 7);
        assert_eq!(f.found.len(), 4, "{f:#?}");
        assert!(
            said(&f)
                .iter()
                .all(|(h, w)| *h == Some("gpu07") && w.starts_with("NCCL DIAG NCCL environment: "))
        );
        assert!(
            f.found[1]
                .event
                .line
                .contains("NCCL_IB_HCA=(unset) on rank(s) {0,1,2,3,4,5,6,7}")
        );
        assert_eq!(f.found[0].event.at_unix_ms, 7, "undated: when it was read");
    }

    #[test]
    fn active_diagnostics_name_the_p2p_and_network_findings() {
        let f = findings(&fixture("active-diagnostics.log"), 0);
        assert_eq!(
            said(&f),
            [
                (
                    None,
                    "NCCL DIAG p2p: only 54/56 GPU-to-GPU peer accesses passed verification"
                        .to_string()
                ),
                (
                    Some("gpu03"),
                    "NCCL DIAG net bw: cross-nic rank 11 (gpu04): 201.7 Gbit/s, >30% off median \
                     390.4 Gbit/s in comm 0x77ab"
                        .to_string()
                )
            ]
        );
        assert!(f.found[1].event.line.contains("cross-nic rank 11 (gpu04)"));
    }

    #[test]
    fn warn_lines_carry_their_stamp_and_a_gid_change_its_port() {
        let f = findings(&fixture("warn-lines.log"), 1);
        assert_eq!(
            said(&f),
            [
                (
                    Some("gpu05"),
                    "NCCL WARN Failed to initialize any NET plugin".to_string()
                ),
                (Some("gpu05"), "mlx5_3:1 GID table changed".to_string()),
                (Some("gpu05"), "mlx5_3:1 GID table changed".to_string()),
            ]
        );
        // 2026-11-30 21:04:05 UTC.
        assert_eq!(f.found[0].event.at_unix_ms, 1_796_072_645_000);
        assert_eq!(f.found[1].event.at_unix_ms, 1);
        assert_eq!(
            f.found.iter().map(|x| x.stamped).collect::<Vec<_>>(),
            [true, false, true]
        );
        assert!(f.found.iter().all(|x| x.pid == Some(5150)), "{f:#?}");
        let subject = |i: usize| match &f.found[i].event.kind {
            EventKind::Nccl { subject, .. } => subject.clone(),
            k => panic!("{k:?}"),
        };
        assert_eq!(
            (subject(0), subject(1)),
            ("plugin/net.cc:334".into(), "mlx5_3:1".into())
        );
    }

    #[test]
    fn a_secret_a_line_shows_is_redacted_in_what_is_kept() {
        let f = line(
            "gpu07:1 NCCL DIAG [INFO] NCCL environment: NCCL_NET_PLUGIN_TOKEN=s3cr3t on rank(s) {1}",
            0,
        )
        .unwrap();
        assert!(!format!("{f:?}").contains("s3cr3t"), "{f:?}");
        assert!(
            f.event
                .line
                .contains("NCCL_NET_PLUGIN_TOKEN=<redacted> on rank(s)")
        );
    }

    /// #36 finding 16: a WARN line's URLs (userinfo, path, query) and `Authorization`-style
    /// secrets are redacted as every relayed line is.
    #[test]
    fn a_warn_lines_url_secrets_are_redacted_in_what_is_kept() {
        let f = line(
            "gpu07:1:1 [0] net.cc:9 NCCL WARN fetch https://ops:pw-s3cr3t@mirror.example/v1/tok-s3cr3t?token=q-s3cr3t failed; \
             Authorization: Bearer b-s3cr3t; https://ghp_u-s3cr3t@git.example/x",
            0,
        )
        .unwrap();
        let kept = format!("{f:?}");
        for s in [
            "pw-s3cr3t",
            "tok-s3cr3t",
            "q-s3cr3t",
            "b-s3cr3t",
            "u-s3cr3t",
        ] {
            assert!(!kept.contains(s), "{s} kept: {kept}");
        }
        assert!(f.event.line.contains("mirror.example"), "{}", f.event.line);
    }

    #[test]
    fn a_flood_of_findings_is_counted_past_the_limit() {
        let text = "h:1 NCCL DIAG [INFO] p2p: x\n".repeat(FINDING_LIMIT + 10);
        let f = findings(&text, 0);
        assert_eq!((f.found.len(), f.left_out), (FINDING_LIMIT, 10));
    }

    proptest! {
        #[test]
        fn hostile_output_never_panics_and_stays_bounded(
            bytes in proptest::collection::vec(any::<u8>(), 0..2048),
            marker in prop::sample::select(vec![
                "NCCL DIAG ", "NCCL DIAG [INFO]", " NCCL WARN ", "NET/IB : ", "GID table changed",
                "[2026-13-45 99:99:99] ", "[9999-12-31 23:59:60] ", "[", "] ", ":", "\n",
            ]),
        ) {
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            let at = text.char_indices().map(|(i, _)| i).nth(bytes.len() / 2).unwrap_or(0);
            text.insert_str(at, marker);
            let f = findings(&text, 0);
            for x in &f.found {
                prop_assert!(x.event.line.len() <= LINE_LIMIT);
                prop_assert!(x.host.as_ref().is_none_or(|h| h.len() <= 64));
            }
        }
    }
}
