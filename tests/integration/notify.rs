//! `--notify URL` against a real HTTP receiver on localhost: one POST of the verdict JSON per
//! run with its stable ID, retries on failure within the bound, and never a changed exit code.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

/// What the receiver does with each request, in turn (the last repeats).
#[derive(Clone, Copy)]
pub(crate) enum Answer {
    Status(u16),
    /// Reads the request and never answers.
    Silent,
    /// Reads the request, then answers the start of a status line a byte every 200 ms, for ever.
    Dribble,
}

/// One request received: its headers (lower-cased names) and body.
pub(crate) struct Received {
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A receiver on a free port: its URL and what it got.
pub(crate) fn receiver(answers: Vec<Answer>) -> (String, Arc<Mutex<Vec<Received>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hooks/T0K3N?x=1",
        l.local_addr().unwrap().port()
    );
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = got.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for (i, s) in l.incoming().enumerate() {
            let Ok(mut s) = s else { continue };
            let r = read_request(&mut s);
            seen.lock().unwrap().push(r);
            match answers[i.min(answers.len() - 1)] {
                Answer::Status(c) => {
                    let _ = write!(s, "HTTP/1.1 {c} X\r\nContent-Length: 0\r\n\r\n");
                }
                Answer::Silent => held.push(s),
                Answer::Dribble => {
                    std::thread::spawn(move || {
                        let mut bytes = b"HTTP/1.1 200 ".iter().chain(std::iter::repeat(&b'x'));
                        while s.write_all(&[*bytes.next().unwrap()]).is_ok() {
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    });
                }
            }
        }
    });
    (url, got)
}

fn read_request(s: &mut std::net::TcpStream) -> Received {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut headers = Vec::new();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("POST /hooks/T0K3N?x=1 HTTP/1.1"), "{line}");
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    Received {
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

fn graded(d: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let (r, plan) = (healthy(d), plan("h200x2.yaml"));
    let mut a = vec!["grade", p(&plan), p(&r)];
    a.extend(extra);
    baton(&a)
}

#[test]
fn one_post_per_run_with_a_stable_id_and_the_verdict() {
    let d = tmp("notify-once");
    let (url, got) = receiver(vec![Answer::Status(204)]);
    let quiet = graded(&d, &[]);
    let o = graded(&d, &["--notify", &url]);
    assert_eq!(code(&o), code(&quiet), "{}", show(&o));
    let again = graded(&d, &["--notify", &url, "--format", "json"]);
    assert_eq!(code(&again), code(&quiet), "{}", show(&again));
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 2, "one POST per command");
    let id = got[0].header("x-baton-run-id").unwrap().to_string();
    assert!(id.starts_with("sha256:"), "{id}");
    assert_eq!(
        got[1].header("x-baton-run-id"),
        Some(id.as_str()),
        "the same results, the same ID"
    );
    assert_eq!(got[0].header("idempotency-key"), Some(id.as_str()));
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(v["format"], "baton-verdict");
    assert_eq!(v["exit_code"], code(&quiet));
    // The ID is the history's key of the results, and the line never shows the URL's token.
    let out = stdout(&o);
    assert!(
        out.contains(&format!("delivered run {id} (204; 1 attempt(s)")),
        "{out}"
    );
    assert!(
        !out.contains("T0K3N") && !stderr(&again).contains("T0K3N"),
        "{}",
        show(&o)
    );
    assert!(
        stderr(&again).contains("notify: http://127.0.0.1:"),
        "{}",
        show(&again)
    );
}

#[test]
fn a_receiver_that_fails_twice_gets_three_attempts() {
    let d = tmp("notify-retry");
    let (url, got) = receiver(vec![
        Answer::Status(503),
        Answer::Status(500),
        Answer::Status(200),
    ]);
    let o = graded(&d, &["--notify", &url]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(got.lock().unwrap().len(), 3);
    assert!(stdout(&o).contains("(200; 3 attempt(s)"), "{}", show(&o));
    let ids: Vec<String> = got
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.header("x-baton-run-id").unwrap().to_string())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
}

