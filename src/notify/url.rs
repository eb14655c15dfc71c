//! The webhook's address: `http[s]://HOST[:PORT][/PATH][?QUERY]`, checked before anything runs so
//! a typo is invalid input (exit 2), not a delivery that fails after an hour of measuring.

use std::fmt;

/// Where the verdict is POSTed. Its display is scheme, host and port only: webhook paths and
/// queries often carry the receiver's token (Slack, Teams, PagerDuty), which no line may show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// Path and query as written, `/` when none.
    pub path: String,
    /// `https://`: sent over TLS.
    pub tls: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("not an http:// or https:// URL (http[s]://HOST[:PORT]/PATH)")]
    Scheme,
    #[error("no host")]
    NoHost,
    #[error("credentials in the URL are not sent: put the receiver's token in its path or query")]
    Credentials,
    #[error("port {0:?} is not a number from 1 to 65535")]
    Port(String),
    #[error("spaces and control characters must be percent-encoded")]
    Unsafe,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, UrlError> {
        if url.chars().any(|c| c.is_control() || c == ' ') {
            return Err(UrlError::Unsafe);
        }
        let lower = url.to_ascii_lowercase();
        let tls = lower.starts_with("https://");
        if !tls && !lower.starts_with("http://") {
            return Err(UrlError::Scheme);
        }
        let rest = &url[if tls { "https://" } else { "http://" }.len()..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') {
            return Err(UrlError::Credentials);
        }
        let (host, port) = host_port(authority, if tls { 443 } else { 80 })?;
        let path = path.split('#').next().unwrap_or("");
        let path = match path {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        Ok(Target {
            host,
            port,
            path,
            tls,
        })
    }

    /// The whole URL, to send to or to hand a script through the environment; never to show.
    pub fn url(&self) -> String {
        format!("{self}{}", self.path)
    }

    /// Whether the path or query may hold the receiver's token: any path but `/`.
    pub fn has_secret(&self) -> bool {
        self.path != "/"
    }

    /// `HOST:PORT` as a socket address and a `Host` header take it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

fn host_port(authority: &str, default: u16) -> Result<(String, u16), UrlError> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or(UrlError::NoHost)?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(UrlError::NoHost);
    }
    let port = match port {
        None => default,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| UrlError::Port(p.to_string()))?,
    };
    Ok((host.to_string(), port))
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "{scheme}://{}", self.authority())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_shows_no_path() {
        let t = Target::parse("http://hooks.example:8080/T0/secret?k=v#x").unwrap();
        assert_eq!(t.host, "hooks.example");
        assert_eq!(t.port, 8080);
        assert_eq!(t.path, "/T0/secret?k=v");
        assert_eq!(t.to_string(), "http://hooks.example:8080");
        assert_eq!(t.url(), "http://hooks.example:8080/T0/secret?k=v");
        assert!(t.has_secret());
        let bare = Target::parse("http://relay").unwrap();
        assert_eq!(
            (bare.url(), bare.has_secret()),
            ("http://relay:80/".into(), false)
        );
        let t = Target::parse("http://[::1]?a=b").unwrap();
        assert_eq!(
            (t.authority().as_str(), t.path.as_str()),
            ("[::1]:80", "/?a=b")
        );
    }

    #[test]
    fn refuses_what_it_cannot_send_safely() {
        let e = |u: &str| Target::parse(u).unwrap_err();
        let t = Target::parse("https://hooks.example/T").unwrap();
        assert_eq!(
            (t.tls, t.port, t.to_string()),
            (true, 443, "https://hooks.example:443".into())
        );
        assert_eq!(e("ftp://x/"), UrlError::Scheme);
        assert_eq!(e("http://u:pw@x/"), UrlError::Credentials);
        assert_eq!(e("http://x:0/"), UrlError::Port("0".into()));
        assert_eq!(e("http://x/a\r\nX-Evil: 1"), UrlError::Unsafe);
        assert_eq!(e("http:///p"), UrlError::NoHost);
    }
}
