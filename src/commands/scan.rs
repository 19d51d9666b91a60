//! `plangate scan`: scan files and directories for secrets (the scanner is
//! `crate::scan`) and print the findings as text, JSON (design 002's shape),
//! SARIF or GitLab's secret-detection report. Exit 4 when any is found, or
//! when a file or folder could not be read.

use serde_json::{Value, json};

use super::Outcome;
use crate::cli::{ScanArgs, ScanFormat};
use crate::error::Error;
use crate::model::RunStatus;
use crate::report::gitlab;
use crate::scan::{self, ScanError, ScanOutcome};

/// `plangate scan`.
pub(crate) fn run(args: &ScanArgs) -> Outcome {
    let (rules, scanner) = scan::scanner_with(args.rules.as_deref())?;
    if let Some(p) = args.paths.iter().find(|p| !p.exists()) {
        return Err(ScanError::NoSuchPath(p.clone()).into());
    }
    let baseline = match &args.baseline {
        Some(b) => scan::load_baseline(b)?,
        None => Default::default(),
    };
    let opts = scan::ScanOptions {
        redact: args.redact,
        baseline,
        ..scan::ScanOptions::default()
    };
    let outcome = scan::scan_paths(&rules, &scanner, &args.paths, &opts);
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    let body = match args.format {
        ScanFormat::Text => to_text(&outcome),
        ScanFormat::Json => pretty(&to_json(&outcome)),
        ScanFormat::Sarif => pretty(&scan::to_sarif(&rules, &outcome.findings)),
        ScanFormat::GitlabSecretDetection => pretty(&to_gitlab(&outcome)),
    };
    crate::output::stdout(body.as_bytes()).map_err(Error::Stdout)?;
    for e in &outcome.errors {
        crate::output::warning(e);
    }
    if !outcome.errors.is_empty() {
        // What it could not read may hold a secret: never a clean scan.
        crate::output::warning(format_args!(
            "{} path(s) could not be scanned: the scan fails (exit 4)",
            outcome.errors.len()
        ));
    }
    Ok(
        if outcome.findings.is_empty() && outcome.errors.is_empty() {
            RunStatus::Success
        } else {
            RunStatus::SecretsFound
        },
    )
}

/// GitLab's secret-detection report of a scan that just ended.
fn to_gitlab(outcome: &ScanOutcome) -> Value {
    let now = std::time::SystemTime::now();
    let end = humantime::format_rfc3339_seconds(now).to_string();
    let start = humantime::format_rfc3339_seconds(now - outcome.scan_time).to_string();
    gitlab::secret_detection(
        &outcome.findings,
        &gitlab::schema_time(Some(&start)),
        &gitlab::schema_time(Some(&end)),
        &gitlab::commit_from_env(),
        outcome.errors.is_empty(),
    )
}

/// Design 002's return shape.
pub(crate) fn to_json(o: &ScanOutcome) -> Value {
    json!({
        "secrets_found": o.findings.len(),
        "files_scanned": o.files_scanned,
        "bytes_scanned": o.bytes_scanned,
        "binary_files_skipped": o.binary_skipped,
        "baselined": o.baselined,
        "findings": o.findings,
        "errors": o.errors,
        "scan_time": o.scan_time.as_secs_f64(),
    })
}

/// One line per finding, then a summary.
pub(crate) fn to_text(o: &ScanOutcome) -> String {
    let mut s = String::new();
    for f in &o.findings {
        s.push_str(&format!(
            "{}:{}:{}: {} ({}, confidence {:.2}) fingerprint {}{}\n",
            f.file,
            f.line,
            f.column,
            f.rule,
            f.description,
            f.confidence,
            f.fingerprint,
            if f.redacted {
                " [redacted in place]"
            } else {
                ""
            }
        ));
    }
    s.push_str(&format!(
        "{} secret(s) in {} file(s) scanned ({:.1} MB, {} binary skipped{}) in {:.3}s\n",
        o.findings.len(),
        o.files_scanned,
        o.bytes_scanned as f64 / 1e6,
        o.binary_skipped,
        if o.baselined > 0 {
            format!(", {} baselined", o.baselined)
        } else {
            String::new()
        },
        o.scan_time.as_secs_f64()
    ));
    s
}
