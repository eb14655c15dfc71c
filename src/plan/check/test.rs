//! One test: its matrix axes, repeat, root, layout-dependent checks and criteria.

use crate::collective::{Collective, RedOp};
use crate::plan::raw::RawTest;
use crate::units::parse_duration;
use indexmap::IndexMap;

use super::criterion::CriterionCtx;
use super::nodes::GPU_PAIRS;
use super::settings::SettingsRef;
use super::{Checker, MAX_REPEAT, TestCtx, valid_name};
use crate::plan::diag::Diagnostic;
use crate::plan::loc::{Loc, Node, Scalar};
use crate::plan::model::*;

impl Checker<'_> {
    pub(super) fn string_list(&mut self, n: &Loc<Node>, key: &str) -> Vec<Loc<String>> {
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

    pub(super) fn axis<T: PartialEq + Clone>(
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

    pub(super) fn test(&mut self, t: Loc<RawTest>, ctx: &TestCtx<'_>) -> Option<Test> {
        let TestCtx {
            defaults,
            env: plan_env,
            launch,
            backend,
            has_baseline,
            node_count,
        } = *ctx;
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
        self.iterations_without_graphs(&settings, t.iterations.as_ref().map(|i| i.pos), test_pos);
        let knobs = SettingsRef::from(&t).knobs;
        self.knobs_need_nccl(&knobs, backend);
        self.knobs_together(&settings, &knobs, test_pos);
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

        self.device_api_fits(&settings, &knobs, (&collective, &dtype, &op), test_pos);

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

        // `over: gpu-pairs` is a split axis, not a node set: its rounds run one after another
        // in the same processes, each node's GPUs paired inside the node.
        let gpu_pairs = t
            .over
            .as_ref()
            .filter(|o| matches!(&o.value, Node::Scalar(Scalar::Str(s)) if s == GPU_PAIRS));
        if let Some(o) = gpu_pairs
            && let Some(rounds) = self.gpu_pair_rounds(&t, o, launch.ranks_per_node_total())
        {
            split = rounds;
            named.push("split");
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
            None => Repeat::Times(settings.run_cycles.unwrap_or(1)),
            Some(r) if t.run_cycles.is_some() => {
                self.err(
                    Diagnostic::error("`repeat` and `run_cycles` both set", Some(r.pos)).help(
                        "`run_cycles` is nccl-tests -N, the same as a count `repeat`; keep one",
                    ),
                );
                Repeat::Times(1)
            }
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

        let over = match &t.over {
            None => Some(Over::All),
            Some(_) if gpu_pairs.is_some() => Some(Over::All),
            Some(o) => self.over(o, node_count),
        };
        // The ranks of one job, where the layout and the node set fix them.
        let set_nodes = match &over {
            Some(Over::EachNode) => Some(1),
            Some(Over::All) => Some(
                node_count.map_or(launch.nodes as u64, |n| (n as u64).max(launch.nodes as u64)),
            ),
            _ => None,
        };
        if let (Some(per_node), Some(nodes)) = (launch.ranks_per_node_total(), set_nodes) {
            self.zero_busbw_criteria(&t, per_node * nodes, &split, &collective);
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
                            over,
                            test: &t.name.value,
                            launch,
                            node_count,
                            env: &env,
                            env_axis: &env_axis,
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
            over: over?,
        })
    }

    /// The split axis of `over: gpu-pairs`: one `PAIRS r/R` split per circle-method round of
    /// the node's ranks, which must be known and even.
    fn gpu_pair_rounds(
        &mut self,
        t: &RawTest,
        o: &Loc<Node>,
        per_node: Option<u64>,
    ) -> Option<Vec<Option<SplitSpec>>> {
        if let Some(s) = &t.split {
            self.err(Diagnostic::error(
                "`over: gpu-pairs` splits the ranks itself; drop `split`",
                Some(s.pos),
            ));
            return None;
        }
        if t.matrix.as_ref().is_some_and(|m| m.split.is_some()) {
            self.err(Diagnostic::error(
                "`over: gpu-pairs` splits the ranks itself; drop the matrix's `split` axis",
                Some(o.pos),
            ));
            return None;
        }
        let help = "gpu-pairs pairs every GPU of a node with every other: it needs the GPUs per node (launch.ranks_per_node × gpus_per_rank), an even number";
        match per_node {
            Some(g) if g >= 2 && g % 2 == 0 => Some(
                crate::split::Split::gpu_pair_rounds(g)
                    .into_iter()
                    .map(|split| {
                        Some(SplitSpec {
                            text: split.to_string(),
                            split,
                        })
                    })
                    .collect(),
            ),
            Some(g) => {
                self.err(
                    Diagnostic::error(
                        format!(
                            "`over: gpu-pairs` needs an even number of ranks per node, not {g}"
                        ),
                        Some(o.pos),
                    )
                    .help(help),
                );
                None
            }
            None => {
                self.err(
                    Diagnostic::error(
                        "`over: gpu-pairs` needs the plan to fix the ranks per node",
                        Some(o.pos),
                    )
                    .help(help),
                );
                None
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn matrix_axis<T: PartialEq + Clone>(
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

    pub(super) fn layout_checks(
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
            let odd = groups
                .iter()
                .map(|g| g.len() as u64)
                .find(|k| !k.is_power_of_two());
            if let Some(k) = odd.filter(|_| colls.iter().any(|c| c.needs_power_of_two())) {
                let what = if s.is_some() {
                    "a split group has"
                } else {
                    "the communicator has"
                };
                self.err(
                    Diagnostic::error(
                        format!("hypercube needs a power-of-two rank count: {what} {k} ranks"),
                        Some(pos),
                    )
                    .help("nccl-tests' hypercube_perf skips other sizes; pick a layout or split of 2, 4, 8, … ranks"),
                );
            }
        }
    }
}

impl Checker<'_> {
    /// Criteria on busbw of a job whose busbw is 0 by definition: every communicator (or split
    /// group) has one rank and every collective moves (n-1)/n of its data between ranks. A floor
    /// (`>=`, `of profile`, `nccl_tests_min_bw`) and every comparison with a median or another
    /// job's busbw (`variance`, `relative`, `regression`, `trend`: grading fails a reference of
    /// 0) could only ever fail: an error. A ceiling, or a spread between groups of zeros, can
    /// never fail: a warning.
    fn zero_busbw_criteria(
        &mut self,
        t: &RawTest,
        n: u64,
        splits: &[Option<SplitSpec>],
        colls: &[Collective],
    ) {
        let largest = splits
            .iter()
            .map(|s| match s {
                Some(s) => s.split.groups(n).values().map(Vec::len).max().unwrap_or(0) as u64,
                None => n,
            })
            .max()
            .unwrap_or(n);
        if largest != 1 || colls.is_empty() || colls.iter().any(|c| c.busbw_factor(1) != 0.0) {
            return;
        }
        let Some(expect) = &t.expect else { return };
        let whose = if splits.iter().any(Option::is_some) {
            format!("every split group of this test's {n} ranks has 1 rank")
        } else {
            "this test runs on 1 rank".to_string()
        };
        let why = format!(
            "{whose}: busbw is 0 by definition (a one-rank {} moves no data between GPUs)",
            colls[0]
        );
        let help = "give the job at least 2 ranks, or grade it on time or algbw";
        for c in &expect.value {
            let floor = c
                .busbw
                .as_ref()
                .filter(|b| b.value.trim_start().starts_with('>'))
                .map(|b| ("busbw", b.pos));
            let always_fail = [
                floor,
                c.nccl_tests_min_bw
                    .as_ref()
                    .map(|v| ("nccl_tests_min_bw", v.pos)),
                c.variance.as_ref().map(|v| ("variance", v.pos)),
                c.relative.as_ref().map(|v| ("relative", v.busbw.pos)),
                c.regression.as_ref().map(|v| ("regression", v.pos)),
                c.trend.as_ref().map(|v| ("trend", v.pos)),
            ];
            for (key, pos) in always_fail.into_iter().flatten() {
                self.err(
                    Diagnostic::error(format!("`{key}` can only ever fail: {why}"), Some(pos))
                        .help(help),
                );
            }
            let never_fail = [
                c.busbw
                    .as_ref()
                    .filter(|b| b.value.trim_start().starts_with('<'))
                    .map(|b| ("busbw", b.pos)),
                c.group_spread.as_ref().map(|v| ("group_spread", v.pos)),
                c.outlier.as_ref().map(|v| ("outlier", v.pos)),
            ];
            for (key, pos) in never_fail.into_iter().flatten() {
                self.warn(
                    Diagnostic::warning(
                        format!(
                            "`{key}` compares busbw that is always 0 and can never fail: {why}"
                        ),
                        Some(pos),
                    )
                    .help(help),
                );
            }
        }
    }
}
