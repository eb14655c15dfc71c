//! Measurement settings shared by `defaults` and tests, and the named values they take.

use std::str::FromStr;

use crate::collective::{Collective, Dtype, RedOp};
use crate::plan::raw::{RawSettings, RawTest};
use crate::split::Split;
use crate::units::parse_duration;

use super::Checker;
use crate::plan::diag::Diagnostic;
use crate::plan::loc::Loc;
use crate::plan::model::*;

impl Checker<'_> {
    pub(super) fn settings(&mut self, base: &Settings, raw: &SettingsRef<'_>) -> Settings {
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
        if let Some(i) = raw.iterations {
            s.iterations = i.value;
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
        self.knobs(&mut s, &raw.knobs);
        s
    }

    /// A `cuda_graph` the runner would ignore is an error rather than a setting that silently
    /// does nothing: the mpi backend has no GPU work to capture. Checked where the key is
    /// written, once.
    pub(super) fn graphs_need_nccl(&mut self, cuda_graph: Option<&Loc<i64>>, backend: Backend) {
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

    /// nccl-tests turns `-I` off under `-G` (the replayed graph has no iteration boundaries to
    /// time); a plan asking for both is told so where it asked for iterations.
    pub(super) fn iterations_without_graphs(
        &mut self,
        s: &Settings,
        iterations: Option<crate::plan::loc::Pos>,
        test: crate::plan::loc::Pos,
    ) {
        if s.iterations && s.cuda_graph > 0 {
            self.err(
                Diagnostic::error(
                    format!(
                        "`iterations: true` with `cuda_graph: {}`: per-iteration timing cannot see inside a replayed CUDA graph",
                        s.cuda_graph
                    ),
                    Some(iterations.unwrap_or(test)),
                )
                .help("turn one of them off for this test (nccl-tests disables -I under -G)"),
            );
        }
    }

    pub(super) fn in_place(&mut self, p: &Loc<String>) -> Option<InPlace> {
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

    pub(super) fn dtype(&mut self, d: &Loc<String>) -> Option<Dtype> {
        Dtype::from_str(&d.value).ok().or_else(|| {
            let mut valid = Dtype::names();
            valid.extend(Dtype::aliases());
            self.unknown_name("dtype", &d.value, d.pos, &valid);
            None
        })
    }

    pub(super) fn op(&mut self, o: &Loc<String>) -> Option<RedOp> {
        RedOp::from_str(&o.value).ok().or_else(|| {
            self.unknown_name("op", &o.value, o.pos, &RedOp::names());
            None
        })
    }

    pub(super) fn collective(&mut self, c: &Loc<String>) -> Option<Collective> {
        Collective::from_str(&c.value).ok().or_else(|| {
            self.unknown_name("collective", &c.value, c.pos, &Collective::names());
            None
        })
    }

    /// A split expression, or `none` for no split (`Some(None)`); `None` when it is invalid.
    /// `none` is what lets one `matrix.split` axis compare unsplit and split runs.
    pub(super) fn split(&mut self, s: &Loc<String>) -> Option<Option<SplitSpec>> {
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
}

/// Borrowed view of the settings keys, shared by `defaults` and each test.
pub(super) struct SettingsRef<'a> {
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
    iterations: Option<&'a Loc<bool>>,
    pub(super) knobs: super::knobs::KnobsRef<'a>,
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
                    iterations: s.iterations.as_ref(),
                    knobs: super::knobs::KnobsRef {
                        register: s.register.as_ref(),
                        cta_policy: s.cta_policy.as_ref(),
                        device_api: s.device_api.as_ref(),
                        device_ctas: s.device_ctas.as_ref(),
                        blocking: s.blocking.as_ref(),
                        null_stream: s.null_stream.as_ref(),
                        parallel_init: s.parallel_init.as_ref(),
                        cpu_time: s.cpu_time.as_ref(),
                        timestamps: s.timestamps.as_ref(),
                        memory: s.memory.as_ref(),
                        run_cycles: s.run_cycles.as_ref(),
                        per_iter_skip: s.per_iter_skip.as_ref(),
                    },
                }
            }
        }
    };
}
settings_ref!(RawSettings);
settings_ref!(RawTest);
