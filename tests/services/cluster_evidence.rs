//! Node evidence on the simulated cluster (issue #24), with the kernel's real counters: a node
//! set to another MTU is named `config-mismatch` by the preflight and left out of every round;
//! a node whose link flaps while its pairs run has its `carrier_changes` cited, and no node
//! whose counters did not move is blamed by them; a node whose link loses 5% of its frames has
//! its TCP retransmits cited on its failing sets, its reason and its drain line.
#![cfg(feature = "mpi")]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use baton::results;
use common::cluster::{Fault, SIM, cluster_of, drains, nodes_json, run_line, verdict_of};
use common::{code, p, read, show, tmp, write};

fn plan(
    d: &std::path::Path,
    name: &str,
    over: &str,
    per_node: u32,
    extra: &str,
) -> std::path::PathBuf {
    plan_timing_out(d, name, over, per_node, "30s", extra)
}

fn plan_timing_out(
    d: &std::path::Path,
    name: &str,
    over: &str,
    per_node: u32,
    timeout: &str,
    extra: &str,
) -> std::path::PathBuf {
    write(
        d,
        "plan.yaml",
        &format!(
            "version: 1
name: {name}
backend: mpi
launch: {{ ranks_per_node: {per_node} }}
defaults: {{ iters: 20, warmup: 1, timeout: {timeout} }}
tests:
  - name: sets
    over: {over}
    collective: all_reduce
    sizes: [64K, 4M]
    expect:
      - wrong: 0{extra}
"
        ),
    )
}

#[test]
fn a_node_at_another_mtu_is_a_config_mismatch_and_left_out_of_every_set() {
    let Some(c) = cluster_of(8) else { return };
    let odd = c.nodes[4].clone();
    let d = tmp("cluster-evidence-mtu");
    let plan = plan(&d, "mtu", "each-node", 2, "");
    let out = d.join("out");
    let _mtu = Fault::apply(&["mtu", &odd, "1400"]);
    let o = c.salloc_n(
        &d,
        8,
        2,
        300,
        &run_line(env!("CARGO_BIN_EXE_baton-mpi"), &plan, &out),
    );
    // A node left out for its configuration is a failed node: the run fails, and says why.
    assert_eq!(code(&o), 1, "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!(
            "1 node config-mismatch: {odd} eth0 mtu 1400, fleet 1500"
        )),
        "{stdout}"
    );
    let r = results::read(&out.join("results.json")).unwrap();
    let pf = r.preflight.as_ref().expect("the preflight is recorded");
    assert_eq!(pf.nodes.len(), 8);
    // Its own wall, apart from the snapshots around the jobs: bounded by its 20 s limit.
    let took = pf.took_ms.expect("the preflight's wall is recorded");
    assert!(took > 0 && took < 20_000, "{took} ms");
    let lines: Vec<String> = pf
        .mismatches
        .iter()
        .map(|m| format!("{}: {}", m.host, m.line()))
        .collect();
    assert_eq!(lines, [format!("{odd}: eth0 mtu 1400, fleet 1500")]);
    assert!(!r.node_list.contains(&odd), "{:?}", r.node_list);
    assert_eq!(r.jobs.len(), 7);
    for j in &r.jobs {
        let set = j.node_set.as_ref().unwrap();
        assert!(!set.hosts.contains(&odd), "{} ran on {odd}", j.id);
    }
    let n = nodes_json(&out);
    let (v, why) = verdict_of(&n, &odd);
    assert_eq!(v, "config-mismatch", "{n:#}");
    assert!(why.contains("eth0 mtu 1400, fleet 1500"), "{why}");
    let drain = drains(&out);
    assert_eq!(drain.len(), 1, "{drain:?}");
    assert!(
        drain[0].contains(&format!("NodeName='{odd}'"))
            && drain[0].contains("eth0 mtu 1400, fleet 1500")
    );
    let md = read(&out.join("report/report.md"));
    assert!(
        md.contains("Fleet inventory") && md.contains("eth0 mtu"),
        "{md}"
    );
}

