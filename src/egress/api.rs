//! The model API endpoint that keeps the key with plangate (issue 24, item 2).
//!
//! An agent definition with `api: {provider, api_key_env, base_url}` has its
//! CLI pointed at a plain-HTTP endpoint plangate serves for the step
//! (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`), with
//! a placeholder in the key variable. Each request on one of the provider's
//! model paths is sent on to `base_url` with the real key in the provider's
//! header; any other path is refused (403). The real key lives in plangate's
//! memory only: not in the CLI's environment, not in a file, not in output.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::Connection;
use super::Notify;

/// Largest request body sent on.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// The placeholder the CLI finds in its key variable.
pub(crate) const PLACEHOLDER: &str = "plangate-placeholder-key";

/// A model API, as plangate speaks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    /// Anthropic Messages API (`x-api-key`).
    Anthropic,
    /// OpenAI Responses and Chat Completions (`Authorization: Bearer`).
    Openai,
    /// Gemini API (`x-goog-api-key`).
    Gemini,
}

impl Provider {
    /// The plan's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::Gemini => "gemini",
        }
    }

    /// The provider's public API.
    pub(crate) fn default_base_url(self) -> &'static str {
        match self {
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::Openai => "https://api.openai.com/v1",
            Provider::Gemini => "https://generativelanguage.googleapis.com",
        }
    }

    /// The variable that usually holds the key.
    pub(crate) fn default_key_env(self) -> &'static str {
        match self {
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Openai => "OPENAI_API_KEY",
            Provider::Gemini => "GEMINI_API_KEY",
        }
    }

    /// The variables the CLIs read the key from (each gets the placeholder).
    pub(crate) fn key_vars(self) -> &'static [&'static str] {
        match self {
            Provider::Anthropic => &["ANTHROPIC_API_KEY"],
            Provider::Openai => &["OPENAI_API_KEY", "CODEX_API_KEY"],
            Provider::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        }
    }

    /// The variable that points the CLI at the endpoint.
    pub(crate) fn base_url_var(self) -> &'static str {
        match self {
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
            Provider::Openai => "OPENAI_BASE_URL",
            Provider::Gemini => "GOOGLE_GEMINI_BASE_URL",
        }
    }

    /// Whether `rest` (the path after `base_url`'s own, query removed) is a
    /// model call of this API.
    pub(crate) fn allows(self, method: &str, rest: &str) -> bool {
        let get = method == "GET";
        let post = method == "POST";
        match self {
            Provider::Anthropic => {
                (post && matches!(rest, "/v1/messages" | "/v1/messages/count_tokens"))
                    || (get && (rest == "/v1/models" || under(rest, "/v1/models/")))
            }
            Provider::Openai => {
                (post && matches!(rest, "/responses" | "/chat/completions"))
                    || (get && (rest == "/models" || under(rest, "/models/")))
            }
            Provider::Gemini => {
                let model_call = ["/v1beta/models/", "/v1/models/"].iter().any(|p| {
                    rest.strip_prefix(p).is_some_and(|m| {
                        let (name, verb) = m.split_once(':').unwrap_or((m, ""));
                        plain_segment(name)
                            && matches!(
                                verb,
                                "generateContent" | "streamGenerateContent" | "countTokens"
                            )
                    })
                });
                (post && model_call) || (get && matches!(rest, "/v1beta/models" | "/v1/models"))
            }
        }
    }
}

/// `rest` is `prefix` followed by one plain path segment.
fn under(rest: &str, prefix: &str) -> bool {
    rest.strip_prefix(prefix).is_some_and(plain_segment)
}

/// A path segment without `/`, `..`, `%` or `\`: no way to another path upstream.
fn plain_segment(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// What the endpoint serves: the API and the real key.
#[derive(Clone)]
pub(crate) struct Serve {
    /// The API.
    pub provider: Provider,
    /// Where requests go (`https://api.anthropic.com`), without a final `/`.
    pub base_url: String,
    /// The real key (never shown: see the Debug impl).
    pub key: String,
    /// What the CLI's calls used, and the budget that refuses the next one.
    pub meter: Arc<super::meter::Meter>,
}

impl std::fmt::Debug for Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("key", &"(withheld)")
            .finish()
    }
}

