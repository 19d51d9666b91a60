//! The `http_request` tool (design 002, 2.5): one HTTP exchange with ureq
//! (rustls + ring, the same client as the `openai` agent provider), run on
//! the blocking pool.
//!
//! plangate follows redirects itself (ureq's are off) so that every hop is
//! checked: its host against `policy.allowed_hosts`, no https → http
//! downgrade, and credentials never cross origins. The rules:
//!
//! - 301, 302, 303, 307 and 308 are followed up to `max_redirects` (default
//!   5); each URL followed is listed in `redirects`.
//! - 303 turns any method but HEAD into GET; 301 and 302 turn POST into GET
//!   (as browsers and curl do); otherwise the method and body are kept. A GET
//!   made this way drops the body and its `Content-Type`.
//! - When a hop's origin (scheme, host, port) differs from the first URL's,
//!   `Authorization`, `Cookie`, `Proxy-Authorization`, every header whose name
//!   looks like a credential (`auth`, `token`, `key`, `secret`, `session`,
//!   `password`, `credential`) and the plan's `sensitive_headers` are dropped
//!   for the rest of the chain (listed in `dropped_headers`). A 307/308 that
//!   would re-send the request body to another origin stops the step.
//! - https → http redirects stop the step (ask for the http URL directly if
//!   that is really wanted).
//!
//! The response body is read through a cap (`max_response_bytes`, default
//! 10 MiB; `truncated` says when more was sent), decoded from gzip by ureq
//! first, so the cap bounds what plangate holds. At most that many bytes are
//! kept, and the cut never keeps part of a secret: plangate reads 64 KiB past
//! the cap and moves the cut back to the start of a secret it would split
//! (and of a split UTF-8 character); a body the step stopped reading loses
//! its last partial word. Response headers that carry
//! credentials (`Set-Cookie`, names like the ones above) are kept with their
//! value replaced; query values under such names are replaced in every URL
//! reported. The request's headers and body are never written anywhere.
//! Everything else in `result.json` is swept for secrets like every artifact.

pub(crate) mod spec;

use std::collections::BTreeMap;
use std::io::Read;
use std::time::{Instant, SystemTime};

use base64::Engine as _;
use serde_json::{Value, json};
use ureq::http::{self, HeaderName, HeaderValue, Method, Uri};

use super::{StepContext, Stop, ToolReturn};
use crate::model::{StepOutcome, StepStatus};
use crate::policy::hosts::{self, Target};
use crate::redact;
use crate::tools::params::http::{HeaderValueSpec, HttpAction, HttpMethod, HttpRequestParams};
use spec::{is_listed, looks_sensitive};

/// Redirects followed when `max_redirects` is not set.
pub(crate) const DEFAULT_MAX_REDIRECTS: u32 = 5;
/// Response-body bytes kept when `max_response_bytes` is not set.
pub(crate) const DEFAULT_MAX_RESPONSE_BYTES: u64 = 10 * 1024 * 1024;
/// How much earlier than the step's deadline the client stops.
const CLIENT_MARGIN: std::time::Duration = std::time::Duration::from_millis(100);
/// What replaces a credential-looking value.
const REDACTED: &str = "[REDACTED]";

/// Why the exchange stopped early.
struct Failure {
    status: StepStatus,
    message: String,
}

impl Failure {
    fn failed(message: String) -> Failure {
        Failure {
            status: StepStatus::Failed,
            message,
        }
    }
}

/// The exchange as it stands (what `result.json` reports).
struct Exchange {
    method: Method,
    uri: Uri,
    redirects: Vec<String>,
    dropped: Vec<String>,
    status: Option<http::StatusCode>,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
    truncated: bool,
    /// Secrets the rules found in credential headers of any hop's response
    /// (their values are never written: each is a finding of `result.json`).
    found: Vec<crate::secrets::Finding>,
}

