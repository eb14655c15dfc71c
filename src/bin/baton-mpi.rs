//! `baton-mpi`: the same command line as `baton`, plus the MPI rank worker. It links libmpi,
//! which is why `baton` itself stays a separate binary that runs on login nodes and CI runners.

#[path = "../cli/mod.rs"]
mod cli;
#[path = "../cli/worker.rs"]
mod worker;

fn main() {
    std::process::exit(cli::main(Some(cli::MpiEntry {
        worker: worker::run,
        under_launcher: worker::run_under_launcher,
    })));
}
