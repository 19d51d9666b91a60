//! A pull request the gates passed, opened for real: the run's workspace
//! changes committed and pushed by `publish::push` to
//! `GITHUB_SERVER_URL/OWNER/REPO.git` (never the workspace's own remote
//! config, which a step could have changed) with the token as a
//! command-scope extra header, then the pull request opened (or, on a
//! rerun, found again and updated) through the API. Also the patch an
//! issue carries when the patch policy turned a pull request into one.
//!
//! The existing pull request is the open one whose head is the branch, else
//! the open one of this repository whose body starts with the plan's marker
//! and whose head branch fits the branch template (`{run}` any run): its
//! branch is force-updated (leased on the head commit the API reported for
//! it) and its title and body replaced. A draft verdict
//! never updates a pull request that is not a draft (the REST API cannot
//! make it one): withheld, nothing pushed. Any failure after the push says
//! that the branch was pushed.

use octocrab::Octocrab;
use serde::Deserialize;
use serde_json::json;

use super::{Context, GithubError, MAX_PAGES, body, patch, post};
use crate::model::Report;
use crate::model::publish::PublishEntry;
use crate::publish::push::{self, Commit, PushError, Target};

/// What applying one row gave: its URL and number.
pub(super) struct Done {
    pub(super) url: Option<String>,
    pub(super) number: Option<u64>,
}

/// Most bytes of the patch an issue carries.
pub(crate) use crate::publish::push::PATCH_MAX;

#[derive(Debug, Default, Deserialize)]
struct Head {
    #[serde(rename = "ref")]
    branch: String,
    /// Its head commit, as the API reports it (the push's lease).
    #[serde(default)]
    sha: Option<String>,
    #[serde(default)]
    repo: Option<HeadRepo>,
}

#[derive(Debug, Deserialize)]
struct HeadRepo {
    full_name: String,
}

#[derive(Debug, Deserialize)]
struct Pull {
    number: u64,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    draft: bool,
    #[serde(default)]
    head: Head,
}

/// What the push needs from the publisher.
pub(super) struct Remote {
    /// `SERVER/OWNER/REPO.git`.
    pub url: String,
    /// The token.
    pub token: String,
}

impl Remote {
    /// The repository of `ctx` on its server; the server URL passes the
    /// API URL's rule (https, or http to a loopback address).
    pub(super) fn of(ctx: &Context, token: &str) -> Result<Remote, GithubError> {
        let server = super::api_base(Some(&ctx.server_url), None)?;
        Ok(Remote {
            url: format!("{server}/{}/{}.git", ctx.owner, ctx.repo),
            token: token.to_owned(),
        })
    }
}

/// Whether `branch` is one the template names for this plan (`{run}`: any run).
fn fits(template: &str, plan: &str, branch: &str) -> bool {
    let pieces: Vec<String> = template
        .replace("{plan}", plan)
        .split("{run}")
        .map(regex::escape)
        .collect();
    let pattern = format!("^{}$", pieces.join("[A-Za-z0-9._-]+"));
    regex::Regex::new(&pattern).is_ok_and(|r| r.is_match(branch))
}

/// The open pull request of this plan: by head branch, else by marker.
async fn existing(
    crab: &Octocrab,
    ctx: &Context,
    branch: &str,
    mark: &str,
    template: &str,
    plan: &str,
) -> Result<Option<Pull>, GithubError> {
    let route = format!("/repos/{}/{}/pulls", ctx.owner, ctx.repo);
    let full = format!("{}/{}", ctx.owner, ctx.repo);
    let head = format!("{}:{branch}", ctx.owner);
    let by_head: Vec<Pull> = crab
        .get(
            &route,
            Some(&[("state", "open"), ("head", &head), ("per_page", "100")]),
        )
        .await
        .map_err(GithubError::Api)?;
    let ours = |p: &Pull| {
        p.head
            .repo
            .as_ref()
            .is_some_and(|r| r.full_name.eq_ignore_ascii_case(&full))
    };
    // Only a pull request plangate opened (its marker) is taken over: a
    // person's pull request from the same branch is never pushed over.
    if let Some(p) = by_head.into_iter().find(|p| {
        p.head.branch == branch && ours(p) && p.body.as_deref().is_some_and(|b| b.starts_with(mark))
    }) {
        return Ok(Some(p));
    }
    let mut page: octocrab::Page<Pull> = crab
        .get(&route, Some(&[("state", "open"), ("per_page", "100")]))
        .await
        .map_err(GithubError::Api)?;
    for _ in 0..MAX_PAGES {
        if let Some(p) = page.items.drain(..).find(|p| {
            ours(p)
                && p.body.as_deref().is_some_and(|b| b.starts_with(mark))
                && fits(template, plan, &p.head.branch)
        }) {
            return Ok(Some(p));
        }
        match crab
            .get_page::<Pull>(&page.next)
            .await
            .map_err(GithubError::Api)?
        {
            Some(next) => page = next,
            None => break,
        }
    }
    Ok(None)
}

