//! Which rank this process is, read from the environment of whichever launcher started it.
//!
//! Launchers nest: `mpirun` inside a Slurm allocation starts its daemons with `srun`, so its
//! ranks inherit `SLURM_PROCID` (the daemon's) next to their own `OMPI_COMM_WORLD_RANK`. The
//! more specific launcher therefore wins: `BATON_*` (set by hand or by pdsh), then the MPI
//! launchers, and Slurm's own variables last.

/// Launcher variables that cannot place this process: guessing would pair the wrong ranks.
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    #[error("{var}={value:?} is not a non-negative whole number")]
    BadNumber { var: String, value: String },
    #[error("{var}={value} is more ranks than the {max} a plan can have")]
    TooMany { var: String, value: usize, max: u64 },
    #[error("{0}")]
    Inconsistent(String),
}

/// The launcher whose variables placed this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Baton,
    OpenMpi,
    /// MPICH's Hydra and Intel MPI (`PMI_RANK`, `PMI_SIZE`).
    Pmi,
    /// Cray PALS (`aprun`/`mpiexec` on HPE Cray EX).
    Pals,
    Pmix,
    Slurm,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Baton => "BATON_RANK",
            Source::OpenMpi => "Open MPI",
            Source::Pmi => "PMI (MPICH Hydra / Intel MPI)",
            Source::Pals => "Cray PALS",
            Source::Pmix => "PMIx",
            Source::Slurm => "Slurm",
        }
    }
}

/// This process's place among the ranks of one launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub rank: usize,
    pub size: usize,
    /// Rank among the processes on this node, which picks its GPU.
    pub local_rank: usize,
    /// Processes on this node, when the launcher says.
    pub local_size: Option<usize>,
    pub source: Source,
}

fn number(
    get: &impl Fn(&str) -> Option<String>,
    var: &str,
) -> Result<Option<usize>, LauncherError> {
    match get(var) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| LauncherError::BadNumber {
                var: var.into(),
                value: v,
            }),
    }
}

