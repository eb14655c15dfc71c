//! Which environment variables a results file, a log's ingest or a report may record, and which
//! values never leave the machine. Results and reports are published (CI artifacts, handover
//! reports, pull requests), so recording works by allow-list, and a deny-list of secret-looking
//! names wins over it and over whatever an input file already carries. docs/trust.md states the
//! same rules for users; keep the two together.

use indexmap::IndexMap;

/// What a recorded secret's value becomes.
pub const REDACTED: &str = "<redacted>";

/// Name fragments that mark a secret, matched case-insensitively anywhere in the name. Always
/// win: `NCCL_IB_PKEY` is redacted too, because a false positive costs a value in a report and a
/// false negative costs a credential.
const SECRET_PARTS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
];

/// Prefixes of variables that shape collective performance or placement: recorded.
const RECORDED_PREFIXES: &[&str] = &["NCCL_", "CUDA_", "OMPI_MCA_", "UCX_"];

/// Other variables recorded by exact name: where the job ran, and which GPUs it saw. Free-text
/// variables (`SLURM_JOB_COMMENT`, `NVIDIA_API_KEY`...) are deliberately not here.
const RECORDED_NAMES: &[&str] = &[
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_NODELIST",
    "SLURM_JOB_NUM_NODES",
    "SLURM_JOB_CPUS_PER_NODE",
    "SLURM_JOB_GPUS",
    "SLURM_NODELIST",
];

/// Variables mpirun sets for its own bookkeeping in every rank: noise in a report.
const LAUNCHER_INTERNAL: &[&str] = &[
    "OMPI_MCA_ess",
    "OMPI_MCA_orte",
    "OMPI_MCA_initial_wdir",
    "OMPI_MCA_pmix",
    "OMPI_MCA_shmem",
    "OMPI_MCA_mpi_oversubscribe",
    "OMPI_MCA_plm",
    "OMPI_MCA_rmaps",
];

/// Whether `name` looks like it holds a credential.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_PARTS.iter().any(|p| upper.contains(p))
}

/// A database URL as any line may show it: the password of its user part and of a
/// `password=` parameter become [`REDACTED`] (`postgres://baton:<redacted>@db/acceptance`).
pub fn url_redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:{REDACTED}@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}={REDACTED}"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", kept.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The words a libpq `key=value` connection string starts with: a store named so is a
/// database the user meant, not an SQLite file to create under that name (with its password
/// in the file's name).
const LIBPQ_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "require_auth",
    "channel_binding",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "sslnegotiation",
    "requiressl",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslcertmode",
    "sslpassword",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "service",
    "target_session_attrs",
    "load_balance_hosts",
];

/// A history store's name that is neither a path nor a PostgreSQL URL, as a message may show
/// it: a libpq connection string by its keywords only, another scheme's URL without its
/// password (`None` for a path or a `postgres://` URL). Such a name is refused as a store: it
/// would otherwise become an SQLite file whose name holds the password.
pub fn store_name_shown(name: &str) -> Option<String> {
    let first = name.split_whitespace().next().unwrap_or("");
    let keyword = |w: &str| {
        w.split_once('=')
            .is_some_and(|(k, _)| LIBPQ_KEYWORDS.contains(&k))
    };
    if keyword(first) {
        let words: Vec<String> = name
            .split_whitespace()
            .map(|w| match w.split_once('=') {
                Some((k, _)) if keyword(w) => format!("{k}=…"),
                _ => "…".to_string(),
            })
            .collect();
        return Some(format!("`{}` (a libpq connection string)", words.join(" ")));
    }
    let (scheme, _) = name.split_once("://")?;
    let scheme_like = !matches!(scheme, "" | "postgres" | "postgresql")
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    scheme_like.then(|| {
        let shown = url_redacted(name);
        let end = shown[scheme.len() + 3..]
            .find(['/', '?', '#'])
            .map_or(shown.len(), |i| i + scheme.len() + 3);
        format!("{}/… (a {scheme}:// URL)", &shown[..end])
    })
}

/// A webhook URL as any line may show it, parsed or not (a refused one is shown too): the
/// scheme, host and port, credentials and everything after the host (path, query, fragment:
/// where receivers keep their tokens) made [`REDACTED`]
/// (`http://hooks.example:8080/<redacted>`).
pub fn webhook_redacted(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{REDACTED}@{host}"),
        None => authority.to_string(),
    };
    let tail = match tail {
        "" | "/" => tail.to_string(),
        _ => format!("/{REDACTED}"),
    };
    format!("{scheme}{authority}{tail}")
}

