//! CI integrations that run after the report is final. Under GitHub Actions
//! (`GITHUB_ACTIONS=true`): the Markdown summary is appended to
//! `$GITHUB_STEP_SUMMARY` (redacted, then cut by section under GitHub's
//! 1 MiB limit), the outputs `status`, `exit-code`, `conclusion`
//! (`success | partial | failure`), `partial` (`true | false`), `report`, `out-dir`,
//! `diff-summary`, `findings` and `cost-usd` are written to `$GITHUB_OUTPUT`
//! with random heredoc delimiters, and, with a token, the pull-request
//! comment and the check run are published (`github`). Under GitLab CI
//! (`GITLAB_CI=true`) the same report goes to GitLab (`gitlab`): the
//! `publish:` requests, the merge-request note and a commit status. Everything goes
//! through the redaction layer. Nothing here changes the run's outcome: a
//! failure is a notice for a warning.

use std::io::Write;
use std::path::Path;

use crate::github::{self, Notice};
use crate::gitlab;
use crate::model::Report;
use crate::redact;
use crate::report::render;

/// GitHub's step-summary limit is 1 MiB; stay under it.
pub(crate) const STEP_SUMMARY_MAX: usize = 1000 * 1024;

/// A saved report that cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadReportError {
    /// The file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a report.json.
    #[error("{} is not a plangate report: {source}", path.display())]
    Parse {
        path: std::path::PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Read a saved report.
pub(crate) fn read_report(path: &Path) -> Result<Report, ReadReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadReportError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ReadReportError::Parse {
        path: path.to_owned(),
        source,
    })
}

/// The step summary: the full Markdown, each piece redacted, cut by section.
pub(crate) fn step_summary(report: &Report) -> String {
    let sections: Vec<_> = render::sections(report, render::Detail::Full, None)
        .into_iter()
        .map(|s| s.map_text(|t| redact::clean_str(t).into_owned()))
        .collect();
    render::fit(&sections, STEP_SUMMARY_MAX)
}

/// Publish a finished run where the CI system expects it. Returns what
/// happened (`target`, notice); failures are for warnings.
/// The forge is GitHub under GitHub Actions (`GITHUB_ACTIONS=true`), else
/// GitLab under GitLab CI (`GITLAB_CI=true`) or when a GitLab token was
/// given explicitly (`--gitlab-token`); elsewhere nothing is published.
pub(crate) fn publish(
    out_dir: &Path,
    gh: &github::Settings,
    gl: &gitlab::Settings,
) -> Vec<(&'static str, Notice)> {
    let on = |k: &str| crate::environ::var(k).as_deref() == Some("true");
    if on("GITHUB_ACTIONS") {
        publish_github(out_dir, gh)
    } else if on("GITLAB_CI") || gl.explicit {
        publish_gitlab(out_dir, gl)
    } else {
        Vec::new()
    }
}

/// GitLab: the requests the gates passed, then the run-summary note and the commit status.
fn publish_gitlab(out_dir: &Path, gl: &gitlab::Settings) -> Vec<(&'static str, Notice)> {
    let path = out_dir.join("report.json");
    let mut report = match read_report(&path) {
        Ok(r) => r,
        Err(e) => return vec![("report", Notice::Failed(e.to_string()))],
    };
    let mut notices = Vec::new();
    if let Some(n) = gitlab::apply_effects(&mut report, gl) {
        if let Err(e) = crate::report::write_json_atomic(&path, &report, true) {
            notices.push(("report", Notice::Failed(e.to_string())));
        }
        notices.push(("gitlab_publish", n));
    }
    notices.extend(gitlab::publish(&report, gl));
    notices
}

