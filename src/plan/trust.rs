//! What a plan may do when nobody vouched for it. Plans come from pull requests and vendors, and
//! CI renders and runs them, so a plan is data by default: the keys that could run a program or
//! change which program runs are refused unless the user says they trust the plan
//! (`--trust-plan`). Those keys are the launcher's free-form options (`launch.mpirun.extra`,
//! `launch.slurm.extra`, `launch.slurm.step`) beyond a vetted set, the pyxis container keys (the
//! image *is* the programs), `launch.setup` (shell), `launch.baton` other than `path`, and
//! environment variables that pick programs or libraries (PATH, LD_PRELOAD, shell
//! hooks, plugin and launch-agent variables, MCA parameters outside a vetted set). There is no
//! other hook: a key that runs something must be added here. docs/trust.md states these rules for
//! users; keep the two together.

use super::diag::Diagnostic;
use super::loc::{Loc, Node, Pos};
use super::raw::RawPlan;

/// Whether a plan's program-running keys are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trust {
    /// The plan is data: program-running keys are errors.
    #[default]
    Data,
    /// The user vouched for the plan (`--trust-plan`), or the command runs nothing from it.
    Trusted,
}

const HELP: &str = "a plan is data unless you trust its author: pass --trust-plan to allow this";

/// Variables that choose which programs or libraries run, by exact name.
const PROGRAM_VARIABLES: &[(&str, &str)] = &[
    (
        "PATH",
        "chooses which programs run (mpirun, baton-mpi, the shell's commands)",
    ),
    ("LD_PRELOAD", "loads a library into every program"),
    (
        "LD_LIBRARY_PATH",
        "chooses which libraries every program loads",
    ),
    ("LD_AUDIT", "loads a library into every program"),
    ("BASH_ENV", "names a script every bash runs first"),
    ("ENV", "names a script every sh runs first"),
    ("IFS", "changes how the shell splits words"),
    (
        "PS4",
        "is expanded (and can run commands) when the shell traces",
    ),
    ("PROMPT_COMMAND", "is a command the shell runs"),
    ("SHELLOPTS", "sets shell options in every bash"),
    ("BASHOPTS", "sets shell options in every bash"),
    ("CDPATH", "changes where the shell's cd goes"),
    ("GLOBIGNORE", "changes the shell's globbing"),
    ("PYTHONPATH", "chooses which Python code runs"),
    ("PYTHONSTARTUP", "names Python code to run"),
    ("PERL5LIB", "chooses which Perl code runs"),
    ("PERL5OPT", "passes options to every Perl"),
    ("RUBYOPT", "passes options to every Ruby"),
    ("NODE_OPTIONS", "passes options to every Node.js"),
    ("GCONV_PATH", "makes glibc load modules from a directory"),
    ("LOCPATH", "makes glibc load locale data from a directory"),
    ("HOSTALIASES", "changes which hosts names resolve to"),
    (
        "OPAL_PREFIX",
        "chooses which Open MPI installation (and orted) runs",
    ),
    (
        "CUDA_INJECTION64_PATH",
        "loads a library into every CUDA program",
    ),
    (
        "NCCL_NET_PLUGIN",
        "loads a network plugin library into NCCL",
    ),
    (
        "NCCL_TUNER_PLUGIN",
        "loads a tuner plugin library into NCCL",
    ),
    (
        "NCCL_PROFILER_PLUGIN",
        "loads a profiler plugin library into NCCL",
    ),
    (
        "NCCL_ENV_PLUGIN",
        "loads an environment plugin library into NCCL",
    ),
    ("NCCL_GIN_PLUGIN", "loads a plugin library into NCCL"),
];

/// Variables that choose programs or libraries, by prefix.
const PROGRAM_PREFIXES: &[(&str, &str)] = &[
    ("LD_", "changes how every program is loaded"),
    ("DYLD_", "changes how every program is loaded"),
    ("BASH_FUNC_", "defines a shell function in every bash"),
];

