//! nccl-tests' engine flags as plan settings, through the real binary: `baton check` refuses each
//! one the host backend cannot do where it is written, and bad values with their location.

use crate::common::{baton, code, p, stderr, tmp, write};

fn plan(backend: &str, body: &str) -> String {
    format!(
        "version: 1\nname: t\nbackend: {backend}\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n{body}"
    )
}

/// `baton check` of `text`: exit code and what it said.
fn check(name: &str, text: &str) -> (i32, String) {
    let dir = tmp(name);
    let f = write(&dir, "plan.yaml", text);
    let o = baton(&["check", p(&f)]);
    (code(&o), stderr(&o))
}

#[test]
fn check_refuses_each_nccl_only_setting_on_the_mpi_backend_where_it_is_written() {
    for (key, value) in [
        ("register", "1"),
        ("cta_policy", "0"),
        ("device_api", "1"),
        ("device_ctas", "8"),
        ("null_stream", "true"),
        ("memory", "true"),
    ] {
        let (rc, err) = check(
            &format!("knobs_mpi_{key}"),
            &plan("mpi", &format!("    {key}: {value}\n")),
        );
        assert_eq!(rc, 2, "{key}: {err}");
        assert!(
            err.contains(&format!("`{key}: {value}` needs the nccl backend")),
            "{key}: {err}"
        );
        assert!(
            err.contains("plan.yaml:8:"),
            "{key} located at its line: {err}"
        );
    }
    // Under `defaults`, told once where it is written.
    let text = plan("mpi", "").replace("tests:\n", "defaults: { register: 2 }\ntests:\n");
    let (rc, err) = check("knobs_mpi_defaults", &text);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("plan.yaml:4:"), "{err}");
    assert_eq!(err.matches("needs the nccl backend").count(), 1, "{err}");
}

#[test]
fn the_host_backend_keeps_what_it_can_do() {
    let body = "    blocking: 1\n    cpu_time: true\n    timestamps: true\n    run_cycles: 2\n    iterations: true\n    per_iter_skip: 1\n    register: 0\n";
    let (rc, err) = check("knobs_mpi_ok", &plan("mpi", body));
    assert_eq!(rc, 0, "{err}");
}

#[test]
fn bad_values_are_refused_with_their_location() {
    for (body, want) in [
        ("    register: 3\n", "`register: 3` is not a register mode"),
        (
            "    cta_policy: 7\n",
            "`cta_policy: 7` is not a cta_policy mode",
        ),
        ("    blocking: 9\n", "`blocking: 9` is not a blocking mode"),
        ("    device_api: 1\n", "`device_api` needs `register: 2`"),
        ("    parallel_init: false\n", "`parallel_init: false`"),
    ] {
        let (rc, err) = check("knobs_bad", &plan("nccl", body));
        assert_eq!(rc, 2, "{body}: {err}");
        assert!(err.contains(want), "{body}: {err}");
        assert!(err.contains("plan.yaml:8:"), "{body}: {err}");
    }
    let (rc, err) = check(
        "knobs_ok",
        &plan(
            "nccl",
            "    register: 2\n    cta_policy: 2\n    device_api: 1\n    device_ctas: 8\n",
        ),
    );
    assert_eq!(
        rc, 0,
        "a device implementation baton has a kernel for is a valid plan: {err}"
    );
    let (rc, err) = check(
        "knobs_device_bf16",
        &plan(
            "nccl",
            "    register: 2\n    device_api: 1\n    dtype: bfloat16\n",
        ),
    );
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("`device_api` has no bfloat16 kernel") && err.contains("plan.yaml:9:"),
        "{err}"
    );
}