/// Make the request, following redirects, and read the response.
pub(crate) fn run(a: &HttpAction, ctx: &StepContext, stop: &Stop) -> ToolReturn {
    let clock = Instant::now();
    let mut outcome = StepOutcome::new(SystemTime::now());
    let p = &a.params;
    let first = with_params(&p.url, &p.params).and_then(|u| {
        let t = hosts::target_of(&u)?;
        Ok((u, t))
    });
    let (uri, target) = match first {
        Ok(x) => x,
        Err(why) => {
            outcome.error = Some(format!("`url`: {why}"));
            let result = json!({"method": p.method.as_str(), "error": outcome.error});
            return ToolReturn {
                outcome,
                result: Some(result),
            };
        }
    };
    let mut ex = Exchange {
        method: method_of(p.method),
        uri,
        redirects: Vec::new(),
        dropped: Vec::new(),
        status: None,
        headers: BTreeMap::new(),
        body: Vec::new(),
        truncated: false,
        found: Vec::new(),
    };
    let failure = exchange(p, ctx, stop, &mut ex, target);
    let response_time = clock.elapsed().as_secs_f64();
    let shown_url = display_url(&ex.uri);
    let failure = failure.or_else(|| {
        let status = ex.status?;
        let ok = if p.expected_status.is_empty() {
            status.is_success()
        } else {
            p.expected_status.contains(&status.as_u16())
        };
        (!ok).then(|| {
            let wanted = if p.expected_status.is_empty() {
                String::new()
            } else {
                let l: Vec<String> = p.expected_status.iter().map(u16::to_string).collect();
                format!(" (expected {})", l.join(", "))
            };
            Failure::failed(format!(
                "{} {shown_url} returned {}{wanted}",
                ex.method,
                status_line(status)
            ))
        })
    });
    let (body, encoding) = match std::str::from_utf8(&ex.body) {
        Ok(s) => (s.to_owned(), "utf-8"),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(&ex.body),
            "base64",
        ),
    };
    let error = failure.as_ref().map(|f| f.message.clone());
    let result = json!({
        "method": ex.method.as_str(),
        "url": shown_url,
        "status_code": ex.status.map(|s| s.as_u16()),
        "reason": ex.status.and_then(|s| s.canonical_reason()),
        "headers": ex.headers,
        "body": if ex.status.is_some() { Value::String(body) } else { Value::Null },
        "body_encoding": encoding,
        "size": ex.body.len(),
        "truncated": ex.truncated,
        "response_time": response_time,
        "redirects": ex.redirects,
        "dropped_headers": ex.dropped,
        "error": error,
    });
    match failure {
        Some(f) => {
            outcome.status = f.status;
            outcome.error = Some(f.message);
        }
        None => outcome.status = StepStatus::Success,
    }
    outcome.truncated = ex.truncated;
    // A secret in a credential header is masked in `result.json` before the
    // sweep could see it: it is a finding of that file all the same.
    let location = format!("{}/result.json", ctx.artifacts_rel);
    for f in ex.found {
        if !outcome
            .findings
            .iter()
            .any(|g| g.fingerprint == f.fingerprint)
        {
            outcome.findings.push(crate::model::Finding {
                rule: f.rule,
                step: None,
                location: location.clone(),
                line: 0,
                fingerprint: f.fingerprint,
            });
        }
    }
    ToolReturn {
        outcome,
        result: Some(result),
    }
}

/// The request's headers as sent: text as written, a `{secret: NAME}` header
/// with the secret's value from plangate's environment (remembered by the
/// redaction layer first, marked sensitive).
fn request_headers(
    p: &HttpRequestParams,
    ctx: &StepContext,
) -> Result<Vec<(HeaderName, HeaderValue)>, Failure> {
    let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
    for (k, v) in &p.headers {
        let value = match v {
            HeaderValueSpec::Text(t) => t.clone(),
            HeaderValueSpec::Secret(s) => match ctx.env.scope.secret_value(&s.secret) {
                Some(secret) => {
                    // Masked before anything could print it, the same as at start.
                    crate::redact::remember([secret.as_bytes().to_vec()]);
                    s.render(secret)
                }
                None => {
                    return Err(Failure::failed(format!(
                        "header `{k}`: the secret `{}` is unset or empty in plangate's environment; nothing was sent",
                        s.secret
                    )));
                }
            },
        };
        match (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            (Ok(n), Ok(mut v)) => {
                if matches!(p.headers.get(k), Some(HeaderValueSpec::Secret(_))) {
                    v.set_sensitive(true);
                }
                headers.push((n, v));
            }
            _ => return Err(Failure::failed(format!("header `{k}` is not valid"))),
        }
    }
    Ok(headers)
}

