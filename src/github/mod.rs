//! Publishing a finished run to GitHub through its REST API (octocrab): a
//! pull-request comment updated in place on re-runs (found by a hidden
//! marker) and a check run on the commit.
//!
//! Publishing is not part of the run's outcome: every failure (no token, no
//! pull request, HTTP 4xx/5xx, network, timeout) comes back as a
//! [`Notice`] for a warning, never as a panic or an exit code. Every text
//! sent is built from the report and passes through the redaction layer
//! (`body`); the token is remembered by it, so it is replaced wherever it
//! would appear, and it is sent only to the API's own host.

pub(crate) mod body;
pub(crate) mod context;
mod effects;
mod error;
pub(crate) mod pull;

use std::time::Duration;

use octocrab::Octocrab;
use serde::Deserialize;
use serde_json::json;

pub(crate) use context::Context;
pub(crate) use effects::apply_effects;
pub(crate) use error::GithubError;

use crate::model::{AuditEvent, Report};
use crate::publish::push::{Insecure, secure};
use crate::redact;

/// The public API, when neither `--github-api-url` nor `GITHUB_API_URL` says otherwise.
pub(crate) const DEFAULT_API_URL: &str = "https://api.github.com";
/// Pages of comments read to find the marked one (100 a page).
pub(crate) const MAX_PAGES: usize = 20;
/// The whole publication, all requests together.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(60);
/// The same when a branch is pushed (a fetch and a push of at most 120 s each).
const PUSH_TIMEOUT: Duration = Duration::from_secs(360);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// What to publish and where (resolved from `--github-*`, `--comment`, `--check-run`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// No token, nothing is published.
    pub token: Option<String>,
    /// `--github-api-url`.
    pub api_url: Option<String>,
    /// Post or update the pull-request comment.
    pub comment: bool,
    /// Create a check run.
    pub check_run: bool,
    /// Push branches for pull requests: only the `run` that made the changes
    /// (`merge` and `report` publish reports whose workspace is not here).
    pub push: bool,
}

/// How one publication went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Notice {
    /// Done (`comment 12 updated`).
    Done(String),
    /// Not attempted, and why (`no pull request`).
    Skipped(String),
    /// Failed: a warning, never an error of the run.
    Failed(String),
}

impl Notice {
    /// For the audit log.
    pub(crate) fn to_event(&self, target: &str) -> AuditEvent {
        let (result, text) = match self {
            Notice::Done(t) => ("done", t),
            Notice::Skipped(t) => ("skipped", t),
            Notice::Failed(t) => ("failed", t),
        };
        AuditEvent::Github {
            target: target.to_owned(),
            result: result.to_owned(),
            detail: text.clone(),
        }
    }
}

/// The API base: the flag, else `GITHUB_API_URL` (set by Actions, GitHub
/// Enterprise's `https://HOST/api/v3` included), else [`DEFAULT_API_URL`].
/// Only `https`, or `http` to a loopback address (a local test server): the
/// token is never sent in clear over a network.
pub(crate) fn api_base(flag: Option<&str>, actions: Option<&str>) -> Result<String, GithubError> {
    let raw = flag
        .or(actions)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_API_URL);
    let uri: http::Uri = raw.parse().map_err(|source| GithubError::NotAUrl {
        url: raw.to_owned(),
        source,
    })?;
    secure(&uri).map_err(|e| match e {
        Insecure::PlainHttp => GithubError::PlainHttp(raw.to_owned()),
        Insecure::NotHttps => GithubError::NotHttps(raw.to_owned()),
    })?;
    if uri.query().is_some() {
        return Err(GithubError::Query(raw.to_owned()));
    }
    Ok(raw.trim_end_matches('/').to_owned())
}

/// A token must be one header value: visible ASCII, no spaces or newlines
/// (a secret pasted with a trailing newline is trimmed).
fn token_ok(token: &str) -> Result<String, GithubError> {
    let t = token.trim();
    if t.is_empty() {
        return Err(GithubError::EmptyToken);
    }
    if !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(GithubError::BadToken);
    }
    Ok(t.to_owned())
}

/// One line of at most `max` characters, control characters removed (an
/// error message may quote a response body): redacted before it is cut.
pub(crate) use redact::cut_line as one_line;

/// A short description of an API error: status and GitHub's message, never a response body at length.
fn describe(e: &octocrab::Error) -> String {
    match e {
        octocrab::Error::GitHub { source, .. } => format!(
            "HTTP {}: {}",
            source.status_code.as_u16(),
            one_line(&source.message, 200)
        ),
        octocrab::Error::Hyper { source, .. } => one_line(&format!("connection: {source}"), 200),
        octocrab::Error::Service { source, .. } => one_line(&format!("request: {source}"), 200),
        octocrab::Error::Serde { source, .. } => {
            one_line(&format!("unexpected response: {source}"), 200)
        }
        octocrab::Error::Json { source, .. } => {
            one_line(&format!("unexpected response: {}", source.inner()), 200)
        }
        octocrab::Error::Other { source, .. } => one_line(&format!("{source}"), 200),
        other => one_line(&format!("{other}"), 200),
    }
}

