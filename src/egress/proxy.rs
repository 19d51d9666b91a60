//! plangate's egress proxy: one per step run that declares `egress`, in
//! plangate's own process (tokio). It speaks just enough HTTP/1.1:
//!
//! - `CONNECT host:port` (HTTPS and any TLS): checked, then the bytes are
//!   passed both ways untouched (no TLS interception);
//! - an absolute-form request (`GET http://host:port/path`): checked, sent
//!   on in origin form with `Connection: close` (so one connection is one
//!   host), the `Proxy-*` headers dropped.
//!
//! Anything else is refused. A refusal answers `403` with the reason (and
//! `X-Plangate-Egress: denied`), and is reported at once; a connection let
//! through is reported when it closes or when the proxy stops, with the
//! bytes each way.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{Connection, HEAD_TIMEOUT, Notify, Rules, read_head};

/// How long a connection to the host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Where the proxy listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A unix socket (bubblewrap: bound into the sandbox, reached through [`super::forward`]).
    Unix(PathBuf),
    /// A TCP port on 127.0.0.1 (Landlock: the only port the step may connect to).
    Tcp(u16),
}

/// What a listener serves.
#[derive(Debug)]
pub(crate) enum Handler {
    /// The egress proxy, with the step's list.
    Egress(Rules),
    /// The model API endpoint.
    Api(super::api::Serve),
}

/// A running proxy; [`Proxy::stop`] ends it and reports what is still open.
pub(crate) struct Proxy {
    endpoint: Endpoint,
    task: tokio::task::JoinHandle<()>,
    open: Arc<std::sync::Mutex<Vec<Arc<Live>>>>,
    clients: Clients,
    notify: Notify,
}

/// The tasks serving client connections (aborted when the proxy stops).
type Clients = Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>;

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// A connection let through, with its counters.
#[derive(Debug)]
struct Live {
    conn: std::sync::Mutex<Option<Connection>>,
    out: AtomicU64,
    inn: AtomicU64,
}

impl Live {
    /// Report it once (the first of: it closed, the proxy stopped).
    fn finish(&self, notify: &Notify) {
        let taken = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(mut c) = taken {
            c.bytes_out = self.out.load(Ordering::Relaxed);
            c.bytes_in = self.inn.load(Ordering::Relaxed);
            notify(c);
        }
    }
}

impl Proxy {
    /// Listen on a unix socket at `path` (created here) or, with None, on
    /// 127.0.0.1 at a free port; serve `rules`.
    pub(crate) async fn start(
        rules: Handler,
        unix: Option<&Path>,
        notify: Notify,
    ) -> std::io::Result<Proxy> {
        let open: Arc<std::sync::Mutex<Vec<Arc<Live>>>> = Arc::default();
        let clients: Clients = Arc::default();
        let rules = Arc::new(rules);
        let (endpoint, task) = match unix {
            Some(path) => {
                let l = tokio::net::UnixListener::bind(path)?;
                let (rules, open, notify) = (rules.clone(), open.clone(), notify.clone());
                let c = clients.clone();
                let task = tokio::spawn(async move {
                    while let Ok((s, _)) = l.accept().await {
                        spawn_client(s, &rules, &open, &notify, &c);
                    }
                });
                (Endpoint::Unix(path.to_path_buf()), task)
            }
            None => {
                let l = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
                let port = l.local_addr()?.port();
                let (rules, open, notify) = (rules.clone(), open.clone(), notify.clone());
                let c = clients.clone();
                let task = tokio::spawn(async move {
                    while let Ok((s, _)) = l.accept().await {
                        spawn_client(s, &rules, &open, &notify, &c);
                    }
                });
                (Endpoint::Tcp(port), task)
            }
        };
        Ok(Proxy {
            endpoint,
            task,
            open,
            clients,
            notify,
        })
    }

    /// Where it listens.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stop listening and serving (also when dropped without [`Proxy::stop`]).
    fn abort(&self) {
        self.task.abort();
        for c in std::mem::take(
            &mut *self
                .clients
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ) {
            c.abort();
        }
    }