/// The hops and the final body; `None` when the exchange itself went through.
fn exchange(
    p: &HttpRequestParams,
    ctx: &StepContext,
    stop: &Stop,
    ex: &mut Exchange,
    mut target: Target,
) -> Option<Failure> {
    let allowed = ctx.env.allowed_hosts.as_deref();
    let agent = agent(p.verify_ssl, spec::Grants::of(&ctx.env));
    let max_redirects = p.max_redirects.unwrap_or(DEFAULT_MAX_REDIRECTS);
    let mut headers = match request_headers(p, ctx) {
        Ok(h) => h,
        Err(f) => return Some(f),
    };
    // A header that carries a secret by reference is never sent to another origin.
    let sensitive: Vec<String> = p
        .sensitive_headers
        .iter()
        .cloned()
        .chain(
            p.headers
                .iter()
                .filter(|(_, v)| matches!(v, HeaderValueSpec::Secret(_)))
                .map(|(k, _)| k.clone()),
        )
        .collect();
    let mut body: Option<Vec<u8>> = p.body.as_ref().map(|b| b.clone().into_bytes());
    let first_origin = target.origin();
    loop {
        let shown = display_url(&ex.uri);
        if !target.allowed_by(allowed) {
            let what = if ex.redirects.is_empty() {
                "host"
            } else {
                "a redirect went to host"
            };
            return Some(Failure::failed(format!(
                "{what} `{}` (port {}), which the policy's allowed_hosts does not allow; {} {shown} was not requested",
                target.host, target.port, ex.method
            )));
        }
        let remaining = stop.remaining();
        if remaining.is_zero() {
            return Some(stopped(&ex.method, &shown));
        }
        // The client gives up a moment before the step's deadline, so the
        // error it reports (with the URL) is the one the step keeps.
        let remaining = remaining
            .checked_sub(CLIENT_MARGIN)
            .filter(|r| !r.is_zero())
            .unwrap_or(remaining);
        let mut resp = match send(&agent, ex, &headers, body.as_deref(), remaining) {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Some(describe(e, &ex.method, &shown, p.verify_ssl)),
            Err(e) => {
                return Some(Failure::failed(format!(
                    "{} {shown}: cannot build the request: {e}",
                    ex.method
                )));
            }
        };
        let status = resp.status();
        ex.status = Some(status);
        let (shown_headers, found) = response_headers(resp.headers());
        ex.headers = shown_headers;
        ex.found.extend(found);
        let location = resp
            .headers()
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if p.follow_redirects
            && matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
            && let Some(loc) = location
        {
            let next = match redirect(ex, &target, &loc, max_redirects, allowed) {
                Ok(n) => n,
                Err(why) => {
                    return Some(Failure::failed(format!(
                        "{} {shown} returned {}: {why}",
                        ex.method,
                        status_line(status)
                    )));
                }
            };
            let (method, keep_body) = after_redirect(status.as_u16(), &ex.method);
            if !keep_body {
                body = None;
                headers.retain(|(n, _)| n != http::header::CONTENT_TYPE);
            }
            if next.1.origin() != first_origin {
                if body.is_some() {
                    return Some(Failure::failed(format!(
                        "{} {shown} returned {}: refused to re-send the request body to another origin ({})",
                        ex.method,
                        status_line(status),
                        next.1.origin()
                    )));
                }
                drop_credentials(&mut headers, &sensitive, ex);
            }
            ex.redirects.push(display_url(&next.0));
            ex.uri = next.0;
            ex.method = method;
            target = next.1;
            ex.headers.clear();
            ex.status = None;
            continue;
        }
        let max = p.max_response_bytes.unwrap_or(DEFAULT_MAX_RESPONSE_BYTES);
        return read_body(resp.body_mut(), max, stop, ex, &shown);
    }
}

