//! `plangate run --record FILE`: every live agent answer, as the `replay`
//! provider reads it (`{"step", "attempt", "prompt_sha256", "answer",
//! "usage"}`, one JSON object a line), so a run can be replayed offline.
//! Answers pass the redaction layer before they are written; answers the
//! `replay` provider gave are not recorded again.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use crate::model::Usage;

/// The open replay file of a run.
#[derive(Debug)]
pub(crate) struct Recorder {
    file: Mutex<std::fs::File>,
}

impl Recorder {
    /// Create (or empty) `path`.
    pub(crate) fn create(path: &Path) -> std::io::Result<Recorder> {
        Ok(Recorder {
            file: Mutex::new(std::fs::File::create(path)?),
        })
    }

    /// Append one answer; `Err` says why it could not be recorded.
    pub(crate) fn append(
        &self,
        step: &str,
        attempt: u32,
        prompt_sha256: &str,
        answer: &str,
        usage: Option<&Usage>,
    ) -> Result<(), String> {
        let mut record = serde_json::json!({
            "step": step,
            "attempt": attempt,
            "prompt_sha256": prompt_sha256,
            "answer": crate::redact::clean_str(answer).as_ref(),
        });
        if let Some(u) = usage {
            record["usage"] = serde_json::json!({
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cost_usd": u.cost_usd,
            });
        }
        let mut line = record.to_string();
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| "the record file's lock is poisoned".to_owned())?;
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| format!("cannot write the record file: {e}"))
    }
}
