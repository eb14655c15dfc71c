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
                    Some((k, _)) if is_secret(k) => format!("{k}={REDACTED}"),
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
/// they compare, a WARN may quote a URL) or a diagnostic's words, with every secret
/// [`secret_spans`] finds made [`REDACTED`]; the rest as it was.
pub fn line_redacted(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut last = 0;
    for r in secret_spans(line) {
        out.push_str(&line[last..r.start]);
        out.push_str(REDACTED);
        last = r.end;
    }
    out.push_str(&line[last..]);
    out
}

/// What the one redaction of text found: the byte ranges of `text` that hold a secret — the
/// value after a secret-named key or variable (`UCX_PASSWORD: x`, `API_TOKEN=x`,
/// `"password": "x"`, `Authorization: Bearer x`, and the lines of a block under such a key),
/// and every URL's user part, path and query (where webhooks and stores keep their tokens).
/// [`line_redacted`] and [`masked`] show the same ranges two ways; nothing else decides.
pub fn secret_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    // The indentation under which the lines of a secret key's block are secret, while it lasts.
    let mut block: Option<usize> = None;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start_matches([' ', '\t']).len();
        if let Some(under) = block {
            if body.trim().is_empty() || indent > under {
                spans.push(start + indent..start + body.len());
                start += line.len();
                continue;
            }
            block = None;
        }
        for (range, opens_block) in assignments(body) {
            if opens_block {
                block = Some(indent);
            }
            if !range.is_empty() {
                spans.push(start + range.start..start + range.end);
            }
        }
        spans.extend(
            url_parts(body)
                .into_iter()
                .map(|r| start + r.start..start + r.end),
        );
        start += line.len();
    }
    spans.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut merged: Vec<std::ops::Range<usize>> = Vec::new();
    for r in spans {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// Characters a key or variable name is made of (`env.UCX_PASSWORD`, `aws_secret_access_key`).
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Plain words that name a secret as a key (`password:`, `token:`), besides names that hold
/// a secret's part and look like names: with `_`, `-` or `.` in them, or a capital.
const SECRET_WORDS: &[&str] = &[
    "key",
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "credentials",
    "auth",
    "authorization",
    "cookie",
];

/// Whether `name` before a `:` is a secret's key. Prose says `word: …` too, so a lowercase
/// word is one only when it is a secret's own word: the `author:` of a sentence is not.
fn key_is_secret(name: &str) -> bool {
    is_secret(name)
        && (name.contains(['_', '-', '.'])
            || name.chars().any(|c| c.is_ascii_uppercase())
            || SECRET_WORDS.contains(&name))
}

/// The values of secret-named keys on one line, each with whether it opens a block (nothing
/// after the key, or YAML's `|` or `>`: the secret is on the lines indented under it).
fn assignments(line: &str) -> Vec<(std::ops::Range<usize>, bool)> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(off) = line[i..].find([':', '=']) {
        let sep = i + off;
        i = sep + 1;
        let after = &line[sep + 1..];
        // `host:port`, `mlx5_0:1`, `https:`: a colon is a key's only before a blank.
        if bytes[sep] == b':' && !(after.is_empty() || after.starts_with([' ', '\t'])) {
            continue;
        }
        let head = line[..sep].trim_end_matches([' ', '\t']);
        let head = head.strip_suffix(['"', '\'']).unwrap_or(head);
        let name_at = head
            .char_indices()
            .rfind(|(_, c)| !name_char(*c))
            .map_or(0, |(j, c)| j + c.len_utf8());
        // A dotted path (`env.UCX_PASSWORD`, `--set`'s `KEY.PATH`) is named by its last part.
        let name = head[name_at..].rsplit('.').next().unwrap_or_default();
        let secret = match bytes[sep] {
            b'=' => is_secret(name),
            _ => key_is_secret(name),
        };
        if name.is_empty() || !secret {
            continue;
        }
        let lead = after.len() - after.trim_start_matches([' ', '\t']).len();
        let from = sep + 1 + lead;
        let rest = &line[from..];
        if rest.is_empty() || rest.starts_with('#') {
            out.push((from..from, true));
            continue;
        }
        if bytes[sep] == b':' && rest.starts_with(['|', '>']) {
            out.push((from..from, true));
            continue;
        }
        let end = match rest.chars().next() {
            Some(q @ ('"' | '\'')) => rest[1..].find(q).map_or(rest.len(), |j| j + 1),
            // In a flow mapping (`{K: v, …}`) or after `NAME=`, the value ends at its
            // delimiter; a block mapping's plain value runs to the end of its line.
            _ if bytes[sep] == b'=' => rest
                .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | '}' | ']'))
                .unwrap_or(rest.len()),
            _ if line[..name_at].contains(['{', '[']) => {
                rest.find([',', '}', ']']).unwrap_or(rest.len())
            }
            _ => rest.len(),
        };
        let (s, e) = match rest.starts_with(['"', '\'']) {
            true => (from + 1, from + end.max(1)),
            false => (from, from + end),
        };
        out.push((s..e.max(s), false));
        i = e.max(i);
    }
    out
}

