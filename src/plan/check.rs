//! Semantic checks: the raw plan becomes a typed [`Plan`], and every problem is collected with
//! its location rather than stopping at the first.

use std::collections::HashMap;
use std::str::FromStr;

use indexmap::IndexMap;

use super::diag::Diagnostic;
use super::loc::{Loc, Node, Pos, Scalar};
use super::model::*;
use super::raw::{RawCriterion, RawLaunch, RawPlan, RawSettings, RawTest};
use super::structure::suggest;
use crate::collective::{Collective, Dtype, RedOp};
use crate::split::Split;
use crate::units::{
    Quantity, SizeSelector, parse_duration, parse_selector, parse_size, parse_threshold,
};

/// Most requested sizes one test may sweep.
pub const MAX_SIZES_PER_TEST: u64 = 10_000;
/// Most jobs one plan may expand to.
pub const MAX_JOBS: u64 = 2_000_000;
/// Largest size a sweep may request: far above any GPU's memory, far below overflow.
pub const MAX_SIZE: u64 = 1 << 44;
/// Largest `repeat` count: it bounds how long one job runs and how many rows its results keep;
/// a soak longer than this is written as a duration.
pub const MAX_REPEAT: u32 = 1_000_000;
/// Most plan ranks a layout may have (nodes × ranks per node × GPUs per rank).
pub const MAX_RANKS: u64 = 1 << 20;

type Diags = Vec<Diagnostic>;

/// Checks `raw`, parsed from `source` (the plan text, for values kept exactly as written).
pub fn check(raw: RawPlan, source: &str) -> Result<(Plan, Diags), Diags> {
    let mut c = Checker {
        errors: Vec::new(),
        warnings: Vec::new(),
        source,
    };
    let plan = c.plan(raw);
    if c.errors.is_empty() {
        Ok((plan, c.warnings))
    } else {
        c.errors.extend(c.warnings);
        Err(c.errors)
    }
}

