//! nccl-tests' stdout as sites keep it: one or more runs (a header, `# Rank` device lines, the
//! table, the footer), each possibly behind launcher tags, among command lines, shell prompts,
//! NCCL_DEBUG lines and whatever else the capture caught. Lines it does not know are skipped and
//! counted, never fatal.
//!
//! A new run starts at a `# Collective test starting:` line, a header or a line naming a program
//! once the run before has printed its table, footer or failure. A header printed again before
//! any row is not a new run: it is another process of a non-MPI build, each of which runs alone.

use super::debug::{self, DebugLine};
use super::failure::{self, Failure};
use super::header::{is_header, parse_device, parse_header};
use super::log::{Columns, Log, Warning, collective_of_program, nccl_version_from_code};
use super::prefix::{Prefixes, Tag};
use super::program;
use super::row::{self, RowError};
use crate::results::{ErrorKind, JobError};

/// Most variables one log may state (`… set by environment to …`).
const MAX_ENV: usize = 1000;
/// How many unrecognised lines are quoted in the warning (all are counted).
const QUOTED_UNKNOWN: usize = 3;
/// Most errors kept per run; a log of a million failure lines says no more than this.
const MAX_ERRORS: usize = 100;
/// NCCL WARN lines that report no error (probes of optional libraries).
const BENIGN_WARNS: &[&str] = &[
    "Failed to open libibverbs",
    "Missing \"amd_iommu=on\"",
    "NET/Plugin",
    "Could not find",
];

/// Parses a text log into its runs (at least one, possibly holding only NCCL_DEBUG lines).
/// Never fails: what it cannot read becomes a warning.
pub fn parse(source: &str, text: &str) -> (Vec<Log>, Vec<Warning>) {
    let prefixes = Prefixes::detect(text.lines());
    let mut p = Parser::new(source);
    for (i, raw) in text.lines().enumerate() {
        p.line(i + 1, raw.trim_end_matches('\r'), &prefixes);
    }
    p.finish()
}

struct Parser<'s> {
    source: &'s str,
    runs: Vec<Log>,
    cur: Log,
    warnings: Vec<Warning>,
    unknown: Vec<(usize, String)>,
    unknown_count: usize,
    last_row_error: Option<(usize, String)>,
    /// Lines stripped of a launcher tag, per launcher, with an example tag.
    tagged: Vec<(&'static str, usize, String)>,
    benign_warns: usize,
    first_benign: Option<String>,
}

impl<'s> Parser<'s> {
    fn new(source: &'s str) -> Self {
        Parser {
            source,
            runs: Vec::new(),
            cur: Log::new(source),
            warnings: Vec::new(),
            unknown: Vec::new(),
            unknown_count: 0,
            last_row_error: None,
            tagged: Vec::new(),
            benign_warns: 0,
            first_benign: None,
        }
    }

    fn line(&mut self, n: usize, raw: &str, prefixes: &Prefixes) {
        let (tag, line) = prefixes.strip(raw);
        // Markdown code spans (`…`) around a pasted line.
        let t = line.trim().trim_matches('`').trim();
        if t.is_empty() {
            return;
        }
        if let Some(tag) = tag {
            self.count_tag(tag);
        }
        let known = if let Some(d) = debug::parse_line(line) {
            self.debug(d);
            true
        } else if let Some(f) = failure::parse(t) {
            if let failure::Line::Failure(f) = f {
                self.failure(n, f, tag);
            }
            true
        } else if let Some(c) = t.strip_prefix('#') {
            self.header_line(c.trim(), n)
        } else if bare_header(t) {
            // Markdown ate the `#` (or nccl-tests 1.x never printed it).
            self.header_line(t, n)
        } else if t.starts_with(|c: char| c.is_ascii_digit()) {
            self.row(t, n)
        } else {
            // Command lines, echoes and prose: the only lines that name a program.
            self.other(t, n) || self.named(t, n)
        };
        if !known {
            self.unknown_count += 1;
            if self.unknown.len() < QUOTED_UNKNOWN {
                self.unknown.push((n, shorten(t)));
            }
        }
    }

    fn count_tag(&mut self, tag: Tag<'_>) {
        match self.tagged.iter_mut().find(|(l, ..)| *l == tag.launcher) {
            Some((_, k, _)) => *k += 1,
            None => self.tagged.push((tag.launcher, 1, tag.text.to_string())),
        }
    }

