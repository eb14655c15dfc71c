//! The tags launchers put before every line of a process's output, so that a log captured
//! through `mpirun --tag-output`, `srun -l`, pdsh or SkyPilot reads like nccl-tests' own stdout.
//! What a tag names (the rank, the host) is kept: it says who printed a failure.
//!
//! The unambiguous tags are recognised on any line. A tag only a repetition can reveal (pdsh's
//! `host: `, or any literal `PREFIX<sep> `) counts only when it starts at least half the lines:
//! nccl-tests itself prints `host: Test NCCL failure …`, and that must not be stripped as a tag.

/// Who printed a line, as its launcher tag says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag<'a> {
    pub launcher: &'static str,
    /// The tag as printed, without its separator.
    pub text: &'a str,
    pub rank: Option<u64>,
}

impl Tag<'_> {
    /// `rank 3 (mpirun --tag-output)` or `node7 (pdsh)`, for messages.
    pub fn describe(&self) -> String {
        match self.rank {
            Some(r) => format!("rank {r} ({})", self.launcher),
            None => format!("{} ({})", self.text, self.launcher),
        }
    }
}

/// Most tags stripped from one line: `pdsh` around `srun -l` around `--tag-output`.
const MAX_LAYERS: usize = 3;
/// A repeated tag longer than this is a line that happens to repeat, not a tag.
const MAX_TAG: usize = 64;
/// Lines a repeated prefix is looked for in: a launcher tags every line alike, so the first ones
/// say it, and a million-line log costs no more to look at than a short one.
const SAMPLE: usize = 10_000;

/// The repeated prefix of one log, found in a first pass over its lines.
#[derive(Debug, Default)]
pub struct Prefixes {
    /// A literal `PREFIX<sep>` starting at least half the lines.
    literal: Option<String>,
    /// pdsh's `host: ` (hosts differ line to line) starts at least half the lines.
    hosts: bool,
}

impl Prefixes {
    /// Looks for a repeated prefix in the first [`SAMPLE`] lines, in two passes (a majority
    /// vote, then a count).
    pub fn detect<'a>(lines: impl Iterator<Item = &'a str> + Clone) -> Prefixes {
        let lines = lines.take(SAMPLE);
        let mut candidate: Option<&str> = None;
        let mut votes = 0usize;
        let (mut total, mut hosty) = (0usize, 0usize);
        for l in lines.clone() {
            let l = l.trim_start();
            if l.is_empty() {
                continue;
            }
            total += 1;
            hosty += usize::from(host_tag(l).is_some());
            let tok = literal_tag(l);
            match (candidate, tok) {
                (_, None) => votes = votes.saturating_sub(1),
                (Some(c), Some(t)) if c == t => votes += 1,
                (_, Some(t)) if votes == 0 => {
                    candidate = Some(t);
                    votes = 1;
                }
                _ => votes -= 1,
            }
        }
        let literal = candidate.filter(|c| {
            let n = lines
                .filter(|l| literal_tag(l.trim_start()) == Some(*c))
                .count();
            2 * n >= total && total > 1
        });
        Prefixes {
            literal: literal.map(str::to_string),
            hosts: literal.is_none() && total > 1 && 2 * hosty >= total,
        }
    }

    /// The line without its launcher tags, and the innermost tag that names a rank (else the
    /// outermost).
    pub fn strip<'a>(&self, line: &'a str) -> (Option<Tag<'a>>, &'a str) {
        let mut rest = line;
        let mut tag: Option<Tag<'a>> = None;
        let lead = rest.trim_start();
        if let Some(lit) = &self.literal
            && lead.starts_with(lit.as_str())
        {
            let word = lead[..lit.len()].trim_end();
            tag = Some(Tag {
                launcher: "repeated prefix",
                text: &word[..word.len() - 1],
                rank: None,
            });
            rest = &lead[lit.len()..];
        } else if self.hosts
            && let Some((t, r)) = host_tag(rest.trim_start())
        {
            tag = Some(t);
            rest = r;
        }
        for _ in 0..MAX_LAYERS {
            let Some((t, r)) = launcher_tag(rest) else {
                break;
            };
            if tag.is_none_or(|old| old.rank.is_none() || t.rank.is_some()) {
                tag = Some(t);
            }
            rest = r;
        }
        (tag, rest)
    }
}

/// `[1,0]<stdout>:` (Open MPI `--tag-output`), ` 0: ` (`srun -l`) or `(head, rank=0, pid=1) `
/// (SkyPilot): tags no log line can start with by chance.
fn launcher_tag(line: &str) -> Option<(Tag<'_>, &str)> {
    let lead = line.trim_start();
    tag_output(lead)
        .or_else(|| srun_label(lead))
        .or_else(|| skypilot(lead))
}

