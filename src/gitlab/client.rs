//! A small, blocking client of GitLab's REST API (v4) on `ureq`: one token
//! header (`PRIVATE-TOKEN` or `JOB-TOKEN`), JSON in and out, every string of
//! every body redacted on its way out, redirects never followed (the token
//! stays with the API's host), pages followed by `X-Next-Page`, a bounded
//! retry of 429 and 5xx answers, and one deadline for the whole publication.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::error::GitlabError;
use crate::redact;

/// How long one request may take.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes of one answer read.
const MAX_BODY: u64 = 8 * 1024 * 1024;
/// Tries of one request (the first included) when GitLab answers 429 or 5xx.
const TRIES: u32 = 3;
/// The longest wait a `Retry-After` header is honoured for.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// Pages of a list read to find a marked item (100 a page).
pub(crate) const MAX_PAGES: usize = 20;

/// Which header carries the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A personal, project or group access token: `PRIVATE-TOKEN`.
    Private,
    /// The job's `CI_JOB_TOKEN`: `JOB-TOKEN`.
    Job,
}

impl TokenKind {
    fn header(self) -> &'static str {
        match self {
            TokenKind::Private => "PRIVATE-TOKEN",
            TokenKind::Job => "JOB-TOKEN",
        }
    }
}

/// The API at `base` (`…/api/v4`), with a token, until `deadline`.
pub(crate) struct Client {
    base: String,
    token: String,
    kind: TokenKind,
    deadline: Instant,
    total: Duration,
    agent_proxy: Option<ureq::Proxy>,
}

