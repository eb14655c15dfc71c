//! The fleet's outputs (`--metrics`, with `--csv`, `--junit` and a run's own files) as a
//! stranger may have prepared their paths (#36): every target judged before any work, two
//! outputs never on one file, and a run whose output directory cannot be written still
//! reports what it can.

use std::path::Path;

use crate::common::{ALLREDUCE_SWEEP, baton, code, fixture, ingest, p, show, tmp, two_gpu_plan};

/// A plan named `m` and results that grade it: a directory `--metrics` gets `baton-m.prom`.
fn graded_inputs(d: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let plan = two_gpu_plan(d, "m", ALLREDUCE_SWEEP);
    let results = ingest(d, "r.json", &[&fixture("all_reduce.txt")], None);
    (plan, results)
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(p(path)).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Finding 17: `--metrics DIR` whose `baton-PLAN.prom` is a FIFO, a link or a device is refused
/// with exit 2 before grading: no junit.xml written, the thing left as it was.
#[test]
fn a_metrics_directory_whose_file_is_not_one_is_refused_before_any_work() {
    let d = tmp("fleet-metrics-target");
    let (plan, results) = graded_inputs(&d);
    let dir = d.join("textfile");
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("baton-m.prom");
    let victim = d.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let mut kinds = vec!["fifo", "link"];
    // A device node of our own making (a tarball unpacked as root can hold one): as root only.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        kinds.push("device");
    }
    for kind in kinds {
        let _ = std::fs::remove_file(&target);
        match kind {
            "fifo" => mkfifo(&target),
            "link" => std::os::unix::fs::symlink(&victim, &target).unwrap(),
            _ => {
                let c = std::ffi::CString::new(p(&target)).unwrap();
                // SAFETY: a NUL-terminated path; 1:5 is /dev/zero's number.
                let made =
                    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 5)) };
                assert_eq!(made, 0);
            }
        }
        let junit = d.join("junit.xml");
        let _ = std::fs::remove_file(&junit);
        let o = baton(&[
            "grade",
            p(&plan),
            p(&results),
            "--junit",
            p(&junit),
            "--metrics",
            p(&dir),
        ]);
        assert_eq!(code(&o), 2, "{kind}: {}", show(&o));
        assert!(show(&o).contains("baton-m.prom"), "{kind}: {}", show(&o));
        assert!(!junit.exists(), "{kind}: graded and wrote before refusing");
        let m = std::fs::symlink_metadata(&target).unwrap();
        assert!(!m.is_file(), "{kind}: replaced");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}

/// Finding 19: two outputs on one path are refused with exit 2, naming both flags, and
/// nothing is written.
#[test]
fn two_outputs_on_one_path_are_refused_naming_both() {
    let d = tmp("fleet-twice");
    let (plan, results) = graded_inputs(&d);
    let x = d.join("x.out");
    for (a, b) in [
        ("--csv", "--junit"),
        ("--csv", "--metrics"),
        ("--junit", "--metrics"),
    ] {
        let o = baton(&["grade", p(&plan), p(&results), a, p(&x), b, p(&x)]);
        assert_eq!(code(&o), 2, "{a} {b}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(a) && err.contains(b), "{a} {b}: {err}");
        assert!(!x.exists(), "{a} {b}: written");
    }
    // The same file by another spelling.
    let o = baton(&[
        "grade",
        p(&plan),
        p(&results),
        "--csv",
        p(&x),
        "--junit",
        &format!("{}/./x.out", p(&d)),
    ]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    // `run --metrics` on one of the run's own files in -o.
    let out = d.join("out");
    let junit = out.join("junit.xml");
    let o = baton(&["run", p(&plan), "-o", p(&out), "--metrics", p(&junit)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(show(&o).contains("--metrics and -o"), "{}", show(&o));
}

/// Finding 11: a run that cannot write its output directory exits 3 and still writes its
/// metrics (every job failed, exit 3 recorded): the fleet hears of it.
#[test]
fn a_run_that_cannot_write_its_output_directory_still_reports() {
    let d = tmp("fleet-unwritable");
    let plan = crate::common::mpi_plan(&d, "m", "", "    sizes: [8]\n");
    let metrics = d.join("m.prom");
    // /proc takes no new directory, whoever runs this.
    let o = baton(&[
        "run",
        p(&plan),
        "-o",
        "/proc/baton-no-such-dir/out",
        "--metrics",
        p(&metrics),
    ]);
    assert_eq!(code(&o), 3, "{}", show(&o));
    let text = std::fs::read_to_string(&metrics).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
    assert!(text.contains("baton_run_exit_code{plan=\"m\"} 3"), "{text}");
}
