//! What the HTTP providers (`openai`, `anthropic`) share: the POST itself
//! (ureq, rustls with ring, on the blocking pool, no redirects, the reply
//! capped), the secrets they send (API key and extra `headers`, read from
//! the scoped environment by name), and the retries: exponential backoff
//! with full jitter on 429, 500/502/503/504, 529, an `overloaded_error` body
//! and dropped connections, honouring `retry-after-ms` and `Retry-After`,
//! bounded by the call's timeout, the run's budget and `max_retries`. Every
//! request lands in the call's [`HttpLog`] (the report's `http_attempts`).
//! A client timeout is told apart by ureq's typed error, never by its text.

use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::{Answer, Call, CallError, one_line};
use crate::model::{HttpAttempt, Risk};

/// Most bytes read from an HTTP reply.
const MAX_HTTP_BODY: u64 = 16 * 1024 * 1024;
/// Retries of one call when the agent does not say.
pub(super) const DEFAULT_MAX_RETRIES: u32 = 4;
/// The first retry's longest wait when the agent does not say.
const DEFAULT_BASE_DELAY: Duration = Duration::from_secs(1);
/// The longest wait plangate picks itself (a server's `Retry-After` may ask for more).
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The longest a connection may take to open before the request is retried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The provider-specific agent keys every HTTP provider takes.
pub(super) const KEYS: &[&str] = &[
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "system",
    "headers",
    "structured_output",
    "max_retries",
    "retry_base_delay",
];

/// An HTTP provider's risk floor: it sends the prompt to `base_url`.
pub(super) fn risk_floor(base_url: &str) -> (Risk, String) {
    (Risk::Moderate, format!("sends the prompt to `{base_url}`"))
}

/// One call of an HTTP provider: POST `body` to `base` + `path` with the
/// `auth` headers and then the agent's extra `headers` (retried as [`post`]
/// does), the reply's answer as `read` finds it, the reply [`kept`].
pub(super) async fn exchange(
    c: &Call<'_>,
    base: &str,
    path: &str,
    mut headers: Vec<(String, String)>,
    body: Value,
    read: impl FnOnce(&str) -> Result<Answer, CallError>,
) -> Result<Answer, CallError> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    headers.extend(extra_headers(c)?);
    let reply = post(c, Request { url, headers, body }).await?;
    kept(c, &reply, read(&reply))
}

/// An HTTP reply's JSON, or the call fails for agent `agent`.
pub(super) fn reply_json(agent: &str, reply: &str) -> Result<Value, CallError> {
    serde_json::from_str(reply)
        .map_err(|e| CallError::Failed(format!("agent `{agent}`: the reply is not JSON: {e}")))
}

/// One request to send (the same for every retry).
struct Request {
    /// The endpoint.
    pub url: String,
    /// Headers besides `content-type`, secrets included.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
}

/// The value of environment variable `var` for agent `agent`, from the run's
/// scoped environment (declared secrets only reach it): set and not empty, or
/// the call fails naming `what`.
pub(super) fn secret(c: &Call<'_>, var: &str, what: &str) -> Result<String, CallError> {
    c.ctx
        .env
        .scope
        .secret_value(var)
        .filter(|v| !v.trim().is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            CallError::Failed(format!(
                "agent `{}` reads {what} from ${var}, which is not set",
                c.action.agent_name
            ))
        })
}

/// The agent's extra `headers`, each value read from its variable.
fn extra_headers(c: &Call<'_>) -> Result<Vec<(String, String)>, CallError> {
    let mut out = Vec::new();
    for (name, var) in c.action.agent.headers.iter().flatten() {
        let value = secret(c, var, &format!("header `{name}`"))?;
        out.push((name.clone(), value));
    }
    Ok(out)
}