impl Serve {
    /// The path `base_url` has (`/v1` for OpenAI's), the endpoint mirrors it.
    pub(crate) fn base_path(&self) -> String {
        let after_scheme = self
            .base_url
            .split_once("://")
            .map_or(self.base_url.as_str(), |(_, r)| r);
        after_scheme.find('/').map_or(String::new(), |i| {
            after_scheme[i..].trim_end_matches('/').to_owned()
        })
    }

    /// The host (and port) of `base_url`, for the audit line.
    fn upstream_host(&self) -> (String, u16) {
        crate::policy::hosts::parse_url(&self.base_url)
            .map(|(_, t)| (t.host, t.port))
            .unwrap_or_default()
    }

    /// The upstream URL for a request path; Err why it is refused.
    pub(crate) fn route(&self, method: &str, target: &str) -> Result<String, String> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let base = self.base_path();
        let rest = path.strip_prefix(&base).unwrap_or("");
        if !self.provider.allows(method, rest) {
            return Err(format!(
                "`{method} {path}` is not a model call of the {} API; plangate's endpoint passes nothing else",
                self.provider.as_str()
            ));
        }
        // A key in the query would be the placeholder: the real one goes in a header.
        let query: Vec<&str> = query
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("key="))
            .collect();
        let origin_end = self
            .base_url
            .len()
            .saturating_sub(base.len() + usize::from(self.base_url.ends_with('/')));
        let mut url = format!("{}{base}{rest}", &self.base_url[..origin_end]);
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query.join("&"));
        }
        Ok(url)
    }

    /// The model a generating call names (the JSON body's `model`; Gemini:
    /// the path's `models/NAME:verb`), and whether the call generates (token
    /// counts and model lists cost nothing and need no price).
    pub(crate) fn model_of(
        &self,
        method: &str,
        target: &str,
        body: &[u8],
    ) -> (bool, Option<String>) {
        let path = target.split('?').next().unwrap_or("");
        let rest = path.strip_prefix(&self.base_path()).unwrap_or("");
        let generates =
            method == "POST" && !rest.ends_with("/count_tokens") && !rest.ends_with(":countTokens");
        let model = match self.provider {
            Provider::Gemini => ["/v1beta/models/", "/v1/models/"].iter().find_map(|p| {
                rest.strip_prefix(p)
                    .map(|m| m.split(':').next().unwrap_or(m).to_owned())
            }),
            Provider::Anthropic | Provider::Openai => {
                serde_json::from_slice::<serde_json::Value>(body)
                    .ok()
                    .and_then(|v| v.get("model").and_then(|m| m.as_str()).map(str::to_owned))
            }
        };
        (generates, model)
    }

    /// The header that carries the real key.
    fn auth(&self) -> (&'static str, String) {
        match self.provider {
            Provider::Anthropic => ("x-api-key", self.key.clone()),
            Provider::Openai => ("authorization", format!("Bearer {}", self.key)),
            Provider::Gemini => ("x-goog-api-key", self.key.clone()),
        }
    }
}

/// Request headers not sent on: hop-by-hop, framing, and every way of
/// carrying a key (the CLI's are placeholders).
fn dropped_request_header(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "accept-encoding"
            | "authorization"
            | "x-api-key"
            | "x-goog-api-key"
            | "api-key"
    )
}

/// Response headers not passed back (plangate decodes and frames the body itself).
fn dropped_response_header(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "transfer-encoding"
            | "content-length"
            | "content-encoding"
            | "upgrade"
            | "trailer"
    )
}

