//! The shell's side of every script baton writes (rendered job scripts, `drain.sh`): one word
//! quoted so that it stays literal, and the variable names a shell can `export`. Below the plan,
//! node sets and render, which all need it.

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
    fn env_names() {
        assert!(is_env_name("NCCL_PROTO"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A-B"));
        assert!(!is_env_name("A=B"));
        assert!(!is_env_name(""));
    }
}
