//! Quoting for the two languages a rendered script is written in: the shell, and the `#SBATCH`
//! comment lines that sbatch parses itself before any shell runs.

/// Quotes `s` as one shell word that stays literal: `$(…)`, backticks, globs, blanks and
/// newlines included. Single quotes are the only shell quoting with no special characters
/// inside, so the one character that needs care is `'` itself, written as `'\''`.
pub fn shell_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

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

/// Whether `s` is an environment variable name the shell can `export` (the plan checks this too).
pub fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_keeps_everything_literal() {
        assert_eq!(shell_quote("plain"), "'plain'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("$(touch x)"), "'$(touch x)'");
        assert_eq!(shell_quote("a\nb"), "'a\nb'");
    }

    #[test]
    fn shell_quote_round_trips_through_bash() {
        let hostile = "a'b\"c $(touch /nonexistent/x) `id` \\ ${HOME} *\n;|&";
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote(hostile)))
            .output()
            .expect("bash runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout), hostile);
    }

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

    #[test]
    fn env_names() {
        assert!(is_env_name("NCCL_PROTO"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A-B"));
        assert!(!is_env_name("A=B"));
        assert!(!is_env_name(""));
    }
}