/// Serve one connection: one request, one answer, then close.
pub(crate) async fn serve<S>(mut s: S, api: &Serve, notify: &Notify)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (host, port) = api.upstream_host();
    let Ok(Ok((head, mut body))) =
        tokio::time::timeout(super::HEAD_TIMEOUT, super::read_head(&mut s)).await
    else {
        return;
    };
    let mut headers = [httparse::EMPTY_HEADER; 96];
    let mut req = httparse::Request::new(&mut headers);
    if !matches!(req.parse(&head), Ok(httparse::Status::Complete(_))) {
        refuse(
            &mut s,
            (notify, api.provider),
            (&host, port),
            400,
            "not an HTTP request".into(),
        )
        .await;
        return;
    }
    let method = req.method.unwrap_or_default().to_owned();
    let target = req.path.unwrap_or_default().to_owned();
    let url = match api.route(&method, &target) {
        Ok(u) => u,
        Err(why) => {
            refuse(&mut s, (notify, api.provider), (&host, port), 403, why).await;
            return;
        }
    };
    let mut length = 0usize;
    let mut send: Vec<(String, Vec<u8>)> = Vec::new();
    for h in req.headers.iter() {
        let n = h.name.to_ascii_lowercase();
        if n == "transfer-encoding" {
            refuse(
                &mut s,
                (notify, api.provider),
                (&host, port),
                411,
                "a chunked request body; send Content-Length".into(),
            )
            .await;
            return;
        }
        if n == "content-length" {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(usize::MAX);
        }
        if !dropped_request_header(&n) {
            send.push((n, h.value.to_vec()));
        }
    }
    if length > MAX_BODY {
        refuse(
            &mut s,
            (notify, api.provider),
            (&host, port),
            413,
            format!("a request body over {MAX_BODY} bytes"),
        )
        .await;
        return;
    }
    while body.len() < length {
        let mut chunk = vec![0_u8; (length - body.len()).min(64 * 1024)];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(length);
    let out = Arc::new(AtomicU64::new(head.len() as u64 + body.len() as u64));
    let inn = Arc::new(AtomicU64::new(0));
    if let Some(why) = api.meter.over_budget() {
        let why = format!("{why}; plangate refuses further model calls of this run");
        refuse(&mut s, (notify, api.provider), (&host, port), 403, why).await;
        return;
    }
    let (generates, model) = api.model_of(&method, &target, &body);
    let rates = match api.meter.price_for(model.as_deref()) {
        Ok(r) => r,
        Err(why) if generates => {
            api.meter.refuse(&why);
            refuse(&mut s, (notify, api.provider), (&host, port), 403, why).await;
            return;
        }
        Err(_) => None,
    };
    let (auth_name, auth_value) = api.auth();
    send.push((auth_name.to_owned(), auth_value.into_bytes()));
    let reason = format!("api: {method} {}", target.split('?').next().unwrap_or(""));
    let meter = &api.meter;
    let key = api.key.as_bytes().to_vec();
    let forwarded = forward(&mut s, (&method, &url), send, body, (&inn, key), |answer| {
        meter.record(rates, answer, generates);
    })
    .await;
    let conn = Connection {
        host,
        port,
        address: None,
        allowed: true,
        reason: match forwarded {
            Ok(_) => Some(reason),
            Err(e) => Some(format!("{reason}: unreachable: {e}")),
        },
        bytes_out: out.load(Ordering::Relaxed),
        bytes_in: inn.load(Ordering::Relaxed),
    };
    notify(conn);
}

