//! MPI: the world for multi-process runs (one rank per process, under mpirun or
//! `srun --mpi=pmix`) and the host-memory backend (`backend: mpi`).

mod exchange;
mod ffi;
mod host;
mod hostbuf;

pub use host::HostEngine;

use mpi::collective::{CommunicatorCollectives, Root};
use mpi::topology::{Communicator, SimpleCommunicator};

use crate::world::World;

/// The MPI world: plan rank = `MPI_COMM_WORLD` rank.
pub struct MpiWorld {
    _universe: mpi::environment::Universe,
    world: SimpleCommunicator,
}

impl MpiWorld {
    /// Initialises MPI; `None` when it was already initialised or cannot be.
    pub fn init() -> Option<MpiWorld> {
        let universe = mpi::initialize()?;
        let world = universe.world();
        Some(MpiWorld {
            _universe: universe,
            world,
        })
    }

    pub fn comm(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// `MPI_Get_library_version`, first line.
    pub fn library_version() -> Option<String> {
        mpi::environment::library_version().ok().map(|v| {
            v.replace('\0', "")
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .trim_end_matches(',')
                .to_string()
        })
    }
}

impl World for MpiWorld {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn barrier(&self) {
        self.world.barrier();
    }
    fn all_gather_f64(&self, v: f64) -> Vec<f64> {
        let mut out = vec![0f64; self.size()];
        self.world.all_gather_into(&v, &mut out[..]);
        out
    }
    fn all_gather_u64(&self, v: u64) -> Vec<u64> {
        let mut out = vec![0u64; self.size()];
        self.world.all_gather_into(&v, &mut out[..]);
        out
    }
    fn broadcast_bytes(&self, data: &mut [u8]) {
        use mpi::topology::Communicator;
        self.world.process_at_rank(0).broadcast_into(data);
    }
    fn all_gather_string(&self, s: &str) -> Vec<String> {
        // Lengths first, then every string padded to the longest: any length arrives whole
        // (transport links gathered as JSON run to kilobytes).
        let b = s.as_bytes();
        let lens = self.all_gather_u64(b.len() as u64);
        let w = lens.iter().copied().max().unwrap_or(0).max(1) as usize;
        let mut buf = vec![0u8; w];
        buf[..b.len()].copy_from_slice(b);
        let mut out = vec![0u8; w * self.size()];
        self.world.all_gather_into(&buf[..], &mut out[..]);
        out.chunks(w)
            .zip(&lens)
            .map(|(c, n)| String::from_utf8_lossy(&c[..*n as usize]).into_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A singleton MPI world (no mpirun): the one place in this test binary that starts MPI.
    #[test]
    fn strings_of_any_length_are_gathered_whole() {
        let Some(w) = MpiWorld::init() else {
            panic!("MPI could not be initialised as a singleton");
        };
        let long: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        assert_eq!(w.all_gather_string(&long), vec![long.clone()]);
        assert_eq!(w.all_gather_string(""), vec![String::new()]);
    }
}
