//! One process driving every local GPU: a thread per GPU, each one NCCL rank, coordinated
//! through shared memory instead of MPI.

use std::sync::{Arc, Barrier, Mutex};

use super::device::Gpu;
use super::engine::NcclEngine;
use crate::world::World;

struct Shared {
    barrier: Barrier,
    f64s: Mutex<Vec<f64>>,
    u64s: Mutex<Vec<u64>>,
    strings: Mutex<Vec<String>>,
    bytes: Mutex<Vec<u8>>,
}

/// The world of one thread among `size` in this process.
pub struct ThreadWorld {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
}

impl ThreadWorld {
    /// The worlds of `size` threads, one each.
    pub fn create(size: usize) -> Vec<ThreadWorld> {
        let shared = Arc::new(Shared {
            barrier: Barrier::new(size),
            f64s: Mutex::new(vec![0.0; size]),
            u64s: Mutex::new(vec![0; size]),
            strings: Mutex::new(vec![String::new(); size]),
            bytes: Mutex::new(Vec::new()),
        });
        (0..size)
            .map(|rank| ThreadWorld {
                rank,
                size,
                shared: shared.clone(),
            })
            .collect()
    }

    fn gather<T: Clone>(&self, slot: &Mutex<Vec<T>>, v: T) -> Vec<T> {
        slot.lock().unwrap_or_else(|p| p.into_inner())[self.rank] = v;
        self.shared.barrier.wait();
        let out = slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // Nobody writes the next round before everyone has read this one.
        self.shared.barrier.wait();
        out
    }
}

impl World for ThreadWorld {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn barrier(&self) {
        self.shared.barrier.wait();
    }
    fn all_gather_f64(&self, v: f64) -> Vec<f64> {
        self.gather(&self.shared.f64s, v)
    }
    fn all_gather_u64(&self, v: u64) -> Vec<u64> {
        self.gather(&self.shared.u64s, v)
    }
    fn all_gather_string(&self, s: &str) -> Vec<String> {
        self.gather(&self.shared.strings, s.to_string())
    }
    fn broadcast_bytes(&self, data: &mut [u8]) {
        if self.rank == 0 {
            *self.shared.bytes.lock().unwrap_or_else(|p| p.into_inner()) = data.to_vec();
        }
        self.shared.barrier.wait();
        data.copy_from_slice(
            &self.shared.bytes.lock().unwrap_or_else(|p| p.into_inner())[..data.len()],
        );
        self.shared.barrier.wait();
    }
}

/// Runs `body` on one thread per GPU (ordinals `0..ngpus`), each with its world and engine;
/// returns rank 0's value, or the first error.
pub fn on_each_gpu<T: Send, E: std::fmt::Display + Send>(
    ngpus: usize,
    body: impl Fn(&ThreadWorld, &mut NcclEngine<'_, ThreadWorld>) -> Result<T, E> + Sync,
    open_failed: impl Fn(String) -> E + Sync,
) -> Result<T, E> {
    let worlds = ThreadWorld::create(ngpus);
    std::thread::scope(|s| {
        let handles: Vec<_> = worlds
            .iter()
            .map(|w| {
                let body = &body;
                let open_failed = &open_failed;
                s.spawn(move || {
                    let gpu = Gpu::open(w.rank as u32);
                    // Every thread learns whether every GPU opened, so none waits forever.
                    let ok = w.all_gather_u64(gpu.is_ok() as u64);
                    let gpu = match gpu {
                        Ok(g) => g,
                        Err(e) => return Err(open_failed(format!("GPU {}: {e}", w.rank))),
                    };
                    if let Some(bad) = ok.iter().position(|o| *o == 0) {
                        return Err(open_failed(format!("GPU {bad} could not be opened")));
                    }
                    let mut engine = NcclEngine::new(w, gpu);
                    body(w, &mut engine)
                })
            })
            .collect();
        let mut results: Vec<Result<T, E>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(open_failed("a GPU thread panicked".into())))
            })
            .collect();
        if let Some(i) = results.iter().position(Result::is_err) {
            return results.swap_remove(i);
        }
        results.swap_remove(0)
    })
}