/// Send the request upstream (ureq, on the blocking pool) and stream the
/// answer back. `complete` gets the whole answer (None: too large to keep)
/// before its last bytes reach the CLI, so that a CLI which has read its
/// answer finds its usage counted when it sends the next call.
async fn forward<S>(
    s: &mut S,
    (method, url): (&str, &str),
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    (inn, key): (&AtomicU64, Vec<u8>),
    complete: impl FnOnce(Option<&[u8]>),
) -> Result<(), String>
where
    S: AsyncWrite + Unpin,
{
    // An upstream may echo the key (an error that quotes the header, a
    // gateway): the CLI never gets it back, in a header or in the body.
    let mut mask = KeyMask::new(&key);
    let head_mask = KeyMask::new(&key);
    let (head_tx, head_rx) = tokio::sync::oneshot::channel::<Result<Vec<u8>, String>>();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    let (method, url) = (method.to_owned(), url.to_owned());
    // The answer is streamed to the CLI; a copy (up to MAX_METERED) is what
    // the meter reads the usage from.
    let reader_task = tokio::task::spawn_blocking(move || -> Option<Vec<u8>> {
        use std::io::Read;
        let resp = request(&method, &url, headers, body);
        let mut resp = match resp {
            Ok(r) => r,
            Err(e) => {
                let _ = head_tx.send(Err(e));
                return None;
            }
        };
        let status = resp.status();
        let mut head = format!(
            "HTTP/1.1 {} {}\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .into_bytes();
        for (k, v) in resp.headers() {
            if !dropped_response_header(k.as_str()) {
                head.extend_from_slice(k.as_str().as_bytes());
                head.extend_from_slice(b": ");
                head.extend_from_slice(&head_mask.whole(v.as_bytes()));
                head.extend_from_slice(b"\r\n");
            }
        }
        head.extend_from_slice(b"Connection: close\r\n\r\n");
        if head_tx.send(Ok(head)).is_err() {
            return None;
        }
        let mut reader = resp.body_mut().as_reader();
        let mut buf = vec![0_u8; 16 * 1024];
        let mut kept = Some(Vec::new());
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => return kept,
                Ok(n) => {
                    if let Some(k) = kept.as_mut() {
                        if k.len() + n > super::meter::MAX_METERED {
                            kept = None;
                        } else {
                            k.extend_from_slice(&buf[..n]);
                        }
                    }
                    if tx.blocking_send(buf[..n].to_vec()).is_err() {
                        return kept;
                    }
                }
            }
        }
    });
    let head = match head_rx.await {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            let body = format!("plangate: the model API cannot be reached: {e}\n");
            super::plain_reply(s, "502 Bad Gateway", "", &body).await;
            return Err(e);
        }
        Err(_) => return Err("the request was dropped".into()),
    };
    let mut gone = s.write_all(&head).await.is_err();
    // Each chunk goes out when the next one came: the last waits for the meter.
    let mut held: Option<Vec<u8>> = None;
    while let Some(chunk) = rx.recv().await {
        let chunk = mask.push(&chunk);
        // The CLI may have hung up: the rest of the answer is still read (and paid for).
        if let Some(prev) = held.replace(chunk)
            && !gone
        {
            gone = s.write_all(&prev).await.is_err() || s.flush().await.is_err();
            inn.fetch_add(prev.len() as u64, Ordering::Relaxed);
        }
    }
    complete(reader_task.await.ok().flatten().as_deref());
    let rest = mask.finish();
    let last = match held {
        Some(mut h) => {
            h.extend_from_slice(&rest);
            Some(h)
        }
        None => (!rest.is_empty()).then_some(rest),
    };
    if let Some(last) = last
        && !gone
        && s.write_all(&last).await.is_ok()
    {
        let _ = s.flush().await;
        inn.fetch_add(last.len() as u64, Ordering::Relaxed);
    }
    let _ = s.shutdown().await;
    Ok(())
}

/// Replaces the key wherever it shows in an answer streamed in pieces,
/// with text of its length (the placeholder, repeated): a piece ending in
/// what may be the key's start is held until the next one says.
struct KeyMask {
    key: Vec<u8>,
    with: Vec<u8>,
    tail: Vec<u8>,
}

impl KeyMask {
    fn new(key: &[u8]) -> KeyMask {
        let with = PLACEHOLDER.bytes().cycle().take(key.len()).collect();
        KeyMask {
            key: key.to_vec(),
            with,
            tail: Vec::new(),
        }
    }

    /// `bytes` with every whole key replaced.
    fn whole(&self, bytes: &[u8]) -> Vec<u8> {
        if self.key.is_empty() {
            return bytes.to_vec();
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = bytes;
        while let Some(at) = memchr::memmem::find(rest, &self.key) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(&self.with);
            rest = &rest[at + self.key.len()..];
        }
        out.extend_from_slice(rest);
        out
    }

    /// What of the stream so far may go out now.
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.tail);
        all.extend_from_slice(chunk);
        let mut out = self.whole(&all);
        // Hold back the longest end that is a start of the key.
        let keep = (1..self.key.len())
            .rev()
            .find(|&n| n <= out.len() && out.ends_with(&self.key[..n]))
            .unwrap_or(0);
        self.tail = out.split_off(out.len() - keep);
        out
    }

    /// The end of the stream.
    fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.tail)
    }
}

