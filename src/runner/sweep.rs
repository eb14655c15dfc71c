//! The nccl-tests measurement protocol (semantics §2), shared by every backend: warm-up sweep,
//! then per size and placement one untimed op, a barrier, a host clock around `iters × agg_iters`
//! enqueues plus the final wait, cross-rank aggregation by the `average` mode, then a separate
//! verified op.

use std::time::Instant;

use super::engine::{Engine, EngineError, OpSpec};
use super::host_clock::Stamps;
use super::iterations;
use crate::collective::{Collective, Dtype, RedOp, Traffic};
use crate::plan::knobs::Blocking;
use crate::plan::{Average, Settings};
use crate::results::{Cell, ErrorKind, GroupCell, GroupInfo, Iterations, Placement, Row};
use crate::world::World;

/// One job as a rank runs it.
#[derive(Debug, Clone)]
pub struct JobRun<'a> {
    pub collective: Collective,
    pub dtype: Dtype,
    pub op: RedOp,
    pub root: u32,
    /// The split expression, as written (`None`: no split).
    pub split: Option<&'a str>,
    pub sizes: &'a [u64],
    pub settings: &'a Settings,
    /// Every group (one group of all ranks without a split), members as plan ranks.
    pub groups: &'a [GroupInfo],
}

/// A failure that ends the job on every rank (all ranks learn of it together).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SweepError {
    pub kind: ErrorKind,
    pub message: String,
    /// Some rank's backend cannot go on in this process (see `EngineError::fatal`).
    pub fatal: bool,
    /// Rows measured before the failure.
    pub rows: Vec<Row>,
}

const INIT_SEED: u64 = 99;

fn aggregate(mode: Average, times: &[f64]) -> f64 {
    match mode {
        Average::Rank0 => times.first().copied().unwrap_or(0.0),
        Average::Avg => times.iter().sum::<f64>() / times.len().max(1) as f64,
        Average::Min => times.iter().copied().fold(f64::INFINITY, f64::min),
        Average::Max => times.iter().copied().fold(0.0, f64::max),
    }
}

struct Ctx<'a> {
    my_group: usize,
    group_rank: u64,
    job: &'a JobRun<'a>,
    traffic: Traffic,
}

impl Ctx<'_> {
    fn spec(&self, bytes: u64, placement: Placement, max_bytes: u64) -> OpSpec<'_> {
        let n = self.job.groups[self.my_group].members.len() as u64;
        let counts = self
            .job
            .collective
            .counts_with(bytes, self.job.dtype, n, &self.traffic);
        OpSpec {
            collective: self.job.collective,
            dtype: self.job.dtype,
            op: self.job.op,
            root: self.job.root,
            requested: bytes,
            counts,
            placement,
            span: counts.size_bytes(self.job.dtype),
            max_bytes,
            group_rank: self.group_rank,
            group_size: n,
            traffic: &self.traffic,
        }
    }
}

/// What the caller sees of a sweep while it runs.
pub trait SweepHooks {
    /// Before the warm-up sweep (`None`) and before each size.
    fn before(&mut self, requested: Option<u64>);
    /// After each finished row (rank 0 prints it and journals it). An error means the row could
    /// not be recorded: every rank then stops together.
    fn row(&mut self, row: &Row) -> Result<(), String>;
}

