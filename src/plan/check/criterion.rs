//! One `expect` criterion: its metric, `at`, severity and placement.

use crate::plan::raw::RawCriterion;
use crate::units::{Quantity, SizeSelector, parse_selector, parse_threshold};

use super::Checker;
use crate::plan::diag::Diagnostic;
use crate::plan::loc::{Loc, Pos, Scalar};
use crate::plan::model::*;

impl Checker<'_> {
    pub(super) fn criterion(
        &mut self,
        c: &RawCriterion,
        ctx: &CriterionCtx<'_>,
    ) -> Option<Criterion> {
        let metrics: Vec<(&str, Pos)> = [
            ("busbw", c.busbw.as_ref().map(|v| v.pos)),
            ("algbw", c.algbw.as_ref().map(|v| v.pos)),
            ("time", c.time.as_ref().map(|v| v.pos)),
            ("wrong", c.wrong.as_ref().map(|v| v.pos)),
            ("transport", c.transport.as_ref().map(|v| v.pos)),
            ("regression", c.regression.as_ref().map(|v| v.pos)),
            ("variance", c.variance.as_ref().map(|v| v.pos)),
            ("group_spread", c.group_spread.as_ref().map(|v| v.pos)),
            ("outlier", c.outlier.as_ref().map(|v| v.pos)),
            ("relative", c.relative.as_ref().map(|v| v.to.pos)),
            ("trend", c.trend.as_ref().map(|v| v.pos)),
            ("straggler", c.straggler.as_ref().map(|v| v.pos)),
            (
                "nccl_tests_min_bw",
                c.nccl_tests_min_bw.as_ref().map(|v| v.pos),
            ),
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
                        .help("give one of busbw, algbw, time, wrong, transport, regression, variance, group_spread, outlier, relative, trend, straggler, nccl_tests_min_bw"),
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
        let check = if let Some(v) = &c.busbw
            && let Some(share) = of_profile(&v.value)
        {
            let share = Loc::new(share.to_string(), v.pos);
            let t = thr(self, &share, Quantity::Percent, "busbw")?;
            if !matches!(t.cmp, crate::units::Cmp::Ge | crate::units::Cmp::Gt) {
                self.err(
                    Diagnostic::error(
                        "`busbw: … of profile` is a least share: use >= or >",
                        Some(v.pos),
                    )
                    .help("e.g. busbw: \">= 90% of profile\""),
                );
                None
            } else if ctx.backend == Backend::Mpi {
                self.err(Diagnostic::error(
                    "hardware profiles hold NCCL figures; the mpi backend measures host memory",
                    Some(v.pos),
                ));
                None
            } else {
                Some(Check::Profile(t))
            }
        } else if let Some(v) = &c.busbw {
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
            self.transport_rule(v, ctx).map(Check::Transport)
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
        } else if let Some(r) = &c.relative {
            let t = thr(self, &r.busbw, Quantity::Percent, "relative.busbw")?;
            if !matches!(t.cmp, crate::units::Cmp::Ge | crate::units::Cmp::Gt) {
                self.err(
                    Diagnostic::error(
                        "`relative.busbw` is a least share: use >= or >",
                        Some(r.busbw.pos),
                    )
                    .help("e.g. busbw: \">= 85%\" (within 15%)"),
                );
                None
            } else if let Some(f) = &r.results {
                // Another run's job: known only when its results are read, at grade time.
                if f.value.trim().is_empty() {
                    self.err(Diagnostic::error(
                        "`relative.results` names no file",
                        Some(f.pos),
                    ));
                    return None;
                }
                Some(Check::Relative(Relative {
                    to: r.to.value.clone(),
                    busbw: t,
                    results: Some(f.value.clone()),
                }))
            } else {
                // Whether `to` names a job of this plan is known once every test is read.
                self.relative_targets
                    .push((ctx.test.to_string(), r.to.clone()));
                Some(Check::Relative(Relative {
                    to: r.to.value.clone(),
                    busbw: t,
                    results: None,
                }))
            }
        } else if let Some(v) = &c.outlier {
            if ctx.over == Some(Over::All) {
                self.err(
                    Diagnostic::error(
                        "`outlier` compares node sets, but this test runs as one set (`over: all`)",
                        Some(v.pos),
                    )
                    .help("set `over:` to each-node, pairs or isolate"),
                );
            }
            pct(self, v, "outlier").map(Check::Outlier)
        } else if let Some(v) = &c.straggler {
            self.straggler(v, ctx)
        } else if let Some(v) = &c.nccl_tests_min_bw {
            self.nccl_tests_min_bw(v).map(Check::NcclTestsMinBw)
        } else if let Some(v) = &c.trend {
            match crate::units::parse_trend(&v.value) {
                Ok(t) => Some(Check::Trend(t)),
                Err(e) => {
                    self.err(
                        Diagnostic::error(format!("`trend`: {e}"), Some(v.pos))
                            .help(format!("expected {}", e.expected)),
                    );
                    None
                }
            }
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

/// `>= 90% of profile` → `>= 90%`.
impl Checker<'_> {
    /// `straggler` reads the per-iteration timing only `iterations: true` records.
    fn straggler(&mut self, v: &Loc<String>, ctx: &CriterionCtx<'_>) -> Option<Check> {
        let s = match crate::plan::straggler::parse(&v.value) {
            Ok(s) => s,
            Err(e) => {
                self.err(Diagnostic::error(format!("`straggler`: {e}"), Some(v.pos)));
                return None;
            }
        };
        if !ctx.settings.iterations {
            self.err(
                Diagnostic::error(
                    "`straggler` compares per-iteration times, which this test does not record",
                    Some(v.pos),
                )
                .help("add `iterations: true` to the test (or to `defaults`)"),
            );
            return None;
        }
        if s.fleet && ctx.over == Some(Over::All) {
            self.err(
                Diagnostic::error(
                    "`straggler: … fleet median` compares nodes across node sets, but this test runs as one set (`over: all`)",
                    Some(v.pos),
                )
                .help("set `over:` to each-node, pairs or isolate, or compare ranks within the job: `p99 <= 2x median`"),
            );
            return None;
        }
        Some(Check::Straggler(s))
    }
}

fn of_profile(text: &str) -> Option<&str> {
    let t = text.trim_end();
    let cut = t.len().checked_sub("of profile".len())?;
    t.get(cut..)
        .filter(|s| s.eq_ignore_ascii_case("of profile"))
        .and_then(|_| t.get(..cut))
        .map(str::trim_end)
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

pub(super) struct CriterionCtx<'a> {
    /// `None` when the sizes themselves were invalid (then `at` reachability is not checked).
    pub(super) sizes: Option<&'a [u64]>,
    pub(super) settings: &'a Settings,
    pub(super) split: &'a [Option<SplitSpec>],
    pub(super) repeat: Repeat,
    pub(super) backend: Backend,
    pub(super) has_baseline: bool,
    /// `None` when the test's `over` was invalid.
    pub(super) over: Option<Over>,
    pub(super) test: &'a str,
    pub(super) launch: &'a Launch,
    /// Nodes in the plan's own node list, when it has one.
    pub(super) node_count: Option<usize>,
    /// The test's environment and its matrix env axis.
    pub(super) env: &'a indexmap::IndexMap<String, String>,
    pub(super) env_axis: &'a [indexmap::IndexMap<String, String>],
}