/// POST `req`, retrying what may succeed later; the body of the first 2xx reply.
async fn post(c: &Call<'_>, req: Request) -> Result<String, CallError> {
    let name = c.action.agent_name.clone();
    let max_retries = c.action.agent.max_retries.unwrap_or(DEFAULT_MAX_RETRIES);
    let base = c
        .action
        .agent
        .retry_base_delay
        .map_or(DEFAULT_BASE_DELAY, |t| t.0);
    let deadline = Instant::now() + c.timeout;
    let payload = serde_json::to_vec(&req.body).map_err(|e| {
        CallError::Failed(format!("agent `{name}`: cannot encode the request: {e}"))
    })?;
    let req = std::sync::Arc::new((req.url, req.headers, payload));
    let mut retry = 0u32;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(CallError::TimedOut(format!(
                "agent `{name}`: the call's timeout passed before a reply"
            )));
        }
        let started = Instant::now();
        let shared = std::sync::Arc::clone(&req);
        let task =
            tokio::task::spawn_blocking(move || send(&shared.0, &shared.1, &shared.2, remaining));
        let mut cancel = c.ctx.cancel.clone();
        let result = tokio::select! {
            r = task => r.map_err(|e| CallError::Failed(format!("agent `{name}` call crashed: {e}")))?,
            _ = cancel.wait_for(|c| *c) => return Err(CallError::Stopped),
        };
        let mut record = HttpAttempt {
            status: None,
            duration_ms: millis(started.elapsed()),
            retry_after_ms: None,
            wait_ms: None,
            error: None,
        };
        let (retry_after, why) = match judge(&name, result) {
            Outcome::Done(status, body) => {
                record.status = Some(status);
                c.http.push(record);
                return Ok(body);
            }
            Outcome::Fatal(status, e) => {
                record.status = status;
                record.error = Some(e.to_string());
                c.http.push(record);
                return Err(e);
            }
            Outcome::Retry(status, retry_after, why) => {
                record.status = status;
                record.retry_after_ms = retry_after.map(millis);
                record.error = Some(why.clone());
                c.http.push(record);
                (retry_after, why)
            }
        };
        retry += 1;
        let tried = c.http.len();
        if retry > max_retries {
            return Err(CallError::Failed(format!(
                "agent `{name}`: gave up after {tried} request(s) ({}): {why}",
                c.http.statuses()
            )));
        }
        let wait = retry_after.unwrap_or_else(|| backoff(base, retry));
        // A wait no clock can add (a server's `retry-after-ms: 1e300`) ends past any timeout.
        if Instant::now()
            .checked_add(wait)
            .is_none_or(|at| at >= deadline)
        {
            return Err(CallError::Failed(format!(
                "agent `{name}`: gave up after {tried} request(s) ({}): the next would start after the call's timeout (waiting {} ms): {why}",
                c.http.statuses(),
                millis(wait)
            )));
        }
        if c.ctx.shared.check().is_some() {
            return Err(CallError::Stopped);
        }
        c.http.set_wait(millis(wait));
        let mut cancel = c.ctx.cancel.clone();
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = cancel.wait_for(|c| *c) => return Err(CallError::Stopped),
        }
    }
}

/// What one request came to.
enum Outcome {
    /// A 2xx reply: status, body.
    Done(u16, String),
    /// Cannot succeed by retrying.
    Fatal(Option<u16>, CallError),
    /// May succeed later: the status, what the server asked to wait, why.
    Retry(Option<u16>, Option<Duration>, String),
}

/// Sort one request's result into done, fatal or retry.
fn judge(name: &str, result: Result<Reply, PostError>) -> Outcome {
    let reply = match result {
        Ok(r) => r,
        Err(e) if e.is_timeout() && !e.is_connect_timeout() => {
            return Outcome::Fatal(None, CallError::TimedOut(format!("agent `{name}`: {e}")));
        }
        Err(e) if e.is_transient() => return Outcome::Retry(None, None, one_line(&e.to_string())),
        Err(e) => return Outcome::Fatal(None, CallError::Failed(format!("agent `{name}`: {e}"))),
    };
    if (200..300).contains(&reply.status) {
        return Outcome::Done(reply.status, reply.body);
    }
    let message = provider_message(&reply.body);
    let why = format!("HTTP {}: {message}", reply.status);
    if retryable(&reply) {
        Outcome::Retry(Some(reply.status), reply.retry_after, why)
    } else {
        Outcome::Fatal(
            Some(reply.status),
            CallError::Failed(format!("agent `{name}`: {why}")),
        )
    }
}