    /// Starts a new run at line `n`, keeping the current one if it holds anything.
    fn new_run(&mut self, n: usize) {
        let done = std::mem::replace(&mut self.cur, Log::starting_at(self.source, n));
        if done.has_run() || !done.errors.is_empty() || done.debug_lines > 0 {
            self.runs.push(done);
        }
    }

    /// A line that names a program (a command line, an echo, prose). Returns whether it did.
    fn named(&mut self, t: &str, n: usize) -> bool {
        let Some(p) = program::named(t) else {
            return false;
        };
        if self.cur.finished() {
            self.new_run(n);
        }
        match &self.cur.named {
            None => self.cur.named = Some((p.to_string(), n)),
            Some((q, _)) if q != p && self.cur.named_conflict.is_none() => {
                self.cur.named_conflict = Some((p.to_string(), n));
            }
            Some(_) => {}
        }
        true
    }

    fn debug(&mut self, d: DebugLine) {
        if let DebugLine::Warn(m) = &d
            && BENIGN_WARNS.iter().any(|b| m.contains(b))
        {
            self.benign_warns += 1;
            self.first_benign.get_or_insert_with(|| m.clone());
            self.cur.debug_lines += 1;
            return;
        }
        apply_debug(&mut self.cur, d);
    }

    fn failure(&mut self, n: usize, f: Failure<'_>, tag: Option<Tag<'_>>) {
        let by = tag
            .map(|t| format!(" [{}]", t.describe()))
            .unwrap_or_default();
        let cut = f
            .cut_row
            .and_then(|r| r.split_whitespace().next())
            .map(|size| format!(" (it cut short the table row of {size} B)"))
            .unwrap_or_default();
        self.cur.fatal = true;
        self.push_error(f.kind, format!("line {n}{by}: {}{cut}", f.text));
    }

    fn push_error(&mut self, kind: ErrorKind, message: String) {
        if self.cur.errors.len() < MAX_ERRORS {
            self.cur.errors.push(error(kind, message));
        }
    }

    fn row(&mut self, t: &str, n: usize) -> bool {
        match row::parse(t, n, self.cur.cputime, self.cur.columns) {
            Ok(row) => {
                if self.cur.complete {
                    // Rows after a footer belong to a run whose header was not captured.
                    self.new_run(n);
                }
                self.cur.rows.push(row);
                self.last_row_error = None;
                true
            }
            Err(RowError::Impossible(e)) => {
                self.cur
                    .impossible
                    .get_or_insert((n, format!("impossible: {e}")));
                true
            }
            Err(RowError::NotNumbers(e)) => {
                self.cur.unreadable_rows += 1;
                self.cur.first_unreadable.get_or_insert((n, e.clone()));
                self.last_row_error = Some((n, e));
                false
            }
            Err(RowError::Shape(e)) => {
                self.last_row_error = Some((n, e));
                false
            }
        }
    }

    /// A line neither `#`, row, debug nor failure: the few plain lines nccl-tests prints.
    fn other(&mut self, t: &str, n: usize) -> bool {
        if let Some(v) = t.strip_prefix("NCCL version ") {
            // Printed bare (without NCCL_DEBUG) by nccl-tests since 2.8.
            if let Some(DebugLine::Version { nccl, cuda }) =
                debug::parse_line(&format!("NCCL INFO NCCL version {v}"))
            {
                self.cur.nccl_version = Some(nccl);
                self.cur.cuda_version = cuda.or(self.cur.cuda_version.take());
            }
            return true;
        }
        if let Some(r) = super::flags::register_warning(t) {
            // Printed while parsing arguments, before the run's version line.
            if self.cur.finished() {
                self.new_run(n);
            }
            self.cur.flags.register = Some(r);
            return true;
        }
        t.starts_with("rccl-tests: Version") || t == "..."
    }

