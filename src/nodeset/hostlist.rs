//! Slurm hostlists (`node[01-32,40]`, `rack[1-2]-gpu[1-4]`): the form in which Slurm hands out
//! node names (`SLURM_JOB_NODELIST`) and takes them back (`-w`, `scontrol`). Results and drain
//! lists name nodes this way so that a site engineer can paste them straight into Slurm.
//!
//! Host names are restricted to letters, digits, `.`, `_` and `-`, not starting with `-` or
//! `.` and without `..`: a hostlist from a plan or from the environment ends up on a command
//! line and in file names, so anything else is refused, not escaped.

use thiserror::Error;

/// Most hosts one hostlist may expand to: well above any cluster, well below what a typo such
/// as `n[1-999999999]` would allocate.
pub const MAX_HOSTS: usize = 100_000;
/// Longest hostlist text read, in bytes.
pub const MAX_HOSTLIST_BYTES: usize = 1 << 20;
/// Most digits in one range bound (u64 keeps 19 safely).
const MAX_DIGITS: usize = 18;

/// What is wrong with a hostlist, and where: `column` counts characters from 1.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HostlistError {
    #[error("the hostlist is empty")]
    Empty,
    #[error("hostlist is {0} bytes; at most {MAX_HOSTLIST_BYTES} are read")]
    TooLong(usize),
    #[error("empty host name at column {column}")]
    EmptyName { column: usize },
    #[error("`{ch}` at column {column} cannot be part of a host name")]
    BadChar { ch: char, column: usize },
    #[error("`[` at column {column} is never closed")]
    Unclosed { column: usize },
    #[error("`]` at column {column} closes no `[`")]
    UnmatchedClose { column: usize },
    #[error("`[` inside brackets at column {column}: ranges do not nest")]
    Nested { column: usize },
    #[error("bad range `{text}` at column {column}: {why}")]
    BadRange {
        text: String,
        column: usize,
        why: &'static str,
    },
    #[error("hostlist expands to more than {MAX_HOSTS} hosts (at column {column})")]
    TooMany { column: usize },
    #[error("host `{host}` is listed twice (again at column {column})")]
    Duplicate { host: String, column: usize },
    #[error(
        "a host name starts with `{ch}` at column {column}: it would read as an option or a path"
    )]
    BadStart { ch: char, column: usize },
    #[error("`..` at column {column} cannot be part of a host name")]
    DotDot { column: usize },
}

