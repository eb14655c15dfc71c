//! Two runs side by side, per job and size: old and new time and busbw and their ratio, the
//! shape of any drop, and a transport change — the "last week vs today" table.

use std::fmt::Write;

use super::escape;

use crate::grade::{Comparison, Shape, num, size};

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), num)
}

fn ratio(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.2}"))
}

/// Renders a comparison as an aligned text table, or as Markdown.
pub fn render_comparison(c: &Comparison, markdown: bool) -> String {
    let mut o = String::new();
    if markdown {
        let _ = writeln!(
            o,
            "# {} vs {}\n",
            escape::code(&c.old),
            escape::code(&c.new)
        );
    } else {
        let _ = writeln!(o, "old: {}\nnew: {}", c.old, c.new);
    }
    for j in &c.jobs {
        let head = if j.id == j.old_id {
            format!("{} ({})", j.id, j.what)
        } else {
            format!("{} vs {} ({})", j.old_id, j.id, j.what)
        };
        if markdown {
            let _ = writeln!(o, "\n## {}\n", escape::text(&head));
            let _ = writeln!(
                o,
                "| size | old time (us) | new time (us) | old busbw | new busbw | new/old |"
            );
            let _ = writeln!(o, "|---:|---:|---:|---:|---:|---:|");
        } else {
            let _ = writeln!(o, "\n{head}");
            let _ = writeln!(
                o,
                "{:>8} {:>14} {:>14} {:>10} {:>10} {:>8}",
                "size", "old time (us)", "new time (us)", "old busbw", "new busbw", "new/old"
            );
        }
        for s in &j.sizes {
            let cols = [
                size(s.requested),
                opt(s.old_time_us),
                opt(s.new_time_us),
                opt(s.old_busbw),
                opt(s.new_busbw),
                ratio(s.ratio),
            ];
            if markdown {
                let _ = writeln!(o, "| {} |", cols.join(" | "));
            } else {
                let _ = writeln!(
                    o,
                    "{:>8} {:>14} {:>14} {:>10} {:>10} {:>8}",
                    cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
                );
            }
        }
        let prefix = if markdown { "\n" } else { "" };
        let said = j
            .diagnosis
            .as_ref()
            .is_some_and(|d| matches!(d.shape, Shape::TransportChanged { .. }));
        if !said
            && j.old_transports != j.new_transports
            && !j.old_transports.is_empty()
            && !j.new_transports.is_empty()
        {
            let (old, new) = (j.old_transports.join("+"), j.new_transports.join("+"));
            let _ = if markdown {
                writeln!(
                    o,
                    "{prefix}transport changed: {} → {}",
                    escape::text(&old),
                    escape::text(&new)
                )
            } else {
                writeln!(o, "{prefix}transport changed: {old} → {new}")
            };
        }
        let known = |t: &[String]| {
            if t.is_empty() {
                "not recorded".to_string()
            } else {
                t.join("+")
            }
        };
        let _ = writeln!(
            o,
            "{prefix}transports: old {}, new {}",
            known(&j.old_transports),
            known(&j.new_transports)
        );
        if !j.settings.is_empty() {
            let _ = writeln!(o, "settings that differ: {}", j.settings.join(", "));
        }
        match &j.diagnosis {
            Some(d) if markdown => {
                let _ = writeln!(o, "{prefix}diagnosis: {}", escape::text(&d.text));
            }
            Some(d) => {
                let _ = writeln!(o, "{prefix}diagnosis: {}", d.text);
            }
            None => {
                let _ = writeln!(o, "{prefix}no size is more than 5% slower");
            }
        }
    }
    for u in &c.unmatched {
        let u = if markdown { escape::text(u) } else { u.clone() };
        let _ = writeln!(o, "\nnote: {u}");
    }
    o
}