/// Environment forms of MCA parameters: the parameter after the prefix is vetted like `--mca`.
const MCA_PREFIXES: &[&str] = &["OMPI_MCA_", "PRTE_MCA_", "PMIX_MCA_", "OPAL_MCA_"];

/// MCA parameters a plan may set: transport and collective selection and tuning, mapping and
/// binding. Exact names, or a prefix ending in `_`.
const MCA_ALLOWED: &[&str] = &[
    "btl",
    "btl_",
    "pml",
    "pml_",
    "mtl",
    "mtl_",
    "coll",
    "coll_",
    "osc",
    "osc_",
    "op",
    "op_",
    "smsc",
    "smsc_",
    "hwloc_base_",
    "rmaps_base_",
    "oob_tcp_if_include",
    "oob_tcp_if_exclude",
    "mpi_leave_pinned",
    "mpi_yield_when_idle",
    "opal_cuda_support",
];

/// Fragments that make even an allowed-looking MCA parameter name a program, a path or a script.
const MCA_PROGRAM_PARTS: &[&str] = &[
    "agent", "path", "prefix", "exec", "command", "cmd", "wrapper", "program", "script", "launch",
];

/// mpirun options a plan may pass, and whether each takes a value.
const MPIRUN_OPTIONS: &[(&str, bool)] = &[
    ("--bind-to", true),
    ("--map-by", true),
    ("--rank-by", true),
    ("--mca", true),
    ("-mca", true),
    ("--oversubscribe", false),
    ("--nooversubscribe", false),
    ("--report-bindings", false),
    ("--display-map", false),
    ("--display-allocation", false),
    ("--tag-output", false),
    ("--timestamp-output", false),
    ("--use-hwthread-cpus", false),
    ("--cpus-per-proc", true),
    ("--npernode", true),
];

/// sbatch/srun options a plan may pass (`launch.slurm.extra`, which `--target srun` also hands
/// to srun): scheduling, placement and resources. Not `--export`, `--chdir`, `--output`,
/// `--wrap`, `--prolog`, `--task-prolog`, `--bcast`, `--container*` or anything else that runs,
/// chooses or writes where a program lives.
const SLURM_OPTIONS: &[&str] = &[
    "--qos",
    "-q",
    "--constraint",
    "-C",
    "--gres",
    "--gpus",
    "-G",
    "--gpus-per-node",
    "--gpus-per-task",
    "--gpus-per-socket",
    "--cpus-per-gpu",
    "--cpus-per-task",
    "-c",
    "--mem",
    "--mem-per-cpu",
    "--mem-per-gpu",
    "--ntasks-per-node",
    "--ntasks-per-socket",
    "--reservation",
    "--nodelist",
    "-w",
    "--exclude",
    "-x",
    "--job-name",
    "-J",
    "--comment",
    "--switches",
    "--time-min",
    "--network",
    "--signal",
    "--requeue",
    "--no-requeue",
    "--licenses",
    "-L",
    "--hint",
    "--distribution",
    "-m",
    "--wckey",
    "--nice",
    "--priority",
    "--begin",
    "--deadline",
    "--gpu-bind",
    "--cpu-bind",
    "--mem-bind",
    "--sockets-per-node",
    "--cores-per-socket",
    "--threads-per-core",
    "--spread-job",
    "--use-min-nodes",
    "--overcommit",
    "--contiguous",
    "--tmp",
    "--mail-type",
    "--mail-user",
];

