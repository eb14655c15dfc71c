//! CUDA events at the timed loop's iteration boundaries (nccl-tests `-I 1`): recorded on the
//! rank's stream between its launches, read after the loop finished, so the GPU's own clock
//! says how long each iteration took on this rank.

use cudarc::driver::result::event;
use cudarc::driver::sys::{CUevent, CUevent_flags, CUstream};

use super::error::{GpuError, cuda};

/// Events made once and reused by every cell; destroyed with the engine.
#[derive(Default)]
pub struct Marks {
    events: Vec<CUevent>,
    /// Marks recorded since the last `begin`.
    used: usize,
}

// SAFETY: plain driver handles, used only by the thread that owns the engine.
unsafe impl Send for Marks {}

impl Marks {
    /// Room for `n` marks in the current context: events are made here, never in the loop.
    pub fn begin(&mut self, n: usize) -> Result<(), GpuError> {
        while self.events.len() < n {
            let e = cuda(
                event::create(CUevent_flags::CU_EVENT_DEFAULT),
                "cuEventCreate",
            )?;
            self.events.push(e);
        }
        self.used = 0;
        Ok(())
    }

    /// Records mark `i` on `stream`; a mark past the room made by `begin` is ignored.
    pub fn record(&mut self, i: usize, stream: CUstream) -> Result<(), GpuError> {
        let Some(e) = self.events.get(i) else {
            return Ok(());
        };
        // SAFETY: e was created by `begin` in this context; the stream is the rank's own.
        cuda(unsafe { event::record(*e, stream) }, "cuEventRecord")?;
        self.used = self.used.max(i + 1);
        Ok(())
    }

    /// µs between consecutive recorded marks; call after the stream is idle.
    pub fn elapsed_us(&self) -> Result<Vec<f64>, GpuError> {
        self.events[..self.used]
            .windows(2)
            .map(|w| {
                // SAFETY: both events were recorded on one stream that has since gone idle.
                let ms = cuda(unsafe { event::elapsed(w[0], w[1]) }, "cuEventElapsedTime")?;
                Ok(f64::from(ms) * 1e3)
            })
            .collect()
    }

    /// Gives up the events without destroying them (their context is gone).
    pub fn forget(&mut self) {
        self.events.clear();
        self.used = 0;
    }
}

impl Drop for Marks {
    fn drop(&mut self) {
        for e in self.events.drain(..) {
            // SAFETY: created by `begin`, destroyed once, context made current by the engine.
            let _ = unsafe { event::destroy(e) };
        }
    }
}
