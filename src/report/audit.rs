//! The one writer of `audit.jsonl`: every line is an [`AuditEvent`] with a
//! `ts` key added, its keys in alphabetical order (serde_json's map), passed
//! through the redaction layer.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::SystemTime;

use super::{redact, rfc3339};
use crate::model::AuditEvent;

/// The file name in the output directory.
pub(crate) const FILE: &str = "audit.jsonl";

/// One redacted line (newline included) for `event`, stamped now.
pub(crate) fn line(event: &AuditEvent) -> serde_json::Result<Vec<u8>> {
    let mut value = serde_json::to_value(event)?;
    if let Some(obj) = value.as_object_mut() {
        obj.insert(
            "ts".into(),
            serde_json::Value::String(rfc3339(SystemTime::now())),
        );
    }
    let mut line = serde_json::to_vec(&value)?;
    line.push(b'\n');
    Ok(redact::clean(&line).into_owned())
}

/// `audit.jsonl` while a run writes it.
pub(crate) struct AuditLog {
    out: BufWriter<File>,
}

impl AuditLog {
    /// Create (or truncate) `out_dir/audit.jsonl`.
    pub(crate) fn create(out_dir: &Path) -> std::io::Result<AuditLog> {
        Ok(AuditLog {
            out: BufWriter::new(File::create(out_dir.join(FILE))?),
        })
    }

    /// Append one event. A line that cannot be written is dropped: the audit
    /// log never stops a run (the report still says everything).
    pub(crate) fn write(&mut self, event: &AuditEvent) {
        if let Ok(line) = line(event) {
            let _ = self.out.write_all(&line);
        }
    }

    /// Write out what is buffered.
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Flush and fsync.
    pub(crate) fn sync(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_all()
    }
}

/// Append one event to a finished run's `audit.jsonl` (what happened after
/// the report was final, such as publishing).
pub(crate) fn append(out_dir: &Path, event: &AuditEvent) -> std::io::Result<()> {
    let line = line(event).map_err(std::io::Error::other)?;
    let mut f = crate::outdir::append(&out_dir.join(FILE))?;
    f.write_all(&line)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::line;
    use crate::model::{AttemptEvent, AuditEvent, CarriedOver, StepStatus, Usage};
    use crate::model::{Category, Rejection};

    /// The line parsed back, its `ts` checked and removed; the bytes must be
    /// exactly what serde_json writes for that map (keys sorted).
    fn written(event: &AuditEvent) -> Value {
        let bytes = line(event).unwrap_or_else(|e| panic!("{e}"));
        let mut v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
        let mut again = serde_json::to_vec(&v).unwrap_or_else(|e| panic!("{e}"));
        again.push(b'\n');
        assert_eq!(bytes, again, "keys out of order or not one line");
        let ts = v.as_object_mut().and_then(|o| o.remove("ts"));
        assert!(
            ts.as_ref().and_then(Value::as_str).is_some(),
            "no ts in {v}"
        );
        v
    }

    // Each case is the `json!` the log was written with before the enum.
    #[test]
    fn events_outside_the_snapshot_keep_their_old_shape() {
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 4,
            cost_usd: 0.5,
            estimated: false,
            ..Usage::default()
        };
        let rejection = Rejection::whole(Category::NotFound, "no envelope");
        let attempt = AttemptEvent {
            step: "fix".into(),
            attempt: 2,
            verdict: "rejected".into(),
            rejections: vec![rejection.clone()],
            usage,
        };
        let from = CarriedOver {
            run_id: "r1".into(),
            report: "/o/report.json".into(),
        };
        let cases = [
            (
                AuditEvent::ParseFailure(attempt.clone()),
                json!({"event": "parse_failure", "step": "fix", "attempt": 2, "verdict": "rejected", "rejections": [rejection], "usage": usage}),
            ),
            (
                AuditEvent::AgentAttempt(AttemptEvent {
                    verdict: "accepted".into(),
                    rejections: Vec::new(),
                    ..attempt
                }),
                json!({"event": "agent_attempt", "step": "fix", "attempt": 2, "verdict": "accepted", "rejections": [], "usage": usage}),
            ),
            (
                AuditEvent::RollbackStarted {
                    step: "a".into(),
                    sequence: 4,
                },
                json!({"event": "rollback_started", "step": "a", "sequence": 4}),
            ),
            (
                AuditEvent::RollbackFinished {
                    step: "a".into(),
                    status: StepStatus::Failed,
                    error: None,
                },
                json!({"event": "rollback_finished", "step": "a", "status": "failed", "error": null}),
            ),
            (
                AuditEvent::StepCarriedOver {
                    step: "a".into(),
                    from: Some(from.clone()),
                },
                json!({"event": "step_carried_over", "step": "a", "from": from}),
            ),
            (
                AuditEvent::StepCarriedOver {
                    step: "a".into(),
                    from: None,
                },
                json!({"event": "step_carried_over", "step": "a", "from": null}),
            ),
            (
                AuditEvent::Finding {
                    step: None,
                    rule: "r".into(),
                    location: "diff-summary.md".into(),
                    line: 7,
                    fingerprint: "f".into(),
                },
                json!({"event": "finding", "rule": "r", "location": "diff-summary.md", "line": 7, "fingerprint": "f"}),
            ),
            (
                AuditEvent::Error {
                    what: "diff-summary.md".into(),
                    error: "disk full".into(),
                },
                json!({"event": "error", "what": "diff-summary.md", "error": "disk full"}),
            ),
            (
                AuditEvent::PlanInvalid { errors: 3 },
                json!({"event": "plan_invalid", "errors": 3}),
            ),
            (
                AuditEvent::Github {
                    target: "comment".into(),
                    result: "skipped".into(),
                    detail: "no pull request".into(),
                },
                json!({"event": "github", "target": "comment", "result": "skipped", "detail": "no pull request"}),
            ),
        ];
        for (event, old) in cases {
            assert_eq!(written(&event), old);
        }
    }
}