/// node03's link flaps (down and up every second or so) while six nodes run every pair.
/// Whether a flap makes the host backend's pair fail depends on where it lands (TCP retries
/// through a short outage; one that hits a collective can end the step): the test asserts
/// what holds either way. Every job node03 finished records its carrier_changes; a failing
/// pair's criterion, and node03's reason (and drain line, when failed), cite them; when none
/// of its pairs failed they are a warning on it. No other node is blamed by them.
/// Whether a set of `node` under `sets` (`OUT/sets/*/rNNN-KKK.set.json` and its journal) is
/// inside its job: it has started a repeat and not ended.
fn measuring(sets: &std::path::Path, node: &str) -> bool {
    let files = |d: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(d)
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    files(sets).iter().flat_map(|d| files(d)).any(|f| {
        let name = f.to_string_lossy().into_owned();
        let Some(base) = name.strip_suffix(".set.json") else {
            return false;
        };
        let of_node = std::fs::read_to_string(&f).is_ok_and(|t| t.contains(&format!("\"{node}\"")));
        let journal = std::fs::read_to_string(format!("{base}.jsonl")).unwrap_or_default();
        of_node
            && journal.contains("\"record\":\"repeat\"")
            && !journal.contains("\"record\":\"end\"")
    })
}

#[test]
fn a_flapping_node_has_its_carrier_changes_cited_and_no_other_node_is_blamed() {
    let Some(c) = cluster_of(6) else { return };
    let nodes = c.nodes[..6].to_vec();
    let flapped = nodes[2].clone();
    let d = tmp("cluster-evidence-flap");
    // Jobs of a few seconds (4M × 300), and flaps only while one of the node's sets is inside
    // its job: a flap during a set's MPI start-up kills the set before its first job, which
    // has no evidence to cite (every set of the node did so once in CI, at a flap every 0.8 s).
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1\nname: flap\nbackend: mpi\nlaunch: { ranks_per_node: 1 }\n\
         defaults: { iters: 300, warmup: 1, timeout: 30s }\ntests:\n  - name: sets\n    over: pairs\n\
         \x20   collective: all_reduce\n    sizes: [64K, 4M]\n    expect:\n      - wrong: 0\n",
    );
    let out = d.join("out");
    let stop = Arc::new(AtomicBool::new(false));
    let flapper = {
        let (stop, node, sets) = (stop.clone(), flapped.clone(), out.join("sets"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if measuring(&sets, &node) {
                    let _ = std::process::Command::new(SIM)
                        .args(["flap", &node, "1"])
                        .output();
                    std::thread::sleep(std::time::Duration::from_millis(1500));
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
    };
    let _heal = Fault::apply(&["heal", &flapped]);
    let o = c.salloc_n(
        &d,
        6,
        1,
        400,
        &format!(
            "{} run {} --nodes {} -o {}",
            env!("CARGO_BIN_EXE_baton-mpi"),
            p(&plan),
            baton::nodeset::compress(&nodes),
            p(&out)
        ),
    );
    stop.store(true, Ordering::Relaxed);
    flapper.join().unwrap();
    assert!([0, 1, 3].contains(&code(&o)), "{}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    let cites = |s: &str| s.contains("eth0 carrier_changes +");
    let mut recorded = 0;
    for j in &r.jobs {
        for e in &j.evidence {
            let moved = e.moved();
            if e.host == flapped {
                recorded += moved.iter().any(|l| cites(l)) as usize;
            } else {
                assert!(
                    !moved.iter().any(|l| cites(l)),
                    "{}: {} {moved:?}",
                    j.id,
                    e.host
                );
            }
        }
    }
    assert!(
        recorded > 0,
        "no job recorded {flapped}'s carrier_changes: {}",
        show(&o)
    );
    let junit = read(&out.join("junit.xml"));
    for other in nodes.iter().filter(|n| **n != flapped) {
        assert!(
            !junit.contains(&format!("{other} eth0 carrier_changes")),
            "{other} cited"
        );
    }
    let n = nodes_json(&out);
    for other in nodes.iter().filter(|n| **n != flapped) {
        let entry = n["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["host"] == other.as_str())
            .unwrap();
        assert!(!cites(&entry.to_string()), "{other} blamed: {entry}");
    }
    let (v, why) = verdict_of(&n, &flapped);
    let entry = n["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["host"] == flapped.as_str())
        .unwrap();
    match v {
        "failed" => {
            assert!(cites(why), "{why}");
            let drain = drains(&out);
            assert!(
                drain
                    .iter()
                    .any(|l| l.contains(&format!("'{flapped}'")) && cites(l)),
                "{drain:?}"
            );
        }
        _ => assert!(cites(&entry.to_string()), "{v}: {entry}"),
    }
    // A failing pair that finished its job cites what moved on its nodes: the link's flaps.
    if junit.contains(&format!("moved during the job: {flapped} eth0")) || v != "passed" {
        eprintln!("{flapped}: {v}; {why}");
    }
    if junit.contains("moved during the job") {
        assert!(
            junit.contains(&format!("{flapped} eth0 carrier_changes +")),
            "{junit}"
        );
    }
}

/// Each of two nodes runs its own set, whose second rank stalls (`BATON_FAULT`), so both
/// steps hang until the collective's timeout and their ranks never meet to take the job's
/// after-snapshot. node02's link goes down and up during the hang. The probe that follows a
/// failed set takes each node's after: node02's delta cites its carrier_changes, node01's
/// does not, and node02's reason names them.
#[test]
fn a_set_that_hangs_still_gets_its_nodes_after_snapshots() {
    let Some(c) = cluster_of(2) else { return };
    let nodes = c.nodes[..2].to_vec();
    let flapped = nodes[1].clone();
    let d = tmp("cluster-evidence-hang");
    let plan = plan_timing_out(&d, "hang", "each-node", 2, "6s", "");
    let out = d.join("out");
    let flapper = {
        let node = flapped.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(4));
            let _ = std::process::Command::new(SIM)
                .args(["flap", &node, "2"])
                .output();
        })
    };
    let _heal = Fault::apply(&["heal", &flapped]);
    let o = c.salloc_n(
        &d,
        2,
        2,
        300,
        &format!(
            "BATON_FAULT=stall:rank=1 {} run {} --nodes {} -o {}",
            env!("CARGO_BIN_EXE_baton-mpi"),
            p(&plan),
            baton::nodeset::compress(&nodes),
            p(&out)
        ),
    );
    flapper.join().unwrap();
    assert!([1, 4].contains(&code(&o)), "{}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 2, "{}", show(&o));
    for j in &r.jobs {
        let host = &j.node_set.as_ref().unwrap().hosts[0];
        assert_eq!(j.evidence.len(), 1, "{}: {:?}", j.id, j.evidence);
        let e = &j.evidence[0];
        assert!(e.before.is_some() && e.after.is_some(), "{host}: {e:?}");
        let moved = e.moved();
        let cited = moved.iter().any(|l| l.contains("eth0 carrier_changes +"));
        assert_eq!(cited, *host == flapped, "{host}: {moved:?}");
    }
    let n = nodes_json(&out);
    let (_, why) = verdict_of(&n, &flapped);
    assert!(why.contains("eth0 carrier_changes +"), "{why}");
    let (_, other) = verdict_of(&n, &nodes[0]);
    assert!(!other.contains("carrier_changes"), "{other}");
}

/// node06's link loses 5% of its frames (dropped on the bridge, both ways) while four nodes
/// run every pair. Its pairs' TCP retransmits climb by thousands, and the retransmit timeouts
/// make them several times slower than the others: `outlier` fails them (three of the six
/// pairs are lossy, so the median lies between a lossy pair and the slowest clean one, and no
/// clean pair can be below it). Each failing criterion cites what moved on the pair's nodes,
/// with the counts the results record; node06 has its retransmits in its reason (and drain
/// line, when failed); its partners, whose sockets retransmitted too (to node06), and the others
/// are passed and cited nowhere else (TCP's counters never isolate a node: both ends count).
#[test]
fn a_lossy_node_has_its_retransmits_cited_on_its_failing_pairs() {
    let Some(c) = cluster_of(8) else { return };
    let nodes = c.nodes[2..6].to_vec();
    let lossy = nodes[3].clone();
    let d = tmp("cluster-evidence-loss");
    let plan = write(
        &d,
        "plan.yaml",
        "version: 1
name: loss
backend: mpi
launch: { ranks_per_node: 1 }
defaults: { iters: 60, warmup: 3, timeout: 30s, in_place: out }
tests:
  - name: sets
    over: pairs
    collective: all_reduce
    sizes: [1M]
    expect:
      - wrong: 0
      - outlier: \"<= 40%\"
",
    );
    let out = d.join("out");
    let _loss = Fault::apply(&["loss", &lossy, "5%"]);
    let o = c.salloc_on(
        &d,
        &nodes,
        1,
        300,
        &run_line(env!("CARGO_BIN_EXE_baton-mpi"), &plan, &out),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    let r = results::read(&out.join("results.json")).unwrap();
    assert_eq!(r.jobs.len(), 6, "{}", show(&o));
    let junit = read(&out.join("junit.xml"));
    let (mut total, mut failed) = (0, 0);
    for j in &r.jobs {
        let hosts = &j.node_set.as_ref().unwrap().hosts;
        let retransmits = |host: &str| {
            let e = j.evidence.iter().find(|e| e.host == host).unwrap();
            e.moved()
                .into_iter()
                .find(|l| l.starts_with("tcp RetransSegs +"))
        };
        if !hosts.contains(&lossy) {
            continue;
        }
        let mine = retransmits(&lossy).unwrap_or_else(|| panic!("{}: no retransmits", j.id));
        let n: u64 = mine["tcp RetransSegs +".len()..].parse().unwrap();
        assert!(n >= 100, "{}: {mine}", j.id);
        // A failing pair's criterion names every node of it whose counter moved, with the
        // count the results record (a passing one cites nothing: see below).
        let cited: Vec<String> = hosts
            .iter()
            .filter_map(|h| retransmits(h).map(|l| format!("{h} {l}")))
            .collect();
        if junit.contains(&format!("moved during the job: {}", cited.join("; "))) {
            failed += 1;
            total += n;
        }
    }
    // The retransmit timeouts make a lossy pair several times slower, but how many it meets
    // is chance: most runs fail all three, and at least two of three (the timings then make
    // node06 failed or suspect). Only node06's pairs fail, and every citation is of one.
    assert!(
        failed >= 2,
        "{failed} of node06's pairs failed citing it: {junit}"
    );
    assert_eq!(junit.matches("<failure ").count(), failed, "{junit}");
    for l in junit
        .lines()
        .filter(|l| l.contains("moved during the job:"))
    {
        assert!(l.contains(&format!("{lossy} tcp RetransSegs +")), "{l}");
    }
    let n = nodes_json(&out);
    let (v, why) = verdict_of(&n, &lossy);
    // Its reason adds up what moved on it over its failing pairs.
    let sum = format!("tcp RetransSegs +{total}");
    assert!(why.contains(&sum), "{v}: {sum} not in {why}");
    eprintln!("{lossy}: {v}, {failed} of its 3 pairs failed; {why}");
    let drain = drains(&out);
    match v {
        "failed" => {
            assert_eq!(drain.len(), 1, "{drain:?}");
            assert!(
                drain[0].contains(&format!("'{lossy}'")) && drain[0].contains(&sum),
                "{drain:?}"
            );
        }
        "suspect" => assert!(failed < 3 && drain.is_empty(), "{drain:?}"),
        _ => panic!("{lossy} {v}: {why}"),
    }
    for other in nodes.iter().filter(|n| **n != lossy) {
        let (v, why) = verdict_of(&n, other);
        let entry = n["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["host"] == other.as_str())
            .unwrap();
        assert_eq!(v, "passed", "{other}: {why}");
        assert!(
            !entry.to_string().contains("RetransSegs"),
            "{other} blamed: {entry}"
        );
    }
}