    /// Stop listening; report every connection still open (its bytes so far).
    pub(crate) fn stop(self) {
        self.abort();
        let open = std::mem::take(
            &mut *self
                .open
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for live in open {
            live.finish(&self.notify);
        }
        if let Endpoint::Unix(p) = &self.endpoint {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.abort();
    }
}

fn spawn_client<S>(
    s: S,
    rules: &Arc<Handler>,
    open: &Arc<std::sync::Mutex<Vec<Arc<Live>>>>,
    notify: &Notify,
    clients: &Clients,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (rules, open, notify) = (rules.clone(), open.clone(), notify.clone());
    let task = tokio::spawn(async move {
        match &*rules {
            Handler::Egress(r) => serve(s, r, &open, &notify).await,
            Handler::Api(a) => super::api::serve(s, a, &notify).await,
        }
    });
    let mut c = clients
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    c.retain(|t| !t.is_finished());
    c.push(task.abort_handle());
}

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Asked {
    /// `CONNECT` (else a plain HTTP request to forward).
    pub connect: bool,
    /// Host as written (brackets removed from IPv6).
    pub host: String,
    /// Port.
    pub port: u16,
    /// For a plain request: the head to send on (origin form, `Connection: close`).
    pub head: Vec<u8>,
}

/// Parse a request head (`buf`, complete up to the blank line); Err says why it is refused.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Asked, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err("incomplete request".into()),
        Err(e) => return Err(format!("not an HTTP request ({e})")),
    }
    let method = req.method.unwrap_or_default();
    let target = req.path.unwrap_or_default();
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, None)?;
        return Ok(Asked {
            connect: true,
            host,
            port,
            head: Vec::new(),
        });
    }
    let rest = target
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])
        .ok_or_else(|| {
            format!("`{method} {target}`: only CONNECT and absolute http:// requests go through the egress proxy")
        })?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (host, port) = split_authority(authority, Some(80))?;
    let path = match path {
        "" => "/".to_owned(),
        p if p.starts_with('/') => p.split('#').next().unwrap_or("/").to_owned(),
        p => format!("/{}", p.split('#').next().unwrap_or_default()),
    };
    let mut head = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    for h in req.headers.iter() {
        let n = h.name.to_ascii_lowercase();
        if n.starts_with("proxy-") || n == "connection" || n == "keep-alive" {
            continue;
        }
        head.extend_from_slice(h.name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(h.value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Asked {
        connect: false,
        host,
        port,
        head,
    })
}

/// `host:port` (`[v6]:port`); `default` when the port may be left out.
fn split_authority(a: &str, default: Option<u16>) -> Result<(String, u16), String> {
    if a.contains('@') {
        return Err(format!("`{a}`: credentials in the address are refused"));
    }
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{a}` is not host:port"))?;
        (h, after.strip_prefix(':'))
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match (port, default) {
        (Some(p), _) => p
            .parse::<u16>()
            .map_err(|_| format!("`{a}`: `{p}` is not a port"))?,
        (None, Some(d)) => d,
        (None, None) => return Err(format!("`{a}` is not host:port")),
    };
    if host.is_empty() {
        return Err(format!("`{a}` has no host"));
    }
    Ok((host.to_owned(), port))
}

/// Handle one client connection.
async fn serve<S>(mut s: S, rules: &Rules, open: &std::sync::Mutex<Vec<Arc<Live>>>, notify: &Notify)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut s)).await {
        Ok(Ok(h)) => h,
        // Nothing was asked for: nothing to report.
        Ok(Err(_)) | Err(_) => return,
    };
    let asked = match parse_head(&head) {
        Ok(a) => a,
        Err(why) => {
            let why = format!("a request it cannot pass on: {why}");
            deny(&mut s, notify, String::new(), 0, why).await;
            return;
        }
    };
    let shown = crate::policy::hosts::normalize_host(&asked.host);
    let addr = match resolve(rules, &asked.host, asked.port).await {
        Ok(a) => a,
        Err(why) => {
            deny(&mut s, notify, shown, asked.port, why).await;
            return;
        }
    };
    let upstream = match tokio::time::timeout(
        CONNECT_TIMEOUT,
        tokio::net::TcpStream::connect(SocketAddr::new(addr, asked.port)),
    )
    .await
    {
        Ok(Ok(u)) => u,
        Ok(Err(e)) => {
            fail(&mut s, notify, shown, asked.port, addr, format!("{e}")).await;
            return;
        }
        Err(_) => {
            fail(&mut s, notify, shown, asked.port, addr, "timed out".into()).await;
            return;
        }
    };
    let live = Arc::new(Live {
        conn: std::sync::Mutex::new(Some(Connection {
            host: shown,
            port: asked.port,
            address: Some(super::ip_text(addr)),
            allowed: true,
            reason: None,
            bytes_out: 0,
            bytes_in: 0,
        })),
        out: AtomicU64::new(0),
        inn: AtomicU64::new(0),
    });
    open.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(live.clone());
    let mut upstream = upstream;
    let first = if asked.connect {
        if s.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .is_err()
        {
            live.finish(notify);
            return;
        }
        rest
    } else {
        let mut first = asked.head;
        first.extend_from_slice(&rest);
        first
    };
    if !first.is_empty() {
        if upstream.write_all(&first).await.is_err() {
            live.finish(notify);
            return;
        }
        live.out.fetch_add(first.len() as u64, Ordering::Relaxed);
    }
    pipe(s, upstream, &live).await;
    live.finish(notify);
}

/// Check and resolve: the address to connect to, or why not.
async fn resolve(rules: &Rules, host: &str, port: u16) -> Result<IpAddr, String> {
    if let Some(ip) = rules.admit(host, port)? {
        return Ok(ip);
    }
    let name = crate::policy::hosts::normalize_host(host);
    let addrs: Vec<IpAddr> = tokio::net::lookup_host((name.as_str(), port))
        .await
        .map_err(|e| format!("{} does not resolve: {e}", super::with_port(&name, port)))?
        .map(|a| a.ip())
        .collect();
    rules.pick(&name, port, &addrs)
}

async fn deny<S: AsyncWrite + Unpin>(
    s: &mut S,
    notify: &Notify,
    host: String,
    port: u16,
    why: String,
) {
    let body = format!("plangate egress: denied: {why}\n");
    super::plain_reply(s, "403 Forbidden", "X-Plangate-Egress: denied\r\n", &body).await;
    let _ = s.shutdown().await;
    notify(Connection {
        host,
        port,
        address: None,
        allowed: false,
        reason: Some(why),
        bytes_out: 0,
        bytes_in: 0,
    });
}

/// Allowed, but the host could not be reached.
async fn fail<S: AsyncWrite + Unpin>(
    s: &mut S,
    notify: &Notify,
    host: String,
    port: u16,
    addr: IpAddr,
    why: String,
) {
    let body = format!(
        "plangate egress: cannot reach {}: {why}\n",
        super::with_port(&host, port)
    );
    super::plain_reply(s, "502 Bad Gateway", "", &body).await;
    notify(Connection {
        host,
        port,
        address: Some(super::ip_text(addr)),
        allowed: true,
        reason: Some(format!("unreachable: {why}")),
        bytes_out: 0,
        bytes_in: 0,
    });
}

/// Pass bytes both ways until both sides are done, counting them.
async fn pipe<S>(client: S, upstream: tokio::net::TcpStream, live: &Live)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut cr, mut cw) = tokio::io::split(client);
    let (mut ur, mut uw) = upstream.into_split();
    let up = async {
        copy_counting(&mut cr, &mut uw, &live.out).await;
        let _ = uw.shutdown().await;
    };
    let down = async {
        copy_counting(&mut ur, &mut cw, &live.inn).await;
        let _ = cw.shutdown().await;
    };
    tokio::join!(up, down);
}

async fn copy_counting<R, W>(r: &mut R, w: &mut W, count: &AtomicU64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0_u8; 32 * 1024];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if w.write_all(&buf[..n]).await.is_err() {
            return;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_requests_are_read() {
        let a = parse_head(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").expect("c");
        assert!(a.connect);
        assert_eq!((a.host.as_str(), a.port), ("api.example.com", 443));
        let a = parse_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").expect("v6");
        assert_eq!((a.host.as_str(), a.port), ("::1", 8443));
        let a = parse_head(
            b"POST http://h.example:8080/v1/x?y=1 HTTP/1.1\r\nHost: h.example:8080\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n",
        )
        .expect("abs");
        assert!(!a.connect);
        assert_eq!((a.host.as_str(), a.port), ("h.example", 8080));
        let head = String::from_utf8(a.head).expect("utf8");
        assert!(head.starts_with("POST /v1/x?y=1 HTTP/1.1\r\n"), "{head}");
        assert!(!head.to_ascii_lowercase().contains("proxy-"), "{head}");
        assert!(head.ends_with("Connection: close\r\n\r\n"), "{head}");
        assert!(!head.contains("keep-alive"));
        let a = parse_head(b"GET http://h.example HTTP/1.1\r\n\r\n").expect("bare");
        assert_eq!(a.port, 80);
        assert!(String::from_utf8_lossy(&a.head).starts_with("GET / HTTP/1.1"));
    }

    #[test]
    fn other_requests_are_refused() {
        for bad in [
            &b"GET /local HTTP/1.1\r\n\r\n"[..],
            b"GET https://h.example/ HTTP/1.1\r\n\r\n",
            b"GET ftp://h.example/ HTTP/1.1\r\n\r\n",
            b"CONNECT h.example HTTP/1.1\r\n\r\n",
            b"CONNECT user:pw@h.example:443 HTTP/1.1\r\n\r\n",
            b"GET http://user@h.example/ HTTP/1.1\r\n\r\n",
            b"CONNECT :443 HTTP/1.1\r\n\r\n",
            b"CONNECT h.example:99999 HTTP/1.1\r\n\r\n",
            b"\x16\x03\x01\x02\x00\x01\r\n\r\n",
        ] {
            assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
