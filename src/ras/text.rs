//! The text form of a RAS status (every NCCL with RAS; the only one before 2.28.7): the job
//! summary, then `Errors` and `Warnings` sections whose entries name processes and ranks. Only
//! those entries are read; the tables above them are for people.

use super::{Communicator, MAX_RANKS, Rank, Report, Unreadable};

/// Which list a `Rank … managed by process …` line belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    None,
    Missing,
    Dead,
    /// Ranks that have launched up to this many collectives.
    Count(u64),
}

/// `Rank 2 -- GPU 0 managed by process 690 on node 192.0.2.2`.
fn rank_line(l: &str) -> Option<Rank> {
    let rest = l.strip_prefix("Rank ")?;
    let (rank, rest) = rest.split_once(" -- GPU ")?;
    let (gpu, rest) = rest.split_once(" managed by process ")?;
    let (pid, host) = rest.split_once(" on node ")?;
    Some(Rank {
        rank: rank.trim().parse().ok()?,
        host: host.trim().to_string(),
        pid: pid.trim().parse().ok(),
        cuda_dev: gpu.trim().parse().ok(),
        ..Rank::default()
    })
}

/// `Process 690 on node 192.0.2.2 managing GPU 0` → (pid, host, GPU).
fn process_line(l: &str) -> Option<(u64, String, Option<u32>)> {
    let rest = l.strip_prefix("Process ")?;
    let (pid, rest) = rest.split_once(" on node ")?;
    let (host, gpu) = rest.split_once(" managing GPU").unwrap_or((rest, ""));
    Some((
        pid.trim().parse().ok()?,
        host.trim().to_string(),
        gpu.trim().trim_start_matches('s').trim().parse().ok(),
    ))
}

/// `#0-0 (d02144a62bcec42e) INCOMPLETE` → (hash, problems).
fn comm_line(l: &str) -> Option<(String, Vec<String>)> {
    let rest = l.strip_prefix('#')?;
    let (_, rest) = rest.split_once(" (")?;
    let (hash, words) = rest.split_once(')')?;
    Some((
        format!("0x{}", hash.trim()),
        words
            .trim()
            .split(',')
            .map(|w| w.trim().to_string())
            .collect(),
    ))
}

/// `26 ranks have launched up to operation 6650` → 6650.
fn count_line(l: &str) -> Option<u64> {
    l.split_once(" launched up to operation ")?
        .1
        .trim()
        .parse()
        .ok()
}

fn comm<'a>(report: &'a mut Report, hash: &str) -> &'a mut Communicator {
    if let Some(i) = report.communicators.iter().position(|c| c.hash == hash) {
        return &mut report.communicators[i];
    }
    report.communicators.push(Communicator {
        hash: hash.to_string(),
        ..Communicator::default()
    });
    report.communicators.last_mut().expect("just pushed")
}

/// The report of a text status; [`Unreadable`] when it has no `Errors` section (cut short,
/// binary, something else answering) or names more than [`MAX_RANKS`] ranks.
pub fn parse(text: &str) -> Result<Report, Unreadable> {
    let mut r = Report {
        form: "text".into(),
        ..Report::default()
    };
    let (mut hash, mut mode) = (String::new(), Mode::None);
    let mut dead: Vec<(u64, String, Option<u32>)> = Vec::new();
    let mut in_sections = false;
    let mut ranks = 0usize;
    for raw in text.lines() {
        if ranks > MAX_RANKS {
            return Err(Unreadable(format!("it names more than {MAX_RANKS} ranks")));
        }
        let l = raw.trim();
        if let Some(v) = l.strip_prefix("NCCL version ") {
            r.nccl_version = v.split_whitespace().next().map(str::to_string);
        } else if l == "Errors" || l == "Warnings" {
            in_sections = true;
        } else if !in_sections {
            continue;
        } else if let Some((h, words)) = comm_line(l) {
            comm(&mut r, &h);
            hash = h;
            mode = Mode::None;
            r.problems.extend(words);
        } else if !raw.starts_with(' ')
            && !l.is_empty()
            && l.chars()
                .all(|c| c.is_ascii_uppercase() || c == ',' || c == '_')
        {
            // A job-level entry: INCOMPLETE, DEAD, TIMEOUT, …
            r.problems.push(l.to_string());
            hash.clear();
            mode = if l == "DEAD" { Mode::Dead } else { Mode::None };
        } else if l.starts_with("Missing communicator data") {
            mode = if hash.is_empty() {
                Mode::None
            } else {
                Mode::Missing
            };
        } else if let Some(n) = count_line(l) {
            let c = comm(&mut r, &hash);
            c.most_collectives = c.most_collectives.max(Some(n));
            mode = Mode::Count(n);
        } else if let Some(list) = l
            .strip_prefix("The missing rank: ")
            .or_else(|| l.strip_prefix("The missing ranks: "))
        {
            for n in list.split(',').filter_map(|x| x.trim().parse().ok()) {
                ranks += 1;
                if ranks > MAX_RANKS {
                    break;
                }
                let unresponsive = true;
                comm(&mut r, &hash).missing.push(Rank {
                    rank: n,
                    unresponsive,
                    ..Rank::default()
                });
            }
        } else if let Some(mut rank) = rank_line(l) {
            ranks += 1;
            match mode {
                Mode::Missing => {
                    rank.unresponsive = true;
                    comm(&mut r, &hash).missing.push(rank);
                }
                Mode::Count(n) => {
                    rank.collectives = Some(n);
                    comm(&mut r, &hash).ranks.push(rank);
                }
                Mode::None | Mode::Dead => {}
            }
        } else if let Some(p) = process_line(l)
            && mode == Mode::Dead
        {
            ranks += 1;
            dead.push(p);
        }
    }
    if ranks > MAX_RANKS {
        return Err(Unreadable(format!("it names more than {MAX_RANKS} ranks")));
    }
    if !in_sections {
        return Err(Unreadable(
            "no `Errors` section: not a RAS status, or cut short".into(),
        ));
    }
    mark_dead(&mut r, &dead);
    r.problems.dedup();
    Ok(r)
}