/// Runs one repeat of a job's sweep on this rank. Every rank returns the same rows.
pub fn sweep<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    job: &JobRun<'_>,
    check_seed: &mut u64,
    hooks: &mut dyn SweepHooks,
) -> Result<Vec<Row>, SweepError> {
    let me = world.rank() as u64;
    let my_group = job
        .groups
        .iter()
        .position(|g| g.members.contains(&me))
        .ok_or_else(|| SweepError {
            kind: ErrorKind::Other,
            message: format!("rank {me} is in no split group"),
            fatal: false,
            rows: Vec::new(),
        })?;
    let group_rank = job.groups[my_group]
        .members
        .iter()
        .position(|m| *m == me)
        .unwrap_or(0) as u64;
    let n = job.groups[my_group].members.len() as u64;
    let traffic = super::traffic::for_job(job.collective, job.sizes, job.dtype, n);
    let ctx = Ctx {
        my_group,
        group_rank,
        job,
        traffic: traffic.clone().unwrap_or_default(),
    };
    let s = job.settings;
    let (min, max) = (
        job.sizes.iter().copied().min().unwrap_or(0),
        job.sizes.iter().copied().max().unwrap_or(0),
    );
    let max_bytes = job
        .sizes
        .iter()
        .map(|b| ctx.spec(*b, Placement::OutOfPlace, 0).span)
        .max()
        .unwrap_or(0)
        .max(ctx.spec(max, Placement::OutOfPlace, 0).span);

    // Set-up can hang too (a rank that never joins the communicator): it is watched like a size.
    hooks.before(None);
    let prepared = traffic
        .map(|_| ())
        .and_then(|_| power_of_two(job.collective, n))
        .and_then(|_| engine.configure(&s.knobs, s.reports.memory))
        .and_then(|_| engine.prepare(job.split, my_group, max_bytes, s.check));
    consensus(world, engine, prepared.as_ref().err(), Vec::new())?;

    // Warm-up sweep: doubling from the smallest size, out-of-place, `warmup` ops each.
    hooks.before(None);
    world.barrier();
    let mut w = min.max(1);
    while s.warmup > 0 && w <= max {
        let spec = ctx.spec(w, Placement::OutOfPlace, max_bytes);
        let r = (0..s.warmup as u64)
            .try_for_each(|i| engine.launch(&spec, i))
            .and_then(|_| engine.wait());
        consensus(world, engine, r.as_ref().err(), Vec::new())?;
        w = match w.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }

    let placements: Vec<Placement> = [
        (s.in_place.runs_out_of_place(), Placement::OutOfPlace),
        (s.in_place.runs_in_place(), Placement::InPlace),
    ]
    .into_iter()
    .filter_map(|(on, p)| on.then_some(p))
    .collect();

    let mut rows = Vec::new();
    for &bytes in job.sizes {
        hooks.before(Some(bytes));
        let rank0_group = &job.groups[0];
        let n0 = rank0_group.members.len() as u64;
        let c0 = job
            .collective
            .counts_with(bytes, job.dtype, n0, &ctx.traffic);
        let mut row = Row {
            requested: bytes,
            size: c0.size_bytes(job.dtype),
            count: c0.param,
            out_of_place: None,
            in_place: None,
        };
        for &p in &placements {
            let spec = ctx.spec(bytes, p, max_bytes);
            *check_seed += 1;
            let cell = measure(world, engine, job, &spec, *check_seed, rows.clone())?;
            match p {
                Placement::OutOfPlace => row.out_of_place = Some(cell),
                Placement::InPlace => row.in_place = Some(cell),
            }
        }
        let recorded = hooks.row(&row);
        // Rank 0 alone writes; if it cannot, no rank may go on measuring what nobody keeps, and
        // none may wait in the next collective for a rank that left.
        let failed = world.all_gather_u64(u64::from(recorded.is_err()));
        if failed.iter().any(|f| *f != 0) {
            return Err(SweepError {
                kind: ErrorKind::Output,
                message: recorded
                    .err()
                    .unwrap_or_else(|| "rank 0 could not record the results".into()),
                fatal: true,
                rows,
            });
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Hypercube's exchange pairs rank r with r XOR 2^k: nccl-tests skips other group sizes, baton
/// says why the job did not run.
fn power_of_two(collective: Collective, n: u64) -> Result<(), EngineError> {
    if collective.needs_power_of_two() && !n.is_power_of_two() {
        return Err(EngineError::new(
            ErrorKind::Other,
            format!("{collective} needs a power-of-two rank count; this group has {n} ranks"),
        ));
    }
    Ok(())
}

/// All ranks agree whether any rank failed; a failure ends the job everywhere.
/// A hang or a library error can leave communicators unusable on every rank, not only where it
/// was seen, so all ranks reset their backend then.
fn consensus<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    err: Option<&EngineError>,
    rows: Vec<Row>,
) -> Result<(), SweepError> {
    // Per rank: 0 when fine, else the error kind + 1, with bit 8 set when it is fatal.
    const FATAL: u64 = 1 << 8;
    let flags = world
        .all_gather_u64(err.map_or(0, |e| (e.kind as u64 + 1) | if e.fatal { FATAL } else { 0 }));
    let fatal = flags.iter().any(|f| f & FATAL != 0);
    if let Some((rank, flag)) = flags.iter().enumerate().find(|(_, f)| **f != 0) {
        let code = (*flag & !FATAL) - 1;
        let (kind, message) = match err {
            Some(e) => (e.kind, e.message.clone()),
            None => (
                kind_of(code),
                format!("rank {rank} failed ({:?})", kind_of(code)),
            ),
        };
        // A fatal error leaves nothing to reset: the worker stops and its process ends.
        if !fatal && matches!(kind, ErrorKind::Timeout | ErrorKind::Nccl | ErrorKind::Cuda) {
            engine.reset();
        }
        return Err(SweepError {
            kind,
            message,
            fatal,
            rows,
        });
    }
    Ok(())
}

fn kind_of(v: u64) -> ErrorKind {
    [
        ErrorKind::Nccl,
        ErrorKind::Cuda,
        ErrorKind::Mpi,
        ErrorKind::OutOfMemory,
        ErrorKind::Timeout,
        ErrorKind::Launcher,
    ]
    .into_iter()
    .find(|k| *k as u64 == v)
    .unwrap_or(ErrorKind::Other)
}

/// The timed loop: `iters` iterations of `m` ops each (one NCCL group per iteration when
/// aggregating), iteration indices walking the buffer rotation. Under `blocking` (nccl-tests
/// `-z`) each op (each group, when aggregating) is waited for, with a barrier after it (1) or
/// after the iteration (3, the barrier off the clock). Returns the seconds mode 3 counts,
/// `None` for the others. `marked` (nccl-tests `-I`) puts a mark after `group_start`, before
/// each iteration's ops, and once more after the last (under `blocking` 1 and 3 an
/// iteration's time includes its barrier), and reads the host clock beside each mark and after
/// each iteration's calls (`host_clock`). `arrive` comes first in every iteration: the
/// injected lateness of `BATON_FAULT=late` falls between calls, as a late rank's does.
fn enqueue<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    spec: &OpSpec,
    (iters, m): (u64, u64),
    blocking: Blocking,
    mut marked: Option<&mut Stamps>,
) -> Result<Option<f64>, EngineError> {
    let mut counted = 0.0;
    // -z 3 times each iteration from its start to its wait, the barrier after outside: marks
    // come in pairs (2i, 2i + 1). Every other mode marks iteration boundaries, so an
    // iteration's time holds what that mode waits for after each op, as nccl-tests' events do.
    let paired = blocking == Blocking::Iteration;
    if let Some(s) = marked.as_deref_mut() {
        s.returned();
    }
    for it in 0..iters {
        engine.arrive(it)?;
        let t0 = Instant::now();
        if m > 1 {
            engine.group_start()?;
        }
        if let Some(s) = marked.as_deref_mut() {
            s.start();
            engine.mark(if paired { 2 * it } else { it } as usize)?;
        }
        for a in 0..m {
            engine.launch(spec, it * m + a)?;
            if m == 1 {
                settle(world, engine, blocking)?;
            }
        }
        if m > 1 {
            engine.group_end()?;
            settle(world, engine, blocking)?;
        }
        if paired {
            engine.wait()?;
            if marked.is_some() {
                engine.mark((2 * it + 1) as usize)?;
            }
            counted += t0.elapsed().as_secs_f64();
            world.barrier();
        }
        if let Some(s) = marked.as_deref_mut() {
            s.returned();
        }
    }
    if marked.is_some() && !paired {
        engine.mark(iters as usize)?;
    }
    Ok((blocking == Blocking::Iteration).then_some(counted))
}

/// After one op (or one group) under `blocking` 1 and 2.
fn settle<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    blocking: Blocking,
) -> Result<(), EngineError> {
    if matches!(blocking, Blocking::WaitBarrier | Blocking::Wait) {
        engine.wait()?;
    }
    if blocking == Blocking::WaitBarrier {
        world.barrier();
    }
    Ok(())
}

