//! Render a saved report again: Markdown (step summary, PR comment), JUnit
//! XML (GitLab `reports: junit`), SARIF 2.1.0 (findings) and JSON. Every
//! renderer reads only the report, which holds no secret value; the caller
//! still writes the result through the redaction layer.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::model::StepStatus;
use crate::model::{Conclusion, Report};

use crate::markdown::{At, code, html, text};

pub(crate) use super::section::{Section, fit};

/// GitHub-flavoured Markdown: outcome, steps, findings, changes, usage.
pub(crate) fn markdown(r: &Report) -> String {
    sections(r, Detail::Full, None)
        .iter()
        .map(Section::render)
        .collect()
}

/// How much of the report the Markdown shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Everything (step summary, `plangate report`): every step, finding and
    /// up to 100 changed files.
    Full,
    /// A pull-request comment or check run: counts, the steps (only those
    /// that did not succeed when there are many), the first findings and files.
    Compact,
    /// A pull-request comment or check run of a run that found a secret (its
    /// effects are withheld): the compact form with counts and the verdict
    /// only: no output, no agent result, no changed file, no step note
    /// (nothing from a step's free text or the diff).
    Withheld,
}

/// Rows the compact form shows per table.
const COMPACT_ROWS: usize = 20;

/// The sections of the Markdown summary, most important first. `details`
/// is a link to the full run (the workflow run's page), shown in the header.
pub(crate) fn sections(r: &Report, detail: Detail, details: Option<&str>) -> Vec<Section> {
    let mut out = vec![header_section(r, detail, details)];
    out.extend(partial_section(r));
    out.extend(problems_section(r));
    out.extend(steps_section(r, detail));
    out.extend(output_section(r, detail));
    if detail == Detail::Full {
        out.extend(super::mermaid::sections(r));
    }
    out.extend(results_section(r, detail));
    out.extend(findings_section(r, detail));
    out.extend(changes_section(r, detail));
    out.extend(super::publish::section(r));
    out.extend(usage_section(r));
    out
}

/// Status, run id, duration and the link to the full run (always shown).
fn header_section(r: &Report, detail: Detail, details: Option<&str>) -> Section {
    let (icon, outcome) = match r.conclusion() {
        Conclusion::Success => ("✅", r.status.as_str()),
        Conclusion::Partial => ("⚠️", "partial success"),
        Conclusion::Failure => ("❌", r.status.as_str()),
    };
    let mut head = format!(
        "## {icon} plangate: {} — {outcome} (exit {})\n\n",
        code(r.plan.id.as_deref().unwrap_or("?"), At::Text),
        r.exit_code
    );
    let _ = writeln!(
        head,
        "Run `{}`, {:.1} s.{}\n",
        r.run_id,
        r.duration_ms as f64 / 1000.0,
        if r.dry_run {
            " Dry run: nothing was executed."
        } else {
            ""
        }
    );
    if detail != Detail::Full && !r.steps.is_empty() {
        let _ = writeln!(head, "{}\n", counts(r));
    }
    if detail == Detail::Withheld {
        let _ = writeln!(
            head,
            "**Withheld**: the run found {} secret(s), so nothing it asked for is published, and this summary holds counts and the verdict only: no output, agent text, diff or changed file.\n",
            r.findings.len()
        );
    }
    if let Some(url) = details {
        let _ = writeln!(head, "[Full report: the workflow run]({url})\n");
    }
    let mut header = Section::new("header", head);
    header.required = true;
    header
}

/// What made the run partial (or, with `--strict`, failed), right under the
/// header: one item per step (always shown).
fn partial_section(r: &Report) -> Option<Section> {
    if r.partial_reasons.is_empty() {
        return None;
    }
    let head = match r.conclusion() {
        Conclusion::Partial => {
            "**Partial success**: the run exited 0 but did not do everything the plan asked:\n\n"
        }
        _ if r.strict => "**Strict** (`--strict`): a partial success fails the run:\n\n",
        _ => "Also left undone:\n\n",
    };
    let mut s = Section::new("partial success", head.to_owned());
    s.rows = r
        .partial_reasons
        .iter()
        .map(|p| format!("- {}\n", p.describe(|id| code(id, At::Text))))
        .collect();
    s.tail = "\n".to_owned();
    s.required = true;
    Some(s)
}