/// The program-running keys of `raw`, each as an error; empty for a plan that is only data.
pub fn review(raw: &RawPlan) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(e) = &raw.env {
        env(e, "env", &mut out);
    }
    for t in &raw.tests.value {
        let name = &t.value.name.value;
        if let Some(e) = &t.value.env {
            env(e, &format!("tests.{name}.env"), &mut out);
        }
        for set in t
            .value
            .matrix
            .iter()
            .flat_map(|m| &m.env)
            .flat_map(|l| &l.value)
        {
            env(set, &format!("tests.{name}.matrix.env"), &mut out);
        }
    }
    if let Some(l) = &raw.launch {
        if let Some(m) = &l.mpirun {
            mpirun_extra(m.extra.as_deref().unwrap_or_default(), &mut out);
        }
        if let Some(s) = &l.slurm {
            for x in s.extra.iter().flatten() {
                slurm_extra(x, "launch.slurm.extra", &mut out);
            }
            for x in s.step.iter().flatten() {
                slurm_extra(x, "launch.slurm.step", &mut out);
            }
            if let Some(e) = s.container_env.iter().flatten().next() {
                out.push(refused(
                    "`launch.slurm.container_env` replaces the image's variables (PATH, LD_LIBRARY_PATH…) with the launching shell's".into(),
                    e.pos,
                ));
            }
            for (key, v) in [
                ("container_image", &s.container_image),
                ("container_mounts", &s.container_mounts),
                ("container_name", &s.container_name),
            ] {
                if let Some(v) = v {
                    out.push(refused(
                        format!(
                            "`launch.slurm.{key}` chooses the programs every rank runs (the container's)"
                        ),
                        v.pos,
                    ));
                }
            }
        }
        if let Some(line) = l.setup.iter().flatten().next() {
            out.push(refused(
                "`launch.setup` is shell that every script runs before its steps".into(),
                line.pos,
            ));
        }
        if let Some(b) = l.baton.as_ref().filter(|b| b.value != "path") {
            out.push(refused(
                format!(
                    "`launch.baton` `{}` chooses the program every rank runs",
                    b.value
                ),
                b.pos,
            ));
        }
    }
    out
}

fn refused(why: String, pos: Pos) -> Diagnostic {
    Diagnostic::error(why, Some(pos))
        .label("runs or chooses a program")
        .help(HELP)
}

fn refused_option(why: String, pos: Pos, vetted: &str) -> Diagnostic {
    Diagnostic::error(why, Some(pos))
        .label("may run or choose a program")
        .help(format!("vetted options: {vetted}; {HELP}"))
}

fn env(node: &Loc<Node>, key: &str, out: &mut Vec<Diagnostic>) {
    let Node::Map(entries) = &node.value else {
        return;
    };
    for (k, _) in entries {
        let name = k.value.text();
        if let Some(why) = program_variable(&name) {
            out.push(refused(
                format!("`{key}` sets `{name}`, which {why}"),
                k.pos,
            ));
        }
    }
}

/// Why setting `name` can run or choose a program; `None` when it cannot.
pub fn program_variable(name: &str) -> Option<String> {
    if let Some((_, why)) = PROGRAM_VARIABLES.iter().find(|(n, _)| *n == name) {
        return Some(why.to_string());
    }
    if let Some((_, why)) = PROGRAM_PREFIXES.iter().find(|(p, _)| name.starts_with(p)) {
        return Some(why.to_string());
    }
    let param = MCA_PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
    (!mca_allowed(param)).then(|| {
        format!(
            "is the MCA parameter `{param}`, not one of the vetted transport, collective and \
             binding ones (MCA parameters can name programs to launch)"
        )
    })
}

fn mca_allowed(param: &str) -> bool {
    let lower = param.to_ascii_lowercase();
    MCA_ALLOWED
        .iter()
        .any(|a| lower == *a || (a.ends_with('_') && lower.starts_with(a)))
        && !MCA_PROGRAM_PARTS.iter().any(|p| lower.contains(p))
}

/// Option values for binding and mapping: names, numbers and `:,=_-.` only.
fn plain_value(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || ":,=_-.^".contains(c))
}

