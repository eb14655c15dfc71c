//! The classic YAML traps of threshold criteria, named in the plan's own words. `busbw: >= 340
//! GB/s` is what everyone types first, and YAML reads the `>` as the start of a folded block:
//! the parser's "did not find expected comment or line break" says nothing a plan author can
//! act on. `busbw: 340` parses, but as a number without a comparison or unit.

use super::loc::{Node, Pos, Scalar};

/// Characters YAML reads as syntax at the start of a plain value (anchors and aliases aside:
/// those are meant as syntax, and their errors say so).
const INDICATORS: &[char] = &['>', '|', '!', '@', '%', '`'];

/// For a YAML error at `pos`: when its line is `key: value` whose value starts with a YAML
/// indicator, the message that says to quote it, e.g. `quote it: busbw: ">= 340 GB/s"`.
pub fn unquoted_value(text: &str, pos: Pos) -> Option<String> {
    let line = text
        .lines()
        .nth(usize::try_from(pos.line).ok()?.checked_sub(1)?)?;
    let entry = line.trim_start();
    let entry = entry.strip_prefix("- ").unwrap_or(entry).trim_start();
    let (key, value) = entry.split_once(':')?;
    let key = key.trim();
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let value = match value.find(" #") {
        Some(i) => &value[..i],
        None => value,
    }
    .trim();
    let first = value.chars().next().filter(|c| INDICATORS.contains(c))?;
    if value.contains('"') {
        return None;
    }
    Some(format!(
        "`{first}` at the start of a value is YAML syntax, not text; quote it: {key}: \"{value}\""
    ))
}

/// For a number where a criterion takes a threshold string: the accepted form with that number,
/// e.g. `busbw: ">= 340 GB/s"`.
pub fn accepted_threshold(path: &str, value: &Node) -> Option<String> {
    let number = match value {
        Node::Scalar(s @ (Scalar::Int(_) | Scalar::Float(_))) => s.text(),
        _ => return None,
    };
    let key = path.rsplit('.').next()?;
    if !path.contains(".expect[") && !path.starts_with("expect[") {
        return None;
    }
    let form = match key {
        "busbw" | "algbw" => format!(">= {number} GB/s"),
        "time" => format!("<= {number} us"),
        "regression" | "variance" | "group_spread" | "outlier" => format!("<= {number}%"),
        _ => return None,
    };
    Some(format!("{key}: \"{form}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64) -> Pos {
        Pos {
            line,
            col: 1,
            offset: None,
            len: 0,
        }
    }

    #[test]
    fn an_unquoted_comparison_is_told_to_be_quoted_with_its_own_text() {
        let text = "expect:\n  - busbw: >= 340 GB/s   # at 1G\n";
        assert_eq!(
            unquoted_value(text, at(2)).as_deref(),
            Some(
                "`>` at the start of a value is YAML syntax, not text; quote it: busbw: \">= 340 GB/s\""
            )
        );
        assert_eq!(unquoted_value("name: x\n", at(1)), None);
        assert_eq!(unquoted_value("busbw: \">= 3\" >\n", at(1)), None);
        assert_eq!(unquoted_value(text, at(9)), None);
    }

    #[test]
    fn a_bare_number_shows_the_threshold_it_probably_meant() {
        let n = Node::Scalar(Scalar::Int(340));
        assert_eq!(
            accepted_threshold("tests[0].expect[1].busbw", &n).as_deref(),
            Some("busbw: \">= 340 GB/s\"")
        );
        assert_eq!(
            accepted_threshold("expect[0].regression", &Node::Scalar(Scalar::Int(5))).as_deref(),
            Some("regression: \"<= 5%\"")
        );
        assert_eq!(accepted_threshold("tests[0].busbw", &n), None);
        assert_eq!(accepted_threshold("tests[0].expect[0].wrong", &n), None);
    }
}
