//! GitLab's secret-detection report (`gl-secret-detection-report.json`,
//! security report schema 15.x), so findings show in merge requests and the
//! vulnerability report through `artifacts: reports: secret_detection:`.
//!
//! Like every other output it names the rule, the file, the line and a
//! fingerprint; never the secret (`raw_source_code_extract` is left out).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::scan::FileFinding;

/// The schema version written.
pub(crate) const SCHEMA_VERSION: &str = "15.2.1";

/// A timestamp as the schema wants it: `YYYY-MM-DDTHH:MM:SS`, UTC, no zone.
/// Accepts RFC 3339 (what the report stores); anything else becomes the epoch.
pub(crate) fn schema_time(rfc3339: Option<&str>) -> String {
    rfc3339
        .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
        .map(|t| {
            let s = humantime::format_rfc3339_seconds(t).to_string();
            s.trim_end_matches('Z').to_owned()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00".to_owned())
}

/// The commit the findings belong to, from the CI's environment
/// (`CI_COMMIT_SHA` on GitLab, `GITHUB_SHA` on GitHub), else the schema's placeholder.
pub(crate) fn commit_from_env() -> String {
    ["CI_COMMIT_SHA", "GITHUB_SHA"]
        .iter()
        .filter_map(|k| crate::environ::var(k))
        .find(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| "0000000".to_owned())
}

/// The report for `findings`, scanned between `start` and `end` (schema times).
pub(crate) fn secret_detection(
    findings: &[FileFinding],
    start: &str,
    end: &str,
    commit: &str,
    status_ok: bool,
) -> Value {
    let repo = crate::location::Repo::current();
    let vulnerabilities: Vec<Value> = findings
        .iter()
        .map(|f| {
            // Relative to the repository, like SARIF's and the annotations'
            // (outside it, the name as found: relative to the output folder,
            // the workspace or the scanned folder).
            let file = repo.relative_or(&f.path, &f.file);
            // Stable across runs for the same secret at the same place, so GitLab
            // tracks one vulnerability rather than a new one per pipeline.
            let mut h = Sha256::new();
            h.update(f.rule.as_bytes());
            h.update([0]);
            h.update(file.as_bytes());
            h.update([0]);
            h.update(f.fingerprint.as_bytes());
            let id = hex::encode(h.finalize());
            json!({
                "id": id,
                "category": "secret_detection",
                "name": f.description,
                "description": format!(
                    "{} found by plangate rule `{}` (fingerprint {}). The value is not stored in any report.",
                    f.description, f.rule, f.fingerprint
                ),
                "severity": "Critical",
                "confidence": if f.confidence >= 0.8 { "High" } else { "Medium" },
                "identifiers": [{
                    "type": "plangate_rule_id",
                    "name": format!("plangate rule {}", f.rule),
                    "value": f.rule,
                }],
                "location": {
                    "file": file,
                    "start_line": f.line.max(1),
                    "end_line": f.line.max(1),
                    "commit": { "sha": commit },
                },
            })
        })
        .collect();
    let vendor = json!({ "name": "plangate" });
    let tool = json!({
        "id": "plangate",
        "name": "plangate",
        "version": crate::version::VERSION,
        "vendor": vendor,
    });
    json!({
        "version": SCHEMA_VERSION,
        "vulnerabilities": vulnerabilities,
        "remediations": [],
        "scan": {
            "analyzer": tool,
            "scanner": tool,
            "type": "secret_detection",
            "start_time": start,
            "end_time": end,
            "status": if status_ok { "success" } else { "failure" },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule: &str, file: &str, line: usize) -> FileFinding {
        FileFinding {
            file: file.to_owned(),
            line,
            column: 1,
            rule: rule.to_owned(),
            description: format!("{rule} token"),
            confidence: 0.9,
            fingerprint: format!("fp-{rule}-{line}"),
            redacted: false,
            path: std::path::PathBuf::new(),
        }
    }

    #[test]
    fn times_are_in_the_schema_format() {
        assert_eq!(
            schema_time(Some("2026-11-23T02:42:16.123456Z")),
            "2026-11-23T02:42:16"
        );
        assert_eq!(schema_time(Some("yesterday")), "1970-01-01T00:00:00");
        assert_eq!(schema_time(None), "1970-01-01T00:00:00");
    }

    #[test]
    fn one_vulnerability_per_finding_with_stable_ids() {
        let f = [
            finding("github-pat", "a.txt", 3),
            finding("aws", "b.txt", 0),
        ];
        let v = secret_detection(
            &f,
            "2026-01-01T00:00:00",
            "2026-01-01T00:00:01",
            "abc",
            true,
        );
        let vulns = v["vulnerabilities"].as_array().map(Vec::len);
        assert_eq!(vulns, Some(2));
        assert_eq!(v["scan"]["type"], "secret_detection");
        assert_eq!(v["scan"]["status"], "success");
        assert_eq!(
            v["vulnerabilities"][0]["identifiers"][0]["value"],
            "github-pat"
        );
        assert_eq!(v["vulnerabilities"][1]["location"]["start_line"], 1);
        assert_eq!(v["vulnerabilities"][0]["location"]["commit"]["sha"], "abc");
        let again = secret_detection(&f, "x", "y", "abc", true);
        assert_eq!(
            v["vulnerabilities"][0]["id"],
            again["vulnerabilities"][0]["id"]
        );
        assert_ne!(v["vulnerabilities"][0]["id"], v["vulnerabilities"][1]["id"]);
        assert!(
            v["vulnerabilities"][0]
                .get("raw_source_code_extract")
                .is_none()
        );
    }
}
