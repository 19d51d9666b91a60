//! Applying the rows the gates passed (`report.publish` in state
//! `would_publish`) on GitLab: a comment is a merge-request note updated in
//! place by its marker, labels are added to the merge request, an issue is
//! found again by its marker, a review is inline discussions plus a note
//! and its verdict (approve, or unapprove for request_changes), a check run
//! is a commit status. Each row becomes `published` (URL, number) or
//! `withheld` (GitLab's error). A merge request is pushed and opened by
//! `change` (only from `plangate run`).

use serde_json::{Value, json};

use super::client::Client;
use super::{Context, GitlabError, post_status};
use crate::github::body;
use crate::model::Report;
use crate::model::publish::{InlineComment, PublishEntry, PublishState, Request, Verdict};
use crate::publish::marker::title_key;

/// What applying one row gave: its URL and number.
struct Done {
    url: Option<String>,
    number: Option<u64>,
}

fn starts_with(v: &Value, field: &str, mark: &str) -> bool {
    v[field].as_str().is_some_and(|b| b.starts_with(mark))
}

/// Every row still `would_publish` becomes `withheld` for `why`.
pub(super) fn withhold_all(report: &mut Report, why: &str) {
    for e in &mut report.publish {
        if e.state == PublishState::WouldPublish && e.request.is_some() {
            e.state = PublishState::Withheld;
            e.reason = format!("GitLab: {why}");
        }
    }
}

/// Apply every row the gates passed; rows are updated in place.
pub(super) fn apply(client: &Client, ctx: &Context, report: &mut Report, push: bool) {
    if report.dry_run {
        return;
    }
    let snapshot = report.clone();
    for e in &mut report.publish {
        if e.state != PublishState::WouldPublish {
            continue;
        }
        let Some(req) = e.request.clone() else {
            continue;
        };
        match one(client, ctx, &snapshot, e, &req, push) {
            Ok(Some(done)) => {
                e.state = PublishState::Published;
                e.reason = "published on GitLab".to_owned();
                e.url = done.url;
                e.number = done.number;
            }
            Ok(None) => {}
            Err(why) => {
                e.state = PublishState::Withheld;
                e.reason = format!("GitLab: {why}");
            }
        }
    }
}

fn mr(ctx: &Context) -> Result<u64, String> {
    ctx.mr.ok_or_else(|| {
        "not a merge request pipeline (no CI_MERGE_REQUEST_IID): there is nothing to comment on, label or review".into()
    })
}

/// Update the note of merge request `iid` that starts with `mark`, or create
/// one. `text` already starts with the marker. Ok: the note's id, and
/// `created` or `updated`.
pub(super) fn upsert_note(
    client: &Client,
    ctx: &Context,
    iid: u64,
    mark: &str,
    text: &str,
) -> Result<(u64, &'static str), GitlabError> {
    let notes = format!("{}/merge_requests/{iid}/notes", ctx.route());
    let found = client.find(&format!("{notes}?sort=asc&order_by=created_at"), |n| {
        starts_with(n, "body", mark)
    })?;
    let payload = json!({ "body": text });
    match found.and_then(|n| n["id"].as_u64()) {
        Some(id) => {
            client.put(&format!("{notes}/{id}"), &payload)?;
            Ok((id, "updated"))
        }
        None => {
            let v = client.post(&notes, &payload)?;
            Ok((v["id"].as_u64().unwrap_or(0), "created"))
        }
    }
}

/// Labels as GitLab's comma-separated list (a label holding a comma would be two).
fn label_list(labels: &[String]) -> Result<String, String> {
    if let Some(bad) = labels.iter().find(|l| l.contains(',')) {
        return Err(format!(
            "label `{bad}` holds a comma, which GitLab reads as two labels"
        ));
    }
    Ok(labels.join(","))
}

/// One row. Ok(None): left as it is.
fn one(
    client: &Client,
    ctx: &Context,
    report: &Report,
    e: &mut PublishEntry,
    req: &Request,
    push: bool,
) -> Result<Option<Done>, String> {
    let err = |e: GitlabError| e.to_string();
    match req {
        Request::Comment { body: text } => {
            let iid = mr(ctx)?;
            let mark = body::kind_marker(report, "comment", e.name.as_deref().unwrap_or("comment"));
            let (id, _) =
                upsert_note(client, ctx, iid, &mark, &format!("{mark}\n{text}")).map_err(err)?;
            Ok(Some(Done {
                url: ctx.mr_url(iid, Some(id)),
                number: Some(id),
            }))
        }
        Request::Labels { labels } => {
            let iid = mr(ctx)?;
            let list = label_list(labels)?;
            client
                .put(
                    &format!("{}/merge_requests/{iid}", ctx.route()),
                    &json!({ "add_labels": list }),
                )
                .map_err(err)?;
            Ok(Some(Done {
                url: ctx.mr_url(iid, None),
                number: Some(iid),
            }))
        }
        Request::Issue { title, body: text } => {
            issue(client, ctx, report, e, title, text.as_deref()).map(Some)
        }
        Request::Review {
            verdict,
            body: text,
            comments,
        } => review(client, ctx, *verdict, text.as_deref(), comments).map(Some),
        Request::CheckRun { title, .. } => {
            let name = e.name.clone().unwrap_or_else(|| body::check_name(report));
            let description = title.clone().unwrap_or_else(|| body::check_title(report));
            let (id, _) = post_status(client, ctx, report, &name, &description).map_err(err)?;
            Ok(Some(Done {
                url: ctx.run_url.clone(),
                number: (id > 0).then_some(id),
            }))
        }
        Request::PullRequest { title, body: text } => {
            if !push {
                return Err("only `plangate run` pushes a merge request: this command has no run's workspace to commit".into());
            }
            let (url, number) =
                super::change::open(client, ctx, report, e, (title, text.as_deref()))?;
            Ok(Some(Done { url, number }))
        }
    }
}

