//! Applying the requests the gates passed (`report.publish` rows in state
//! `would_publish`) through the same client, token and redaction as the run
//! summary: comments (updated in place by their marker), labels, issues
//! (found again by their marker), reviews, check runs. Each row becomes
//! `published` (with its URL and number) or `withheld` (why). Pull requests,
//! and the patch of an issue the patch policy opened instead, are `pull`'s.

use octocrab::Octocrab;
use serde::Deserialize;
use serde_json::{Value, json};

use super::pull::{self, Done, Remote};
use super::{
    Context, GithubError, MAX_PAGES, Notice, PUSH_TIMEOUT, Settings, TOTAL_TIMEOUT, api_base, body,
    client, patch, post, token_ok,
};
use crate::model::Report;
use crate::model::publish::{PublishEntry, PublishState, Request, Verdict};
use crate::redact;

#[derive(Debug, Deserialize)]
struct Item {
    id: u64,
    #[serde(default)]
    number: Option<u64>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
}

/// Apply the report's `publish` rows the gates passed (`effects`), updating
/// them in place. Blocking, on a thread of its own like [`publish`]. Nothing
/// to apply, no token or no repository: the rows stay as they are, and the
/// notice says why.
pub(crate) fn apply_effects(report: &mut Report, settings: &Settings) -> Option<Notice> {
    if report.dry_run
        || !report
            .publish
            .iter()
            .any(|e| e.state == PublishState::WouldPublish)
    {
        return None;
    }
    let Some(token) = settings.token.as_deref() else {
        return Some(Notice::Skipped(
            "no GitHub token (--github-token): the requests that passed every gate stay would_publish".into(),
        ));
    };
    redact::remember([token.trim().as_bytes().to_vec()]);
    let prepared = token_ok(token).and_then(|t| {
        let base = api_base(
            settings.api_url.as_deref(),
            crate::environ::var("GITHUB_API_URL").as_deref(),
        )?;
        Ok((t, base, Context::from_env()?))
    });
    let (token, base, ctx) = match prepared {
        Ok(p) => p,
        Err(e) => return Some(Notice::Failed(e.to_string())),
    };
    let remote = if settings.push {
        pull::Remote::of(&ctx, &token).map_err(|e| e.to_string())
    } else {
        Err("a branch is pushed only by the `plangate run` that made the changes, not by `merge` or `report`".to_owned())
    };
    // A push fetches and pushes: more time when there is one.
    let pushes = report.publish.iter().any(|e| {
        e.state == PublishState::WouldPublish && (e.kind == "pull_request" || e.from.is_some())
    });
    let total = if pushes { PUSH_TIMEOUT } else { TOTAL_TIMEOUT };
    let mut owned = report.clone();
    let worker = std::thread::Builder::new()
        .name("github-effects".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(GithubError::Runtime)?;
            rt.block_on(async {
                let crab = client(&base, token)?;
                let remote = remote.as_ref().map_err(String::as_str);
                tokio::time::timeout(total, apply(&crab, &ctx, remote, &mut owned))
                    .await
                    .map_err(|_| GithubError::Timeout(total.as_secs()))?;
                Ok::<Report, GithubError>(owned)
            })
        });
    let applying: Vec<bool> = report
        .publish
        .iter()
        .map(|e| e.state == PublishState::WouldPublish)
        .collect();
    let failed = match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(Ok(done))) => {
            report.publish = done.publish;
            let count = |s: PublishState| report.publish.iter().filter(|e| e.state == s).count();
            let published = count(PublishState::Published);
            let withheld: Vec<&str> = report
                .publish
                .iter()
                .zip(&applying)
                .filter(|(e, was)| **was && e.state == PublishState::Withheld)
                .map(|(e, _)| e.reason.as_str())
                .collect();
            let text = format!(
                "{published} of {} publish request(s) published",
                report.publish.len()
            );
            return Some(match withheld.first() {
                None => Notice::Done(text),
                Some(why) => Notice::Failed(format!(
                    "{text}; {} could not be applied: {why}",
                    withheld.len()
                )),
            });
        }
        Ok(Ok(Err(e))) => e.to_string(),
        Ok(Err(_)) => GithubError::Crashed.to_string(),
        Err(e) => GithubError::Thread(e).to_string(),
    };
    // Nothing is known of what was applied: no row may still claim it would be.
    for (e, was) in report.publish.iter_mut().zip(&applying) {
        if *was {
            e.state = PublishState::Withheld;
            e.reason = format!(
                "not known to be applied: {failed}{}",
                if e.kind == "pull_request" {
                    " (its branch may have been pushed)"
                } else {
                    ""
                }
            );
        }
    }
    Some(Notice::Failed(failed))
}

