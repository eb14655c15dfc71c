//! The node list a plan runs on, resolved from where the plan says it comes from, and each
//! test's node sets over it: what `check` and `expand` show, and what the runner will drive.
//! Resolving reads a hostfile or the allocation's environment, so the CLI calls it beside
//! [`expand`](super::expand), which stays a pure function of the plan.

use std::path::Path;

use serde::Serialize;
use thiserror::Error;

use super::Job;
use crate::nodeset::hostlist::{self, HostlistError};
use crate::nodeset::isolate::Isolator;
use crate::nodeset::schedule::{self, Over, Pairing};
use crate::plan::{NodeSource, Nodes, Plan, PlanFiles};
use crate::results::NodeSetRef;

/// Slurm's default `MaxStepCount`: job steps one job may start. Every node set is one step.
pub const SLURM_MAX_STEP_COUNT: u128 = 40_000;

/// The environment variable Slurm names the allocation's nodes in.
pub const SLURM_NODELIST: &str = "SLURM_JOB_NODELIST";

#[derive(Debug, Error)]
pub enum NodeListError {
    #[error("hostfile {path}: {why}")]
    HostfileRead { path: String, why: String },
    #[error(
        "hostfile {path} is larger than {} bytes",
        hostlist::MAX_HOSTLIST_BYTES
    )]
    HostfileTooBig { path: String },
    /// `why` quotes no text of the file: a word that is not a host name is not shown.
    #[error("hostfile {path}, line {line}: {why}")]
    Hostfile {
        path: String,
        line: usize,
        why: String,
    },
    #[error(transparent)]
    Refused(#[from] crate::plan::PlanFileError),
    #[error("{SLURM_NODELIST}: {0}")]
    Allocation(HostlistError),
    #[error("`nodes.exclude` leaves no node of {0}")]
    AllExcluded(String),
    #[error("--nodes: {0}")]
    Given(HostlistError),
}

/// The resolved node list: hosts in order, where they came from, and the domains as indices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeList {
    /// `None`: only the allocation at run time will tell.
    pub hosts: Option<Vec<String>>,
    /// Where the list came from, for people: `nodes.hostlist`, `hostfile hosts.txt`, ….
    pub source: String,
    /// Domains as indices into `hosts`; hosts of a domain outside the list are left out.
    #[serde(skip)]
    pub domains: Vec<Vec<usize>>,
}

/// Resolves the plan's node list. A hostfile is one of the plan's files (relative to it, and
/// inside its directory unless trusted: `files`); `allocation` is `SLURM_JOB_NODELIST` when set.
pub fn resolve(
    nodes: &Nodes,
    files: &PlanFiles,
    allocation: Option<&str>,
) -> Result<NodeList, NodeListError> {
    let (hosts, source) = match &nodes.source {
        NodeSource::Hostlist(h) => (Some(h.clone()), "nodes.hostlist".to_string()),
        NodeSource::Hostfile(f) => (
            Some(read_hostfile(&files.resolve("nodes.hostfile", f)?, f)?),
            format!("hostfile {f}"),
        ),
        NodeSource::Allocation => match allocation {
            Some(a) => (
                Some(hostlist::expand(a).map_err(NodeListError::Allocation)?),
                SLURM_NODELIST.to_string(),
            ),
            None => (None, "the allocation at run time".to_string()),
        },
    };
    let hosts = match hosts {
        Some(h) => {
            let kept: Vec<String> = h
                .into_iter()
                .filter(|x| !nodes.exclude.contains(x))
                .collect();
            if kept.is_empty() {
                return Err(NodeListError::AllExcluded(source));
            }
            Some(kept)
        }
        None => None,
    };
    let domains = match &hosts {
        Some(h) => domain_indices(&nodes.domains, h),
        None => Vec::new(),
    };
    Ok(NodeList {
        hosts,
        source,
        domains,
    })
}

/// The plan's domains (hostnames) as indices into `hosts`; hosts outside the list are left
/// out, and so are domains left empty.
pub fn domain_indices(domains: &[Vec<String>], hosts: &[String]) -> Vec<Vec<usize>> {
    domains
        .iter()
        .map(|d| {
            d.iter()
                .filter_map(|x| hosts.iter().position(|y| y == x))
                .collect::<Vec<usize>>()
        })
        .filter(|d| !d.is_empty())
        .collect()
}