impl HostlistError {
    /// The message without the input's own text, for a hostfile whose words are shown only when
    /// they are host names (a token file must not be echoed by its error).
    pub fn unquoted(&self) -> String {
        match self {
            HostlistError::BadChar { column, .. } => {
                format!("a character at column {column} cannot be part of a host name")
            }
            HostlistError::BadRange { column, why, .. } => {
                format!("bad range at column {column}: {why}")
            }
            e => e.to_string(),
        }
    }
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// One piece of a host pattern: literal text, or a bracketed list of numbers with a width.
enum Piece {
    Text(String),
    Ranges(Vec<(u64, u64, usize)>),
}

/// Expands a hostlist into host names, in the order written. Duplicates are an error: a node set
/// is a set, and a node listed twice would run two ranks' worth of work on one host.
pub fn expand(text: &str) -> Result<Vec<String>, HostlistError> {
    if text.len() > MAX_HOSTLIST_BYTES {
        return Err(HostlistError::TooLong(text.len()));
    }
    if text.trim().is_empty() {
        return Err(HostlistError::Empty);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut i = 0;
    loop {
        let start = i;
        let (pieces, next) = parse_item(&chars, i)?;
        let count = pieces.iter().try_fold(1usize, |n, p| match p {
            Piece::Text(_) => Some(n),
            Piece::Ranges(r) => {
                let k = r.iter().try_fold(0usize, |a, (lo, hi, _)| {
                    a.checked_add((hi - lo + 1) as usize)
                })?;
                n.checked_mul(k)
            }
        });
        match count {
            Some(c) if c.saturating_add(out.len()) <= MAX_HOSTS => {}
            _ => return Err(HostlistError::TooMany { column: start + 1 }),
        }
        for host in product(&pieces) {
            if !seen.insert(host.clone()) {
                return Err(HostlistError::Duplicate {
                    host,
                    column: start + 1,
                });
            }
            out.push(host);
        }
        i = next;
        if i >= chars.len() {
            return Ok(out);
        }
        i += 1; // the separating comma
        if i >= chars.len() {
            return Err(HostlistError::EmptyName { column: i + 1 });
        }
    }
}

/// Parses one comma-separated item from `i`; returns its pieces and the index of the comma or end.
fn parse_item(chars: &[char], mut i: usize) -> Result<(Vec<Piece>, usize), HostlistError> {
    let start = i;
    let mut pieces = Vec::new();
    let mut text = String::new();
    while i < chars.len() && chars[i] != ',' {
        match chars[i] {
            '[' => {
                let open = i;
                let close = (i + 1..chars.len())
                    .find(|&j| chars[j] == ']' || chars[j] == '[')
                    .ok_or(HostlistError::Unclosed { column: open + 1 })?;
                if chars[close] == '[' {
                    return Err(HostlistError::Nested { column: close + 1 });
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Ranges(parse_ranges(
                    &chars[open + 1..close],
                    open + 1,
                )?));
                i = close + 1;
            }
            ']' => return Err(HostlistError::UnmatchedClose { column: i + 1 }),
            c if name_char(c) => {
                if i == start && matches!(c, '-' | '.') {
                    return Err(HostlistError::BadStart {
                        ch: c,
                        column: i + 1,
                    });
                }
                if c == '.' && text.ends_with('.') {
                    return Err(HostlistError::DotDot { column: i });
                }
                text.push(c);
                i += 1;
            }
            c => {
                return Err(HostlistError::BadChar {
                    ch: c,
                    column: i + 1,
                });
            }
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    if pieces.is_empty() {
        return Err(HostlistError::EmptyName { column: start + 1 });
    }
    Ok((pieces, i))
}

/// `01-04,7` inside brackets; `offset` is the index of its first character in the hostlist.
fn parse_ranges(chars: &[char], offset: usize) -> Result<Vec<(u64, u64, usize)>, HostlistError> {
    let mut out = Vec::new();
    let mut start = 0;
    for part in chars.split(|c| *c == ',') {
        let text: String = part.iter().collect();
        let column = offset + start + 1;
        start += part.len() + 1;
        let bad = |why| HostlistError::BadRange {
            text: text.clone(),
            column,
            why,
        };
        let (lo_s, hi_s) = match text.split_once('-') {
            Some((l, h)) => (l, h),
            None => (text.as_str(), text.as_str()),
        };
        for s in [lo_s, hi_s] {
            if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
                return Err(bad("bounds are numbers, written `lo-hi` or `n`"));
            }
            if s.len() > MAX_DIGITS {
                return Err(bad("a bound has too many digits"));
            }
        }
        let (lo, hi): (u64, u64) = (lo_s.parse().unwrap_or(0), hi_s.parse().unwrap_or(0));
        if lo > hi {
            return Err(bad("the low bound is above the high one"));
        }
        // Slurm's rule: the low bound's width is every number's width (`01-10` → 01 … 10).
        out.push((lo, hi, lo_s.len()));
    }
    Ok(out)
}

fn product(pieces: &[Piece]) -> Vec<String> {
    let mut acc = vec![String::new()];
    for p in pieces {
        acc = match p {
            Piece::Text(t) => acc.into_iter().map(|a| a + t).collect(),
            Piece::Ranges(r) => acc
                .iter()
                .flat_map(|a| {
                    r.iter()
                        .flat_map(move |&(lo, hi, w)| (lo..=hi).map(move |n| format!("{a}{n:0w$}")))
                })
                .collect(),
        };
    }
    acc
}

/// A host name split at its last run of digits: `rack1-node07` → (`rack1-node`, "07", ``).
fn split_number(host: &str) -> Option<(&str, &str, &str)> {
    let end = host.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = host[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let digits = &host[start..end];
    (digits.len() <= MAX_DIGITS).then(|| (&host[..start], digits, &host[end..]))
}

/// Compresses host names into a hostlist: hosts that differ only in their last number become
/// ranges (`node01,node02,node03` → `node[01-03]`), keeping each number's zero padding so that
/// [`expand`] gives back exactly these names. Groups appear in order of first appearance and
/// numbers ascend within a group, as `scontrol show hostlist` sorts them.
pub fn compress<S: AsRef<str>>(hosts: &[S]) -> String {
    enum Entry {
        /// (prefix, suffix) and the numbers as written.
        Group(String, String, Vec<(u64, String)>),
        Plain(String),
    }
    let mut entries: Vec<Entry> = Vec::new();
    for h in hosts {
        let h = h.as_ref();
        let Some((pre, digits, suf)) = split_number(h) else {
            entries.push(Entry::Plain(h.to_string()));
            continue;
        };
        let n: u64 = digits.parse().unwrap_or(0);
        let found = entries.iter_mut().find_map(|e| match e {
            Entry::Group(p, s, v) if p == pre && s == suf => Some(v),
            _ => None,
        });
        match found {
            Some(v) => v.push((n, digits.to_string())),
            None => entries.push(Entry::Group(
                pre.to_string(),
                suf.to_string(),
                vec![(n, digits.to_string())],
            )),
        }
    }
    let parts: Vec<String> = entries
        .into_iter()
        .map(|e| match e {
            Entry::Plain(name) => name,
            Entry::Group(pre, suf, mut nums) => {
                nums.sort();
                nums.dedup();
                let ranges = runs(&nums);
                if let [(lo, hi)] = ranges.as_slice()
                    && lo == hi
                {
                    return format!("{pre}{lo}{suf}");
                }
                let r: Vec<String> = ranges
                    .iter()
                    .map(|(lo, hi)| {
                        if lo == hi {
                            lo.clone()
                        } else {
                            format!("{lo}-{hi}")
                        }
                    })
                    .collect();
                format!("{pre}[{}]{suf}", r.join(","))
            }
        })
        .collect();
    parts.join(",")
}

/// Consecutive numbers written the same way as their run's low bound would write them.
fn runs(nums: &[(u64, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut cur: Option<(u64, String, u64, String)> = None;
    for (n, s) in nums {
        if let Some((lo, ref lo_s, hi, _)) = cur {
            let w = lo_s.len();
            if *n == hi + 1 && format!("{n:0w$}") == *s {
                cur = Some((lo, lo_s.clone(), *n, s.clone()));
                continue;
            }
        }
        if let Some((_, lo_s, _, hi_s)) = cur.take() {
            out.push((lo_s, hi_s));
        }
        cur = Some((*n, s.clone(), *n, s.clone()));
    }
    if let Some((_, lo_s, _, hi_s)) = cur {
        out.push((lo_s, hi_s));
    }
    out
}

/// Reads a hostfile: one host (or hostlist) per line, first word only, so Open MPI (`node01
/// slots=8`) and MPICH (`node01:8`) hostfiles both work; `#` starts a comment.
pub fn parse_hostfile(text: &str) -> Result<Vec<String>, (usize, HostlistError)> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let Some(word) = line.split_whitespace().next() else {
            continue;
        };
        let word = word.split(':').next().unwrap_or(word);
        for h in expand(word).map_err(|e| (i + 1, e))? {
            if !seen.insert(h.clone()) {
                return Err((i + 1, HostlistError::Duplicate { host: h, column: 1 }));
            }
            out.push(h);
        }
        if out.len() > MAX_HOSTS {
            return Err((i + 1, HostlistError::TooMany { column: 1 }));
        }
    }
    if out.is_empty() {
        return Err((0, HostlistError::Empty));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Vec<String> {
        expand(s).unwrap()
    }

    #[test]
    fn expands_ranges_padding_and_prefixes() {
        assert_eq!(ex("node01"), ["node01"]);
        assert_eq!(
            ex("node[01-03,10]"),
            ["node01", "node02", "node03", "node10"]
        );
        assert_eq!(ex("n[8-10]"), ["n8", "n9", "n10"]);
        assert_eq!(ex("n[098-100]"), ["n098", "n099", "n100"]);
        assert_eq!(ex("a[1-2],b3,gpu[7]"), ["a1", "a2", "b3", "gpu7"]);
        assert_eq!(
            ex("rack[1-2]-node[01-02]"),
            [
                "rack1-node01",
                "rack1-node02",
                "rack2-node01",
                "rack2-node02"
            ]
        );
        assert_eq!(ex("n[1-2]-ib"), ["n1-ib", "n2-ib"]);
    }

    #[test]
    fn errors_name_the_column() {
        use HostlistError::*;
        assert_eq!(expand(""), Err(Empty));
        assert_eq!(expand("n[1-3"), Err(Unclosed { column: 2 }));
        assert_eq!(expand("n1]"), Err(UnmatchedClose { column: 3 }));
        assert_eq!(expand("n[1-[2]]"), Err(Nested { column: 5 }));
        assert_eq!(expand("a,,b"), Err(EmptyName { column: 3 }));
        assert_eq!(expand("a,"), Err(EmptyName { column: 3 }));
        assert_eq!(expand("n 1"), Err(BadChar { ch: ' ', column: 2 }));
        assert_eq!(expand("n;rm"), Err(BadChar { ch: ';', column: 2 }));
        // Names that read as options or paths on a command line.
        assert_eq!(expand("-n1"), Err(BadStart { ch: '-', column: 1 }));
        assert_eq!(expand("n1,.n2"), Err(BadStart { ch: '.', column: 4 }));
        assert_eq!(expand("a..b"), Err(DotDot { column: 2 }));
        assert_eq!(ex("a.b-c_d"), ["a.b-c_d"]);
        assert!(matches!(
            expand("n[1-2,5-3]"),
            Err(BadRange { column: 7, .. })
        ));
        assert!(matches!(expand("n[a-3]"), Err(BadRange { column: 3, .. })));
        assert!(matches!(expand("n[]"), Err(BadRange { .. })));
        assert_eq!(
            expand("n[1-2],n2"),
            Err(Duplicate {
                host: "n2".into(),
                column: 8
            })
        );
    }

    #[test]
    fn refuses_lists_beyond_the_limit_before_building_them() {
        assert_eq!(
            expand("n[1-999999999999]"),
            Err(HostlistError::TooMany { column: 1 })
        );
        assert_eq!(
            expand("a[1-1000]b[1-1000]"),
            Err(HostlistError::TooMany { column: 1 })
        );
        assert!(expand("n[1-100000]").is_ok());
        assert!(matches!(
            expand("n[1-99999],m[1-2]"),
            Err(HostlistError::TooMany { .. })
        ));
    }

    #[test]
    fn compresses_keeping_padding() {
        assert_eq!(
            compress(&["node01", "node02", "node03", "node10"]),
            "node[01-03,10]"
        );
        assert_eq!(compress(&["n9", "n10", "n11"]), "n[9-11]");
        assert_eq!(compress(&["n09", "n10"]), "n[09-10]");
        assert_eq!(compress(&["n1", "n01"]), "n[01,1]");
        assert_eq!(compress(&["b2", "a1", "b1", "login"]), "b[1-2],a1,login");
        assert_eq!(compress(&["n3"]), "n3");
        assert_eq!(compress::<&str>(&[]), "");
        assert_eq!(compress(&["x1-ib", "x2-ib"]), "x[1-2]-ib");
    }

    #[test]
    fn hostfiles_take_the_first_word() {
        let text = "# rack 1\nnode01 slots=8\nnode02:8\n\nnode[03-04]\n";
        assert_eq!(
            parse_hostfile(text).unwrap(),
            ["node01", "node02", "node03", "node04"]
        );
        assert_eq!(parse_hostfile("a\na\n").unwrap_err().0, 2);
        assert_eq!(
            parse_hostfile("# none\n").unwrap_err().1,
            HostlistError::Empty
        );
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn host() -> impl Strategy<Value = String> {
            (
                prop::sample::select(vec!["n", "gpu", "rack1-node", "a.b", "x_"]),
                0u64..300,
                0usize..4,
                prop::sample::select(vec!["", "-ib", "x"]),
            )
                .prop_map(|(p, n, w, s)| format!("{p}{n:0w$}{s}"))
        }

        proptest! {
            #[test]
            fn compress_then_expand_gives_the_same_hosts(
                hosts in prop::collection::hash_set(host(), 0..60)
            ) {
                let hosts: Vec<String> = hosts.into_iter().collect();
                if hosts.is_empty() {
                    return Ok(());
                }
                let c = compress(&hosts);
                let mut back = expand(&c).unwrap();
                let mut want = hosts.clone();
                back.sort();
                want.sort();
                prop_assert_eq!(back, want);
                // And compressing is a fixed point on its own output.
                prop_assert_eq!(compress(&expand(&c).unwrap()), c);
            }
        }
    }
}
