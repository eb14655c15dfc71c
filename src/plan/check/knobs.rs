//! The nccl-tests engine flags (`plan::knobs`): each value parsed once, each refused where it is
//! written when it is out of range, when another setting it needs is missing, or when the plan's
//! backend cannot do it.

use crate::collective::{Collective, Dtype, RedOp};
use crate::plan::diag::Diagnostic;
use crate::plan::knobs::{
    Blocking, DEFAULT_DEVICE_CTAS, DEVICE_API_COLLECTIVES, DEVICE_API_DTYPES, DeviceApi, Register,
};
use crate::plan::loc::{Loc, Pos};
use crate::plan::model::{Backend, Settings};

use super::Checker;

/// A key's value as written and where, when it asks for something.
type Written = Option<(String, Pos)>;

/// Borrowed view of the knob keys of `defaults` or of one test.
#[derive(Clone, Copy)]
pub(super) struct KnobsRef<'a> {
    pub register: Option<&'a Loc<i64>>,
    pub cta_policy: Option<&'a Loc<i64>>,
    pub device_api: Option<&'a Loc<i64>>,
    pub device_ctas: Option<&'a Loc<i64>>,
    pub blocking: Option<&'a Loc<i64>>,
    pub null_stream: Option<&'a Loc<bool>>,
    pub parallel_init: Option<&'a Loc<bool>>,
    pub cpu_time: Option<&'a Loc<bool>>,
    pub timestamps: Option<&'a Loc<bool>>,
    pub memory: Option<&'a Loc<bool>>,
    pub run_cycles: Option<&'a Loc<i64>>,
    pub per_iter_skip: Option<&'a Loc<i64>>,
}

