//! What baton writes, whatever sits where an output goes and whatever characters its input
//! holds (issue #20): a FIFO, socket, device or directory is never replaced (the null device
//! discards), JUnit and every SVG parse as XML, and the HTML report carries no control
//! characters.

use crate::common;

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use common::*;

fn cstr(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(p(path)).unwrap()
}

/// A node of `kind` at `path`; the socket's listener is returned to keep it bound.
fn make_special(path: &Path, kind: &str) -> Option<std::os::unix::net::UnixListener> {
    let node = |mode: libc::mode_t, major, minor| {
        // SAFETY: mknod with a valid C string; the test runs as root.
        let rc = unsafe {
            libc::mknod(
                cstr(path).as_ptr(),
                mode | 0o666,
                libc::makedev(major, minor),
            )
        };
        assert_eq!(rc, 0, "mknod {kind} {}", std::io::Error::last_os_error());
    };
    match kind {
        // SAFETY: mkfifo with a valid C string.
        "fifo" => assert_eq!(unsafe { libc::mkfifo(cstr(path).as_ptr(), 0o666) }, 0),
        "socket" => return Some(std::os::unix::net::UnixListener::bind(path).unwrap()),
        "null" => node(libc::S_IFCHR, 1, 3),
        "zero" => node(libc::S_IFCHR, 1, 5),
        "block" => node(libc::S_IFBLK, 7, 250),
        "dir" => std::fs::create_dir(path).unwrap(),
        _ => unreachable!(),
    }
    None
}

