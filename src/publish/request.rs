//! The requests a step wrote to `$PLANGATE_REQUESTS`: one JSON object per
//! line, parsed into [`Request`] (unknown fields refused) and checked against
//! the plan's `publish:` block. Fail-closed: one bad line and the step fails,
//! with every problem named by line.

use std::collections::BTreeMap;

use crate::model::publish::{PublishBlock, Request};

/// The file name, in the step's artifact folder.
pub(crate) const FILE_NAME: &str = "requests.jsonl";
/// A requests file larger than this is refused unread.
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Most requests one step may write.
pub(crate) const MAX_REQUESTS: usize = 50;
/// Longest title.
pub(crate) const MAX_TITLE: usize = 256;
/// Longest body (GitHub's limit is 65536 characters).
pub(crate) const MAX_BODY: usize = 60_000;

/// Parse and check a step's requests. `text` is the whole file. Err: every
/// problem, one line each, naming the line.
pub(crate) fn parse(text: &[u8], decl: &PublishBlock) -> Result<Vec<Request>, Vec<String>> {
    let text = std::str::from_utf8(text).map_err(|e| {
        vec![format!(
            "$PLANGATE_REQUESTS is not UTF-8 (byte {})",
            e.valid_up_to()
        )]
    })?;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut counts: BTreeMap<&'static str, u32> = BTreeMap::new();
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let req: Request = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) if i == last && e.is_eof() => {
                errors.push(format!(
                    "line {n}: cut short (no newline at its end and incomplete JSON); write each request as one whole line"
                ));
                continue;
            }
            Err(e) => {
                errors.push(format!("line {n}: not a valid request: {e}"));
                continue;
            }
        };
        if out.len() >= MAX_REQUESTS {
            errors.push(format!(
                "line {n}: more than {MAX_REQUESTS} requests from one step"
            ));
            break;
        }
        let count = counts.entry(req.kind()).or_default();
        *count += 1;
        for why in check(&req, decl, *count) {
            errors.push(format!("line {n}: {why}"));
        }
        out.push(req);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn title_ok(kind: &str, title: &str, prefix: Option<&str>, out: &mut Vec<String>) {
    if title.trim().is_empty() {
        out.push("the title is empty".into());
    }
    if title.chars().count() > MAX_TITLE || title.contains(['\n', '\r']) {
        out.push(format!(
            "the title must be one line of at most {MAX_TITLE} characters"
        ));
    }
    if let Some(p) = prefix
        && !title.starts_with(p)
    {
        out.push(format!("the title must start with `{p}` (title_prefix)"));
    }
    if let Some(why) = title_problem(title) {
        out.push(format!("the `{kind}` title {why}"));
    }
}

