//! What plangate sends to GitHub, pure: the comment's body (its marker is
//! `publish::marker`, shared with GitLab), the check run's name, conclusion, title and summary. Every text is built from
//! the report's compact Markdown (`report::render`), passed through the
//! redaction layer piece by piece and then cut by section under GitHub's
//! limits.

use serde::Serialize;

use crate::model::Report;
use crate::model::RunStatus;
use crate::model::publish::PublishEntry;
pub(crate) use crate::publish::marker::{kind_marker, marker, plan_key};
use crate::redact;
use crate::report::render::{self, Detail};

/// GitHub refuses comment bodies over 65,536 characters; stay under it (in
/// bytes, which are never fewer than characters).
pub(crate) const COMMENT_MAX: usize = 65_000;
/// A check run's `output.summary` is limited to 65,535 characters.
pub(crate) const SUMMARY_MAX: usize = 65_000;

/// A check run's conclusion (the API's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Conclusion {
    /// Every step that was meant to run succeeded.
    Success,
    /// A step failed, an answer was rejected, a secret was found, the budget
    /// ran out, or the plan was invalid.
    Failure,
    /// A dry run (nothing was executed), or a partial success (exit 0, but a
    /// step was skipped for want of approval or failed under `continue_on_error`).
    Neutral,
    /// A step needed an approval (someone must approve it and re-run).
    ActionRequired,
    /// The run was interrupted.
    Cancelled,
}

impl Conclusion {
    /// The API's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Failure => "failure",
            Conclusion::Neutral => "neutral",
            Conclusion::ActionRequired => "action_required",
            Conclusion::Cancelled => "cancelled",
        }
    }
}

/// The check run's conclusion for a run's outcome (`partial`: the report's
/// conclusion is `partial`).
pub(crate) fn conclusion(status: RunStatus, dry_run: bool, partial: bool) -> Conclusion {
    match status {
        RunStatus::Success if dry_run || partial => Conclusion::Neutral,
        RunStatus::Success => Conclusion::Success,
        RunStatus::Failed
        | RunStatus::Invalid
        | RunStatus::SecretsFound
        | RunStatus::Rejected
        | RunStatus::BudgetExhausted => Conclusion::Failure,
        RunStatus::Denied => Conclusion::ActionRequired,
        RunStatus::Interrupted => Conclusion::Cancelled,
    }
}

/// The check run's name.
pub(crate) fn check_name(r: &Report) -> String {
    format!("plangate / {}", plan_key(r))
}

/// The compact summary, redacted, cut by section under `max` bytes. A run
/// that found a secret (its effects withheld) gets the withheld form: counts
/// and the verdict, nothing from a step's free text, output or diff.
fn summary(r: &Report, details: Option<&str>, max: usize) -> String {
    let detail = if r.findings.is_empty() {
        Detail::Compact
    } else {
        Detail::Withheld
    };
    let sections: Vec<_> = render::sections(r, detail, details)
        .into_iter()
        .map(|s| s.map_text(|t| redact::clean_str(t).into_owned()))
        .collect();
    render::fit(&sections, max)
}

/// The pull-request comment: the marker on the first line, then the summary.
pub(crate) fn comment(r: &Report, details: Option<&str>) -> String {
    let marker = marker(r);
    let text = summary(r, details, COMMENT_MAX - marker.len() - 1);
    format!("{marker}\n{text}")
}

/// The head of a proposed change's body (before [`with_summary`]): the
/// marker line, the requested text and, for a draft the patch policy asked
/// for, why, with the reviewers asked (`ask`: "Review requested from").
pub(crate) fn proposal_head(mark: &str, text: Option<&str>, e: &PublishEntry, ask: &str) -> String {
    let mut head = format!("{mark}\n{}", text.unwrap_or(""));
    if let (true, Some(why)) = (e.draft, e.policy.as_deref()) {
        head.push_str(&format!(
            "\n\n> **Opened as a draft for review**: the patch policy found: {why}."
        ));
        if !e.reviewers.is_empty() {
            let who: Vec<String> = e.reviewers.iter().map(|r| format!("@{r}")).collect();
            head.push_str(&format!(" {ask} {}.", who.join(", ")));
        }
    }
    head
}

