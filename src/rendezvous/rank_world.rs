//! The TCP world as the world of one rank of a run (`runner::rank`): GPU ranks meet here
//! without MPI.

use super::TcpWorld;
use crate::expand::Job;
use crate::results::Results;
use crate::runner::rank::{RankError, RankWorld};
use crate::runner::world::World;

impl RankWorld for TcpWorld {
    fn local_rank(&self) -> usize {
        self.members()[self.rank()].local_rank
    }
    fn run_host_mpi(
        &self,
        _: &[Job],
        _: crate::runner::worker::WorkerConfig,
    ) -> Result<Results, RankError> {
        Err(RankError::Failed(
            "`backend: mpi` measures MPI itself: launch `baton-mpi run`, not `baton run`".into(),
        ))
    }
    fn on_broken(&self, f: Box<dyn Fn(&str) + Send + Sync>) {
        TcpWorld::on_broken(self, f)
    }
}
