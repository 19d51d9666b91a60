//! Render a saved report again: Markdown (step summary, PR comment), JUnit
//! XML (GitLab `reports: junit`), SARIF 2.1.0 (findings) and JSON. Every
//! renderer reads only the report, which holds no secret value; the caller
//! still writes the result through the redaction layer.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::model::Report;
use crate::engine::events::StepStatus;

/// Escape a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// GitHub-flavoured Markdown: outcome, steps, findings, changes, usage.
pub fn markdown(r: &Report) -> String {
    let mut md = String::new();
    let icon = if r.exit_code == 0 { "✅" } else { "❌" };
    let _ = writeln!(
        md,
        "## {icon} plangate: `{}` — {} (exit {})\n",
        cell(r.plan.id.as_deref().unwrap_or("?")),
        r.status.as_str(),
        r.exit_code
    );
    let _ = writeln!(
        md,
        "Run `{}`, {:.1} s.\n",
        r.run_id,
        r.duration_ms as f64 / 1000.0
    );
    if !r.errors.is_empty() {
        md.push_str("### Plan problems\n\n");
        for e in &r.errors {
            let _ = writeln!(
                md,
                "- `{}:{}:{}` {}",
                cell(&e.file),
                e.line,
                e.column,
                cell(&e.message)
            );
        }
        md.push('\n');
    }
    if !r.steps.is_empty() {
        md.push_str("| step | tool | status | risk | decision | time | note |\n| --- | --- | --- | --- | --- | ---: | --- |\n");
        for s in &r.steps {
            let risk = s
                .risk
                .map_or_else(|| "-".to_owned(), |k| k.effective.as_str().to_owned());
            let decision = s.approval.as_ref().map_or("-", |a| a.decision.as_str());
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {risk} | {decision} | {:.2} s | {} |",
                cell(&s.id),
                s.tool,
                s.status.as_str(),
                s.duration_ms as f64 / 1000.0,
                cell(s.error.as_deref().unwrap_or(""))
            );
        }
        md.push('\n');
    }
    if !r.findings.is_empty() {
        let _ = writeln!(
            md,
            "### 🔑 {} secret(s) found (values redacted)\n",
            r.findings.len()
        );
        md.push_str("| rule | location | line | fingerprint |\n| --- | --- | ---: | --- |\n");
        for f in &r.findings {
            let _ = writeln!(
                md,
                "| {} | `{}` | {} | `{}` |",
                cell(&f.rule),
                cell(&f.location),
                f.line,
                f.fingerprint
            );
        }
        md.push('\n');
    }
    if let Some(d) = &r.diff {
        let _ = writeln!(
            md,
            "### Changes\n\n{} file(s) changed, +{} -{}\n",
            d["files_changed"], d["insertions"], d["deletions"]
        );
        for f in d["files"].as_array().into_iter().flatten().take(100) {
            let from = f["old_path"]
                .as_str()
                .map(|old| format!("`{}` → ", cell(old)))
                .unwrap_or_default();
            let _ = writeln!(
                md,
                "- {from}`{}` {} (+{} -{})",
                cell(f["path"].as_str().unwrap_or("")),
                f["change"].as_str().unwrap_or(""),
                f["insertions"],
                f["deletions"]
            );
        }
        md.push('\n');
    }
    if r.usage.tokens() > 0 {
        let _ = writeln!(
            md,
            "Agent usage: {} input + {} output tokens{}, ${:.4}.",
            r.usage.input_tokens,
            r.usage.output_tokens,
            if r.usage.estimated {
                " (partly estimated)"
            } else {
                ""
            },
            r.usage.cost_usd
        );
    }
    md
}

/// Escape XML text and attributes.
fn xml(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one test case per step; failures, rejections and findings as `<failure>`.
pub fn junit(r: &Report) -> String {
    let failed = |s: StepStatus| {
        matches!(
            s,
            StepStatus::Failed
                | StepStatus::TimedOut
                | StepStatus::Rejected
                | StepStatus::Denied
                | StepStatus::Blocked
        )
    };
    let failures = r.steps.iter().filter(|s| failed(s.status)).count()
        + usize::from(!r.findings.is_empty())
        + usize::from(!r.errors.is_empty());
    let skipped = r
        .steps
        .iter()
        .filter(|s| matches!(s.status, StepStatus::Skipped | StepStatus::NotRun))
        .count();
    let tests =
        r.steps.len() + usize::from(!r.findings.is_empty()) + usize::from(!r.errors.is_empty());
    let name = xml(r.plan.id.as_deref().unwrap_or("plan"));
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"plangate\" tests=\"{tests}\" failures=\"{failures}\" time=\"{:.3}\">",
        r.duration_ms as f64 / 1000.0
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{:.3}\" timestamp=\"{}\">",
        r.duration_ms as f64 / 1000.0,
        xml(&r.started_at)
    );
    for s in &r.steps {
        let _ = write!(
            out,
            "    <testcase classname=\"{name}\" name=\"{}\" time=\"{:.3}\"",
            xml(&s.id),
            s.duration_ms as f64 / 1000.0
        );
        let msg: String = s
            .error
            .as_deref()
            .unwrap_or(s.status.as_str())
            .chars()
            .take(500)
            .collect();
        if failed(s.status) {
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                xml(&msg),
                s.status.as_str(),
                xml(&msg)
            );
        } else if matches!(s.status, StepStatus::Skipped | StepStatus::NotRun) {
            let _ = writeln!(
                out,
                ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                xml(&msg)
            );
        } else {
            out.push_str("/>\n");
        }
    }
    if !r.findings.is_empty() {
        let list: Vec<String> = r
            .findings
            .iter()
            .map(|f| format!("{} at {}:{}", f.rule, f.location, f.line))
            .collect();
        let _ = writeln!(
            out,
            "    <testcase classname=\"{name}\" name=\"secrets\">\n      <failure message=\"{} secret(s) found\" type=\"secrets_found\">{}</failure>\n    </testcase>",
            r.findings.len(),
            xml(&list.join("\n"))
        );
    }
    if !r.errors.is_empty() {
        let list: Vec<String> = r
            .errors
            .iter()
            .map(|e| format!("{}:{}:{}: {}", e.file, e.line, e.column, e.message))
            .collect();
        let _ = writeln!(
            out,
            "    <testcase classname=\"{name}\" name=\"plan\">\n      <failure message=\"invalid plan\" type=\"invalid\">{}</failure>\n    </testcase>",
            xml(&list.join("\n"))
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// SARIF 2.1.0 of the report's findings.
pub fn sarif(r: &Report) -> Value {
    let rules = crate::secrets::Ruleset::builtin();
    let findings: Vec<crate::scan::FileFinding> = r
        .findings
        .iter()
        .map(|f| crate::scan::FileFinding {
            file: f.location.trim_start_matches("workspace:").to_owned(),
            line: usize::try_from(f.line).unwrap_or(0),
            column: 1,
            description: rules.describe(&f.rule).unwrap_or(&f.rule).to_owned(),
            rule: f.rule.clone(),
            confidence: 1.0,
            fingerprint: f.fingerprint.clone(),
            redacted: false,
        })
        .collect();
    crate::scan::to_sarif(&rules, &findings)
}

/// The report as JSON (re-serialised: a check that it reads back).
pub fn json(r: &Report) -> Value {
    serde_json::to_value(r).unwrap_or_else(|_| json!({}))
}
