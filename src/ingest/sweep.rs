//! The size sweep a log's header announces, and the requested size behind each printed row.
//!
//! `at:` selects requested sizes, but nccl-tests prints the size it actually moved, which for the
//! chunked collectives is the request divided among ranks and rounded down to 16 bytes per rank.
//! Walking the announced sweep in order recovers the request without guessing.

use std::collections::HashMap;
use std::rc::Rc;

use crate::collective::{Collective, Dtype};

/// Most sizes generated from one header; a real sweep has a few dozen, a hostile header billions.
const MAX_SIZES: usize = 1 << 16;

/// How the sweep advances, as the header's `step:` field says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Factor(u64),
    Bytes(u64),
}

/// `minBytes`/`maxBytes`/`step` of an nccl-tests header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    pub min: u64,
    pub max: u64,
    pub step: Step,
}

impl Sweep {
    /// The requested sizes, as nccl-tests' `TimeTest` generates them (`S ≤ max`, ×f or +step).
    /// A step that would never advance yields only `min`, where nccl-tests would loop forever.
    pub fn sizes(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut s = self.min;
        while s <= self.max && out.len() < MAX_SIZES {
            out.push(s);
            let next = match self.step {
                Step::Factor(f) if f > 1 => s.checked_mul(f),
                Step::Factor(_) => None,
                Step::Bytes(b) if b > 0 => s.checked_add(b),
                Step::Bytes(_) => None,
            };
            match next {
                Some(n) if n > s => s = n,
                _ => break,
            }
        }
        out
    }
}

/// The requested sizes of a sweep and where each printed (size, count) pair sits in it, for one
/// collective, dtype and rank count: shared by every block of that dtype, so that placing a row
/// costs a lookup, not a walk over up to [`MAX_SIZES`] sizes.
pub struct Printed {
    sizes: Vec<u64>,
    /// Ascending indices in `sizes` of each printed (size, count).
    at: HashMap<(u64, u64), Vec<usize>>,
}

impl Printed {
    pub fn new(sweep: Option<&Sweep>, collective: Collective, dtype: Dtype, n: u64) -> Self {
        let sizes = sweep.map(Sweep::sizes).unwrap_or_default();
        let mut at: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        for (i, &s) in sizes.iter().enumerate() {
            let c = collective.counts(s, dtype, n);
            at.entry((c.size_bytes(dtype), c.param))
                .or_default()
                .push(i);
        }
        Printed { sizes, at }
    }
}

/// Where a printed row sits in the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// The requested size, or the printed size when the sweep does not explain the row.
    pub requested: u64,
    /// Whether the row starts a new pass over the sweep (`-N` cycles, or logs joined end to end).
    pub new_repeat: bool,
    /// Whether the sweep explained the row.
    pub in_sweep: bool,
}

/// Maps printed rows of one block (one dtype/op/root) back to requested sizes and repeats.
pub struct Mapper {
    printed: Rc<Printed>,
    /// Index in `sizes` of the previous row, to find the next one after it.
    cursor: Option<usize>,
}

impl Mapper {
    pub fn new(printed: Rc<Printed>) -> Self {
        Mapper {
            printed,
            cursor: None,
        }
    }

    /// Places a row printed with `size` and `count`: the first place in the sweep after the
    /// previous row, else the first from the start (a new pass).
    pub fn place(&mut self, size: u64, count: u64) -> Placed {
        let start = self.cursor.map_or(0, |c| c + 1);
        let Some(at) = self.printed.at.get(&(size, count)) else {
            return Placed {
                requested: size,
                new_repeat: false,
                in_sweep: false,
            };
        };
        let after = at.partition_point(|&i| i < start);
        let (i, new_repeat) = match at.get(after) {
            Some(&i) => (i, false),
            None => (at[0], true),
        };
        self.cursor = Some(i);
        Placed {
            requested: self.printed.sizes[i],
            new_repeat,
            in_sweep: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factor_and_byte_sweeps() {
        let s = Sweep {
            min: 8,
            max: 128 << 20,
            step: Step::Factor(2),
        };
        assert_eq!(s.sizes().len(), 25);
        let s = Sweep {
            min: 1 << 20,
            max: 4 << 20,
            step: Step::Bytes(1 << 20),
        };
        assert_eq!(s.sizes(), vec![1 << 20, 2 << 20, 3 << 20, 4 << 20]);
        let stuck = Sweep {
            min: 0,
            max: 10,
            step: Step::Factor(2),
        };
        assert_eq!(stuck.sizes(), vec![0]);
        let huge = Sweep {
            min: 1,
            max: u64::MAX,
            step: Step::Bytes(1),
        };
        assert_eq!(huge.sizes().len(), MAX_SIZES);
    }

    #[test]
    fn chunked_rows_map_to_requests_and_repeats() {
        // all_gather -b 8 -e 1G -f 4 on 2 ranks: 8 B prints as 0, 32 B as 32 (fixture JSON).
        let sweep = Sweep {
            min: 8,
            max: 1 << 30,
            step: Step::Factor(4),
        };
        let mut m = Mapper::new(Rc::new(Printed::new(
            Some(&sweep),
            Collective::AllGather,
            Dtype::Float,
            2,
        )));
        assert_eq!(m.place(0, 0).requested, 8);
        assert_eq!(m.place(32, 4).requested, 32);
        let p = m.place(128, 16);
        assert_eq!((p.requested, p.new_repeat), (128, false));
        // The sweep starts over: a second repeat.
        let p = m.place(0, 0);
        assert_eq!((p.requested, p.new_repeat), (8, true));
        // A row the sweep cannot explain keeps its printed size.
        let p = m.place(12345, 1);
        assert_eq!((p.requested, p.in_sweep), (12345, false));
    }
}
