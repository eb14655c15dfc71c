//! Facts about each collective, datatype and reduction, written once and shared by the planner,
//! the runner, the log importer and the grader, so a busbw factor can never differ between them.
//! Source: nccl-tests 2.19.6 as summarised in `nccl-tests-semantics.md` §1.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[cfg(test)]
mod formulas;
pub mod traffic;
pub use traffic::{Traffic, TrafficError};

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($var:ident = $text:literal),+ $(,)? } aliases { $($alias:literal => $target:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum $name { $(#[serde(rename = $text)] $var),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub fn name(self) -> &'static str { match self { $($name::$var => $text),+ } }
            /// Canonical names, for "expected one of" messages.
            pub fn names() -> Vec<&'static str> { vec![$($text),+] }
            /// Accepted spellings besides the canonical ones (nccl-tests / NCCL aliases).
            pub fn aliases() -> Vec<&'static str> { vec![$($alias),*] }
        }

        impl FromStr for $name {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s {
                    $($text => Ok($name::$var),)+
                    $($alias => Ok($name::$target),)*
                    _ => Err(()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.name()) }
        }
    };
}

named_enum! {
    /// The eleven collectives nccl-tests ships binaries for and baton measures.
    Collective {
        AllReduce = "all_reduce",
        AllGather = "all_gather",
        ReduceScatter = "reduce_scatter",
        Broadcast = "broadcast",
        Reduce = "reduce",
        AllToAll = "alltoall",
        SendRecv = "sendrecv",
        Gather = "gather",
        Scatter = "scatter",
        AllToAllv = "alltoallv",
        HyperCube = "hypercube",
    }
    aliases { "all_to_all" => AllToAll, "send_recv" => SendRecv }
}

named_enum! {
    /// NCCL datatypes, named as nccl-tests prints them in its `type` column.
    Dtype {
        Int8 = "int8",
        Uint8 = "uint8",
        Int32 = "int32",
        Uint32 = "uint32",
        Int64 = "int64",
        Uint64 = "uint64",
        Half = "half",
        Float = "float",
        Double = "double",
        Bfloat16 = "bfloat16",
        F8e4m3 = "f8e4m3",
        F8e5m2 = "f8e5m2",
    }
    aliases {
        "char" => Int8, "int" => Int32, "float16" => Half, "fp16" => Half, "float32" => Float,
        "fp32" => Float, "float64" => Double, "fp64" => Double, "bf16" => Bfloat16,
    }
}

named_enum! {
    /// Reduction operators.
    RedOp {
        Sum = "sum",
        Prod = "prod",
        Min = "min",
        Max = "max",
        Avg = "avg",
    }
    aliases {}
}

impl Dtype {
    /// Bytes per element (nccl-tests `wordSize`).
    pub fn size(self) -> u64 {
        match self {
            Dtype::Int8 | Dtype::Uint8 | Dtype::F8e4m3 | Dtype::F8e5m2 => 1,
            Dtype::Half | Dtype::Bfloat16 => 2,
            Dtype::Int32 | Dtype::Uint32 | Dtype::Float => 4,
            Dtype::Int64 | Dtype::Uint64 | Dtype::Double => 8,
        }
    }

    /// Whether hosts (and MPI) have a native type for it; half, bfloat16 and fp8 are GPU-only.
    pub fn host_native(self) -> bool {
        !matches!(
            self,
            Dtype::Half | Dtype::Bfloat16 | Dtype::F8e4m3 | Dtype::F8e5m2
        )
    }
}

/// Element counts for one requested size, as nccl-tests' `<Coll>GetCollByteCount` computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counts {
    /// The count passed to NCCL; nccl-tests' `count` column.
    pub param: u64,
    pub send: u64,
    pub recv: u64,
    /// In-place send/recv offsets, in elements, multiplied by the rank.
    pub send_inplace_offset: u64,
    pub recv_inplace_offset: u64,
}