/// Every rank's iteration times (µs per op) → the cell's iterations.
/// The first `skip` iterations are left out (nccl-tests `-K`); with `paired` marks (`-z 3`)
/// every second gap is a barrier, not an iteration.
fn gather_iterations<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    m: u64,
    (skip, paired): (usize, bool),
    stamps: Option<&Stamps>,
) -> Option<Iterations> {
    let gather = |mine: Vec<f64>, per: f64| -> Vec<Vec<f64>> {
        let mine: Vec<f64> = mine.into_iter().skip(skip).map(|x| x / per).collect();
        world
            .all_gather_string(&iterations::encode(&mine))
            .iter()
            .map(|t| iterations::decode(t))
            .collect()
    };
    // Times per op, as nccl-tests; lateness per iteration (a rank arrives once per group).
    let marks = engine.marked().unwrap_or_default();
    let step = if paired { 2 } else { 1 };
    let times = gather(marks.into_iter().step_by(step).collect(), m as f64);
    let late = gather(
        stamps.map(Stamps::between_calls_us).unwrap_or_default(),
        1.0,
    );
    let mut it = iterations::of_ranks(&times)?;
    iterations::add_between_calls(&mut it, &late);
    Some(it)
}

/// Records what `ops` enqueues into the engine's graph; the recording ends even when `ops`
/// fails, so the stream is usable again.
fn record<E: Engine>(
    engine: &mut E,
    ops: impl FnOnce(&mut E) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    engine.capture_begin()?;
    let r = ops(engine);
    let end = engine.capture_end();
    r.and(end)
}