fn mpirun_extra(items: &[Loc<String>], out: &mut Vec<Diagnostic>) {
    let mut i = 0;
    while i < items.len() {
        let item = &items[i];
        let (flag, inline) = match item.value.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (item.value.as_str(), None),
        };
        let Some(&(_, takes_value)) = MPIRUN_OPTIONS.iter().find(|(o, _)| *o == flag) else {
            let vetted: Vec<&str> = MPIRUN_OPTIONS.iter().map(|(o, _)| *o).collect();
            out.push(refused_option(
                format!(
                    "`launch.mpirun.extra` item `{}` is not a vetted mpirun option: mpirun would \
                     run or pass on anything else",
                    item.value
                ),
                item.pos,
                &vetted.join(", "),
            ));
            i += 1;
            continue;
        };
        i += 1;
        if !takes_value {
            continue;
        }
        let mut values: Vec<&Loc<String>> = Vec::new();
        let arity = if flag.ends_with("mca") { 2 } else { 1 };
        let inline_values: Vec<&str> = inline.into_iter().collect();
        while values.len() + inline_values.len() < arity && i < items.len() {
            values.push(&items[i]);
            i += 1;
        }
        let texts: Vec<&str> = inline_values
            .iter()
            .copied()
            .chain(values.iter().map(|v| v.value.as_str()))
            .collect();
        if texts.len() < arity {
            out.push(refused(
                format!("`launch.mpirun.extra` option `{flag}` lacks its value"),
                item.pos,
            ));
            continue;
        }
        let bad = if arity == 2 {
            (!mca_allowed(texts[0])).then(|| {
                format!(
                    "`launch.mpirun.extra` sets the MCA parameter `{}`, not one of the vetted \
                     transport, collective and binding ones (MCA parameters can name programs \
                     to launch)",
                    texts[0]
                )
            })
            .or_else(|| {
                (!plain_value(texts[1]) && !texts[1].is_empty()).then(|| {
                    format!(
                        "`launch.mpirun.extra` MCA value `{}` has characters outside [A-Za-z0-9:,=_.^-]",
                        texts[1]
                    )
                })
            })
        } else {
            (!plain_value(texts[0])).then(|| {
                format!(
                    "`launch.mpirun.extra` value `{}` of `{flag}` has characters outside [A-Za-z0-9:,=_.^-]",
                    texts[0]
                )
            })
        };
        if let Some(why) = bad {
            out.push(refused(why, values.first().map_or(item.pos, |v| v.pos)));
        }
    }
}

fn slurm_extra(x: &Loc<String>, key: &str, out: &mut Vec<Diagnostic>) {
    let flag = x.value.split_once('=').map_or(x.value.as_str(), |(f, _)| f);
    // `-wnode1` is `-w node1`: a short option is its first two characters.
    let short = (!flag.starts_with("--") && flag.len() > 2)
        .then(|| flag.get(..2))
        .flatten();
    let known = |f: &str| SLURM_OPTIONS.contains(&f);
    if !(known(flag) || short.is_some_and(known)) {
        out.push(refused_option(
            format!(
                "`{key}` item `{}` is not a vetted scheduling or resource option \
                 (options such as --export, --chdir, --output or --task-prolog run, choose or \
                 write programs)",
                x.value
            ),
            x.pos,
            &SLURM_OPTIONS.join(", "),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_that_pick_programs() {
        for n in [
            "PATH",
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "BASH_ENV",
            "IFS",
            "PS4",
            "PROMPT_COMMAND",
            "LD_BIND_NOW",
            "BASH_FUNC_x%%",
            "NCCL_NET_PLUGIN",
            "OMPI_MCA_plm_rsh_agent",
            "OMPI_MCA_orte_launch_agent",
            "PRTE_MCA_prte_launch_agent",
            "OMPI_MCA_btl_tcp_exec_path",
        ] {
            assert!(program_variable(n).is_some(), "{n}");
        }
        for n in [
            "NCCL_ALGO",
            "NCCL_IB_HCA",
            "CUDA_VISIBLE_DEVICES",
            "OMPI_MCA_btl",
            "OMPI_MCA_btl_tcp_if_include",
            "OMPI_MCA_pml",
            "MY_FLAG",
            "PATHS_TO_SKIP",
        ] {
            assert!(program_variable(n).is_none(), "{n}");
        }
    }
}