/// Build the commit (and push it with `push`) off the async workers.
async fn commit(
    report: &Report,
    remote: &Remote,
    branch: &str,
    base: Option<&str>,
    message: String,
    push: bool,
    replace: Option<String>,
) -> Result<push::Prepared, PushError> {
    let (url, header) = (
        remote.url.clone(),
        push::basic_auth("x-access-token", &remote.token),
    );
    let (branch, base) = (branch.to_owned(), base.map(str::to_owned));
    let workspace = std::path::PathBuf::from(&report.workspace);
    let files = report
        .diff
        .as_ref()
        .map(|d| d.files.clone())
        .unwrap_or_default();
    let prefix = report.diff.as_ref().and_then(|d| d.prefix.clone());
    let policy = report.policy.clone();
    tokio::task::spawn_blocking(move || {
        let target = Target {
            url: &url,
            auth_header: &header,
            branch: &branch,
            base: base.as_deref(),
            replace: replace.as_deref(),
        };
        let prepared = push::prepare(
            &target,
            &Commit {
                workspace: &workspace,
                files: &files,
                prefix: prefix.as_deref(),
                message: &message,
                identity: push::IDENTITY,
                policy: policy.as_ref(),
            },
        )?;
        if push {
            if prepared.is_empty()? {
                return Err(PushError::Io(format!(
                    "the changes are already on `{}`: there is nothing to propose",
                    prepared.base
                )));
            }
            prepared.push()?;
        }
        Ok(prepared)
    })
    .await
    .map_err(|e| PushError::Io(format!("the push crashed: {e}")))?
}

/// The commit message: the title, then where it comes from.
pub(crate) fn message(report: &Report, title: &str) -> String {
    crate::redact::clean_str(&format!(
        "{title}\n\nCommitted by plangate: run {} of plan `{}`.\n",
        report.run_id,
        body::plan_key(report)
    ))
    .into_owned()
}

