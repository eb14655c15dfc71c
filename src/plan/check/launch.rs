//! `launch`: the rank layout and launcher options.

use crate::plan::raw::RawLaunch;

use super::{Checker, MAX_RANKS};
use crate::plan::diag::Diagnostic;
use crate::plan::model::*;

impl Checker<'_> {
    pub(super) fn launch(&mut self, raw: Option<RawLaunch>, backend: Backend) -> Launch {
        let Some(raw) = raw else {
            return Launch {
                nodes: 1,
                ranks_per_node: None,
                gpus_per_rank: 1,
                slurm: Slurm {
                    mpi: "pmix".into(),
                    ..Slurm::default()
                },
                mpirun: Mpirun::default(),
            };
        };
        let nodes = self.count(&raw.nodes, "launch.nodes", 1).unwrap_or(1);
        let ranks_per_node = self.count(&raw.ranks_per_node, "launch.ranks_per_node", 1);
        let gpus_per_rank = self
            .count(&raw.gpus_per_rank, "launch.gpus_per_rank", 1)
            .unwrap_or(1);
        let total = (nodes as u64)
            .saturating_mul(ranks_per_node.unwrap_or(1) as u64)
            .saturating_mul(gpus_per_rank as u64);
        if total > MAX_RANKS {
            self.err(
                Diagnostic::error(
                    format!("launch gives {total} ranks; at most {MAX_RANKS} are supported"),
                    raw.nodes
                        .as_ref()
                        .or(raw.ranks_per_node.as_ref())
                        .map(|n| n.pos),
                )
                .help("nodes × ranks_per_node × gpus_per_rank"),
            );
            return Launch {
                nodes: 1,
                ranks_per_node: None,
                gpus_per_rank: 1,
                slurm: Slurm::default(),
                mpirun: Mpirun::default(),
            };
        }
        if backend == Backend::Mpi && gpus_per_rank > 1 {
            self.err(Diagnostic::error(
                "`launch.gpus_per_rank` applies to the nccl backend; the mpi backend runs in host memory",
                raw.gpus_per_rank.as_ref().map(|g| g.pos),
            ));
        }
        let mut slurm = Slurm {
            mpi: "pmix".into(),
            ..Slurm::default()
        };
        if let Some(s) = raw.slurm {
            slurm.partition = self.opt_text(&s.partition, "launch.slurm.partition");
            slurm.account = self.opt_text(&s.account, "launch.slurm.account");
            if let Some(t) = &s.time {
                let ok = !t.value.is_empty()
                    && t.value
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == ':' || c == '-');
                if ok {
                    slurm.time = Some(t.value.clone());
                } else {
                    self.err(
                        Diagnostic::error(
                            format!("`launch.slurm.time` `{}` is not a Slurm time", t.value),
                            Some(t.pos),
                        )
                        .help("use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"),
                    );
                }
            }
            slurm.exclusive = s.exclusive.map(|e| e.value).unwrap_or(false);
            if let Some(m) = &s.mpi {
                if !m.value.is_empty()
                    && m.value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    slurm.mpi = m.value.clone();
                } else {
                    self.err(
                        Diagnostic::error(
                            format!("`launch.slurm.mpi` `{}` is not an MPI plugin name", m.value),
                            Some(m.pos),
                        )
                        .help("e.g. pmix, pmix_v4, pmi2, none"),
                    );
                }
            }
            for x in s.extra.iter().flatten() {
                if self.no_control(x, "launch.slurm.extra") {
                    if x.value.starts_with('-') {
                        slurm.extra.push(x.value.clone());
                    } else {
                        self.err(
                            Diagnostic::error(
                                format!("`launch.slurm.extra` item `{}` is not an option", x.value),
                                Some(x.pos),
                            )
                            .help("each item is one sbatch option, e.g. --qos=high"),
                        );
                    }
                }
            }
            slurm.container_image =
                self.opt_text(&s.container_image, "launch.slurm.container_image");
            slurm.container_mounts =
                self.opt_text(&s.container_mounts, "launch.slurm.container_mounts");
        }
        let mut mpirun = Mpirun::default();
        if let Some(m) = raw.mpirun {
            mpirun.hostfile = self.opt_text(&m.hostfile, "launch.mpirun.hostfile");
            for x in m.extra.iter().flatten() {
                if self.no_control(x, "launch.mpirun.extra") {
                    mpirun.extra.push(x.value.clone());
                }
            }
        }
        Launch {
            nodes,
            ranks_per_node,
            gpus_per_rank,
            slurm,
            mpirun,
        }
    }
}