#[derive(Debug, Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Created {
    id: u64,
}

/// Every string of a request body passes the redaction layer here, the one
/// place every payload goes through on its way to GitHub (whatever built it:
/// the marker, the check run's name, title and summary, the comment).
fn redacted(mut v: serde_json::Value) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                if let std::borrow::Cow::Owned(clean) = redact::clean_str(s) {
                    *s = clean;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            serde_json::Value::Object(map) => map.values_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

/// POST a JSON body, redacted.
async fn post<T: serde::de::DeserializeOwned>(
    crab: &Octocrab,
    route: String,
    payload: serde_json::Value,
) -> Result<T, GithubError> {
    crab.post(route, Some(&redacted(payload)))
        .await
        .map_err(GithubError::Api)
}

/// PATCH a JSON body, redacted.
async fn patch<T: serde::de::DeserializeOwned>(
    crab: &Octocrab,
    route: String,
    payload: serde_json::Value,
) -> Result<T, GithubError> {
    crab.patch(route, Some(&redacted(payload)))
        .await
        .map_err(GithubError::Api)
}

/// What was published: one `(target, notice)` per target (`comment`, `check_run`).
pub(crate) type Published = Vec<(&'static str, Notice)>;

/// Publish `report` as a comment and a check run. Blocking; runs its own
/// small runtime on a thread of its own, so nothing here can take the run down.
pub(crate) fn publish(report: &Report, settings: &Settings) -> Published {
    let Some(token) = settings.token.as_deref() else {
        return Vec::new();
    };
    if !settings.comment && !settings.check_run {
        return Vec::new();
    }
    // The token never reaches a log, the report or a comment, whatever happens next.
    redact::remember([token.trim().as_bytes().to_vec()]);
    let all_failed = |why: GithubError| {
        let why = why.to_string();
        let mut out = Vec::new();
        if settings.comment {
            out.push(("comment", Notice::Failed(why.clone())));
        }
        if settings.check_run {
            out.push(("check_run", Notice::Failed(why)));
        }
        out
    };
    let token = match token_ok(token) {
        Ok(t) => t,
        Err(e) => return all_failed(e),
    };
    let base = match api_base(
        settings.api_url.as_deref(),
        crate::environ::var("GITHUB_API_URL").as_deref(),
    ) {
        Ok(b) => b,
        Err(e) => return all_failed(e),
    };
    let ctx = match Context::from_env() {
        Ok(c) => c,
        Err(e) => return all_failed(e),
    };
    let report = report.clone();
    let settings = settings.clone();
    let worker = std::thread::Builder::new()
        .name("github".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(GithubError::Runtime)?;
            rt.block_on(async {
                tokio::time::timeout(
                    TOTAL_TIMEOUT,
                    publish_async(&report, &settings, &ctx, &base, token),
                )
                .await
                .map_err(|_| GithubError::Timeout(TOTAL_TIMEOUT.as_secs()))
            })
        });
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(Ok(done))) => done,
        Ok(Ok(Err(e))) => all_failed(e),
        Ok(Err(_)) => all_failed(GithubError::Crashed),
        Err(e) => all_failed(GithubError::Thread(e)),
    }
}

fn client(base: &str, token: String) -> Result<Octocrab, GithubError> {
    Octocrab::builder()
        .base_uri(base)
        .map_err(GithubError::Api)?
        .personal_token(token)
        .add_header(
            http::header::ACCEPT,
            "application/vnd.github+json".to_owned(),
        )
        .add_header(
            http::HeaderName::from_static("x-github-api-version"),
            "2022-11-28".to_owned(),
        )
        .set_connect_timeout(Some(CONNECT_TIMEOUT))
        .set_read_timeout(Some(IO_TIMEOUT))
        .set_write_timeout(Some(IO_TIMEOUT))
        .build()
        .map_err(GithubError::Api)
}

async fn publish_async(
    report: &Report,
    settings: &Settings,
    ctx: &Context,
    base: &str,
    token: String,
) -> Published {
    let crab = match client(base, token) {
        Ok(c) => c,
        Err(e) => {
            return [
                (settings.comment, "comment"),
                (settings.check_run, "check_run"),
            ]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, t)| (t, Notice::Failed(e.to_string())))
            .collect();
        }
    };
    let details = ctx.run_url.as_deref();
    let mut out = Vec::new();
    if settings.comment {
        let notice = match ctx.pr {
            None => Notice::Skipped("not a pull request".to_owned()),
            Some(pr) => match upsert_comment(&crab, ctx, pr, report, details).await {
                Ok(done) => Notice::Done(done),
                Err(e) => Notice::Failed(format!("pull request #{pr} comment: {e}")),
            },
        };
        out.push(("comment", notice));
    }
    if settings.check_run {
        let notice = match ctx.sha.as_deref() {
            None => Notice::Skipped("no commit (GITHUB_SHA) to attach a check run to".to_owned()),
            Some(sha) => match create_check_run(&crab, ctx, sha, report, details).await {
                Ok(done) => Notice::Done(done),
                Err(e) => Notice::Failed(format!("check run: {e}")),
            },
        };
        out.push(("check_run", notice));
    }
    out
}