/// A dead process's missing ranks are dead; one whose ranks RAS did not list is named as a
/// missing rank of no known communicator.
fn mark_dead(r: &mut Report, dead: &[(u64, String, Option<u32>)]) {
    for (pid, host, gpu) in dead {
        let mut found = false;
        for m in r
            .communicators
            .iter_mut()
            .flat_map(|c| c.missing.iter_mut())
        {
            if m.pid == Some(*pid) {
                m.dead = true;
                found = true;
            }
        }
        if !found {
            comm(r, "").missing.push(Rank {
                rank: u64::MAX,
                host: host.clone(),
                pid: Some(*pid),
                cuda_dev: *gpu,
                unresponsive: true,
                dead: true,
                ..Rank::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::fixture;

    #[test]
    fn a_healthy_job_of_nccl_2_30_7_names_nothing() {
        let r = parse(&fixture("nccl-2.30.7-ok.txt")).unwrap();
        assert_eq!(r.nccl_version.as_deref(), Some("2.30.7"));
        assert!(r.all_well() && r.problems.is_empty(), "{r:?}");
    }

    #[test]
    fn a_stopped_rank_of_nccl_2_30_7_is_missing() {
        let r = parse(&fixture("nccl-2.30.7-rank-stopped.txt")).unwrap();
        let c = r
            .communicators
            .iter()
            .find(|c| c.hash == "0xd02144a62bcec42e")
            .unwrap();
        assert_eq!(c.missing.len(), 1);
        assert_eq!((c.missing[0].rank, c.missing[0].pid), (2, Some(690)));
        assert!(r.problems.contains(&"INCOMPLETE".to_string()));
        assert!(r.problems.contains(&"TIMEOUT".to_string()));
        let said = r.describe(&|_| "vm".into());
        assert!(
            said.contains("rank 2 (pid 690 on vm, GPU 0) missing: unresponsive"),
            "{said}"
        );
    }

    #[test]
    fn the_documentations_dead_process_and_counts() {
        let r = parse(&fixture("nccl-docs-dead.txt")).unwrap();
        let said = r.describe(&|x| x.host.clone());
        assert!(
            said.contains("pid 3487984 on 172.16.64.213, GPU 5) missing: dead"),
            "{said}"
        );
        assert!(
            said.contains("missing: unresponsive"),
            "the missing rank 21: {said}"
        );
        assert!(r.problems.contains(&"DEAD".to_string()));
        assert!(
            said.contains("rank 0 (pid 483072 on 172.16.64.210, GPU 0) 1 collective(s) behind"),
            "{said}"
        );
        // Only the behind group's ranks are listed; they are the ones at 6649.
        let c = r
            .communicators
            .iter()
            .find(|c| c.hash == "0xcf264af53edbe986")
            .unwrap();
        assert_eq!(
            c.ranks.iter().map(|x| x.collectives).collect::<Vec<_>>(),
            [Some(6649), Some(6649)]
        );
    }
}