/// A line of someone else's output (NCCL's diagnostics print `NAME=value` of the variables
/// they compare) with every secret's value after `NAME=` and every URL's password made
/// [`REDACTED`]; the rest as it was.
pub fn line_redacted(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(eq) = rest.find('=') {
        let (head, tail) = rest.split_at(eq);
        let name_at = head
            .char_indices()
            .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        out.push_str(head);
        out.push('=');
        let tail = &tail[1..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | '}' | ']'))
            .unwrap_or(tail.len());
        if is_secret(&head[name_at..]) && end > 0 {
            out.push_str(REDACTED);
            rest = &tail[end..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out.split(' ')
        .map(|w| {
            if w.contains("://") {
                url_redacted(w)
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a variable of the process environment is worth recording at all.
pub fn recorded(name: &str) -> bool {
    (RECORDED_PREFIXES.iter().any(|p| name.starts_with(p)) || RECORDED_NAMES.contains(&name))
        && !LAUNCHER_INTERNAL.iter().any(|p| name.starts_with(p))
}

/// The value to record for `name`: [`REDACTED`] for a secret, else the value itself.
pub fn value<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret(name) { REDACTED } else { value }
}

/// The allowed variables of `vars`, secrets redacted, sorted by name.
pub fn record(vars: impl IntoIterator<Item = (String, String)>) -> IndexMap<String, String> {
    let mut out: IndexMap<String, String> = vars
        .into_iter()
        .filter(|(k, _)| recorded(k))
        .map(|(k, v)| {
            let v = value(&k, &v).to_string();
            (k, v)
        })
        .collect();
    out.sort_keys();
    out
}

/// Replaces every secret's value in `vars` with [`REDACTED`], keeping the names (a report may
/// show that `UCX_PASSWORD` was set, never to what).
pub fn redact(vars: &mut IndexMap<String, String>) {
    for (k, v) in vars.iter_mut() {
        if is_secret(k) && v != REDACTED {
            *v = REDACTED.to_string();
        }
    }
}

/// Serde helpers so that a results file never holds a secret, whoever wrote it: reading an old
/// file redacts, and writing redacts again.
pub mod serde_redacted {
    use indexmap::IndexMap;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        vars: &IndexMap<String, String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(vars.iter().map(|(k, v)| (k, super::value(k, v))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<IndexMap<String, String>, D::Error> {
        let mut vars = IndexMap::<String, String>::deserialize(d)?;
        super::redact(&mut vars);
        Ok(vars)
    }
}

/// Like [`serde_redacted`], and only allow-listed names: for the environment a run recorded,
/// where nothing else belongs.
pub mod serde_recorded {
    use indexmap::IndexMap;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        vars: &IndexMap<String, String>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(
            vars.iter()
                .filter(|(k, _)| super::recorded(k))
                .map(|(k, v)| (k, super::value(k, v))),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<IndexMap<String, String>, D::Error> {
        let mut vars = IndexMap::<String, String>::deserialize(d)?;
        vars.retain(|k, _| super::recorded(k));
        super::redact(&mut vars);
        Ok(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_published_secrets_of_issue_16_are_redacted_or_dropped() {
        let r = record(pairs(&[
            ("NVIDIA_API_KEY", "nvapi-123"),
            ("UCX_PASSWORD", "hunter2"),
            ("OMPI_MCA_btl_tcp_password", "pw"),
            ("CUDA_UPLOAD_TOKEN", "tok"),
            ("SLURM_JOB_COMMENT", "ssh key inside"),
            ("NCCL_IB_HCA", "mlx5_0"),
            ("SLURM_JOB_ID", "42"),
            ("HOME", "/root"),
            ("OMPI_MCA_ess_base_jobid", "1"),
        ]));
        let got: Vec<(&str, &str)> = r.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                ("CUDA_UPLOAD_TOKEN", REDACTED),
                ("NCCL_IB_HCA", "mlx5_0"),
                ("OMPI_MCA_btl_tcp_password", REDACTED),
                ("SLURM_JOB_ID", "42"),
                ("UCX_PASSWORD", REDACTED),
            ]
        );
    }

    #[test]
    fn deny_list_matches_any_case_and_position() {
        for n in [
            "nccl_auth_x",
            "X_SECRET_Y",
            "A_PASSWD",
            "MY_CREDENTIALS",
            "HTTP_COOKIE",
            "AWS_SESSION_TOKEN",
        ] {
            assert!(is_secret(n), "{n}");
        }
        assert!(!is_secret("NCCL_IB_HCA"));
    }

    #[test]
    fn results_files_are_redacted_on_read_and_on_write() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct W {
            #[serde(with = "serde_redacted")]
            v: IndexMap<String, String>,
        }
        let w: W = serde_json::from_str(r#"{"v":{"NVIDIA_API_KEY":"nvapi-1","NCCL_ALGO":"Ring"}}"#)
            .unwrap();
        assert_eq!(w.v["NVIDIA_API_KEY"], REDACTED);
        assert_eq!(w.v["NCCL_ALGO"], "Ring");
        let mut raw = IndexMap::new();
        raw.insert("UCX_PASSWORD".to_string(), "pw".to_string());
        let text = serde_json::to_string(&W { v: raw }).unwrap();
        assert!(!text.contains("pw\""), "{text}");
    }

    #[test]
    fn a_line_keeps_its_words_and_loses_its_secrets() {
        let l = "NCCL environment: MY_API_TOKEN=abc123 on rank(s) {0,1} NCCL_IB_HCA=mlx5_0, \
                 db postgres://u:hunter2@db/x";
        let r = line_redacted(l);
        assert!(!r.contains("abc123") && !r.contains("hunter2"), "{r}");
        assert!(
            r.contains("MY_API_TOKEN=<redacted> on rank(s) {0,1}"),
            "{r}"
        );
        assert!(r.contains("NCCL_IB_HCA=mlx5_0,"), "{r}");
        assert_eq!(line_redacted("a=b c==d =e x="), "a=b c==d =e x=");
    }

    #[test]
    fn a_webhook_url_shows_its_host_only() {
        for (url, shown) in [
            (
                "http://hooks.example:8080/T0K3N?k=v",
                "http://hooks.example:8080/<redacted>",
            ),
            (
                "https://u:pw@hooks.example/T",
                "https://<redacted>@hooks.example/<redacted>",
            ),
            (
                "ftp://hooks.example?token=t",
                "ftp://hooks.example/<redacted>",
            ),
            ("hooks.example/T0K3N a", "hooks.example/<redacted>"),
            ("http://relay/", "http://relay/"),
            ("http://relay", "http://relay"),
        ] {
            assert_eq!(webhook_redacted(url), shown);
        }
    }
}
