//! `relative: { to, busbw }` between jobs of one run, through the real binary: phase D's
//! "alltoall within 15% of all_reduce busbw", size by size.

mod common;

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