/// Steps shown in the compact form's output section.
const COMPACT_OUTPUTS: usize = 5;

/// The end of each shown step's output (the report's `output_tail`: failed
/// steps by default), one `<details>` per step, each stream in a fenced
/// block longer than any backtick run it holds. Compact: failed steps only.
fn output_section(r: &Report, detail: Detail) -> Option<Section> {
    if detail == Detail::Withheld {
        return None;
    }
    let shown: Vec<_> = r
        .steps
        .iter()
        .filter_map(|s| s.output_tail.as_ref().map(|t| (s, t)))
        .filter(|(s, _)| detail == Detail::Full || s.status.is_failure())
        .collect();
    if shown.is_empty() {
        return None;
    }
    let cap = match detail {
        Detail::Compact | Detail::Withheld => COMPACT_OUTPUTS,
        Detail::Full => usize::MAX,
    };
    let mut s = Section::new("output", "### Output\n\n".to_owned());
    s.rows = shown
        .iter()
        .take(cap)
        .map(|(step, t)| output_details(r, step, t))
        .collect();
    s.omitted = shown.len() - s.rows.len();
    Some(s)
}

/// One step's `<details>`: its status and error as the summary, then its tail.
fn output_details(
    r: &Report,
    s: &crate::model::StepReport,
    t: &crate::model::OutputTail,
) -> String {
    let allowed = r
        .partial_reasons
        .iter()
        .any(|p| p.step == s.id && p.reason == crate::model::PartialKind::AllowedFailure);
    let mut summary = format!("<code>{}</code> {}", html(&s.id), s.status.as_str());
    if allowed {
        summary.push_str(" (allowed by continue_on_error)");
    }
    if let Some(e) = &s.error {
        let _ = write!(summary, ": {}", html(e));
    }
    let mut out = format!("<details><summary>{summary}</summary>\n\n");
    for (label, lines) in super::tail::blocks(t) {
        let body = lines.join("\n");
        let fence = fence_for(&body);
        let _ = write!(
            out,
            "{}:\n\n{fence}text\n{body}\n{fence}\n\n",
            text(&label, At::Text)
        );
    }
    out.push_str("</details>\n\n");
    out
}

/// The plan's problems with their positions (an invalid plan).
fn problems_section(r: &Report) -> Option<Section> {
    if r.errors.is_empty() {
        return None;
    }
    let mut s = Section::new("plan problems", "### Plan problems\n\n".to_owned());
    s.rows = r
        .errors
        .iter()
        .map(|e| {
            format!(
                "- {} {}\n",
                code(&format!("{}:{}:{}", e.file, e.line, e.column), At::Text),
                text(&e.message, At::Text)
            )
        })
        .collect();
    s.tail = "\n".to_owned();
    Some(s)
}

/// One table row per step (compact: only the steps that did not succeed, when many).
fn steps_section(r: &Report, detail: Detail) -> Option<Section> {
    if r.steps.is_empty() {
        return None;
    }
    let mut s = Section::new(
        "steps",
        "| step | tool | status | risk | decision | time | note |\n| --- | --- | --- | --- | --- | ---: | --- |\n".to_owned(),
    );
    let compact = detail != Detail::Full;
    let shown: Vec<_> = if compact && r.steps.len() > COMPACT_ROWS {
        r.steps
            .iter()
            .filter(|s| s.status != StepStatus::Success)
            .collect()
    } else {
        r.steps.iter().collect()
    };
    let cap = if compact { COMPACT_ROWS } else { usize::MAX };
    s.omitted = r.steps.len() - shown.len().min(cap);
    s.rows = shown
        .into_iter()
        .take(cap)
        .map(|s| {
            let risk = s
                .risk
                .map_or_else(|| "-".to_owned(), |k| k.effective.as_str().to_owned());
            let decision = s.approval.as_ref().map_or("-", |a| a.decision.as_str());
            let mut note = String::new();
            if let Some(sb) = s.sandbox.as_ref().filter(|sb| !sb.is_enforced()) {
                note = format!("sandbox {}", sb.summary());
            }
            if let Some(e) = s.error.as_ref().filter(|_| detail != Detail::Withheld) {
                if !note.is_empty() {
                    note.push_str("; ");
                }
                note.push_str(e);
            }
            for w in s
                .agent_warnings()
                .into_iter()
                .filter(|_| detail != Detail::Withheld)
            {
                if !note.is_empty() {
                    note.push_str("; ");
                }
                note.push_str(&format!("warning: {w}"));
            }
            format!(
                "| {} | {} | {} | {risk} | {decision} | {:.2} s | {} |\n",
                code(&s.id, At::Cell),
                text(&s.tool, At::Cell),
                s.status.as_str(),
                s.duration_ms as f64 / 1000.0,
                text(&note, At::Cell)
            )
        })
        .collect();
    s.table = true;
    s.tail = "\n".to_owned();
    s.required = true;
    Some(s)
}