/// A pull request's or issue's body: `head` (the marker line and the
/// requested text, redacted, cut to half the limit), then the run summary
/// in what is left of GitHub's limit.
pub(crate) fn with_summary(r: &Report, details: Option<&str>, head: &str) -> String {
    let mut head = redact::clean_str(head).into_owned();
    if head.len() > COMMENT_MAX / 2 {
        let mut end = COMMENT_MAX / 2;
        while !head.is_char_boundary(end) {
            end -= 1;
        }
        head.truncate(end);
        head.push('…');
    }
    let text = summary(r, details, COMMENT_MAX.saturating_sub(head.len() + 2));
    format!("{head}\n\n{text}")
}

/// `text` in a fenced code block of `lang` whose fence no line of it can close.
pub(crate) fn fenced(lang: &str, text: &str) -> String {
    let longest = text
        .lines()
        .map(|l| l.trim_start().chars().take_while(|c| *c == '`').count())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}", text.trim_end_matches('\n'))
}

/// The check run's `output.title`.
pub(crate) fn check_title(r: &Report) -> String {
    let failed = r.steps.iter().filter(|s| s.status.is_failure()).count();
    let outcome = match r.conclusion() {
        crate::model::Conclusion::Partial => "partial success",
        _ => r.status.as_str(),
    };
    let mut t = format!("{outcome} (exit {})", r.exit_code);
    if !r.steps.is_empty() {
        t.push_str(&format!(": {} step(s), {failed} failed", r.steps.len()));
    }
    if !r.findings.is_empty() {
        t.push_str(&format!(", {} secret(s) found", r.findings.len()));
    }
    t
}