/// The first of `vars` that is set, and its name (a bad value is an error, not skipped).
fn first(
    get: &impl Fn(&str) -> Option<String>,
    vars: &[&'static str],
) -> Result<Option<(usize, &'static str)>, LauncherError> {
    for v in vars {
        if let Some(n) = number(get, v)? {
            return Ok(Some((n, *v)));
        }
    }
    Ok(None)
}

/// Every launcher's local-rank variable, for a launcher that gives none of its own.
const LOCAL_NAMES: &[&str] = &[
    "BATON_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "PMI_LOCAL_RANK",
    "PALS_LOCAL_RANKID",
    "SLURM_LOCALID",
];

/// This process's placement from the environment `get` reads; `None` when no launcher placed
/// it (a plain command in a shell or a batch script). Half-set or contradictory variables are
/// an error naming them: guessing would pair the wrong ranks.
pub fn detect(get: impl Fn(&str) -> Option<String>) -> Result<Option<Placement>, LauncherError> {
    let get = &get;
    let slurm_step = get("SLURM_STEP_ID").is_some();
    // (source, rank variable, size variables in order, own local-rank variables)
    let sources: [(Source, &str, &[&str], &[&'static str]); 6] = [
        (
            Source::Baton,
            "BATON_RANK",
            &["BATON_SIZE"],
            &["BATON_LOCAL_RANK"],
        ),
        (
            Source::OpenMpi,
            "OMPI_COMM_WORLD_RANK",
            &["OMPI_COMM_WORLD_SIZE"],
            &["OMPI_COMM_WORLD_LOCAL_RANK"],
        ),
        (
            Source::Pmi,
            "PMI_RANK",
            &["PMI_SIZE"],
            &["MPI_LOCALRANKID", "PMI_LOCAL_RANK"],
        ),
        (
            Source::Pals,
            "PALS_RANKID",
            &["PALS_SIZE", "PALS_NRANKS", "PMI_SIZE"],
            &["PALS_LOCAL_RANKID"],
        ),
        (
            Source::Pmix,
            "PMIX_RANK",
            &[
                "PMIX_SIZE",
                "SLURM_STEP_NUM_TASKS",
                "SLURM_NTASKS",
                "PMI_SIZE",
            ],
            &["SLURM_LOCALID", "PMIX_LOCAL_RANK"],
        ),
        (
            Source::Slurm,
            "SLURM_PROCID",
            &["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"],
            &["SLURM_LOCALID"],
        ),
    ];
    for (source, rank_var, size_vars, local_vars) in sources {
        // A batch script has SLURM_PROCID=0 too; only a step's tasks are ranks.
        if source == Source::Slurm && !slurm_step {
            continue;
        }
        let Some(rank) = number(get, rank_var)? else {
            if source == Source::Baton {
                for v in ["BATON_SIZE", "BATON_LOCAL_RANK"] {
                    if get(v).is_some() {
                        return Err(LauncherError::Inconsistent(format!(
                            "{v} is set but BATON_RANK is not: set BATON_RANK and BATON_SIZE together"
                        )));
                    }
                }
            }
            continue;
        };
        let mut size = None;
        for v in size_vars {
            if let Some(n) = number(get, v)? {
                size = Some((n, *v));
                break;
            }
        }
        let Some((size, size_var)) = size else {
            return Err(LauncherError::Inconsistent(format!(
                "{rank_var}={rank} is set but the number of ranks is not (none of {}); set BATON_RANK and BATON_SIZE instead",
                size_vars.join(", ")
            )));
        };
        if size as u64 > crate::plan::MAX_RANKS {
            return Err(LauncherError::TooMany {
                var: size_var.into(),
                value: size,
                max: crate::plan::MAX_RANKS,
            });
        }
        if size == 0 || rank >= size {
            return Err(LauncherError::Inconsistent(format!(
                "{rank_var}={rank} is not below {size_var}={size}"
            )));
        }
        let local = match first(get, local_vars)? {
            Some(l) => Some(l),
            None => first(get, LOCAL_NAMES)?,
        };
        let local_size = match source {
            Source::Baton => number(get, "BATON_LOCAL_SIZE")?.map(|n| (n, "BATON_LOCAL_SIZE")),
            Source::OpenMpi => number(get, "OMPI_COMM_WORLD_LOCAL_SIZE")?
                .map(|n| (n, "OMPI_COMM_WORLD_LOCAL_SIZE")),
            Source::Pmi => number(get, "MPI_LOCALNRANKS")?.map(|n| (n, "MPI_LOCALNRANKS")),
            Source::Pals => number(get, "PALS_LOCAL_SIZE")?.map(|n| (n, "PALS_LOCAL_SIZE")),
            Source::Pmix | Source::Slurm => slurm_local_size(get)?,
        };
        let (local_rank, local_var) = local.unwrap_or((0, ""));
        // No local rank given: alone on its node unless the launcher said otherwise.
        let local_rank = if local_var.is_empty() && local_size.is_some_and(|(n, _)| n > 1) {
            return Err(LauncherError::Inconsistent(format!(
                "{} is set but no local rank is: set BATON_LOCAL_RANK",
                local_size.map(|(_, v)| v).unwrap_or("")
            )));
        } else {
            local_rank
        };
        if let Some((ls, lv)) = local_size {
            if ls == 0 || ls > size {
                return Err(LauncherError::Inconsistent(format!(
                    "{lv}={ls} is not between 1 and {size_var}={size}"
                )));
            }
            if local_rank >= ls {
                return Err(LauncherError::Inconsistent(format!(
                    "{local_var}={local_rank} is not below {lv}={ls}"
                )));
            }
        }
        if local_rank > rank {
            return Err(LauncherError::Inconsistent(format!(
                "{local_var}={local_rank} is above {rank_var}={rank}: a local rank counts only this node's ranks"
            )));
        }
        return Ok(Some(Placement {
            rank,
            size,
            local_rank,
            local_size: local_size.map(|(n, _)| n),
            source,
        }));
    }
    Ok(None)
}

/// Whether an MPI launcher (mpirun, or srun with PMI/PMIx) started this process as one of its
/// ranks, so `baton-mpi` must join that MPI world instead of starting its own ranks; a batch
/// script's Slurm variables alone are no launcher.
pub fn under_mpi_launcher(get: impl Fn(&str) -> Option<String>) -> bool {
    get("OMPI_COMM_WORLD_SIZE").is_some() || get("PMIX_RANK").is_some() || get("PMI_RANK").is_some()
}

/// The process environment, as [`detect`] and [`under_mpi_launcher`] read it.
pub fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// An environment of `pairs` alone, for the unit tests of what reads one.
#[cfg(test)]
pub(crate) fn test_env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let m: std::collections::HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

/// Slurm's tasks on this node: known when every node runs the same number (`SLURM_TASKS_PER_NODE`
/// like `2(x4)`), or when the step has one node.
fn slurm_local_size(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<(usize, &'static str)>, LauncherError> {
    if number(get, "SLURM_STEP_NUM_NODES")? == Some(1) {
        return Ok(number(get, "SLURM_STEP_NUM_TASKS")?
            .or(number(get, "SLURM_NTASKS")?)
            .map(|n| (n, "SLURM_STEP_NUM_TASKS")));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_env as env;

    fn place(pairs: &[(&str, &str)]) -> Placement {
        detect(env(pairs)).unwrap().unwrap()
    }

    fn err(pairs: &[(&str, &str)]) -> String {
        detect(env(pairs)).unwrap_err().to_string()
    }

    #[test]
    fn each_launcher_is_read() {
        let p = place(&[
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_STEP_NUM_TASKS", "6"),
            ("SLURM_LOCALID", "1"),
        ]);
        assert_eq!(
            (p.rank, p.size, p.local_rank, p.source),
            (5, 6, 1, Source::Slurm)
        );
        let p = place(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        assert_eq!(
            (p.rank, p.size, p.local_rank, p.local_size, p.source),
            (3, 4, 1, Some(2), Source::OpenMpi)
        );
        let p = place(&[
            ("PMI_RANK", "2"),
            ("PMI_SIZE", "4"),
            ("MPI_LOCALRANKID", "0"),
        ]);
        assert_eq!((p.rank, p.size, p.local_rank), (2, 4, 0));
        let p = place(&[
            ("PALS_RANKID", "7"),
            ("PMI_SIZE", "8"),
            ("PALS_LOCAL_RANKID", "3"),
        ]);
        assert_eq!(
            (p.rank, p.size, p.local_rank, p.source),
            (7, 8, 3, Source::Pals)
        );
        let p = place(&[
            ("PMIX_RANK", "1"),
            ("SLURM_STEP_ID", "2"),
            ("SLURM_STEP_NUM_TASKS", "2"),
            ("SLURM_LOCALID", "1"),
        ]);
        assert_eq!(
            (p.rank, p.size, p.local_rank, p.source),
            (1, 2, 1, Source::Pmix)
        );
    }

    #[test]
    fn baton_variables_outrank_every_launcher_and_mpi_outranks_slurm() {
        let p = place(&[
            ("BATON_RANK", "1"),
            ("BATON_SIZE", "2"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "1"),
        ]);
        assert_eq!((p.rank, p.size, p.source), (1, 2, Source::Baton));
        // mpirun in an allocation: its daemons' SLURM_PROCID leaks into every rank.
        let p = place(&[
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("OMPI_COMM_WORLD_RANK", "6"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
        ]);
        assert_eq!((p.rank, p.size, p.source), (6, 8, Source::OpenMpi));
    }

    #[test]
    fn a_batch_script_or_a_shell_is_no_rank() {
        assert_eq!(
            detect(env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "8")])).unwrap(),
            None
        );
        assert_eq!(detect(env(&[])).unwrap(), None);
    }

    #[test]
    fn half_set_or_contradictory_values_name_the_variables() {
        assert!(err(&[("BATON_RANK", "x"), ("BATON_SIZE", "2")]).contains("BATON_RANK=\"x\""));
        assert!(err(&[("BATON_RANK", "1")]).contains("BATON_SIZE"));
        assert!(err(&[("BATON_SIZE", "2")]).contains("BATON_RANK is not"));
        let e = err(&[("BATON_RANK", "2"), ("BATON_SIZE", "2")]);
        assert!(e.contains("BATON_RANK=2 is not below BATON_SIZE=2"), "{e}");
        let e = err(&[("PMIX_RANK", "0")]);
        assert!(e.contains("PMIX_RANK=0") && e.contains("BATON_SIZE"), "{e}");
        let e = err(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]);
        assert!(
            e.contains("OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2"),
            "{e}"
        );
        let e = err(&[("BATON_RANK", "0"), ("BATON_SIZE", "0")]);
        assert!(e.contains("BATON_SIZE=0"), "{e}");
        let e = err(&[
            ("BATON_RANK", "1"),
            ("BATON_SIZE", "2"),
            ("BATON_LOCAL_SIZE", "2"),
        ]);
        assert!(e.contains("BATON_LOCAL_RANK"), "{e}");
    }

    #[test]
    fn sizes_beyond_the_plan_languages_rank_limit_are_invalid_from_every_launcher() {
        for (rank, size) in [
            ("BATON_RANK", "BATON_SIZE"),
            ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
            ("PALS_RANKID", "PALS_SIZE"),
            ("PMI_RANK", "PMI_SIZE"),
        ] {
            for n in ["18446744073709551615", "1000000000000", "1048577"] {
                let e = detect(env(&[(rank, "0"), (size, n)])).unwrap_err();
                assert!(matches!(e, LauncherError::TooMany { .. }), "{e}");
                assert!(e.to_string().contains(&format!("{size}={n}")), "{e}");
            }
        }
        let e = detect(env(&[
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "99999999"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("SLURM_NTASKS=99999999"), "{e}");
        // One past usize is not a number at all: invalid input too.
        let e = detect(env(&[
            ("BATON_RANK", "0"),
            ("BATON_SIZE", "18446744073709551616"),
        ]))
        .unwrap_err();
        assert!(matches!(e, LauncherError::BadNumber { .. }), "{e}");
        assert!(detect(env(&[("BATON_RANK", "0"), ("BATON_SIZE", "1048576")])).is_ok());
    }

    #[test]
    fn mpi_launchers_are_told_from_a_batch_script() {
        assert!(under_mpi_launcher(env(&[("OMPI_COMM_WORLD_SIZE", "2")])));
        assert!(under_mpi_launcher(env(&[
            ("SLURM_STEP_ID", "0"),
            ("PMIX_RANK", "1")
        ])));
        assert!(
            !under_mpi_launcher(env(&[("SLURM_JOB_ID", "5")])),
            "an sbatch script is not a rank"
        );
        assert!(!under_mpi_launcher(env(&[])));
        // MPICH's and Intel MPI's Hydra: PMI-1 variables, no Slurm step.
        assert!(under_mpi_launcher(env(&[
            ("PMI_RANK", "1"),
            ("PMI_SIZE", "2"),
            ("MPI_LOCALRANKID", "1")
        ])));
    }
}
