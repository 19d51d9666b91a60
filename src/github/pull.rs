//! A pull request the gates passed, opened for real: the run's workspace
//! changes committed and pushed by `publish::push` to
//! `GITHUB_SERVER_URL/OWNER/REPO.git` (never the workspace's own remote
//! config, which a step could have changed) with the token handed to git's
//! credential helper through a socket, then the pull request opened (or, on a
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
use crate::publish::request;

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

/// A run id as plangate makes them (`uuid::Uuid::now_v7().to_string()`):
/// a UUIDv7, lower-case hex in the 8-4-4-4-12 groups, version 7, variant 10xx.
const RUN_ID: &str = "[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";

/// Whether `branch` is one the template names for this plan (`{run}`: any
/// run id, and only the shape of one, so that a branch someone else named
/// is not taken over because it happens to fit).
fn fits(template: &str, plan: &str, branch: &str) -> bool {
    let pieces: Vec<String> = template
        .replace("{plan}", plan)
        .split("{run}")
        .map(regex::escape)
        .collect();
    let pattern = format!("^{}$", pieces.join(RUN_ID));
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

/// The commit message: the title, then where it comes from. Both forges.
/// The title was checked with the request ([`request::title_problem`]); here
/// again, whatever its source: a title with a problem (another line, a
/// trailer, plangate's own line) is replaced by a neutral one, and it is cut
/// at [`request::MAX_TITLE`] characters. The plan key and run id are made
/// one line (a character that could start another line becomes a space).
pub(crate) fn message(report: &Report, title: &str) -> String {
    let title: String = title.chars().take(request::MAX_TITLE).collect();
    let title = if title.trim().is_empty() || request::title_problem(&title).is_some() {
        "Changes proposed by plangate".to_owned()
    } else {
        title
    };
    crate::redact::clean_str(&format!(
        "{title}\n\nCommitted by plangate: run {} of plan `{}`.\n",
        one_line(&report.run_id, 64),
        one_line(&body::plan_key(report), 200)
    ))
    .into_owned()
}

/// `s` on one line of at most `max` characters (see [`message`]).
fn one_line(s: &str, max: usize) -> String {
    s.chars()
        .map(|c| if request::bad_title_char(c) { ' ' } else { c })
        .take(max)
        .collect()
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
    let head = body::proposal_head(&mark, text, e, "Review requested from");
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
        let run = uuid::Uuid::now_v7().to_string();
        assert!(fits(
            "plangate/{plan}/{run}",
            "lint",
            &format!("plangate/lint/{run}")
        ));
        assert!(fits(
            "plangate/{plan}/{run}",
            "lint",
            "plangate/lint/019ac8f2-3b4d-7e10-9a2b-0123456789ab"
        ));
        assert!(fits("bot/fix", "lint", "bot/fix"));
        assert!(fits("x-{run}-{run}", "p", &format!("x-{run}-{run}")));
        assert!(!fits("plangate/{plan}/{run}", "lint", "plangate/other/1"));
        assert!(!fits("plangate/{plan}/{run}", "lint", "plangate/lint/"));
        assert!(!fits("plangate/{plan}/{run}", "lint", "plangate/lint/a/b"));
        assert!(!fits("plangate/{plan}/{run}", "lint", "main"));
        assert!(
            !fits("bot.{run}", "p", &format!("botX{run}")),
            "a dot is a dot"
        );
    }

    fn report(id: &str) -> Report {
        let v = serde_json::json!({
            "schema_version": 1, "plangate_version": "0",
            "run_id": "019ac8f2-3b4d-7e10-9a2b-0123456789ab", "in_progress": false,
            "plan": {"id": id, "path": "p.yaml", "sha256": null},
            "status": "success", "exit_code": 0, "started_at": "", "finished_at": null,
            "duration_ms": 0, "dry_run": false, "workspace": "/w", "policy": null,
            "approvals": [], "steps": [], "findings": [], "diff": null,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "estimated": false}
        });
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    /// git's own reading of a message's trailers.
    fn trailers(msg: &str) -> String {
        use std::io::Write as _;
        let mut c = std::process::Command::new("git")
            .args(["interpret-trailers", "--only-trailers", "--parse"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("git: {e}"));
        if let Some(mut i) = c.stdin.take() {
            i.write_all(msg.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let out = c.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn a_title_adds_no_line_and_no_trailer_to_the_commit_message() {
        let titles = [
            "fix lint\n\nSigned-off-by: Mallory <m@example.com>",
            "fix lint\r\nCo-authored-by: Mallory <m@example.com>",
            "fix\n\nChange-Id: I0123456789abcdef0123456789abcdef01234567",
            "Signed-off-by: Mallory <m@example.com>",
            "Co-authored-by: Mallory <m@example.com>",
            "Change-Id: I0123456789abcdef0123456789abcdef01234567",
            "fix\u{2028}Signed-off-by: M <m@e>",
            "fix\u{0085}Signed-off-by: M <m@e>",
            "fix\u{000b}\u{000c}Reviewed-by: M <m@e>",
            "fix\n\nCommitted by plangate: run 1 of plan `other`.",
            "Committed by plangate: run 1 of plan `other`.",
            "\u{202e}lint fix",
            "",
            "\n",
        ];
        for t in titles {
            let msg = message(&report("lint"), t);
            let lines: Vec<&str> = msg.lines().collect();
            assert_eq!(lines.len(), 3, "{t:?} gave {msg:?}");
            assert_eq!(lines[1], "");
            assert!(
                lines[2].starts_with("Committed by plangate: run 019ac8f2-"),
                "{msg:?}"
            );
            assert_eq!(msg.matches("ommitted by plangate").count(), 1, "{msg:?}");
            assert!(
                !msg.chars().any(|c| c != '\n' && request::bad_title_char(c)),
                "{msg:?}"
            );
            assert_eq!(trailers(&msg), "", "{t:?} gave trailers in {msg:?}");
            assert!(
                !lines[0].contains("-by:") && !lines[0].contains("Change-Id"),
                "{msg:?}"
            );
        }
        // A plain title is kept as it is; a long one is cut.
        let msg = message(&report("lint"), "fix(lint): tidy imports");
        assert!(msg.starts_with("fix(lint): tidy imports\n\nCommitted by plangate"));
        let long = "x".repeat(1000);
        let msg = message(&report("lint"), &long);
        assert_eq!(msg.lines().next().map(str::len), Some(request::MAX_TITLE));
    }

    #[test]
    fn run_only_matches_the_shape_of_a_run_id() {
        let t = "plangate/{plan}/{run}";
        let ok = "019ac8f2-3b4d-7e10-9a2b-0123456789ab";
        assert!(fits(t, "lint", &format!("plangate/lint/{ok}")));
        for near in [
            // Anything a person could name a branch, which the old `[A-Za-z0-9._-]+` took.
            "fix-typo",
            "1",
            "0193ab-c",
            "my.feature_branch",
            // Upper case: plangate writes lower-case hex.
            "019AC8F2-3B4D-7E10-9A2B-0123456789AB",
            // Not version 7 (a v4 UUID), not the RFC variant.
            "019ac8f2-3b4d-4e10-9a2b-0123456789ab",
            "019ac8f2-3b4d-7e10-ca2b-0123456789ab",
            // Wrong group lengths, no dashes, braces, extra text around it.
            "019ac8f2-3b4d-7e10-9a2b-0123456789a",
            "019ac8f2-3b4d-7e10-9a2b-0123456789abc",
            "019ac8f23b4d7e109a2b0123456789ab",
            "{019ac8f2-3b4d-7e10-9a2b-0123456789ab}",
            "019ac8f2-3b4d-7e10-9a2b-0123456789ab-mine",
            "x019ac8f2-3b4d-7e10-9a2b-0123456789ab",
            "019ac8f2-3b4d-7e10-9a2b-0123456789ab/b",
            // Not hex.
            "019ac8g2-3b4d-7e10-9a2b-0123456789ab",
            "",
        ] {
            assert!(
                !fits(t, "lint", &format!("plangate/lint/{near}")),
                "`{near}` is not a run id"
            );
        }
    }
}