/// Each agent step's accepted result: an envelope's summary, files and next
/// actions; a JSON object of plain values as a table, other JSON and code as
/// a fenced block (cut shorter in the compact form).
fn results_section(r: &Report, detail: Detail) -> Option<Section> {
    let max_chars = match detail {
        Detail::Full => crate::model::AgentResult::MAX_TEXT,
        Detail::Compact => 1500,
        Detail::Withheld => return None,
    };
    let rows: Vec<String> = r
        .steps
        .iter()
        .filter_map(|s| s.result.as_ref().map(|res| (s, res)))
        .map(|(s, res)| agent_result(&s.id, res, max_chars))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut s = Section::new("agent results", "### Agent results\n\n".to_owned());
    s.rows = rows;
    Some(s)
}

fn agent_result(id: &str, res: &crate::model::AgentResult, max_chars: usize) -> String {
    let mut out = format!("**{}** ({})\n\n", code(id, At::Text), res.kind);
    if let Some(summary) = &res.summary {
        let _ = writeln!(out, "{}\n", text(summary, At::Text));
    }
    if !res.files.is_empty() {
        let files: Vec<String> = res.files.iter().map(|f| code(f, At::Text)).collect();
        let _ = writeln!(out, "Files: {}\n", files.join(", "));
    }
    for n in &res.next_actions {
        let _ = writeln!(out, "- next: {}", text(n, At::Text));
    }
    if !res.next_actions.is_empty() {
        out.push('\n');
    }
    if res.text.is_empty() {
        return out;
    }
    if res.kind == "json"
        && !res.cut
        && let Some(table) = json_table(&res.text)
    {
        out.push_str(&table);
        out.push('\n');
        return out;
    }
    let shown: String = res.text.chars().take(max_chars).collect();
    let cut = res.cut || shown.len() < res.text.len();
    let lang = match res.kind.as_str() {
        "json" => "json".to_owned(),
        _ => res
            .language
            .as_deref()
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.' | '_'))
            .collect(),
    };
    let fence = fence_for(&shown);
    let _ = writeln!(
        out,
        "{fence}{lang}\n{}\n{fence}",
        shown.trim_end_matches('\n')
    );
    if cut {
        out.push_str("(cut; the whole result is in the step's `parsed.*` artifact)\n");
    }
    out.push('\n');
    out
}

/// A JSON object whose values are all plain (string, number, bool, null) as a table.
fn json_table(json: &str) -> Option<String> {
    let Value::Object(map) = serde_json::from_str::<Value>(json).ok()? else {
        return None;
    };
    if map.is_empty() || map.values().any(|v| v.is_object() || v.is_array()) {
        return None;
    }
    let mut out = "| key | value |\n| --- | --- |\n".to_owned();
    for (k, v) in &map {
        let value = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} |",
            code(k, At::Cell),
            text(&value, At::Cell)
        );
    }
    Some(out)
}

