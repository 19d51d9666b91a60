//! Egress allow-lists (issue 24): a step or agent that declares
//! `egress: [HOST, HOST:PORT, "*.example.com", ...]` reaches nothing but
//! plangate's own proxy ([`proxy`]), which lets through the declared hosts
//! only (HTTP, and HTTPS through `CONNECT`; no TLS interception).
//!
//! An entry is a [`crate::policy::hosts::HostPattern`]: a name, `*.domain`
//! (names under it, not the domain itself), an IPv4 address or a bracketed
//! IPv6 address. Without `:PORT` it allows ports 80 and 443 only.
//!
//! Names are resolved by the proxy, once, and it connects to the address it
//! checked (no second lookup a DNS answer could change). An address that is
//! not public (loopback, private, link-local and so the cloud metadata
//! service, carrier-grade NAT, unique-local, multicast, unspecified) is
//! refused, unless it is itself declared (an IP entry with a matching port),
//! or the declared name is `localhost` and the address is loopback. A raw IP
//! in a request passes only when an IP entry declares it.
//!
//! How the process is kept from going around the proxy depends on the
//! backend (see `docs/SPEC.md`, "Egress allow-list"): under bubblewrap it
//! has its own network namespace whose only listener is [`forward`]'s; under
//! Landlock+seccomp it may connect (TCP) only to the proxy's port.

pub(crate) mod api;
pub(crate) mod forward;
pub(crate) mod meter;
pub(crate) mod prices;
pub(crate) mod proxy;

use std::net::IpAddr;

use crate::policy::hosts::HostPattern;

pub(crate) use forward::ForwardArgs;

/// The ports an entry without `:PORT` allows.
pub(crate) const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// The variables that name the proxy in a process's environment (both cases:
/// curl reads only the lower-case `http_proxy`; most tools read either).
pub(crate) const PROXY_VARS: [&str; 6] = [
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
];

/// A parsed `egress:` list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Rules {
    entries: Vec<HostPattern>,
}

impl Rules {
    /// Parse every entry; the first that is not one is the error (with why).
    pub(crate) fn parse(list: &[String]) -> Result<Rules, String> {
        let mut entries = Vec::new();
        for e in list {
            let p = HostPattern::parse(e).map_err(|why| format!("egress: {why}"))?;
            entries.push(p);
        }
        Ok(Rules { entries })
    }

    /// Whether an entry allows the (normalized) name or IP text `host` on `port`.
    fn entry_allows(p: &HostPattern, host: &str, port: u16) -> bool {
        match p.port {
            Some(want) => want == port && p.matches(host, port),
            None => DEFAULT_PORTS.contains(&port) && p.matches(host, port),
        }
    }

    /// Whether an IP entry declares `ip` on `port` (declared "as such").
    fn declares_ip(&self, ip: IpAddr, port: u16) -> bool {
        self.entries.iter().any(|p| {
            !p.wildcard
                && parse_ip(&p.host) == Some(ip)
                && p.port
                    .map_or(DEFAULT_PORTS.contains(&port), |want| want == port)
        })
    }

    /// The first check, before any lookup: Ok(Some(ip)) when the request
    /// names a declared IP (connect there), Ok(None) when it names a
    /// declared host name (resolve it, then [`Rules::pick`]); Err why not.
    pub(crate) fn admit(&self, host: &str, port: u16) -> Result<Option<IpAddr>, String> {
        if port == 0 {
            return Err("port 0".to_owned());
        }
        if let Some(ip) = parse_ip(host) {
            return if self.declares_ip(ip, port) {
                Ok(Some(ip))
            } else {
                Err(format!(
                    "{} (a raw IP address) is not in the step's egress list",
                    with_port(&ip_text(ip), port)
                ))
            };
        }
        let name = crate::policy::hosts::normalize_host(host);
        let named = HostPattern::parse(&name).is_ok_and(|p| !p.wildcard && p.port.is_none());
        if !named {
            return Err(format!("`{host}` is not a host name"));
        }
        if self
            .entries
            .iter()
            .filter(|p| parse_ip(&p.host).is_none())
            .any(|p| Self::entry_allows(p, &name, port))
        {
            Ok(None)
        } else if self
            .entries
            .iter()
            .any(|p| p.matches(&name, p.port.unwrap_or(port)))
        {
            Err(format!(
                "{} is not in the step's egress list (that host is declared for other ports)",
                with_port(&name, port)
            ))
        } else {
            Err(format!(
                "{} is not in the step's egress list",
                with_port(&name, port)
            ))
        }
    }

