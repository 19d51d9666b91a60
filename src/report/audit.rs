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
pub const FILE: &str = "audit.jsonl";

/// One redacted line (newline included) for `event`, stamped now.
pub fn line(event: &AuditEvent) -> serde_json::Result<Vec<u8>> {
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
pub struct AuditLog {
    out: BufWriter<File>,
}

impl AuditLog {
    /// Create (or truncate) `out_dir/audit.jsonl`.
    pub fn create(out_dir: &Path) -> std::io::Result<AuditLog> {
        Ok(AuditLog {
            out: BufWriter::new(File::create(out_dir.join(FILE))?),
        })
    }

    /// Append one event. A line that cannot be written is dropped: the audit
    /// log never stops a run (the report still says everything).
    pub fn write(&mut self, event: &AuditEvent) {
        if let Ok(line) = line(event) {
            let _ = self.out.write_all(&line);
        }
    }

    /// Write out what is buffered.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Flush and fsync.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_all()
    }
}

/// Append one event to a finished run's `audit.jsonl` (what happened after
/// the report was final, such as publishing).
pub fn append(out_dir: &Path, event: &AuditEvent) -> std::io::Result<()> {
    let line = line(event).map_err(std::io::Error::other)?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(out_dir.join(FILE))?;
    f.write_all(&line)
}