/// A code fence longer than any run of backticks in `s` (at least three).
fn fence_for(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// The secrets found: rule, location, line and fingerprint, never the value.
fn findings_section(r: &Report, detail: Detail) -> Option<Section> {
    if r.findings.is_empty() {
        return None;
    }
    let mut s = Section::new(
        "findings",
        format!(
            "### 🔑 {} secret(s) found (values redacted)\n\n| rule | location | line | fingerprint |\n| --- | --- | ---: | --- |\n",
            r.findings.len()
        ),
    );
    let cap = match detail {
        Detail::Compact | Detail::Withheld => COMPACT_ROWS,
        Detail::Full => usize::MAX,
    };
    s.rows = r
        .findings
        .iter()
        .take(cap)
        .map(|f| {
            format!(
                "| {} | {} | {} | `{}` |\n",
                text(&f.rule, At::Cell),
                code(&f.location, At::Cell),
                f.line,
                f.fingerprint
            )
        })
        .collect();
    s.omitted = r.findings.len() - s.rows.len();
    s.table = true;
    s.tail = "\n".to_owned();
    Some(s)
}

/// What the run changed in the workspace, one line per file.
fn changes_section(r: &Report, detail: Detail) -> Option<Section> {
    let d = r.diff.as_ref()?;
    let mut s = Section::new(
        "changes",
        format!(
            "### Changes\n\n{} file(s) changed, +{} -{}\n\n",
            d.files_changed, d.insertions, d.deletions
        ),
    );
    let cap = match detail {
        Detail::Compact => COMPACT_ROWS,
        Detail::Full => 100,
        Detail::Withheld => 0,
    };
    let files = &d.files;
    s.rows = files
        .iter()
        .take(cap)
        .map(|f| {
            let from = f
                .old_path
                .as_deref()
                .map(|old| format!("{} → ", code(old, At::Text)))
                .unwrap_or_default();
            format!(
                "- {from}{} {} (+{} -{})\n",
                code(&f.path, At::Text),
                f.change.as_str(),
                f.insertions,
                f.deletions
            )
        })
        .collect();
    s.omitted = files.len() - s.rows.len();
    if detail == Detail::Withheld {
        s.omitted = 0;
    } else if !files.is_empty() {
        s.tail = "\n".to_owned();
    }
    Some(s)
}

/// Agent tokens and cost, when any agent ran.
fn usage_section(r: &Report) -> Option<Section> {
    if r.usage.tokens() == 0 {
        return None;
    }
    let mut text = format!("Agent usage: {}.\n", r.usage.summary());
    // A step whose CLI printed a cost of its own that differs from the one
    // measured at plangate's endpoint: both, side by side.
    let beside: Vec<String> = r
        .steps
        .iter()
        .filter_map(|s| {
            let u = s.usage.filter(|u| u.reported_by_cli_usd.is_some())?;
            Some(format!(
                "- {}: {}\n",
                crate::markdown::code(&s.id, crate::markdown::At::Text),
                u.summary()
            ))
        })
        .collect();
    if !beside.is_empty() {
        text.push_str(
            "\nMeasured at plangate's model API endpoint, beside what the CLI reported:\n\n",
        );
        text.extend(beside);
    }
    Some(Section::new("usage", text))
}

/// "3 steps: 2 success, 1 failed."
fn counts(r: &Report) -> String {
    let mut by: Vec<(&str, usize)> = Vec::new();
    for s in &r.steps {
        let name = s.status.as_str();
        match by.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => by.push((name, 1)),
        }
    }
    let parts: Vec<String> = by.iter().map(|(n, c)| format!("{c} {n}")).collect();
    format!("{} step(s): {}.", r.steps.len(), parts.join(", "))
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

/// JUnit XML: one test case per step; failures, rejections and findings as
/// `<failure>` (its text: the error, then the step's output tail), the
/// output tail also as `<system-out>` / `<system-err>`. A failure allowed by
/// `continue_on_error` is no `<failure>`: its case passes with the error in
/// `<system-err>`. Valid against the common JUnit XSD (Jenkins xUnit's
/// `junit-10.xsd`, vendored in tests/fixtures/schemas): `errors` is always
/// written, as 0, since plangate reports every problem as a failure; the
/// suite's `<properties>` hold the run's `plangate.status` and `plangate.conclusion`.
pub(crate) fn junit(r: &Report) -> String {
    let allowed = |id: &str| {
        r.partial_reasons
            .iter()
            .any(|p| p.step == id && p.reason == crate::model::PartialKind::AllowedFailure)
    };
    let failed = |s: &crate::model::StepReport| {
        matches!(
            s.status,
            StepStatus::Failed
                | StepStatus::TimedOut
                | StepStatus::Rejected
                | StepStatus::Denied
                | StepStatus::Blocked
        ) && !allowed(&s.id)
    };
    let failures = r.steps.iter().filter(|s| failed(s)).count()
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
        "<testsuites name=\"plangate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">",
        r.duration_ms as f64 / 1000.0
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{:.3}\" timestamp=\"{}\">",
        r.duration_ms as f64 / 1000.0,
        xml(&r.started_at)
    );
    let _ = writeln!(
        out,
        "    <properties>\n      <property name=\"plangate.status\" value=\"{}\"/>\n      <property name=\"plangate.conclusion\" value=\"{}\"/>\n    </properties>",
        r.status.as_str(),
        r.conclusion().as_str()
    );
    for s in &r.steps {
        junit_case(&mut out, &name, s, failed(s), allowed(&s.id));
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

/// One step's `<testcase>`: a `<failure>` when it failed (not allowed), a
/// `<skipped>` when it did not run, its output tail as `<system-out>` and
/// `<system-err>` (an allowed failure's error heads `<system-err>`).
fn junit_case(
    out: &mut String,
    suite: &str,
    s: &crate::model::StepReport,
    failed: bool,
    allowed: bool,
) {
    let _ = write!(
        out,
        "    <testcase classname=\"{suite}\" name=\"{}\" time=\"{:.3}\"",
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
    let tail = s.output_tail.as_ref();
    let mut body = String::new();
    if failed {
        let mut text = msg.clone();
        if let Some(t) = tail {
            for (label, lines) in super::tail::blocks(t) {
                let _ = write!(text, "\n\n{label}:\n{}", lines.join("\n"));
            }
        }
        let _ = writeln!(
            body,
            "      <failure message=\"{}\" type=\"{}\">{}</failure>",
            xml(&msg),
            s.status.as_str(),
            xml(&text)
        );
    } else if matches!(s.status, StepStatus::Skipped | StepStatus::NotRun) {
        let _ = writeln!(body, "      <skipped message=\"{}\"/>", xml(&msg));
    }
    let stdout = tail.and_then(|t| t.stdout.as_deref());
    let mut stderr: Vec<String> = Vec::new();
    if allowed {
        stderr.push(format!(
            "allowed failure (continue_on_error): {}: {msg}",
            s.status.as_str()
        ));
    }
    if let Some(t) = tail {
        stderr.extend(t.reasons.iter().cloned());
        stderr.extend(t.stderr.clone());
    }
    if let Some(text) = stdout {
        let _ = writeln!(body, "      <system-out>{}</system-out>", xml(text));
    }
    if !stderr.is_empty() {
        let _ = writeln!(
            body,
            "      <system-err>{}</system-err>",
            xml(&stderr.join("\n"))
        );
    }
    if body.is_empty() {
        out.push_str("/>\n");
    } else {
        let _ = write!(out, ">\n{body}    </testcase>\n");
    }
}

/// SARIF 2.1.0 of the report's findings; `out_dir` is the run's output
/// folder (where report.json is), which findings in run output are under.
pub(crate) fn sarif(r: &Report, out_dir: &Path) -> Value {
    let rules = crate::secrets::Ruleset::builtin();
    crate::scan::to_sarif(&rules, &file_findings(r, &rules, out_dir))
}

/// GitLab's secret-detection report of the report's findings (`out_dir` as for [`sarif`]).
pub(crate) fn gitlab_secret_detection(r: &Report, out_dir: &Path) -> Value {
    let rules = crate::secrets::Ruleset::builtin();
    let start = super::gitlab::schema_time(Some(&r.started_at));
    let end = super::gitlab::schema_time(r.finished_at.as_deref().or(Some(&r.started_at)));
    super::gitlab::secret_detection(
        &file_findings(r, &rules, out_dir),
        &start,
        &end,
        &super::gitlab::commit_from_env(),
        !r.in_progress,
    )
}

/// The report's findings in the shape of `plangate scan`'s, each with the
/// file it names on disk (in the workspace or the output folder).
fn file_findings(
    r: &Report,
    rules: &crate::secrets::Ruleset,
    out_dir: &Path,
) -> Vec<crate::scan::FileFinding> {
    r.findings
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
            path: crate::location::finding_path(&f.location, Path::new(&r.workspace), out_dir),
        })
        .collect()
}

/// The report as JSON (re-serialised: a check that it reads back).
pub(crate) fn json(r: &Report) -> Value {
    serde_json::to_value(r).unwrap_or_else(|_| json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(name: &'static str, head: &str, rows: usize, required: bool) -> Section {
        let mut s = Section::new(name, head.to_owned());
        s.rows = (0..rows).map(|i| format!("| row {i:04} |\n")).collect();
        s.table = true;
        s.tail = "\n".to_owned();
        s.required = required;
        s
    }

    #[test]
    fn what_fits_is_left_alone() {
        let s = vec![
            section("header", "# h\n", 0, true),
            section("steps", "| s |\n", 3, true),
        ];
        let all: String = s.iter().map(Section::render).collect();
        assert_eq!(fit(&s, all.len()), all);
        assert!(!all.contains("Cut to fit"));
    }

    #[test]
    fn sections_are_shortened_or_dropped_whole_and_named() {
        let s = vec![
            section("header", "# header\n", 0, true),
            section("steps", "| step |\n", 10, true),
            section("findings", "### findings\n| f |\n", 500, false),
            section(
                "changes",
                &format!("### changes {}\n", "x".repeat(2000)),
                0,
                false,
            ),
            section("usage", "usage line\n", 0, false),
        ];
        let out = fit(&s, 2000);
        assert!(out.len() <= 2000, "{}", out.len());
        // Required first, then heads, then rows in order.
        assert!(
            out.starts_with("# header\n\n| step |\n| row 0000 |\n"),
            "{out}"
        );
        assert!(
            out.contains("| row 0009 |\n\n### findings"),
            "every step row: {out}"
        );
        assert!(
            out.contains("usage line\n"),
            "a small later section survives: {out}"
        );
        assert!(!out.contains("### changes"), "{out}");
        assert!(
            out.contains("| … "),
            "the cut table says how many rows are missing"
        );
        let note = out.lines().last().unwrap_or_default();
        assert!(note.contains("findings ("), "{note}");
        assert!(note.contains("of 500 rows shown)"), "{note}");
        assert!(note.contains("changes (not shown)"), "{note}");
        assert!(!note.contains("usage") && !note.contains("steps"), "{note}");
        // Whole rows only, in order.
        let shown = out.matches("| row ").count();
        assert!(shown > 10 && shown < 510, "{shown}");
    }

    #[test]
    fn the_limit_holds_however_small() {
        let s = vec![
            section("header", "# header é\n", 0, true),
            section("steps", "| step |\n", 1000, true),
            section("findings", "### f\n", 1000, false),
        ];
        for max in [0, 1, 10, 100, 700, 1000, 5000, 20_000] {
            let out = fit(&s, max);
            assert!(out.len() <= max, "{max}: {}", out.len());
        }
    }

    #[test]
    fn a_summary_cut_to_size_keeps_each_diagram_whole_or_leaves_it_out() {
        let report: Report = serde_json::from_str(include_str!(
            "../../tests/fixtures/mermaid/mixed-report.json"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let sections = sections(&report, Detail::Full, None);
        let full: String = sections.iter().map(Section::render).collect();
        let diagrams: Vec<&str> = full.split("```mermaid\n").skip(1).collect();
        assert_eq!(diagrams.len(), 2, "{full}");
        let whole: Vec<&str> = diagrams
            .iter()
            .map(|d| &d[..d.find("```\n").unwrap_or(0) + 4])
            .collect();
        let mut kept = std::collections::BTreeSet::new();
        for max in (800..full.len() + 100).step_by(61) {
            let out = fit(&sections, max);
            assert!(out.len() <= max);
            let parts: Vec<&str> = out.split("```mermaid\n").skip(1).collect();
            for p in &parts {
                assert!(
                    whole.iter().any(|w| p.starts_with(w)),
                    "max {max}: a diagram was cut:\n{out}"
                );
            }
            kept.insert(parts.len());
        }
        assert_eq!(kept.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    }
}
