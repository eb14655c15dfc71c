//! With the `mpi` feature, compiles the one-line C shim that exposes `MPI_IN_PLACE`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/mpi_shim.c");
    #[cfg(feature = "mpi")]
    {
        let lib = match build_probe_mpi::probe() {
            Ok(l) => l,
            Err(errs) => {
                for e in errs {
                    println!("cargo:warning=MPI probe: {e}");
                }
                panic!(
                    "the `mpi` feature needs an MPI installation (mpicc on PATH, e.g. apt-get install libopenmpi-dev)"
                );
            }
        };
        let mut b = cc::Build::new();
        b.file("csrc/mpi_shim.c");
        for p in &lib.include_paths {
            b.include(p);
        }
        b.compile("baton_mpi_shim");
    }
}
