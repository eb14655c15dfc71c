//! Times plan loading and expansion of a generated plan with a given number of jobs.
//! `cargo run --release --example bench_expand -- 100000`

use std::time::Instant;

fn main() {
    let jobs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    // Each test: 10 dtypes × 5 ops × 10 splits × E env entries = 500·E jobs.
    let per_test_env = 20;
    let per_test = 500 * per_test_env;
    let tests = jobs.div_ceil(per_test);
    let mut y =
        String::from("version: 1\nname: bench\nlaunch: { nodes: 16, ranks_per_node: 8 }\ntests:\n");
    for t in 0..tests {
        y.push_str(&format!(
            "  - name: t{t}\n    collective: all_reduce\n    sizes: {{ from: 8, to: 8G, factor: 2 }}\n    matrix:\n      dtype: [int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16]\n      op: [sum, prod, min, max, avg]\n      split: [\"DIV 8\", \"MOD 8\", \"OR 1\", \"DIV 16\", \"DIV 32\", \"MOD 16\", \"AND 7\", \"DIV 4\", \"DIV 2\", \"MOD 2\"]\n      env:\n"
        ));
        for v in 0..per_test_env {
            y.push_str(&format!("        - {{ NCCL_MIN_NCHANNELS: \"{v}\" }}\n"));
        }
    }
    let t0 = Instant::now();
    let loaded = baton::plan::parse_str("bench.yaml", &y).expect("valid plan");
    let t1 = Instant::now();
    let e = baton::expand::expand(&loaded.plan);
    let t2 = Instant::now();
    let json = serde_json::to_vec(&e).expect("serializes");
    let t3 = Instant::now();
    println!(
        "jobs={} ranks=128 sizes/job=31 plan_bytes={} load={:.1} ms expand={:.1} ms json={:.1} ms ({} MB)",
        e.total_jobs,
        y.len(),
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
        (t3 - t2).as_secs_f64() * 1e3,
        json.len() >> 20
    );
}
