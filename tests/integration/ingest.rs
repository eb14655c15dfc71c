//! `baton ingest`: nccl-tests text, JSON and NCCL_DEBUG logs into the results contract, run
//! through the real binary.

use crate::common;

use baton::collective::{Collective, Dtype, RedOp};
use baton::results::{JobStatus, MatchBy, Placement};
use common::*;
use std::path::Path;

fn rows(r: &baton::results::JobResult) -> Vec<&baton::results::Row> {
    r.repeats.iter().flat_map(|x| &x.rows).collect()
}

#[test]
fn every_fixture_ingests_with_its_numbers() {
    let d = tmp("ingest_fixtures");
    for (name, coll, n_rows) in [
        ("all_reduce.txt", Collective::AllReduce, 31),
        ("all_gather.txt", Collective::AllGather, 7),
        ("all_gather.json", Collective::AllGather, 14),
        ("alltoall.txt", Collective::AllToAll, 7),
        ("alltoall.json", Collective::AllToAll, 14),
        ("broadcast.txt", Collective::Broadcast, 7),
        ("debug_healthy.txt", Collective::AllReduce, 6),
        ("debug_socket.txt", Collective::AllReduce, 5),
        ("mpi_np2_a3.txt", Collective::AllReduce, 14),
    ] {
        let out = ingest(&d, &format!("{name}.json"), &[&fixture(name)], None);
        let r = results(&out);
        assert_eq!(r.producer.command, "ingest");
        assert_eq!(r.jobs.len(), 1, "{name}");
        let j = &r.jobs[0];
        assert_eq!(j.collective, coll, "{name}");
        assert_eq!(j.dtype, Dtype::Float);
        assert_eq!(j.layout.nranks, 2, "{name}");
        assert_eq!(rows(j).len(), n_rows, "{name}");
        assert_eq!(j.status, JobStatus::Completed, "{name}");
        assert_eq!(j.match_by, MatchBy::Attributes);
        assert!(j.sources[0].ends_with(name));
        assert_eq!(
            r.environment.nccl_version.as_deref(),
            Some("2.28.3"),
            "{name}"
        );
        // Each job says what it was measured with, as far as the log tells.
        let m = j.measured_with.as_ref().expect("measured_with");
        assert_eq!(m.nccl_version.as_deref(), Some("2.28.3"), "{name}");
        assert_eq!(m.cta_policy, None, "{name}");
    }
}

#[test]
fn values_and_requested_sizes_are_as_printed() {
    let d = tmp("ingest_values");
    let r = results(&ingest(&d, "ar.json", &[&fixture("all_reduce.txt")], None));
    let j = &r.jobs[0];
    assert_eq!(j.op, Some(RedOp::Sum));
    let last = rows(j).last().copied().unwrap();
    assert_eq!(
        (last.requested, last.size, last.count),
        (8 << 30, 8 << 30, 2147483648)
    );
    let oop = last.cell(Placement::OutOfPlace).unwrap();
    assert_eq!(
        (oop.time_us, oop.algbw, oop.busbw, oop.wrong),
        (Some(24855.1), Some(345.60), Some(345.60), Some(0))
    );
    // Chunked: all_gather's 8-byte request prints as size 0, but `at: 8` must still find it.
    let r = results(&ingest(&d, "ag.json", &[&fixture("all_gather.json")], None));
    let first = rows(&r.jobs[0])[0];
    assert_eq!((first.requested, first.size, first.count), (8, 0, 0));
    // alltoall does not check in place: #wrong N/A.
    let r = results(&ingest(&d, "a2a.json", &[&fixture("alltoall.txt")], None));
    let row = rows(&r.jobs[0])[0];
    assert_eq!(row.cell(Placement::InPlace).unwrap().wrong, None);
    assert_eq!(row.cell(Placement::OutOfPlace).unwrap().wrong, Some(0));
    // Broadcast keeps its root.
    let r = results(&ingest(&d, "bc.json", &[&fixture("broadcast.txt")], None));
    assert_eq!(r.jobs[0].root, Some(0));
    // Devices become the layout and the environment.
    let host = &r.environment.hosts[0];
    assert_eq!((host.hostname.as_str(), host.gpus.len()), ("vm", 2));
    assert_eq!(host.gpus[1].pci_bus_id.as_deref(), Some("0000:00:07"));
}