/// Update the comment that starts with this plan's marker, or create one.
async fn upsert_comment(
    crab: &Octocrab,
    ctx: &Context,
    pr: u64,
    report: &Report,
    details: Option<&str>,
) -> Result<String, GithubError> {
    let marker = body::marker(report);
    let text = body::comment(report, details);
    let route = format!("/repos/{}/{}/issues/{pr}/comments", ctx.owner, ctx.repo);
    let mut page: octocrab::Page<Comment> = crab
        .get(&route, Some(&[("per_page", 100)]))
        .await
        .map_err(GithubError::Api)?;
    let mut found = None;
    for _ in 0..MAX_PAGES {
        found = page
            .items
            .iter()
            .find(|c| c.body.as_deref().is_some_and(|b| b.starts_with(&marker)))
            .map(|c| c.id);
        if found.is_some() {
            break;
        }
        match crab
            .get_page::<Comment>(&page.next)
            .await
            .map_err(GithubError::Api)?
        {
            Some(next) => page = next,
            None => break,
        }
    }
    let payload = json!({ "body": text });
    match found {
        Some(id) => {
            let _: serde_json::Value = patch(
                crab,
                format!("/repos/{}/{}/issues/comments/{id}", ctx.owner, ctx.repo),
                payload,
            )
            .await?;
            Ok(format!("comment {id} on pull request #{pr} updated"))
        }
        None => {
            let c: Created = post(crab, route, payload).await?;
            Ok(format!("comment {} on pull request #{pr} created", c.id))
        }
    }
}

/// A new check run, completed, on `sha`. A re-run creates another one with
/// the same name; GitHub shows the latest.
async fn create_check_run(
    crab: &Octocrab,
    ctx: &Context,
    sha: &str,
    report: &Report,
    details: Option<&str>,
) -> Result<String, GithubError> {
    let conclusion = body::conclusion(
        report.status,
        report.dry_run,
        report.conclusion() == crate::model::Conclusion::Partial,
    );
    let mut payload = json!({
        "name": body::check_name(report),
        "head_sha": sha,
        "status": "completed",
        "conclusion": conclusion,
        "output": {
            "title": body::check_title(report),
            "summary": body::check_summary(report, details),
        },
    });
    if let Some(url) = details {
        payload["details_url"] = json!(url);
    }
    if let Some(t) = &report.finished_at {
        payload["completed_at"] = json!(t);
    }
    let c: Created = post(
        crab,
        format!("/repos/{}/{}/check-runs", ctx.owner, ctx.repo),
        payload,
    )
    .await?;
    Ok(format!(
        "check run {} `{}` created ({})",
        c.id,
        body::check_name(report),
        conclusion.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_base_is_https_or_local() {
        let ok =
            |f: Option<&str>, a: Option<&str>| api_base(f, a).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok(None, None), DEFAULT_API_URL);
        assert_eq!(
            ok(None, Some("https://ghe.example.com/api/v3/")),
            "https://ghe.example.com/api/v3"
        );
        assert_eq!(
            ok(
                Some("http://127.0.0.1:8080"),
                Some("https://api.github.com")
            ),
            "http://127.0.0.1:8080"
        );
        assert_eq!(ok(Some(""), None), DEFAULT_API_URL);
        for bad in [
            "http://api.github.com",
            "ftp://x",
            "not a url",
            "https://x/?a=b",
            "/relative",
        ] {
            assert!(api_base(Some(bad), None).is_err(), "{bad}");
        }
    }

    #[test]
    fn tokens_must_be_one_header_value() {
        assert_eq!(token_ok("ghs_abc\n").ok().as_deref(), Some("ghs_abc"));
        assert!(token_ok("a b").is_err());
        assert!(token_ok("   ").is_err());
        assert!(token_ok("tök").is_err());
    }

    #[test]
    fn error_text_is_one_bounded_line() {
        let s = one_line("a\nb\r::warning::x", 5);
        assert_eq!(s, "a b :…");
    }

    #[test]
    fn no_token_publishes_nothing() {
        let r: Report = serde_json::from_value(json!({
            "schema_version": 1, "plangate_version": "0", "run_id": "r", "in_progress": false,
            "plan": {"id": "p", "path": "p.yaml", "sha256": null},
            "status": "success", "exit_code": 0, "started_at": "", "finished_at": null,
            "duration_ms": 0, "dry_run": false, "workspace": "/w", "policy": null,
            "approvals": [], "steps": [], "findings": [], "diff": null,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let s = Settings {
            comment: true,
            check_run: true,
            ..Settings::default()
        };
        assert!(publish(&r, &s).is_empty());
    }
}
