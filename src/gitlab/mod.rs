//! Publishing a finished run to GitLab through its REST API (v4): the
//! run-summary note on the merge request (updated in place on reruns, found
//! by the same hidden marker as GitHub's comment), a commit status (GitLab's
//! twin of a check run), and the report's `publish` rows the gates passed
//! (`effects`). Blocking (`ureq`), on a thread of its own.
//!
//! Like `github`, publishing is not part of the run's outcome: a failure is a
//! notice for a warning, or a row `withheld` with GitLab's error. Every text
//! sent is built from the report and passes through the redaction layer
//! (`client`); the token was remembered by it when it was read, is sent only
//! to the API's own host, and never reaches a step (it is a `PLANGATE_*`
//! variable, or a credential-looking one: see `policy::env`).

mod change;
mod client;
pub(crate) mod context;
mod effects;
mod error;
mod mr;

use std::time::Duration;

use serde_json::json;

pub(crate) use client::TokenKind;
use client::{Client, one_line};
pub(crate) use context::Context;
pub(crate) use error::GitlabError;
use error::JOB_TOKEN_HELP;

use crate::github::body;
use crate::github::{Notice, Published};
use crate::model::Report;
use crate::publish::push::{Insecure, secure};

/// The whole publication, every request together.
const TOTAL_TIMEOUT: Duration = Duration::from_secs(90);
/// GitLab caps a commit status's description.
const STATUS_DESCRIPTION_MAX: usize = 255;

/// What to publish and where (resolved from `--gitlab-*`, `--comment`, `--check-run`).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// No token, nothing is published.
    pub token: Option<String>,
    /// Which header carries it.
    pub kind: TokenKind,
    /// Given as `--gitlab-token` / `PLANGATE_GITLAB_TOKEN` (not found in the CI's variables).
    pub explicit: bool,
    /// `--gitlab-api-url`.
    pub api_url: Option<String>,
    /// Post (or update) the run-summary note on the merge request.
    pub comment: bool,
    /// Set a commit status with the run's outcome.
    pub status: bool,
    /// May push a merge request's branch (only `plangate run`, which has the run's workspace).
    pub push: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            token: None,
            kind: TokenKind::Private,
            explicit: false,
            api_url: None,
            comment: true,
            status: true,
            push: false,
        }
    }
}

/// The API base: the flag, else `CI_API_V4_URL`. Only `https`, or `http` to a
/// loopback address (a local test server): the token is never sent in clear.
pub(crate) fn api_base(flag: Option<&str>, ci: Option<&str>) -> Result<String, GitlabError> {
    let raw = [flag, ci]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|s| !s.is_empty())
        .ok_or(GitlabError::NoApiUrl)?;
    let uri: http::Uri = raw
        .parse()
        .map_err(|_| GitlabError::NotAUrl(raw.to_owned()))?;
    secure(&uri).map_err(|e| match e {
        Insecure::PlainHttp => GitlabError::PlainHttp(raw.to_owned()),
        Insecure::NotHttps => GitlabError::NotHttps(raw.to_owned()),
    })?;
    if uri.query().is_some() {
        return Err(GitlabError::Query(raw.to_owned()));
    }
    Ok(raw.trim_end_matches('/').to_owned())
}

/// The client, or why there is none.
fn prepare(settings: &Settings) -> Result<Option<(Client, Context)>, GitlabError> {
    let Some(token) = settings.token.as_deref().map(str::trim) else {
        return Ok(None);
    };
    crate::redact::remember([token.as_bytes().to_vec()]);
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(GitlabError::BadToken);
    }
    let base = api_base(
        settings.api_url.as_deref(),
        crate::environ::var("CI_API_V4_URL").as_deref(),
    )?;
    let ctx = Context::from_env()?;
    Ok(Some((
        Client::new(base, token.to_owned(), settings.kind, TOTAL_TIMEOUT),
        ctx,
    )))
}

/// Run `work` on a thread of its own: a panic there is an error, never the run's.
fn on_thread<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, GitlabError> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(work)
        .map_err(GitlabError::Thread)?
        .join()
        .map_err(|_| GitlabError::Crashed)
}

/// Apply the report's `publish` rows the gates passed, updating them in
/// place. Nothing to apply: None. No token: the rows stay, and the notice says why.
pub(crate) fn apply_effects(report: &mut Report, settings: &Settings) -> Option<Notice> {
    use crate::model::publish::PublishState;
    let pending = |r: &Report| {
        r.publish
            .iter()
            .filter(|e| e.state == PublishState::WouldPublish)
            .count()
    };
    if report.dry_run || pending(report) == 0 {
        return None;
    }
    let (client, ctx) = match prepare(settings) {
        Ok(Some(p)) => p,
        Ok(None) => {
            return Some(Notice::Skipped(
                "no GitLab token (GITLAB_TOKEN, --gitlab-token or CI_JOB_TOKEN): the requests that passed every gate stay would_publish".into(),
            ));
        }
        Err(e) => {
            effects::withhold_all(report, &e.to_string());
            return Some(Notice::Failed(e.to_string()));
        }
    };
    let mut owned = report.clone();
    let push = settings.push;
    let done = on_thread("gitlab-effects", move || {
        effects::apply(&client, &ctx, &mut owned, push);
        owned
    });
    match done {
        Ok(done) => {
            report.publish = done.publish;
            let published = report
                .publish
                .iter()
                .filter(|e| e.state == PublishState::Published)
                .count();
            Some(Notice::Done(format!(
                "{published} of {} publish request(s) published",
                report.publish.len()
            )))
        }
        Err(e) => {
            effects::withhold_all(report, &e.to_string());
            Some(Notice::Failed(e.to_string()))
        }
    }
}

