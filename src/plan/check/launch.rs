//! `launch`: the rank layout and launcher options.

use crate::plan::loc::{Loc, Scalar};
use crate::plan::raw::{RawLaunch, RawSlurm};

use super::{Checker, MAX_RANKS};
use crate::plan::diag::Diagnostic;
use crate::plan::model::*;
use crate::shell::is_env_name;

impl Checker<'_> {
    pub(super) fn launch(&mut self, raw: Option<RawLaunch>, backend: Backend) -> Launch {
        let Some(raw) = raw else {
            return Launch {
                nodes: 1,
                ranks_per_node: None,
                gpus_per_rank: 1,
                slurm: default_slurm(backend),
                mpirun: Mpirun::default(),
                baton: BatonFrom::Path,
                setup: Vec::new(),
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
                slurm: default_slurm(backend),
                mpirun: Mpirun::default(),
                baton: BatonFrom::Path,
                setup: Vec::new(),
            };
        }
        if backend == Backend::Mpi && gpus_per_rank > 1 {
            self.err(Diagnostic::error(
                "`launch.gpus_per_rank` applies to the nccl backend; the mpi backend runs in host memory",
                raw.gpus_per_rank.as_ref().map(|g| g.pos),
            ));
        }
        let mut slurm = default_slurm(backend);
        if let Some(s) = raw.slurm {
            self.step_options(&s, &mut slurm);
            slurm.partition = self.opt_text(&s.partition, "launch.slurm.partition");
            slurm.account = self.opt_text(&s.account, "launch.slurm.account");
            slurm.qos = self.opt_text(&s.qos, "launch.slurm.qos");
            slurm.reservation = self.opt_text(&s.reservation, "launch.slurm.reservation");
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
            for f in m.forward.iter().flatten() {
                let name = f.value.strip_suffix('*').unwrap_or(&f.value);
                if is_env_name(name) {
                    mpirun.forward.push(f.value.clone());
                } else {
                    self.err(
                        Diagnostic::error(
                            format!(
                                "`launch.mpirun.forward` item `{}` is not a variable name or prefix",
                                f.value
                            ),
                            Some(f.pos),
                        )
                        .help("a name (MY_FLAG) or a prefix ending in * (FI_*)"),
                    );
                }
            }
        }
        let baton = self.baton_from(raw.baton.as_ref(), slurm.container_image.is_some());
        let mut setup = Vec::new();
        for line in raw.setup.iter().flatten() {
            if self.no_control(line, "launch.setup") {
                setup.push(line.value.clone());
            }
        }
        Launch {
            nodes,
            ranks_per_node,
            gpus_per_rank,
            slurm,
            mpirun,
            baton,
            setup,
        }
    }

    /// `launch.baton`: `path`, an absolute path, `image` or `image:/path`.
    fn baton_from(&mut self, raw: Option<&Loc<String>>, has_image: bool) -> BatonFrom {
        let Some(b) = raw else {
            return BatonFrom::Path;
        };
        if !self.no_control(b, "launch.baton") {
            return BatonFrom::Path;
        }
        let v = b.value.as_str();
        let from = if v == "path" {
            Some(BatonFrom::Path)
        } else if v == "image" {
            Some(BatonFrom::Image(None))
        } else if let Some(p) = v.strip_prefix("image:") {
            p.starts_with('/')
                .then(|| BatonFrom::Image(Some(p.to_string())))
        } else {
            v.starts_with('/')
                .then(|| BatonFrom::Absolute(v.to_string()))
        };
        match from {
            Some(BatonFrom::Image(_)) if !has_image => {
                self.err(Diagnostic::error(
                    format!("`launch.baton` `{v}` is inside the container image, but `launch.slurm.container_image` is not set"),
                    Some(b.pos),
                ));
                BatonFrom::Path
            }
            Some(f) => f,
            None => {
                self.err(
                    Diagnostic::error(
                        format!("`launch.baton` `{v}` is not `path`, an absolute path, `image` or `image:/path`"),
                        Some(b.pos),
                    )
                    .help("e.g. path (by name from PATH), /opt/baton/bin/baton, image, image:/opt/baton/bin/baton"),
                );
                BatonFrom::Path
            }
        }
    }

    /// `launch.slurm`'s srun step keys: step options, CPU and GPU binding, pyxis name and env.
    fn step_options(&mut self, s: &RawSlurm, slurm: &mut Slurm) {
        for o in s.step.iter().flatten() {
            if self.no_control(o, "launch.slurm.step") {
                if is_step_option(&o.value) {
                    slurm.step.push(o.value.clone());
                } else {
                    self.err(
                        Diagnostic::error(
                            format!(
                                "`launch.slurm.step` item `{}` is not `--name` or `--name=value`",
                                o.value
                            ),
                            Some(o.pos),
                        )
                        .help(
                            "one srun option per item, its value after `=`, e.g. --network=sn_all",
                        ),
                    );
                }
            }
        }
        if let Some(c) = &s.cpus_per_task {
            slurm.cpus_per_task = match &c.value {
                Scalar::Str(w) if w == "auto" => CpusPerTask::Auto,
                Scalar::Str(w) if w == "off" => CpusPerTask::Off,
                Scalar::Int(n) if (1..=65536).contains(n) => CpusPerTask::Fixed(*n as u32),
                other => {
                    self.err(Diagnostic::error(
                        format!("`launch.slurm.cpus_per_task` {} is not `auto`, `off` or a count from 1", other.text()),
                        Some(c.pos),
                    ));
                    CpusPerTask::Auto
                }
            };
        }
        for (key, raw, out) in [
            ("launch.slurm.cpu_bind", &s.cpu_bind, &mut slurm.cpu_bind),
            ("launch.slurm.gpu_bind", &s.gpu_bind, &mut slurm.gpu_bind),
        ] {
            let Some(v) = raw else { continue };
            if v.value == "off" {
                *out = None;
            } else if bind_value(&v.value) {
                *out = Some(v.value.clone());
            } else {
                self.err(
                    Diagnostic::error(
                        format!(
                            "`{key}` `{}` has characters outside [A-Za-z0-9:,=_.-]",
                            v.value
                        ),
                        Some(v.pos),
                    )
                    .help("e.g. cores, none, map_cpu:0,8; closest, single:1; off leaves it out"),
                );
            }
        }
        if let Some(n) = &s.container_name {
            if !n.value.is_empty()
                && n.value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                slurm.container_name = Some(n.value.clone());
            } else {
                self.err(Diagnostic::error(
                    format!(
                        "`launch.slurm.container_name` `{}` is not letters, digits, `.`, `_`, `-`",
                        n.value
                    ),
                    Some(n.pos),
                ));
            }
        }
        for e in s.container_env.iter().flatten() {
            if is_env_name(&e.value) {
                slurm.container_env.push(e.value.clone());
            } else {
                self.err(Diagnostic::error(
                    format!(
                        "`launch.slurm.container_env` item `{}` is not a variable name",
                        e.value
                    ),
                    Some(e.pos),
                ));
            }
        }
    }
}

/// `srun --mpi=`: GPU ranks meet over baton's own TCP rendezvous and need no MPI plugin
/// (`none` works on every Slurm); the host backend measures MPI itself, through PMIx.
fn default_slurm(backend: Backend) -> Slurm {
    Slurm {
        mpi: match backend {
            Backend::Nccl => "none".into(),
            Backend::Mpi => "pmix".into(),
        },
        cpu_bind: Some("cores".into()),
        ..Slurm::default()
    }
}

/// `--name` or `--name=value`: one srun option, which a script passes as one quoted word.
fn is_step_option(o: &str) -> bool {
    let name = option_name(o);
    name.len() > 2
        && name.starts_with("--")
        && name[2..].starts_with(|c: char| c.is_ascii_alphabetic())
        && name[2..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn bind_value(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || ":,=_.-".contains(c))
}
