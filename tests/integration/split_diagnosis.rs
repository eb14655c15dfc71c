//! The split diagnosis demo of `plans/examples/split-diagnosis-cpu.yaml` on 8 host-MPI ranks:
//! every group of `DIV 4`, `MOD 2` and `OR 1` timed on its own, and one pair slowed through
//! mpirun's MPMD syntax named by `group_spread` in the verdict, JUnit and the HTML report.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::Output;

use baton::results::{self, JobResult, JobStatus};

/// The shipped plan: this test is what keeps the example honest.
fn plan() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/examples/split-diagnosis-cpu.yaml")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("baton-split-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `mpirun … -np A baton-mpi run PLAN -o OUT [: -np B -x BATON_FAULT=FAULT baton-mpi run …]`:
/// with a fault, the last `slowed` ranks are a second app context that alone gets the variable.
fn mpirun(out: &Path, slowed: Option<(usize, &str)>) -> Output {
    let worker = env!("CARGO_BIN_EXE_baton-mpi");
    let plan = plan();
    let app = |n: usize| {
        vec![
            "-np".to_string(),
            n.to_string(),
            worker.to_string(),
            "run".into(),
            plan.to_str().unwrap().into(),
            "-o".into(),
            out.to_str().unwrap().into(),
        ]
    };
    let mut args: Vec<String> = vec!["--oversubscribe".into(), "--allow-run-as-root".into()];
    match slowed {
        None => args.extend(app(8)),
        Some((n, fault)) => {
            args.extend(app(8 - n));
            args.push(":".into());
            let mut second = app(n);
            second.splice(2..2, ["-x".to_string(), format!("BATON_FAULT={fault}")]);
            args.extend(second);
        }
    }
    std::process::Command::new("mpirun")
        .args(&args)
        .env_remove("BATON_FAULT")
        .output()
        .unwrap()
}

fn job<'r>(r: &'r results::Results, collective: &str, split: &str) -> &'r JobResult {
    r.jobs
        .iter()
        .find(|j| j.collective.name() == collective && j.split.as_deref() == Some(split))
        .unwrap_or_else(|| panic!("no {collective} job split {split}"))
}

fn members(j: &JobResult) -> Vec<(u64, Vec<u64>)> {
    j.groups
        .iter()
        .map(|g| (g.color, g.members.clone()))
        .collect()
}

/// Median over sizes of each group's time at that size, by color.
fn group_times(j: &JobResult) -> Vec<(u64, f64)> {
    let mut by: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for row in &j.repeats[0].rows {
        for g in &row.out_of_place.as_ref().unwrap().groups {
            by.entry(g.color).or_default().push(g.time_us);
        }
    }
    by.into_iter()
        .map(|(c, mut v)| {
            v.sort_by(f64::total_cmp);
            (c, v[v.len() / 2])
        })
        .collect()
}

/// Eight oversubscribed ranks per run: the two tests must not share the two cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn healthy_run_times_every_group_of_every_split() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = scratch("healthy");
    let out = d.join("out");
    let o = mpirun(&out, None);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    // On two shared cores a healthy group can lag by chance; only group_spread may fail then.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stdout}\n{stderr}");
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 6, "2 collectives x 3 splits");
    let halves = vec![(0, (0..4).collect()), (1, (4..8).collect())];
    let parity = vec![(0, vec![0, 2, 4, 6]), (1, vec![1, 3, 5, 7])];
    let pairs = vec![
        (1, vec![0, 1]),
        (3, vec![2, 3]),
        (5, vec![4, 5]),
        (7, vec![6, 7]),
    ];
    for c in ["all_reduce", "sendrecv"] {
        for (split, want) in [("DIV 4", &halves), ("MOD 2", &parity), ("OR 1", &pairs)] {
            let j = job(&r, c, split);
            assert_eq!(j.status, JobStatus::Completed, "{}", j.id);
            assert_eq!(j.layout.nranks, 8);
            assert_eq!(&members(j), want, "{}", j.id);
            let rows = &j.repeats[0].rows;
            assert_eq!(rows.len(), 4, "4K, 16K, 64K, 256K");
            for row in rows {
                let cell = row.out_of_place.as_ref().unwrap();
                let colors: Vec<u64> = cell.groups.iter().map(|g| g.color).collect();
                let want_colors: Vec<u64> = want.iter().map(|(c, _)| *c).collect();
                assert_eq!(colors, want_colors, "{} at {}", j.id, row.requested);
                assert!(
                    cell.groups
                        .iter()
                        .all(|g| g.busbw > 0.0 && g.wrong == Some(0))
                );
                // `average: max`: the job's time is its slowest rank's, so its slowest group's.
                let slowest = cell.groups.iter().map(|g| g.time_us).fold(0.0, f64::max);
                assert_eq!(cell.time_us, Some(slowest), "{} at {}", j.id, row.requested);
            }
        }
    }
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    for failure in junit.split("<failure").skip(1) {
        let message = failure.split("</failure>").next().unwrap_or("");
        assert!(
            message.contains("group"),
            "a healthy run fails only on noise between groups: {message}"
        );
    }
}

#[test]
fn a_slowed_pair_started_apart_is_named_by_its_or_1_group() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = scratch("mpmd");
    let out = d.join("out");
    // 2 ms per op against the ~0.1-0.5 ms an oversubscribed CPU op takes here (measured).
    let o = mpirun(&out, Some((2, "slow:us=2000")));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    let r = results::read(&out.join("results.json")).unwrap();
    for c in ["all_reduce", "sendrecv"] {
        // The pair of ranks 6 and 7 is the slow one; the other pairs are not slowed at all.
        let t = group_times(job(&r, c, "OR 1"));
        let (slow, rest) = t.split_last().unwrap();
        assert_eq!(slow.0, 7);
        for (color, us) in rest {
            assert!(
                slow.1 > us + 1000.0,
                "{c}: group {color} {us} us vs {slow:?}"
            );
        }
        // DIV 4 narrows it to the upper half.
        let t = group_times(job(&r, c, "DIV 4"));
        assert!(t[1].1 > t[0].1 + 1000.0, "{c}: {t:?}");
    }
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    let or1 = "one slow split group: group 7 (ranks 6-7";
    for c in ["all_reduce", "sendrecv"] {
        let case = junit
            .split("<testcase")
            .filter(|t| t.contains(c) && t.contains("split=OR 1"))
            .find(|t| t.contains("<failure"))
            .unwrap_or_else(|| panic!("no failing OR 1 {c} case\n{junit}"));
        assert!(case.contains(or1), "{case}");
        assert!(case.contains("slowest group 7 (ranks 6-7"), "{case}");
    }
    assert!(
        junit.contains("one slow split group: group 1 (ranks 4-7"),
        "{junit}"
    );
    let html = std::fs::read_to_string(out.join("report/report.html")).unwrap();
    assert!(html.contains(or1), "the report names the pair");
    // A host MPI run is never sent to check NVLink: its advice names cores and memory.
    assert!(!html.contains("NVLink"), "GPU advice in a host report");
    assert!(
        html.contains("cores and memory"),
        "host advice for the slow group"
    );
}