fn measure<W: World, E: Engine>(
    world: &W,
    engine: &mut E,
    job: &JobRun<'_>,
    spec: &OpSpec,
    check_seed: u64,
    rows: Vec<Row>,
) -> Result<Cell, SweepError> {
    let s = job.settings;
    let m = s.agg_iters.max(1) as u64;
    let graphs = s.cuda_graph as u64;
    // As nccl-tests: no per-iteration timing inside a replayed graph.
    let marked = s.iterations && graphs == 0;
    let mut stamps = marked.then(|| Stamps::with_room(s.iters as usize));
    let primed = (|| -> Result<(), EngineError> {
        if s.check {
            engine.init(spec, INIT_SEED)?;
        }
        if marked {
            let paired = s.knobs.blocking == Blocking::Iteration;
            engine.marks_begin(if paired { 2 * s.iters } else { s.iters + 1 } as usize)?;
        }
        engine.launch(spec, 0)?;
        engine.wait()
    })();
    consensus(world, engine, primed.as_ref().err(), rows.clone())?;
    world.barrier();
    let mut t0 = Instant::now();
    if graphs > 0 {
        // nccl-tests -G: the timed loop is recorded, not run; the clock restarts after a
        // barrier and covers `graphs` replays of the recording.
        let recorded = record(engine, |e| {
            enqueue(world, e, spec, (s.iters as u64, m), Blocking::Off, None).map(|_| ())
        });
        consensus(world, engine, recorded.as_ref().err(), rows.clone())?;
        world.barrier();
        t0 = Instant::now();
    }
    let ops = (s.iters as u64 * m * graphs.max(1)) as f64;
    let mut cpu = 0.0;
    let timed = if graphs > 0 {
        (0..graphs).try_for_each(|_| engine.replay()).map(|_| None)
    } else {
        let loop_ = (s.iters as u64, m);
        enqueue(
            world,
            engine,
            spec,
            loop_,
            s.knobs.blocking,
            stamps.as_mut(),
        )
    }
    .and_then(|counted| {
        cpu = counted.unwrap_or_else(|| t0.elapsed().as_secs_f64()) * 1e6 / ops;
        engine.wait()?;
        Ok(counted.unwrap_or_else(|| t0.elapsed().as_secs_f64()) * 1e6 / ops)
    });
    consensus(world, engine, timed.as_ref().err(), rows.clone())?;
    let times = world.all_gather_f64(timed.unwrap_or(f64::NAN));
    let cpu_times = s.reports.cpu_time.then(|| world.all_gather_f64(cpu));
    let per_iteration = marked
        .then(|| {
            let skip = s.knobs.per_iter_skip as usize;
            let paired = s.knobs.blocking == Blocking::Iteration;
            gather_iterations(world, engine, m, (skip, paired), stamps.as_ref())
        })
        .flatten();
    world.barrier();

    let checked =
        s.check && (spec.placement == Placement::OutOfPlace || job.collective.checks_in_place());
    let wrongs = if s.check {
        // With graphs the checked op is a one-op recording too, as in nccl-tests.
        let w = engine
            .init(spec, check_seed)
            .and_then(|_| {
                if graphs > 0 {
                    record(engine, |e| e.launch(spec, 0)).and_then(|_| engine.replay())
                } else {
                    engine.launch(spec, 0)
                }
            })
            .and_then(|_| engine.wait())
            .and_then(|_| engine.verify(spec, check_seed));
        consensus(world, engine, w.as_ref().err(), rows)?;
        Some(world.all_gather_u64(w.unwrap_or(0)))
    } else {
        None
    };

    let n0 = job.groups[0].members.len() as u64;
    let req = spec.requested;
    let size0 = job
        .collective
        .counts_with(req, job.dtype, n0, spec.traffic)
        .size_bytes(job.dtype);
    let t = aggregate(s.average, &times);
    let (algbw, busbw) = job.collective.bandwidths(size0, t, n0);
    let mut cell = Cell::measured(t, algbw, busbw, None);
    cell.iterations = per_iteration;
    cell.cpu_time_us = cpu_times.map(|c| aggregate(s.average, &c));
    cell.timestamp = s.reports.timestamps.then(crate::results::now_rfc3339);
    if let Some(w) = &wrongs {
        cell.wrong = checked.then(|| w.iter().sum());
    }
    if job.groups.len() > 1 {
        cell.groups = job
            .groups
            .iter()
            .map(|g| {
                let gt: Vec<f64> = g.members.iter().map(|m| times[*m as usize]).collect();
                let gn = g.members.len() as u64;
                let gsize = job
                    .collective
                    .counts_with(req, job.dtype, gn, spec.traffic)
                    .size_bytes(job.dtype);
                let tg = aggregate(s.average, &gt);
                let (a, b) = job.collective.bandwidths(gsize, tg, gn);
                GroupCell {
                    color: g.color,
                    time_us: tg,
                    algbw: a,
                    busbw: b,
                    wrong: wrongs
                        .as_ref()
                        .filter(|_| checked)
                        .map(|w| g.members.iter().map(|m| w[*m as usize]).sum()),
                }
            })
            .collect();
    }
    Ok(cell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::Solo;

    /// Fails `wait` with the given error after `ok_waits` successful ones; counts resets.
    struct Failing {
        ok_waits: u32,
        fatal: bool,
        resets: u32,
    }

    impl Engine for Failing {
        fn prepare(
            &mut self,
            _: Option<&str>,
            _: usize,
            _: u64,
            _: bool,
        ) -> Result<(), EngineError> {
            Ok(())
        }
        fn init(&mut self, _: &OpSpec, _: u64) -> Result<(), EngineError> {
            Ok(())
        }
        fn launch(&mut self, _: &OpSpec, _: u64) -> Result<(), EngineError> {
            Ok(())
        }
        fn wait(&mut self) -> Result<(), EngineError> {
            if self.ok_waits == 0 {
                let mut e = EngineError::new(ErrorKind::Cuda, "an illegal memory access");
                e.fatal = self.fatal;
                return Err(e);
            }
            self.ok_waits -= 1;
            Ok(())
        }
        fn verify(&mut self, _: &OpSpec, _: u64) -> Result<u64, EngineError> {
            Ok(0)
        }
        fn reset(&mut self) {
            self.resets += 1;
        }
        fn flip_output_element(&mut self, _: &OpSpec) -> Result<(), EngineError> {
            Ok(())
        }
    }

    struct Quiet;
    impl SweepHooks for Quiet {
        fn before(&mut self, _: Option<u64>) {}
        fn row(&mut self, _: &Row) -> Result<(), String> {
            Ok(())
        }
    }

    fn run(fatal: bool) -> (SweepError, u32) {
        let settings = Settings::default();
        let groups = [GroupInfo {
            color: 0,
            members: vec![0],
        }];
        let job = JobRun {
            collective: Collective::AllReduce,
            dtype: Dtype::Float,
            op: RedOp::Sum,
            root: 0,
            split: None,
            sizes: &[1024, 2048],
            settings: &settings,
            groups: &groups,
        };
        // Warm-up (2 sizes) and the first size's untimed op pass; its timed loop fails.
        let mut e = Failing {
            ok_waits: 3,
            fatal,
            resets: 0,
        };
        let err = sweep(&Solo, &mut e, &job, &mut 0, &mut Quiet).unwrap_err();
        (err, e.resets)
    }

    /// Counts the marks the loop makes; every op succeeds.
    #[derive(Default)]
    struct Marking {
        begun: usize,
        marks: usize,
        waits: usize,
        configured: Option<crate::plan::knobs::Knobs>,
        /// With a clock: each wait takes 1 µs of it, marks read it, `marked` gives their gaps.
        clock: Option<std::rc::Rc<std::cell::Cell<f64>>>,
        stamps: Vec<f64>,
    }

    /// One rank whose barrier takes 100 µs of the shared clock.
    struct SlowBarrier(std::rc::Rc<std::cell::Cell<f64>>);

    impl World for SlowBarrier {
        fn rank(&self) -> usize {
            0
        }
        fn size(&self) -> usize {
            1
        }
        fn barrier(&self) {
            self.0.set(self.0.get() + 100.0);
        }
        fn all_gather_f64(&self, v: f64) -> Vec<f64> {
            vec![v]
        }
        fn all_gather_u64(&self, v: u64) -> Vec<u64> {
            vec![v]
        }
        fn all_gather_string(&self, s: &str) -> Vec<String> {
            vec![s.to_string()]
        }
        fn broadcast_bytes(&self, _: &mut [u8]) {}
    }

    impl Engine for Marking {
        fn prepare(
            &mut self,
            _: Option<&str>,
            _: usize,
            _: u64,
            _: bool,
        ) -> Result<(), EngineError> {
            Ok(())
        }
        fn init(&mut self, _: &OpSpec, _: u64) -> Result<(), EngineError> {
            Ok(())
        }
        fn launch(&mut self, _: &OpSpec, _: u64) -> Result<(), EngineError> {
            Ok(())
        }
        fn wait(&mut self) -> Result<(), EngineError> {
            self.waits += 1;
            if let Some(c) = &self.clock {
                c.set(c.get() + 1.0);
            }
            Ok(())
        }
        fn configure(
            &mut self,
            knobs: &crate::plan::knobs::Knobs,
            _: bool,
        ) -> Result<(), EngineError> {
            self.configured = Some(*knobs);
            Ok(())
        }
        fn verify(&mut self, _: &OpSpec, _: u64) -> Result<u64, EngineError> {
            Ok(0)
        }
        fn flip_output_element(&mut self, _: &OpSpec) -> Result<(), EngineError> {
            Ok(())
        }
        fn marks_begin(&mut self, _: usize) -> Result<(), EngineError> {
            self.begun += 1;
            Ok(())
        }
        fn mark(&mut self, _: usize) -> Result<(), EngineError> {
            self.marks += 1;
            if let Some(c) = &self.clock {
                self.stamps.push(c.get());
            }
            Ok(())
        }
        fn marked(&mut self) -> Result<Vec<f64>, EngineError> {
            if self.clock.is_none() {
                return Ok(vec![1.0; 7]);
            }
            let gaps = self.stamps.windows(2).map(|w| w[1] - w[0]).collect();
            self.stamps.clear();
            Ok(gaps)
        }
    }

    #[test]
    fn the_loop_marks_iterations_only_when_asked() {
        let run = |iterations: bool| {
            let (e, rows) = knobbed(Settings {
                iters: 7,
                iterations,
                ..Settings::default()
            });
            (e.begun, e.marks, rows)
        };
        let (begun, marks, rows) = run(false);
        assert_eq!((begun, marks), (0, 0), "no per-iteration work when off");
        assert!(rows[0].out_of_place.as_ref().unwrap().iterations.is_none());
        let (begun, marks, rows) = run(true);
        // Both placements: iters + 1 marks each (the start of every iteration, the loop's end).
        assert_eq!((begun, marks), (2, 2 * 8));
        assert!(rows[0].in_place.as_ref().unwrap().iterations.is_some());
    }

    fn knobbed(settings: Settings) -> (Marking, Vec<Row>) {
        swept(&Solo, Marking::default(), settings)
    }

    /// One all_reduce of 1 KiB on one rank of `world`, swept by `e` under `settings`.
    fn swept<W: World>(world: &W, mut e: Marking, settings: Settings) -> (Marking, Vec<Row>) {
        let groups = [GroupInfo {
            color: 0,
            members: vec![0],
        }];
        let job = JobRun {
            collective: Collective::AllReduce,
            dtype: Dtype::Float,
            op: RedOp::Sum,
            root: 0,
            split: None,
            sizes: &[1024],
            settings: &settings,
            groups: &groups,
        };
        let rows = sweep(world, &mut e, &job, &mut 0, &mut Quiet).unwrap();
        (e, rows)
    }

    /// nccl-tests' events: -z 1 marks iteration boundaries (the barrier is inside each
    /// iteration's time), -z 2 has no barrier, -z 3 pairs a start and a stop mark around the
    /// ops and their wait, so the barrier after is outside both the per-iteration times and
    /// the averaged time.
    #[test]
    fn per_iteration_times_hold_what_each_blocking_mode_waits_for() {
        use crate::plan::knobs::Blocking;
        let per_iteration = |blocking| {
            let clock = std::rc::Rc::new(std::cell::Cell::new(0.0));
            let s = Settings {
                iters: 4,
                warmup: 0,
                check: false,
                iterations: true,
                in_place: crate::plan::InPlace::Out,
                knobs: crate::plan::knobs::Knobs {
                    blocking,
                    ..Default::default()
                },
                ..Settings::default()
            };
            let e = Marking {
                clock: Some(clock.clone()),
                ..Marking::default()
            };
            let (_, rows) = swept(&SlowBarrier(clock), e, s);
            let it = rows[0].out_of_place.clone().unwrap().iterations.unwrap();
            it.times_us
        };
        assert_eq!(per_iteration(Blocking::WaitBarrier), vec![101.0; 4]);
        assert_eq!(per_iteration(Blocking::Wait), vec![1.0; 4]);
        assert_eq!(per_iteration(Blocking::Iteration), vec![1.0; 4]);
        assert_eq!(per_iteration(Blocking::Off), vec![0.0; 4]);
    }

    #[test]
    fn blocking_waits_for_every_op_and_the_engine_is_configured_first() {
        use crate::plan::knobs::{Blocking, Knobs, Register};
        let base = |blocking| Settings {
            iters: 5,
            warmup: 0,
            check: false,
            in_place: crate::plan::InPlace::Out,
            knobs: Knobs {
                blocking,
                register: Register::Local,
                ..Knobs::default()
            },
            ..Settings::default()
        };
        // Untimed op + final wait: 2 waits; each mode adds one per timed op.
        let (e, _) = knobbed(base(Blocking::Off));
        assert_eq!(e.waits, 2);
        assert_eq!(e.configured.map(|k| k.register), Some(Register::Local));
        for mode in [Blocking::WaitBarrier, Blocking::Wait, Blocking::Iteration] {
            let (e, _) = knobbed(base(mode));
            assert_eq!(e.waits, 2 + 5, "{mode:?}");
        }
    }

    #[test]
    fn cpu_time_timestamps_and_skipped_iterations_reach_the_cell() {
        let mut s = Settings {
            iters: 7,
            iterations: true,
            in_place: crate::plan::InPlace::Out,
            ..Settings::default()
        };
        s.reports.cpu_time = true;
        s.reports.timestamps = true;
        s.knobs.per_iter_skip = 3;
        let (_, rows) = knobbed(s);
        let c = rows[0].out_of_place.as_ref().unwrap();
        assert!(c.cpu_time_us.is_some_and(|t| t >= 0.0));
        assert!(c.timestamp.as_deref().is_some_and(|t| t.contains('T')));
        let it = c.iterations.as_ref().unwrap();
        assert_eq!(it.times_us.len(), 4, "7 iterations, the first 3 skipped");
        let (_, rows) = knobbed(Settings::default());
        let c = rows[0].out_of_place.as_ref().unwrap();
        assert!(c.cpu_time_us.is_none() && c.timestamp.is_none());
    }

    #[test]
    fn a_fatal_error_ends_the_sweep_without_a_reset() {
        let (err, resets) = run(true);
        assert!(err.fatal);
        assert_eq!(err.kind, ErrorKind::Cuda);
        assert_eq!(resets, 0, "nothing to reset in a dead context");
        let (err, resets) = run(false);
        assert!(!err.fatal);
        assert_eq!(resets, 1, "a plain CUDA error gets fresh communicators");
    }
}