#[test]
fn transports_per_channel_and_peer() {
    let d = tmp("ingest_transports");
    let r = results(&ingest(
        &d,
        "h.json",
        &[&fixture("debug_healthy.txt")],
        None,
    ));
    let t = &r.jobs[0].transports;
    assert_eq!(t.len(), 48, "24 channels both ways");
    assert!(
        t.iter()
            .all(|l| l.transport == "P2P" && l.detail == "P2P/direct pointer")
    );
    let r = results(&ingest(&d, "s.json", &[&fixture("debug_socket.txt")], None));
    let j = &r.jobs[0];
    assert_eq!(
        j.transports.len(),
        4,
        "send and receive lines describe the same link once"
    );
    assert!(j.transports.iter().all(|l| l.transport == "NET/Socket"));
    assert_eq!(j.env.get("NCCL_P2P_DISABLE").map(String::as_str), Some("1"));
    let r = results(&ingest(&d, "m.json", &[&fixture("mpi_np2_a3.txt")], None));
    let j = &r.jobs[0];
    assert_eq!((j.layout.processes, j.layout.gpus_per_process), (2, 1));
    assert!(j.transports.iter().all(|l| l.detail == "P2P/CUMEM"));
}

#[test]
fn debug_lines_in_a_separate_file() {
    let d = tmp("ingest_separate_debug");
    let text = read(&fixture("debug_healthy.txt"));
    let (debug, table): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|l| l.contains("NCCL INFO"));
    let t = write(&d, "table.txt", &table.join("\n"));
    let g = write(&d, "debug.txt", &debug.join("\n"));
    let r = results(&ingest(&d, "r.json", &[&t, &g], None));
    assert_eq!(r.jobs.len(), 1);
    assert_eq!(r.jobs[0].transports.len(), 48);
    assert_eq!(r.jobs[0].sources.len(), 2);
    // Alone, a debug file has no table to belong to.
    let o = baton(&["ingest", p(&g), "-o", p(&d.join("x.json"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("only NCCL_DEBUG lines"), "{}", show(&o));
}

#[test]
fn timestamps_unchecked_and_graph_variants() {
    let d = tmp("ingest_variants");
    let mut s = Synth::new(Collective::AllReduce, 2);
    s.timestamps = true;
    let log = write(&d, "ts.txt", &s.text());
    let r = results(&ingest(&d, "ts.json", &[&log], None));
    assert_eq!(rows(&r.jobs[0]).len(), 6);
    assert!(
        rows(&r.jobs[0])[0]
            .out_of_place
            .as_ref()
            .unwrap()
            .time_us
            .is_some()
    );
    // -c 0: #wrong is N/A, checking off.
    let mut s = Synth::new(Collective::AllReduce, 2);
    s.check = false;
    let log = write(&d, "c0.txt", &s.text());
    let r = results(&ingest(&d, "c0.json", &[&log], None));
    assert!(!r.jobs[0].settings.check);
    assert!(r.jobs[0].cells().all(|(_, _, _, c)| c.wrong.is_none()));
    // -G 5: graph launches recorded.
    let text = read(&fixture("all_reduce.txt")).replace("graph: 0", "graph: 5");
    let log = write(&d, "g.txt", &text);
    let r = results(&ingest(&d, "g.json", &[&log], None));
    assert_eq!(r.jobs[0].settings.cuda_graph, 5);
}

#[test]
fn all_seven_collectives_map_requested_sizes() {
    let d = tmp("ingest_seven");
    for c in Collective::ALL {
        let mut s = Synth::new(*c, 4);
        s.min = 8;
        s.max = 1 << 20;
        let log = write(&d, &format!("{c}.txt"), &s.text());
        let o = baton(&["ingest", p(&log), "-o", p(&d.join(format!("{c}.json")))]);
        assert_eq!(code(&o), 0, "{c}: {}", show(&o));
        assert!(!stderr(&o).contains("do not follow"), "{c}: {}", show(&o));
        let r = results(&d.join(format!("{c}.json")));
        let req: Vec<u64> = rows(&r.jobs[0]).iter().map(|x| x.requested).collect();
        assert_eq!(
            req,
            (0..=8).map(|k| 8u64 << (2 * k)).collect::<Vec<_>>(),
            "{c}"
        );
        assert_eq!(r.jobs[0].collective, *c);
        assert_eq!(r.jobs[0].op.is_some(), c.reduces(), "{c}");
    }
}

#[test]
fn split_groups_and_their_communicator_size() {
    let d = tmp("ingest_split");
    // 4 ranks, DIV 2: groups {0,1} and {2,3}; rank 0's group has 2 ranks, which sets the sizes.
    let mut s = Synth::new(Collective::AllGather, 4);
    s.groups = vec![0, 0, 1, 1];
    let log = write(&d, "split.txt", &s.text());
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("r.json"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(!stderr(&o).contains("do not follow"), "{}", show(&o));
    let r = results(&d.join("r.json"));
    let j = &r.jobs[0];
    assert_eq!(j.layout.nranks, 4);
    assert_eq!(j.groups.len(), 2);
    assert_eq!(j.groups[1].members, vec![2, 3]);
    assert_eq!(j.layout.ranks[3].group, Some(1));
}

#[test]
fn several_blocks_and_repeats() {
    let d = tmp("ingest_blocks");
    let mut s = Synth::new(Collective::AllReduce, 2);
    s.repeats = 3;
    let log = write(&d, "n3.txt", &s.text());
    let r = results(&ingest(&d, "n3.json", &[&log], None));
    assert_eq!(r.jobs[0].repeats.len(), 3);
    assert!(r.jobs[0].repeats.iter().all(|x| x.rows.len() == 6));
    // -d all: a block per datatype → a job per datatype.
    let float = Synth::new(Collective::AllReduce, 2).text();
    let mut half = Synth::new(Collective::AllReduce, 2);
    half.dtype = Dtype::Half;
    let half = half.text();
    let rows_of = |t: &str| -> String {
        t.lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let both = float.replace(&rows_of(&float), &(rows_of(&float) + &rows_of(&half)));
    let log = write(&d, "dall.txt", &both);
    let r = results(&ingest(&d, "dall.json", &[&log], None));
    let types: Vec<Dtype> = r.jobs.iter().map(|j| j.dtype).collect();
    assert_eq!(types, vec![Dtype::Float, Dtype::Half]);
    assert_ne!(r.jobs[0].id, r.jobs[1].id);
}

#[test]
fn labelled_logs_become_repeats_of_one_job() {
    let d = tmp("ingest_label");
    let a = fixture("all_reduce.txt");
    let r = results(&ingest(&d, "r.json", &[&a, &a], Some("allreduce")));
    assert_eq!(r.jobs.len(), 1);
    let j = &r.jobs[0];
    assert_eq!(
        (j.id.as_str(), j.test.as_str(), j.match_by),
        ("allreduce", "allreduce", MatchBy::Id)
    );
    assert_eq!(j.repeats.len(), 2);
    assert_eq!(j.repeats[1].index, 1);
    let o = baton(&[
        "ingest",
        p(&a),
        p(&fixture("all_gather.txt")),
        "-o",
        p(&d.join("x.json")),
        "--job",
        "x",
    ]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("different jobs"), "{}", show(&o));
}

/// A table cut short (the run died, or the capture did) keeps its rows, is a job error and
/// exits 3: a log that shows a failure never exits 0 with no error recorded.
#[test]
fn truncated_logs_keep_their_rows_and_say_so() {
    let d = tmp("ingest_truncated");
    let text = read(&fixture("all_reduce.txt"));
    let cut = &text[..text.find("   268435456").unwrap() + 30];
    let log = write(&d, "cut.txt", cut);
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("r.json"))]);
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert!(stderr(&o).contains("incomplete table row"), "{}", show(&o));
    let r = results(&d.join("r.json"));
    assert_eq!(r.jobs[0].status, JobStatus::Partial);
    assert_eq!(rows(&r.jobs[0]).len(), 25);
    let errors: Vec<&str> = r.jobs[0]
        .errors
        .iter()
        .map(|e| e.message.as_str())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("log ends before the nccl-tests footer")),
        "{errors:?}"
    );
    // A JSON document cut mid-write keeps the rows before the cut.
    let json = read(&fixture("all_gather.json"));
    let cut = &json[..json.find("{\"size\":8192").unwrap() + 20];
    let log = write(&d, "cut.json", cut);
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("rj.json"))]);
    assert_eq!(code(&o), 3, "{}", show(&o));
    let r = results(&d.join("rj.json"));
    assert_eq!(rows(&r.jobs[0]).len(), 5);
    assert_eq!(r.jobs[0].status, JobStatus::Partial);
    assert!(!r.jobs[0].errors.is_empty());
}