/// Where a redirect goes, refused if it breaks a rule.
fn redirect(
    ex: &Exchange,
    from: &Target,
    location: &str,
    max_redirects: u32,
    allowed: Option<&[String]>,
) -> Result<(Uri, Target), String> {
    if ex.redirects.len() as u32 >= max_redirects {
        return Err(format!(
            "stopped after {} redirect(s) (max_redirects {max_redirects})",
            ex.redirects.len()
        ));
    }
    let next = resolve(&ex.uri, location)
        .map_err(|why| format!("the redirect's Location is not usable ({why})"))?;
    let t = hosts::target_of(&next)
        .map_err(|why| format!("the redirect's Location is not usable: {why}"))?;
    if from.https && !t.https {
        return Err(format!(
            "refused the redirect from https to plain http ({})",
            display_url(&next)
        ));
    }
    if !t.allowed_by(allowed) {
        return Err(format!(
            "refused the redirect to host `{}` (port {}), which the policy's allowed_hosts does not allow",
            t.host, t.port
        ));
    }
    Ok((next, t))
}

/// The method (and whether the body goes along) after a redirect.
fn after_redirect(status: u16, method: &Method) -> (Method, bool) {
    match status {
        303 if *method != Method::HEAD => (Method::GET, false),
        301 | 302 if *method == Method::POST => (Method::GET, false),
        _ => (method.clone(), true),
    }
}

/// One request of the chain, within `remaining`.
fn send(
    agent: &ureq::Agent,
    ex: &Exchange,
    headers: &[(HeaderName, HeaderValue)],
    body: Option<&[u8]>,
    remaining: std::time::Duration,
) -> Result<Result<http::Response<ureq::Body>, ureq::Error>, http::Error> {
    let mut builder = http::Request::builder()
        .method(ex.method.clone())
        .uri(ex.uri.clone());
    for (n, v) in headers {
        builder = builder.header(n, v);
    }
    match body {
        Some(b) => builder.body(b.to_vec()).map(|r| {
            let r = agent
                .configure_request(r)
                .timeout_global(Some(remaining))
                .build();
            agent.run(r)
        }),
        None => builder.body(()).map(|r| {
            let r = agent
                .configure_request(r)
                .timeout_global(Some(remaining))
                .build();
            agent.run(r)
        }),
    }
}

/// On a hop to another origin: drop every header that carries a credential
/// (and the plan's `sensitive_headers`), listing each in `dropped`.
fn drop_credentials(
    headers: &mut Vec<(HeaderName, HeaderValue)>,
    sensitive: &[String],
    ex: &mut Exchange,
) {
    let before: Vec<String> = headers.iter().map(|(n, _)| n.to_string()).collect();
    headers.retain(|(n, _)| !(looks_sensitive(n.as_str()) || is_listed(n.as_str(), sensitive)));
    for name in before {
        if !headers.iter().any(|(n, _)| n.as_str() == name) && !ex.dropped.contains(&name) {
            ex.dropped.push(name);
        }
    }
}