    /// A `#` line, without the `#`. Returns whether it was recognised.
    fn header_line(&mut self, c: &str, n: usize) -> bool {
        if c.is_empty() {
            return true;
        }
        if let Some(rest) = c.strip_prefix("nccl-tests version") {
            self.version(rest, n);
            return true;
        }
        if let Some(p) = c.strip_prefix("Collective test starting:") {
            if self.cur.program.is_some() || self.cur.finished() {
                self.new_run(n);
            }
            let p = p.trim();
            self.cur.program = Some(p.to_string());
            self.cur.collective = collective_of_program(p);
            return true;
        }
        if let Some(p) = c.strip_prefix("Collective test concluded:") {
            if let Some(p) = program::named(p) {
                self.cur.named.get_or_insert_with(|| (p.to_string(), n));
            }
            self.cur.complete = true;
            return true;
        }
        if is_header(c) {
            self.sweep_header(c, n);
            return true;
        }
        if let Some(rest) = c.strip_prefix("Rank") {
            self.device(rest, n);
            return true;
        }
        if let Some(rest) = c.strip_prefix("Reducing maxBytes to") {
            self.cur.clamped_max = rest.split_whitespace().next().and_then(|v| v.parse().ok());
            return true;
        }
        if c.starts_with("size") || c.starts_with("bytes") {
            self.columns(c);
            return true;
        }
        if let Some(b) = super::flags::blocking_line(c) {
            self.cur.flags.blocking = Some(b);
            return true;
        }
        if let Some(rest) = c.strip_prefix("GPU memory usage") {
            self.cur.flags.memory = super::flags::memory_line(rest);
            return true;
        }
        self.footer_or_known(c)
    }

    fn version(&mut self, rest: &str, n: usize) {
        // A version line opens a run in 2.17+: one after a finished run starts the next.
        if self.cur.finished() {
            self.new_run(n);
        }
        if let Some(code) = rest
            .split_whitespace()
            .find_map(|t| t.strip_prefix("nccl-library="))
            .and_then(|v| v.parse().ok())
        {
            self.cur.nccl_version = self
                .cur
                .nccl_version
                .take()
                .or(nccl_version_from_code(code));
        }
    }

    fn sweep_header(&mut self, c: &str, n: usize) {
        if self.cur.header.is_some() {
            if !self.cur.finished() {
                self.cur.repeated_headers += 1;
                return;
            }
            self.new_run(n);
        } else if self.cur.finished() {
            self.new_run(n);
        }
        match parse_header(c) {
            Some(h) => self.cur.header = Some(h),
            None => self.warnings.push(Warning {
                source: self.source.to_string(),
                line: Some(n),
                message: "cannot read the `# nThread … minBytes … maxBytes …` header; requested sizes fall back to printed sizes".into(),
            }),
        }
    }

    fn device(&mut self, rest: &str, n: usize) {
        let Some(d) = parse_device(rest) else { return };
        // A million duplicate lines get ten warnings, not a million.
        let rank = d.rank;
        if !self.cur.add_device(d) {
            self.cur.duplicate_ranks += 1;
            if self.cur.duplicate_ranks <= 10 {
                self.warnings.push(Warning {
                    source: self.source.to_string(),
                    line: Some(n),
                    message: format!(
                        "rank {rank} is listed twice: a non-MPI build or a broken MPI wire-up runs every process alone"
                    ),
                });
            }
        }
    }

    /// The table header: which columns this version prints, and whether time is CPU time.
    fn columns(&mut self, c: &str) {
        let words: Vec<&str> = c.split_whitespace().collect();
        let has = |w: &str| words.contains(&w);
        if has("count") || has("N") {
            self.cur.cputime = has("cputime");
            self.cur.columns = Some(Columns {
                redop: has("redop") || has("op"),
                root: has("root"),
                wrong_count: has("#wrong") || !(has("error") || has("res")),
            });
        }
    }

    fn footer_or_known(&mut self, c: &str) -> bool {
        if let Some(rest) = c.strip_prefix("error:") {
            let m = rest.trim();
            if !m.is_empty() {
                self.push_error(ErrorKind::Nccl, m.to_string());
            }
            return true;
        }
        if let Some(rest) = c.strip_prefix("Out of bounds values") {
            self.cur.complete = true;
            if rest.contains("FAILED") {
                self.cur.check_failed = true;
                self.push_error(
                    ErrorKind::Other,
                    format!("nccl-tests footer: Out of bounds values{rest}"),
                );
            }
            return true;
        }
        if let Some(rest) = c.strip_prefix("Avg bus bandwidth") {
            self.cur.complete = true;
            // `111.447`, or `111.447 OK` / `FAILED` when NCCL_TESTS_MIN_BW was set.
            let avg = rest
                .trim_start_matches([' ', ':'])
                .split_whitespace()
                .next();
            self.cur.avg_busbw = avg.and_then(|a| a.parse().ok());
            return true;
        }
        const KNOWN: &[&str] = &[
            "Using devices",
            "(B)",
            "Writing JSON output",
            "skipping json output",
            "Blocking Enabled",
            "Per-Iteration Report",
            "Parallel Init Enabled",
            "GPU memory usage",
            "NCCL Tests compiled with",
            "Errors with asterisks",
        ];
        KNOWN.iter().any(|k| c.starts_with(k))
            || (c.contains("out-of-place") && c.contains("in-place"))
    }

