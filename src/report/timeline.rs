//! The kernel's events (Xid, SXid, link, AER) on a time axis under the node-set rounds, as an
//! inline SVG: a reader sees in which round a link went down and on which node, without
//! matching clock times by eye. Each round spans its jobs' first before-snapshot to their
//! last after-snapshot (the evidence's own clocks: an event and a round are measured alike);
//! one row per node with events, a mark per event with its line as the tooltip. Written by
//! hand, as the pair matrix is: bars and dots, no JavaScript.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::xml::escape as esc;
use crate::grade::Grade;
use crate::probe::delta::clock;

const WIDTH: u64 = 960;
/// Left margin: node names.
const LEFT: u64 = 110;
const ROW: u64 = 22;
/// Most node rows drawn; the list under the chart keeps every event.
const MAX_ROWS: usize = 64;

/// One round of one test, in evidence time.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub label: String,
    pub from_ms: u64,
    pub to_ms: u64,
}

/// One kernel event on one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub at_ms: u64,
    pub host: String,
    pub text: String,
}

/// Every round of the grade's node-set jobs that took evidence, in time order.
pub fn rounds(g: &Grade) -> Vec<Span> {
    let mut by: BTreeMap<(String, u32), (u64, u64)> = BTreeMap::new();
    for j in &g.jobs {
        let Some(s) = &j.source else { continue };
        let Some(set) = &s.result.node_set else {
            continue;
        };
        for e in &s.result.evidence {
            let times = [&e.before, &e.after].map(|x| x.as_ref().map(|s| s.taken_unix_ms));
            for t in times.into_iter().flatten() {
                let r = by
                    .entry((s.result.test.clone(), set.round))
                    .or_insert((t, t));
                r.0 = r.0.min(t);
                r.1 = r.1.max(t);
            }
        }
    }
    let mut out: Vec<Span> = by
        .into_iter()
        .map(|((test, round), (from_ms, to_ms))| Span {
            label: format!("{test} r{round}"),
            from_ms,
            to_ms,
        })
        .collect();
    out.sort_by_key(|s| s.from_ms);
    out
}

/// Every kernel event the jobs' deltas hold, by time.
pub fn marks(g: &Grade) -> Vec<Mark> {
    super::evidence::events(g)
        .into_iter()
        .map(|(at_ms, host, job, line)| Mark {
            text: format!("{} {host} ({job}): {line}", clock(at_ms)),
            at_ms,
            host,
        })
        .collect()
}

/// The chart, or nothing when there is no event to place.
pub fn svg(rounds: &[Span], marks: &[Mark]) -> String {
    if marks.is_empty() {
        return String::new();
    }
    let times = rounds
        .iter()
        .flat_map(|r| [r.from_ms, r.to_ms])
        .chain(marks.iter().map(|m| m.at_ms));
    let (lo, hi) = times.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let span = (hi - lo).max(1);
    let x = |t: u64| LEFT + (t - lo) * (WIDTH - LEFT - 10) / span;
    let mut hosts: Vec<&str> = marks.iter().map(|m| m.host.as_str()).collect();
    hosts.sort();
    hosts.dedup();
    hosts.truncate(MAX_ROWS);
    let height = 40 + ROW * (hosts.len() as u64 + 1);
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = write!(o, "<text x=\"4\" y=\"15\">rounds</text>");
    for (i, r) in rounds.iter().enumerate() {
        let (a, b) = (x(r.from_ms), x(r.to_ms).max(x(r.from_ms) + 2));
        let fill = if i % 2 == 0 { "#c6dbef" } else { "#9ecae1" };
        let _ = write!(
            o,
            "<rect x=\"{a}\" y=\"4\" width=\"{}\" height=\"16\" fill=\"{fill}\"><title>{} {}–{}</title></rect>\
             <text x=\"{}\" y=\"15\">{}</text>",
            b - a,
            esc(&r.label),
            clock(r.from_ms),
            clock(r.to_ms),
            a + 2,
            esc(&r.label)
        );
    }
    for (k, h) in hosts.iter().enumerate() {
        let y = 24 + ROW * (k as u64 + 1);
        let _ = write!(
            o,
            "<text x=\"4\" y=\"{}\">{}</text><line x1=\"{LEFT}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#ddd\"/>",
            y + 4,
            esc(h),
            WIDTH - 10
        );
        for m in marks.iter().filter(|m| m.host == *h) {
            let _ = write!(
                o,
                "<circle cx=\"{}\" cy=\"{y}\" r=\"5\" fill=\"#d62728\"><title>{}</title></circle>",
                x(m.at_ms),
                esc(&m.text)
            );
        }
    }
    let axis = height - 8;
    for t in [lo, lo + span / 2, hi] {
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{axis}\" text-anchor=\"middle\">{}</text>",
            x(t).clamp(LEFT + 20, WIDTH - 30),
            clock(t)
        );
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_sit_on_their_nodes_rows_under_the_round_they_fell_in() {
        let rounds = [
            Span {
                label: "pairs r1".into(),
                from_ms: 1_000_000,
                to_ms: 1_010_000,
            },
            Span {
                label: "pairs r2".into(),
                from_ms: 1_010_000,
                to_ms: 1_020_000,
            },
        ];
        let marks = [Mark {
            at_ms: 1_015_000,
            host: "node03".into(),
            text: "mlx5_core <0000:3b:00.0> Link down & <b>".into(),
        }];
        let s = svg(&rounds, &marks);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"), "{s}");
        assert!(s.contains(">pairs r1<") && s.contains(">pairs r2<"), "{s}");
        assert!(s.contains(">node03<") && s.contains("&lt;b&gt;"), "{s}");
        // 15 s of 20 s along the axis: three quarters of the way, in round 2.
        let cx = LEFT + 15 * (WIDTH - LEFT - 10) / 20;
        assert!(s.contains(&format!("<circle cx=\"{cx}\"")), "{s}");
        assert_eq!(svg(&rounds, &[]), "");
    }
}