/// Read the final body through the cap, checking the stop signal between
/// chunks: up to [`redact::CUT_LOOKAHEAD`] bytes past it, so that the cut
/// ([`cut_body`]) sees a secret it would split.
fn read_body(
    body: &mut ureq::Body,
    max: u64,
    stop: &Stop,
    ex: &mut Exchange,
    shown: &str,
) -> Option<Failure> {
    let mut reader = body.as_reader();
    let mut chunk = vec![0u8; 64 * 1024];
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let read_max = max.saturating_add(redact::CUT_LOOKAHEAD);
    loop {
        if stop.now() {
            cut_body(ex, max, false);
            ex.truncated = true;
            return Some(stopped(&ex.method, shown));
        }
        match reader.read(&mut chunk) {
            Ok(0) => {
                cut_body(ex, max, true);
                return None;
            }
            Ok(n) => {
                let room = read_max.saturating_sub(ex.body.len());
                ex.body
                    .extend_from_slice(chunk.get(..n.min(room)).unwrap_or_default());
                if n > room {
                    // More than the lookahead past the cap: the end is not known.
                    cut_body(ex, max, true);
                    ex.truncated = true;
                    return None;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                cut_body(ex, max, false);
                ex.truncated = true;
                let f = describe(ureq::Error::from(e), &ex.method, shown, true);
                return Some(Failure {
                    status: f.status,
                    message: format!("{} (while reading the body)", f.message),
                });
            }
        }
    }
}

/// Keep at most `max` bytes of the body read, never part of a secret: the
/// cut moves back to the start of a secret it would split
/// ([`redact::safe_cut`], which sees the bytes read past `max`). When the
/// body stopped early (`whole_read` false: the step stopped, the connection
/// broke) nothing shows what followed, so its last partial word is dropped
/// first ([`redact::partial_word`]).
fn cut_body(ex: &mut Exchange, max: usize, whole_read: bool) {
    if !whole_read {
        let word = redact::partial_word(&ex.body);
        ex.body.truncate(ex.body.len() - word);
    }
    if ex.body.len() > max {
        ex.truncated = true;
        let cut = redact::safe_cut(&ex.body, max);
        ex.body.truncate(cut);
    }
}

fn stopped(method: &Method, shown: &str) -> Failure {
    Failure {
        status: StepStatus::TimedOut,
        message: format!(
            "{method} {shown} timed out (the step's timeout ran out or the run was stopped)"
        ),
    }
}

/// One line for a client error, never with the request's headers or body.
fn describe(e: ureq::Error, method: &Method, shown: &str, verify_ssl: bool) -> Failure {
    use ureq::Error as E;
    let tls_help = if verify_ssl {
        " (for a self-signed certificate, `verify_ssl: false` skips the check, at dangerous risk)"
    } else {
        ""
    };
    let what = match e {
        E::Timeout(_) => {
            return Failure {
                status: StepStatus::TimedOut,
                message: format!(
                    "{method} {shown} timed out (no complete answer within the step's timeout)"
                ),
            };
        }
        E::HostNotFound => "the host was not found (DNS)".to_owned(),
        E::Io(io) if io.get_ref().is_some_and(|e| e.is::<NotPublic>()) => io.to_string(),
        E::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused".to_owned()
        }
        E::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            return Failure {
                status: StepStatus::TimedOut,
                message: format!("{method} {shown} timed out"),
            };
        }
        E::Io(io) if io.to_string().contains("failed to lookup address") => {
            format!("the host was not found (DNS: {io})")
        }
        E::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            if shown.starts_with("https:") {
                "the server closed the connection without an answer (does this port speak TLS?)"
                    .to_owned()
            } else {
                "the server closed the connection without an answer".to_owned()
            }
        }
        E::Io(io) => format!("network error: {io}"),
        E::ConnectionFailed => "the connection failed".to_owned(),
        E::Rustls(t) => format!("TLS error: {t}{tls_help}"),
        E::Tls(t) => format!("TLS error: {t}{tls_help}"),
        other => format!("request failed: {other}"),
    };
    Failure::failed(format!("{method} {shown}: {what}"))
}

/// Why the resolver refused every address of a host (the step's error).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotPublic(String);

/// The client's resolver: the system's, then every address checked. One
/// that is not public (loopback, link-local and so the cloud metadata
/// services, private, ...) is dropped unless [`spec::Grants`] lets the host
/// reach it; with none left the request is refused. The client connects
/// only to the addresses returned (no second lookup a DNS answer could
/// change), for the first URL and every redirect alike.
#[derive(Debug)]
struct Guarded {
    grants: spec::Grants,
}