    fn finish(mut self) -> (Vec<Log>, Vec<Warning>) {
        let source = self.source.to_string();
        let warn = |line, message| Warning {
            source: source.clone(),
            line,
            message,
        };
        let mut warnings = std::mem::take(&mut self.warnings);
        if let Some((n, e)) = self.last_row_error.take() {
            warnings.push(warn(Some(n), format!("incomplete table row skipped: {e}")));
        }
        for (launcher, k, example) in &self.tagged {
            warnings.push(warn(
                None,
                format!("launcher tags stripped from {k} line(s) ({launcher}, e.g. `{example}`)"),
            ));
        }
        if let Some(first) = &self.first_benign {
            warnings.push(warn(
                None,
                format!(
                    "{} NCCL WARN line(s) report no error and are not job errors (first: `{}`)",
                    self.benign_warns,
                    shorten(first)
                ),
            ));
        }
        if self.unknown_count > 0 {
            let quoted: Vec<String> = self
                .unknown
                .iter()
                .map(|(n, t)| format!("line {n}: `{t}`"))
                .collect();
            let more = if self.unknown_count > quoted.len() {
                "; …"
            } else {
                ""
            };
            warnings.push(warn(
                None,
                format!(
                    "skipped {} unrecognised line(s) ({}{more})",
                    self.unknown_count,
                    quoted.join("; ")
                ),
            ));
        }
        let last = std::mem::take(&mut self.cur);
        if last.has_run() || !last.errors.is_empty() || last.debug_lines > 0 || self.runs.is_empty()
        {
            self.runs.push(last);
        }
        (self.runs, warnings)
    }
}

/// Header lines without their `#`: nccl-tests 1.x printed `nThread …` bare, and Markdown turns
/// `# Rank …` into a heading and drops the `#`.
fn bare_header(t: &str) -> bool {
    is_header(t)
        || t == "Using devices"
        || (t.starts_with("Rank ")
            && t[5..]
                .trim_start()
                .starts_with(|c: char| c.is_ascii_digit())
            && t.contains(" device "))
        || ((t.starts_with("size") || t.starts_with("bytes")) && t.contains("time"))
        || (t.contains("out-of-place") && t.contains("in-place"))
}

fn shorten(t: &str) -> String {
    const MAX: usize = 60;
    if t.chars().count() <= MAX {
        t.to_string()
    } else {
        let s: String = t.chars().take(MAX).collect();
        format!("{s}…")
    }
}

pub(super) fn apply_debug(log: &mut Log, d: DebugLine) {
    log.debug_lines += 1;
    match d {
        DebugLine::Transport(origin, mut link) => {
            // In a split run each group has its own communicator numbered from 0: say which.
            if log.is_split()
                && let Some(device) = origin.device
                && let Some(dev) = log.device_at(&origin.host, device, origin.pid)
            {
                link.comm = Some(format!("group {}", dev.group));
            }
            log.add_transport(link);
        }
        DebugLine::Version { nccl, cuda } => {
            log.nccl_version = Some(nccl);
            if cuda.is_some() {
                log.cuda_version = cuda;
            }
        }
        DebugLine::CudaDriver(v) => {
            log.cuda_version.get_or_insert(v);
        }
        // NCCL has a few hundred variables; a log claiming more is not worth recording.
        DebugLine::EnvSet(k, v) if log.env.len() < MAX_ENV || log.env.contains_key(&k) => {
            let v = crate::secrets::value(&k, &v).to_string();
            log.env.insert(k, v);
        }
        DebugLine::Warn(m) => {
            const MAX_WARNS: usize = 20;
            if log.errors.len() < MAX_WARNS {
                log.errors
                    .push(error(ErrorKind::Nccl, format!("NCCL WARN {m}")));
            }
        }
        DebugLine::EnvSet(..) | DebugLine::Other => {}
    }
}

