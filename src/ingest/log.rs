//! What one nccl-tests log states, whichever format it came in: the common ground of the text and
//! JSON readers, before it becomes results.

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;

use super::sweep::Sweep;
use crate::collective::{Collective, Dtype, RedOp};
use crate::results::{Cell, JobError, TransportLink};

/// One parsed log file.
#[derive(Debug, Clone, Default)]
pub struct Log {
    pub source: String,
    /// Program name as printed (`all_reduce_perf`, possibly with a build suffix) on the
    /// `# Collective test starting:` line (or JSON `args`).
    pub program: Option<String>,
    /// A program some other line of the run names (a command line, an echo, prose), with its
    /// line: what old nccl-tests, which printed no start line, leaves to go by.
    pub named: Option<(String, usize)>,
    /// A second, different program named in the same run: then neither says what ran.
    pub named_conflict: Option<(String, usize)>,
    /// The line the run starts at (1 for the first run of a file).
    pub first_line: usize,
    pub collective: Option<Collective>,
    pub header: Option<Header>,
    /// Largest size after nccl-tests' memory clamp (`# Reducing maxBytes to …`).
    pub clamped_max: Option<u64>,
    pub devices: Vec<Device>,
    pub rows: Vec<LogRow>,
    /// The footer (`# Out of bounds values`, `# Avg bus bandwidth`, `# Collective test
    /// concluded`, or JSON `end_time`) was seen.
    pub complete: bool,
    /// nccl-tests' own `# Avg bus bandwidth` (the mean busbw over every cell of the run).
    pub avg_busbw: Option<f64>,
    /// The table header line's columns, which old versions vary.
    pub columns: Option<Columns>,
    /// A failure line (`Test … failure`, a process running alone) ended the run.
    pub fatal: bool,
    /// The footer says the data check failed (`Out of bounds values : N FAILED`).
    pub check_failed: bool,
    /// The header was printed again before any row: every process of a non-MPI build prints
    /// its own.
    pub repeated_headers: usize,
    /// Lines that start like a table row but hold no numbers (templates, `XXXXX`): how many, and
    /// the first one with why.
    pub unreadable_rows: usize,
    pub first_unreadable: Option<(usize, String)>,
    /// The time column is CPU time (`-C 1`), not the wall time bandwidths derive from.
    pub cputime: bool,
    /// The engine flags the log reveals (`-z`, `-M`, a demoted `-R`; all of them in JSON).
    pub flags: super::flags::Flags,
    pub errors: Vec<JobError>,
    /// Variables the log states: JSON `env`, or NCCL's `… set by environment to …` lines.
    pub env: IndexMap<String, String>,
    pub nccl_version: Option<String>,
    pub cuda_version: Option<String>,
    pub transports: Vec<TransportLink>,
    /// NCCL_DEBUG lines seen (any kind), to tell a debug capture from an unrelated file.
    pub debug_lines: usize,
    /// The first row holding a number no run can print: its line and why.
    pub impossible: Option<(usize, String)>,
    /// `# Rank` lines that repeat a rank already listed.
    pub duplicate_ranks: usize,
    /// Lookups over `devices` and `transports`, so that a log of millions of lines ingests in
    /// time linear in its lines.
    index: Index,
}

/// What makes two transport lines the same link: NCCL prints each from both ends.
type LinkKey = (u32, u64, u64, String, Option<String>);

#[derive(Debug, Clone, Default)]
struct Index {
    links: HashSet<LinkKey>,
    ranks: HashSet<u64>,
    /// Positions in `devices` of each (host, CUDA device), in order.
    by_gpu: HashMap<(String, u32), Vec<usize>>,
    /// Some device has a split color other than 0.
    split: bool,
}

impl Log {
    pub fn new(source: &str) -> Self {
        Log {
            source: source.to_string(),
            first_line: 1,
            ..Log::default()
        }
    }

    /// A new run of `source` starting at `line`.
    pub fn starting_at(source: &str, line: usize) -> Self {
        Log {
            first_line: line,
            ..Log::new(source)
        }
    }

    /// Whether the file carries an nccl-tests run (header, table or failure), not only
    /// NCCL_DEBUG lines.
    pub fn has_run(&self) -> bool {
        self.program.is_some() || self.header.is_some() || !self.rows.is_empty() || self.fatal
    }

    /// Whether a line naming a program, or a new header, starts another run: this one printed
    /// its table, its footer or its failure.
    pub fn finished(&self) -> bool {
        !self.rows.is_empty() || self.complete || self.fatal
    }

    /// The sweep after the memory clamp, which is what actually ran.
    pub fn sweep(&self) -> Option<Sweep> {
        let mut s = self.header.as_ref()?.sweep;
        if let Some(m) = self.clamped_max {
            s.max = m;
            s.min = s.min.min(m);
        }
        Some(s)
    }

    /// Adds a transport link unless the same link is already known (NCCL prints each connection
    /// once from the sender and once from the receiver).
    pub fn add_transport(&mut self, link: TransportLink) {
        let key = (
            link.channel,
            link.from_rank,
            link.to_rank,
            link.detail.clone(),
            link.comm.clone(),
        );
        if self.index.links.insert(key) {
            self.transports.push(link);
        }
    }

