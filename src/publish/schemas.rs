//! The request schemas an agent is shown in its prompt: for each kind the
//! plan's `publish:` block declares (and only those), one example line built
//! as a [`Request`] value and serialised by serde (so its field names are the
//! parser's), and its caps read from the declaration and the gate's run-wide
//! limits. A unit test parses every example back through `request::parse`
//! against the same declaration: the text cannot drift from what is accepted.

use crate::model::publish::{InlineComment, PublishBlock, Request, Verdict};

/// The variable the section names (the engine sets it for every step).
const VAR: &str = "PLANGATE_REQUESTS";

/// One declared kind: an example request that the declaration accepts, and its caps in words.
pub(crate) struct KindSchema {
    /// The kind's name, as in `publish:`.
    pub kind: &'static str,
    /// A request of that kind the declaration accepts.
    pub example: Request,
    /// What the request may hold, one clause each.
    pub caps: Vec<String>,
}

fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn title(prefix: Option<&str>, rest: &str) -> String {
    format!("{}{rest}", prefix.unwrap_or(""))
}

fn title_caps(prefix: Option<&str>, caps: &mut Vec<String>) {
    caps.push(format!(
        "`title`: one line, at most {} characters",
        super::request::MAX_TITLE
    ));
    if let Some(p) = prefix {
        caps.push(format!("the title must start with `{p}`"));
    }
}

fn per_run(decl: &PublishBlock, kind: &str, caps: &mut Vec<String>) {
    caps.push(format!(
        "at most {} per run",
        super::gate::run_max(decl, kind)
    ));
}

/// The declared kinds, in the order of `publish:`'s keys.
pub(crate) fn kinds(decl: &PublishBlock) -> Vec<KindSchema> {
    let body = format!(
        "`body`: Markdown, at most {} characters",
        super::request::MAX_BODY
    );
    let mut out = Vec::new();
    if let Some(d) = &decl.pull_request {
        let mut caps = Vec::new();
        title_caps(d.title_prefix.as_deref(), &mut caps);
        caps.push(format!(
            "{body}, optional (plangate appends the run summary; the pull request carries the run's workspace changes, committed by plangate)"
        ));
        per_run(decl, "pull_request", &mut caps);
        out.push(KindSchema {
            kind: "pull_request",
            example: Request::PullRequest {
                title: title(d.title_prefix.as_deref(), "what the change does"),
                body: Some("why, in a few lines".into()),
            },
            caps,
        });
    }
    if let Some(d) = &decl.review {
        let verdicts: Vec<String> = d.verdict.iter().map(|v| v.as_str().to_owned()).collect();
        let mut caps = vec![
            format!("`verdict`: one of {}", quoted(&verdicts)),
            format!("{body}, optional"),
            format!(
                "`comments`: at most {} inline comments, each on a file of the change (`path` relative to the repository) and a `line` of its new version, counted from 1",
                d.max_comments
            ),
        ];
        per_run(decl, "review", &mut caps);
        out.push(KindSchema {
            kind: "review",
            example: Request::Review {
                verdict: d.verdict.first().copied().unwrap_or(Verdict::Comment),
                body: Some("the review in one paragraph".into()),
                comments: if d.max_comments > 0 {
                    vec![InlineComment {
                        path: "src/file.rs".into(),
                        line: 12,
                        body: "the problem on this line".into(),
                    }]
                } else {
                    Vec::new()
                },
            },
            caps,
        });
    }
    if decl.comment.is_some() {
        let mut caps = vec![format!("{body}, not empty")];
        per_run(decl, "comment", &mut caps);
        out.push(KindSchema {
            kind: "comment",
            example: Request::Comment {
                body: "the comment".into(),
            },
            caps,
        });
    }
    if let Some(d) = &decl.labels {
        let mut caps = vec![format!("`labels`: only {}", quoted(&d.allowed))];
        per_run(decl, "labels", &mut caps);
        out.push(KindSchema {
            kind: "labels",
            example: Request::Labels {
                labels: d.allowed.iter().take(1).cloned().collect(),
            },
            caps,
        });
    }
    if let Some(d) = &decl.issue {
        let mut caps = Vec::new();
        title_caps(d.title_prefix.as_deref(), &mut caps);
        caps.push(format!("{body}, optional"));
        per_run(decl, "issue", &mut caps);
        out.push(KindSchema {
            kind: "issue",
            example: Request::Issue {
                title: title(d.title_prefix.as_deref(), "what is wrong"),
                body: Some("what was found, and where".into()),
            },
            caps,
        });
    }
    if decl.check_run.is_some() {
        let mut caps = vec![
            "`title` (one line) and `summary` (Markdown): optional, the run's own by default"
                .to_owned(),
        ];
        per_run(decl, "check_run", &mut caps);
        out.push(KindSchema {
            kind: "check_run",
            example: Request::CheckRun {
                title: Some("the title of the check".into()),
                summary: Some("the summary of the check".into()),
            },
            caps,
        });
    }
    out
}

/// The prompt section for an agent step of a plan that declares `decl`;
/// None when it declares nothing.
pub(crate) fn prompt_section(decl: &PublishBlock) -> Option<String> {
    let kinds = kinds(decl);
    if kinds.is_empty() {
        return None;
    }
    // Quoted for the shell line it is shown in (a `'` in a declared prefix).
    let first = serde_json::to_string(&kinds[0].example)
        .unwrap_or_default()
        .replace('\'', "'\\''");
    let mut s = format!(
        "--- publishing through plangate ---\n\
         This run may publish only what is listed below; you hold no token and call no API. \
         To ask for an effect, append one JSON object on one line to the file named by the \
         environment variable `{VAR}`, for example:\n\
         printf '%s\\n' '{first}' >> \"${VAR}\"\n\
         Each line is checked when this step ends: a malformed line, an unknown field, a kind \
         not listed here or a request over its caps fails the step. plangate publishes the \
         accepted requests after the run, only if every gate passes.\n"
    );
    for k in &kinds {
        let line = serde_json::to_string(&k.example).unwrap_or_default();
        s.push_str(&format!("\n{}: {line}\n", k.kind));
        for c in &k.caps {
            s.push_str(&format!("  - {c}\n"));
        }
    }
    s.push_str("--- end of publishing ---");
    Some(s)
}

#[cfg(test)]
#[path = "schemas_tests.rs"]
mod tests;
