//! Deterministic test data whose reductions are exact in any order, so `#wrong` counts real
//! corruption and never rounding. Every value is a pure function of (seed, rank, element index):
//! the expected output is computed without any communication.
//!
//! - Integers: hashed bits; sums and products wrap, which is order-independent.
//! - Floating sum: small integers (|v| ≤ 64), exact for any order up to 2^17 ranks.
//! - Floating product: one rank per element contributes 1–7, up to eight others 2, the rest 1.
//! - Min/max: any values.
//! - Copies (broadcast, gathers, alltoall, sendrecv): hashed values indexed by global position.

use crate::collective::{Dtype, RedOp};

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn hash(seed: u64, rank: u64, idx: u64) -> u64 {
    mix(seed ^ mix(rank.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ mix(idx)))
}

/// Host representation of one element type.
pub trait Elem: Copy + 'static {
    const SIZE: usize;
    fn red_input(op: RedOp, h: u64, rank: u64, n: u64, idx: u64) -> Self;
    fn nil(h: u64) -> Self;
    fn reduce(op: RedOp, a: Self, b: Self) -> Self;
    fn put(self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn red_input(op: RedOp, h: u64, _: u64, _: u64, _: u64) -> Self {
                match op {
                    RedOp::Prod => (h | 1) as $t,
                    _ => h as $t,
                }
            }
            fn nil(h: u64) -> Self { h as $t }
            fn reduce(op: RedOp, a: Self, b: Self) -> Self {
                match op {
                    RedOp::Sum | RedOp::Avg => a.wrapping_add(b),
                    RedOp::Prod => a.wrapping_mul(b),
                    RedOp::Min => a.min(b),
                    RedOp::Max => a.max(b),
                }
            }
            fn put(self, out: &mut [u8]) { out.copy_from_slice(&self.to_le_bytes()) }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
int_elem!(i8, u8, i32, u32, i64, u64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn red_input(op: RedOp, h: u64, rank: u64, n: u64, idx: u64) -> Self {
                match op {
                    RedOp::Sum | RedOp::Avg => ((h % 129) as i64 - 64) as $t,
                    RedOp::Prod => {
                        let n = n.max(1);
                        if rank == idx % n {
                            (h % 7 + 1) as $t
                        } else if (rank + n - idx % n) % n <= 8 && h & 1 == 1 {
                            2.0
                        } else {
                            1.0
                        }
                    }
                    RedOp::Min | RedOp::Max => ((h % 2001) as i64 - 1000) as $t,
                }
            }
            fn nil(h: u64) -> Self { ((h % 65_536) as i64 - 32_768) as $t }
            fn reduce(op: RedOp, a: Self, b: Self) -> Self {
                match op {
                    RedOp::Sum | RedOp::Avg => a + b,
                    RedOp::Prod => a * b,
                    RedOp::Min => a.min(b),
                    RedOp::Max => a.max(b),
                }
            }
            fn put(self, out: &mut [u8]) { out.copy_from_slice(&self.to_le_bytes()) }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
float_elem!(f32, f64);

/// Calls `$f::<T>` with the host element type of `$dtype`, or returns `$none` when the host has
/// no native type for it (half, bfloat16, fp8).
#[macro_export]
macro_rules! with_elem {
    ($dtype:expr, $f:ident ( $($arg:expr),* ), $none:expr) => {
        match $dtype {
            $crate::collective::Dtype::Int8 => $f::<i8>($($arg),*),
            $crate::collective::Dtype::Uint8 => $f::<u8>($($arg),*),
            $crate::collective::Dtype::Int32 => $f::<i32>($($arg),*),
            $crate::collective::Dtype::Uint32 => $f::<u32>($($arg),*),
            $crate::collective::Dtype::Int64 => $f::<i64>($($arg),*),
            $crate::collective::Dtype::Uint64 => $f::<u64>($($arg),*),
            $crate::collective::Dtype::Float => $f::<f32>($($arg),*),
            $crate::collective::Dtype::Double => $f::<f64>($($arg),*),
            _ => $none,
        }
    };
}

/// What to write into a range of elements `[start, start + out.len()/size)`.
#[derive(Debug, Clone, Copy)]
pub enum Fill {
    /// Reduction input of `rank` among `n` ranks.
    Reduction { op: RedOp, rank: u64, n: u64 },
    /// The reduction result over `n` ranks.
    Reduced { op: RedOp, n: u64 },
    /// Copy pattern, indexed by global element position.
    Copy,
    /// Zeros: a buffer the collective must leave untouched.
    Zero,
}

/// Writes `fill` for global element indices starting at `start` into `out`.
pub fn fill(dtype: Dtype, fill: Fill, seed: u64, start: u64, out: &mut [u8]) {
    with_elem!(dtype, fill_t(fill, seed, start, out), ())
}

fn fill_t<T: Elem>(fill: Fill, seed: u64, start: u64, out: &mut [u8]) {
    for (i, chunk) in out.chunks_exact_mut(T::SIZE).enumerate() {
        let idx = start + i as u64;
        let v: T = match fill {
            Fill::Reduction { op, rank, n } => {
                T::red_input(op, hash(seed, rank, idx), rank, n, idx)
            }
            Fill::Reduced { op, n } => {
                let mut acc = T::red_input(op, hash(seed, 0, idx), 0, n, idx);
                for r in 1..n {
                    acc = T::reduce(op, acc, T::red_input(op, hash(seed, r, idx), r, n, idx));
                }
                acc
            }
            Fill::Copy => T::nil(hash(seed, u64::MAX, idx)),
            Fill::Zero => {
                chunk.fill(0);
                continue;
            }
        };
        v.put(chunk);
    }
}

/// Elements of `got` whose bits differ from `expected`. Bit-exact, as nccl-tests checks every
/// type and op except floating `avg`.
pub fn count_wrong(dtype: Dtype, got: &[u8], expected: &[u8]) -> u64 {
    let e = dtype.size() as usize;
    got.chunks_exact(e)
        .zip(expected.chunks_exact(e))
        .filter(|(a, b)| a != b)
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce_by_hand(dtype: Dtype, op: RedOp, n: u64, len: usize, order: &[u64]) -> Vec<u8> {
        let e = dtype.size() as usize;
        let mut acc = vec![0u8; len * e];
        fill(
            dtype,
            Fill::Reduction {
                op,
                rank: order[0],
                n,
            },
            7,
            0,
            &mut acc,
        );
        for &r in &order[1..] {
            let mut x = vec![0u8; len * e];
            fill(dtype, Fill::Reduction { op, rank: r, n }, 7, 0, &mut x);
            with_elem!(dtype, fold(op, &mut acc, &x), ());
        }
        acc
    }

    fn fold<T: Elem>(op: RedOp, acc: &mut [u8], x: &[u8]) {
        for (a, b) in acc.chunks_exact_mut(T::SIZE).zip(x.chunks_exact(T::SIZE)) {
            T::reduce(op, T::get(a), T::get(b)).put(a);
        }
    }

    #[test]
    fn reductions_are_exact_in_any_order() {
        let n = 8;
        let fwd: Vec<u64> = (0..n).collect();
        let rev: Vec<u64> = (0..n).rev().collect();
        let odd: Vec<u64> = vec![3, 0, 7, 1, 6, 2, 5, 4];
        for dtype in [
            Dtype::Float,
            Dtype::Double,
            Dtype::Int32,
            Dtype::Uint8,
            Dtype::Int64,
        ] {
            for op in [RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max] {
                let mut expected = vec![0u8; 4096 * dtype.size() as usize];
                fill(dtype, Fill::Reduced { op, n }, 7, 0, &mut expected);
                for order in [&fwd, &rev, &odd] {
                    let got = reduce_by_hand(dtype, op, n, 4096, order);
                    assert_eq!(
                        count_wrong(dtype, &got, &expected),
                        0,
                        "{dtype} {op} {order:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn one_flipped_element_counts_once() {
        let mut a = vec![0u8; 64];
        fill(Dtype::Float, Fill::Copy, 1, 0, &mut a);
        let mut b = a.clone();
        b[17] ^= 0x40;
        assert_eq!(count_wrong(Dtype::Float, &b, &a), 1);
        assert!(!Dtype::Bfloat16.host_native());
        assert!(Dtype::Double.host_native());
    }

    #[test]
    fn copy_pattern_depends_on_global_index_only() {
        let mut whole = vec![0u8; 80];
        fill(Dtype::Int32, Fill::Copy, 5, 0, &mut whole);
        let mut tail = vec![0u8; 40];
        fill(Dtype::Int32, Fill::Copy, 5, 10, &mut tail);
        assert_eq!(&whole[40..], &tail[..]);
    }
}