fn tag_output(l: &str) -> Option<(Tag<'_>, &str)> {
    let (ids, after) = l.strip_prefix('[')?.split_once(']')?;
    let (job, rank) = ids.split_once(',')?;
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rank = rank.parse().ok()?;
    let rest = ["<stdout>:", "<stderr>:"]
        .iter()
        .find_map(|s| after.strip_prefix(s))?;
    let tag = Tag {
        launcher: "mpirun --tag-output",
        text: &l[..l.len() - rest.len() - 1],
        rank: Some(rank),
    };
    Some((tag, rest))
}

fn srun_label(l: &str) -> Option<(Tag<'_>, &str)> {
    let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 7 {
        return None;
    }
    let after = &l[digits..];
    let rest = after
        .strip_prefix(": ")
        .or_else(|| (after == ":").then_some(""))?;
    let tag = Tag {
        launcher: "srun -l",
        text: &l[..digits],
        rank: l[..digits].parse().ok(),
    };
    Some((tag, rest))
}

fn skypilot(l: &str) -> Option<(Tag<'_>, &str)> {
    let (inner, rest) = l.strip_prefix('(')?.split_once(") ")?;
    let mut fields = inner.split(", ");
    let _name = fields.next().filter(|n| is_name(n))?;
    let rank = fields.next()?.strip_prefix("rank=")?.parse().ok()?;
    fields.next()?.strip_prefix("pid=")?;
    let tag = Tag {
        launcher: "SkyPilot",
        text: &l[..inner.len() + 2],
        rank: Some(rank),
    };
    Some((tag, rest))
}

/// pdsh's `host: `: a host name (not only digits, which is `srun -l`), a colon, a space.
fn host_tag(l: &str) -> Option<(Tag<'_>, &str)> {
    let (host, rest) = l.split_once(": ")?;
    if !is_name(host) || host.bytes().all(|b| b.is_ascii_digit()) || host.len() > MAX_TAG {
        return None;
    }
    let tag = Tag {
        launcher: "pdsh",
        text: host,
        rank: None,
    };
    Some((tag, rest))
}

/// The first word when it ends like a tag (`:`, `]`, `)`, `|`, `>`) and is followed by a space.
fn literal_tag(l: &str) -> Option<&str> {
    let end = l.find(' ')?;
    let word = &l[..end];
    let sep = word.chars().last()?;
    let tagged = matches!(sep, ':' | ']' | ')' | '|' | '>') && word.len() > 1;
    // `#`-lines, rows and NCCL's own `host:pid:tid` are content, not tags.
    let content = launcher_tag(l).is_some()
        || word.starts_with('#')
        || word.starts_with(|c: char| c.is_ascii_digit())
        || word.matches(':').count() > 1;
    (tagged && !content && word.len() <= MAX_TAG).then_some(&l[..=end])
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_all(text: &str) -> Vec<(Option<u64>, &str)> {
        let p = Prefixes::detect(text.lines());
        text.lines()
            .map(|l| {
                let (t, r) = p.strip(l);
                (t.and_then(|t| t.rank), r)
            })
            .collect()
    }

    #[test]
    fn launcher_tags_are_stripped_and_their_rank_kept() {
        let (t, r) = Prefixes::default().strip("[1,3]<stdout>:# Using devices");
        assert_eq!((t.unwrap().rank, r), (Some(3), "# Using devices"));
        let (t, r) = Prefixes::default().strip("    [1,0]<stderr>:x");
        assert_eq!((t.unwrap().launcher, r), ("mpirun --tag-output", "x"));
        let (t, r) = Prefixes::default().strip(" 12:        8   2  float");
        assert_eq!((t.unwrap().rank, r), (Some(12), "       8   2  float"));
        let (t, r) =
            Prefixes::default().strip("(worker1, rank=1, pid=20075, ip=10.1.2.3) # nThread");
        assert_eq!((t.unwrap().rank, r), (Some(1), "# nThread"));
        // srun around tag-output: the inner tag names the rank.
        let (t, r) = Prefixes::default().strip("0: [1,5]<stdout>:# x");
        assert_eq!((t.unwrap().rank, r), (Some(5), "# x"));
        for content in [
            "[0000:00:06] x",
            "10:1869:1956 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC",
            "node0: Test CUDA failure common.cu:389 'an illegal memory access'",
        ] {
            assert_eq!(Prefixes::default().strip(content), (None, content));
        }
    }

    #[test]
    fn repeated_prefixes_need_a_majority() {
        let pdsh = "node01: # nThread 1\nnode02: x NCCL INFO y\nnode01:        8  2 float\n";
        let got = strip_all(pdsh);
        assert_eq!(got[0].1, "# nThread 1");
        assert_eq!(got[2].1, "       8  2 float");
        let lit = "job42| # nThread 1\njob42| #\njob42|        8  2 float\nother\n";
        assert_eq!(strip_all(lit)[2].1, "       8  2 float");
        // nccl-tests' own `host: Test … failure` lines are a minority: not a tag.
        let log = "# nThread 1\n#\n# Using devices\nhostA: Test NCCL failure common.cu:1 'x'\n";
        assert_eq!(
            strip_all(log)[3].1,
            "hostA: Test NCCL failure common.cu:1 'x'"
        );
    }
}
