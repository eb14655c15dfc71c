//! Which nccl-tests program a line names: a command line (`mpirun … ./build/all_reduce_perf -b 8`),
//! a Slurm or shell echo, prose around a pasted log. Old nccl-tests printed no `# Collective test
//! starting:` line, so this is most often the only place a log says what ran.

/// The base names of nccl-tests' and rccl-tests' programs, longest first so that `reduce_perf`
/// does not match inside `all_reduce_perf`.
const PROGRAMS: &[&str] = &[
    "reduce_scatter",
    "all_reduce",
    "all_gather",
    "alltoallv",
    "broadcast",
    "hypercube",
    "sendrecv",
    "alltoall",
    "scatter",
    "gather",
    "reduce",
];

/// The program a line names (`all_reduce_perf`, `alltoall_perf_mpi`), if exactly one.
pub fn named(line: &str) -> Option<&str> {
    // Most lines of a big log name nothing: one substring search says so.
    if !line.contains("_perf") {
        return None;
    }
    let mut found: Option<&str> = None;
    for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let Some(p) = program(word) else { continue };
        if found.is_some_and(|f| f != p) {
            return None;
        }
        found = Some(p);
    }
    found
}

/// `all_reduce_perf` or `all_reduce_perf_mpi`: the word itself, when it is a program name.
fn program(word: &str) -> Option<&str> {
    let base = word
        .strip_suffix("_perf_mpi")
        .or_else(|| word.strip_suffix("_perf"))?;
    PROGRAMS.contains(&base).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::named;

    #[test]
    fn programs_named_in_commands_and_prose() {
        assert_eq!(
            named("mpirun -np 8 ./build/all_reduce_perf -b 8"),
            Some("all_reduce_perf")
        );
        assert_eq!(
            named("srun --mpi=pmix all_reduce_perf_mpi -b 512M"),
            Some("all_reduce_perf_mpi")
        );
        assert_eq!(
            named("running the `/opt/nccl-tests/build/alltoall_perf` utility."),
            Some("alltoall_perf")
        );
        assert_eq!(
            named("NCCL_ALGO=TREE ./gather_perf -g 8"),
            Some("gather_perf")
        );
        assert_eq!(
            named("# Collective test concluded: broadcast_perf"),
            Some("broadcast_perf")
        );
        for none in [
            "running nccl test all_reduce -b 1",
            "my_all_reduce_perf.sh",
            "perf",
            "",
        ] {
            assert_eq!(named(none), None, "{none}");
        }
        // Two programs on one line say nothing about which one this run is.
        assert_eq!(named("for t in all_reduce_perf all_gather_perf; do"), None);
    }
}