impl ureq::unversioned::resolver::Resolver for Guarded {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let found = ureq::unversioned::resolver::DefaultResolver::default()
            .resolve(uri, config, timeout)?;
        let host = hosts::normalize_host(uri.host().unwrap_or_default());
        let port = hosts::target_of(uri).map_or(0, |t| t.port);
        let mut kept = self.empty();
        let mut refused = None;
        for &a in found.iter() {
            let ip = crate::policy::addr::canonical(a.ip());
            if crate::policy::addr::is_public(ip) || self.grants.allow(&host, port, Some(ip)) {
                kept.push(a);
            } else {
                refused.get_or_insert(ip);
            }
        }
        match (kept.is_empty(), refused) {
            (true, Some(ip)) => Err(ureq::Error::Io(std::io::Error::other(NotPublic(format!(
                "refused to connect: `{host}` resolves to {ip} ({}), which is not public and which the policy's allowed_hosts does not name (http_request reaches an address that is not public only where allowed_hosts names the host, no wildcard; add `{}` to the --policy file's allowed_hosts)",
                crate::policy::addr::kind(ip),
                hosts::with_port(&host, port)
            ))))),
            _ => Ok(kept),
        }
    }
}

/// The client: no automatic redirects (plangate follows them), statuses as
/// data, no cookies kept, no proxy, every address checked ([`Guarded`]).
fn agent(verify_ssl: bool, grants: spec::Grants) -> ureq::Agent {
    let mut b = ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .save_redirect_history(false)
        .user_agent(format!("plangate/{}", env!("CARGO_PKG_VERSION")));
    if !verify_ssl {
        b = b.tls_config(
            ureq::tls::TlsConfig::builder()
                .disable_verification(true)
                .build(),
        );
    }
    ureq::Agent::with_parts(
        b.build(),
        ureq::unversioned::transport::DefaultConnector::default(),
        Guarded { grants },
    )
}

fn method_of(m: HttpMethod) -> Method {
    match m {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Put => Method::PUT,
        HttpMethod::Delete => Method::DELETE,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Head => Method::HEAD,
        HttpMethod::Options => Method::OPTIONS,
    }
}

fn status_line(s: http::StatusCode) -> String {
    match s.canonical_reason() {
        Some(r) => format!("{} {r}", s.as_u16()),
        None => s.as_u16().to_string(),
    }
}

/// Response headers by lowercase name (repeated ones joined with `, `),
/// credential-looking values replaced, and the secrets the rules find in
/// those values (remembered by the redaction layer, so masked wherever else
/// they show up).
fn response_headers(
    h: &http::HeaderMap,
) -> (BTreeMap<String, String>, Vec<crate::secrets::Finding>) {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut found: Vec<crate::secrets::Finding> = Vec::new();
    for (name, value) in h {
        let n = name.as_str().to_owned();
        let v = if looks_sensitive(&n) {
            found.extend(credential_findings(&n, value.as_bytes()));
            REDACTED.to_owned()
        } else {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        };
        out.entry(n)
            .and_modify(|e| {
                if e != REDACTED {
                    e.push_str(", ");
                    e.push_str(&v);
                }
            })
            .or_insert(v);
    }
    (out, found)
}

/// What the rules find in one credential header: the line `name: value`
/// as a server sent it (`Authorization: Bearer …`, `X-Api-Key: …`), and
/// each value it carries (`Set-Cookie: sid=…; Path=/`: `sid`'s value; a
/// scheme's token) read as a value assigned to a credential name.
fn credential_findings(name: &str, value: &[u8]) -> Vec<crate::secrets::Finding> {
    let mut line = format!("{name}: ").into_bytes();
    line.extend_from_slice(value);
    let (_, mut found) = redact::scrub(&line, true);
    if found.is_empty() {
        let text = String::from_utf8_lossy(value);
        for piece in text.split([';', ',', ' ', '\t']) {
            let v = piece.split_once('=').map_or(piece, |(_, v)| v).trim();
            let v = v.trim_matches('"');
            if v.len() < 8 {
                continue;
            }
            let (_, f) = redact::scrub(format!("token = \"{v}\"").as_bytes(), true);
            found.extend(f);
        }
    }
    found
}

/// The URL with `params` added to its query (each key and value percent-encoded).
fn with_params(url: &str, params: &BTreeMap<String, String>) -> Result<Uri, String> {
    let (uri, _) = hosts::parse_url(url)?;
    if params.is_empty() {
        return Ok(uri);
    }
    let added: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let query = match uri.query() {
        Some(q) if !q.is_empty() => format!("{q}&{}", added.join("&")),
        _ => added.join("&"),
    };
    let scheme = uri.scheme_str().unwrap_or("https");
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    format!("{scheme}://{authority}{}?{query}", uri.path())
        .parse()
        .map_err(|e| format!("the URL with `params` is not valid ({e})"))
}