    /// Adds a device unless its rank is already listed; false when it was.
    pub fn add_device(&mut self, d: Device) -> bool {
        if !self.index.ranks.insert(d.rank) {
            return false;
        }
        self.index.split |= d.group != 0;
        self.index
            .by_gpu
            .entry((d.host.clone(), d.device))
            .or_default()
            .push(self.devices.len());
        self.devices.push(d);
        true
    }

    /// The first listed device on `host` with CUDA device `device` whose pid fits `pid` (either
    /// unknown matches).
    pub fn device_at(&self, host: &str, device: u32, pid: Option<u32>) -> Option<&Device> {
        self.index
            .by_gpu
            .get(&(host.to_string(), device))?
            .iter()
            .map(|&i| &self.devices[i])
            .find(|d| pid.is_none() || d.pid.is_none() || d.pid == pid)
    }

    /// Whether the run was split: some device has a group other than 0.
    pub fn is_split(&self) -> bool {
        self.index.split
    }
}

/// Which columns the table header names: versions before 2.11 print no `root` (nor, before
/// 2.9, `redop`) and an `error` column holding the largest error instead of `#wrong`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns {
    pub redop: bool,
    pub root: bool,
    /// The column after busbw counts wrong elements (`#wrong`), rather than being an error size.
    pub wrong_count: bool,
}

/// The `# nThread …` line (or the JSON `config` object).
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub nthreads: u32,
    pub ngpus: u32,
    pub sweep: Sweep,
    pub warmup: u32,
    pub iters: u32,
    pub agg_iters: u32,
    /// `-c`: check repetitions; 0 = unchecked.
    pub validation: u32,
    pub graph: u32,
}

/// One `# Rank` line: a GPU of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub rank: u64,
    /// Split color (`Group`); 0 without a split.
    pub group: u64,
    pub pid: Option<u32>,
    pub host: String,
    pub device: u32,
    pub pci: Option<String>,
    pub name: Option<String>,
}

/// One table row as printed.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRow {
    /// 1-based line (text) or index in `results` (JSON), for messages.
    pub line: usize,
    pub size: u64,
    pub count: u64,
    pub dtype: Dtype,
    /// `None` when the row prints `none`.
    pub op: Option<RedOp>,
    pub root: i64,
    pub out_of_place: Option<Cell>,
    pub in_place: Option<Cell>,
    /// How finely each placement's numbers were printed, for the consistency checks.
    pub printed: [Printed; 2],
}

/// Half the unit of the last digit printed of a cell's time, algbw and busbw: how far the value
/// it stands for may be from it. nccl-tests prints two decimals while a value fits its column,
/// then fewer, then `%.0e` (`2e+06`: anything from 1.5e6 to 2.5e6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Printed {
    pub time: f64,
    pub algbw: f64,
    pub busbw: f64,
}

impl Default for Printed {
    /// Two decimals: what every version prints a value that fits, and finer than JSON's.
    fn default() -> Self {
        Printed {
            time: 0.005,
            algbw: 0.005,
            busbw: 0.005,
        }
    }
}

impl Printed {
    /// Half a unit of the last digit of the number `text` prints (`0.17` → 0.005, `2e+06` →
    /// 5e5, `1.2e+07` → 5e5, `13837` → 0.5).
    pub fn half_unit(text: &str) -> f64 {
        let (mantissa, exp) = match text.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
            None => (text, 0),
        };
        let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i32);
        0.5 * 10f64.powi(exp - decimals)
    }
}

/// Something ingest tolerated and the user should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub source: String,
    pub line: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.source, l, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

/// NCCL's version code (`22803`) as `2.28.3`; codes before 2.9 used two digits less.
pub fn nccl_version_from_code(code: u64) -> Option<String> {
    if code == 0 {
        return None;
    }
    if code >= 20900 {
        Some(format!(
            "{}.{}.{}",
            code / 10000,
            (code % 10000) / 100,
            code % 100
        ))
    } else {
        Some(format!(
            "{}.{}.{}",
            code / 1000,
            (code % 1000) / 100,
            code % 100
        ))
    }
}

/// The collective a program name measures: `all_reduce_perf`, `all_reduce_perf_mpi`, a path.
pub fn collective_of_program(program: &str) -> Option<Collective> {
    let base = program.rsplit('/').next().unwrap_or(program);
    let name = base.split_once("_perf").map_or(base, |(n, _)| n);
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_codes() {
        assert_eq!(nccl_version_from_code(22803).as_deref(), Some("2.28.3"));
        assert_eq!(nccl_version_from_code(21903).as_deref(), Some("2.19.3"));
        assert_eq!(nccl_version_from_code(2708).as_deref(), Some("2.7.8"));
        assert_eq!(nccl_version_from_code(0), None);
    }

    #[test]
    fn programs() {
        assert_eq!(
            collective_of_program("./build/all_reduce_perf"),
            Some(Collective::AllReduce)
        );
        assert_eq!(
            collective_of_program("alltoall_perf_mpi"),
            Some(Collective::AllToAll)
        );
        assert_eq!(
            collective_of_program("hypercube_perf"),
            Some(Collective::HyperCube)
        );
        assert_eq!(
            collective_of_program("./build/alltoallv_perf"),
            Some(Collective::AllToAllv)
        );
        assert_eq!(collective_of_program("foo_perf"), None);
    }
}