/// Find the item whose body starts with `mark` among the pages of `route`.
async fn find(
    crab: &Octocrab,
    route: &str,
    params: &[(&str, &str)],
    mark: &str,
) -> Result<Option<Item>, GithubError> {
    let mut page: octocrab::Page<Item> = crab
        .get(route, Some(params))
        .await
        .map_err(GithubError::Api)?;
    for _ in 0..MAX_PAGES {
        if let Some(i) = page
            .items
            .drain(..)
            .find(|c| c.body.as_deref().is_some_and(|b| b.starts_with(mark)))
        {
            return Ok(Some(i));
        }
        match crab
            .get_page::<Item>(&page.next)
            .await
            .map_err(GithubError::Api)?
        {
            Some(next) => page = next,
            None => break,
        }
    }
    Ok(None)
}

/// Apply every row the gates passed; rows are updated in place. `remote`:
/// where pull requests are pushed (or why they cannot be).
pub(super) async fn apply(
    crab: &Octocrab,
    ctx: &Context,
    remote: Result<&Remote, &str>,
    report: &mut Report,
) {
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
        let before = e.reason.clone();
        match one(crab, ctx, remote, &snapshot, e, &req).await {
            Ok(Some(done)) => {
                e.state = PublishState::Published;
                if e.reason == before {
                    e.reason = "published".to_owned();
                }
                e.url = done.url;
                e.number = done.number;
            }
            Ok(None) => {}
            Err(why) => {
                e.state = PublishState::Withheld;
                e.reason = format!("GitHub: {why}");
            }
        }
    }
}

fn pr(ctx: &Context) -> Result<u64, String> {
    ctx.pr
        .ok_or_else(|| "not a pull request: there is nothing to comment on, label or review".into())
}