impl Checker<'_> {
    pub(super) fn knobs(&mut self, s: &mut Settings, raw: &KnobsRef<'_>) {
        if let Some(r) = raw.register
            && let Some(v) = self.code(r, "register", 2, "0 (none), 1 (local) or 2 (symmetric)")
        {
            s.knobs.register = Register::from_code(v).unwrap_or_default();
        }
        if let Some(p) = raw.cta_policy
            && let Some(v) = self.code(
                p,
                "cta_policy",
                2,
                "0 (default), 1 (efficiency) or 2 (zero, copy-engine collectives)",
            )
        {
            s.knobs.cta_policy = Some(v as u8);
        }
        if let Some(b) = raw.blocking
            && let Some(v) = self.code(b, "blocking", 3, "0, 1, 2 or 3 (nccl-tests -z)")
        {
            s.knobs.blocking = Blocking::from_code(v).unwrap_or_default();
        }
        self.device_api(s, raw);
        if let Some(v) = raw.null_stream {
            s.knobs.null_stream = v.value;
        }
        if let Some(v) = raw.cpu_time {
            s.reports.cpu_time = v.value;
        }
        if let Some(v) = raw.timestamps {
            s.reports.timestamps = v.value;
        }
        if let Some(v) = raw.memory {
            s.reports.memory = v.value;
        }
        if let Some(p) = raw.parallel_init
            && !p.value
        {
            self.err(
                Diagnostic::error(
                    "`parallel_init: false`: baton initialises each rank's communicator on that rank's own thread or process (nccl-tests -p 1)",
                    Some(p.pos),
                )
                .help("one-thread grouped initialisation (nccl-tests -p 0) is not built: each GPU's thread owns its communicator (it splits it, rebuilds it after a fault, and registers its buffers with it), so one thread making them all would hand each across threads for no measured difference; with one GPU per process the two modes are the same ncclCommInitRank. Remove the key or set it to true"),
            );
        }
        if let Some(c) = raw.run_cycles
            && let Some(v) = self.in_range(
                c.value.into(),
                c.pos,
                "run_cycles",
                "at least 1 (nccl-tests' 0 runs forever; use a duration `repeat`)",
                1,
                super::MAX_REPEAT.into(),
            )
        {
            s.run_cycles = Some(v as u32);
        }
        if let Some(v) = self.count(&raw.per_iter_skip.cloned(), "per_iter_skip", 0) {
            s.knobs.per_iter_skip = v;
        }
    }

    fn device_api(&mut self, s: &mut Settings, raw: &KnobsRef<'_>) {
        if let Some(d) = raw.device_api
            && let Some(n) = self.in_range(
                d.value.into(),
                d.pos,
                "device_api",
                "at least 1",
                1,
                u32::MAX.into(),
            )
        {
            let ctas = s.knobs.device_api.map_or(DEFAULT_DEVICE_CTAS, |a| a.ctas);
            s.knobs.device_api = Some(DeviceApi {
                implementation: n as u32,
                ctas,
            });
        }
        if let Some(c) = raw.device_ctas
            && let Some(n) =
                self.in_range(c.value.into(), c.pos, "device_ctas", "at least 1", 1, 128)
        {
            match &mut s.knobs.device_api {
                Some(api) => api.ctas = n as u32,
                None => self.err(
                    Diagnostic::error("`device_ctas` without `device_api`", Some(c.pos))
                        .help("nccl-tests -V only counts the CTAs of a device implementation (-D); set `device_api` beside it"),
                ),
            }
        }
    }

    /// What baton has device-API kernels for (`kernels/device_api.cu`): implementation 1 of
    /// nccl-tests' two collectives, sum, nccl-tests' device types; the rest refused at the key.
    pub(super) fn device_api_fits(
        &mut self,
        s: &Settings,
        raw: &KnobsRef<'_>,
        (collectives, dtypes, ops): (&[Collective], &[Dtype], &[RedOp]),
        test: Pos,
    ) {
        let Some(d) = s.knobs.device_api else {
            return;
        };
        let at = Some(raw.device_api.map_or(test, |d| d.pos));
        if d.implementation != 1 {
            self.err(
                Diagnostic::error(
                    format!("`device_api: {}` is not built into baton", d.implementation),
                    at,
                )
                .help("baton has implementation 1 (nccl-tests -D 1: load/store over symmetric windows, LSA barriers); 2 (vectorized) and 3–4 (multimem) are nccl-tests' alone"),
            );
        }
        for c in collectives
            .iter()
            .filter(|c| !DEVICE_API_COLLECTIVES.contains(c))
        {
            self.err(
                Diagnostic::error(format!("`device_api` has no {} implementation", c.name()), at)
                    .help("the device API runs all_reduce and alltoall, as in nccl-tests; run this collective in another test"),
            );
        }
        for t in dtypes.iter().filter(|t| !DEVICE_API_DTYPES.contains(t)) {
            self.err(
                Diagnostic::error(format!("`device_api` has no {t} kernel"), at).help(
                    "nccl-tests' device kernels are int8, uint8, int32, uint32, int64, uint64, half, float and double",
                ),
            );
        }
        let reduces = collectives.contains(&Collective::AllReduce);
        for o in ops.iter().filter(|o| reduces && **o != RedOp::Sum) {
            self.err(
                Diagnostic::error(format!("`device_api` all_reduce only sums, not `{o}`"), at)
                    .help("nccl-tests' device kernels add; use `op: sum`"),
            );
        }
    }

    fn code(&mut self, v: &Loc<i64>, key: &str, max: i64, valid: &str) -> Option<i64> {
        if (0..=max).contains(&v.value) {
            return Some(v.value);
        }
        self.err(
            Diagnostic::error(
                format!("`{key}: {}` is not a {key} mode", v.value),
                Some(v.pos),
            )
            .label(format!("not a {key} mode"))
            .help(format!("valid: {valid}")),
        );
        None
    }

    /// The keys only the NCCL engine can honour, refused on `backend: mpi` where they are
    /// written (host memory has no buffers to register, no CTAs, streams or GPU memory).
    pub(super) fn knobs_need_nccl(&mut self, raw: &KnobsRef<'_>, backend: Backend) {
        if backend != Backend::Mpi {
            return;
        }
        let int = |k: Option<&Loc<i64>>, off: Option<i64>| {
            k.filter(|v| Some(v.value) != off)
                .map(|v| (v.value.to_string(), v.pos))
        };
        let flag = |k: Option<&Loc<bool>>| k.filter(|v| v.value).map(|v| ("true".into(), v.pos));
        let keys: [(&str, Written, &str); 6] = [
            (
                "register",
                int(raw.register, Some(0)),
                "buffer registration is an NCCL communicator's",
            ),
            (
                "cta_policy",
                int(raw.cta_policy, None),
                "CTA policies are NCCL's",
            ),
            (
                "device_api",
                int(raw.device_api, None),
                "the device API is NCCL's",
            ),
            (
                "device_ctas",
                int(raw.device_ctas, None),
                "the device API is NCCL's",
            ),
            (
                "null_stream",
                flag(raw.null_stream),
                "host memory has no CUDA streams",
            ),
            (
                "memory",
                flag(raw.memory),
                "the memory report is of GPU memory",
            ),
        ];
        for (key, written, why) in keys {
            if let Some((value, pos)) = written {
                self.err(
                    Diagnostic::error(
                        format!("`{key}: {value}` needs the nccl backend: {why}"),
                        Some(pos),
                    )
                    .help(format!(
                        "the mpi backend runs in host memory; remove `{key}`"
                    )),
                );
            }
        }
    }

    /// What one setting needs of another, on a test's settings as merged over `defaults`; told
    /// at the test's own key, else at the test.
    pub(super) fn knobs_together(&mut self, s: &Settings, raw: &KnobsRef<'_>, test: Pos) {
        let at = |k: Option<Pos>| Some(k.unwrap_or(test));
        if s.knobs.device_api.is_some() && s.knobs.register != Register::Symmetric {
            self.err(
                Diagnostic::error(
                    "`device_api` needs `register: 2`: the device implementation works on symmetric windows",
                    at(raw.device_api.map(|d| d.pos)),
                )
                .help("set `register: 2` (nccl-tests refuses -D without -R 2)"),
            );
        }
        let skip = s.knobs.per_iter_skip;
        if skip > 0 && !s.iterations {
            self.err(
                Diagnostic::error(
                    format!("`per_iter_skip: {skip}` needs `iterations: true`"),
                    at(raw.per_iter_skip.map(|d| d.pos)),
                )
                .help("nccl-tests -K only trims the per-iteration statistics of -I 1"),
            );
        } else if skip > 0 && skip >= s.iters {
            self.err(
                Diagnostic::error(
                    format!(
                        "`per_iter_skip: {skip}` leaves none of `iters: {}`",
                        s.iters
                    ),
                    at(raw.per_iter_skip.map(|d| d.pos)),
                )
                .help(format!("between 0 and {}", s.iters - 1)),
            );
        }
        if s.knobs.blocking == Blocking::Iteration && s.cuda_graph > 0 {
            self.err(
                Diagnostic::error(
                    format!(
                        "`blocking: 3` with `cuda_graph: {}`: a replayed graph has no iterations to wait between",
                        s.cuda_graph
                    ),
                    at(raw.blocking.map(|d| d.pos)),
                )
                .help("turn one of them off for this test (nccl-tests disables -z 3 under -G)"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::knobs::{Blocking, DeviceApi, Register};
    use crate::plan::{Level, Settings, parse_str};

    fn plan(body: &str) -> Result<Settings, Vec<(u64, String)>> {
        let text = format!(
            "version: 1\nname: t\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n{body}"
        );
        let errors = |r: crate::plan::Report| {
            r.diagnostics
                .into_iter()
                .filter(|d| d.level == Level::Error)
                .map(|d| (d.pos.map_or(0, |p| p.line), d.message))
                .collect::<Vec<_>>()
        };
        match parse_str("plan.yaml", &text) {
            Ok(l) if errors(l.report.clone()).is_empty() => Ok(l.plan.tests[0].settings.clone()),
            Ok(l) => Err(errors(l.report)),
            Err(r) => Err(errors(r)),
        }
    }

    #[test]
    fn every_knob_parses_into_its_type() {
        let s = plan(
            "    register: 2\n    cta_policy: 1\n    device_api: 1\n    device_ctas: 32\n    blocking: 3\n    null_stream: true\n    parallel_init: true\n    cpu_time: true\n    timestamps: true\n    memory: true\n    run_cycles: 3\n    iterations: true\n    per_iter_skip: 2\n",
        )
        .unwrap();
        assert_eq!(s.knobs.register, Register::Symmetric);
        assert_eq!(s.knobs.cta_policy, Some(1));
        assert_eq!(
            s.knobs.device_api,
            Some(DeviceApi {
                implementation: 1,
                ctas: 32
            })
        );
        assert_eq!(s.knobs.blocking, Blocking::Iteration);
        assert!(s.knobs.null_stream && s.reports.cpu_time && s.reports.timestamps);
        assert!(s.reports.memory);
        assert_eq!(s.run_cycles, Some(3));
        assert_eq!(s.knobs.per_iter_skip, 2);
    }

    #[test]
    fn bad_values_are_refused_where_written() {
        let one = |body: &str, want: &str| {
            let e = plan(body).unwrap_err();
            assert_eq!(e.len(), 1, "{e:?}");
            assert_eq!(e[0].0, 7, "{e:?}");
            assert!(e[0].1.contains(want), "{:?} lacks {want:?}", e[0].1);
        };
        one("    register: 3\n", "`register: 3` is not a register mode");
        one(
            "    cta_policy: -1\n",
            "`cta_policy: -1` is not a cta_policy mode",
        );
        one("    blocking: 4\n", "`blocking: 4` is not a blocking mode");
        one("    device_api: 1\n", "`device_api` needs `register: 2`");
        one("    device_api: 0\n", "`device_api` is 0");
        one(
            "    device_ctas: 129\n    register: 2\n    device_api: 1\n",
            "at most 128",
        );
        one("    device_ctas: 8\n", "`device_ctas` without `device_api`");
        one("    per_iter_skip: 1\n", "needs `iterations: true`");
        one("    parallel_init: false\n", "`parallel_init: false`");
        one("    run_cycles: 0\n", "`run_cycles` is 0");
        one(
            "    blocking: 3\n    cuda_graph: 1\n",
            "`blocking: 3` with `cuda_graph: 1`",
        );
    }

    #[test]
    fn device_api_is_refused_where_baton_has_no_kernel() {
        let errors = |test: &str| {
            let text = format!(
                "version: 1\nname: t\ntests:\n  - name: a\n    sizes: [1M]\n    register: 2\n{test}"
            );
            match parse_str("plan.yaml", &text) {
                Ok(l) => l.report.diagnostics,
                Err(r) => r.diagnostics,
            }
            .into_iter()
            .filter(|d| d.level == Level::Error)
            .map(|d| d.message)
            .collect::<Vec<_>>()
        };
        let fine = "    device_api: 1\n    collective: [all_reduce, alltoall]\n    matrix: { dtype: [int8, uint8, int32, uint32, int64, uint64, half, float, double] }\n";
        assert_eq!(errors(fine), Vec::<String>::new());
        let one = |test: &str, want: &str| {
            let e = errors(test);
            assert_eq!(e.len(), 1, "{e:?}");
            assert!(e[0].contains(want), "{:?} lacks {want:?}", e[0]);
        };
        one(
            "    device_api: 1\n    collective: [all_reduce, all_gather]\n",
            "`device_api` has no all_gather",
        );
        one(
            "    device_api: 1\n    collective: all_reduce\n    matrix: { dtype: [float, bfloat16] }\n",
            "`device_api` has no bfloat16 kernel",
        );
        one(
            "    device_api: 1\n    collective: all_reduce\n    op: max\n",
            "`device_api` all_reduce only sums",
        );
        assert_eq!(
            errors("    device_api: 1\n    collective: alltoall\n    op: max\n"),
            Vec::<String>::new(),
            "alltoall reduces nothing"
        );
        one(
            "    device_api: 2\n    collective: all_reduce\n",
            "`device_api: 2` is not built into baton",
        );
    }

    #[test]
    fn run_cycles_is_the_repeat_count() {
        let text = "version: 1\nname: t\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n    run_cycles: 4\n";
        let l = parse_str("plan.yaml", text).unwrap();
        assert_eq!(l.plan.tests[0].repeat, crate::plan::Repeat::Times(4));
        let e = plan("    run_cycles: 2\n    repeat: 2\n").unwrap_err();
        assert!(
            e[0].1.contains("`repeat` and `run_cycles` both set"),
            "{e:?}"
        );
    }
}