struct Checker<'s> {
    errors: Diags,
    warnings: Diags,
    source: &'s str,
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn valid_env_key(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Checker<'_> {
    fn err(&mut self, d: Diagnostic) {
        self.errors.push(d);
    }

    fn warn(&mut self, d: Diagnostic) {
        self.warnings.push(d);
    }

    fn plan(&mut self, raw: RawPlan) -> Plan {
        let version = match raw.version.value {
            Scalar::Int(1) => 1,
            ref v => {
                self.err(
                    Diagnostic::error(
                        format!("unsupported plan version `{v}`; this baton reads version 1"),
                        Some(raw.version.pos),
                    )
                    .label("expected 1"),
                );
                1
            }
        };
        if !valid_name(&raw.name.value) {
            self.err(
                Diagnostic::error(
                    format!("plan name `{}` has characters outside [A-Za-z0-9._-]", raw.name.value),
                    Some(raw.name.pos),
                )
                .help("names become file names and JUnit suite names; use letters, digits, `.`, `_`, `-`"),
            );
        }
        let backend = match raw.backend.as_ref() {
            None => Backend::Nccl,
            Some(b) => match b.value.as_str() {
                "nccl" => Backend::Nccl,
                "mpi" => Backend::Mpi,
                other => {
                    self.unknown_name("backend", other, b.pos, &["nccl", "mpi"]);
                    Backend::Nccl
                }
            },
        };
        let launch = self.launch(raw.launch, backend);
        let env = match &raw.env {
            Some(e) => self.env_map(e, "env"),
            None => IndexMap::new(),
        };
        let raw_defaults = raw.defaults.unwrap_or_default();
        let defaults = self.settings(&Settings::default(), &SettingsRef::from(&raw_defaults));
        self.graphs_need_nccl(raw_defaults.cuda_graph.as_ref(), backend);
        if raw.tests.value.is_empty() {
            self.err(
                Diagnostic::error(
                    "`tests` is empty; a plan needs at least one test",
                    Some(raw.tests.pos),
                )
                .label("no tests"),
            );
        }
        let has_baseline = raw.baseline.is_some();
        let mut names: HashMap<String, Pos> = HashMap::new();
        let mut tests = Vec::new();
        let mut total_jobs: u64 = 0;
        for t in raw.tests.value {
            if let Some(first) = names.get(&t.value.name.value) {
                self.err(
                    Diagnostic::error(
                        format!("duplicate test name `{}`", t.value.name.value),
                        Some(t.value.name.pos),
                    )
                    .label(format!("first used on line {}", first.line)),
                );
            } else {
                names.insert(t.value.name.value.clone(), t.value.name.pos);
            }
            let test = self.test(t, &defaults, &env, &launch, backend, has_baseline);
            if let Some(test) = test {
                total_jobs = total_jobs.saturating_add(test.axes.job_count());
                tests.push(test);
            }
        }
        if total_jobs > MAX_JOBS {
            self.err(Diagnostic::error(
                format!("plan expands to {total_jobs} jobs; at most {MAX_JOBS} are allowed"),
                Some(raw.name.pos),
            ));
        }
        let baseline = raw.baseline.map(|b| {
            self.no_control(&b, "baseline");
            b.value
        });
        Plan {
            version,
            name: raw.name.value,
            description: raw.description,
            backend,
            launch,
            env,
            tests,
            baseline,
        }
    }

    fn unknown_name(&mut self, what: &str, got: &str, pos: Pos, valid: &[&str]) {
        let msg = match suggest(got, valid) {
            Some(s) => format!("unknown {what} `{got}` — did you mean `{s}`?"),
            None => format!("unknown {what} `{got}`"),
        };
        self.err(
            Diagnostic::error(msg, Some(pos))
                .label(format!("not a {what}"))
                .help(format!("valid: {}", valid.join(", "))),
        );
    }

    fn count(&mut self, v: &Option<Loc<i64>>, key: &str, min: i64) -> Option<u32> {
        let v = v.as_ref()?;
        let min_word = if min == 0 {
            "zero or more"
        } else {
            "at least 1"
        };
        self.in_range(
            v.value.into(),
            v.pos,
            key,
            min_word,
            min.into(),
            u32::MAX.into(),
        )
        .map(|n| n as u32)
    }

    /// `value` if it lies in `min..=max`; otherwise an error naming the bound it crosses.
    fn in_range(
        &mut self,
        value: i128,
        pos: Pos,
        key: &str,
        min_word: &str,
        min: i128,
        max: i128,
    ) -> Option<i128> {
        let what = if value < min {
            min_word.to_string()
        } else if value > max {
            format!("at most {max}")
        } else {
            return Some(value);
        };
        self.err(
            Diagnostic::error(format!("`{key}` is {value}; it must be {what}"), Some(pos))
                .label(format!("must be {what}")),
        );
        None
    }

    fn no_control(&mut self, v: &Loc<String>, key: &str) -> bool {
        if v.value.chars().any(|c| c.is_control()) {
            self.err(
                Diagnostic::error(
                    format!("`{key}` contains a newline or control character"),
                    Some(v.pos),
                )
                .help(
                    "this value is written into job scripts and #SBATCH lines; keep it on one line",
                ),
            );
            return false;
        }
        true
    }

    fn opt_text(&mut self, v: &Option<Loc<String>>, key: &str) -> Option<String> {
        let v = v.as_ref()?;
        self.no_control(v, key).then(|| v.value.clone())
    }

    fn launch(&mut self, raw: Option<RawLaunch>, backend: Backend) -> Launch {
        let Some(raw) = raw else {
            return Launch {
                nodes: 1,
                ranks_per_node: None,
                gpus_per_rank: 1,
                slurm: Slurm {
                    mpi: "pmix".into(),
                    ..Slurm::default()
                },
                mpirun: Mpirun::default(),
            };
        };
        let nodes = self.count(&raw.nodes, "launch.nodes", 1).unwrap_or(1);
        let ranks_per_node = self.count(&raw.ranks_per_node, "launch.ranks_per_node", 1);
        let gpus_per_rank = self
            .count(&raw.gpus_per_rank, "launch.gpus_per_rank", 1)
            .unwrap_or(1);
        let total = (nodes as u64)
            .saturating_mul(ranks_per_node.unwrap_or(1) as u64)
            .saturating_mul(gpus_per_rank as u64);
        if total > MAX_RANKS {
            self.err(
                Diagnostic::error(
                    format!("launch gives {total} ranks; at most {MAX_RANKS} are supported"),
                    raw.nodes
                        .as_ref()
                        .or(raw.ranks_per_node.as_ref())
                        .map(|n| n.pos),
                )
                .help("nodes × ranks_per_node × gpus_per_rank"),
            );
            return Launch {
                nodes: 1,
                ranks_per_node: None,
                gpus_per_rank: 1,
                slurm: Slurm::default(),
                mpirun: Mpirun::default(),
            };
        }
        if backend == Backend::Mpi && gpus_per_rank > 1 {
            self.err(Diagnostic::error(
                "`launch.gpus_per_rank` applies to the nccl backend; the mpi backend runs in host memory",
                raw.gpus_per_rank.as_ref().map(|g| g.pos),
            ));
        }
        let mut slurm = Slurm {
            mpi: "pmix".into(),
            ..Slurm::default()
        };
        if let Some(s) = raw.slurm {
            slurm.partition = self.opt_text(&s.partition, "launch.slurm.partition");
            slurm.account = self.opt_text(&s.account, "launch.slurm.account");
            if let Some(t) = &s.time {
                let ok = !t.value.is_empty()
                    && t.value
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == ':' || c == '-');
                if ok {
                    slurm.time = Some(t.value.clone());
                } else {
                    self.err(
                        Diagnostic::error(
                            format!("`launch.slurm.time` `{}` is not a Slurm time", t.value),
                            Some(t.pos),
                        )
                        .help("use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"),
                    );
                }
            }
            slurm.exclusive = s.exclusive.map(|e| e.value).unwrap_or(false);
            if let Some(m) = &s.mpi {
                if !m.value.is_empty()
                    && m.value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    slurm.mpi = m.value.clone();
                } else {
                    self.err(
                        Diagnostic::error(
                            format!("`launch.slurm.mpi` `{}` is not an MPI plugin name", m.value),
                            Some(m.pos),
                        )
                        .help("e.g. pmix, pmix_v4, pmi2, none"),
                    );
                }
            }
            for x in s.extra.iter().flatten() {
                if self.no_control(x, "launch.slurm.extra") {
                    if x.value.starts_with('-') {
                        slurm.extra.push(x.value.clone());
                    } else {
                        self.err(
                            Diagnostic::error(
                                format!("`launch.slurm.extra` item `{}` is not an option", x.value),
                                Some(x.pos),
                            )
                            .help("each item is one sbatch option, e.g. --qos=high"),
                        );
                    }
                }
            }
            slurm.container_image =
                self.opt_text(&s.container_image, "launch.slurm.container_image");
            slurm.container_mounts =
                self.opt_text(&s.container_mounts, "launch.slurm.container_mounts");
        }
        let mut mpirun = Mpirun::default();
        if let Some(m) = raw.mpirun {
            mpirun.hostfile = self.opt_text(&m.hostfile, "launch.mpirun.hostfile");
            for x in m.extra.iter().flatten() {
                if self.no_control(x, "launch.mpirun.extra") {
                    mpirun.extra.push(x.value.clone());
                }
            }
        }
        Launch {
            nodes,
            ranks_per_node,
            gpus_per_rank,
            slurm,
            mpirun,
        }
    }

    fn env_map(&mut self, node: &Loc<Node>, key: &str) -> IndexMap<String, String> {
        let mut out = IndexMap::new();
        let Node::Map(entries) = &node.value else {
            self.err(Diagnostic::error(
                format!("`{key}` must be a mapping of variable names to values"),
                Some(node.pos),
            ));
            return out;
        };
        for (k, v) in entries {
            let name = k.value.text();
            if !valid_env_key(&name) {
                self.err(
                    Diagnostic::error(
                        format!("`{name}` is not an environment variable name"),
                        Some(k.pos),
                    )
                    .help("names are letters, digits and `_`, not starting with a digit"),
                );
                continue;
            }
            let value = match &v.value {
                Node::Scalar(Scalar::Null) => {
                    self.err(Diagnostic::error(
                        format!("`{name}` has no value; write \"\" for an empty one"),
                        Some(v.pos),
                    ));
                    continue;
                }
                Node::Scalar(Scalar::Str(s)) => s.clone(),
                Node::Scalar(s) => self.as_written(v).map_or_else(|| s.text(), str::to_string),
                other => {
                    self.err(Diagnostic::error(
                        format!(
                            "`{name}` must be a string or number, found {}",
                            other.kind()
                        ),
                        Some(v.pos),
                    ));
                    continue;
                }
            };
            if value.contains('\0') {
                self.err(Diagnostic::error(
                    format!("`{name}` contains a NUL byte"),
                    Some(v.pos),
                ));
                continue;
            }
            if name == "NCCL_TESTS_SPLIT" || name == "NCCL_TESTS_SPLIT_MASK" {
                self.warn(
                    Diagnostic::warning(
                        format!("`{name}` in env does not split baton's jobs"),
                        Some(k.pos),
                    )
                    .help("use the test's `split:` key (or a `split` matrix axis)"),
                );
            }
            out.insert(name, value);
        }
        out
    }

    /// A non-string scalar exactly as the plan writes it. An environment variable is text, and
    /// the text the user wrote is what they mean: `1.10`, `0x10`, `007` and `1e3`, not the
    /// numbers YAML reads from them (1.1, 16, 7, 1000). Through an alias this is the anchored
    /// value's text. `None` when the span is unknown or is not one plain scalar (a tag with a
    /// quoted value, `!!int "5"`); then the value is printed from its YAML type.
    fn as_written(&self, v: &Loc<Node>) -> Option<&str> {
        let start = v.defined.offset?;
        let text = self.source.get(start..start.checked_add(v.defined.len)?)?;
        let plain = !text.is_empty()
            && !text.starts_with(['"', '\''])
            && !text.contains(char::is_whitespace);
        plain.then_some(text)
    }

    fn settings(&mut self, base: &Settings, raw: &SettingsRef<'_>) -> Settings {
        let mut s = base.clone();
        if let Some(d) = raw.dtype
            && let Some(v) = self.dtype(d)
        {
            s.dtype = v;
        }
        if let Some(o) = raw.op
            && let Some(v) = self.op(o)
        {
            s.op = v;
        }
        if let Some(v) = self.count(raw.iters, "iters", 1) {
            s.iters = v;
        }
        if let Some(v) = self.count(raw.warmup, "warmup", 0) {
            s.warmup = v;
        }
        if let Some(v) = self.count(raw.agg_iters, "agg_iters", 1) {
            s.agg_iters = v;
        }
        if let Some(v) = self.count(raw.cuda_graph, "cuda_graph", 0) {
            s.cuda_graph = v;
        }
        if let Some(c) = raw.check {
            s.check = c.value;
        }
        if let Some(a) = raw.average {
            match a.value.as_str() {
                "rank0" => s.average = Average::Rank0,
                "avg" => s.average = Average::Avg,
                "min" => s.average = Average::Min,
                "max" => s.average = Average::Max,
                other => self.unknown_name(
                    "average mode",
                    other,
                    a.pos,
                    &["rank0", "avg", "min", "max"],
                ),
            }
        }
        if let Some(p) = raw.in_place
            && let Some(v) = self.in_place(p)
        {
            s.in_place = v;
        }
        if let Some(t) = raw.timeout {
            match parse_duration(&t.value) {
                Ok(d) => s.timeout = d,
                Err(e) => self.err(
                    Diagnostic::error(format!("`timeout`: {e}"), Some(t.pos))
                        .help(format!("expected {}", e.expected)),
                ),
            }
        }
        s
    }

    /// A `cuda_graph` the runner would ignore is an error rather than a setting that silently
    /// does nothing: the mpi backend has no GPU work to capture. Checked where the key is
    /// written, once.
    fn graphs_need_nccl(&mut self, cuda_graph: Option<&Loc<i64>>, backend: Backend) {
        if let Some(g) = cuda_graph
            && g.value > 0
            && backend == Backend::Mpi
        {
            self.err(
                Diagnostic::error(
                    format!(
                        "`cuda_graph: {}`: CUDA graphs need the nccl backend",
                        g.value
                    ),
                    Some(g.pos),
                )
                .help("the mpi backend runs in host memory; remove `cuda_graph` or set it to 0"),
            );
        }
    }

    fn in_place(&mut self, p: &Loc<String>) -> Option<InPlace> {
        match p.value.as_str() {
            "both" => Some(InPlace::Both),
            "out" => Some(InPlace::Out),
            "in" => Some(InPlace::In),
            other => {
                self.unknown_name("placement", other, p.pos, &["both", "out", "in"]);
                None
            }
        }
    }

    fn dtype(&mut self, d: &Loc<String>) -> Option<Dtype> {
        Dtype::from_str(&d.value).ok().or_else(|| {
            let mut valid = Dtype::names();
            valid.extend(Dtype::aliases());
            self.unknown_name("dtype", &d.value, d.pos, &valid);
            None
        })
    }

    fn op(&mut self, o: &Loc<String>) -> Option<RedOp> {
        RedOp::from_str(&o.value).ok().or_else(|| {
            self.unknown_name("op", &o.value, o.pos, &RedOp::names());
            None
        })
    }

    fn collective(&mut self, c: &Loc<String>) -> Option<Collective> {
        Collective::from_str(&c.value).ok().or_else(|| {
            self.unknown_name("collective", &c.value, c.pos, &Collective::names());
            None
        })
    }

    /// A split expression, or `none` for no split (`Some(None)`); `None` when it is invalid.
    /// `none` is what lets one `matrix.split` axis compare unsplit and split runs.
    fn split(&mut self, s: &Loc<String>) -> Option<Option<SplitSpec>> {
        if s.value.trim().eq_ignore_ascii_case("none") {
            return Some(None);
        }
        match Split::parse(&s.value) {
            Ok(split) => Some(Some(SplitSpec {
                text: s.value.trim().to_string(),
                split,
            })),
            Err(e) => {
                self.err(
                    Diagnostic::error(e.to_string(), Some(s.pos))
                        .label("not a split expression")
                        .help("NCCL_TESTS_SPLIT syntax: \"DIV 8\" (per node), \"MOD 8\" (per rail), \"OR 1\" (pairs), \"AND 0x7\"; or none"),
                );
                None
            }
        }
    }

    fn size_value(&mut self, n: &Loc<Node>, what: &str) -> Option<u64> {
        let r = match &n.value {
            Node::Scalar(Scalar::Int(i)) if *i > MAX_SIZE as i128 => {
                Err(too_large(what, &i.to_string()))
            }
            Node::Scalar(Scalar::Int(i)) if *i > 0 => Ok(*i as u64),
            Node::Scalar(Scalar::Int(i)) => {
                Err(format!("{what} must be a positive size, found {i}"))
            }
            Node::Scalar(Scalar::Str(s)) => match parse_size(s) {
                Ok(0) => Err(format!("{what} must be a positive size, found `{s}`")),
                Ok(v) if v > MAX_SIZE => Err(too_large(what, s)),
                Ok(v) => Ok(v),
                Err(e) => Err(format!("{what}: {e}")),
            },
            other => Err(format!(
                "{what} must be a size such as 8, 1M or 8G, found {}",
                other.kind()
            )),
        };
        match r {
            Ok(v) => Some(v),
            Err(m) => {
                self.err(Diagnostic::error(m, Some(n.pos)).help(
                    "sizes are binary: 1K = 1024 bytes, 8G = 8 GiB, as nccl-tests -b/-e read them",
                ));
                None
            }
        }
    }

    fn sizes(&mut self, n: &Loc<Node>) -> Option<Sizes> {
        match &n.value {
            Node::Seq(items) => {
                if items.is_empty() {
                    self.err(
                        Diagnostic::error("`sizes` is an empty list", Some(n.pos))
                            .label("no sizes"),
                    );
                    return None;
                }
                let mut out: Vec<u64> = Vec::new();
                let mut ok = true;
                for it in items {
                    match self.size_value(it, "size") {
                        Some(v) if out.contains(&v) => {
                            self.err(Diagnostic::error(
                                format!("size {} is listed twice", crate::units::Size(v)),
                                Some(it.pos),
                            ));
                            ok = false;
                        }
                        Some(v) => out.push(v),
                        None => ok = false,
                    }
                }
                if out.len() as u64 > MAX_SIZES_PER_TEST {
                    self.err(Diagnostic::error(
                        format!(
                            "`sizes` lists {} sizes; at most {MAX_SIZES_PER_TEST}",
                            out.len()
                        ),
                        Some(n.pos),
                    ));
                    return None;
                }
                ok.then_some(Sizes::List(out))
            }
            Node::Map(entries) => {
                let get = |k: &str| {
                    entries
                        .iter()
                        .find(|(key, _)| key.value.text() == k)
                        .map(|(_, v)| v)
                };
                let from = get("from").and_then(|v| self.size_value(v, "`sizes.from`"));
                let to = get("to").and_then(|v| self.size_value(v, "`sizes.to`"));
                let factor = get("factor");
                let step = get("step");
                let (from, to) = (from?, to?);
                if from > to {
                    self.err(
                        Diagnostic::error(
                            format!(
                                "`sizes.from` ({}) is larger than `sizes.to` ({})",
                                crate::units::Size(from),
                                crate::units::Size(to)
                            ),
                            get("from").map(|v| v.pos),
                        )
                        .label("from > to"),
                    );
                    return None;
                }
                let sizes = match (factor, step) {
                    (Some(_), Some(s)) => {
                        self.err(Diagnostic::error(
                            "give either `factor` or `step`, not both",
                            Some(s.pos),
                        ));
                        return None;
                    }
                    (Some(f), None) => match &f.value {
                        Node::Scalar(Scalar::Int(i)) if *i >= 2 && *i <= u32::MAX as i128 => {
                            Sizes::Factor {
                                from,
                                to,
                                factor: *i as u64,
                            }
                        }
                        other => {
                            self.err(
                                Diagnostic::error(
                                    format!(
                                        "`sizes.factor` must be a whole number ≥ 2, found {}",
                                        node_text(other)
                                    ),
                                    Some(f.pos),
                                )
                                .label("factor ≤ 1 never grows")
                                .help("use `step:` for additive steps"),
                            );
                            return None;
                        }
                    },
                    (None, Some(s)) => Sizes::Step {
                        from,
                        to,
                        step: self.size_value(s, "`sizes.step`")?,
                    },
                    (None, None) => {
                        if from == to {
                            Sizes::List(vec![from])
                        } else {
                            self.err(
                                Diagnostic::error(
                                    "`sizes` needs `factor` or `step` between `from` and `to`",
                                    Some(n.pos),
                                )
                                .help("e.g. sizes: { from: 8, to: 8G, factor: 2 }"),
                            );
                            return None;
                        }
                    }
                };
                if sizes.len() > MAX_SIZES_PER_TEST {
                    self.err(Diagnostic::error(
                        format!(
                            "`sizes` sweeps {} sizes; at most {MAX_SIZES_PER_TEST}",
                            sizes.len()
                        ),
                        Some(n.pos),
                    ));
                    return None;
                }
                Some(sizes)
            }
            other => {
                self.err(Diagnostic::error(
                    format!(
                        "`sizes` must be a mapping {{from, to, factor|step}} or a list, found {}",
                        other.kind()
                    ),
                    Some(n.pos),
                ));
                None
            }
        }
    }

    fn string_list(&mut self, n: &Loc<Node>, key: &str) -> Vec<Loc<String>> {
        let one = |n: &Loc<Node>| match &n.value {
            Node::Scalar(Scalar::Str(s)) => Ok(Loc::new(s.clone(), n.pos)),
            other => Err(other.kind()),
        };
        let items: Vec<&Loc<Node>> = match &n.value {
            Node::Seq(items) => items.iter().collect(),
            _ => vec![n],
        };
        let mut out = Vec::new();
        for it in items {
            match one(it) {
                Ok(s) => out.push(s),
                Err(kind) => self.err(Diagnostic::error(
                    format!("`{key}` items must be names, found {kind}"),
                    Some(it.pos),
                )),
            }
        }
        out
    }

    fn axis<T: PartialEq + Clone>(
        &mut self,
        name: &str,
        items: &Loc<Vec<Loc<String>>>,
        mut parse: impl FnMut(&mut Self, &Loc<String>) -> Option<T>,
    ) -> Option<Vec<T>> {
        if items.value.is_empty() {
            self.err(
                Diagnostic::error(format!("matrix axis `{name}` is empty"), Some(items.pos))
                    .label("no values"),
            );
            return None;
        }
        let mut out: Vec<T> = Vec::new();
        // As written, beside `out`: a duplicate may be another spelling of the same value
        // (`fp32` and `float`, `div 8` and `DIV 8`), and the message names both.
        let mut written: Vec<&str> = Vec::new();
        let mut ok = true;
        for it in &items.value {
            let text = it.value.trim();
            match parse(self, it) {
                Some(v) => match out.iter().position(|o| *o == v) {
                    Some(i) => {
                        let same = if written[i] == text {
                            String::new()
                        } else {
                            format!(" (same as `{}`)", written[i])
                        };
                        self.err(Diagnostic::error(
                            format!("matrix axis `{name}` lists `{text}` twice{same}"),
                            Some(it.pos),
                        ));
                        ok = false;
                    }
                    None => {
                        out.push(v);
                        written.push(text);
                    }
                },
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn test(
        &mut self,
        t: Loc<RawTest>,
        defaults: &Settings,
        plan_env: &IndexMap<String, String>,
        launch: &Launch,
        backend: Backend,
        has_baseline: bool,
    ) -> Option<Test> {
        // Where the test's mapping starts, for what is wrong with the test as a whole.
        let Loc {
            value: t,
            pos: test_pos,
            ..
        } = t;
        let errors_before = self.errors.len();
        if !valid_name(&t.name.value) {
            self.err(
                Diagnostic::error(
                    format!(
                        "test name `{}` has characters outside [A-Za-z0-9._-]",
                        t.name.value
                    ),
                    Some(t.name.pos),
                )
                .help("test names become job IDs, file names and JUnit names"),
            );
        }
        let settings = self.settings(defaults, &SettingsRef::from(&t));
        self.graphs_need_nccl(t.cuda_graph.as_ref(), backend);
        let matrix = t.matrix.as_ref();
        let mut named: Vec<&'static str> = Vec::new();

        // `collective` and `matrix.collective` are one axis written in two places, so exactly one
        // of them gives it: with both, one would silently replace the other.
        let mut collective: Vec<Collective> = Vec::new();
        match (&t.collective, matrix.and_then(|m| m.collective.as_ref())) {
            (None, None) => self.err(
                Diagnostic::error(
                    "missing `collective` (or a `matrix.collective` axis)",
                    Some(test_pos),
                )
                .label("this test names no collective")
                .help("e.g. `collective: all_reduce`, or `collective: [all_reduce, all_gather]` for a job of each"),
            ),
            (Some(_), Some(m)) => self.err(
                Diagnostic::error(
                    "collectives are given both in `collective` and in `matrix.collective`; keep one",
                    Some(m.pos),
                )
                .label("second list of collectives"),
            ),
            (Some(field), None) => {
                let items = Loc::new(self.string_list(field, "collective"), field.pos);
                if items.value.is_empty() {
                    self.err(Diagnostic::error(
                        "`collective` is an empty list",
                        Some(field.pos),
                    ));
                } else if let Some(v) = self.axis("collective", &items, |c, s| c.collective(s)) {
                    collective = v;
                }
                if collective.len() > 1 {
                    named.push("collective");
                }
            }
            (None, Some(m)) => {
                if let Some(v) = self.axis("collective", m, |c, s| c.collective(s)) {
                    collective = v;
                    named.push("collective");
                }
            }
        }

        let dtype = self.matrix_axis(
            matrix.and_then(|m| m.dtype.as_ref()),
            "dtype",
            t.dtype.as_ref(),
            settings.dtype,
            &mut named,
            |c, s| c.dtype(s),
        );
        let op = self.matrix_axis(
            matrix.and_then(|m| m.op.as_ref()),
            "op",
            t.op.as_ref(),
            settings.op,
            &mut named,
            |c, s| c.op(s),
        );

        if backend == Backend::Mpi {
            let at = |k: Option<&Loc<String>>, m: Option<&Loc<Vec<Loc<String>>>>| {
                k.map(|x| x.pos).or(m.map(|x| x.pos)).unwrap_or(t.name.pos)
            };
            for d in dtype.iter().filter(|d| !d.host_native()) {
                self.err(
                    Diagnostic::error(format!("the mpi backend has no `{d}` type"), Some(at(t.dtype.as_ref(), matrix.and_then(|m| m.dtype.as_ref()))))
                        .help("MPI reduces int8, uint8, int32, uint32, int64, uint64, float and double; half, bfloat16 and fp8 need the nccl backend"),
                );
            }
            if op.contains(&RedOp::Avg) && collective.iter().any(|c| c.reduces()) {
                self.err(
                    Diagnostic::error(
                        "the mpi backend has no `avg` reduction",
                        Some(at(t.op.as_ref(), matrix.and_then(|m| m.op.as_ref()))),
                    )
                    .help("use sum, prod, min or max, or the nccl backend"),
                );
            }
        }

        let mut split: Vec<Option<SplitSpec>> =
            vec![t.split.as_ref().and_then(|s| self.split(s)).flatten()];
        if let Some(ms) = matrix.and_then(|m| m.split.as_ref()) {
            if let Some(ts) = &t.split {
                self.err(Diagnostic::error(
                    "`split` is set on the test and as a matrix axis; keep one",
                    Some(ts.pos),
                ));
            } else if let Some(v) = self.axis("split", ms, |c, s| c.split(s)) {
                split = v;
                named.push("split");
            }
        }

        let mut env = plan_env.clone();
        if let Some(e) = &t.env {
            env.extend(self.env_map(e, "env"));
        }
        let mut env_axis = vec![IndexMap::new()];
        if let Some(me) = matrix.and_then(|m| m.env.as_ref()) {
            if me.value.is_empty() {
                self.err(Diagnostic::error(
                    "matrix axis `env` is empty",
                    Some(me.pos),
                ));
            } else {
                env_axis.clear();
                for item in &me.value {
                    let m = self.env_map(item, "matrix.env");
                    if m.is_empty() {
                        self.err(Diagnostic::error(
                            "matrix `env` entries need at least one variable",
                            Some(item.pos),
                        ));
                    } else if env_axis.contains(&m) {
                        self.err(Diagnostic::error(
                            "matrix axis `env` lists the same variables twice",
                            Some(item.pos),
                        ));
                    } else {
                        env_axis.push(m);
                    }
                }
                named.push("env");
            }
        }

        let sizes = self.sizes(&t.sizes);
        let repeat = match &t.repeat {
            None => Repeat::Times(1),
            Some(r) => match &r.value {
                Node::Scalar(Scalar::Int(i)) => Repeat::Times(
                    self.in_range(*i, r.pos, "repeat", "at least 1", 1, MAX_REPEAT.into())
                        .map_or(1, |n| n as u32),
                ),
                Node::Scalar(Scalar::Str(s)) => match parse_duration(s) {
                    Ok(d) => Repeat::For(d),
                    Err(e) => {
                        self.err(
                            Diagnostic::error(format!("`repeat`: {e}"), Some(r.pos))
                                .help("a count (3) or a duration (1h)"),
                        );
                        Repeat::Times(1)
                    }
                },
                other => {
                    self.err(Diagnostic::error(
                        format!(
                            "`repeat` must be a count or a duration, found {}",
                            other.kind()
                        ),
                        Some(r.pos),
                    ));
                    Repeat::Times(1)
                }
            },
        };

        let root = match &t.root {
            None => 0,
            Some(r) => {
                if !collective.iter().any(|c| c.rooted()) && !collective.is_empty() {
                    self.warn(
                        Diagnostic::warning(
                            "`root` has no effect: none of this test's collectives has a root",
                            Some(r.pos),
                        )
                        .help("root applies to broadcast and reduce"),
                    );
                }
                self.count(&t.root, "root", 0).unwrap_or(0)
            }
        };

        // Layout-dependent checks, when the plan fixes the rank count.
        if let Some(n) = launch.total_ranks() {
            self.layout_checks(&t, n, &split, &collective, root);
        }

        let sizes_list = sizes.as_ref().map(|s| s.values()).unwrap_or_default();
        let expect = match &t.expect {
            None => Vec::new(),
            Some(e) => e
                .value
                .iter()
                .filter_map(|c| {
                    self.criterion(
                        c,
                        &CriterionCtx {
                            sizes: sizes.as_ref().map(|_| sizes_list.as_slice()),
                            settings: &settings,
                            split: &split,
                            repeat,
                            backend,
                            has_baseline,
                        },
                    )
                })
                .collect(),
        };

        if self.errors.len() > errors_before {
            return None;
        }
        Some(Test {
            name: t.name.value,
            sizes: sizes?,
            root,
            env,
            settings,
            axes: Axes {
                collective,
                dtype,
                op,
                split,
                env: env_axis,
                named,
            },
            repeat,
            expect,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn matrix_axis<T: PartialEq + Clone>(
        &mut self,
        axis: Option<&Loc<Vec<Loc<String>>>>,
        name: &'static str,
        on_test: Option<&Loc<String>>,
        default: T,
        named: &mut Vec<&'static str>,
        parse: impl FnMut(&mut Self, &Loc<String>) -> Option<T>,
    ) -> Vec<T> {
        let Some(axis) = axis else {
            return vec![default];
        };
        if let Some(t) = on_test {
            self.err(Diagnostic::error(
                format!("`{name}` is set on the test and as a matrix axis; keep one"),
                Some(t.pos),
            ));
            return vec![default];
        }
        match self.axis(name, axis, parse) {
            Some(v) => {
                named.push(name);
                v
            }
            None => vec![default],
        }
    }

    fn layout_checks(
        &mut self,
        t: &RawTest,
        n: u64,
        splits: &[Option<SplitSpec>],
        colls: &[Collective],
        root: u32,
    ) {
        for s in splits {
            let groups: Vec<Vec<u64>> = match s {
                Some(s) => s.split.groups(n).into_values().collect(),
                None => vec![(0..n).collect()],
            };
            let smallest = groups.iter().map(Vec::len).min().unwrap_or(0) as u64;
            let pos = t.split.as_ref().map(|s| s.pos).unwrap_or(t.name.pos);
            if let Some(s) = s {
                if smallest == 1 && colls.iter().any(|c| c.busbw_factor(1) == 0.0) {
                    self.warn(
                        Diagnostic::warning(
                            format!("split `{}` on {n} ranks leaves groups of 1 rank: their busbw is 0", s.text),
                            Some(pos),
                        )
                        .help("a one-rank all_reduce/all_gather/reduce_scatter/alltoall moves no data between GPUs"),
                    );
                }
                if groups.len() == 1 {
                    self.warn(Diagnostic::warning(
                        format!(
                            "split `{}` on {n} ranks forms a single group: it does not split",
                            s.text
                        ),
                        Some(pos),
                    ));
                }
            }
            if colls.iter().any(|c| c.rooted()) && root as u64 >= smallest {
                let rpos = t.root.as_ref().map(|r| r.pos).unwrap_or(t.name.pos);
                self.err(
                    Diagnostic::error(
                        format!(
                            "root {root} is out of range: the {} has {smallest} rank{}",
                            if s.is_some() {
                                "smallest split group"
                            } else {
                                "communicator"
                            },
                            if smallest == 1 { "" } else { "s" }
                        ),
                        Some(rpos),
                    )
                    .help("root is a rank of the communicator (of the group, when split)"),
                );
            }
        }
    }

    fn criterion(&mut self, c: &RawCriterion, ctx: &CriterionCtx<'_>) -> Option<Criterion> {
        let metrics: Vec<(&str, Pos)> = [
            ("busbw", c.busbw.as_ref().map(|v| v.pos)),
            ("algbw", c.algbw.as_ref().map(|v| v.pos)),
            ("time", c.time.as_ref().map(|v| v.pos)),
            ("wrong", c.wrong.as_ref().map(|v| v.pos)),
            ("transport", c.transport.as_ref().map(|v| v.pos)),
            ("regression", c.regression.as_ref().map(|v| v.pos)),
            ("variance", c.variance.as_ref().map(|v| v.pos)),
            ("group_spread", c.group_spread.as_ref().map(|v| v.pos)),
        ]
        .into_iter()
        .filter_map(|(k, p)| p.map(|p| (k, p)))
        .collect();
        let anchor = metrics
            .first()
            .map(|m| m.1)
            .or(c.at.as_ref().map(|a| a.pos))
            .or(c.severity.as_ref().map(|a| a.pos));
        match metrics.len() {
            0 => {
                self.err(
                    Diagnostic::error("criterion has no metric", anchor)
                        .help("give one of busbw, algbw, time, wrong, transport, regression, variance, group_spread"),
                );
                return None;
            }
            1 => {}
            _ => {
                self.err(
                    Diagnostic::error(
                        format!(
                            "criterion has {} metrics ({}); give one per list item",
                            metrics.len(),
                            metrics.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
                        ),
                        Some(metrics[1].1),
                    )
                    .help("write each metric as its own `- ` item under expect"),
                );
                return None;
            }
        }
        let errors_before = self.errors.len();
        let thr = |me: &mut Self, v: &Loc<String>, q: Quantity, key: &str| match parse_threshold(
            &v.value, q,
        ) {
            Ok(t) => Some(t),
            Err(e) => {
                me.err(
                    Diagnostic::error(format!("`{key}`: {e}"), Some(v.pos))
                        .help(format!("expected {}", e.expected)),
                );
                None
            }
        };
        let pct = |me: &mut Self, v: &Loc<String>, key: &str| {
            let t = thr(me, v, Quantity::Percent, key)?;
            if matches!(t.cmp, crate::units::Cmp::Ge | crate::units::Cmp::Gt) {
                me.err(Diagnostic::error(
                    format!("`{key}` is a largest allowed value: use <= or <"),
                    Some(v.pos),
                ));
                return None;
            }
            Some(t)
        };
        let check = if let Some(v) = &c.busbw {
            thr(self, v, Quantity::Bandwidth, "busbw").map(Check::Busbw)
        } else if let Some(v) = &c.algbw {
            thr(self, v, Quantity::Bandwidth, "algbw").map(Check::Algbw)
        } else if let Some(v) = &c.time {
            thr(self, v, Quantity::Time, "time").map(Check::Time)
        } else if let Some(v) = &c.wrong {
            if v.value != 0 {
                self.err(
                    Diagnostic::error(
                        format!("`wrong: {}` would accept corrupted data", v.value),
                        Some(v.pos),
                    )
                    .help("only `wrong: 0` is allowed: any #wrong > 0 is data corruption"),
                );
                None
            } else if !ctx.settings.check {
                // Without validation nccl-tests prints no #wrong: the criterion could never see data.
                self.err(
                    Diagnostic::error(
                        "`wrong` needs data validation, but this test sets `check: false`",
                        Some(v.pos),
                    )
                    .label("never graded")
                    .help("remove `check: false` (from the test or from `defaults`), or this criterion"),
                );
                None
            } else {
                Some(Check::Wrong(0))
            }
        } else if let Some(v) = &c.transport {
            if ctx.backend == Backend::Mpi {
                self.err(Diagnostic::error(
                    "`transport` needs the nccl backend; MPI reports no NCCL transports",
                    Some(v.pos),
                ));
                None
            } else if let Some(t) = TRANSPORTS.iter().find(|t| t.eq_ignore_ascii_case(&v.value)) {
                Some(Check::Transport(t.to_string()))
            } else {
                self.unknown_name("transport", &v.value, v.pos, TRANSPORTS);
                None
            }
        } else if let Some(v) = &c.regression {
            if !ctx.has_baseline {
                self.warn(
                    Diagnostic::warning("`regression` has no baseline in this plan", Some(v.pos))
                        .help("set `baseline:` in the plan or pass --baseline to grade/run; without one it fails"),
                );
            }
            pct(self, v, "regression").map(Check::Regression)
        } else if let Some(v) = &c.variance {
            if ctx.repeat == Repeat::Times(1) {
                self.err(
                    Diagnostic::error(
                        "`variance` needs repeats, but this test runs once",
                        Some(v.pos),
                    )
                    .help("set `repeat:` to 2 or more (or a duration) on the test"),
                );
            }
            pct(self, v, "variance").map(Check::Variance)
        } else if let Some(v) = &c.group_spread {
            if ctx.split.iter().all(Option::is_none) {
                self.err(
                    Diagnostic::error(
                        "`group_spread` needs a split, but this test has none",
                        Some(v.pos),
                    )
                    .help("add `split:` (e.g. \"DIV 8\") to the test"),
                );
            } else if ctx.split.iter().any(Option::is_none) {
                // A `none` in the matrix split axis: those jobs have one group, nothing to compare.
                self.warn(
                    Diagnostic::warning(
                        "`group_spread` only applies to the jobs of this test that split",
                        Some(v.pos),
                    )
                    .help("its jobs with `split=none` have a single group and skip this criterion"),
                );
            }
            pct(self, v, "group_spread").map(Check::GroupSpread)
        } else {
            None
        };
        let at = match &c.at {
            None => None,
            Some(a) => {
                let parsed = match &a.value {
                    Scalar::Int(i) if *i > 0 && *i <= u64::MAX as i128 => {
                        Ok(SizeSelector::Exactly(*i as u64))
                    }
                    Scalar::Str(s) => parse_selector(s).map_err(|e| format!("`at`: {e}")),
                    other => Err(format!(
                        "`at` must be a size, `>= size` or `low..high`, found {}",
                        other.kind()
                    )),
                };
                match parsed {
                    Err(m) => {
                        self.err(
                            Diagnostic::error(m, Some(a.pos))
                                .help("e.g. at: 8G, at: \">= 1G\", at: 1G..4G"),
                        );
                        None
                    }
                    Ok(sel) => {
                        if let Some(sizes) = ctx.sizes
                            && !sizes.iter().any(|s| sel.matches(*s))
                        {
                            self.err(
                                    Diagnostic::error(
                                        format!(
                                            "`at: {}` matches none of the swept sizes ({})",
                                            a.value,
                                            describe_sizes(sizes)
                                        ),
                                        Some(a.pos),
                                    )
                                    .label("no data would ever be graded here")
                                    .help("`at` selects requested sizes; a criterion must never pass on missing data"),
                                );
                        }
                        if matches!(check, Some(Check::Transport(_))) {
                            self.err(Diagnostic::error(
                                "`at` does not apply to `transport`",
                                Some(a.pos),
                            ));
                        }
                        Some(sel)
                    }
                }
            }
        };
        let severity = match &c.severity {
            None => Severity::Fail,
            Some(s) => match s.value.as_str() {
                "fail" => Severity::Fail,
                "warn" => Severity::Warn,
                other => {
                    self.unknown_name("severity", other, s.pos, &["fail", "warn"]);
                    Severity::Fail
                }
            },
        };
        let in_place = match &c.in_place {
            None => None,
            Some(p) => {
                let v = self.in_place(p);
                if let Some(v) = v {
                    let runs = ctx.settings.in_place;
                    if v != InPlace::Both && runs != InPlace::Both && v != runs {
                        self.err(Diagnostic::error(
                            format!(
                                "criterion reads `in_place: {}` but the test only runs `{}`",
                                p.value,
                                in_place_word(runs)
                            ),
                            Some(p.pos),
                        ));
                    }
                }
                v
            }
        };
        if self.errors.len() > errors_before {
            return None;
        }
        Some(Criterion {
            check: check?,
            at,
            severity,
            in_place,
        })
    }
}

fn too_large(what: &str, v: &str) -> String {
    format!(
        "{what} `{v}` is larger than the largest supported size ({})",
        crate::units::Size(MAX_SIZE)
    )
}

fn in_place_word(p: InPlace) -> &'static str {
    match p {
        InPlace::Both => "both",
        InPlace::Out => "out",
        InPlace::In => "in",
    }
}

fn describe_sizes(s: &[u64]) -> String {
    use crate::units::Size;
    match s {
        [] => "none".into(),
        [one] => Size(*one).to_string(),
        _ if s.len() <= 4 => s
            .iter()
            .map(|v| Size(*v).to_string())
            .collect::<Vec<_>>()
            .join(", "),
        _ => format!(
            "{} sizes from {} to {}",
            s.len(),
            Size(*s.iter().min().unwrap_or(&0)),
            Size(*s.iter().max().unwrap_or(&0))
        ),
    }
}

struct CriterionCtx<'a> {
    /// `None` when the sizes themselves were invalid (then `at` reachability is not checked).
    sizes: Option<&'a [u64]>,
    settings: &'a Settings,
    split: &'a [Option<SplitSpec>],
    repeat: Repeat,
    backend: Backend,
    has_baseline: bool,
}

fn node_text(n: &Node) -> String {
    match n {
        Node::Scalar(s) => format!("`{s}`"),
        other => other.kind().to_string(),
    }
}

/// Borrowed view of the settings keys, shared by `defaults` and each test.
struct SettingsRef<'a> {
    dtype: Option<&'a Loc<String>>,
    op: Option<&'a Loc<String>>,
    iters: &'a Option<Loc<i64>>,
    warmup: &'a Option<Loc<i64>>,
    agg_iters: &'a Option<Loc<i64>>,
    cuda_graph: &'a Option<Loc<i64>>,
    check: Option<&'a Loc<bool>>,
    average: Option<&'a Loc<String>>,
    in_place: Option<&'a Loc<String>>,
    timeout: Option<&'a Loc<String>>,
}

macro_rules! settings_ref {
    ($t:ty) => {
        impl<'a> From<&'a $t> for SettingsRef<'a> {
            fn from(s: &'a $t) -> Self {
                SettingsRef {
                    dtype: s.dtype.as_ref(),
                    op: s.op.as_ref(),
                    iters: &s.iters,
                    warmup: &s.warmup,
                    agg_iters: &s.agg_iters,
                    cuda_graph: &s.cuda_graph,
                    check: s.check.as_ref(),
                    average: s.average.as_ref(),
                    in_place: s.in_place.as_ref(),
                    timeout: s.timeout.as_ref(),
                }
            }
        }
    };
}
settings_ref!(RawSettings);
settings_ref!(RawTest);
