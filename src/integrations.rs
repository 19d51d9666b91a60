//! CI integrations that run after the report is final. Under GitHub Actions
//! (`GITHUB_ACTIONS=true`): the Markdown summary is appended to
//! `$GITHUB_STEP_SUMMARY` (cut under GitHub's 1 MiB limit) and the outputs
//! `status`, `exit-code`, `report`, `diff-summary`, `findings` and `cost-usd`
//! are written to `$GITHUB_OUTPUT` with random heredoc delimiters. Everything
//! goes through the redaction layer.

use std::io::Write;
use std::path::Path;

use crate::report::model::Report;
use crate::report::{redact, render};

/// GitHub's step-summary limit is 1 MiB; stay under it.
pub const STEP_SUMMARY_MAX: usize = 1000 * 1024;

/// Publish a finished run where the CI system expects it. Errors are returned as text for a warning.
pub fn publish(out_dir: &Path) -> Result<(), String> {
    if std::env::var("GITHUB_ACTIONS").ok().as_deref() != Some("true") {
        return Ok(());
    }
    let path = out_dir.join("report.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let report: Report =
        serde_json::from_str(&text).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY") {
        let mut md = render::markdown(&report);
        if md.len() > STEP_SUMMARY_MAX {
            let mut cut = STEP_SUMMARY_MAX - 200;
            while !md.is_char_boundary(cut) {
                cut -= 1;
            }
            md.truncate(cut);
            md.push_str(
                "\n\n… (cut at GitHub's step-summary limit; the full report is in report.json)\n",
            );
        }
        append(Path::new(&summary), &md)?;
    }
    if let Some(output) = std::env::var_os("GITHUB_OUTPUT") {
        let values = [
            ("status", report.status.as_str().to_owned()),
            ("exit-code", report.exit_code.to_string()),
            ("report", path.display().to_string()),
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
        append(Path::new(&output), &body)?;
    }
    Ok(())
}

fn append(path: &Path, text: &str) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(&redact::clean(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