fn error(kind: ErrorKind, message: String) -> JobError {
    JobError {
        kind,
        message,
        repeat: None,
        requested: None,
        placement: None,
        ras: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> (Log, Vec<Warning>) {
        let (mut runs, w) = parse("t.txt", text);
        assert_eq!(runs.len(), 1, "{runs:?}");
        (runs.remove(0), w)
    }

    #[test]
    fn split_runs_name_the_communicator_of_each_link() {
        let text = "# Collective test starting: all_reduce_perf\n\
            #  Rank  0 Group  0 Pid   10 on n1 device  0 [0000:01:00] GPU\n\
            #  Rank  1 Group  0 Pid   11 on n1 device  1 [0000:02:00] GPU\n\
            #  Rank  2 Group  1 Pid   12 on n1 device  2 [0000:03:00] GPU\n\
            #  Rank  3 Group  1 Pid   13 on n1 device  3 [0000:04:00] GPU\n\
            n1:12:99 [2] NCCL INFO Channel 00/0 : 0[2] -> 1[3] via P2P/IPC\n\
            n1:10:98 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n";
        let (log, w) = one(text);
        assert!(w.is_empty(), "{w:?}");
        let comms: Vec<Option<&str>> = log.transports.iter().map(|t| t.comm.as_deref()).collect();
        assert_eq!(comms, vec![Some("group 1"), Some("group 0")]);
    }

    #[test]
    fn an_srun_labelled_log_reads_like_the_plain_one() {
        let plain = include_str!("../../tests/data/nccl-tests/h200x2/all_reduce.txt");
        let labelled: String = plain.lines().map(|l| format!("0: {l}\n")).collect();
        let (a, wa) = one(plain);
        let (b, wb) = one(&labelled);
        assert_eq!(wa.len() + 1, wb.len(), "{wb:?}");
        assert!(wb.iter().any(|w| w.message.contains("srun -l")), "{wb:?}");
        assert!(!a.rows.is_empty());
        assert_eq!(format!("{:?}", a.rows), format!("{:?}", b.rows));
        assert_eq!(a.devices.len(), b.devices.len());
    }

    #[test]
    fn unknown_lines_are_counted() {
        let (log, w) = one("hello\n# Collective test starting: all_reduce_perf\nbanana split\n");
        assert_eq!(log.program.as_deref(), Some("all_reduce_perf"));
        assert_eq!(w.len(), 1);
        assert!(
            w[0].message.contains("skipped 2 unrecognised"),
            "{}",
            w[0].message
        );
    }

    #[test]
    fn runs_split_at_start_lines_headers_and_commands() {
        let run = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1 agg iters: 1 validation: 1 graph: 0\n\
            8 2 float sum -1 1.00 0.01 0.00 0 1.00 0.01 0.00 0\n# Out of bounds values : 0 OK\n";
        let text =
            format!("./build/all_reduce_perf -b 8\n{run}$ ./build/broadcast_perf\n{run}{run}");
        let (runs, _) = parse("m.txt", &text);
        let named: Vec<Option<&str>> = runs
            .iter()
            .map(|r| r.named.as_ref().map(|n| n.0.as_str()))
            .collect();
        assert_eq!(
            named,
            vec![Some("all_reduce_perf"), Some("broadcast_perf"), None]
        );
        assert_eq!(
            runs.iter().map(|r| r.first_line).collect::<Vec<_>>(),
            vec![1, 5, 9]
        );
        // A header printed twice before any row: processes of a non-MPI build, one run.
        let h =
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1\n";
        let (log, _) = one(&format!("{h}{h}"));
        assert_eq!(log.repeated_headers, 1);
    }

    #[test]
    fn failures_are_errors_with_where() {
        let text = "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1\n\
            [1,0]<stdout>:        8             2     float     sum      -1 node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'\n\
            [1,0]<stdout>: .. node0 pid 62767: Test failure common.cu:519\n";
        let (log, _) = one(text);
        assert!(log.fatal);
        assert_eq!(log.errors.len(), 1, "{:?}", log.errors);
        let m = &log.errors[0].message;
        assert!(
            m.starts_with("line 2 [rank 0 (mpirun --tag-output)]: node0: Test CUDA failure"),
            "{m}"
        );
        assert!(m.contains("row of 8 B"), "{m}");
        let (log, w) = one(
            "x:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1\n",
        );
        assert!(log.errors.is_empty(), "{:?}", log.errors);
        assert!(
            w.iter().any(|w| w.message.contains("report no error")),
            "{w:?}"
        );
    }
}