/// One row. Ok(None): left as it is.
async fn one(
    crab: &Octocrab,
    ctx: &Context,
    remote: Result<&Remote, &str>,
    report: &Report,
    e: &mut PublishEntry,
    req: &Request,
) -> Result<Option<Done>, String> {
    let repo = format!("/repos/{}/{}", ctx.owner, ctx.repo);
    let err = |e: GithubError| e.to_string();
    match req {
        Request::Comment { body: text } => {
            let n = pr(ctx)?;
            let mark = body::kind_marker(report, "comment", e.name.as_deref().unwrap_or("comment"));
            let list = format!("{repo}/issues/{n}/comments");
            let payload = json!({ "body": format!("{mark}\n{text}") });
            let item: Item = match find(crab, &list, &[("per_page", "100")], &mark)
                .await
                .map_err(err)?
            {
                Some(old) => patch(crab, format!("{repo}/issues/comments/{}", old.id), payload)
                    .await
                    .map_err(err)?,
                None => post(crab, list, payload).await.map_err(err)?,
            };
            Ok(Some(Done {
                url: item.html_url,
                number: Some(item.id),
            }))
        }
        Request::Labels { labels } => {
            let n = pr(ctx)?;
            let _: Value = post(
                crab,
                format!("{repo}/issues/{n}/labels"),
                json!({ "labels": labels }),
            )
            .await
            .map_err(err)?;
            Ok(Some(Done {
                url: None,
                number: Some(n),
            }))
        }
        Request::Issue { title, body: text } => {
            let mark =
                body::kind_marker(report, "issue", &crate::publish::marker::title_key(title));
            let mut text = text.clone().unwrap_or_default();
            if e.from.as_deref() == Some("pull_request") {
                text = pull::with_patch(remote?, report, e, title, &text).await?;
            }
            let payload = json!({
                "title": title,
                "body": format!("{mark}\n{text}"),
                "labels": e.labels,
            });
            let list = format!("{repo}/issues");
            let params = [("per_page", "100"), ("state", "open")];
            let item: Item = match find(crab, &list, &params, &mark).await.map_err(err)? {
                Some(old) => {
                    let n = old.number.unwrap_or(old.id);
                    patch(crab, format!("{repo}/issues/{n}"), payload)
                        .await
                        .map_err(err)?
                }
                None => post(crab, format!("{repo}/issues"), payload)
                    .await
                    .map_err(err)?,
            };
            Ok(Some(Done {
                url: item.html_url,
                number: item.number,
            }))
        }
        Request::Review {
            verdict,
            body: text,
            comments,
        } => review(crab, ctx, &repo, *verdict, text.as_deref(), comments)
            .await
            .map(Some),
        Request::CheckRun { title, summary } => check_run(
            crab,
            ctx,
            &repo,
            report,
            e,
            title.as_deref(),
            summary.as_deref(),
        )
        .await
        .map(Some),
        Request::PullRequest { title, body: text } => {
            pull::open(crab, ctx, remote?, report, e, (title, text.as_deref()))
                .await
                .map(Some)
        }
    }
}

/// A review with its verdict and inline comments, on the pull request's head.
async fn review(
    crab: &Octocrab,
    ctx: &Context,
    repo: &str,
    verdict: Verdict,
    text: Option<&str>,
    comments: &[crate::model::publish::InlineComment],
) -> Result<Done, String> {
    let n = pr(ctx)?;
    let event = match verdict {
        Verdict::Approve => "APPROVE",
        Verdict::RequestChanges => "REQUEST_CHANGES",
        Verdict::Comment => "COMMENT",
    };
    let inline: Vec<Value> = comments
        .iter()
        .map(|c| json!({"path": c.path, "line": c.line, "side": "RIGHT", "body": c.body}))
        .collect();
    let mut payload = json!({
        "event": event,
        "body": text.unwrap_or(""),
        "comments": inline,
    });
    if let Some(sha) = &ctx.sha {
        payload["commit_id"] = json!(sha);
    }
    let item: Item = post(crab, format!("{repo}/pulls/{n}/reviews"), payload)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Done {
        url: item.html_url,
        number: Some(item.id),
    })
}

/// A completed check run on the commit, named by the declaration.
async fn check_run(
    crab: &Octocrab,
    ctx: &Context,
    repo: &str,
    report: &Report,
    e: &PublishEntry,
    title: Option<&str>,
    summary: Option<&str>,
) -> Result<Done, String> {
    let sha = ctx
        .sha
        .as_deref()
        .ok_or("no commit (GITHUB_SHA) to attach a check run to")?;
    let conclusion = body::conclusion(
        report.status,
        report.dry_run,
        report.conclusion() == crate::model::Conclusion::Partial,
    );
    let payload = json!({
        "name": e.name.clone().unwrap_or_else(|| body::check_name(report)),
        "head_sha": sha,
        "status": "completed",
        "conclusion": conclusion,
        "output": {
            "title": title.map_or_else(|| body::check_title(report), str::to_owned),
            "summary": summary.map_or_else(|| body::check_summary(report, ctx.run_url.as_deref()), str::to_owned),
        },
    });
    let item: Item = post(crab, format!("{repo}/check-runs"), payload)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Done {
        url: item.html_url,
        number: Some(item.id),
    })
}