/// The node list given on the command line (`--nodes HOSTLIST`), in place of the plan's or the
/// allocation's; the plan's `exclude` and `domains` still apply.
pub fn given(nodes: &Nodes, hosts: &str) -> Result<NodeList, NodeListError> {
    let list = hostlist::expand(hosts).map_err(NodeListError::Given)?;
    let plan = Nodes {
        source: NodeSource::Hostlist(list),
        ..nodes.clone()
    };
    let here = PlanFiles::in_dir(Path::new("."), crate::plan::Trust::Data);
    let mut l = resolve(&plan, &here, None)?;
    l.source = "--nodes".into();
    Ok(l)
}

/// The node list of the hostfile the user named (`--hostfile FILE`), in place of the plan's or
/// the allocation's; read wherever it is, since the user chose it.
pub fn given_hostfile(nodes: &Nodes, path: &Path) -> Result<NodeList, NodeListError> {
    let shown = path.display().to_string();
    let plan = Nodes {
        source: NodeSource::Hostlist(read_hostfile(path, &shown)?),
        ..nodes.clone()
    };
    let here = PlanFiles::in_dir(Path::new("."), crate::plan::Trust::Data);
    let mut l = resolve(&plan, &here, None)?;
    l.source = format!("--hostfile {shown}");
    Ok(l)
}

/// The hosts of the hostfile at `path` (`shown` in messages): a regular file of at most
/// [`hostlist::MAX_HOSTLIST_BYTES`], whose words are never quoted in an error.
fn read_hostfile(path: &Path, shown: &str) -> Result<Vec<String>, NodeListError> {
    use crate::input::{ReadError, read_bounded};
    let bytes =
        read_bounded(path, hostlist::MAX_HOSTLIST_BYTES, "hostfile").map_err(|e| match e {
            ReadError::TooBig { .. } => NodeListError::HostfileTooBig {
                path: shown.to_string(),
            },
            e => NodeListError::HostfileRead {
                path: shown.to_string(),
                why: e.into_io().to_string(),
            },
        })?;
    let text = String::from_utf8(bytes).map_err(|_| NodeListError::HostfileRead {
        path: shown.to_string(),
        why: "not UTF-8 text".into(),
    })?;
    hostlist::parse_hostfile(&text).map_err(|(line, e)| NodeListError::Hostfile {
        path: shown.to_string(),
        line,
        why: e.unquoted(),
    })
}

/// One round, hosts named.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundView {
    pub round: u32,
    /// Each set as a hostlist.
    pub sets: Vec<String>,
    /// Nodes sitting the round out, as a hostlist (empty when none).
    pub idle: String,
}

/// A test's node sets, as far as they are known before running.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestSets {
    pub test: String,
    pub over: Over,
    /// Where the node list comes from.
    pub source: String,
    /// The node list as a hostlist, when known.
    pub nodes: Option<String>,
    pub node_count: Option<usize>,
    /// Fixed schedules: every round. `isolate`: its first (screening) round only.
    pub rounds: Vec<RoundView>,
    pub total_rounds: Option<usize>,
    pub total_sets: Option<u128>,
    /// `isolate`: later rounds follow from outcomes.
    pub adaptive: bool,
    /// Why no sets can be formed on this node list.
    pub problem: Option<String>,
}

/// The node sets of every test of `plan` that runs over node sets (`over:` other than `all`).
pub fn plan_sets(plan: &Plan, list: &NodeList) -> Vec<TestSets> {
    plan.tests
        .iter()
        .filter(|t| t.over != Over::All)
        .map(|t| test_sets(&t.name, t.over, list))
        .collect()
}