/// Publish `report` as the run-summary note and a commit status. Blocking.
pub(crate) fn publish(report: &Report, settings: &Settings) -> Published {
    if settings.token.is_none() || (!settings.comment && !settings.status) {
        return Vec::new();
    }
    let targets = [
        (settings.comment, "gitlab_note"),
        (settings.status, "commit_status"),
    ];
    let all = |n: &dyn Fn() -> Notice| -> Published {
        targets
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, t)| (*t, n()))
            .collect()
    };
    if settings.kind == TokenKind::Job {
        // Every such call would be refused: not a warning on every job.
        return all(&|| Notice::Skipped(JOB_TOKEN_HELP.to_owned()));
    }
    let (client, ctx) = match prepare(settings) {
        Ok(Some(p)) => p,
        Ok(None) => return Vec::new(),
        Err(e) => return all(&|| Notice::Failed(e.to_string())),
    };
    let (report, settings) = (report.clone(), settings.clone());
    on_thread("gitlab", move || {
        let mut out = Vec::new();
        if settings.comment {
            out.push(("gitlab_note", summary_note(&client, &ctx, &report)));
        }
        if settings.status {
            out.push(("commit_status", summary_status(&client, &ctx, &report)));
        }
        out
    })
    .unwrap_or_else(|e| all(&|| Notice::Failed(e.to_string())))
}

fn summary_note(client: &Client, ctx: &Context, report: &Report) -> Notice {
    let Some(iid) = ctx.mr else {
        return Notice::Skipped("not a merge request pipeline (no CI_MERGE_REQUEST_IID)".into());
    };
    let text = body::comment(report, ctx.run_url.as_deref());
    match effects::upsert_note(client, ctx, iid, &body::marker(report), &text) {
        Ok((id, verb)) => Notice::Done(format!("note {id} on merge request !{iid} {verb}")),
        Err(e) => Notice::Failed(format!("merge request !{iid} note: {e}")),
    }
}

/// GitLab's commit status for a conclusion.
pub(crate) fn status_state(c: body::Conclusion) -> &'static str {
    match c {
        body::Conclusion::Success | body::Conclusion::Neutral => "success",
        body::Conclusion::Failure | body::Conclusion::ActionRequired => "failed",
        body::Conclusion::Cancelled => "canceled",
    }
}

/// A commit status on the pipeline's commit. `description` is cut to GitLab's limit.
pub(crate) fn post_status(
    client: &Client,
    ctx: &Context,
    report: &Report,
    name: &str,
    description: &str,
) -> Result<(u64, &'static str), GitlabError> {
    let Some(sha) = ctx.sha.as_deref() else {
        return Err(GitlabError::BadJson(
            "no commit (CI_COMMIT_SHA) to set a status on".into(),
        ));
    };
    let state = status_state(body::conclusion(
        report.status,
        report.dry_run,
        report.conclusion() == crate::model::Conclusion::Partial,
    ));
    let mut payload = json!({
        "state": state,
        "name": name,
        "description": one_line(description, STATUS_DESCRIPTION_MAX - 1),
    });
    if let Some(url) = &ctx.run_url {
        payload["target_url"] = json!(url);
    }
    if let Some(p) = ctx.pipeline {
        payload["pipeline_id"] = json!(p);
    }
    match client.post(&format!("{}/statuses/{sha}", ctx.route()), &payload) {
        Ok(v) => Ok((v["id"].as_u64().unwrap_or(0), state)),
        // A rerun in the same pipeline: the status is already what it would become.
        Err(GitlabError::Http {
            status: 400,
            message,
            ..
        }) if message.contains(&format!("from :{state}")) => Ok((0, state)),
        Err(e) => Err(e),
    }
}

fn summary_status(client: &Client, ctx: &Context, report: &Report) -> Notice {
    if ctx.sha.is_none() {
        return Notice::Skipped("no commit (CI_COMMIT_SHA) to set a status on".into());
    }
    let name = body::check_name(report);
    match post_status(client, ctx, report, &name, &body::check_title(report)) {
        Ok((_, state)) => Notice::Done(format!("commit status `{name}` set ({state})")),
        Err(e) => Notice::Failed(format!("commit status: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_base_is_https_or_local_and_must_be_known() {
        let ok =
            |f: Option<&str>, c: Option<&str>| api_base(f, c).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ok(None, Some("https://gitlab.example/api/v4/")),
            "https://gitlab.example/api/v4"
        );
        assert_eq!(
            ok(
                Some("http://127.0.0.1:9/api/v4"),
                Some("https://gitlab.com/api/v4")
            ),
            "http://127.0.0.1:9/api/v4"
        );
        assert!(matches!(api_base(None, None), Err(GitlabError::NoApiUrl)));
        assert!(matches!(
            api_base(Some(" "), None),
            Err(GitlabError::NoApiUrl)
        ));
        for bad in [
            "http://gitlab.com/api/v4",
            "ftp://x",
            "not a url",
            "https://x/?a=b",
        ] {
            assert!(api_base(Some(bad), None).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_conclusion_has_a_status() {
        use body::Conclusion as C;
        assert_eq!(status_state(C::Success), "success");
        assert_eq!(status_state(C::Neutral), "success");
        assert_eq!(status_state(C::Failure), "failed");
        assert_eq!(status_state(C::ActionRequired), "failed");
        assert_eq!(status_state(C::Cancelled), "canceled");
    }
}
