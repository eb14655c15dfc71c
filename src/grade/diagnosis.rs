//! What the shape of a drop across sizes says about its cause. A drop at large sizes only is a
//! route or transport change (small messages are latency-bound, the path barely matters); a drop
//! at every size is the GPUs themselves (clocks, throttling) or contention; a drop at small sizes
//! only is latency. Naming the shape saves the reader the bisection.

use serde::Serialize;

use super::measure::{median, size};

/// The pattern of a slowdown across requested sizes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "shape")]
pub enum Shape {
    /// Large sizes dropped from `from` up; small sizes unchanged.
    LargeSizesOnly { from: u64 },
    /// Every part of the sweep dropped.
    AllSizes,
    /// Small sizes dropped up to `up_to`; large sizes unchanged.
    SmallSizesOnly { up_to: u64 },
    /// Only the middle of the sweep dropped.
    MidSizes { from: u64, to: u64 },
    /// Too few sizes to tell the shapes apart.
    TooFewSizes,
    /// Without a reference: busbw falls at the largest sizes instead of plateauing.
    FallsAtLargeSizes { peak_at: u64 },
    /// One split group is the slow one.
    SlowGroup { color: u64 },
    /// NCCL connected the ranks with another transport than in the baseline.
    TransportChanged { from: String, to: String },
    /// NCCL connected the ranks with a transport the plan does not accept.
    TransportNotExpected { seen: String, expected: String },
    /// NCCL/UCX settings differ from the baseline's.
    SettingsChanged { names: Vec<String> },
    /// Elements came back wrong.
    Corrupted { cells: u64 },
    /// Telemetry recorded throttling during the job.
    Throttled { reasons: Vec<String> },
    /// Other NCCL, driver, CUDA or GPUs than the baseline.
    VersionsChanged,
}

impl Shape {
    /// Where in the sweep a drop of this shape is, in words (`drop from 64M up`).
    pub fn located(&self) -> String {
        match self {
            Shape::LargeSizesOnly { from } => format!("drop from {} up", size(*from)),
            Shape::SmallSizesOnly { up_to } => format!("drop up to {}", size(*up_to)),
            Shape::MidSizes { from, to } => format!("drop at {}..{}", size(*from), size(*to)),
            Shape::TooFewSizes => "drop at the few sizes compared".into(),
            _ => "drop at all sizes".into(),
        }
    }
}

/// A shape and what to check, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    #[serde(flatten)]
    pub shape: Shape,
    pub text: String,
}

/// Classifies drops (`(requested size, drop %)`, ascending, positive = slower) given the drop
/// that counts as real (`tolerance`, %). `None` when nothing dropped.
pub fn classify(points: &[(u64, f64)], tolerance: f64) -> Option<Diagnosis> {
    let dropped = |d: f64| d > tolerance;
    if !points.iter().any(|p| dropped(p.1)) {
        return None;
    }
    if points.len() < 3 {
        return Some(Diagnosis {
            shape: Shape::TooFewSizes,
            text: format!(
                "only {} size(s) compared: sweep small and large sizes to tell a route change from throttling",
                points.len()
            ),
        });
    }
    let k = (points.len() / 3).max(1);
    let mut small: Vec<f64> = points[..k].iter().map(|p| p.1).collect();
    let mut large: Vec<f64> = points[points.len() - k..].iter().map(|p| p.1).collect();
    let ds = median(&mut small).unwrap_or(0.0);
    let dl = median(&mut large).unwrap_or(0.0);
    let (shape, text) = match (dropped(ds), dropped(dl)) {
        (true, true) => (
            Shape::AllSizes,
            "uniform drop at all sizes: the GPUs or the node, not the route — check clocks and throttle reasons (nvidia-smi -q -d CLOCK,PERFORMANCE), power and temperature, and contention from other jobs".to_string(),
        ),
        (false, true) => {
            let from = run_from_top(points, tolerance);
            (
                Shape::LargeSizesOnly { from },
                format!(
                    "drop only at large sizes (from {} up), small sizes unchanged: a route or transport change — check the NCCL_DEBUG=INFO transport lines (`via P2P` becoming SHM or NET/Socket), NIC/rail state and GPUDirect RDMA",
                    size(from)
                ),
            )
        }
        (true, false) => {
            let up_to = run_from_bottom(points, tolerance);
            (
                Shape::SmallSizesOnly { up_to },
                format!(
                    "drop only at small sizes (up to {}), large sizes unchanged: latency — launch overhead, CPU binding or NUMA placement, the LL protocol, proxy threads",
                    size(up_to)
                ),
            )
        }
        (false, false) => {
            let mid: Vec<u64> = points
                .iter()
                .filter(|p| dropped(p.1))
                .map(|p| p.0)
                .collect();
            let (from, to) = (mid[0], mid[mid.len() - 1]);
            (
                Shape::MidSizes { from, to },
                format!(
                    "drop only at mid sizes ({}..{}): where NCCL switches algorithm or protocol — compare NCCL_ALGO/NCCL_PROTO settings and the tuner with the baseline run",
                    size(from),
                    size(to)
                ),
            )
        }
    };
    Some(Diagnosis { shape, text })
}