fn request(
    method: &str,
    url: &str,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
) -> Result<ureq::http::Response<ureq::Body>, String> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_connect(Some(std::time::Duration::from_secs(15)))
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(crate::environ::proxy())
            .build(),
    );
    let mut b = ureq::http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        b = b.header(k, v);
    }
    let req = b.body(body).map_err(|e| e.to_string())?;
    agent.run(req).map_err(|e| e.to_string())
}

/// Answer with `code` and a JSON error naming the reason; report it refused.
async fn refuse<S>(
    s: &mut S,
    (notify, provider): (&Notify, Provider),
    (host, port): (&str, u16),
    code: u16,
    why: String,
) where
    S: AsyncWrite + Unpin,
{
    let body = error_body(provider, code, &format!("plangate: {why}")).to_string();
    let text = match code {
        400 => "Bad Request",
        411 => "Length Required",
        413 => "Payload Too Large",
        _ => "Forbidden",
    };
    let _ = s
        .write_all(
            format!(
                "HTTP/1.1 {code} {text}\r\nContent-Type: application/json\r\nX-Plangate-Egress: denied\r\nX-Should-Retry: false\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await;
    let _ = s.shutdown().await;
    notify(Connection {
        host: host.to_owned(),
        port,
        address: None,
        allowed: false,
        reason: Some(format!("api: {why}")),
        bytes_out: 0,
        bytes_in: 0,
    });
}

/// A refusal in the provider's own error shape, so the CLI shows the
/// message (its status is never one the CLIs retry: 400, 403, 411, 413).
pub(crate) fn error_body(provider: Provider, code: u16, message: &str) -> serde_json::Value {
    match provider {
        Provider::Anthropic => serde_json::json!({
            "type": "error",
            "error": {
                "type": match code {
                    403 => "permission_error",
                    413 => "request_too_large",
                    _ => "invalid_request_error",
                },
                "message": message,
            },
        }),
        Provider::Openai => serde_json::json!({
            "error": {
                "message": message,
                "type": if code == 403 { "permission_error" } else { "invalid_request_error" },
                "param": null,
                "code": "plangate_refused",
            },
        }),
        Provider::Gemini => serde_json::json!({
            "error": {
                "code": code,
                "message": message,
                "status": if code == 403 { "PERMISSION_DENIED" } else { "INVALID_ARGUMENT" },
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(p: Provider, base: &str) -> Serve {
        Serve {
            provider: p,
            base_url: base.to_owned(),
            key: "sk-real".to_owned(),
            meter: Arc::new(super::super::meter::Meter::new(
                super::super::meter::Pricing::default(),
                Arc::new(|_| None),
            )),
        }
    }

    #[test]
    fn model_paths_route_to_the_base_url_and_nothing_else_does() {
        let a = serve(Provider::Anthropic, "https://api.anthropic.com");
        assert_eq!(
            a.route("POST", "/v1/messages?beta=true").as_deref(),
            Ok("https://api.anthropic.com/v1/messages?beta=true")
        );
        assert!(a.route("GET", "/v1/messages").is_err());
        assert!(a.route("POST", "/v1/files").is_err());
        assert!(a.route("POST", "/v1/messages/../files").is_err());
        assert!(a.route("GET", "/v1/models/..").is_err());
        assert!(a.route("POST", "//evil.example/v1/messages").is_err());
        let o = serve(Provider::Openai, "https://api.openai.com/v1");
        assert_eq!(o.base_path(), "/v1");
        assert_eq!(
            o.route("POST", "/v1/responses").as_deref(),
            Ok("https://api.openai.com/v1/responses")
        );
        assert!(o.route("POST", "/responses").is_err());
        assert!(o.route("POST", "/v1/files").is_err());
        assert!(o.route("DELETE", "/v1/models/x").is_err());
        let g = serve(
            Provider::Gemini,
            "https://generativelanguage.googleapis.com/",
        );
        assert_eq!(
            g.route(
                "POST",
                "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=plangate-placeholder-key"
            )
            .as_deref(),
            Ok("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
        );
        assert!(g.route("POST", "/v1beta/models/x:delete").is_err());
        assert!(g.route("POST", "/v1beta/files").is_err());
        assert!(
            g.route("POST", "/v1beta/models/a%2F..:generateContent")
                .is_err()
        );
    }

    /// The refusal is what each provider's SDK reads as an error, with the
    /// message where its CLI prints it.
    #[test]
    fn refusals_take_the_providers_error_shape() {
        for code in [400_u16, 403, 411, 413] {
            let a = error_body(Provider::Anthropic, code, "plangate: m");
            assert_eq!(a["type"], "error");
            assert!(
                a["error"]["type"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("_error") || t == "request_too_large")
            );
            assert_eq!(a["error"]["message"], "plangate: m");
            let o = error_body(Provider::Openai, code, "plangate: m");
            assert_eq!(o["error"]["message"], "plangate: m");
            assert_eq!(o["error"]["code"], "plangate_refused");
            assert!(o["error"]["type"].is_string() && o.get("type").is_none());
            let g = error_body(Provider::Gemini, code, "plangate: m");
            assert_eq!(g["error"]["code"], code);
            assert_eq!(g["error"]["message"], "plangate: m");
            assert!(
                g["error"]["status"]
                    .as_str()
                    .is_some_and(|s| s.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            );
        }
        assert_eq!(
            error_body(Provider::Anthropic, 403, "x")["error"]["type"],
            "permission_error"
        );
        assert_eq!(
            error_body(Provider::Gemini, 403, "x")["error"]["status"],
            "PERMISSION_DENIED"
        );
    }

    #[test]
    fn the_model_a_call_names() {
        let a = serve(Provider::Anthropic, "https://api.anthropic.com");
        assert_eq!(
            a.model_of(
                "POST",
                "/v1/messages?beta=true",
                br#"{"model":"claude-haiku-4-5","max_tokens":5}"#
            ),
            (true, Some("claude-haiku-4-5".to_owned()))
        );
        assert_eq!(
            a.model_of("POST", "/v1/messages/count_tokens", br#"{"model":"x"}"#),
            (false, Some("x".to_owned()))
        );
        assert_eq!(
            a.model_of("POST", "/v1/messages", b"not json"),
            (true, None)
        );
        let o = serve(Provider::Openai, "https://api.openai.com/v1");
        assert_eq!(
            o.model_of(
                "POST",
                "/v1/responses",
                br#"{"model":"gpt-5","input":"hi"}"#
            )
            .1
            .as_deref(),
            Some("gpt-5")
        );
        let g = serve(
            Provider::Gemini,
            "https://generativelanguage.googleapis.com",
        );
        assert_eq!(
            g.model_of(
                "POST",
                "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                b"{}"
            ),
            (true, Some("gemini-2.5-pro".to_owned()))
        );
        assert!(
            !g.model_of("POST", "/v1beta/models/gemini-2.5-pro:countTokens", b"{}")
                .0
        );
        assert!(!g.model_of("GET", "/v1beta/models", b"").0);
    }

    #[test]
    fn the_key_is_masked_in_an_answer_cut_anywhere() {
        let key = b"sk-test-REALKEY-0123456789";
        let answer = b"{\"error\": \"bad key sk-test-REALKEY-0123456789\", \"again\": \"sk-test-REALKEY-0123456789\"} sk-test-REAL";
        for cut in 1..answer.len() {
            let mut m = KeyMask::new(key);
            let mut out = m.push(&answer[..cut]);
            out.extend(m.push(&answer[cut..]));
            out.extend(m.finish());
            assert_eq!(out.len(), answer.len(), "cut {cut}");
            assert!(memchr::memmem::find(&out, key).is_none(), "cut {cut}");
            assert!(
                out.ends_with(b"sk-test-REAL"),
                "a mere prefix stays: cut {cut}"
            );
        }
        // One byte at a time too.
        let mut m = KeyMask::new(key);
        let mut out = Vec::new();
        for b in answer {
            out.extend(m.push(&[*b]));
        }
        out.extend(m.finish());
        assert!(memchr::memmem::find(&out, key).is_none());
        assert_eq!(
            KeyMask::new(key)
                .whole(b"Bearer sk-test-REALKEY-0123456789")
                .len(),
            33
        );
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let s = format!("{:?}", serve(Provider::Openai, "https://api.openai.com/v1"));
        assert!(!s.contains("sk-real"), "{s}");
    }
}
