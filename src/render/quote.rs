//! Quoting for the `#SBATCH` comment lines that sbatch parses itself before any shell runs (the
//! shell's own quoting is [`crate::shell`], shared with `drain.sh` and the plan's checks).

/// Why a value cannot go into an `#SBATCH` line: sbatch reads those lines itself, one option per
/// line, so a newline would start a new directive and no quoting can prevent it.
pub fn sbatch_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("is empty".into());
    }
    s.chars().find(|c| c.is_control()).map(|c| {
        format!(
            "contains the control character {:?}; #SBATCH lines cannot carry it",
            c
        )
    })
}

/// Writes a checked value (see [`sbatch_problem`]) as sbatch's `#SBATCH` parser reads it back:
/// bare when it is plain, otherwise in double quotes with `\` and `"` escaped, because that
/// parser splits on blanks, takes `#` as the start of a comment and strips quotes.
pub fn sbatch_quote(s: &str) -> String {
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._,:=/@%+-".contains(c));
    if plain {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbatch_values_refuse_control_characters() {
        assert!(sbatch_problem("gpu").is_none());
        assert!(sbatch_problem("a b # c").is_none());
        assert!(
            sbatch_problem("gpu\n#SBATCH --x")
                .unwrap()
                .contains("'\\n'")
        );
        assert!(sbatch_problem("a\rb").is_some());
        assert!(sbatch_problem("a\tb").is_some());
        assert!(sbatch_problem("").is_some());
    }

    #[test]
    fn sbatch_quote_leaves_plain_values_bare() {
        assert_eq!(sbatch_quote("--qos=high"), "--qos=high");
        assert_eq!(sbatch_quote("gpu-a100"), "gpu-a100");
        assert_eq!(
            sbatch_quote("a \"b\" # c\\d"),
            "\"a \\\"b\\\" # c\\\\d\"",
            "blanks, `#`, quotes and backslashes are quoted for sbatch's parser"
        );
    }
}
