//! `relative: { to, busbw }` between jobs of one run, through the real binary: phase D's
//! "alltoall within 15% of all_reduce busbw", size by size.

use crate::common;

use common::*;

fn phase_d(share: &str, to: &str) -> String {
    format!(
        "{ALLREDUCE_SWEEP}  - name: alltoall\n    collective: alltoall\n    sizes: {{ from: 1M, to: 4G, factor: 4 }}\n    expect:\n      - relative: {{ to: {to}, busbw: \"{share}\" }}\n        at: 1G..4G\n"
    )
}

#[test]
fn alltoall_within_15_percent_of_all_reduce_is_graded_at_matching_sizes() {
    let d = tmp("relative_phase_d");
    let r = healthy(&d);
    let ok = two_gpu_plan(&d, "ok.yaml", &phase_d(">= 85%", "allreduce"));
    let o = baton(&["grade", p(&ok), p(&r)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // 337.29 / 343.42 GB/s at 4G (out-of-place) is 98.2%.
    let tight = two_gpu_plan(&d, "tight.yaml", &phase_d(">= 99%", "allreduce"));
    let o = baton(&["grade", p(&tight), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("busbw 337.29 GB/s is 98.2% of allreduce's 343.42 GB/s at 4G (alltoall float, out-of-place), expected >= 99%"),
        "{}",
        show(&o)
    );
}

#[test]
fn an_unknown_target_is_a_check_error_with_a_suggestion() {
    let d = tmp("relative_unknown");
    let pl = two_gpu_plan(&d, "p.yaml", &phase_d(">= 85%", "allreduc"));
    let o = baton(&["check", p(&pl)]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    assert!(
        stderr(&o).contains("test `alltoall`: `relative.to: allreduc` is no test or job of this plan — did you mean `allreduce`?"),
        "{}",
        show(&o)
    );
    let pl = two_gpu_plan(&d, "q.yaml", &phase_d("<= 85%", "allreduce"));
    let o = baton(&["check", p(&pl)]);
    assert!(stderr(&o).contains("is a least share"), "{}", show(&o));
}

/// Phase C against phase B, across plans: `results:` names the other run's results.json
/// (relative to the plan) and `to` its job. The healthy run is within 10% of itself; the P2P →
/// SHM incident is not, and the verdict names the other file's job and numbers.
#[test]
fn another_runs_job_is_compared_through_results() {
    let d = tmp("relative_cross_plan");
    let b = ingest(
        &d,
        "phase-b.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let b_name = b.file_name().unwrap().to_str().unwrap().to_string();
    let tests = format!(
        "{ALLREDUCE_SWEEP}    expect:\n      - relative: {{ to: allreduce, busbw: \">= 90%\", results: {b_name} }}\n        at: 1G\n"
    );
    let c = two_gpu_plan(&d, "phase-c.yaml", &tests);
    let o = baton(&["check", p(&c)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = baton(&["grade", p(&c), p(&b)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let slow = ingest(
        &d,
        "slow.json",
        &[&fixture("all_reduce_p2p_disabled_debug.txt")],
        Some("allreduce"),
    );
    let o = baton(&["grade", p(&c), p(&slow)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(stdout(&o).contains("of allreduce's"), "{}", show(&o));
    // A results file without the job says what it has.
    let other = two_gpu_plan(
        &d,
        "other.yaml",
        &format!(
            "{ALLREDUCE_SWEEP}    expect:\n      - relative: {{ to: nosuch, busbw: \">= 90%\", results: {b_name} }}\n"
        ),
    );
    let o = baton(&["grade", p(&other), p(&b)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("has no job or test `nosuch`"),
        "{}",
        show(&o)
    );
}

/// A rendered script grades the copy of the plan it carries, in its output directory, where
/// `results: phase-b.json` is not: the script says where the plan was rendered from
/// (`BATON_PLAN_DIR`) and the relative file is found there, as if the plan were graded in place.
#[test]
fn a_carried_copy_of_the_plan_finds_its_files_where_it_was_rendered_from() {
    let d = tmp("relative_carried_copy");
    let b = ingest(
        &d,
        "phase-b.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let tests = format!(
        "{ALLREDUCE_SWEEP}    expect:\n      - relative: {{ to: allreduce, busbw: \">= 90%\", results: phase-b.json }}\n        at: 1G\n"
    );
    let c = two_gpu_plan(&d, "phase-c.yaml", &tests);
    let out = d.join("job-out");
    std::fs::create_dir_all(&out).unwrap();
    let copy = write(&out, "plan.yaml", &read(&c));
    let o = baton(&["grade", p(&copy), p(&b)]);
    assert_eq!(
        code(&o),
        1,
        "the copy alone has no phase-b.json beside it: {}",
        show(&o)
    );
    let o = baton_env(&["grade", p(&copy), p(&b)], &[("BATON_PLAN_DIR", p(&d))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stdout(&o).contains("PASS"), "{}", show(&o));
    let scripts = d.join("scripts");
    let o = baton(&["render", p(&c), "-t", "slurm", "-o", p(&scripts)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let script = std::fs::read_dir(&scripts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|f| f.extension().is_some_and(|x| x == "sbatch"))
        .expect("an sbatch script");
    // Hostile: the variable cannot make a system tree the plan's directory, and what it points
    // at is never quoted.
    let env_plan = write(
        &out,
        "environ.yaml",
        &read(&c).replace("results: phase-b.json", "results: environ"),
    );
    let o = baton_env(
        &["grade", p(&env_plan), p(&b)],
        &[
            ("BATON_PLAN_DIR", "/proc/self"),
            ("CI_JOB_TOKEN", "glpat-PLANDIR"),
        ],
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        show(&o).contains("/proc") && !show(&o).contains("glpat-PLANDIR"),
        "{}",
        show(&o)
    );
    let dir = std::fs::canonicalize(&d).unwrap();
    assert!(
        read(&script).contains(&format!("export BATON_PLAN_DIR={}", p(&dir)))
            || read(&script).contains(&format!("export BATON_PLAN_DIR='{}'", p(&dir))),
        "{}",
        read(&script)
    );
}

/// #21: phase C against phase B run over node sets. Phase B's results hold the job once per
/// pair (`allreduce@r1:n[1-2]`, …), so `to: allreduce` with `results:` is the median of those
/// pairs: one slow pair does not move it, and the verdict says what it compared with.
#[test]
fn another_runs_node_sets_are_compared_through_their_median() {
    let d = tmp("relative_node_sets");
    let b = ingest(
        &d,
        "phase-b.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let mut v: serde_json::Value = serde_json::from_str(&read(&b)).unwrap();
    let job = v["jobs"][0].clone();
    let pairs = [(1, "n1", "n2"), (1, "n3", "n4"), (2, "n1", "n3")];
    let sets: Vec<serde_json::Value> = pairs
        .iter()
        .enumerate()
        .map(|(k, (round, a, b))| {
            let mut j = job.clone();
            j["id"] = format!("allreduce@r{round}:{a},{b}").into();
            j["node_set"] = serde_json::json!({
                "job": "allreduce", "round": round, "index": k, "hosts": [a, b]
            });
            if k == 2 {
                // The slow pair: ten times the time at every size.
                for rep in j["repeats"].as_array_mut().unwrap() {
                    for row in rep["rows"].as_array_mut().unwrap() {
                        for place in ["out_of_place", "in_place"] {
                            let t = row[place]["time_us"].as_f64().unwrap();
                            row[place]["time_us"] = (t * 10.0).into();
                        }
                    }
                }
            }
            j
        })
        .collect();
    v["jobs"] = sets.into();
    let pairs_file = d.join("phase-b-pairs.json");
    std::fs::write(&pairs_file, serde_json::to_string(&v).unwrap()).unwrap();
    let tests = format!(
        "{ALLREDUCE_SWEEP}    expect:\n      - relative: {{ to: allreduce, busbw: \">= 90%\", results: phase-b-pairs.json }}\n        at: 1G\n"
    );
    let c = two_gpu_plan(&d, "phase-c.yaml", &tests);
    let o = baton(&["grade", p(&c), p(&b)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let slow = ingest(
        &d,
        "slow.json",
        &[&fixture("all_reduce_p2p_disabled_debug.txt")],
        Some("allreduce"),
    );
    let o = baton(&["grade", p(&c), p(&slow)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("the median of allreduce's 3 node sets"),
        "{}",
        show(&o)
    );
}