#[test]
fn unknown_lines_are_counted_not_fatal() {
    let d = tmp("ingest_unknown");
    let text = read(&fixture("broadcast.txt")).replace(
        "#  Rank  1",
        "some launcher chatter\nmore chatter\n#  Rank  1",
    );
    let log = write(&d, "chatty.txt", &text);
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("r.json"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stderr(&o).contains("skipped 2 unrecognised line(s)"),
        "{}",
        show(&o)
    );
    assert!(stdout(&o).contains("1 warning(s)"), "{}", show(&o));
}

#[test]
fn what_is_not_a_log_is_rejected_with_exit_2() {
    let d = tmp("ingest_reject");
    for (name, text, says) in [
        (
            "notes.txt",
            "dear diary\nthe fabric was slow today\n",
            "not an nccl-tests log",
        ),
        ("empty.txt", "", "not an nccl-tests log"),
        ("bad.json", "{\"hello\": 1}", "not nccl-tests `-J` output"),
    ] {
        let f = write(&d, name, text);
        let o = baton(&["ingest", p(&f), "-o", p(&d.join("r.json"))]);
        assert_eq!(code(&o), 2, "{name}: {}", show(&o));
        assert!(stderr(&o).contains(says), "{name}: {}", show(&o));
        assert!(
            stderr(&o).contains(name),
            "the message names the file: {}",
            show(&o)
        );
    }
    let o = baton(&["ingest", "/nonexistent/log.txt", "-o", p(&d.join("r.json"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("/nonexistent/log.txt"));
    assert!(!d.join("r.json").exists(), "nothing is written on failure");
}

/// The public corpus (tests/data/nccl-tests/real, see its SOURCES.md): every log is ingested
/// exactly as `expected.py` read its printed table, or refused with a message that names the file
/// and the reason; a refused log with the `--collective` its runs need ingests exactly. Exit codes
/// follow the log: 0 only when it shows no failure.
#[test]
fn every_real_log_ingests_as_expected() {
    let d = tmp("ingest_real");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nccl-tests/real");
    let mut n = 0;
    for entry in std::fs::read_dir(dir.join("expected")).unwrap() {
        let exp: serde_json::Value = serde_json::from_str(&read(&entry.unwrap().path())).unwrap();
        let log = dir.join(exp["log"].as_str().unwrap());
        let out = d.join(format!("{n}.json"));
        let o = baton(&["ingest", p(&log), "-o", p(&out)]);
        let name = exp["log"].as_str().unwrap();
        if let Some(why) = exp["refuse"].as_str() {
            assert_eq!(code(&o), 2, "{name}: {}", show(&o));
            assert!(stderr(&o).contains(why), "{name}: {}", show(&o));
            assert!(stderr(&o).contains(name), "{name}: {}", show(&o));
            assert!(!out.exists(), "{name}: refused, yet written");
            let Some(hint) = exp["hint"].as_str() else {
                n += 1;
                continue;
            };
            assert!(stderr(&o).contains("--collective"), "{name}: {}", show(&o));
            let o = baton(&["ingest", p(&log), "-o", p(&out), "--collective", hint]);
            check_real(name, &exp, &o, &results(&out), Some(hint));
        } else {
            check_real(name, &exp, &o, &results(&out), None);
        }
        n += 1;
    }
    assert!(n >= 30, "the corpus has {n} logs");
}

fn check_real(
    name: &str,
    exp: &serde_json::Value,
    o: &std::process::Output,
    r: &baton::results::Results,
    hint: Option<&str>,
) {
    let runs = exp["runs"].as_array().unwrap();
    assert_eq!(r.jobs.len(), runs.len(), "{name}: {}", show(o));
    let mut failed = false;
    for (j, run) in r.jobs.iter().zip(runs) {
        let coll = run["collective"].as_str().or(hint).unwrap();
        assert_eq!(j.collective.to_string(), coll, "{name}");
        let status = run["status"].as_str().unwrap();
        assert_eq!(
            format!("{:?}", j.status).to_lowercase(),
            status,
            "{name}: {:?}",
            j.errors
        );
        let min_errors = run["min_errors"].as_u64().unwrap() as usize;
        assert!(
            j.errors.len() >= min_errors,
            "{name}: {} error(s), want {min_errors}: {:?}",
            j.errors.len(),
            j.errors
        );
        if min_errors == 0 {
            assert!(j.errors.is_empty(), "{name}: {:?}", j.errors);
        }
        failed |= !j.errors.is_empty() || status != "completed";
        let want = run["rows"].as_array().unwrap();
        let got = rows(j);
        assert_eq!(got.len(), want.len(), "{name}: rows");
        for (g, w) in got.iter().zip(want) {
            let at = format!("{name} line {}", w["line"]);
            assert_eq!(g.size, w["size"].as_u64().unwrap(), "{at}");
            assert_eq!(g.count, w["count"].as_u64().unwrap(), "{at}");
            assert_eq!(j.dtype.to_string(), w["type"].as_str().unwrap(), "{at}");
            for (place, key) in [
                (Placement::OutOfPlace, "out_of_place"),
                (Placement::InPlace, "in_place"),
            ] {
                let c = g.cell(place).unwrap();
                let v = &w[key];
                assert_eq!(c.time_us, v[0].as_f64(), "{at} {key} time");
                assert_eq!(c.algbw, v[1].as_f64(), "{at} {key} algbw");
                assert_eq!(c.busbw, v[2].as_f64(), "{at} {key} busbw");
                assert_eq!(c.wrong, v[3].as_u64(), "{at} {key} #wrong");
            }
        }
    }
    let want_exit = if failed { code(o).max(1) } else { 0 };
    assert_eq!(code(o), want_exit, "{name}: {}", show(o));
    if failed {
        assert!(
            r.jobs.iter().any(|j| !j.errors.is_empty()),
            "{name}: a failure must be recorded, not only an exit code"
        );
    }
}

/// One log per failure kind, real where the corpus has one: each exits non-zero and records a
/// job error that says what failed and where. Never exit 0 with no error recorded.
#[test]
fn every_failure_kind_is_an_error_with_where_and_a_nonzero_exit() {
    let d = tmp("ingest_failure_kinds");
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nccl-tests/real");
    let fixture_text = read(&fixture("all_reduce.txt"));
    let cut = &fixture_text[..fixture_text.find("  1073741824").unwrap()];
    let timeout = write(
        &d,
        "timeout.txt",
        &format!("{cut}vm: Test timeout (300s) common.cu:1234\n"),
    );
    let warn = write(
        &d,
        "warn.txt",
        &fixture_text.replace(
            "#  Rank  1",
            "vm:1:2 [0] transport/nvls.cc:598 NCCL WARN Cuda failure 1 'invalid argument'\n#  Rank  1",
        ),
    );
    let cases: Vec<(&str, std::path::PathBuf, Option<&str>, i32, &str)> = vec![
        (
            "before the table",
            real.join("rccl-tests-50-mi210-failure-before-table.txt"),
            None,
            3,
            "line 10: sharbox-ultra: Test NCCL failure",
        ),
        (
            "inside a row",
            real.join("nccl-tests-355-cuda-failure-inside-row.txt"),
            None,
            3,
            "row of 2097152 B",
        ),
        (
            "after the rows",
            real.join("nccl-tests-322-failure-after-rows.txt"),
            Some("all_reduce"),
            3,
            "line 7: HCA-128: Test NCCL failure",
        ),
        (
            "CUDA init",
            real.join("h100-cuda-init-failure.txt"),
            None,
            3,
            "'system not yet initialized'",
        ),
        (
            "nccl-tests 1.x",
            real.join("nccl-tests-11-nvprof-cuda-failure.txt"),
            None,
            3,
            "Cuda failure common.cu:510",
        ),
        (
            "#wrong > 0",
            real.join("rtx3090-wrong-108-failed.txt"),
            Some("all_reduce"),
            1,
            "count wrong elements",
        ),
        (
            "Out of bounds FAILED",
            real.join("rtx3090-wrong-108-failed.txt"),
            Some("all_reduce"),
            1,
            "Out of bounds values : 108 FAILED",
        ),
        (
            "table cut short",
            real.join("nccl-tests-287-5090-cut-short.txt"),
            None,
            3,
            "log ends before the nccl-tests footer",
        ),
        (
            "processes alone",
            real.join("nccl-tests-107-non-mpi-duplicate-rank0.txt"),
            None,
            3,
            "every process ran alone",
        ),
        ("timeout", timeout, None, 4, "Test timeout"),
    ];
    for (kind, log, collective, exit, says) in cases {
        let out = d.join("r.json");
        let mut args = vec!["ingest", p(&log), "-o", p(&out)];
        if let Some(c) = collective {
            args.extend(["--collective", c]);
        }
        let o = baton(&args);
        assert_eq!(code(&o), exit, "{kind}: {}", show(&o));
        let r = results(&out);
        let errors: Vec<&str> = r
            .jobs
            .iter()
            .flat_map(|j| &j.errors)
            .map(|e| e.message.as_str())
            .collect();
        assert!(
            errors.iter().any(|e| e.contains(says)),
            "{kind}: {errors:?}"
        );
    }
    // An NCCL WARN that reports an error is recorded even when the run completed.
    let o = baton(&["ingest", p(&warn), "-o", p(&d.join("w.json"))]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let r = results(&d.join("w.json"));
    assert!(
        r.jobs[0]
            .errors
            .iter()
            .any(|e| e.message.contains("NCCL WARN Cuda failure")),
        "{:?}",
        r.jobs[0].errors
    );
}

/// What each log run says ran, and the refusal when nothing does.
#[test]
fn the_collective_comes_from_the_start_line_a_named_program_or_the_flag() {
    let d = tmp("ingest_collective_sources");
    let plain = read(&fixture("broadcast.txt"));
    let no_start: String = plain
        .lines()
        .filter(|l| !l.contains("Collective test"))
        .map(|l| format!("{l}\n"))
        .collect();
    let bare = write(&d, "bare.txt", &no_start);
    let o = baton(&["ingest", p(&bare), "-o", p(&d.join("r.json"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("bare.txt: cannot tell which collective ran"),
        "{}",
        show(&o)
    );
    assert!(stderr(&o).contains("--collective NAME"), "{}", show(&o));
    let echoed = write(
        &d,
        "echo.txt",
        &format!("+ srun ./build/broadcast_perf -b 8\n{no_start}"),
    );
    let r = results(&ingest(&d, "e.json", &[&echoed], None));
    assert_eq!(r.jobs[0].collective, Collective::Broadcast);
    assert_eq!(r.jobs[0].root, Some(0));
    let o = baton(&[
        "ingest",
        p(&bare),
        "-o",
        p(&d.join("f.json")),
        "--collective",
        "broadcast",
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        results(&d.join("f.json")).jobs[0].collective,
        Collective::Broadcast
    );
    let o = baton(&[
        "ingest",
        p(&bare),
        "-o",
        p(&d.join("g.json")),
        "--collective",
        "gatherx",
    ]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("unknown collective `gatherx`"),
        "{}",
        show(&o)
    );
    // `# Avg bus bandwidth` is kept as the log's claim.
    assert!(
        results(&d.join("f.json")).jobs[0]
            .reported_avg_busbw
            .is_some()
    );
}

/// nccl-tests 2.19.6 with `-I 1` on one H200: the text table's `i_*` columns do not shift the
/// in-place cells, and the `-J` document's per-iteration records reach the results.
#[test]
fn a_per_iteration_run_of_nccl_tests_2_19_ingests_from_text_and_json() {
    let d = tmp("ingest-per-iteration");
    let h200x1 = |f: &str| fixture("../h200x1").join(f);
    let text = results(&ingest(
        &d,
        "text.json",
        &[&h200x1("all_reduce-I1.txt")],
        None,
    ));
    let json = results(&ingest(
        &d,
        "json.json",
        &[&h200x1("all_reduce-I1.json")],
        None,
    ));
    // The JSON holds the times unrounded (9.20884 µs where the table prints 9.21).
    for (r, oop, ip) in [(&text, 9.21, 2.41), (&json, 9.20884, 2.41308)] {
        let row = &r.jobs[0].repeats[0].rows[0];
        assert_eq!(row.out_of_place.as_ref().unwrap().time_us, Some(oop));
        assert_eq!(row.in_place.as_ref().unwrap().time_us, Some(ip));
    }
    let last = &json.jobs[0].repeats[0].rows[7];
    let it = last.in_place.as_ref().unwrap().iterations.as_ref().unwrap();
    assert_eq!(it.summary.min_us, 1.248);
    assert!((it.summary.p99_us - 21.6).abs() < 1e-5);
    assert_eq!(it.times_us.len(), 50);
}

/// What nccl-tests 2.19.6's text output says of its flags reaches `measured_with`: the
/// `# Blocking Enabled` line of `-z 3` and the `-M` footer. Constructed from the real H200 log
/// by inserting the two lines as util.cu's `writeDeviceReport` and `writeMemInfo` print them.
#[test]
fn a_text_logs_blocking_and_memory_lines_are_what_it_was_measured_with() {
    let d = tmp("ingest_flags_text");
    let real = std::fs::read_to_string(fixture("all_reduce.txt")).unwrap();
    let mut text = String::new();
    for line in real.lines() {
        text.push_str(line);
        text.push('\n');
        if line.starts_with("# nThread") {
            text.push_str("# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n");
        }
        if line.starts_with("# Avg bus bandwidth") {
            text.push_str("# GPU memory usage     : Initialization 1.02 GB | User-Allocated 16.0 GB | Collective 6.00 MB | Total  17.0 GB\n");
        }
    }
    let log = write(&d, "all_reduce.txt", &text);
    let r = ingest(&d, "r.json", &[&log], None);
    let with = results(&r).jobs[0].measured_with.clone().unwrap();
    assert_eq!(with.nccl_version.as_deref(), Some("2.28.3"));
    assert_eq!(with.blocking, Some(3));
    let m = with.memory.unwrap();
    assert_eq!((m.user_bytes, m.collective_bytes), (16 << 30, 6 << 20));
    // The text never says -R or -x: unknown, not guessed.
    assert_eq!((with.register, with.cta_policy), (None, None));
}

fn real_log(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/real-logs")
        .join(rel)
}

/// nccl-tests 2.19.6 on one H200 (tests/data/real-logs/h200x1-2.19.6, made by this project): the
/// in-place times of a one-rank run are ~0.2–1.5 µs, so the widest bandwidths print in `%g`
/// form with one significant digit (`2e+06` GB/s at 1 GiB from 0.48 µs). Every collective's log
/// ingests with its numbers as printed, and its data check passes.
#[test]
fn a_one_gpu_run_of_every_collective_ingests_exactly_as_printed() {
    let d = tmp("ingest_h200x1_seven");
    for (name, coll) in [
        ("all_reduce", Collective::AllReduce),
        ("all_gather", Collective::AllGather),
        ("broadcast", Collective::Broadcast),
        ("reduce", Collective::Reduce),
        ("reduce_scatter", Collective::ReduceScatter),
        ("alltoall", Collective::AllToAll),
        ("sendrecv", Collective::SendRecv),
    ] {
        let log = real_log(&format!("h200x1-2.19.6/{name}.txt"));
        let r = results(&ingest(&d, &format!("{name}.json"), &[&log], None));
        let j = &r.jobs[0];
        assert_eq!((j.collective, j.layout.nranks), (coll, 1), "{name}");
        assert_eq!(j.status, JobStatus::Completed, "{name}");
        let rows = rows(j);
        assert_eq!(rows.len(), 28, "{name}: 8 B to 1 GiB by 2");
        // busbw is 0 by definition on one rank ((n-1)/n = 0, or 1 for broadcast/reduce/sendrecv).
        for row in &rows {
            let b = row.out_of_place.as_ref().unwrap().busbw.unwrap();
            let a = row.out_of_place.as_ref().unwrap().algbw.unwrap();
            let factor_one = matches!(
                coll,
                Collective::Broadcast | Collective::Reduce | Collective::SendRecv
            );
            assert_eq!(b, if factor_one { a } else { 0.0 }, "{name}");
        }
    }
    // The printed `%g` values are kept as printed.
    let r = results(&ingest(
        &d,
        "ar.json",
        &[&real_log("h200x1-2.19.6/all_reduce.txt")],
        None,
    ));
    let last = rows(&r.jobs[0]).last().copied().unwrap();
    let ip = last.in_place.as_ref().unwrap();
    assert_eq!((ip.time_us, ip.algbw), (Some(0.48), Some(2e6)));
}

/// Values in every column of a row printed the way nccl-tests' `getFloatStr` does when they do
/// not fit: `%.1e` for a 7-wide time, `%.0e` for 6-wide bandwidths, `%g` for `#wrong`. Made by
/// hand from util.cu's format (2.19.6); each ingests exactly, and a value no rounding explains is
/// still refused.
#[test]
fn values_printed_in_g_form_in_every_column_ingest_exactly() {
    let d = tmp("ingest_g_form");
    let head = "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n\
# Collective test starting: all_reduce_perf\n\
# nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n\
#\n\
# Using devices\n\
#  Rank  0 Group  0 Pid   1807 on         vm device  0 [0000:00:06] NVIDIA H200\n\
#  Rank  1 Group  0 Pid   1807 on         vm device  1 [0000:00:07] NVIDIA H200\n\
#\n\
#                                                              out-of-place                       in-place          \n\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n\
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n";
    // 1 GiB in 0.48 us: 2.2e6 GB/s, printed 2e+06 (algbw, and busbw = algbw on 2 ranks).
    // 8 GiB in 1.2e+07 us (12 s): 0.72 GB/s. 1.23457e+06 wrong elements.
    let rows = "  1073741824     268435456     float     sum      -1     0.48   2e+06   2e+06       0     0.52   2e+06   2e+06       0\n\
  8589934592    2147483648     float     sum      -1  1.2e+07    0.72    0.72  1.23457e+06  1.2e+07    0.72    0.72       0\n";
    let log = write(
        &d,
        "g.txt",
        &format!(
            "{head}{rows}# Out of bounds values : 1234570 FAILED\n# Avg bus bandwidth    : 1e+06 \n#\n# Collective test concluded: all_reduce_perf\n"
        ),
    );
    let out = d.join("g.json");
    let o = baton(&["ingest", p(&log), "-o", p(&out)]);
    assert_eq!(code(&o), 1, "a failed data check: {}", show(&o));
    let r = results(&out);
    let rs = rows_of(&r);
    let a = rs[0].out_of_place.as_ref().unwrap();
    assert_eq!(
        (a.time_us, a.algbw, a.busbw),
        (Some(0.48), Some(2e6), Some(2e6))
    );
    let b = rs[1].out_of_place.as_ref().unwrap();
    assert_eq!(
        (b.time_us, b.algbw, b.wrong),
        (Some(1.2e7), Some(0.72), Some(1234570))
    );
    // 3e+06 is at least 2.5e6, which 1 GiB in at least 0.475 us cannot reach (2.26e6).
    let bad = rows.replacen("0.48   2e+06   2e+06", "0.48   3e+06   3e+06", 1);
    let log = write(&d, "bad.txt", &format!("{head}{bad}"));
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("bad.json"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("bad.txt:12"), "{}", show(&o));
}

fn rows_of(r: &baton::results::Results) -> Vec<&baton::results::Row> {
    r.jobs.iter().flat_map(rows).collect()
}

/// An rccl-tests log in the old format (`# nThreads: 1 nGpus: 8 …`) whose table header has no
/// rows under it is refused for what it lacks: no measurements, at the header's line.
#[test]
fn a_header_without_rows_is_refused_for_having_no_rows() {
    let d = tmp("ingest_no_rows");
    let log = write(
        &d,
        "rccl.txt",
        "# nThreads: 1 nGpus: 8 nRanks: 1 minBytes: 8 maxBytes: 134217728 step: 2(factor) warmupIters: 5 iters: 20 validation: 1\n\
#\n\
# Using devices\n\
#   Rank  0 Pid  12345 on host device  0 [0000:63:00.0] AMD Instinct MI250X\n\
#\n\
#                                                       out-of-place                       in-place\n\
#       size         count      type   redop     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n",
    );
    let o = baton(&["ingest", p(&log), "-o", p(&d.join("r.json"))]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let e = stderr(&o);
    assert!(e.contains("rccl.txt") && e.contains("no table rows"), "{e}");
    assert!(!e.contains("not an nccl-tests log"), "{e}");
    assert!(!e.contains("cannot tell which collective"), "{e}");
}