/// Open (or update) the pull request of row `e`.
pub(super) async fn open(
    crab: &Octocrab,
    ctx: &Context,
    remote: &Remote,
    report: &Report,
    e: &mut PublishEntry,
    (title, text): (&str, Option<&str>),
) -> Result<Done, String> {
    let plan = body::plan_key(report);
    let template = e.branch.clone().ok_or("no branch declared")?;
    let branch = push::branch_name(&template, &plan, &report.run_id).map_err(|x| x.to_string())?;
    let mark = body::kind_marker(report, "pull_request", "pr");
    let found = existing(crab, ctx, &branch, &mark, &template, &plan)
        .await
        .map_err(|x| x.to_string())?;
    if let Some(p) = &found
        && e.draft
        && e.policy.is_some()
        && !p.draft
    {
        return Err(format!(
            "the patch policy asks for a draft but the open pull request #{} is not one (GitHub's REST API cannot make it one): nothing pushed",
            p.number
        ));
    }
    let branch = found.as_ref().map_or(branch, |p| p.head.branch.clone());
    let pushed = commit(
        report,
        remote,
        &branch,
        e.base.as_deref(),
        message(report, title),
        true,
        found
            .as_ref()
            .map(|p| p.head.sha.clone().unwrap_or_default()),
    )
    .await
    .map_err(|x| x.to_string())?;
    e.branch = Some(branch.clone());
    e.base = Some(pushed.base.clone());
    e.commit = Some(pushed.commit.clone());
    let half = |what: &str, x: GithubError| {
        format!(
            "branch `{branch}` was pushed (commit {}) but {what}: {x}",
            &pushed.commit[..pushed.commit.len().min(12)]
        )
    };
    let mut head = format!("{mark}\n{}", text.unwrap_or(""));
    if let (true, Some(why)) = (e.draft, e.policy.as_deref()) {
        head.push_str(&format!(
            "\n\n> **Opened as a draft for review**: the patch policy found: {why}."
        ));
        if !e.reviewers.is_empty() {
            let who: Vec<String> = e.reviewers.iter().map(|r| format!("@{r}")).collect();
            head.push_str(&format!(" Review requested from {}.", who.join(", ")));
        }
    }
    let full = body::with_summary(report, ctx.run_url.as_deref(), &head);
    let repo = format!("/repos/{}/{}", ctx.owner, ctx.repo);
    let pull: Pull = match &found {
        Some(p) => patch(
            crab,
            format!("{repo}/pulls/{}", p.number),
            json!({"title": title, "body": full}),
        )
        .await
        .map_err(|x| half("the pull request could not be updated", x))?,
        None => post(
            crab,
            format!("{repo}/pulls"),
            json!({"title": title, "head": branch, "base": pushed.base, "body": full,
                   "draft": e.draft, "maintainer_can_modify": false}),
        )
        .await
        .map_err(|x| half("the pull request could not be opened", x))?,
    };
    let mut missing = Vec::new();
    if !e.labels.is_empty() {
        let r: Result<serde_json::Value, _> = post(
            crab,
            format!("{repo}/issues/{}/labels", pull.number),
            json!({"labels": e.labels}),
        )
        .await;
        if let Err(x) = r {
            missing.push(format!("its labels could not be added: {x}"));
        }
    }
    if e.draft && e.policy.is_some() && !e.reviewers.is_empty() {
        let r: Result<serde_json::Value, _> = post(
            crab,
            format!("{repo}/pulls/{}/requested_reviewers", pull.number),
            json!({"reviewers": e.reviewers}),
        )
        .await;
        if let Err(x) = r {
            missing.push(format!("its reviewers could not be requested: {x}"));
        }
    }
    let verb = if found.is_some() { "updated" } else { "opened" };
    e.reason = if missing.is_empty() {
        format!(
            "published: pull request #{} {verb} from `{branch}`",
            pull.number
        )
    } else {
        format!(
            "published: pull request #{} {verb} from `{branch}`, but {}",
            pull.number,
            missing.join("; ")
        )
    };
    Ok(Done {
        url: pull.html_url,
        number: Some(pull.number),
    })
}

/// An issue's text with the patch attached: the unified diff against the
/// base, fenced, cut at [`PATCH_MAX`] with a note (redacted on its way out).
pub(super) async fn with_patch(
    remote: &Remote,
    report: &Report,
    e: &PublishEntry,
    title: &str,
    text: &str,
) -> Result<String, String> {
    let prepared = commit(
        report,
        remote,
        "plangate/patch",
        e.base.as_deref(),
        message(report, title),
        false,
        None,
    )
    .await
    .map_err(|x| format!("the patch could not be made: {x}"))?;
    attach_patch(&prepared, text)
}

/// `text` with the patch of `prepared` attached: the unified diff against
/// its base, fenced, cut at [`PATCH_MAX`] with a note. Both forges' issues.
pub(crate) fn attach_patch(prepared: &push::Prepared, text: &str) -> Result<String, String> {
    let (diff, cut) = prepared.patch(PATCH_MAX).map_err(|x| x.to_string())?;
    let mut out = format!(
        "{text}\n\nThe patch, against `{}` ({}):\n\n{}",
        prepared.base,
        &prepared.base_sha[..prepared.base_sha.len().min(12)],
        body::fenced("diff", &diff)
    );
    if cut {
        out.push_str(&format!(
            "\n\n*The patch was cut at {PATCH_MAX} bytes; the run's `diff-summary.md` shows the changes.*"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_branches_of_the_template_are_taken_over() {
        assert!(fits(
            "plangate/{plan}/{run}",
            "lint",
            "plangate/lint/0193ab-c"
        ));
        assert!(fits("bot/fix", "lint", "bot/fix"));
        assert!(!fits("plangate/{plan}/{run}", "lint", "plangate/other/1"));
        assert!(!fits("plangate/{plan}/{run}", "lint", "plangate/lint/"));
        assert!(!fits("plangate/{plan}/{run}", "lint", "plangate/lint/a/b"));
        assert!(!fits("plangate/{plan}/{run}", "lint", "main"));
        assert!(!fits("bot.{run}", "p", "botX1"), "a dot is a dot");
    }
}
