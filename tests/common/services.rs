//! Real servers a test starts for itself on localhost, each on a free port in its own temporary
//! directory and stopped when dropped: PostgreSQL (`initdb` + `pg_ctl`, as the `postgres`
//! user when the test runs as root), node_exporter and Prometheus (Debian's packages). `None`
//! (said through [`super::missing`]) when the programs are not installed.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `name` on PATH or in Debian's PostgreSQL directory.
fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        dirs.extend(rd.flatten().map(|e| e.path().join("bin")));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// `cmd` as the `postgres` user when root (PostgreSQL refuses to run as root).
fn as_pg_user(prog: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(prog);
        c
    } else {
        Command::new(prog)
    }
}

pub struct Postgres {
    pub dir: PathBuf,
    pub port: u16,
    pub password: String,
    pg_ctl: PathBuf,
}

impl Postgres {
    /// A fresh server with user `baton` and a password only SCRAM logins know.
    pub fn start(name: &str) -> Option<Postgres> {
        let (Some(initdb), Some(pg_ctl)) = (program("initdb"), program("pg_ctl")) else {
            super::missing(
                "PostgreSQL",
                "BATON_REQUIRE_POSTGRES",
                "initdb and pg_ctl not found (scripts/install-deps installs postgresql)",
            );
            return None;
        };
        let dir = std::env::temp_dir().join(format!("baton-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let password = format!("pw-{}-Zq9", std::process::id());
        std::fs::write(dir.join("pw"), &password).unwrap();
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .status();
            assert!(ok.unwrap().success());
        }
        let data = dir.join("data");
        let o = as_pg_user(&initdb)
            .arg("-D")
            .arg(&data)
            .args(["-U", "baton", "--auth=scram-sha-256", "--no-sync"])
            .arg(format!("--pwfile={}", dir.join("pw").display()))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let port = free_port();
        let opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100",
            dir.display()
        );
        let o = as_pg_user(&pg_ctl)
            .arg("-D")
            .arg(&data)
            .args(["-o", &opts, "-w", "-t", "60", "-l"])
            .arg(dir.join("log"))
            .arg("start")
            .output()
            .unwrap();
        let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
        assert!(
            o.status.success(),
            "pg_ctl start: {}{log}",
            String::from_utf8_lossy(&o.stderr)
        );
        Some(Postgres {
            dir,
            port,
            password,
            pg_ctl,
        })
    }

    /// The URL with the password in it.
    pub fn url(&self) -> String {
        format!(
            "postgres://baton:{}@127.0.0.1:{}/postgres",
            self.password, self.port
        )
    }

    /// The URL of database `db` for `user` (password `password`).
    pub fn url_of(&self, user: &str, password: &str, db: &str) -> String {
        format!("postgres://{user}:{password}@127.0.0.1:{}/{db}", self.port)
    }

    /// `sql` run by the real `psql` as the superuser `baton` in database `db`, stopping at the
    /// first error; its output, unaligned, without headers.
    pub fn sql(&self, db: &str, sql: &str) -> String {
        let psql = program("psql").expect("psql beside initdb");
        let o = Command::new(psql)
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
            ])
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "baton",
                "-d",
                db,
                "-c",
                sql,
            ])
            .env("PGPASSWORD", &self.password)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "psql {sql}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out.trim().to_string()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = as_pg_user(&self.pg_ctl)
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .output();
        // Tens of megabytes of cluster files: not left behind in /tmp.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A child killed when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// node_exporter reading only `textfile_dir`, and Prometheus scraping it every second, on
/// free localhost ports: (exporter, prometheus, Prometheus' port).
pub fn prometheus(dir: &Path, textfile_dir: &Path) -> Option<(Server, Server, u16)> {
    let (Some(exporter), Some(prom)) = (
        program("prometheus-node-exporter").or_else(|| program("node_exporter")),
        program("prometheus"),
    ) else {
        super::missing(
            "Prometheus",
            "BATON_REQUIRE_PROMETHEUS",
            "prometheus and prometheus-node-exporter not found (scripts/install-deps installs them)",
        );
        return None;
    };
    let ne_port = free_port();
    let ne = Command::new(exporter)
        .args(["--collector.disable-defaults", "--collector.textfile"])
        .arg(format!(
            "--collector.textfile.directory={}",
            textfile_dir.display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{ne_port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("node_exporter.log")).unwrap())
        .spawn()
        .unwrap();
    let ne = Server(ne);
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{ scrape_interval: 1s, evaluation_interval: 1s }}\nscrape_configs:\n  - job_name: node\n    static_configs: [ {{ targets: ['127.0.0.1:{ne_port}'] }} ]\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let pr = Command::new(prom)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .unwrap();
    Some((ne, Server(pr), port))
}

/// GET `path` from 127.0.0.1:`port`: the body, or `None` when nothing answers.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.take(4 << 20).read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// Polls `f` every 200 ms until it gives a value or `limit` passes.
pub fn until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}