/// Whether a non-2xx reply may succeed later: 429, 500, 502, 503, 504, 529,
/// or an `overloaded_error`; the server's `x-should-retry` wins; a 429 for a
/// spent budget never does.
fn retryable(reply: &Reply) -> bool {
    if let Some(says) = reply.should_retry {
        return says;
    }
    let v: Value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    let kind = v.pointer("/error/type").and_then(Value::as_str);
    let code = v
        .pointer("/error/details/error_code")
        .or_else(|| v.pointer("/error/code"))
        .and_then(Value::as_str);
    if matches!(
        code,
        Some("enforced_spend_limit_reached" | "insufficient_quota")
    ) {
        return false;
    }
    matches!(reply.status, 429 | 500 | 502 | 503 | 504 | 529) || kind == Some("overloaded_error")
}

/// The provider's own error message: `error.message` (OpenAI and Anthropic
/// shapes), with `error.type` when there is one; else the body's first line.
/// Redacted, one line, cut at 300 characters.
pub(super) fn provider_message(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let err = v.get("error").unwrap_or(&Value::Null);
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| err.as_str())
        .or_else(|| v.get("message").and_then(Value::as_str));
    let kind = err.get("type").and_then(Value::as_str);
    match (message, kind) {
        (Some(m), Some(k)) => one_line(&format!("{k}: {m}")),
        (Some(m), None) => one_line(m),
        _ => one_line(body),
    }
}

/// The provider's reply (the JSON wrapper around the answer) is kept,
/// redacted, as `attempt-N.reply.json` beside the answer, whether or not it
/// could be read: evidence when the wrapper was not what was expected.
fn kept(c: &Call<'_>, reply: &str, read: Result<Answer, CallError>) -> Result<Answer, CallError> {
    let rel = format!("{}/attempt-{}.reply.json", c.ctx.artifacts_rel, c.attempt);
    let written = std::fs::create_dir_all(&c.ctx.artifacts_dir).and_then(|()| {
        std::fs::write(
            c.ctx.out_dir.join(&rel),
            crate::redact::clean(reply.as_bytes()),
        )
    });
    if written.is_err() {
        return read;
    }
    match read {
        Ok(mut answer) => {
            answer.extra.files.push(rel);
            Ok(answer)
        }
        Err(e) => Err(e.after(super::Spent {
            usage: None,
            extra: super::Extra {
                session: None,
                files: vec![rel],
                lingering: 0,
                output_files: Vec::new(),
            },
        })),
    }
}

