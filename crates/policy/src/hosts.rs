//! The host allow-list of `policy.allowed_hosts` (pure).
//!
//! An entry is a host name (`api.example.com`), a wildcard (`*.example.com`:
//! any name *under* example.com, not example.com itself), an IPv4 address or
//! a bracketed IPv6 address, each optionally with `:port` (without a port any
//! port matches). Names are compared without case and without a final dot.
//! There is no entry for "everything": leave `allowed_hosts` unset for that.
//!
//! A `--policy` file's list caps the plan's: a host must be allowed by both
//! ([`intersect`]), so a plan can narrow the maintainers' list, never widen it.

use std::fmt;

/// One parsed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// `*.` prefix: `host` is a suffix every matching name ends with after a dot.
    pub wildcard: bool,
    /// Lowercase, no final dot (IPv6 with its brackets).
    pub host: String,
    /// Only this port, if set.
    pub port: Option<u16>,
}

/// A URL host as plangate compares it: lowercase, without a final dot.
pub fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

impl HostPattern {
    /// Parse an entry; `Err` says why it is not one.
    pub fn parse(entry: &str) -> Result<HostPattern, String> {
        let s = entry.trim();
        let (host, port) = if s.starts_with('[') {
            match s.find(']') {
                Some(end) => {
                    let (h, rest) = s.split_at(end + 1);
                    match rest.strip_prefix(':') {
                        Some(p) => (h, Some(p)),
                        None if rest.is_empty() => (h, None),
                        None => return Err(format!("`{entry}` is not a host")),
                    }
                }
                None => return Err(format!("`{entry}` has no closing `]`")),
            }
        } else {
            match s.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (s, None),
            }
        };
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("`{entry}`: `{p}` is not a port"))?,
            ),
            None => None,
        };
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let name = normalize_host(name);
        let ok = if name.starts_with('[') {
            !wildcard
                && name.len() > 2
                && name[1..name.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        } else {
            !name.is_empty()
                && name.split('.').all(|label| {
                    !label.is_empty()
                        && label
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                })
        };
        if !ok {
            return Err(format!(
                "`{entry}` is not a host name, `*.domain`, or IP address (with an optional `:port`)"
            ));
        }
        Ok(HostPattern {
            wildcard,
            host: name,
            port,
        })
    }

    /// Whether a (normalized) host and port match.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = normalize_host(host);
        if self.wildcard {
            host.len() > self.host.len() + 1
                && host.ends_with(&self.host)
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.'
        } else {
            host == self.host
        }
    }

    /// Whether every host this pattern matches, `outer` matches too (ports aside).
    pub fn within(&self, outer: &HostPattern) -> bool {
        match (self.wildcard, outer.wildcard) {
            (_, false) => !self.wildcard && self.host == outer.host,
            (false, true) | (true, true) => {
                (self.wildcard && self.host == outer.host)
                    || self.host.ends_with(&format!(".{}", outer.host))
            }
        }
    }

    /// What both patterns allow, if anything (the more specific one, with the port of either).
    fn intersect(&self, other: &HostPattern) -> Option<HostPattern> {
        let port = match (self.port, other.port) {
            (None, p) | (p, None) => p,
            (Some(a), Some(b)) if a == b => Some(a),
            _ => return None,
        };
        let base = if self.within(other) {
            self
        } else if other.within(self) {
            other
        } else {
            return None;
        };
        Some(HostPattern {
            wildcard: base.wildcard,
            host: base.host.clone(),
            port,
        })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        f.write_str(&self.host)?;
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// Whether `host:port` is allowed by a list (entries that do not parse allow nothing).
pub fn allowed(list: &[String], host: &str, port: u16) -> bool {
    list.iter()
        .filter_map(|e| HostPattern::parse(e).ok())
        .any(|p| p.matches(host, port))
}

/// `host:port`, brackets around an IPv6 address.
pub fn with_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Whether a list names `host:port` itself (no wildcard; an entry's port,
/// when it has one, is `port`): by its name, or by its address `ip` (the
/// address a name resolved to, or the host's own in any spelling) written
/// as an IP entry. What reaching an address that is not public needs.
pub fn names(list: &[String], host: &str, port: u16, ip: Option<std::net::IpAddr>) -> bool {
    let host = normalize_host(host);
    let ip = ip
        .or_else(|| crate::addr::host_ip(&host))
        .map(crate::addr::canonical);
    // An IP entry written the strict way (`127.0.0.1`, `[::1]`).
    let entry_ip = |h: &str| {
        let inner = h
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .unwrap_or(h);
        inner
            .parse::<std::net::IpAddr>()
            .ok()
            .map(crate::addr::canonical)
    };
    list.iter()
        .filter_map(|e| HostPattern::parse(e).ok())
        .filter(|p| !p.wildcard && p.port.is_none_or(|q| q == port))
        .any(|p| p.host == host || (ip.is_some() && entry_ip(&p.host) == ip))
}

/// The hosts both lists allow, as a list (empty: none).
pub fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    let parse = |l: &[String]| -> Vec<HostPattern> {
        l.iter()
            .filter_map(|e| HostPattern::parse(e).ok())
            .collect()
    };
    let (pa, pb) = (parse(a), parse(b));
    let mut out: Vec<String> = Vec::new();
    for x in &pa {
        for y in &pb {
            if let Some(z) = x.intersect(y) {
                let s = z.to_string();
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
    }
    out
}

/// Whether a list allows every host `entry` matches on `port` (entries of the
/// list that do not parse allow nothing).
pub fn covers(list: &[String], entry: &HostPattern, port: u16) -> bool {
    list.iter()
        .filter_map(|e| HostPattern::parse(e).ok())
        .any(|p| p.port.is_none_or(|q| q == port) && entry.within(&p))
}

/// Where the operator lets a declared secret go: the `--policy` file's
/// `allowed_hosts` (for every secret) and its `secret_hosts` (per secret).
/// The plan's own lists never count: it is written by whoever opened the
/// pull request. Nothing set: no host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretHosts {
    /// The policy file's `allowed_hosts` (None: it sets none).
    pub any: Option<Vec<String>>,
    /// The policy file's `secret_hosts`: secret name → hosts.
    pub by_name: std::collections::BTreeMap<String, Vec<String>>,
}

impl SecretHosts {
    /// Whether `secret` may be sent to every host `entry` matches on `port`.
    pub fn allows(&self, secret: &str, entry: &HostPattern, port: u16) -> bool {
        self.any
            .iter()
            .chain(self.by_name.get(secret))
            .any(|l| covers(l, entry, port))
    }
}

/// Where a URL goes: the parts the allow-list and the same-origin rules look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `https` (else `http`).
    pub https: bool,
    /// Normalized host ([`normalize_host`]; IPv6 in brackets).
    pub host: String,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

impl Target {
    /// `scheme://host:port`, what "same origin" compares.
    pub fn origin(&self) -> String {
        format!(
            "{}://{}:{}",
            if self.https { "https" } else { "http" },
            self.host,
            self.port
        )
    }

    /// `localhost`, `*.localhost`, 127.0.0.0/8 or `[::1]`.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self.host.ends_with(".localhost")
            || self.host == "[::1]"
            || self
                .host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// Whether `host:port` is allowed by a list, or any host when there is none.
    pub fn allowed_by(&self, list: Option<&[String]>) -> bool {
        list.is_none_or(|l| allowed(l, &self.host, self.port))
    }
}

const NO_SCHEME: &str = "the URL has no scheme; start it with `https://` (or `http://`)";

/// Parse an absolute `http://` or `https://` URL the way the HTTP client will
/// (the `http` crate's `Uri`, which ureq sends), refusing credentials in it.
/// Errors never repeat the URL (it may hold a password).
pub fn parse_url(url: &str) -> Result<(http::Uri, Target), String> {
    let url = url.trim();
    if !url.is_empty() && !url.contains("://") {
        return Err(NO_SCHEME.to_owned());
    }
    let uri: http::Uri = url.parse().map_err(|e| format!("not a valid URL ({e})"))?;
    let target = target_of(&uri)?;
    Ok((uri, target))
}

/// The [`Target`] of a parsed URI (same checks as [`parse_url`]).
pub fn target_of(uri: &http::Uri) -> Result<Target, String> {
    let https = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("https") => true,
        Some("http") => false,
        Some(other) => {
            return Err(format!(
                "`{other}:` URLs are not supported; use `http://` or `https://`"
            ));
        }
        None => return Err(NO_SCHEME.to_owned()),
    };
    let authority = uri
        .authority()
        .ok_or_else(|| "the URL has no host".to_owned())?;
    if authority.as_str().contains('@') {
        return Err(
            "the URL carries credentials (`user:password@`); pass them in `headers` (e.g. `Authorization`) instead"
                .to_owned(),
        );
    }
    let host = normalize_host(authority.host());
    if host.is_empty() {
        return Err("the URL has no host".to_owned());
    }
    let port = match authority.port_u16() {
        Some(p) => p,
        None if authority.as_str().ends_with(':') => {
            return Err("the URL has an empty port".to_owned());
        }
        None if https => 443,
        None => 80,
    };
    Ok(Target { https, host, port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn entries_parse_and_match() {
        let l = list(&["api.example.com", "*.corp.test", "127.0.0.1:8080", "[::1]"]);
        assert!(allowed(&l, "api.example.com", 443));
        assert!(allowed(&l, "API.Example.COM.", 80), "case and final dot");
        assert!(!allowed(&l, "example.com", 443));
        assert!(!allowed(&l, "api.example.com.evil.net", 443));
        assert!(!allowed(&l, "evilapi.example.com", 443));
        assert!(allowed(&l, "a.corp.test", 443));
        assert!(allowed(&l, "a.b.corp.test", 443));
        assert!(!allowed(&l, "corp.test", 443), "a wildcard needs a label");
        assert!(!allowed(&l, "xcorp.test", 443));
        assert!(allowed(&l, "127.0.0.1", 8080));
        assert!(
            !allowed(&l, "127.0.0.1", 8081),
            "the port is part of the entry"
        );
        assert!(!allowed(&l, "localhost", 8080));
        assert!(allowed(&l, "[::1]", 9));
        assert!(
            !allowed(&[], "api.example.com", 443),
            "an empty list allows nothing"
        );
    }

    #[test]
    fn bad_entries_are_refused() {
        for bad in [
            "",
            "*",
            "*.",
            "http://a.com",
            "a.com/x",
            "a..com",
            "a.com:0",
            "a.com:70000",
            "[::1",
            "*.[::1]",
            "a com",
            "user@a.com",
        ] {
            assert!(
                HostPattern::parse(bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        let re =
            regex::Regex::new(crate::model::policy::HOST_PATTERN).unwrap_or_else(|e| panic!("{e}"));
        for good in [
            "a.com",
            "*.a.com",
            "a.com:443",
            "10.0.0.1",
            "[::1]:8080",
            "a-b_c.d",
        ] {
            assert!(re.is_match(good), "{good}");
            assert!(HostPattern::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "*",
            "http://a.com",
            "a.com:0",
            "a.com:65536",
            "a.com/",
            "*.*.a.com",
        ] {
            assert!(!re.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn a_list_covers_an_entry_only_on_every_host_and_port_it_matches() {
        let l = list(&["*.example.com", "api.other.net:443", "10.0.0.1"]);
        let p = |e: &str| HostPattern::parse(e).unwrap();
        for (entry, port, want) in [
            ("api.example.com", 443, true),
            ("*.api.example.com", 80, true),
            ("*.example.com", 80, true),
            ("example.com", 443, false),
            ("*.com", 443, false),
            ("api.other.net", 443, true),
            ("api.other.net", 80, false),
            ("*.other.net", 443, false),
            ("10.0.0.1", 8080, true),
            ("10.0.0.2", 80, false),
        ] {
            assert_eq!(covers(&l, &p(entry), port), want, "{entry}:{port}");
        }
        let s = SecretHosts {
            any: None,
            by_name: [("A".to_owned(), list(&["api.example.com"]))].into(),
        };
        assert!(s.allows("A", &p("api.example.com"), 443));
        assert!(!s.allows("B", &p("api.example.com"), 443));
        assert!(!SecretHosts::default().allows("A", &p("api.example.com"), 443));
    }

    #[test]
    fn intersection_keeps_what_both_allow() {
        let plan = list(&["*.example.com", "other.org", "api.test:443"]);
        let file = list(&["api.example.com", "*.sub.example.com", "*.test"]);
        assert_eq!(
            intersect(&plan, &file),
            list(&["api.example.com", "*.sub.example.com", "api.test:443"])
        );
        assert_eq!(
            intersect(&file, &plan),
            list(&["api.example.com", "*.sub.example.com", "api.test:443"])
        );
        assert!(intersect(&list(&["a.com:80"]), &list(&["a.com:443"])).is_empty());
        assert_eq!(
            intersect(&list(&["a.com"]), &list(&["a.com:8443"])),
            list(&["a.com:8443"])
        );
        assert!(intersect(&list(&["*.a.com"]), &list(&["a.com"])).is_empty());
        assert!(intersect(&list(&["x.com"]), &list(&["y.com"])).is_empty());
    }

    #[test]
    fn urls_are_read_as_the_client_reads_them() {
        let t = |u: &str| parse_url(u).map(|(_, t)| t);
        let a = t("https://API.example.com/x?y=1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (a.https, a.host.as_str(), a.port),
            (true, "api.example.com", 443)
        );
        assert_eq!(a.origin(), "https://api.example.com:443");
        let b = t("http://127.0.0.1:8080/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((b.https, b.port), (false, 8080));
        assert!(b.is_loopback());
        let c = t("http://[::1]:9/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.host, "[::1]");
        assert!(c.is_loopback());
        assert!(
            !t("http://example.com")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_loopback()
        );
        for (bad, why) in [
            ("ftp://example.com/", "not supported"),
            ("example.com/path", "no scheme"),
            ("/just/a/path", "no scheme"),
            ("https://user:hunter2@example.com/", "credentials"),
            ("https://token@example.com/", "credentials"),
            ("http://exa mple.com/", "not a valid URL"),
            ("", "not a valid URL"),
        ] {
            let e = t(bad).map(|_| ()).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
            assert!(!e.contains("hunter2"), "the error repeats no password: {e}");
        }
    }
}
