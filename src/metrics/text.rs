//! node_exporter's textfile format (the Prometheus text exposition format 0.0.4): families
//! with `# HELP` and `# TYPE`, one sample a line. Label values are the only place a value from
//! a plan, a results file or a host reaches the file, so they are the one thing escaped here:
//! a hostile host or job name stays one label value and cannot start a line or a sample.

use std::fmt::Write;

/// One metric family: every sample of one name, written together as the format requires.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// `baton_…`, a fixed name of this module's callers (never built from input).
    pub name: &'static str,
    pub help: &'static str,
    pub samples: Vec<Sample>,
}

/// One sample: its labels, in a fixed order, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

impl Sample {
    pub fn new(labels: Vec<(&'static str, String)>, value: f64) -> Sample {
        Sample { labels, value }
    }
}

/// The families as the textfile collector reads them; families without samples are left out.
pub fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        // Every baton metric is a gauge: each file replaces the last run's, nothing accumulates.
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} gauge", f.name);
        for s in &f.samples {
            out.push_str(f.name);
            labels(&mut out, &s.labels);
            let _ = writeln!(out, " {}", number(s.value));
        }
    }
    out
}

fn labels(out: &mut String, labels: &[(&'static str, String)]) {
    if labels.is_empty() {
        return;
    }
    out.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{k}=\"{}\"", escape(v));
    }
    out.push('}');
}

/// A label value as the format spells it: backslash, double quote and newline escaped; other
/// control characters (which no parser need accept) replaced by U+FFFD.
pub fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c if c.is_control() => s.push('\u{fffd}'),
            c => s.push(c),
        }
    }
    s
}

/// A sample value: Go's float syntax, which Prometheus parses (`+Inf`, `NaN` included).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_label_values_stay_one_value() {
        let f = Family {
            name: "baton_x",
            help: "x.",
            samples: vec![Sample::new(
                vec![("host", "a\"} 1\nbaton_evil 2\\\r\0".into())],
                1.5,
            )],
        };
        let text = render(&[f]);
        assert_eq!(
            text,
            "# HELP baton_x x.\n# TYPE baton_x gauge\nbaton_x{host=\"a\\\"} 1\\nbaton_evil 2\\\\\u{fffd}\u{fffd}\"} 1.5\n"
        );
        assert_eq!(text.lines().count(), 3, "{text}");
    }

    #[test]
    fn empty_families_and_special_values() {
        let empty = Family {
            name: "baton_none",
            help: "n.",
            samples: vec![],
        };
        let f = Family {
            name: "baton_v",
            help: "v.",
            samples: vec![
                Sample::new(vec![], f64::NAN),
                Sample::new(vec![], f64::INFINITY),
                Sample::new(vec![], 1e21),
            ],
        };
        let text = render(&[empty, f]);
        assert!(!text.contains("baton_none"), "{text}");
        assert!(
            text.contains("baton_v NaN\nbaton_v +Inf\nbaton_v 1000000000000000000000\n"),
            "{text}"
        );
    }
}