/// Full jitter: a wait drawn at random up to `base · 2^(retry-1)`, at most [`MAX_BACKOFF`].
fn backoff(base: Duration, retry: u32) -> Duration {
    let cap = base
        .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
        .min(MAX_BACKOFF);
    let ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(fastrand::u64(0..=ms))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A reply: its status, body and what it says about retrying.
struct Reply {
    status: u16,
    body: String,
    /// `retry-after-ms`, else `Retry-After` (seconds or an HTTP date).
    retry_after: Option<Duration>,
    /// `x-should-retry: true|false`.
    should_retry: Option<bool>,
}

/// Why a POST gave no reply.
#[derive(Debug, thiserror::Error)]
pub(super) enum PostError {
    /// The request failed (connection, TLS, time).
    #[error("request to {url} failed: {source}")]
    Request {
        /// The endpoint.
        url: String,
        /// The client's error.
        #[source]
        source: ureq::Error,
    },
    /// Reading the reply failed.
    #[error("reading the reply from {url} failed: {source}")]
    Read {
        /// The endpoint.
        url: String,
        /// The reader's error.
        #[source]
        source: std::io::Error,
    },
    /// The reply is larger than the cap.
    #[error("the reply from {url} is larger than {MAX_HTTP_BODY} bytes")]
    TooLarge {
        /// The endpoint.
        url: String,
    },
    /// The reply is not UTF-8.
    #[error("the reply from {url} is not UTF-8")]
    NotUtf8 {
        /// The endpoint.
        url: String,
    },
}

impl PostError {
    /// ureq's error under this one, if any.
    fn ureq(&self) -> Option<&ureq::Error> {
        match self {
            PostError::Request { source, .. } => Some(source),
            PostError::Read { source, .. } => source
                .get_ref()
                .and_then(|e| e.downcast_ref::<ureq::Error>()),
            _ => None,
        }
    }

    /// The socket's error under this one, if any.
    fn io(&self) -> Option<&std::io::Error> {
        match self {
            PostError::Read { source, .. } => match self.ureq() {
                Some(ureq::Error::Io(io)) => Some(io),
                _ => Some(source),
            },
            _ => match self.ureq() {
                Some(ureq::Error::Io(io)) => Some(io),
                _ => None,
            },
        }
    }

    /// Whether the call ran out of time (the step then times out rather than fails).
    fn is_timeout(&self) -> bool {
        matches!(self.ureq(), Some(ureq::Error::Timeout(_)))
            || self
                .io()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
    }

    /// Whether the connection could not be opened in time (retried).
    fn is_connect_timeout(&self) -> bool {
        matches!(
            self.ureq(),
            Some(ureq::Error::Timeout(ureq::Timeout::Connect))
        )
    }

    /// A refused, reset or dropped connection, or one that could not open in
    /// time: the same request may work a moment later.
    fn is_transient(&self) -> bool {
        use std::io::ErrorKind as K;
        if self.is_connect_timeout() || matches!(self.ureq(), Some(ureq::Error::ConnectionFailed)) {
            return true;
        }
        self.io().is_some_and(|io| {
            matches!(
                io.kind(),
                K::ConnectionRefused
                    | K::ConnectionReset
                    | K::ConnectionAborted
                    | K::BrokenPipe
                    | K::UnexpectedEof
            )
        })
    }
}

/// POST one request; the reply with its body capped.
fn send(
    url: &str,
    headers: &[(String, String)],
    payload: &[u8],
    timeout: Duration,
) -> Result<Reply, PostError> {
    use std::io::Read;
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .timeout_connect(Some(CONNECT_TIMEOUT.min(timeout)))
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(crate::environ::proxy())
            .build(),
    );
    let mut req = agent.post(url).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let mut resp = req.send(payload).map_err(|source| PostError::Request {
        url: url.to_owned(),
        source,
    })?;
    let status = resp.status().as_u16();
    let header = |n: &str| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .map(str::to_owned)
    };
    let retry_after = header("retry-after-ms")
        .and_then(|v| retry_after_ms(&v))
        .or_else(|| header("retry-after").and_then(|v| retry_after(&v, SystemTime::now())));
    let should_retry = match header("x-should-retry").as_deref() {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    let mut buf = Vec::new();
    resp.body_mut()
        .as_reader()
        .take(MAX_HTTP_BODY + 1)
        .read_to_end(&mut buf)
        .map_err(|source| PostError::Read {
            url: url.to_owned(),
            source,
        })?;
    if buf.len() as u64 > MAX_HTTP_BODY {
        return Err(PostError::TooLarge {
            url: url.to_owned(),
        });
    }
    let body = String::from_utf8(buf).map_err(|_| PostError::NotUtf8 {
        url: url.to_owned(),
    })?;
    Ok(Reply {
        status,
        body,
        retry_after,
        should_retry,
    })
}

/// The longest wait a server's header is read as: longer ones (up to
/// `Duration::MAX`) are this, which ends past any call's timeout.
const MAX_SERVER_WAIT: Duration = Duration::from_secs(366 * 86_400);

