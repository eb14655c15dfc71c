//! Markdown for values that came from input (plan, logs, results files): host and GPU names,
//! variables, file names and job IDs are text, never markup. Wherever report.md is rendered (a
//! pull request, a ticket, a wiki), a `<script>` in a GPU name or a backtick in a hostname must
//! show as those characters and do nothing else.

/// `s` as Markdown text, also safe in a table cell. Escaped are exactly the characters that could
/// start markup there, so ordinary text stays readable in the raw file: `<` before what could be
/// a tag or autolink and `&` before what could be an entity (as entities), `` ` `` `*` `[` `]`
/// `|` `~` `\` always and `_` at a word edge (backslash), line breaks and other control
/// characters as spaces. Block markup (`#`, `>`, lists) cannot start inside a line and is left.
pub fn text(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut o = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        match c {
            '<' if next.is_none_or(|n| n.is_ascii_alphabetic() || "/!?".contains(n)) => {
                o.push_str("&lt;")
            }
            '&' if next.is_none_or(|n| n.is_ascii_alphanumeric() || n == '#') => {
                o.push_str("&amp;")
            }
            '_' if word(prev) && word(next) => o.push('_'),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                o.push('\\');
                o.push(c);
            }
            c if c.is_control() => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// `s` as a code span that no backtick inside it can close: the fence is one backtick longer than
/// the longest run in `s`, padded with spaces when `s` starts or ends with one. `|` is escaped so
/// the span can sit in a table cell (GFM splits cells before it parses spans); control characters
/// become spaces.
pub fn code(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .replace('|', "\\|");
    let fence = "`".repeat(longest_run(&clean, '`') + 1);
    let pad = if clean.starts_with('`') || clean.ends_with('`') || clean.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{clean}{pad}{fence}")
}

/// The fence for a fenced code block holding `s`: longer than any backtick run in it.
pub fn block_fence(s: &str) -> String {
    "`".repeat((longest_run(s, '`') + 1).max(3))
}

fn longest_run(s: &str, ch: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == ch { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_never_markup() {
        assert_eq!(
            text("<script>alert(1)</script>"),
            "&lt;script>alert(1)&lt;/script>"
        );
        assert_eq!(text("a|b\nc*d_e`f"), "a\\|b c\\*d_e\\`f");
        assert_eq!(text("_x_ &amp; &#60;"), "\\_x\\_ &amp;amp; &amp;#60;");
        assert_eq!(text("![x](javascript:y)"), "!\\[x\\](javascript:y)");
        assert_eq!(text("<https://x>"), "&lt;https://x>");
        assert_eq!(text("\u{1b}[2J"), " \\[2J");
        // Ordinary text is left as it reads.
        assert_eq!(
            text("busbw 331.45 GB/s < 400 GB/s at 1G (all_gather float, P & L)"),
            "busbw 331.45 GB/s < 400 GB/s at 1G (all_gather float, P & L)"
        );
    }

    #[test]
    fn code_spans_outlast_every_backtick_run() {
        assert_eq!(code("all_reduce"), "`all_reduce`");
        assert_eq!(
            code("x`<img src=x onerror=alert(1)>"),
            "``x`<img src=x onerror=alert(1)>``"
        );
        assert_eq!(code("``a"), "``` ``a ```");
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(block_fence("a ```` b"), "`````");
        assert_eq!(block_fence("plain"), "```");
    }
}