fn publish_github(out_dir: &Path, gh: &github::Settings) -> Vec<(&'static str, Notice)> {
    let path = out_dir.join("report.json");
    let mut report = match read_report(&path) {
        Ok(r) => r,
        Err(e) => return vec![("report", Notice::Failed(e.to_string()))],
    };
    let mut notices = Vec::new();
    // The requests the gates passed, applied first: the summary and the
    // outputs below then show what was published.
    if let Some(n) = github::apply_effects(&mut report, gh) {
        if let Err(e) = crate::report::write_json_atomic(&path, &report, true) {
            notices.push(("report", Notice::Failed(e.to_string())));
        }
        notices.push(("publish", n));
    }
    if let Some(summary) = crate::environ::var_os("GITHUB_STEP_SUMMARY")
        && let Err(e) = append(Path::new(&summary), &step_summary(&report))
    {
        notices.push(("step_summary", Notice::Failed(e)));
    }
    if let Some(output) = crate::environ::var_os("GITHUB_OUTPUT") {
        let conclusion = report.conclusion();
        let values = [
            ("status", report.status.as_str().to_owned()),
            ("exit-code", report.exit_code.to_string()),
            ("conclusion", conclusion.as_str().to_owned()),
            (
                "partial",
                (conclusion == crate::model::Conclusion::Partial).to_string(),
            ),
            ("report", path.display().to_string()),
            ("out-dir", out_dir.display().to_string()),
            (
                "diff-summary",
                out_dir.join("diff-summary.md").display().to_string(),
            ),
            ("findings", report.findings.len().to_string()),
            ("cost-usd", format!("{:.6}", report.usage.cost_usd)),
        ];
        let mut body = String::new();
        for (k, v) in values {
            let delim = format!("ghadelimiter_{}", uuid::Uuid::now_v7().simple());
            body.push_str(&format!("{k}<<{delim}\n{v}\n{delim}\n"));
        }
        if let Err(e) = append(Path::new(&output), &body) {
            notices.push(("outputs", Notice::Failed(e)));
        }
    }
    notices.extend(github::publish(&report, gh));
    notices
}

/// Append `text` (redacted) to `path`; the error is the notice's text.
fn append(path: &Path, text: &str) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(&redact::clean(text.as_bytes())))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_summary_is_cut_by_section_under_the_limit() {
        let findings: Vec<_> = (0..20_000)
            .map(|i| {
                serde_json::json!({"rule": "aws-access-key-id", "location": format!("artifacts/s/stdout.txt"),
                    "line": i, "fingerprint": format!("{i:064}")})
            })
            .collect();
        let report: Report = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "plangate_version": "0", "run_id": "r", "in_progress": false,
            "plan": {"id": "big", "path": "p.yaml", "sha256": null},
            "status": "secrets_found", "exit_code": 4, "started_at": "", "finished_at": null,
            "duration_ms": 0, "dry_run": false, "workspace": "/w", "policy": null,
            "approvals": [], "steps": [{"id": "s", "tool": "bash", "status": "success",
                "risk": null, "approval": null, "dependencies": [], "exit_code": 0,
                "started_at": null, "finished_at": null, "duration_ms": 5, "attempts": 1,
                "artifacts": [], "truncated": false, "output_bytes": 0, "error": null}],
            "findings": findings,
            "diff": {"files_changed": 1, "insertions": 1, "deletions": 0,
                     "files": [{"path": "a.txt", "change": "added", "insertions": 1, "deletions": 0}]},
            "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.5}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let full = render::markdown(&report);
        assert!(full.len() > STEP_SUMMARY_MAX);
        let md = step_summary(&report);
        assert!(md.len() <= STEP_SUMMARY_MAX, "{}", md.len());
        assert!(md.starts_with("## ❌ plangate: `big` — secrets_found (exit 4)"));
        assert!(
            md.contains("| `s` | bash | success"),
            "the steps table stays"
        );
        assert!(
            md.contains("### Changes") && md.contains("Agent usage"),
            "later sections keep their place"
        );
        assert!(md.contains("findings (") && md.contains("of 20000 rows shown)"));
        assert!(
            md.trim_end()
                .ends_with("The full report is in `report.json`.*")
        );
    }
}
