//! A `pull_request` (`merge_request`) row on GitLab: the run's changes
//! committed and pushed by `publish::push` to the project's repository
//! (`CI_PROJECT_URL`, never the workspace's remote), then the merge request
//! opened or updated from that branch (`mr::upsert`). The patch policy's
//! `issue` verdict: no push, the patch attached to the issue instead.
//! Blocking: runs on the GitLab publisher's thread.

use std::path::PathBuf;

use super::Context;
use super::client::Client;
use super::mr::{self, MergeRequest};
use crate::github::body;
use crate::github::pull;
use crate::model::Report;
use crate::model::publish::PublishEntry;
use crate::publish::push::{self, Commit, Prepared, Target};

/// Where to push: the project's own URL with `.git`.
fn remote(ctx: &Context) -> Result<String, String> {
    ctx.project_url
        .as_deref()
        .map(|u| format!("{}.git", u.trim_end_matches('/')))
        .ok_or_else(|| "no CI_PROJECT_URL: plangate does not know where to push".to_owned())
}

/// The run's changes as a commit on `base` for `branch` (not pushed).
fn prepare(
    client: &Client,
    ctx: &Context,
    report: &Report,
    (branch, base, replace): (&str, Option<&str>, Option<&str>),
    title: &str,
) -> Result<Prepared, String> {
    let url = remote(ctx)?;
    let header = client.git_auth();
    let files = report
        .diff
        .as_ref()
        .map(|d| d.files.clone())
        .unwrap_or_default();
    let workspace = PathBuf::from(&report.workspace);
    push::prepare(
        &Target {
            url: &url,
            auth_header: &header,
            branch,
            base,
            replace,
        },
        &Commit {
            workspace: &workspace,
            files: &files,
            prefix: report.diff.as_ref().and_then(|d| d.prefix.as_deref()),
            message: &pull::message(report, title),
            identity: push::IDENTITY,
            policy: report.policy.as_ref(),
        },
    )
    .map_err(|x| x.to_string())
}

/// Push the run's changes and open (or update) the merge request of row `e`.
/// Ok: its web URL and iid.
pub(super) fn open(
    client: &Client,
    ctx: &Context,
    report: &Report,
    e: &mut PublishEntry,
    (title, text): (&str, Option<&str>),
) -> Result<(Option<String>, Option<u64>), String> {
    let template = e.branch.clone().ok_or("no branch declared")?;
    let branch = push::branch_name(&template, &body::plan_key(report), &report.run_id)
        .map_err(|x| x.to_string())?;
    let mark = body::kind_marker(report, "pull_request", "pr");
    let open = mr::find_open(client, ctx, &branch, &mark)?;
    // The lease: the head commit the API reports for the open merge request
    // (absent or not a commit id: the push refuses).
    let head = open
        .as_ref()
        .map(|v| v["sha"].as_str().unwrap_or_default().to_owned());
    let prepared = prepare(
        client,
        ctx,
        report,
        (&branch, e.base.as_deref(), head.as_deref()),
        title,
    )?;
    if prepared.is_empty().map_err(|x| x.to_string())? {
        return Err(format!(
            "the changes are already on `{}`: there is nothing to propose",
            prepared.base
        ));
    }
    prepared.push().map_err(|x| x.to_string())?;
    e.branch = Some(branch.clone());
    e.base = Some(prepared.base.clone());
    e.commit = Some(prepared.commit.clone());
    let head = body::proposal_head(&mark, text, e, "Review asked of");
    let description = body::with_summary(report, ctx.run_url.as_deref(), &head);
    mr::upsert(
        client,
        ctx,
        &MergeRequest {
            source_branch: &branch,
            mark: &mark,
            target_branch: Some(&prepared.base),
            title,
            description: &description,
            labels: &e.labels,
            draft: e.draft,
        },
    )
    .map_err(|x| {
        format!(
            "branch `{branch}` was pushed (commit {}) but the merge request could not be opened: {x}",
            &prepared.commit[..prepared.commit.len().min(12)]
        )
    })
}

/// An issue's text with the patch attached (the patch policy's `issue`
/// verdict): the unified diff against the base, fenced, cut at [`pull::PATCH_MAX`].
pub(super) fn with_patch(
    client: &Client,
    ctx: &Context,
    report: &Report,
    e: &PublishEntry,
    title: &str,
    text: &str,
) -> Result<String, String> {
    let prepared = prepare(
        client,
        ctx,
        report,
        ("plangate/patch", e.base.as_deref(), None),
        title,
    )
    .map_err(|x| format!("the patch could not be made: {x}"))?;
    pull::attach_patch(&prepared, text)
}
