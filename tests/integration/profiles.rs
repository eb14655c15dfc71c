//! Hardware profiles through the real binary: `busbw: ">= 90% of profile"` graded against the
//! profile picked from the recorded GPUs or named by the plan, and what `check` says.

use crate::common;

use common::*;

fn expect_profile(share: &str, at: &str) -> String {
    format!(
        "{ALLREDUCE_SWEEP}    expect:\n      - busbw: \"{share} of profile\"\n        at: \"{at}\"\n"
    )
}

#[test]
fn the_profile_is_picked_from_the_recorded_gpus_and_graded_per_size() {
    let d = tmp("profile_picked");
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let pl = two_gpu_plan(&d, "p.yaml", &expect_profile(">= 90%", ">= 1G"));
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // 2 × NVIDIA H200 recorded: our measured row, 345 GB/s from 4G. Above what this pair
    // measures, it fails at the sizes it misses.
    let pl = two_gpu_plan(&d, "q.yaml", &expect_profile(">= 101%", ">= 1G"));
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = stdout(&o);
    assert!(out.contains("busbw 330.82 GB/s < 333.3 GB/s (101% of h200-sxm-2's 330 GB/s for all_reduce 1G..2G [NCCL >=2.28, <2.29]) at 1G"), "{out}");
}

#[test]
fn a_named_profile_and_a_missing_figure_say_so() {
    let d = tmp("profile_named");
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let pl = write(
        &d,
        "p.yaml",
        &format!(
            "version: 1\nname: p\nbackend: nccl\nprofile: h200-sxm-8\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n{}",
            expect_profile(">= 90%", "8G")
        ),
    );
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = stdout(&o);
    assert!(
        out.contains("< 427.5 GB/s (90% of h200-sxm-8's 475 GB/s for all_reduce >= 8G) at 8G"),
        "{out}"
    );
    let pl = two_gpu_plan(&d, "m.yaml", &expect_profile(">= 90%", "1M"));
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("profile h200-sxm-2 has no all_reduce figure at 1M (it has: all_reduce >= 4G [NCCL >=2.28, <2.29], all_reduce 1G..2G [NCCL >=2.28, <2.29]"),
        "{}",
        show(&o)
    );
}

