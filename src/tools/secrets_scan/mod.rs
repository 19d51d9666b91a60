//! The `secrets_scan` tool: `plangate scan` inside a plan (design 002, 2.4).
//! Findings join the run's findings (so `fail_on_secrets` applies); the
//! step's `result.json` has the design's return shape and never a value.

pub(crate) mod spec;

use std::time::SystemTime;

use serde_json::json;

use super::StepContext;
use crate::model::{StepOutcome, StepStatus};
use crate::scan::{ScanOptions, scan_paths};
use crate::tools::params::secrets_scan::{ScanAction, ScanType};

/// Run a scan step.
pub(crate) fn run(
    a: &ScanAction,
    step_id: &str,
    ctx: &StepContext,
    started: SystemTime,
) -> StepOutcome {
    let mut out = StepOutcome::new(started);
    let ws = &ctx.env.workspace;
    let target = ws.join(&a.path);
    let real = match target.canonicalize() {
        Ok(r) if r.starts_with(ws) => r,
        Ok(r) => {
            out.error = Some(format!(
                "`{}` resolves to `{}`, outside the workspace",
                a.path.display(),
                r.display()
            ));
            return out;
        }
        Err(e) => {
            out.error = Some(format!("cannot scan `{}`: {e}", a.path.display()));
            return out;
        }
    };
    let scanner = crate::redact::builtin_scanner();
    let rules = crate::secrets::Ruleset::builtin();
    let opts = ScanOptions {
        redact: a.scan_type == ScanType::Redact,
        include: a.include.clone(),
        exclude: a.exclude.clone(),
        only_rules: a.rules.as_ref().map(|r| r.iter().cloned().collect()),
        ..ScanOptions::default()
    };
    let scanned = scan_paths(&rules, scanner, std::slice::from_ref(&real), &opts);
    let rel_of = |file: &str| -> String {
        let abs = if real.is_dir() {
            real.join(file)
        } else {
            real.clone()
        };
        abs.strip_prefix(ws)
            .map_or_else(|_| file.to_owned(), |p| p.display().to_string())
    };
    let findings: Vec<_> = scanned
        .findings
        .iter()
        .map(|f| {
            json!({"file": rel_of(&f.file), "line": f.line, "type": f.rule, "confidence": f.confidence, "redacted": f.redacted})
        })
        .collect();
    out.findings = scanned
        .findings
        .iter()
        .map(|f| crate::model::Finding {
            rule: f.rule.clone(),
            step: Some(step_id.to_owned()),
            location: format!("workspace:{}", rel_of(&f.file)),
            line: f.line as u64,
            fingerprint: f.fingerprint.clone(),
        })
        .collect();
    let result = json!({
        "secrets_found": findings.len(),
        "files_scanned": scanned.files_scanned,
        "findings": findings,
        "scan_time": scanned.scan_time.as_secs_f64(),
        "errors": scanned.errors,
    });
    match super::write_result(ctx, &result) {
        Ok(rel) => out.artifacts.push(rel),
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    }
    out.status = StepStatus::Success;
    out.duration = scanned.scan_time;
    out
}
