//! The gates after the run: which accepted requests may be published. A
//! request passes only if the run found no secret anywhere, the step that
//! asked (and every step it depends on) succeeded, its kind's run-wide `max`
//! holds and, for a pull request, the patch policy passes (or turns it into
//! a draft, or an issue). A dry run publishes nothing and lists what the
//! plan declares. Pure: the engine gathers the facts.

use std::collections::BTreeMap;

use super::patch::{self, PatchFile};
use crate::model::publish::{
    PatchAction, PatchPolicy, PublishBlock, PublishEntry, PublishState, Request,
};

/// What the run knows when its steps are done.
pub(crate) struct Facts<'a> {
    /// Step ids, in plan order.
    pub step_ids: &'a [String],
    /// Per step: it and every step it depends on (transitively) succeeded.
    pub chain_ok: &'a [bool],
    /// Secrets found anywhere in the run (steps, the diff, the last sweep).
    pub secrets: usize,
    /// `--dry-run`.
    pub dry_run: bool,
    /// The run's changed files.
    pub files: &'a [PatchFile],
    /// The patch policies in force (the built-in protected paths always apply).
    pub policies: &'a [PatchPolicy],
    /// The plan's `publish:` block.
    pub decl: &'a PublishBlock,
}

/// Every gate has passed; what applies it says how it went.
pub(crate) const PASSED: &str = "every gate passed; published by `plangate run` with a GitHub token under GitHub Actions or a GitLab token under GitLab CI";

fn declared(decl: &PublishBlock) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (on, kind) in [
        (decl.pull_request.is_some(), "pull_request"),
        (decl.review.is_some(), "review"),
        (decl.comment.is_some(), "comment"),
        (decl.labels.is_some(), "labels"),
        (decl.issue.is_some(), "issue"),
        (decl.check_run.is_some(), "check_run"),
    ] {
        if on {
            out.push(kind);
        }
    }
    out
}

pub(crate) fn run_max(decl: &PublishBlock, kind: &str) -> u32 {
    match kind {
        "pull_request" => decl.pull_request.as_ref().map_or(0, |d| d.max),
        "comment" => decl.comment.as_ref().map_or(0, |d| d.max),
        "issue" => decl.issue.as_ref().map_or(0, |d| d.max),
        "labels" => 10,
        _ => 1,
    }
}

fn entry(kind: &str, step: Option<&str>, state: PublishState, reason: String) -> PublishEntry {
    PublishEntry {
        kind: kind.to_owned(),
        step: step.map(str::to_owned),
        state,
        reason,
        draft: false,
        url: None,
        number: None,
        labels: Vec::new(),
        name: None,
        request: None,
        branch: None,
        base: None,
        commit: None,
        reviewers: Vec::new(),
        policy: None,
        from: None,
    }
}

/// What the declaration adds to a request of `kind`.
fn extras(e: &mut PublishEntry, decl: &PublishBlock) {
    match e.kind.as_str() {
        "pull_request" => {
            if let Some(d) = &decl.pull_request {
                e.labels = d.labels.clone();
                e.branch = Some(d.branch.clone());
                e.base = d.base.clone();
                if e.policy.is_some() {
                    e.reviewers = d.reviewers.clone();
                }
            }
        }
        "issue" if e.from.is_some() => {
            // The patch is built on the pull request's base.
            e.base = decl.pull_request.as_ref().and_then(|d| d.base.clone());
            e.labels = decl
                .issue
                .as_ref()
                .map(|d| d.labels.clone())
                .unwrap_or_default();
        }
        "issue" => {
            e.labels = decl
                .issue
                .as_ref()
                .map(|d| d.labels.clone())
                .unwrap_or_default()
        }
        "comment" => {
            e.name = Some(
                decl.comment
                    .as_ref()
                    .and_then(|d| d.marker.clone())
                    .unwrap_or_else(|| "comment".to_owned()),
            );
        }
        "check_run" => e.name = decl.check_run.as_ref().and_then(|d| d.name.clone()),
        _ => {}
    }
}

/// Decide every request (`(step index, request)`, in the order steps ended).
pub(crate) fn decide(asked: &[(usize, Request)], facts: &Facts<'_>) -> Vec<PublishEntry> {
    if facts.dry_run {
        return declared(facts.decl)
            .into_iter()
            .map(|k| {
                entry(
                    k,
                    None,
                    PublishState::WouldPublish,
                    "dry run: declared under `publish:`; no step ran, nothing is published".into(),
                )
            })
            .collect();
    }
    let mut counts: BTreeMap<&'static str, u32> = BTreeMap::new();
    let mut out = Vec::new();
    for (step, req) in asked {
        let id = facts.step_ids.get(*step).map(String::as_str);
        let kind = req.kind();
        let count = counts.entry(kind).or_default();
        *count += 1;
        let mut e = entry(kind, id, PublishState::Withheld, String::new());
        e.request = Some(req.clone());
        if facts.secrets > 0 {
            e.reason = format!(
                "the run found {} secret(s); nothing is published",
                facts.secrets
            );
        } else if !facts.chain_ok.get(*step).copied().unwrap_or(false) {
            e.reason = format!(
                "step `{}` or a step it depends on did not succeed",
                id.unwrap_or("?")
            );
        } else if *count > run_max(facts.decl, kind) {
            e.reason = format!(
                "more than {} `{kind}` request(s) in the run (publish.{kind}.max)",
                run_max(facts.decl, kind)
            );
        } else if let Request::PullRequest { title, body } = req {
            pull_request(&mut e, facts, title, body.as_deref());
        } else {
            e.state = PublishState::WouldPublish;
            e.reason = PASSED.to_owned();
        }
        extras(&mut e, facts.decl);
        out.push(e);
    }
    out
}

/// A pull request: the run must have changed files, and the patch policy decides.
fn pull_request(e: &mut PublishEntry, facts: &Facts<'_>, title: &str, body: Option<&str>) {
    if facts.files.is_empty() {
        e.reason = "the run changed no file: there is nothing to propose".into();
        return;
    }
    let violations = patch::evaluate(facts.files, facts.policies);
    let why: Vec<&str> = violations.iter().map(|v| v.why.as_str()).collect();
    let why = why.join("; ");
    e.draft = facts.decl.pull_request.as_ref().is_some_and(|d| d.draft);
    match patch::verdict(&violations) {
        None => {
            e.state = PublishState::WouldPublish;
            e.reason = PASSED.to_owned();
        }
        Some(PatchAction::Block) => e.reason = format!("patch policy blocks it: {why}"),
        Some(PatchAction::Draft) => {
            e.state = PublishState::WouldPublish;
            e.draft = true;
            e.policy = Some(why.clone());
            e.reason = format!("patch policy: opened as a draft for review: {why}; {PASSED}");
        }
        Some(PatchAction::Issue) => {
            e.state = PublishState::WouldPublish;
            e.kind = "issue".into();
            e.draft = false;
            e.from = Some("pull_request".into());
            e.policy = Some(why.clone());
            let mut text = format!(
                "plangate did not open a pull request: the patch policy turned it into this issue ({why})."
            );
            if let Some(b) = body {
                text = format!("{b}\n\n{text}");
            }
            e.request = Some(Request::Issue {
                title: title.to_owned(),
                body: Some(text),
            });
            e.reason = format!("patch policy: an issue instead of a pull request: {why}; {PASSED}");
        }
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
