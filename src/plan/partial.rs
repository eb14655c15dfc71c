//! The semantic pass over the tests the structural pass found nothing wrong with. A plan whose
//! test `a` has an unknown key and whose test `c` has a bad size would otherwise show the first
//! error, and the second only once the first is fixed: a user should not fix 3 errors to then
//! meet 7 more. The broken tests are blanked out of the text (every byte but newlines becomes a
//! space, so every line, column and byte offset of the rest stays where it was) and the rest is
//! checked as it stands.

use super::diag::Diagnostic;
use super::loc::{Loc, Node};

/// The plan text without the tests that `structural` errors lie in, when every such error lies
/// inside one of the plan's block-style `tests:` items and at least one test is left; `None`
/// otherwise (an error in the plan's top level affects every test: nothing is independent).
pub fn without_broken_tests(
    text: &str,
    node: &Loc<Node>,
    structural: &[Diagnostic],
) -> Option<String> {
    let Node::Map(top) = &node.value else {
        return None;
    };
    let (_, tests) = top.iter().find(|(k, _)| k.value.text() == "tests")?;
    let Node::Seq(items) = &tests.value else {
        return None;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let regions: Vec<(usize, usize)> = items
        .iter()
        .map(|item| region(&lines, item))
        .collect::<Option<_>>()?;
    let mut broken = vec![false; regions.len()];
    for d in structural {
        let line = usize::try_from(d.pos.filter(|p| p.is_known())?.line).ok()?;
        let i = regions
            .iter()
            .position(|&(from, to)| (from..=to).contains(&line))?;
        broken[i] = true;
    }
    if broken.iter().all(|b| *b) {
        return None;
    }
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for (&(from, to), _) in regions.iter().zip(&broken).filter(|(_, b)| **b) {
        for l in &mut out[from - 1..to] {
            *l = " ".repeat(l.len());
        }
    }
    Some(out.join("\n"))
}

/// The 1-based first and last line of a block sequence item: from its `-` line to the line
/// before the next one indented no deeper than the `-` (blank and comment lines aside). `None`
/// for flow style (`[{…}, {…}]`), whose items share lines.
fn region(lines: &[&str], item: &Loc<Node>) -> Option<(usize, usize)> {
    let first = usize::try_from(item.pos.line).ok()?;
    let line = lines.get(first.checked_sub(1)?)?;
    let col = usize::try_from(item.pos.col).ok()?.checked_sub(1)?;
    let before = line.get(..col)?;
    let dash = before.trim_end();
    if !dash.ends_with('-') || !dash[..dash.len() - 1].trim().is_empty() {
        return None;
    }
    let indent = dash.len() - 1;
    let mut last = first;
    for (i, l) in lines.iter().enumerate().skip(first) {
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if l.len() - t.len() <= indent {
            break;
        }
        last = i + 1;
    }
    Some((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::loc::Pos;

    fn at(line: u64) -> Diagnostic {
        Diagnostic::error(
            "x",
            Some(Pos {
                line,
                col: 5,
                offset: None,
                len: 0,
            }),
        )
    }

    fn tree(text: &str) -> Loc<Node> {
        serde_saphyr::from_str(text).unwrap()
    }

    const PLAN: &str = "version: 1\ntests:\n  - name: a\n    sizez: [8]\n\n  # c\n  - name: b\n    sizes:\n      - 8\nname: t\n";

    #[test]
    fn only_the_broken_test_is_blanked_and_everything_else_stays_in_place() {
        let rest = without_broken_tests(PLAN, &tree(PLAN), &[at(4)]).unwrap();
        assert_eq!(rest.len(), PLAN.len());
        assert_eq!(
            rest.lines().collect::<Vec<_>>(),
            [
                "version: 1",
                "tests:",
                " ".repeat(11).as_str(),
                " ".repeat(14).as_str(),
                "",
                "  # c",
                "  - name: b",
                "    sizes:",
                "      - 8",
                "name: t"
            ]
        );
    }

    #[test]
    fn nothing_is_independent_of_a_top_level_error_or_when_every_test_is_broken() {
        assert_eq!(without_broken_tests(PLAN, &tree(PLAN), &[at(1)]), None);
        assert_eq!(
            without_broken_tests(PLAN, &tree(PLAN), &[at(3), at(8)]),
            None
        );
        let flow = "version: 1\ntests: [{name: a}, {name: b}]\n";
        assert_eq!(without_broken_tests(flow, &tree(flow), &[at(2)]), None);
    }
}