/// The node sets of one test.
pub fn test_sets(test: &str, over: Over, list: &NodeList) -> TestSets {
    let mut v = TestSets {
        test: test.to_string(),
        over,
        source: list.source.clone(),
        nodes: list.hosts.as_ref().map(|h| hostlist::compress(h)),
        node_count: list.hosts.as_ref().map(Vec::len),
        rounds: Vec::new(),
        total_rounds: None,
        total_sets: None,
        adaptive: over == Over::Isolate,
        problem: None,
    };
    let Some(hosts) = &list.hosts else {
        return v;
    };
    let name = |r: u32, sets: &[Vec<usize>], idle: &[usize]| RoundView {
        round: r,
        sets: sets
            .iter()
            .map(|s| hostlist::compress(&s.iter().map(|&i| &hosts[i]).collect::<Vec<_>>()))
            .collect(),
        idle: hostlist::compress(&idle.iter().map(|&i| &hosts[i]).collect::<Vec<_>>()),
    };
    if over == Over::Isolate {
        match Isolator::new(hosts.len(), &list.domains) {
            Ok(mut iso) => {
                if let Some(first) = iso.next_round() {
                    let mut used = vec![false; hosts.len()];
                    first.iter().flatten().for_each(|&i| used[i] = true);
                    let idle: Vec<usize> = (0..hosts.len()).filter(|&i| !used[i]).collect();
                    v.rounds.push(name(1, &first, &idle));
                }
            }
            Err(e) => v.problem = Some(e.to_string()),
        }
        return v;
    }
    match schedule::rounds(&over, hosts.len()) {
        Ok(rounds) => {
            v.total_rounds = Some(rounds.len());
            v.total_sets = Some(rounds.iter().map(|r| r.sets.len() as u128).sum());
            v.rounds = rounds
                .iter()
                .enumerate()
                .map(|(k, r)| name(k as u32 + 1, &r.sets, &r.idle))
                .collect();
        }
        Err(e) => v.problem = Some(e.to_string()),
    }
    v
}

/// The ID of one node set's run of plan job `job`: unique within a run, readable in a report
/// (`pairs[dtype=float]@r3:node[02,05]`). `over: all` has one set, the whole node list, so its
/// job keeps the plan job's ID: baselines, `relative:` and the history find it under the same
/// name as a plain run's.
pub fn set_job_id(job: &str, over: Over, round: u32, hosts: &[String]) -> String {
    if over == Over::All {
        return job.to_string();
    }
    format!("{job}@r{round}:{}", hostlist::compress(hosts))
}

/// Plan job `job` run on one node set: its own ID and identity, and the ranks that `per_node`
/// ranks on each of the set's nodes make (`None`: resolved by the launcher at run time).
pub fn set_job(job: &Job, set: NodeSetRef, per_node: Option<u64>) -> Job {
    let mut j = job.clone();
    j.id = set_job_id(&job.id, job.over, set.round, &set.hosts);
    if let Some(per_node) = per_node {
        let n = per_node * set.hosts.len() as u64;
        let split = job.split.as_ref().map(|s| &s.split);
        j.ranks = Some(n);
        j.groups = Some(super::groups(split, n, per_node));
    }
    j.node_set = Some(set);
    j
}

/// The plan jobs of tests with `over:` replaced by their node sets' jobs, as `results` recorded
/// them (in the order they appear there); a plan job no set ran stays, so grading fails it
/// closed. `per_node` as for [`set_job`].
pub fn jobs_with_sets<'r>(
    plan: &Plan,
    jobs: Vec<Job>,
    results: impl Iterator<Item = &'r crate::results::JobResult> + Clone,
    per_node: Option<u64>,
) -> Vec<Job> {
    let over_sets = |test: &str| {
        plan.tests
            .iter()
            .any(|t| t.name == test && t.over != Over::All)
    };
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let sets: Vec<NodeSetRef> = results
            .clone()
            .filter_map(|r| r.node_set.clone())
            .filter(|s| s.job == job.id)
            .collect();
        if sets.is_empty() || (!over_sets(&job.test) && sets.len() > 1) {
            out.push(job);
            continue;
        }
        let mut seen = std::collections::HashSet::new();
        for s in sets {
            let j = set_job(&job, s, per_node);
            if seen.insert(j.id.clone()) {
                out.push(j);
            }
        }
    }
    out
}

/// Whether `over` on `n` nodes is one node set of all of them, which is what `run` and `render`
/// do with every test today: each-node on one node, a pair on two.
pub fn is_one_job(over: Over, n: usize) -> bool {
    match over {
        Over::All => true,
        Over::EachNode => n == 1,
        Over::Pairs(Pairing::Random { rounds, .. }) => n == 2 && rounds == 1,
        Over::Pairs(_) => n == 2,
        Over::Isolate => false,
    }
}