    /// Of the addresses `name` resolved to, the first it may connect to;
    /// Err names the refused address and why.
    pub(crate) fn pick(&self, name: &str, port: u16, addrs: &[IpAddr]) -> Result<IpAddr, String> {
        let localhost = crate::policy::hosts::normalize_host(name) == "localhost";
        let mut refused = None;
        for &ip in addrs {
            let ip = canonical(ip);
            if is_public(ip) || self.declares_ip(ip, port) || (localhost && ip.is_loopback()) {
                return Ok(ip);
            }
            refused.get_or_insert(ip);
        }
        match refused {
            Some(ip) => Err(format!(
                "{} resolves to {} ({}), which the egress list does not declare",
                with_port(name, port),
                ip_text(ip),
                kind(ip)
            )),
            None => Err(format!("{} does not resolve", with_port(name, port))),
        }
    }
}

/// `host:port`, brackets around an IPv6 address.
pub(crate) fn with_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// An IP address written the strict way (`1.2.3.4`, `::1`, `[::1]`); None
/// for a name (and for the lax forms `127.1`, `0x7f.0.0.1`, which
/// [`Rules::admit`] refuses as not being host names either: the entries
/// allow letters, digits, `-` and `_` per label, and such a label only
/// matches a declared entry written the same way).
pub(crate) fn parse_ip(host: &str) -> Option<IpAddr> {
    let h = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    h.parse::<IpAddr>().ok().map(canonical)
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    crate::policy::addr::canonical(ip)
}

/// The text of an address (IPv6 without brackets).
pub(crate) fn ip_text(ip: IpAddr) -> String {
    ip.to_string()
}

/// Whether an address is on the public internet (what a declared name may
/// resolve to without the address being declared too): [`crate::policy::addr::is_public`].
pub(crate) fn is_public(ip: IpAddr) -> bool {
    crate::policy::addr::is_public(ip)
}

/// What kind of address a refused one is, for the message.
fn kind(ip: IpAddr) -> &'static str {
    crate::policy::addr::kind(ip)
}

/// Where a step's proxy reports its connections (the engine turns each into
/// an audit line, a console line when refused, and the report's tally).
#[derive(Clone)]
pub(crate) struct Notices(pub Notify);

impl Notices {
    /// Report through `send`.
    pub(crate) fn new(send: impl Fn(Connection) + Send + Sync + 'static) -> Notices {
        Notices(std::sync::Arc::new(send))
    }
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("egress::Notices")
    }
}

/// The port the forwarder listens on inside a bwrap sandbox (its own
/// network namespace: nothing else is there).
pub(crate) const FORWARD_PORT: u16 = 3128;

/// The port the model API endpoint has inside a bwrap sandbox.
pub(crate) const API_PORT: u16 = 3129;

/// One connection the proxy handled (or refused): a line of the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Connection {
    /// The host asked for (normalized; an IP as written strictly).
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// The address connected to (None when refused before connecting).
    pub address: Option<String>,
    /// Whether it was let through.
    pub allowed: bool,
    /// Why it was refused (None when allowed).
    pub reason: Option<String>,
    /// Bytes from the step to the host.
    pub bytes_out: u64,
    /// Bytes from the host to the step.
    pub bytes_in: u64,
}

/// Longest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head.
pub(crate) const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Where reports go.
pub(crate) type Notify = std::sync::Arc<dyn Fn(Connection) + Send + Sync>;

/// Answer a client with a plain-text reply and close (errors ignored: the
/// client may be gone). `extra` is further header lines, each ending `\r\n`.
pub(crate) async fn plain_reply<S: tokio::io::AsyncWrite + Unpin>(
    s: &mut S,
    status: &str,
    extra: &str,
    body: &str,
) {
    let reply = format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::io::AsyncWriteExt::write_all(s, reply.as_bytes()).await;
}

/// Read the request head: the bytes up to and including the blank line, and what followed.
pub(crate) async fn read_head<S: tokio::io::AsyncRead + Unpin>(
    s: &mut S,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 2048];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(format!("request head longer than {MAX_HEAD} bytes"));
        }
        let n = tokio::io::AsyncReadExt::read(s, &mut chunk)
            .await
            .map_err(|e| format!("cannot read the request: {e}"))?;
        if n == 0 {
            return Err("the client closed before its request was complete".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[cfg(test)]
mod tests;