/// The file type and device number: what a replacement would change.
fn identity(path: &Path) -> (u32, u64) {
    let m = std::fs::symlink_metadata(path).unwrap();
    (m.mode() & libc::S_IFMT, m.rdev())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn no_writer_replaces_a_fifo_socket_device_or_directory_and_null_discards() {
    if !is_root() {
        eprintln!("SKIPPED: device nodes need root");
        return;
    }
    let d = tmp("outputs-special");
    let log = fixture("all_reduce.txt");
    let res = ingest(&d, "res.json", &[&log], Some("allreduce"));
    let plan = two_gpu_plan(&d, "p.yaml", ALLREDUCE_SWEEP);
    let store = d.join("h.sqlite");
    let o = baton(&["history", "add", p(&res), "--store", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    for kind in ["fifo", "socket", "zero", "block", "dir", "null"] {
        let t = d.join(format!("t-{kind}"));
        let report = d.join(format!("report-{kind}"));
        std::fs::create_dir_all(&report).unwrap();
        let in_report = report.join("report.html");
        let _keep = (make_special(&t, kind), make_special(&in_report, kind));
        let before = identity(&t);
        let writers: Vec<Vec<&str>> = vec![
            vec!["grade", p(&plan), p(&res), "--junit", p(&t)],
            vec!["baseline", "save", p(&res), "-o", p(&t)],
            vec!["history", "show", "--store", p(&store), "--chart", p(&t)],
            vec!["ingest", p(&log), "-o", p(&t)],
            vec!["report", p(&plan), p(&res), "-o", p(&report)],
        ];
        for args in writers {
            let o = baton_bounded(&args);
            let target = if args[0] == "report" { &in_report } else { &t };
            if kind == "null" {
                assert_eq!(code(&o), 0, "{kind} {args:?}: {}", show(&o));
            } else {
                assert_eq!(code(&o), 2, "{kind} {args:?}: {}", show(&o));
                assert!(
                    stderr(&o).contains(p(target)) && stderr(&o).contains("regular files"),
                    "{kind} {args:?}: {}",
                    show(&o)
                );
            }
            assert_eq!(identity(target), before, "{kind} {args:?} replaced it");
        }
        let dir_entries = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
            .count();
        assert_eq!(dir_entries, 0, "a temporary file was left behind");
    }
    assert!(
        std::fs::metadata(d.join("t-null"))
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

/// Input values carrying what XML 1.0 cannot hold (U+FFFE, U+FFFF, C0 controls) and what a
/// page must not show raw (ESC, NUL, DEL, C1): a vendor's host name, a variable of a JSON log.
const BAD: &str = "x\u{FFFE}y\u{FFFF}\u{1b}[31m\u{1}\u{7f}\u{85}z";

fn hostile_results(d: &Path) -> PathBuf {
    let text = read(&fixture("all_reduce.txt"))
        .replace("on         vm device", &format!("on {BAD} device"));
    let log = write(d, "ar.txt", &text);
    let json = read(&fixture("all_gather.json")).replacen(
        "\"env\":[",
        "\"env\":[\"NCCL_COMMENT=night\\ufffe\\u0000\\u001b[2J\\u0001\",",
        1,
    );
    let json = write(d, "ag.json", &json);
    ingest(d, "res.json", &[&log, &json], None)
}

fn xmllint(path: &Path) {
    let o = std::process::Command::new("xmllint")
        .args(["--noout", p(path)])
        .output()
        .expect("xmllint (scripts/install-deps installs libxml2-utils)");
    assert!(
        o.status.success(),
        "{} is not well-formed XML: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn junit_and_every_svg_are_well_formed_xml_whatever_the_input() {
    let d = tmp("outputs-xml");
    let res = hostile_results(&d);
    let plan = two_gpu_plan(
        &d,
        "p.yaml",
        &format!(
            "{ALLREDUCE_SWEEP}    expect: [ {{ busbw: \">= 1000 GB/s\", at: 1G }} ]\n  - name: allgather\n    collective: all_gather\n    sizes: {{ from: 8, to: 1G, factor: 4 }}\n"
        ),
    );
    let junit = d.join("junit.xml");
    let report = d.join("report");
    let o = baton(&[
        "grade",
        p(&plan),
        p(&res),
        "--junit",
        p(&junit),
        "--report",
        p(&report),
    ]);
    assert_eq!(code(&o), 1, "{}", show(&o));
    xmllint(&junit);
    let text = read(&junit);
    assert!(
        text.contains("x\u{FFFD}y"),
        "the host is kept, marked: {text}"
    );
    let charts: Vec<PathBuf> = std::fs::read_dir(report.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!charts.is_empty());
    for c in &charts {
        xmllint(c);
    }
    let store = d.join("h.sqlite");
    let o = baton(&["history", "add", p(&res), "--store", p(&store)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let chart = d.join("trend.svg");
    let o = baton(&[
        "history",
        "show",
        "--store",
        p(&store),
        "--chart",
        p(&chart),
    ]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        read(&chart).contains('\u{FFFD}'),
        "the host is in the legend"
    );
    xmllint(&chart);
}

#[test]
fn the_html_report_carries_no_control_character() {
    let d = tmp("outputs-html");
    let res = hostile_results(&d);
    let plan = two_gpu_plan(
        &d,
        "p.yaml",
        &format!(
            "{ALLREDUCE_SWEEP}  - name: allgather\n    collective: all_gather\n    sizes: {{ from: 8, to: 1G, factor: 4 }}\n"
        ),
    );
    let report = d.join("report");
    let o = baton(&["report", p(&plan), p(&res), "-o", p(&report)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let html = read(&report.join("report.html"));
    let raw: Vec<char> = html
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\t'))
        .collect();
    assert!(raw.is_empty(), "raw controls in report.html: {raw:?}");
    assert!(!html.contains('\u{FFFE}') && !html.contains('\u{FFFF}'));
    assert!(html.contains("y\u{FFFD} [31m"), "the host is shown");
}

/// `grade --csv`: a header and one CRLF line per graded cell, with what the job was measured
/// with; written atomically, never through a link, never over an input.
#[test]
fn grade_writes_every_cell_as_csv() {
    let d = tmp("grade_csv");
    let r = ingest(
        &d,
        "r.json",
        &[&fixture("all_reduce.txt")],
        Some("allreduce"),
    );
    let pl = two_gpu_plan(&d, "p.yaml", ALLREDUCE_SWEEP);
    let csv = d.join("cells.csv");
    let o = baton(&["grade", p(&pl), p(&r), "--csv", p(&csv)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains(&format!("csv: {}", csv.display())),
        "{}",
        show(&o)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.split_terminator("\r\n").collect();
    assert_eq!(
        lines[0],
        "job,repeat,collective,requested,size,count,dtype,redop,root,placement,status,time_us,algbw,busbw,wrong,nccl_version,register,cta_policy,blocking,results_file"
    );
    // The fixture's 4 GiB row, both halves (its table: 12506.3 343.42 343.42 0 | 12415.3 …).
    let at_4g: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains(",4294967296,4294967296,"))
        .collect();
    assert_eq!(at_4g.len(), 2, "{text}");
    assert!(
        at_4g[0].starts_with("allreduce,0,all_reduce,4294967296,4294967296,1073741824,float,sum,,out-of-place,ok,12506.3,343.42,343.42,0,2.28.3,,,,"),
        "{}",
        at_4g[0]
    );
    assert!(at_4g[1].contains(",in-place,ok,12415.3,"), "{}", at_4g[1]);
    assert!(
        !text.replace("\r\n", "").contains('\n'),
        "every line ends CRLF"
    );
    // Onto an input, or through a link: refused, nothing written.
    let o = baton(&["grade", p(&pl), p(&r), "--csv", p(&r)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let link = d.join("link.csv");
    std::os::unix::fs::symlink(d.join("elsewhere.csv"), &link).unwrap();
    let o = baton(&["grade", p(&pl), p(&r), "--csv", p(&link)]);
    assert_ne!(code(&o), 0, "{}", show(&o));
    assert!(!d.join("elsewhere.csv").exists());
}