#[test]
fn check_names_the_profile_and_refuses_criteria_it_cannot_grade() {
    let d = tmp("profile_check");
    let picked = two_gpu_plan(&d, "a.yaml", &expect_profile(">= 90%", ">= 1G"));
    let o = baton(&["check", p(&picked)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("profile: picked at grade time from the recorded GPUs"),
        "{}",
        show(&o)
    );
    let named = |name: &str, at: &str| {
        write(
            &d,
            "n.yaml",
            &format!(
                "version: 1\nname: n\nbackend: nccl\nprofile: {name}\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n{}",
                expect_profile(">= 90%", at)
            ),
        )
    };
    let o = baton(&["check", p(&named("h200-sxm-8", ">= 8G"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("profile: h200-sxm-8 v1 (8x H200 SXM"),
        "{}",
        show(&o)
    );
    let o = baton(&["check", p(&named("h200-sxm-8", ">= 1G"))]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    assert!(
        stderr(&o).contains("test `allreduce`: `busbw … of profile` has no figure in profile h200-sxm-8 for all_reduce at 1G, 2G, 4G"),
        "{}",
        show(&o)
    );
    let o = baton(&["check", p(&named("h200-sxm8", ">= 8G"))]);
    assert!(
        stderr(&o).contains("did you mean `h200-sxm-8`"),
        "{}",
        show(&o)
    );
    // A plan's own profiles/ directory is read, and replaces a built-in of the same name.
    std::fs::create_dir_all(d.join("profiles")).unwrap();
    write(
        &d.join("profiles"),
        "h200-sxm-8.yaml",
        "name: h200-sxm-8\nversion: 1\ndescription: site copy\ngpu: H200\ngpus: 8\nfigures:\n  # our own acceptance run, 2026-11\n  - { collective: all_reduce, at: \">= 1G\", busbw: 470, source: \"https://example.org/run\" }\n",
    );
    let o = baton(&["check", p(&named("h200-sxm-8", ">= 1G"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stdout(&o).contains("(site copy)"), "{}", show(&o));
}

/// A plan whose own profile `site-h200` holds `rows` (figure lines) for the fixtures' 2 × H200.
fn site_profile_plan(d: &std::path::Path, rows: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(d.join("profiles")).unwrap();
    write(
        &d.join("profiles"),
        "site-h200.yaml",
        &format!(
            "name: site-h200\nversion: 1\ndescription: site rows\ngpu: H200\ngpus: 2\nfigures:\n  # our own runs\n{rows}"
        ),
    );
    write(
        d,
        "p.yaml",
        &format!(
            "version: 1\nname: p\nbackend: nccl\nprofile: site-h200\nlaunch: {{ nodes: 1, ranks_per_node: 2 }}\ntests:\n{}",
            expect_profile(">= 90%", "8G")
        ),
    )
}

#[test]
fn a_row_for_another_nccl_is_graded_and_says_so() {
    let d = tmp("profile_nccl_row");
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    // The fixture ran NCCL 2.28.3: of two rows for all_reduce at 8G the 2.28 one is used, and
    // nothing is noted.
    let pl = site_profile_plan(
        &d,
        "  - { collective: all_reduce, at: \">= 4G\", busbw: 500, nccl: \"<2.28\", source: s }\n  - { collective: all_reduce, at: \">= 4G\", busbw: 340, nccl: \">=2.28, <2.29\", source: s }\n",
    );
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    // (The job's own "measured with NCCL …" line is there; the note is not.)
    assert!(!stdout(&o).contains("row for NCCL"), "{}", show(&o));
    // `check` cannot know which row applies; it names the NCCL ranges there are.
    let o = baton(&["check", p(&pl)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("profile: site-h200 v1 (site rows); rows for NCCL <2.28; >=2.28, <2.29 (graded by the NCCL the results record)"),
        "{}",
        show(&o)
    );
    // Only a row for NCCL < 2.28: graded against it, and the reason says whose row it is.
    let pl = site_profile_plan(
        &d,
        "  - { collective: all_reduce, at: \">= 4G\", busbw: 500, nccl: \"<2.28\", source: s }\n",
    );
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stdout(&o).contains("profile site-h200 row for NCCL <2.28; measured with 2.28.3"),
        "{}",
        show(&o)
    );
    let md = report_md(&d, &pl, &r);
    assert!(
        md.contains("row for NCCL <2.28; measured with 2.28.3"),
        "{md}"
    );
    // A pass against another NCCL's row says so too.
    let pl = site_profile_plan(
        &d,
        "  - { collective: all_reduce, at: \">= 4G\", busbw: 300, nccl: \"2.27\", source: s }\n",
    );
    let o = baton(&["grade", p(&pl), p(&r), "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("profile site-h200 row for NCCL 2.27; measured with 2.28.3"),
        "{}",
        show(&o)
    );
}

#[test]
fn a_bad_nccl_range_is_placed_and_refused() {
    let d = tmp("profile_bad_range");
    let pl = site_profile_plan(
        &d,
        "  - { collective: all_reduce, at: \">= 4G\", busbw: 500, nccl: \">=2.28, <two\", source: s }\n",
    );
    let o = baton(&["check", p(&pl)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let err = stderr(&o);
    assert!(
        err.contains("site-h200.yaml: not a profile: figure 1: `nccl` at line 8, column")
            && err.contains("is not an NCCL version range: part 2 is not a version"),
        "{}",
        show(&o)
    );
    assert!(!err.contains("two"), "{err}");
}

/// nccl-tests 2.19's JSON keeps its command line: a `-x 1` there is the job's CTA policy, so the
/// profile row for policy 1 grades it. (The fixture's `args` gain `-x 1 -R 1` here; the run
/// itself had neither, which is why this is a constructed log.)
#[test]
fn an_ingested_logs_cta_policy_picks_the_profile_row() {
    let d = tmp("profile_ingested_policy");
    let real = std::fs::read_to_string(fixture("all_gather.json")).unwrap();
    let asked = real.replacen(
        r#""-g","2","#,
        r#""-g","2","-x","1","--local_register=1","#,
        1,
    );
    assert_ne!(asked, real, "the fixture's args changed");
    let log = write(&d, "all_gather.json", &asked);
    let r = ingest(&d, "r.json", &[&log], Some("gather"));
    let with = results(&r).jobs[0].measured_with.clone().unwrap();
    assert_eq!(
        (
            with.nccl_version.as_deref(),
            with.register,
            with.cta_policy,
            with.blocking
        ),
        (Some("2.28.3"), Some(1), Some(1), Some(0))
    );
    std::fs::create_dir_all(d.join("profiles")).unwrap();
    write(
        &d.join("profiles"),
        "site-h200.yaml",
        "name: site-h200\nversion: 1\ndescription: site rows\ngpu: H200\ngpus: 2\nfigures:\n  - { collective: all_gather, at: \">= 512M\", busbw: 900, cta_policy: 0, source: s }\n  - { collective: all_gather, at: \">= 512M\", busbw: 250, cta_policy: 1, source: s }\n",
    );
    let pl = write(
        &d,
        "p.yaml",
        "version: 1\nname: p\nbackend: nccl\nprofile: site-h200\nlaunch: { nodes: 1, ranks_per_node: 2 }\ntests:\n  - name: gather\n    collective: all_gather\n    sizes: { from: 8, to: 1G, factor: 4 }\n    expect:\n      - busbw: \">= 90% of profile\"\n        at: \"512M\"\n",
    );
    let o = baton(&["grade", p(&pl), p(&r)]);
    assert_eq!(code(&o), 0, "the policy-1 row (250) applies: {}", show(&o));
}

/// A floor above the figure the plan's own profile gives the hardware: the machines it
/// describes fail it as written. `baton check` warns, naming the test, the figure and its
/// source; a floor under the figure says nothing.
#[test]
fn check_warns_of_a_floor_above_the_profiles_figure() {
    let d = tmp("profile_floor_above");
    let plan = |floor: &str| {
        write(
            &d,
            "f.yaml",
            &format!(
                "version: 1\nname: f\nbackend: nccl\nprofile: h200-sxm-8\nlaunch: {{ nodes: 1, ranks_per_node: 8 }}\ntests:\n  - name: ar\n    collective: all_reduce\n    sizes: [8G]\n    expect:\n      - busbw: \"{floor}\"\n"
            ),
        )
    };
    let o = baton(&["check", p(&plan(">= 500 GB/s"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stderr(&o).contains("warning: ")
            && stderr(&o).contains("test `ar`: busbw floor 500 GB/s at 8G is above profile h200-sxm-8's figure for all_reduce, 475 GB/s (https://github.com/NVIDIA/nccl-tests/issues/272)"),
        "{}",
        show(&o)
    );
    let o = baton(&["check", p(&plan(">= 105% of profile"))]);
    assert!(
        stderr(&o).contains("`busbw >= 105% of profile` at 8G is above"),
        "{}",
        show(&o)
    );
    let o = baton(&["check", p(&plan(">= 425 GB/s"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(!stderr(&o).contains("warning"), "{}", show(&o));
}