#[test]
fn a_receiver_that_never_answers_costs_at_most_the_bound_and_not_the_exit_code() {
    let d = tmp("notify-silent");
    let (url, got) = receiver(vec![Answer::Silent]);
    let start = Instant::now();
    let o = graded(&d, &["--notify", &url, "--notify-within", "2"]);
    let took = start.elapsed();
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(!got.lock().unwrap().is_empty());
    assert!(stdout(&o).contains("not delivered"), "{}", show(&o));
    // A receiver answering 400 is not retried; nobody listening is retried, then given up.
    let (url, got) = receiver(vec![Answer::Status(400)]);
    let o = graded(&d, &["--notify", &url]);
    assert_eq!(
        (code(&o), got.lock().unwrap().len()),
        (0, 1),
        "{}",
        show(&o)
    );
    let closed = format!("http://127.0.0.1:{}/", common::services::free_port());
    let o = graded(&d, &["--notify", &closed, "--notify-within", "1"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stdout(&o).contains("not delivered"), "{}", show(&o));
}

#[test]
fn a_receiver_that_dribbles_its_answer_costs_at_most_the_bound() {
    let d = tmp("notify-dribble");
    let (r, plan) = (healthy(&d), plan("h200x2.yaml"));
    let (url, got) = receiver(vec![Answer::Dribble]);
    let start = Instant::now();
    let o = baton_bounded(&[
        "grade",
        p(&plan),
        p(&r),
        "--notify",
        &url,
        "--notify-within",
        "2",
    ]);
    let took = start.elapsed();
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(!got.lock().unwrap().is_empty());
    assert!(stdout(&o).contains("not delivered"), "{}", show(&o));
}

#[test]
fn a_refused_url_is_never_shown_whole() {
    let d = tmp("notify-refused-secret");
    let (r, plan) = (healthy(&d), plan("h200x2.yaml"));
    for url in [
        "http://user:S3cr3tPW@hooks.example/T0K3N",
        "ftp://hooks.example/T0K3N?token=S3cr3tPW",
        "http://hooks.example/T0K3N a?token=S3cr3tPW",
        "http://hooks.example:99999/T0K3N?token=S3cr3tPW",
        "hooks.example/T0K3N?token=S3cr3tPW",
    ] {
        for cmd in ["grade", "render"] {
            let mut args = vec![cmd, p(&plan)];
            match cmd {
                "grade" => args.push(p(&r)),
                _ => args.extend(["--target", "slurm", "-o", p(&d)]),
            }
            args.extend(["--notify", url]);
            let o = baton(&args);
            assert_eq!(code(&o), 2, "{url}: {}", show(&o));
            let all = format!("{}{}", stdout(&o), stderr(&o));
            assert!(!all.contains("S3cr3tPW"), "{url}: {all}");
            assert!(!all.contains("T0K3N"), "{url}: {all}");
            assert!(all.contains("--notify"), "{url}: {all}");
        }
    }
}

#[test]
fn a_bad_notify_ca_is_refused_before_any_work() {
    let d = tmp("notify-bad-ca");
    let (url, got) = receiver(vec![Answer::Status(204)]);
    let fifo = d.join("fifo.pem");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let empty = write(&d, "empty.pem", "");
    let text = write(&d, "text.pem", "not a certificate\n");
    let missing = d.join("missing.pem");
    let (r, plan) = (healthy(&d), plan("h200x2.yaml"));
    let (_, run_plan, out) = plan_dir(
        "notify-bad-ca-run",
        &read(std::path::Path::new("plans/examples/quickstart.yaml")),
    );
    for ca in [&missing, &empty, &text, &d, &fifo] {
        let o = baton_bounded(&[
            "grade",
            p(&plan),
            p(&r),
            "--notify",
            &url,
            "--notify-ca",
            p(ca),
        ]);
        assert_eq!(code(&o), 2, "{}: {}", ca.display(), show(&o));
        assert!(stderr(&o).contains("--notify-ca"), "{}", show(&o));
        assert!(
            stdout(&o).is_empty(),
            "graded before refusing: {}",
            show(&o)
        );
        let o = baton_bounded(&[
            "run",
            p(&run_plan),
            "-o",
            p(&out),
            "--notify",
            &url,
            "--notify-ca",
            p(ca),
        ]);
        assert_eq!(code(&o), 2, "{}: {}", ca.display(), show(&o));
        assert!(!out.exists(), "ran before refusing: {}", show(&o));
    }
    assert!(got.lock().unwrap().is_empty());
}

#[test]
fn a_url_it_cannot_send_to_is_invalid_input_before_grading() {
    let d = tmp("notify-bad-url");
    for (url, said) in [
        ("ftp://hooks.example/x", "not an http:// or https:// URL"),
        ("http://user:pw@hooks.example/x", "credentials in the URL"),
        ("http://hooks.example/a b", "percent-encoded"),
    ] {
        let o = graded(&d, &["--notify", url]);
        assert_eq!(code(&o), 2, "{}", show(&o));
        assert!(stderr(&o).contains(said), "{}", show(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", show(&o));
    }
}

#[test]
fn a_run_posts_its_verdict_once_with_its_results_key_and_its_own_exit_code() {
    let (url, got) = receiver(vec![Answer::Status(200)]);
    let (dir, plan, out) = plan_dir(
        "notify-run",
        &read(std::path::Path::new("plans/examples/quickstart.yaml")),
    );
    let o = baton(&["run", p(&plan), "-o", p(&out), "--notify", &url]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 1, "{}", show(&o));
    let key = baton::history::key_of(&results(&out.join("results.json")));
    assert_eq!(got[0].header("x-baton-run-id"), Some(key.as_str()));
    let v: serde_json::Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(
        (v["exit_code"].as_i64(), v["status"].as_str()),
        (Some(0), Some("pass"))
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A CA and a certificate for 127.0.0.1 signed by it, made by the real `openssl` in `d`; `None`
/// (the test skipped, saying so) where there is no openssl.
fn tls_files(
    d: &std::path::Path,
) -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    let ssl = |args: &[&str]| {
        std::process::Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "1",
            "-subj",
            "/CN=baton-test-ca",
        ],
    ]
    .concat();
    match ssl(&ca) {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("openssl: {}", show(&o)),
        Err(_) => {
            eprintln!("SKIPPED: no openssl");
            return None;
        }
    }
    let csr = [
        &["req"][..],
        &ec,
        &[
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    ]
    .concat();
    assert!(ssl(&csr).unwrap().status.success());
    write(d, "ext.cnf", "subjectAltName=IP:127.0.0.1\n");
    let sign = [
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
    ];
    let o = ssl(&sign).unwrap();
    assert!(o.status.success(), "{}", show(&o));
    Some((d.join("ca.pem"), d.join("srv.pem"), d.join("srv.key")))
}

/// A real TLS receiver (Python's http.server behind its ssl module) on a free port: answers
/// each POST 204 and prints its run ID; its URL and the process.
fn tls_receiver(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Option<(String, std::process::Child)> {
    let script = format!(
        "import http.server, ssl, sys\n\
         class H(http.server.BaseHTTPRequestHandler):\n    \
         def do_POST(self):\n        \
         self.rfile.read(int(self.headers['Content-Length']))\n        \
         self.send_response(204); self.end_headers()\n        \
         print(self.headers['X-Baton-Run-Id'], flush=True)\n    \
         def log_message(self, *a): pass\n\
         s = http.server.HTTPServer(('127.0.0.1', 0), H)\n\
         c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain({cert:?}, {key:?})\n\
         s.socket = c.wrap_socket(s.socket, server_side=True)\n\
         print(s.server_address[1], flush=True)\n\
         s.timeout = 30\n\
         while True: s.handle_request()\n",
        cert = cert.display().to_string(),
        key = key.display().to_string(),
    );
    let Ok(mut child) = std::process::Command::new("python3")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        eprintln!("SKIPPED: no python3");
        return None;
    };
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut port = String::new();
    out.read_line(&mut port).unwrap();
    let port: u16 = port.trim().parse().expect("the receiver's port");
    std::thread::spawn(move || {
        let mut line = String::new();
        while out.read_line(&mut line).unwrap_or(0) > 0 {
            eprintln!("receiver: {}", line.trim());
            line.clear();
        }
    });
    Some((format!("https://127.0.0.1:{port}/hooks/T0K3N"), child))
}

#[test]
fn an_https_receiver_gets_the_verdict_verified_against_the_ca_given() {
    let d = tmp("notify-https");
    let Some((ca, cert, key)) = tls_files(&d) else {
        return;
    };
    let Some((url, mut server)) = tls_receiver(&cert, &key) else {
        return;
    };
    let o = graded(&d, &["--notify", &url, "--notify-ca", p(&ca)]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stdout(&o).contains("notify: https://127.0.0.1:"),
        "{}",
        show(&o)
    );
    assert!(stdout(&o).contains("delivered run sha256:"), "{}", show(&o));
    assert!(stdout(&o).contains("(204; 1 attempt(s)"), "{}", show(&o));
    // Without the CA the public roots do not vouch for it: not delivered, not retried, and the
    // exit code is the verdict's.
    let o = graded(&d, &["--notify", &url, "--notify-within", "5"]);
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stdout(&o).contains("not delivered"), "{}", show(&o));
    assert!(stdout(&o).contains("1 attempt(s)"), "{}", show(&o));
    // A CA file that holds no certificate says so, before grading.
    let bad = write(&d, "bad.pem", "not a certificate\n");
    let o = graded(&d, &["--notify", &url, "--notify-ca", p(&bad)]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(stderr(&o).contains("no certificate in it"), "{}", show(&o));
    let _ = server.kill();
    let _ = server.wait();
}