/// Percent-encode everything but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Percent-encode the bytes a `Location` may carry that a URI may not (spaces, non-ASCII).
fn encode_loose(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b <= b' '
            || b >= 0x7f
            || matches!(
                b,
                b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
        {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

/// Resolve a `Location` against the URL it came from (RFC 3986, section 5.2).
fn resolve(base: &Uri, location: &str) -> Result<Uri, String> {
    let loc = encode_loose(location.trim());
    let loc = loc.split('#').next().unwrap_or_default();
    let has_scheme = loc.split_once(':').is_some_and(|(s, _)| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    let scheme = base.scheme_str().unwrap_or("https");
    let text = if has_scheme {
        loc.to_owned()
    } else if loc.starts_with("//") {
        format!("{scheme}:{loc}")
    } else {
        let authority = base.authority().map(|a| a.as_str()).unwrap_or_default();
        let (rel_path, rel_query) = match loc.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (loc, None),
        };
        let (path, query) = if rel_path.is_empty() {
            (base.path().to_owned(), rel_query.or(base.query()))
        } else if rel_path.starts_with('/') {
            (remove_dot_segments(rel_path), rel_query)
        } else {
            let base_path = base.path();
            let dir = match base_path.rfind('/') {
                Some(i) => &base_path[..=i],
                None => "/",
            };
            (remove_dot_segments(&format!("{dir}{rel_path}")), rel_query)
        };
        match query {
            Some(q) => format!("{scheme}://{authority}{path}?{q}"),
            None => format!("{scheme}://{authority}{path}"),
        }
    };
    text.parse::<Uri>().map_err(|e| e.to_string())
}

/// RFC 3986 5.2.4, on an absolute path.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('/').skip(1).collect();
    let last = segs.len().saturating_sub(1);
    let mut trailing = false;
    for (i, seg) in segs.iter().enumerate() {
        match *seg {
            "." => trailing = i == last,
            ".." => {
                out.pop();
                trailing = i == last;
            }
            s => {
                out.push(s);
                trailing = false;
            }
        }
    }
    let mut p = format!("/{}", out.join("/"));
    if trailing && !p.ends_with('/') {
        p.push('/');
    }
    p
}

/// A URL for reports and errors: query values under credential-looking names replaced.
fn display_url(uri: &Uri) -> String {
    let Some(q) = uri.query() else {
        return uri.to_string();
    };
    let cleaned: Vec<String> = q
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if looks_sensitive(k) || k.eq_ignore_ascii_case("sig") => {
                format!("{k}={REDACTED}")
            }
            _ => pair.to_owned(),
        })
        .collect();
    let scheme = uri.scheme_str().unwrap_or("https");
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    format!("{scheme}://{authority}{}?{}", uri.path(), cleaned.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn locations_resolve_like_rfc_3986() {
        let base = uri("http://a.test:8080/b/c/d;p?q");
        for (loc, want) in [
            ("g", "http://a.test:8080/b/c/g"),
            ("./g", "http://a.test:8080/b/c/g"),
            ("g/", "http://a.test:8080/b/c/g/"),
            ("/g", "http://a.test:8080/g"),
            ("//other.test/x", "http://other.test/x"),
            ("?y", "http://a.test:8080/b/c/d;p?y"),
            ("g?y", "http://a.test:8080/b/c/g?y"),
            ("#s", "http://a.test:8080/b/c/d;p?q"),
            ("..", "http://a.test:8080/b/"),
            ("../g", "http://a.test:8080/b/g"),
            ("../../../g", "http://a.test:8080/g"),
            ("https://x.test/y z", "https://x.test/y%20z"),
            ("/é", "http://a.test:8080/%C3%A9"),
        ] {
            let got = resolve(&base, loc).unwrap_or_else(|e| panic!("{loc}: {e}"));
            assert_eq!(got.to_string(), want, "{loc}");
        }
    }

    #[test]
    fn params_are_encoded_and_appended() {
        let mut p = BTreeMap::new();
        p.insert("q".to_owned(), "a b&c".to_owned());
        p.insert("n".to_owned(), "1".to_owned());
        let u = with_params("https://x.test/s?x=1", &p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.to_string(), "https://x.test/s?x=1&n=1&q=a%20b%26c");
        let u = with_params("https://x.test", &p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u.to_string(), "https://x.test/?n=1&q=a%20b%26c");
    }

    #[test]
    fn redirects_refuse_downgrades_credentials_and_hosts_outside_the_list() {
        let ex = Exchange {
            method: Method::GET,
            uri: uri("https://a.test/x/y"),
            redirects: Vec::new(),
            dropped: Vec::new(),
            status: None,
            headers: BTreeMap::new(),
            body: Vec::new(),
            truncated: false,
            found: Vec::new(),
        };
        let from = hosts::target_of(&ex.uri).unwrap_or_else(|e| panic!("{e}"));
        let go = |loc: &str, list: Option<&[String]>| {
            redirect(&ex, &from, loc, 5, list).map(|(u, t)| (u.to_string(), t.origin()))
        };
        assert_eq!(
            go("z", None),
            Ok((
                "https://a.test/x/z".to_owned(),
                "https://a.test:443".to_owned()
            ))
        );
        let err = |loc: &str, list: Option<&[String]>| go(loc, list).expect_err(loc);
        assert!(err("http://a.test/", None).contains("from https to plain http"));
        assert!(err("https://u:hunter2@a.test/", None).contains("credentials"));
        assert!(!err("https://u:hunter2@a.test/", None).contains("hunter2"));
        assert!(err("ftp://a.test/", None).contains("not supported"));
        let list = vec!["a.test".to_owned()];
        assert!(err("https://b.test/", Some(&list)).contains("allowed_hosts"));
        assert!(go("https://A.test:443/ok", Some(&list)).is_ok());
        assert!(
            redirect(&ex, &from, "z", 0, None)
                .map(|_| ())
                .expect_err("max 0")
                .contains("max_redirects 0")
        );
    }

    #[test]
    fn redirect_methods() {
        assert_eq!(after_redirect(303, &Method::POST), (Method::GET, false));
        assert_eq!(after_redirect(303, &Method::HEAD), (Method::HEAD, true));
        assert_eq!(after_redirect(302, &Method::POST), (Method::GET, false));
        assert_eq!(after_redirect(301, &Method::PUT), (Method::PUT, true));
        assert_eq!(after_redirect(307, &Method::POST), (Method::POST, true));
        assert_eq!(after_redirect(308, &Method::PATCH), (Method::PATCH, true));
    }

    #[test]
    fn credentials_are_recognised_and_hidden() {
        for n in [
            "Authorization",
            "Cookie",
            "Set-Cookie",
            "Proxy-Authorization",
            "X-Api-Key",
            "PRIVATE-TOKEN",
            "X-Auth-Token",
            "X-Amz-Security-Token",
            "X-Session-Id",
        ] {
            assert!(looks_sensitive(n), "{n}");
        }
        for n in [
            "Accept",
            "Content-Type",
            "WWW-Authenticate",
            "Access-Control-Allow-Credentials",
            "X-Request-Id",
            "Keep-Alive",
        ] {
            assert!(!looks_sensitive(n), "{n}");
        }
        assert_eq!(
            display_url(&uri("https://x.test/p?a=1&access_token=abc&sig=zz&b=2")),
            "https://x.test/p?a=1&access_token=[REDACTED]&sig=[REDACTED]&b=2"
        );
        let mut h = http::HeaderMap::new();
        h.append("set-cookie", HeaderValue::from_static("s=1"));
        h.append("set-cookie", HeaderValue::from_static("t=2"));
        h.append("x-a", HeaderValue::from_static("1"));
        h.append("x-a", HeaderValue::from_static("2"));
        let (r, _) = response_headers(&h);
        assert_eq!(r["set-cookie"], REDACTED);
        assert_eq!(r["x-a"], "1, 2");
    }
}