/// The secret parts of every URL on a line: its user part (a token or `user:password`) and
/// what follows its host (path, query, fragment), the first `/` or `?` kept.
fn url_parts(line: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = line[i..].find("://") {
        let at = i + off;
        let scheme = line[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            .count();
        let body = at + 3;
        let end = line[body..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .map_or(line.len(), |j| body + j);
        i = end.max(body);
        if scheme == 0 {
            continue;
        }
        let host_end = line[body..end]
            .find(['/', '?', '#'])
            .map_or(end, |j| body + j);
        if let Some(u) = line[body..host_end].rfind('@') {
            out.push(body..body + u);
        }
        if host_end + 1 < end {
            out.push(host_end + 1..end);
        }
    }
    out
}

/// `text` with every secret [`secret_spans`] finds as a run of `*` of the same length in
/// bytes and in characters (a character of the same UTF-8 length for each), so that a
/// diagnostic's line, column and byte offset still point where they did: the text of a user's
/// file as a diagnostic may quote it.
pub fn masked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for r in secret_spans(text) {
        out.push_str(&text[last..r.start]);
        for c in text[r.start..r.end].chars() {
            out.push(match c {
                '\n' | '\r' | '\t' => c,
                c => ['*', '\u{d7}', '\u{2022}', '\u{1f512}'][c.len_utf8() - 1],
            });
        }
        last = r.end;
    }
    out.push_str(&text[last..]);
    out
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

    /// #36 finding 1: the one redaction, masked in place for a snippet: same bytes, same
    /// characters per line, so a diagnostic's line, column and offset still point where they did.
    #[test]
    fn a_files_text_is_masked_in_place() {
        let text = "outputs:\n  history: postgres://baton:pw1@db/acc\n  notify: https://h.example/hook/T0k?x=1\nenv:\n  UCX_PASSWORD: \"s3 cr3t\"\n  NCCL_IB_HCA: mlx5_0\n  MY_TOKEN: |\n    line one\n    line two\n  API_KEY: é€\nlaunch: { nodes: 1, env: {A_TOKEN: t0k, B: c} }\nwords: the author: stays\n";
        let m = masked(text);
        assert_eq!(m.len(), text.len());
        for (a, b) in text.lines().zip(m.lines()) {
            assert_eq!(a.chars().count(), b.chars().count(), "{a} / {b}");
        }
        for secret in [
            "pw1", "baton:", "hook/T0k", "x=1", "s3 cr3t", "line one", "line two", "é€", "t0k",
        ] {
            assert!(!m.contains(secret), "{secret} in\n{m}");
        }
        for kept in [
            "db/",
            "h.example/",
            "NCCL_IB_HCA: mlx5_0",
            "B: c",
            "the author: stays",
            "UCX_PASSWORD: \"",
        ] {
            assert!(m.contains(kept), "{kept} lost in\n{m}");
        }
        assert_eq!(
            line_redacted("--set env.UCX_PASSWORD=pw `KEY.PATH=VALUE` Authorization: Bearer x"),
            "--set env.UCX_PASSWORD=<redacted> `KEY.PATH=VALUE` Authorization: <redacted>"
        );
    }
}
