//! Which batch job a plan with node sets (`over:`) renders as, and over how many nodes; and
//! when a plain plan renders as that same batch job (`whole`).
//!
//! Such a plan is always one batch job whose `baton run` drives the sets inside the allocation:
//! `launch.nodes` is the size of one set's job, never the node list, so a script sized by it
//! would test one node of phase A (or one pair of phase B) and pass. The node count comes from
//! `render --nodes` (a count or a hostlist), else the plan's own node list, else from the job
//! itself (`sbatch -N`), where the script refuses a one-node job because sbatch gives one node
//! when no count was asked for. srun and mpirun scripts run one step over every node, so they
//! refuse such a plan and say what does run it.

use super::Target;
use super::context::Sweep;
use crate::expand::nodesets::{self, NodeList, NodeListError, TestSets};
use crate::plan::{NodeSource, Over, Plan, PlanFiles};

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(
        "test `{test}` runs `over: {over}`: its node sets are run by `baton run` inside an allocation, \
         one step per set, and a {target} script runs one step over every node, which would test \
         them as one set. Render `-t slurm` (one batch job that runs them all), or run `baton run \
         PLAN` inside `salloc` (`baton run PLAN --nodes HOSTLIST` without Slurm, through mpirun)"
    )]
    NotSlurm {
        test: String,
        over: &'static str,
        target: &'static str,
    },
    #[error(
        "--nodes: no test runs over node sets; the job's size is `launch.nodes` ({0}), set it there"
    )]
    NoSets(u32),
    #[error("--nodes 0: a job needs at least one node")]
    NoNodes,
    #[error("node list: {0}")]
    NodeList(#[from] NodeListError),
    #[error("test `{test}`: {problem} (nodes from {from})")]
    Sets {
        test: String,
        problem: String,
        from: String,
    },
}

/// The batch job for `plan`'s node sets; for a plan whose tests all run `over: all`, the
/// [`whole`] batch job or `None` (the plain scripts of one launcher step per environment set). `given` is `render --nodes`: a number is
/// a node count, anything else a hostlist; `files` are the plan's (its hostfile).
pub fn sweep(
    plan: &Plan,
    files: &PlanFiles,
    given: Option<&str>,
    targets: &[Target],
) -> Result<Option<Sweep>, SweepError> {
    let Some(first) = plan.tests.iter().find(|t| t.over != Over::All) else {
        return match given {
            Some(_) => Err(SweepError::NoSets(plan.launch.nodes)),
            None => Ok(whole(plan, targets)),
        };
    };
    if let Some(t) = targets.iter().find(|t| **t != Target::Slurm) {
        return Err(SweepError::NotSlurm {
            test: first.name.clone(),
            over: first.over.name(),
            target: t.name(),
        });
    }
    let (list, handed) = match given {
        Some(g) if g.bytes().all(|b| b.is_ascii_digit()) => {
            let n: usize = g.parse().map_err(|_| SweepError::NoNodes)?;
            if n == 0 {
                return Err(SweepError::NoNodes);
            }
            return counted(plan, n).map(Some);
        }
        Some(g) => (nodesets::given(&plan.nodes, g)?, true),
        None => {
            let l = nodesets::resolve(&plan.nodes, files, None)?;
            // A hostfile is relative to the plan, which the job carries into OUT: hand the
            // list to `baton run` as read here.
            let handed = matches!(plan.nodes.source, NodeSource::Hostfile(_));
            (l, handed)
        }
    };
    let sets = checked(nodesets::plan_sets(plan, &list))?;
    let tests = sets
        .iter()
        .map(|t| format!("{}: {}", t.test, t.summary()))
        .collect();
    Ok(Some(match &list.hosts {
        Some(h) => Sweep {
            nodes: Some(h.len()),
            nodelist: Some(crate::nodeset::compress(h)),
            run_nodes: handed.then(|| in_order(h)),
            tests,
            whole: false,
        },
        None => Sweep {
            nodes: None,
            nodelist: None,
            run_nodes: None,
            tests,
            whole: false,
        },
    }))
}

/// The batch job of a plain plan across several nodes: one `baton run` inside the allocation,
/// which runs it as one step across the job's nodes (every environment set in turn), and which
/// names a node that dies in results.json, the report, nodes.json and drain.sh, as it does for
/// node sets. `None` (the launcher step per environment set) for one node, where there is no
/// other node to lose; for an image, which only the rendered steps start ranks in (pyxis); and
/// for several GPUs per process, where `baton run`'s steps count NCCL ranks, not processes.
/// A plan's own hostlist is the job's (`baton run` runs on it); a hostfile, read where the
/// job runs, keeps the steps.
fn whole(plan: &Plan, targets: &[Target]) -> Option<Sweep> {
    let l = &plan.launch;
    let steps = l.nodes <= 1 || l.slurm.container_image.is_some() || l.gpus_per_rank > 1;
    let nodelist = match &plan.nodes.source {
        NodeSource::Allocation => None,
        NodeSource::Hostlist(h) => {
            let kept: Vec<&String> = h
                .iter()
                .filter(|x| !plan.nodes.exclude.contains(x))
                .collect();
            Some(crate::nodeset::compress(&kept))
        }
        NodeSource::Hostfile(_) => return None,
    };
    if steps || !targets.contains(&Target::Slurm) {
        return None;
    }
    Some(Sweep {
        nodes: Some(l.nodes as usize),
        nodelist,
        run_nodes: None,
        tests: Vec::new(),
        whole: true,
    })
}

/// `--nodes N`: any N nodes of the job, so the sets are counted on N placeholder hosts and
/// shown without their names.
fn counted(plan: &Plan, n: usize) -> Result<Sweep, SweepError> {
    let list = NodeList {
        hosts: Some((0..n).map(|i| format!("n{i}")).collect()),
        source: "--nodes".into(),
        domains: Vec::new(),
    };
    let sets = checked(nodesets::plan_sets(plan, &list))?;
    Ok(Sweep {
        nodes: Some(n),
        nodelist: None,
        run_nodes: None,
        tests: sets
            .into_iter()
            .map(|mut t| {
                t.nodes = Some("the job's".into());
                format!("{}: {}", t.test, t.summary())
            })
            .collect(),
        whole: false,
    })
}

/// The sets, or the first test whose sets cannot be formed on the list.
fn checked(sets: Vec<TestSets>) -> Result<Vec<TestSets>, SweepError> {
    match sets.iter().find(|t| t.problem.is_some()) {
        Some(t) => Err(SweepError::Sets {
            test: t.test.clone(),
            problem: t.problem.clone().unwrap_or_default(),
            from: t.source.clone(),
        }),
        None => Ok(sets),
    }
}

/// The hosts as a hostlist naming them in this order: compressed when that keeps the order
/// (the order decides the schedules), else comma-separated.
fn in_order(hosts: &[String]) -> String {
    let c = crate::nodeset::compress(hosts);
    if crate::nodeset::expand(&c).is_ok_and(|e| e == hosts) {
        c
    } else {
        hosts.join(",")
    }
}
