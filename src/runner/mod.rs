//! Executing jobs: the nccl-tests measurement protocol shared by every backend, the seams to the
//! backends ([`engine::Engine`]) and to rank coordination ([`crate::world::World`]), and the live table.

pub mod engine;
pub mod pattern;
pub mod sweep;
pub mod table;

pub mod environment;
pub mod fault;
pub mod interrupt;
pub mod layout;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod nccl;
pub mod nodesets;
pub mod orchestrate;
pub mod outdir;
pub mod progress;
pub mod refusal;
pub mod set_events;
pub mod stalled;
pub mod telemetry;
pub mod transport;
pub mod watchdog;
pub mod worker;
