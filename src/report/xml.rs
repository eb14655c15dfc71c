//! The one text filter of every XML file baton writes (JUnit, the report's SVG charts and pair
//! matrices, the history chart). XML 1.0 allows only `Char` (tab, newline, carriage return and
//! U+0020 onwards, less the surrogates and U+FFFE/U+FFFF); one other character anywhere — a
//! vendor's host name, an `NCCL_COMMENT=$'night\uFFFE'` in a run's environment — makes the whole
//! file unreadable to a CI's JUnit parser or a browser. Such characters become U+FFFD, so the
//! reader still sees that something was there.

use std::borrow::Cow;

/// What stands in for a character XML cannot hold.
pub const REPLACEMENT: char = '\u{FFFD}';

/// Whether XML 1.0 can hold `c` (Rust strings hold no surrogates).
pub fn is_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `s` with every character XML cannot hold replaced: a whole document after it is written, or
/// one value before it goes into one.
pub fn chars(s: &str) -> Cow<'_, str> {
    if s.chars().all(is_char) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| if is_char(c) { c } else { REPLACEMENT })
            .collect(),
    )
}

/// [`chars`] for a document serialized as bytes (quick-junit writes UTF-8).
pub fn document(bytes: Vec<u8>) -> Vec<u8> {
    match String::from_utf8(bytes) {
        Ok(s) => match chars(&s) {
            Cow::Borrowed(_) => s.into_bytes(),
            Cow::Owned(clean) => clean.into_bytes(),
        },
        Err(e) => String::from_utf8_lossy(e.as_bytes())
            .into_owned()
            .into_bytes(),
    }
}

/// `s` as XML text or an attribute value of a document built by hand: markup characters as
/// entities, and [`chars`].
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        push_escaped(&mut o, c);
    }
    o
}

/// One character of [`escape`]: the one markup rule of XML and HTML alike (the HTML escaper
/// adds only its handling of control characters), so an attribute in either quote is safe.
pub fn push_escaped(o: &mut String, c: char) {
    match c {
        '&' => o.push_str("&amp;"),
        '<' => o.push_str("&lt;"),
        '>' => o.push_str("&gt;"),
        '"' => o.push_str("&quot;"),
        '\'' => o.push_str("&#39;"),
        c if is_char(c) => o.push(c),
        _ => o.push(REPLACEMENT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_xml_chars_survive() {
        assert_eq!(chars("plain text\t\n\r"), "plain text\t\n\r");
        assert!(matches!(chars("plain"), Cow::Borrowed(_)));
        assert_eq!(
            chars("a\u{0}b\u{1b}c\u{FFFE}d\u{FFFF}e\u{7f}\u{85}\u{10FFFF}"),
            "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e\u{7f}\u{85}\u{10FFFF}"
        );
        assert_eq!(
            escape("<a b=\"c\">&\u{FFFE}"),
            "&lt;a b=&quot;c&quot;&gt;&amp;\u{FFFD}"
        );
        assert_eq!(
            document(b"x\xef\xbf\xbey".to_vec()),
            "x\u{FFFD}y".as_bytes()
        );
    }
}
