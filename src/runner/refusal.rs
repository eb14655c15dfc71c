//! A launcher that refuses a node set's step is not a node that failed. Slurm that cannot
//! create a step the allocation does not fit (`More processors requested than permitted`), an
//! MPI library whose PMI never started, a program missing from the path, Open MPI refusing a
//! host name: every set fails the same way, and blaming the set's nodes would drain a healthy
//! cluster over a command-line flag. This module reads a failed step's output for the
//! launcher's own words; the runner asks it only after the set's nodes answered a trivial
//! step, so a node that is down is still found dead, not excused.

/// The launcher's refusal: its message, as it printed it, and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub fix: String,
}

/// Longest message kept from the launcher's line.
const MAX_MESSAGE: usize = 300;

/// How much of the end of a step's output is read: launchers print their refusal last.
pub const TAIL_BYTES: u64 = 64 << 10;

/// What the launcher says when it refuses (substrings of one line), and what to change.
/// `{R}` stands for the plan's ranks per node.
const RULES: &[(&[&str], &str)] = &[
    (
        &["More processors requested than permitted"],
        "the allocation gives each node fewer tasks than the plan's `launch.ranks_per_node` \
         ({R}): allocate with `--ntasks-per-node={R}` (e.g. `salloc --no-kill -N 8 \
         --ntasks-per-node={R}`)",
    ),
    (
        &["Requested node configuration is not available"],
        "the allocation's nodes do not offer what a step asks for ({R} tasks per node, and \
         GPUs for nccl): allocate with `--ntasks-per-node={R}` (and `--gpus-per-node={R}`)",
    ),
    (
        &["Invalid generic resource"],
        "the allocation has no GPUs a step can ask for: allocate with `--gpus-per-node={R}`",
    ),
    (
        &["Unable to create step"],
        "Slurm refused the step inside this allocation: allocate with \
         `--ntasks-per-node={R}` (and `--gpus-per-node={R}` for nccl)",
    ),
    (
        &["Couldn't find the specified plugin name for mpi"],
        "srun has no such MPI plugin: set `launch.slurm.mpi` to one `srun --mpi=list` shows",
    ),
    (
        &[
            "PMIX_Init failed",
            "PMIx_Init failed",
            "PMI2_Init failed",
            "PMI_Init failed",
            "OMPI was not built with SLURM's PMI support",
        ],
        "the MPI library and srun's PMI plugin do not match: set `launch.slurm.mpi` (e.g. \
         `pmix`, `pmi2`) to the one the MPI library was built for",
    ),
    (
        &["execve(): ", "could not access or execute an executable"],
        "the launcher could not start the worker program on the nodes: install baton (and \
         baton-mpi for `backend: mpi`) at the same path on every node, or on a shared PATH",
    ),
    (
        &["illegal character in the following node name"],
        "Open MPI accepts host names of letters, digits, `.` and `-` only: name the nodes \
         without `_` (e.g. by their addresses) or run inside a Slurm allocation",
    ),
];

/// Lines that name a node the launcher could not use: the node's fault, found by the probe.
const NODE_FAULTS: &[&str] = &[
    "Required node not available",
    "Node failure",
    "is down",
    "not responding",
];

/// The launcher's refusal in the step output `log`, if it printed one.
pub fn find(log: &str, ranks_per_node: u64) -> Option<Refusal> {
    let lines: Vec<&str> = log.lines().collect();
    for (patterns, fix) in RULES {
        let found = patterns.iter().find_map(|p| line_with(&lines, p));
        if let Some(line) = found.filter(|l| !NODE_FAULTS.iter().any(|f| l.contains(f))) {
            return Some(Refusal {
                message: clean(&line),
                fix: fix.replace("{R}", &ranks_per_node.to_string()),
            });
        }
    }
    None
}

/// The launcher's line about a node that failed under the step (`srun: error: Node failure on
/// node06`), if it printed one: the cause that goes with the probe's verdict.
pub fn node_fault(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    NODE_FAULTS
        .iter()
        .find_map(|p| line_with(&lines, p))
        .map(|l| clean(&l))
}

/// The first line holding `pattern`, or two lines that hold it across their break.
fn line_with(lines: &[&str], pattern: &str) -> Option<String> {
    lines.iter().enumerate().find_map(|(k, l)| {
        if l.contains(pattern) {
            return Some(l.to_string());
        }
        // Open MPI breaks its sentences over lines: match across a line break too.
        let next = lines.get(k + 1)?;
        let joined = format!("{} {}", l.trim(), next.trim());
        (joined.contains(pattern) && !next.contains(pattern)).then_some(joined)
    })
}

/// One line of launcher output as a message: controls gone, bounded.
fn clean(line: &str) -> String {
    let s: String = line
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().count() <= MAX_MESSAGE {
        return s;
    }
    let mut cut: String = s.chars().take(MAX_MESSAGE).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_refusing_the_step_names_its_message_and_the_flag() {
        let log = "srun: cluster configuration lacks support for cpu binding\n\
                   srun: error: Unable to create step for job 17: More processors requested than permitted\n";
        let r = find(log, 2).unwrap();
        assert_eq!(
            r.message,
            "srun: error: Unable to create step for job 17: More processors requested than permitted"
        );
        assert!(r.fix.contains("--ntasks-per-node=2"), "{}", r.fix);
    }

    #[test]
    fn launcher_errors_are_told_from_node_faults() {
        let missing = "slurmstepd: error: execve(): baton-mpi: No such file or directory\n";
        assert!(find(missing, 1).unwrap().fix.contains("same path"));
        let ompi = "detected the\npresence of an illegal character in the following node name:\n  node: a_b\n";
        assert!(find(ompi, 1).unwrap().fix.contains("without `_`"));
        let pmix = "[n1:123] PMIX ERROR: ... PMIx_Init failed for ...\n";
        assert!(find(pmix, 1).is_some());
        // A node that is down is the probe's business, not an excuse.
        let down = "srun: error: Unable to create step for job 17: Required node not available (down, drained or reserved)\n";
        assert_eq!(find(down, 1), None);
        assert_eq!(find("rank 1: wrong data at 64K\nexit 1\n", 1), None);
        // … and what the launcher said of it goes with the probe's verdict.
        let died = "srun: Job step aborted\nsrun: error: Node failure on node06\n";
        assert_eq!(
            node_fault(died).as_deref(),
            Some("srun: error: Node failure on node06")
        );
        assert_eq!(node_fault("exit 1\n"), None);
        let long = format!(
            "srun: error: Unable to create step \u{1b}[31m{}",
            "x".repeat(900)
        );
        let r = find(&long, 1).unwrap();
        assert!(r.message.chars().count() <= MAX_MESSAGE + 1 && !r.message.contains('\u{1b}'));
    }
}