/// `retry-after-ms: 1500` (OpenAI's). Not a number, negative or NaN: none;
/// huge or infinite: [`MAX_SERVER_WAIT`] (never a panic: the header is the server's).
fn retry_after_ms(v: &str) -> Option<Duration> {
    let ms: f64 = v.parse().ok()?;
    if ms.is_nan() || ms < 0.0 {
        return None;
    }
    Some(
        Duration::try_from_secs_f64(ms / 1000.0)
            .map_or(MAX_SERVER_WAIT, |d| d.min(MAX_SERVER_WAIT)),
    )
}

/// `Retry-After: 2` (seconds, fractions accepted) or an HTTP date (the wait
/// until then, zero when it has passed).
fn retry_after(v: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(secs) = v.parse::<f64>() {
        return (0.0..=86_400.0)
            .contains(&secs)
            .then(|| Duration::try_from_secs_f64(secs).ok())
            .flatten();
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(
        at.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_SERVER_WAIT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(retry_after("0.5", now), Some(Duration::from_millis(500)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:30 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-1", now), None);
        assert_eq!(retry_after_ms("1500"), Some(Duration::from_millis(1500)));
        // The whole family of values no Duration holds: never a panic.
        for huge in [
            "1e300",
            "inf",
            "+inf",
            "1.8e22",
            "18446744073709551616000",
            "1e19",
        ] {
            assert_eq!(retry_after_ms(huge), Some(MAX_SERVER_WAIT), "{huge}");
        }
        for none in ["NaN", "-1", "-inf", "-0.5", "x", ""] {
            assert_eq!(retry_after_ms(none), None, "{none}");
        }
        assert_eq!(retry_after_ms("-0"), Some(Duration::ZERO));
        let now = SystemTime::UNIX_EPOCH;
        for bad in ["1e300", "inf", "NaN", "-1", "86400.5"] {
            assert_eq!(retry_after(bad, now), None, "{bad}");
        }
        assert_eq!(
            retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now),
            Some(MAX_SERVER_WAIT)
        );
        assert_eq!(retry_after_ms("x"), None);
    }

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_cap() {
        let base = Duration::from_millis(100);
        for retry in 1..=12 {
            let cap = base.saturating_mul(2u32.pow(retry - 1)).min(MAX_BACKOFF);
            for _ in 0..50 {
                assert!(backoff(base, retry) <= cap);
            }
        }
        assert!(backoff(Duration::from_secs(30), 40) <= MAX_BACKOFF);
    }

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.to_owned(),
            retry_after: None,
            should_retry: None,
        }
    }

    #[test]
    fn what_is_retried() {
        for s in [429, 500, 502, 503, 504, 529] {
            assert!(retryable(&reply(s, "{}")), "{s}");
        }
        for s in [400, 401, 403, 404, 422, 501] {
            assert!(!retryable(&reply(s, "{}")), "{s}");
        }
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(retryable(&reply(400, overloaded)));
        let spent = r#"{"type":"error","error":{"type":"rate_limit_error","message":"spent","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert!(!retryable(&reply(429, spent)));
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(!retryable(&reply(429, quota)));
        let mut told = reply(500, "{}");
        told.should_retry = Some(false);
        assert!(!retryable(&told));
        told.status = 400;
        told.should_retry = Some(true);
        assert!(retryable(&told));
    }

    #[test]
    fn the_providers_message_is_one_redacted_line() {
        let anthropic = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(
            provider_message(anthropic),
            "authentication_error: invalid x-api-key"
        );
        let openai = r#"{"error":{"message":"Incorrect API key provided.\nSee docs.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(
            provider_message(openai),
            "invalid_request_error: Incorrect API key provided."
        );
        assert_eq!(provider_message("{\"error\": \"boom\"}"), "boom");
        assert_eq!(
            provider_message("<html>bad gateway</html>\nmore"),
            "<html>bad gateway</html>"
        );
    }
}
