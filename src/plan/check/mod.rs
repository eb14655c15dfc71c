//! Semantic checks: the raw plan becomes a typed [`Plan`], and every problem is collected with
//! its location rather than stopping at the first.
//!
//! One file per concern, all methods of one [`Checker`]: `launch` (rank layout and launcher
//! options), `nodes` (node list, `over:` and node-set checks), `env` (environment maps), `settings` (measurement settings and the names they
//! take), `sizes`, `test` (matrix axes, repeat, root, layout checks) and `criterion`. This file
//! holds the plan as a whole and the helpers every concern uses.

mod criterion;
mod env;
mod knobs;
mod launch;
mod min_bw;
mod nodes;
mod relative;
mod settings;
mod sizes;
mod test;
mod transport;

use std::collections::HashMap;

use indexmap::IndexMap;

use super::diag::Diagnostic;
use super::loc::{Loc, Pos, Scalar};
use super::model::*;
use super::raw::RawPlan;
use super::structure::suggest;
use settings::SettingsRef;

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
        relative_targets: Vec::new(),
    };
    let mut plan = c.plan(raw);
    if c.errors.is_empty() {
        c.resolve_relative(&mut plan);
    }
    if c.errors.is_empty() {
        Ok((plan, c.warnings))
    } else {
        c.errors.extend(c.warnings);
        Err(c.errors)
    }
}

/// What a test inherits from the plan around it.
struct TestCtx<'a> {
    defaults: &'a Settings,
    env: &'a IndexMap<String, String>,
    launch: &'a Launch,
    backend: Backend,
    has_baseline: bool,
    /// Nodes in the plan's own node list, when it has one.
    node_count: Option<usize>,
}

struct Checker<'s> {
    errors: Diags,
    warnings: Diags,
    source: &'s str,
    /// `relative.to` of every criterion, with its test: resolved once all tests are read.
    relative_targets: Vec<(String, Loc<String>)>,
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
        let nodes = self.nodes(raw.nodes);
        let env = match &raw.env {
            Some(e) => self.env_map(e, "env"),
            None => IndexMap::new(),
        };
        let raw_defaults = raw.defaults.unwrap_or_default();
        let defaults = self.settings(&Settings::default(), &SettingsRef::from(&raw_defaults));
        self.graphs_need_nccl(raw_defaults.cuda_graph.as_ref(), backend);
        self.knobs_need_nccl(&SettingsRef::from(&raw_defaults).knobs, backend);
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
            let ctx = TestCtx {
                defaults: &defaults,
                env: &env,
                launch: &launch,
                backend,
                has_baseline,
                node_count: nodes.planned_count(),
            };
            let test = self.test(t, &ctx);
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
        let history = raw.history.map(|h| {
            self.no_control(&h, "history");
            h.value
        });
        Plan {
            version,
            name: raw.name.value,
            description: raw.description,
            backend,
            launch,
            nodes,
            env,
            tests,
            baseline,
            history,
            profile: raw.profile.map(|p| {
                self.no_control(&p, "profile");
                p.value
            }),
            evidence: raw.evidence.unwrap_or(true),
            fleet: raw.fleet.map_or_else(Vec::new, |f| self.fleet(f)),
        }
    }

    /// The `fleet:` section as inventory fields; a rate or PCIe link not in its form is an
    /// error at its place.
    fn fleet(&mut self, f: super::raw::RawFleet) -> crate::nodeset::fleet::Declared {
        let mut d: Vec<(String, String)> = Vec::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                d.push((k.into(), v));
            }
        };
        put("gpus", f.gpus.map(|g| g.to_string()));
        put("gpu model", f.gpu_model);
        put("mtu", f.mtu.map(|m| m.to_string()));
        put(
            "peermem",
            f.peermem
                .map(|p| if p { "loaded" } else { "not loaded" }.into()),
        );
        put("driver", f.driver);
        put("nccl", f.nccl);
        if let Some(n) = f.nics {
            put("nics", n.count.map(|c| c.to_string()));
            if let Some(r) = n.rate {
                let gbps = r
                    .value
                    .trim()
                    .strip_suffix("Gb/s")
                    .and_then(|n| n.trim().parse::<f64>().ok());
                match gbps {
                    Some(g) => put("rate", Some(format!("{g} Gb/s"))),
                    None => self.err(
                        Diagnostic::error(
                            format!("`fleet.nics.rate` `{}` is not a rate", r.value),
                            Some(r.pos),
                        )
                        .help("write it as the port's rate in Gb/s, e.g. `400 Gb/s`"),
                    ),
                }
            }
        }
        if let Some(p) = f.pcie {
            let ok = p
                .value
                .strip_prefix("Gen")
                .and_then(|s| s.split_once(" x"))
                .is_some_and(|(g, w)| g.parse::<u32>().is_ok() && w.parse::<u32>().is_ok());
            if ok {
                put("pcie", Some(p.value.clone()));
            } else {
                self.err(
                    Diagnostic::error(
                        format!("`fleet.pcie` `{}` is not a PCIe link", p.value),
                        Some(p.pos),
                    )
                    .help("write it as generation and width, e.g. `Gen5 x16`"),
                );
            }
        }
        d
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
}