impl Counts {
    /// nccl-tests' `size` column: max(send, recv) bytes.
    pub fn size_bytes(&self, dtype: Dtype) -> u64 {
        self.send.max(self.recv) * dtype.size()
    }
}

impl Collective {
    /// Whether the collective reduces (so `op` matters and is printed).
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce
        )
    }

    /// Whether the collective has a root rank.
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Collective::Broadcast | Collective::Reduce | Collective::Gather | Collective::Scatter
        )
    }

    /// Whether the requested size is divided among ranks (the printed size can be smaller).
    pub fn chunked(self) -> bool {
        !matches!(
            self,
            Collective::AllReduce
                | Collective::Broadcast
                | Collective::Reduce
                | Collective::SendRecv
        )
    }

    /// What nccl-tests prints in the redop column of a collective that does not reduce:
    /// `none`, except hypercube_perf's empty field.
    pub fn no_redop(self) -> &'static str {
        if self == Collective::HyperCube {
            ""
        } else {
            "none"
        }
    }

    /// Whether it runs only on a power-of-two rank count (nccl-tests skips the others).
    pub fn needs_power_of_two(self) -> bool {
        self == Collective::HyperCube
    }

    /// The nccl-tests binary that measures this collective.
    pub fn nccl_tests_binary(self) -> String {
        format!("{}_perf", self.name())
    }

    /// Counts for a requested size `bytes` over `n` ranks (§1.1–1.2), alltoallv with its
    /// default traffic (nccl-tests' generated pattern at spread 1).
    pub fn counts(self, bytes: u64, dtype: Dtype, n: u64) -> Counts {
        self.counts_with(bytes, dtype, n, &Traffic::default())
    }

    /// Counts under alltoallv's `traffic`: floor to whole elements; chunked collectives divide
    /// by `n` and round each rank's chunk down to 16 bytes. Alltoallv's send and recv counts
    /// are the largest any rank sends and receives, as nccl-tests sizes every rank's buffers.
    pub fn counts_with(self, bytes: u64, dtype: Dtype, n: u64, traffic: &Traffic) -> Counts {
        let e = dtype.size();
        let count = bytes / e;
        let n = n.max(1);
        let chunk = (count / n) & !((16 / e).max(1) - 1);
        let (param, send, recv, so, ro) = match self {
            Collective::AllReduce
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::SendRecv => (count, count, count, 0, 0),
            Collective::AllGather | Collective::Gather | Collective::HyperCube => {
                (chunk, chunk, n * chunk, chunk, 0)
            }
            Collective::ReduceScatter | Collective::Scatter => (chunk, n * chunk, chunk, 0, chunk),
            Collective::AllToAll => (chunk, n * chunk, n * chunk, 0, 0),
            Collective::AllToAllv => {
                let param = if traffic.generated() { chunk } else { 0 };
                let (s, r) = traffic.max_counts(param * n * e, e, n);
                (param, s, r, 0, 0)
            }
        };
        Counts {
            param,
            send,
            recv,
            send_inplace_offset: so,
            recv_inplace_offset: ro,
        }
    }

    /// busbw = algbw × factor (§1.5).
    pub fn busbw_factor(self, n: u64) -> f64 {
        let n = n.max(1) as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::Gather
            | Collective::Scatter
            | Collective::AllToAllv => (n - 1.0) / n,
            Collective::Broadcast
            | Collective::Reduce
            | Collective::SendRecv
            | Collective::HyperCube => 1.0,
        }
    }

    /// algbw ÷ (printed size / time): 1 except for hypercube, whose algbw counts only the
    /// n − 1 chunks a rank receives (`B·e·(n−1)/t`), not the whole gathered size.
    pub fn algbw_share(self, n: u64) -> f64 {
        match self {
            Collective::HyperCube => {
                let n = n.max(1) as f64;
                (n - 1.0) / n
            }
            _ => 1.0,
        }
    }

    /// algbw and busbw in GB/s (decimal) for the printed size and the aggregated time per op.
    pub fn bandwidths(self, size_bytes: u64, time_us: f64, n: u64) -> (f64, f64) {
        if time_us <= 0.0 {
            return (0.0, 0.0);
        }
        let algbw = size_bytes as f64 / 1e9 / (time_us * 1e-6) * self.algbw_share(n);
        (algbw, algbw * self.busbw_factor(n))
    }

    /// Whether nccl-tests verifies the in-place result (not for alltoall, alltoallv, sendrecv).
    pub fn checks_in_place(self) -> bool {
        !matches!(
            self,
            Collective::AllToAll | Collective::AllToAllv | Collective::SendRecv
        )
    }

    /// Bytes of user buffers per rank at requested size `bytes`: send + recv (+ expected when
    /// checking), the way nccl-tests allocates them (§8).
    pub fn buffer_bytes(self, bytes: u64, dtype: Dtype, n: u64, check: bool) -> u64 {
        let c = self.counts(bytes, dtype, n);
        let e = dtype.size();
        let span = c.size_bytes(dtype).max(c.param * e);
        let expected = if check { c.recv * e } else { 0 };
        span.saturating_mul(2).saturating_add(expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases() {
        assert_eq!(
            "all_reduce".parse::<Collective>(),
            Ok(Collective::AllReduce)
        );
        assert_eq!("bf16".parse::<Dtype>(), Ok(Dtype::Bfloat16));
        assert_eq!("fp32".parse::<Dtype>(), Ok(Dtype::Float));
        assert!("allreduce".parse::<Collective>().is_err());
        assert_eq!(Collective::AllToAll.to_string(), "alltoall");
        assert_eq!(Collective::ALL.len(), 11);
    }

    #[test]
    fn counts_match_semantics_table() {
        // all_reduce: count = floor(S/e), size = N*e.
        let c = Collective::AllReduce.counts(8, Dtype::Float, 2);
        assert_eq!((c.param, c.size_bytes(Dtype::Float)), (2, 8));
        // all_gather on 2 ranks, 1 GiB float: chunk = 2^28/2, size = total.
        let c = Collective::AllGather.counts(1 << 30, Dtype::Float, 2);
        assert_eq!(c.param, 1 << 27);
        assert_eq!(c.size_bytes(Dtype::Float), 1 << 30);
        // all_gather 8 B float on 2 ranks: chunk rounds to 0 → size 0 (fixture row `0 0`).
        let c = Collective::AllGather.counts(8, Dtype::Float, 2);
        assert_eq!((c.param, c.size_bytes(Dtype::Float)), (0, 0));
        // 32 B float on 2 ranks: 8 elems, 4 per rank = 16 B chunk → size 32, count 4 (fixture).
        let c = Collective::AllGather.counts(32, Dtype::Float, 2);
        assert_eq!((c.param, c.size_bytes(Dtype::Float)), (4, 32));
        // 16-byte rounding: 3 ranks, 96 B int8 → 32 per rank → chunk 32.
        let c = Collective::AllToAll.counts(100, Dtype::Int8, 3);
        assert_eq!((c.param, c.size_bytes(Dtype::Int8)), (32, 96));
        let c = Collective::ReduceScatter.counts(1 << 20, Dtype::Half, 8);
        assert_eq!(
            (c.param, c.send, c.recv, c.recv_inplace_offset),
            (65536, 524288, 65536, 65536)
        );
    }

    #[test]
    fn busbw_factors_and_worked_example() {
        assert_eq!(Collective::AllReduce.busbw_factor(8), 14.0 / 8.0);
        assert_eq!(Collective::AllGather.busbw_factor(2), 0.5);
        assert_eq!(Collective::SendRecv.busbw_factor(2), 1.0);
        assert_eq!(Collective::AllReduce.busbw_factor(1), 0.0);
        let (alg, bus) = Collective::AllReduce.bandwidths(1073741824, 5000.0, 8);
        assert!((alg - 214.748).abs() < 1e-3 && (bus - 375.809).abs() < 1e-3);
    }

    /// Expected figures from gather.cu, scatter.cu, hypercube.cu and alltoallv.cu's
    /// `GetCollByteCount` and `GetBw`, worked by hand.
    #[test]
    fn new_collectives_match_nccl_tests_formulas() {
        // gather, 8 ranks, 1000 B int8: 125 per rank → 112 (multiple of 16).
        let c = Collective::Gather.counts(1000, Dtype::Int8, 8);
        assert_eq!(
            (c.param, c.send, c.recv, c.send_inplace_offset),
            (112, 112, 896, 112)
        );
        assert_eq!(c.size_bytes(Dtype::Int8), 896);
        let c = Collective::Scatter.counts(1000, Dtype::Int8, 8);
        assert_eq!(
            (c.param, c.send, c.recv, c.recv_inplace_offset),
            (112, 896, 112, 112)
        );
        // scatter, 3 ranks, 1 MiB double: 131072/3 = 43690 → 43690 (even).
        let c = Collective::Scatter.counts(1 << 20, Dtype::Double, 3);
        assert_eq!((c.param, c.size_bytes(Dtype::Double)), (43690, 1048560));
        // hypercube is an allgather in its counts.
        let c = Collective::HyperCube.counts(1 << 20, Dtype::Float, 4);
        assert_eq!(
            (c.param, c.recv, c.size_bytes(Dtype::Float)),
            (65536, 262144, 1 << 20)
        );
        // alltoallv generated: param is the per-peer chunk, sizes the distance-weighted totals.
        let c = Collective::AllToAllv.counts(1 << 20, Dtype::Float, 4);
        assert_eq!((c.param, c.send, c.recv), (65536, 262140, 262140));
        assert_eq!(c.size_bytes(Dtype::Float), 1048560);
        let m = Traffic::parse_matrix("100 200 150\n50 100 75\n300 150 200", 1.0).unwrap();
        let c = Collective::AllToAllv.counts_with(4096, Dtype::Float, 3, &m);
        assert_eq!(
            (c.param, c.send, c.recv, c.size_bytes(Dtype::Float)),
            (0, 156, 108, 624)
        );
        // busbw: (n-1)/n for gather, scatter, alltoallv; hypercube's algbw is B·e·(n-1)/t.
        for coll in [
            Collective::Gather,
            Collective::Scatter,
            Collective::AllToAllv,
        ] {
            assert_eq!(coll.busbw_factor(8), 7.0 / 8.0);
        }
        let (alg, bus) = Collective::HyperCube.bandwidths(1 << 20, 100.0, 4);
        assert!((alg - 7.86432).abs() < 1e-9 && (bus - alg).abs() < 1e-12);
        let (alg, bus) = Collective::Gather.bandwidths(896, 1.0, 8);
        assert!((alg - 0.896).abs() < 1e-9 && (bus - 0.784).abs() < 1e-9);
        assert!(Collective::Gather.rooted() && Collective::Scatter.rooted());
        assert!(!Collective::AllToAllv.checks_in_place() && Collective::Gather.checks_in_place());
    }

    #[test]
    fn memory_is_three_buffers() {
        let b = Collective::AllReduce.buffer_bytes(8 << 30, Dtype::Float, 2, true);
        assert_eq!(b, 3 * (8u64 << 30));
        let b = Collective::AllReduce.buffer_bytes(8 << 30, Dtype::Float, 2, false);
        assert_eq!(b, 2 * (8u64 << 30));
        let b = Collective::ReduceScatter.buffer_bytes(8 << 30, Dtype::Float, 8, true);
        assert_eq!(b, 2 * (8u64 << 30) + (1u64 << 30));
    }
}
