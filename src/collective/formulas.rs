//! baton's counts, sizes and bandwidths of gather, scatter, alltoallv and hypercube against
//! nccl-tests 2.19.6's own formulas (`<Coll>GetCollByteCount` and `<Coll>GetBw` in gather.cu,
//! scatter.cu, alltoallv.cu and hypercube.cu), restated here the way those files write them,
//! for every group size from 2 to 8 ranks — what a split group of that size runs — every dtype
//! and sizes that do and do not divide.

use super::{Collective, Dtype, Traffic};

/// nccl-tests' `(count/nranks) & ~(16/eltSize - 1)`.
fn base(count: u64, e: u64, n: u64) -> u64 {
    (count / n) & !(16 / e - 1)
}

/// alltoallv.cu's per-peer bytes of the generated pattern, and rank 0's totals (its
/// `AlltoAllvComputeMaxCounts` for a generated pattern).
fn generated_totals(spread: f64, n: u64, total: u64, e: u64) -> u64 {
    (0..n)
        .map(|j| {
            let distance = j % n;
            let sum = n * (n - 1) / 2;
            let uniform = total as f64 / n as f64;
            let dist = distance as f64 * total as f64 / sum as f64;
            (((1.0 - spread) * uniform + spread * dist) as u64 & !15) / e
        })
        .sum()
}

/// (param, send, recv) as nccl-tests computes them.
fn nccl_tests(c: Collective, count: u64, e: u64, n: u64, traffic: &Traffic) -> (u64, u64, u64) {
    let b = base(count, e, n);
    match (c, traffic) {
        (Collective::Gather | Collective::HyperCube, _) => (b, b, b * n),
        (Collective::Scatter, _) => (b, b * n, b),
        (Collective::AllToAllv, Traffic::Generated { spread }) => {
            let t = generated_totals(*spread, n, b * n * e, e);
            (b, t, t)
        }
        (Collective::AllToAllv, Traffic::Matrix { dim, bytes }) => {
            let at = |i: u64, j: u64| bytes[(i * dim + j) as usize] / e;
            let send = (0..n).map(|i| (0..n).map(|j| at(i, j)).sum()).max();
            let recv = (0..n).map(|i| (0..n).map(|j| at(j, i)).sum()).max();
            (0, send.unwrap_or(0), recv.unwrap_or(0))
        }
        _ => unreachable!("only the four new collectives"),
    }
}

/// `GetBw`'s algbw numerator in bytes: gather and scatter `count·nranks·e`, hypercube
/// `count·e·(nranks−1)`, alltoallv the larger of its max send and receive.
fn bw_bytes(c: Collective, param: u64, send: u64, recv: u64, e: u64, n: u64) -> f64 {
    match c {
        Collective::Gather | Collective::Scatter => (param * n * e) as f64,
        Collective::HyperCube => (param * e * (n - 1)) as f64,
        _ => (send.max(recv) * e) as f64,
    }
}

#[test]
fn counts_sizes_and_bandwidths_equal_nccl_tests_for_2_to_8_ranks() {
    let sizes = [
        0,
        8,
        100,
        1000,
        4096,
        12345,
        1 << 20,
        (1 << 20) + 7,
        3 << 30,
    ];
    let matrix = Traffic::parse_matrix(
        "0 64 128 16 8 1 0 40\n32 0 48 4096 0 0 16 16\n512 16 0 80 7 9 1 2\n96 112 1024 0 0 0 0 160\n\
         1 2 3 4 5 6 7 8\n16 16 16 16 16 16 16 16\n0 0 0 0 0 0 0 0\n99 98 97 96 95 94 93 92\n",
        1.5,
    )
    .unwrap();
    let traffics = [
        Traffic::default(),
        Traffic::Generated { spread: 0.0 },
        Traffic::Generated { spread: 0.3 },
        matrix,
    ];
    let four = [
        Collective::Gather,
        Collective::Scatter,
        Collective::AllToAllv,
        Collective::HyperCube,
    ];
    let mut checked = 0;
    for n in 2..=8u64 {
        for &c in &four {
            for &d in Dtype::ALL {
                let e = d.size();
                for &s in &sizes {
                    for t in &traffics {
                        let got = c.counts_with(s, d, n, t);
                        let (param, send, recv) = nccl_tests(c, s / e, e, n, t);
                        let what = format!("{c} {d} n={n} {s} B {t:?}");
                        assert_eq!(
                            (got.param, got.send, got.recv),
                            (param, send, recv),
                            "{what}"
                        );
                        // The size column: max(sendBytes, expectedBytes).
                        assert_eq!(got.size_bytes(d), send.max(recv) * e, "{what}");
                        let (alg, bus) = c.bandwidths(got.size_bytes(d), 1.0, n);
                        let want = bw_bytes(c, param, send, recv, e, n) / 1e9 / 1e-6;
                        assert!((alg - want).abs() <= 1e-9 * want.max(1.0), "{what}");
                        let factor = match c {
                            Collective::HyperCube => 1.0,
                            _ => (n - 1) as f64 / n as f64,
                        };
                        assert!((bus - alg * factor).abs() <= 1e-9 * alg.max(1.0), "{what}");
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}
