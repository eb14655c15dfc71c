//! Where a rendered script's run reports (`render --metrics/--notify/--history`, or the site's
//! `outputs:`): bash lines that fill the array `fleet_args`, which the script's `baton run` or
//! `baton grade` (or `baton accept`) takes. A secret is never written into a script, which is
//! copied, submitted and kept in Slurm's records: a webhook URL with a path (where receivers
//! keep their token) is read from `BATON_NOTIFY_URL` at run time, and a database password is
//! left to PostgreSQL's `PGPASSWORD`.

use std::path::Path;

use crate::notify::Target;
use crate::shell::shell_quote;

/// What a script passes; empty when it reports nowhere.
#[derive(Debug, Clone, Default)]
pub struct Fleet {
    /// `--metrics`, absolute.
    pub metrics: Option<String>,
    pub notify: Option<Target>,
    pub notify_within: Option<u64>,
    /// `--notify-ca`, absolute: the CA file must be there on the machines that run the job.
    pub notify_ca: Option<String>,
    /// `--history`: a file, absolute, or a postgres:// URL.
    pub history: Option<String>,
}

/// What the templates' `fleet.sh.j2` reads (`fleet`): each value as the script passes it,
/// quoted there by `shell_quote`; the same lines as [`Fleet::lines`].
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FleetInfo {
    /// Anything to pass at all: the scripts' baton command then takes `"${fleet_args[@]}"`.
    pub any: bool,
    pub metrics: Option<String>,
    /// The webhook's URL when it holds no secret.
    pub notify: Option<String>,
    /// The webhook's URL is read from `BATON_NOTIFY_URL` at run time.
    pub notify_from_env: bool,
    pub notify_within: Option<u64>,
    pub notify_ca: Option<String>,
    /// The history store without its password.
    pub history: Option<String>,
    /// The store had a password: PGPASSWORD gives it.
    pub history_password: bool,
}

impl Fleet {
    /// What the templates read.
    pub fn info(&self) -> FleetInfo {
        let (history, history_password) = match &self.history {
            Some(h) => {
                let (url, had) = without_password(h);
                (Some(url), had)
            }
            None => (None, false),
        };
        let secret = self.notify.as_ref().is_some_and(Target::has_secret);
        FleetInfo {
            any: !self.is_empty(),
            metrics: self.metrics.clone(),
            notify: self.notify.as_ref().filter(|_| !secret).map(Target::url),
            notify_from_env: secret,
            notify_within: self.notify_within.filter(|_| self.notify.is_some()),
            notify_ca: self.notify_ca.clone().filter(|_| self.notify.is_some()),
            history,
            history_password,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.metrics.is_none() && self.notify.is_none() && self.history.is_none()
    }

    /// The lines that fill `fleet_args`, each value quoted, as `templates/fleet.sh.j2` writes
    /// them (for the acceptance's script, which is no template); none when [`Fleet::is_empty`].
    pub fn lines(&self) -> Vec<String> {
        let i = self.info();
        if !i.any {
            return Vec::new();
        }
        let mut l = vec![
            "# Where this run reports (render --metrics/--notify/--history, or the site's outputs:)."
                .to_string(),
            "fleet_args=()".to_string(),
        ];
        let arg = |flag: &str, value: &str| format!("fleet_args+=({flag} {})", shell_quote(value));
        l.extend(i.metrics.as_deref().map(|m| arg("--metrics", m)));
        if let Some(h) = &i.history {
            l.push(arg("--history", h));
            if i.history_password {
                l.extend(PASSWORD_LINES.map(String::from));
            }
        }
        l.extend(i.notify.as_deref().map(|n| arg("--notify", n)));
        if i.notify_from_env {
            l.extend(NOTIFY_LINES.map(String::from));
        }
        l.extend(
            i.notify_within
                .map(|s| format!("fleet_args+=(--notify-within {s})")),
        );
        l.extend(i.notify_ca.as_deref().map(|c| arg("--notify-ca", c)));
        l
    }
}

const PASSWORD_LINES: [&str; 4] = [
    "# The store's password is not written here: PostgreSQL reads PGPASSWORD.",
    "if [ -z \"${PGPASSWORD:-}\" ]; then",
    "    echo \"baton: PGPASSWORD is not set: the history store may refuse baton\" >&2",
    "fi",
];

const NOTIFY_LINES: [&str; 6] = [
    "# The webhook's path may hold its token: not written here; give the URL as BATON_NOTIFY_URL.",
    "if [ -n \"${BATON_NOTIFY_URL:-}\" ]; then",
    "    fleet_args+=(--notify \"$BATON_NOTIFY_URL\")",
    "else",
    "    echo \"baton: BATON_NOTIFY_URL is not set: the verdict is not sent\" >&2",
    "fi",
];

/// `url` without the password of its user part or of a `password=` parameter, and whether it
/// had one; anything but a postgres:// URL as it is.
fn without_password(url: &str) -> (String, bool) {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((scheme, rest)) = url.split_once("://").filter(|_| is_url) else {
        return (url.to_string(), false);
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut had = false;
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            had = true;
            format!("{}@{host}", user.split(':').next().unwrap_or(""))
        }
        _ => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|kv| {
                    let secret = kv
                        .split_once('=')
                        .is_some_and(|(k, _)| k.eq_ignore_ascii_case("password"));
                    had |= secret;
                    !secret
                })
                .collect();
            match kept.is_empty() {
                true => path.to_string(),
                false => format!("{path}?{}", kept.join("&")),
            }
        }
        None => tail.to_string(),
    };
    (format!("{scheme}://{authority}{tail}"), had)
}

/// `--metrics`/`--history` as a script carries it: a URL as it is, a path made absolute (the
/// job starts wherever Slurm starts it); `None` when it is not UTF-8.
pub fn script_path(p: &Path) -> Option<String> {
    let s = p.to_str()?;
    if s.contains("://") {
        return Some(s.to_string());
    }
    std::path::absolute(p).ok()?.to_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_secret_is_written_and_every_value_is_quoted() {
        let f = Fleet {
            metrics: Some("/var/lib/it's".into()),
            notify: Some(Target::parse("http://relay:8080/hooks/T0K3N").unwrap()),
            notify_within: Some(60),
            notify_ca: Some("/etc/ssl/site ca.pem".into()),
            history: Some("postgres://baton:s3cret@db/acc?sslmode=require&password=x".into()),
        };
        let text = f.lines().join("\n");
        assert!(
            !text.contains("T0K3N") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(
            text.contains("fleet_args+=(--metrics '/var/lib/it'\\''s')"),
            "{text}"
        );
        assert!(
            text.contains("fleet_args+=(--history 'postgres://baton@db/acc?sslmode=require')"),
            "{text}"
        );
        assert!(text.contains("\"$BATON_NOTIFY_URL\""), "{text}");
        assert!(
            text.contains("fleet_args+=(--notify-ca '/etc/ssl/site ca.pem')"),
            "{text}"
        );
        // The acceptance's lines are the templates' lines.
        let template = include_str!("../../templates/fleet.sh.j2");
        for line in PASSWORD_LINES.iter().chain(&NOTIFY_LINES) {
            assert!(template.contains(line), "{line}");
        }
        let plain = Fleet {
            notify: Some(Target::parse("http://relay").unwrap()),
            ..Fleet::default()
        };
        assert!(
            plain
                .lines()
                .contains(&"fleet_args+=(--notify 'http://relay:80/')".to_string())
        );
        assert!(Fleet::default().lines().is_empty());
    }
}