/// An issue, found again among the open ones by its marker (updated), else created.
fn issue(
    client: &Client,
    ctx: &Context,
    report: &Report,
    e: &PublishEntry,
    title: &str,
    text: Option<&str>,
) -> Result<Done, String> {
    let err = |e: GitlabError| e.to_string();
    let mark = body::kind_marker(report, "issue", &title_key(title));
    let mut text = text.unwrap_or("").to_owned();
    if e.from.as_deref() == Some("pull_request") {
        text = super::change::with_patch(client, ctx, report, e, title, &text)?;
    }
    let description = format!("{mark}\n{text}");
    let labels = label_list(&e.labels)?;
    let issues = format!("{}/issues", ctx.route());
    let found = client
        .find(&format!("{issues}?state=opened"), |i| {
            starts_with(i, "description", &mark)
        })
        .map_err(err)?;
    let v = match found.and_then(|i| i["iid"].as_u64()) {
        Some(iid) => client
            .put(
                &format!("{issues}/{iid}"),
                &json!({"title": title, "description": description, "add_labels": labels}),
            )
            .map_err(err)?,
        None => client
            .post(
                &issues,
                &json!({"title": title, "description": description, "labels": labels}),
            )
            .map_err(err)?,
    };
    Ok(Done {
        url: v["web_url"].as_str().map(str::to_owned),
        number: v["iid"].as_u64(),
    })
}

/// A review: one discussion per inline comment (positioned on the merge
/// request's current diff), the body and verdict as a note, then the verdict:
/// approve, or (request_changes) withdraw plangate's approval.
fn review(
    client: &Client,
    ctx: &Context,
    verdict: Verdict,
    text: Option<&str>,
    comments: &[InlineComment],
) -> Result<Done, String> {
    let iid = mr(ctx)?;
    let route = format!("{}/merge_requests/{iid}", ctx.route());
    let mut posted = 0usize;
    let partial = |posted: usize, e: GitlabError| {
        if posted == 0 {
            e.to_string()
        } else {
            format!("{e} (after {posted} inline comment(s) were posted)")
        }
    };
    if !comments.is_empty() {
        let refs = client.get(&route).map_err(|e| partial(0, e))?["diff_refs"].clone();
        let sha = |k: &str| refs[k].as_str().map(str::to_owned);
        let (Some(base), Some(start), Some(head)) =
            (sha("base_sha"), sha("start_sha"), sha("head_sha"))
        else {
            return Err(
                "the merge request has no diff_refs: inline comments cannot be placed".into(),
            );
        };
        for c in comments {
            let payload = json!({
                "body": c.body,
                "position": {
                    "position_type": "text",
                    "base_sha": base, "start_sha": start, "head_sha": head,
                    "old_path": c.path, "new_path": c.path, "new_line": c.line,
                },
            });
            client
                .post(&format!("{route}/discussions"), &payload)
                .map_err(|e| partial(posted, e))?;
            posted += 1;
        }
    }
    let head = match verdict {
        Verdict::Approve => "plangate review: **approved**",
        Verdict::RequestChanges => "plangate review: **changes requested**",
        Verdict::Comment => "plangate review",
    };
    let note = client
        .post(
            &format!("{route}/notes"),
            &json!({"body": format!("{head}\n\n{}", text.unwrap_or(""))}),
        )
        .map_err(|e| partial(posted, e))?;
    match verdict {
        Verdict::Approve => {
            let mut payload = json!({});
            if let Some(sha) = &ctx.head_sha {
                payload["sha"] = json!(sha);
            }
            match client.post(&format!("{route}/approve"), &payload) {
                Ok(_) => {}
                // GitLab answers 401 to a second approval by the same user.
                Err(e) if e.status() == Some(401) && approved_by_me(client, &route) => {}
                Err(e) => return Err(partial(posted, e)),
            }
        }
        Verdict::RequestChanges => match client.post(&format!("{route}/unapprove"), &json!({})) {
            // 404: plangate's user had not approved it; nothing to withdraw.
            Ok(_) => {}
            Err(e) if e.status() == Some(404) => {}
            Err(e) => return Err(partial(posted, e)),
        },
        Verdict::Comment => {}
    }
    let id = note["id"].as_u64();
    Ok(Done {
        url: id.and_then(|n| ctx.mr_url(iid, Some(n))),
        number: id,
    })
}

/// Whether the token's user is among the merge request's approvers (a rerun's approval).
fn approved_by_me(client: &Client, route: &str) -> bool {
    let Ok(me) = client.get("/user") else {
        return false;
    };
    let Some(id) = me["id"].as_u64() else {
        return false;
    };
    client
        .get(&format!("{route}/approvals"))
        .ok()
        .and_then(|a| a["approved_by"].as_array().cloned())
        .is_some_and(|list| list.iter().any(|u| u["user"]["id"].as_u64() == Some(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_with_commas_are_refused_not_split() {
        assert_eq!(
            label_list(&["a".into(), "b c".into()]).as_deref(),
            Ok("a,b c")
        );
        assert!(label_list(&["a,b".into()]).is_err());
    }
}