/// A character no title may hold: a control character (a newline, a tab, an
/// escape, C1 controls), the Unicode line and paragraph separators, and the
/// bidirectional marks, embeddings, overrides and isolates (text shown in
/// another order than it is stored).
pub(crate) fn bad_title_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{feff}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Why a title (the first line of the commit message plangate writes, on
/// both forges) cannot be one: a character [`bad_title_char`] names, the
/// shape of a git trailer that names a person or a change
/// (`Signed-off-by:`, `Co-authored-by:`, any `…-by:`, `Change-Id:`), or
/// plangate's own `Committed by plangate` line. None: it can.
pub(crate) fn title_problem(title: &str) -> Option<String> {
    if let Some((i, c)) = title.chars().enumerate().find(|(_, c)| bad_title_char(*c)) {
        return Some(format!(
            "holds the control or layout character U+{:04X} at character {}: a title is one line of plain text",
            u32::from(c),
            i + 1
        ));
    }
    let lower = title.to_lowercase();
    if lower.contains("committed by plangate") {
        return Some(
            "contains `Committed by plangate`: that line is plangate's own, in every commit it makes"
                .into(),
        );
    }
    if let Some((key, _)) = title.trim_start().split_once(':') {
        let key = key.trim_end().to_ascii_lowercase();
        let token = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if token && (key.ends_with("-by") || key == "change-id") {
            return Some(format!(
                "starts like the git trailer `{key}:`; a title cannot name an author, a sign-off or a change id"
            ));
        }
    }
    None
}

fn body_ok(body: Option<&str>, out: &mut Vec<String>) {
    if body.is_some_and(|b| b.chars().count() > MAX_BODY) {
        out.push(format!("the body is longer than {MAX_BODY} characters"));
    }
}

fn over(kind: &str, count: u32, max: u32, out: &mut Vec<String>) {
    if count > max {
        out.push(format!(
            "more than {max} `{kind}` request(s) (publish.{kind}.max)"
        ));
    }
}

/// Why `req` (the `count`th of its kind in this step) is refused by `decl`.
pub(crate) fn check(req: &Request, decl: &PublishBlock, count: u32) -> Vec<String> {
    let mut out = Vec::new();
    let undeclared = || {
        vec![format!(
            "`{}` is not declared under `publish:` in the plan; nothing undeclared can be published",
            req.kind()
        )]
    };
    match req {
        Request::PullRequest { title, body } => {
            let Some(d) = &decl.pull_request else {
                return undeclared();
            };
            over("pull_request", count, d.max, &mut out);
            title_ok(req.kind(), title, d.title_prefix.as_deref(), &mut out);
            body_ok(body.as_deref(), &mut out);
        }
        Request::Review {
            verdict,
            body,
            comments,
        } => {
            let Some(d) = &decl.review else {
                return undeclared();
            };
            over("review", count, 1, &mut out);
            if !d.verdict.contains(verdict) {
                let allowed: Vec<&str> = d.verdict.iter().map(|v| v.as_str()).collect();
                out.push(format!(
                    "verdict `{}` is not allowed (publish.review.verdict: {})",
                    verdict.as_str(),
                    allowed.join(", ")
                ));
            }
            if comments.len() > usize::try_from(d.max_comments).unwrap_or(usize::MAX) {
                out.push(format!(
                    "{} inline comments, more than publish.review.max_comments {}",
                    comments.len(),
                    d.max_comments
                ));
            }
            body_ok(body.as_deref(), &mut out);
            for c in comments {
                if c.line == 0 {
                    out.push(format!(
                        "inline comment on `{}`: lines count from 1",
                        c.path
                    ));
                }
                if let Err(why) = super::patch::normalise(&c.path) {
                    out.push(format!("inline comment: {why}"));
                }
                body_ok(Some(&c.body), &mut out);
            }
        }
        Request::Comment { body } => {
            let Some(d) = &decl.comment else {
                return undeclared();
            };
            over("comment", count, d.max, &mut out);
            if body.trim().is_empty() {
                out.push("the comment is empty".into());
            }
            body_ok(Some(body), &mut out);
        }
        Request::Labels { labels } => {
            let Some(d) = &decl.labels else {
                return undeclared();
            };
            if labels.is_empty() {
                out.push("no labels given".into());
            }
            for l in labels {
                if !d.allowed.contains(l) {
                    out.push(format!(
                        "label `{l}` is not allowed (publish.labels.allowed: {})",
                        d.allowed.join(", ")
                    ));
                }
            }
        }
        Request::Issue { title, body } => {
            let Some(d) = &decl.issue else {
                return undeclared();
            };
            over("issue", count, d.max, &mut out);
            title_ok(req.kind(), title, d.title_prefix.as_deref(), &mut out);
            body_ok(body.as_deref(), &mut out);
        }
        Request::CheckRun { title, summary } => {
            if decl.check_run.is_none() {
                return undeclared();
            }
            over("check_run", count, 1, &mut out);
            if let Some(t) = title {
                title_ok(req.kind(), t, None, &mut out);
            }
            body_ok(summary.as_deref(), &mut out);
        }
    }
    out
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