/// The check run's `output.summary`.
pub(crate) fn check_summary(r: &Report, details: Option<&str>) -> String {
    summary(r, details, SUMMARY_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proposals_head_says_why_it_is_a_draft_and_who_is_asked() {
        let mut e: PublishEntry = serde_json::from_value(serde_json::json!({
            "kind": "pull_request", "state": "would_publish", "reason": "", "draft": true,
            "policy": "`ci.yml` is CI configuration", "reviewers": ["ann", "bo"]
        }))
        .unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(
            proposal_head("<!-- m -->", Some("Fixed."), &e, "Review asked of"),
            "<!-- m -->\nFixed.\n\n> **Opened as a draft for review**: the patch policy found: `ci.yml` is CI configuration. Review asked of @ann, @bo."
        );
        e.reviewers.clear();
        assert!(proposal_head("m", None, &e, "Review asked of").ends_with("configuration."));
        e.draft = false;
        assert_eq!(proposal_head("m", None, &e, "Review asked of"), "m\n");
    }

    #[test]
    fn every_outcome_has_a_conclusion() {
        let cases = [
            (RunStatus::Success, "success"),
            (RunStatus::Failed, "failure"),
            (RunStatus::Invalid, "failure"),
            (RunStatus::SecretsFound, "failure"),
            (RunStatus::Rejected, "failure"),
            (RunStatus::BudgetExhausted, "failure"),
            (RunStatus::Denied, "action_required"),
            (RunStatus::Interrupted, "cancelled"),
        ];
        for (status, want) in cases {
            assert_eq!(
                conclusion(status, false, false).as_str(),
                want,
                "{status:?}"
            );
            let json = serde_json::to_value(conclusion(status, false, false))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(json, want);
        }
        assert_eq!(
            conclusion(RunStatus::Success, true, false),
            Conclusion::Neutral
        );
        assert_eq!(
            conclusion(RunStatus::Success, false, true),
            Conclusion::Neutral,
            "a partial success"
        );
        assert_eq!(
            conclusion(RunStatus::Denied, true, true),
            Conclusion::ActionRequired
        );
    }

    fn report(id: Option<&str>) -> Report {
        let v = serde_json::json!({
            "schema_version": 1, "plangate_version": "0", "run_id": "r", "in_progress": false,
            "plan": {"id": id, "path": "p.yaml", "sha256": null},
            "status": "success", "exit_code": 0, "started_at": "", "finished_at": null,
            "duration_ms": 0, "dry_run": false, "workspace": "/w", "policy": null,
            "approvals": [], "steps": [], "findings": [], "diff": null,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "estimated": false}
        });
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_marker_cannot_be_broken_by_the_plan_id() {
        assert_eq!(
            marker(&report(Some("nightly-fix_1.2"))),
            "<!-- plangate:nightly-fix_1.2 -->"
        );
        assert_eq!(
            marker(&report(Some("a --> b\n"))),
            "<!-- plangate:a_--__b_ -->"
        );
        assert_eq!(
            marker(&report(None)),
            "<!-- plangate:p -->",
            "the file's stem"
        );
        assert_eq!(check_name(&report(Some("x y"))), "plangate / x_y");
        let long = "a".repeat(500);
        assert_eq!(plan_key(&report(Some(&long))).len(), 100);
    }

    /// A failed step whose error holds a value the redaction layer knows,
    /// with the run's details long enough to be cut.
    fn report_with_secret_errors(secret: &str, steps: usize) -> Report {
        let mut r = report(Some("p"));
        let mut v = serde_json::to_value(&r).unwrap_or_else(|e| panic!("{e}"));
        v["status"] = "failed".into();
        v["exit_code"] = 1.into();
        let step = |i: usize| {
            serde_json::json!({
                "id": format!("s{i}"), "tool": "bash", "status": "failed",
                "risk": {"declared": "safe", "classified": "safe", "effective": "safe"},
                "approval": {"decision": "auto_approved", "reason": "safe"},
                "dependencies": [], "exit_code": 1, "started_at": null, "finished_at": null,
                "duration_ms": 1, "attempts": 1, "artifacts": [], "truncated": false,
                "output_bytes": 0,
                "error": format!("{} exited 1: token {secret} refused", "x".repeat(i % 7)),
            })
        };
        v["steps"] = (0..steps).map(step).collect::<Vec<_>>().into();
        r = serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"));
        r
    }

    #[test]
    fn the_summary_is_redacted_before_it_is_cut_to_its_limit() {
        // Known to the redaction layer (as a declared secret's value is);
        // its replacement is longer than it, so redacting after cutting
        // would break the limit, and cutting before redacting could leave
        // a piece of it that no longer matches.
        let secret = "pg7Kq2Lx";
        crate::redact::remember_secrets([secret]);
        let r = report_with_secret_errors(secret, 300);
        for max in (300..4_000).step_by(7).chain([10_000, 65_000]) {
            let out = summary(&r, None, max);
            assert!(out.len() <= max, "{max}: {} bytes", out.len());
            for piece in secret.as_bytes().windows(6) {
                let piece = std::str::from_utf8(piece).unwrap_or_default();
                assert!(!out.contains(piece), "{max}: `{piece}` left in the summary");
            }
        }
        // Not vacuous: the rows are there, redacted.
        let all = summary(&r, None, 1_000_000);
        assert!(
            all.contains("`s19`") && all.contains("token [REDACTED] refused"),
            "{all}"
        );
    }

    #[test]
    fn the_comment_starts_with_the_marker() {
        let body = comment(&report(Some("p")), Some("https://example.test/run/1"));
        assert!(
            body.starts_with("<!-- plangate:p -->\n## ✅ plangate: `p`"),
            "{body}"
        );
        assert!(body.contains("(https://example.test/run/1)"), "{body}");
        assert!(body.len() <= COMMENT_MAX);
    }
}