/// Smallest size of the dropped run that ends at the largest size (or the first dropped size in
/// the upper part when the very largest recovered).
fn run_from_top(points: &[(u64, f64)], tol: f64) -> u64 {
    let mut from = None;
    for p in points.iter().rev() {
        if p.1 > tol {
            from = Some(p.0);
        } else if from.is_some() {
            break;
        }
    }
    from.unwrap_or(points[points.len() - 1].0)
}

/// Largest size of the dropped run that starts at the smallest size.
fn run_from_bottom(points: &[(u64, f64)], tol: f64) -> u64 {
    let mut up_to = None;
    for p in points {
        if p.1 > tol {
            up_to = Some(p.0);
        } else if up_to.is_some() {
            break;
        }
    }
    up_to.unwrap_or(points[0].0)
}

/// Without a baseline: a healthy busbw curve climbs and plateaus; one that falls by more than
/// 10% from its peak to the largest size degrades under load.
pub fn falls_at_large(curve: &[(u64, f64)]) -> Option<Diagnosis> {
    let (peak_at, peak) = curve.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let &(last_at, last) = curve.last()?;
    if last_at == peak_at || peak <= 0.0 || last >= 0.9 * peak {
        return None;
    }
    Some(Diagnosis {
        shape: Shape::FallsAtLargeSizes { peak_at },
        text: format!(
            "busbw falls at large sizes instead of plateauing ({} GB/s at {}, {} GB/s at {}): buffer exhaustion, congestion collapse or a link degrading under load",
            super::measure::num(peak),
            size(peak_at),
            super::measure::num(last),
            size(last_at)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(drop: impl Fn(u64) -> f64) -> Vec<(u64, f64)> {
        (3..=33).map(|p| 1u64 << p).map(|s| (s, drop(s))).collect()
    }

    #[test]
    fn shapes() {
        let large = classify(&sweep(|s| if s >= 64 << 20 { 40.0 } else { 1.0 }), 5.0).unwrap();
        assert_eq!(large.shape, Shape::LargeSizesOnly { from: 64 << 20 });
        assert!(large.text.contains("transport"), "{}", large.text);
        let all = classify(&sweep(|_| 30.0), 5.0).unwrap();
        assert_eq!(all.shape, Shape::AllSizes);
        assert!(all.text.contains("throttl"), "{}", all.text);
        let small = classify(&sweep(|s| if s <= 4096 { 25.0 } else { 0.0 }), 5.0).unwrap();
        assert_eq!(small.shape, Shape::SmallSizesOnly { up_to: 4096 });
        assert!(small.text.contains("latency"));
        let mid = classify(&sweep(|s| if s == 1 << 20 { 30.0 } else { 0.0 }), 5.0).unwrap();
        assert_eq!(
            mid.shape,
            Shape::MidSizes {
                from: 1 << 20,
                to: 1 << 20
            }
        );
        assert_eq!(classify(&sweep(|_| 2.0), 5.0), None);
        assert_eq!(
            classify(&[(1 << 30, 50.0)], 5.0).unwrap().shape,
            Shape::TooFewSizes
        );
        // A noisy small size does not hide a large-size drop.
        let noisy = classify(
            &sweep(|s| match s {
                16 => 9.0,
                s if s >= 256 << 20 => 60.0,
                _ => 0.0,
            }),
            5.0,
        )
        .unwrap();
        assert_eq!(noisy.shape, Shape::LargeSizesOnly { from: 256 << 20 });
    }

    #[test]
    fn falling_curve() {
        let healthy = [(1 << 20, 50.0), (1 << 30, 340.0), (8 << 30, 345.0)];
        assert_eq!(falls_at_large(&healthy), None);
        let falling = [(1 << 20, 50.0), (1 << 30, 340.0), (8 << 30, 200.0)];
        assert_eq!(
            falls_at_large(&falling).unwrap().shape,
            Shape::FallsAtLargeSizes { peak_at: 1 << 30 }
        );
    }
}