/// Every string of a request body passes the redaction layer here, the one
/// place every payload goes through on its way to GitLab.
pub(crate) fn redacted(mut v: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::String(s) => {
                if let std::borrow::Cow::Owned(clean) = redact::clean_str(s) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            Value::Object(map) => map.values_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

/// One line of at most `max` characters, redacted, control characters removed.
pub(crate) use crate::redact::cut_line as one_line;

/// GitLab's error text: `message` (a string or an object of field errors), else `error`.
fn message_of(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let text = match (&v["message"], &v["error"]) {
        (Value::String(s), _) => s.clone(),
        (m @ (Value::Object(_) | Value::Array(_)), _) => m.to_string(),
        (_, Value::String(s)) => s.clone(),
        _ => body.to_owned(),
    };
    one_line(&text, 200)
}

/// One answer.
struct Answer {
    status: u16,
    body: String,
    next_page: Option<String>,
    retry_after: Option<Duration>,
}

impl Client {
    pub(crate) fn new(base: String, token: String, kind: TokenKind, total: Duration) -> Client {
        Client {
            base,
            token,
            kind,
            deadline: Instant::now() + total,
            total,
            agent_proxy: crate::environ::proxy(),
        }
    }

    fn once(&self, method: &str, url: &str, body: Option<&[u8]>) -> Result<Answer, ureq::Error> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .timeout_global(Some(IO_TIMEOUT.min(left)))
                .timeout_connect(Some(CONNECT_TIMEOUT.min(left)))
                .http_status_as_error(false)
                .max_redirects(0)
                .proxy(self.agent_proxy.clone())
                .build(),
        );
        let auth = (self.kind.header(), self.token.as_str());
        let mut resp = match (method, body) {
            ("GET", _) => agent
                .get(url)
                .header(auth.0, auth.1)
                .header("accept", "application/json")
                .call()?,
            (m, b) => {
                let b = b.unwrap_or(b"{}");
                let req = match m {
                    "PUT" => agent.put(url),
                    _ => agent.post(url),
                };
                req.header(auth.0, auth.1)
                    .header("accept", "application/json")
                    .header("content-type", "application/json")
                    .send(b)?
            }
        };
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let next_page = header("x-next-page").filter(|p| p.bytes().all(|b| b.is_ascii_digit()));
        let retry_after = header("retry-after")
            .and_then(|v| v.parse::<u64>().ok())
            .map(Duration::from_secs);
        let status = resp.status().as_u16();
        let mut buf = Vec::new();
        resp.body_mut()
            .as_reader()
            .take(MAX_BODY)
            .read_to_end(&mut buf)?;
        Ok(Answer {
            status,
            body: String::from_utf8_lossy(&buf).into_owned(),
            next_page,
            retry_after,
        })
    }

    /// Send with a bounded retry: a 429 always, a 5xx only when sending it
    /// again cannot do the thing twice (GET, PUT; a POST on 503 only, which
    /// GitLab answers before doing anything).
    fn send(
        &self,
        method: &str,
        route: &str,
        body: Option<&Value>,
    ) -> Result<(Value, Option<String>), GitlabError> {
        let url = format!("{}{route}", self.base);
        let bytes = body.map(|b| redacted(b.clone()).to_string().into_bytes());
        let idempotent = method != "POST";
        let mut tries = 0;
        loop {
            tries += 1;
            if Instant::now() >= self.deadline {
                return Err(GitlabError::Timeout(self.total.as_secs()));
            }
            let answer = match self.once(method, &url, bytes.as_deref()) {
                Ok(a) => a,
                Err(ureq::Error::Timeout(_)) => {
                    return Err(GitlabError::Timeout(IO_TIMEOUT.as_secs()));
                }
                Err(e) => {
                    let connect = matches!(e, ureq::Error::ConnectionFailed);
                    if tries < TRIES && (idempotent || connect) {
                        self.wait(tries, None);
                        continue;
                    }
                    return Err(GitlabError::Network(one_line(&e.to_string(), 200)));
                }
            };
            let retry = answer.status == 429
                || (answer.status >= 500 && (idempotent || answer.status == 503));
            if retry && tries < TRIES {
                self.wait(tries, answer.retry_after);
                continue;
            }
            if !(200..300).contains(&answer.status) {
                return Err(GitlabError::Http {
                    status: answer.status,
                    message: message_of(&answer.body),
                    job_token: self.kind == TokenKind::Job,
                });
            }
            let v = if answer.body.trim().is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&answer.body)
                    .map_err(|e| GitlabError::BadJson(one_line(&e.to_string(), 200)))?
            };
            return Ok((v, answer.next_page));
        }
    }

    fn wait(&self, tries: u32, asked: Option<Duration>) {
        let backoff = Duration::from_millis(500 * u64::from(1u32 << tries.min(4)));
        let left = self.deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(asked.unwrap_or(backoff).min(MAX_WAIT).min(left));
    }

    /// The extra header a `git push` to the project sends (`publish::push`):
    /// HTTP basic with the token as password, user `gitlab-ci-token` for the
    /// job's token, `oauth2` for an access token.
    pub(crate) fn git_auth(&self) -> String {
        let user = match self.kind {
            TokenKind::Private => "oauth2",
            TokenKind::Job => "gitlab-ci-token",
        };
        crate::publish::push::basic_auth(user, &self.token)
    }

    pub(crate) fn get(&self, route: &str) -> Result<Value, GitlabError> {
        self.send("GET", route, None).map(|(v, _)| v)
    }

    pub(crate) fn post(&self, route: &str, body: &Value) -> Result<Value, GitlabError> {
        self.send("POST", route, Some(body)).map(|(v, _)| v)
    }

    pub(crate) fn put(&self, route: &str, body: &Value) -> Result<Value, GitlabError> {
        self.send("PUT", route, Some(body)).map(|(v, _)| v)
    }

    /// The first item of the list at `route` (a query string of its own
    /// allowed) that `pick` accepts, reading at most [`MAX_PAGES`] pages.
    pub(crate) fn find(
        &self,
        route: &str,
        pick: impl Fn(&Value) -> bool,
    ) -> Result<Option<Value>, GitlabError> {
        let sep = if route.contains('?') { '&' } else { '?' };
        let mut page = "1".to_owned();
        for _ in 0..MAX_PAGES {
            let (v, next) = self.send(
                "GET",
                &format!("{route}{sep}per_page=100&page={page}"),
                None,
            )?;
            let Value::Array(items) = v else {
                return Err(GitlabError::BadJson("a list was expected".into()));
            };
            if let Some(hit) = items.into_iter().find(|i| pick(i)) {
                return Ok(Some(hit));
            }
            match next {
                Some(n) if n != page => page = n,
                _ => break,
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitlab_error_messages_are_one_bounded_line() {
        assert_eq!(
            message_of(r#"{"message": "401 Unauthorized"}"#),
            "401 Unauthorized"
        );
        assert_eq!(
            message_of(r#"{"message": {"title": ["can't be blank"]}}"#),
            r#"{"title":["can't be blank"]}"#
        );
        assert_eq!(
            message_of(r#"{"error": "insufficient_scope"}"#),
            "insufficient_scope"
        );
        assert_eq!(
            message_of("<html>\nbad gateway</html>"),
            "<html> bad gateway</html>"
        );
        assert!(message_of(&"x".repeat(1000)).chars().count() <= 201);
    }

    #[test]
    fn every_string_of_a_body_is_redacted() {
        let v = redacted(serde_json::json!({"a": ["AKIAZ7Q4NX2LMRBT5KPW"], "n": 1}));
        assert!(!v.to_string().contains("AKIAZ7Q4NX2LMRBT5KPW"), "{v}");
        assert_eq!(v["n"], 1);
    }
}
