//! An acceptance as one Slurm batch job: `#SBATCH` lines sized for its most demanding phase,
//! then `baton accept` inside the job's allocation. Every value from the file or the command
//! line reaches the shell quoted (`crate::shell`).

use crate::shell::shell_quote;

/// What the batch script needs.
pub struct ScriptInput<'a> {
    pub name: &'a str,
    /// The acceptance file, absolute: the job starts wherever Slurm starts it.
    pub file: &'a str,
    /// How to call baton (`baton` from PATH by default).
    pub baton: &'a str,
    /// `--nodes COUNT`, when given; otherwise `sbatch -N` decides.
    pub nodes: Option<u32>,
    /// The most ranks per node any phase runs, and GPUs per node.
    pub ranks_per_node: u64,
    pub gpus_per_node: u64,
    pub exclusive: bool,
    /// A fixed output directory (`--results`): resubmitting the script resumes there.
    pub results: Option<&'a str>,
    /// Where `baton accept` reports (`crate::render::fleet`: lines that fill `fleet_args`).
    pub fleet: &'a [String],
}

/// A job name Slurm and a shell both take as it is.
fn job_name(name: &str) -> String {
    let n: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if n.is_empty() { "acceptance".into() } else { n }
}

/// The `sbatch` script.
pub fn slurm_script(i: &ScriptInput<'_>) -> String {
    let name = job_name(i.name);
    let mut s = format!(
        "#!/bin/bash\n# Written by `baton render`: acceptance {name} as one batch job; `baton accept`\n\
         # runs its phases in this job's allocation. With --results, submitting it again resumes.\n\
         #SBATCH --job-name={name}\n#SBATCH --output={name}-%j.out\n"
    );
    if let Some(n) = i.nodes {
        s.push_str(&format!("#SBATCH --nodes={n}\n"));
    }
    s.push_str(&format!(
        "#SBATCH --ntasks-per-node={}\n",
        i.ranks_per_node.max(1)
    ));
    if i.gpus_per_node > 0 {
        s.push_str(&format!("#SBATCH --gpus-per-node={}\n", i.gpus_per_node));
    }
    if i.exclusive {
        s.push_str("#SBATCH --exclusive\n");
    }
    let out = match i.results {
        Some(r) => shell_quote(r),
        None => format!("\"${{SLURM_SUBMIT_DIR:-.}}/{name}-${{SLURM_JOB_ID}}\""),
    };
    s.push_str(&format!(
        "set -euo pipefail\nif [ \"${{SLURM_JOB_NUM_NODES:-1}}\" -lt 2 ]; then\n  \
         echo \"{name}: an acceptance of one node tests nothing between nodes: submit with sbatch -N COUNT\" >&2\n  \
         exit 2\nfi\n"
    ));
    for line in i.fleet {
        s.push_str(line);
        s.push('\n');
    }
    let fleet = if i.fleet.is_empty() {
        ""
    } else {
        " \"${fleet_args[@]}\""
    };
    s.push_str(&format!(
        "exec {} accept {} -o {out}{fleet}\n",
        shell_quote(i.baton),
        shell_quote(i.file)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_quotes_what_it_was_given_and_runs_baton_accept() {
        let s = slurm_script(&ScriptInput {
            name: "nccl 8gpu; rm -rf /",
            file: "/a b/acc.yaml",
            baton: "baton",
            nodes: Some(8),
            ranks_per_node: 8,
            gpus_per_node: 8,
            exclusive: true,
            results: Some("/out/$(x)"),
            fleet: &[],
        });
        assert!(
            s.contains("#SBATCH --job-name=nccl_8gpu__rm_-rf__\n"),
            "{s}"
        );
        assert!(s.contains("#SBATCH --nodes=8\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n#SBATCH --exclusive\n"), "{s}");
        assert!(
            s.contains("exec 'baton' accept '/a b/acc.yaml' -o '/out/$(x)'\n"),
            "{s}"
        );
    }
}