impl TestSets {
    /// One line for `baton check`.
    pub fn summary(&self) -> String {
        let on = match (&self.nodes, self.node_count) {
            (Some(h), Some(n)) => format!("{n} node{} ({h}, from {})", plural(n), self.source),
            _ => format!("nodes from {}", self.source),
        };
        if let Some(p) = &self.problem {
            return format!("over {}: {p}", self.over.name());
        }
        match (self.over, self.total_rounds, self.total_sets) {
            (Over::Isolate, _, _) if !self.rounds.is_empty() => format!(
                "over isolate on {on}: adaptive; round 1 screens {} sets",
                self.rounds[0].sets.len()
            ),
            (_, Some(r), Some(s)) => format!(
                "over {} on {on}: {r} round{}, {s} node set{}{}",
                self.over.name(),
                plural(r),
                if s == 1 { "" } else { "s" },
                if s > SLURM_MAX_STEP_COUNT {
                    format!(
                        " — more steps than Slurm's default MaxStepCount ({SLURM_MAX_STEP_COUNT}) allows one job: \
                         use `pairs: {{ rounds: K }}` or `over: isolate`"
                    )
                } else {
                    String::new()
                }
            ),
            _ => format!("over {} on {on}", self.over.name()),
        }
    }

    /// The rounds for `baton expand`, at most `max_rounds` of them.
    pub fn render(&self, max_rounds: usize) -> String {
        let mut out = format!("  {}: {}\n", self.test, self.summary());
        for r in self.rounds.iter().take(max_rounds) {
            out.push_str(&format!("    round {}: {}", r.round, r.sets.join("  ")));
            if !r.idle.is_empty() {
                out.push_str(&format!("  (idle: {})", r.idle));
            }
            out.push('\n');
        }
        if self.rounds.len() > max_rounds {
            out.push_str(&format!(
                "    … {} more rounds not listed\n",
                self.rounds.len() - max_rounds
            ));
        }
        if self.adaptive && !self.rounds.is_empty() {
            out.push_str("    then: bisect failing sets, probe boundaries, confirm each suspect against a node that passed\n");
        }
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(source: NodeSource) -> Nodes {
        Nodes {
            source,
            exclude: vec!["n3".into()],
            domains: vec![vec!["n1".into(), "n2".into()], vec!["n9".into()]],
        }
    }

    #[test]
    fn resolves_hostlists_allocations_and_exclusions() {
        let dir = &PlanFiles::in_dir(Path::new("."), crate::plan::Trust::Data);
        let l = resolve(
            &nodes(NodeSource::Hostlist(hostlist::expand("n[1-4]").unwrap())),
            dir,
            Some("x[1-9]"),
        )
        .unwrap();
        assert_eq!(l.hosts.unwrap(), ["n1", "n2", "n4"], "the plan's list wins");
        assert_eq!(l.domains, vec![vec![0, 1]]);
        let l = resolve(&nodes(NodeSource::Allocation), dir, Some("n[1-5]")).unwrap();
        assert_eq!(l.source, SLURM_NODELIST);
        assert_eq!(l.hosts.unwrap().len(), 4);
        let l = resolve(&nodes(NodeSource::Allocation), dir, None).unwrap();
        assert_eq!(l.hosts, None);
        assert!(matches!(
            resolve(&nodes(NodeSource::Allocation), dir, Some("n[1-")),
            Err(NodeListError::Allocation(_))
        ));
        assert!(matches!(
            resolve(&nodes(NodeSource::Allocation), dir, Some("n3")),
            Err(NodeListError::AllExcluded(_))
        ));
    }

    #[test]
    fn hostfiles_are_read_bounded_and_relative_to_the_plan() {
        let dir = std::env::temp_dir().join(format!("baton-view-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hosts"), "n1 slots=8\nn2\nn3\n").unwrap();
        std::fs::write(dir.join("bad"), "n1\nn[2\n").unwrap();
        std::fs::write(dir.join("words"), "n1\ntok[abc-xyz]\n").unwrap();
        let files = PlanFiles::in_dir(&dir, crate::plan::Trust::Data);
        let l = resolve(&nodes(NodeSource::Hostfile("hosts".into())), &files, None).unwrap();
        assert_eq!(l.hosts.unwrap(), ["n1", "n2"]);
        let e = resolve(&nodes(NodeSource::Hostfile("bad".into())), &files, None).unwrap_err();
        assert!(e.to_string().starts_with("hostfile bad, line 2:"), "{e}");
        let e = resolve(&nodes(NodeSource::Hostfile("words".into())), &files, None).unwrap_err();
        assert!(
            !e.to_string().contains("abc"),
            "the file's words are not quoted: {e}"
        );
        let e = resolve(&nodes(NodeSource::Hostfile("none".into())), &files, None).unwrap_err();
        assert!(e.to_string().starts_with("hostfile none: "), "{e}");
        // A FIFO is refused at once, never waited on.
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = resolve(&nodes(NodeSource::Hostfile("fifo".into())), &files, None).unwrap_err();
            assert!(e.to_string().contains("FIFO"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_degenerate_node_sets_are_one_job() {
        assert!(is_one_job(Over::All, 32));
        assert!(is_one_job(Over::EachNode, 1));
        assert!(!is_one_job(Over::EachNode, 2));
        assert!(is_one_job(Over::Pairs(Pairing::All), 2));
        assert!(!is_one_job(Over::Pairs(Pairing::Ring), 3));
        assert!(!is_one_job(
            Over::Pairs(Pairing::Random { rounds: 2, seed: 0 }),
            2
        ));
        assert!(!is_one_job(Over::Isolate, 2));
    }

    /// Baselines, `relative:` and the history look jobs up by ID and identity: a test run
    /// `over: all` is the plan job itself on the node list, whichever path ran it (a plain
    /// launcher step, or one set of `baton run` inside an allocation).
    #[test]
    fn an_over_all_set_job_is_the_plain_job() {
        let yaml = "version: 1\nname: t\nbackend: mpi\nlaunch: { nodes: 2, ranks_per_node: 2 }\ntests:\n  - name: a\n    collective: all_reduce\n    sizes: [1M]\n    matrix: { dtype: [float, double] }\n  - name: b\n    over: each-node\n    collective: all_reduce\n    sizes: [1M]\n";
        let plan = crate::plan::parse_str("t.yaml", yaml).unwrap().plan;
        let jobs = super::super::expand(&plan).jobs;
        let hosts: Vec<String> = vec!["n1".into(), "n2".into()];
        let on = |j: &Job, hosts: &[String]| {
            let set = NodeSetRef {
                job: j.id.clone(),
                round: 1,
                index: 0,
                hosts: hosts.to_vec(),
            };
            set_job(j, set, Some(2))
        };
        for plain in jobs.iter().filter(|j| j.test == "a") {
            let set = on(plain, &hosts);
            assert_eq!(set.id, plain.id);
            assert_eq!(set.ranks, plain.ranks);
            assert_eq!(
                super::super::job_identity(&set, plan.backend),
                super::super::job_identity(plain, plan.backend),
                "{}",
                plain.id
            );
        }
        assert_eq!(jobs[0].id, "a[dtype=float]");
        let each = jobs.iter().find(|j| j.test == "b").unwrap();
        let set = on(each, &hosts[1..]);
        assert_eq!(
            set.id, "b@r1:n2",
            "a set of a schedule is named by its round and hosts"
        );
        assert_ne!(
            super::super::job_identity(&set, plan.backend),
            super::super::job_identity(each, plan.backend)
        );
    }

    #[test]
    fn views_name_hosts_per_round() {
        let list = NodeList {
            hosts: Some(hostlist::expand("n[1-5]").unwrap()),
            source: "nodes.hostlist".into(),
            domains: vec![],
        };
        let v = test_sets("b", Over::Pairs(Pairing::All), &list);
        assert_eq!(v.total_rounds, Some(5));
        assert_eq!(v.total_sets, Some(10));
        assert_eq!(v.rounds[0].sets.len(), 2);
        assert_eq!(
            v.rounds[0].idle.len(),
            2,
            "one bye per round: {:?}",
            v.rounds[0]
        );
        assert_eq!(
            v.summary(),
            "over pairs on 5 nodes (n[1-5], from nodes.hostlist): 5 rounds, 10 node sets"
        );
        let v = test_sets("i", Over::Isolate, &list);
        assert!(v.adaptive && v.rounds.len() == 1);
        let v = test_sets(
            "p",
            Over::Pairs(Pairing::All),
            &NodeList {
                hosts: Some(vec!["n1".into()]),
                ..list.clone()
            },
        );
        assert!(v.problem.unwrap().contains("at least 2"));
        let v = test_sets(
            "a",
            Over::EachNode,
            &NodeList {
                hosts: None,
                source: "the allocation at run time".into(),
                domains: vec![],
            },
        );
        assert_eq!(
            v.summary(),
            "over each-node on nodes from the allocation at run time"
        );
    }
}
