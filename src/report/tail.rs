//! The end of a step's output, kept in the report for the steps whose output
//! is shown (`--show-output`: failed steps by default, every step that ran,
//! or none), so that the console, the annotations, JUnit, the step summary
//! and the PR comment (all built from the report) explain a failure.
//!
//! Read from the step's swept (already redacted) `stdout.txt` and
//! `stderr.txt`: the last [`WINDOW`] bytes (from a line's start), then
//! `redact::tail` strips escape sequences, redacts that whole window and
//! only then keeps the last [`LINES`] lines and at most [`BYTES`] bytes of
//! each stream. An agent step's tail is what the report already holds: its
//! last attempt's rejections (or error) and its CLI's stderr.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::model::{OutputTail, ShowOutput, StepReport};

/// Most lines kept of each stream.
pub(crate) const LINES: usize = 40;
/// Most bytes kept of each stream (4 KiB).
pub(crate) const BYTES: usize = 4096;
/// Bytes read from the end of a stream: what is kept and the look-back the
/// secret rules need to recognise what the kept part holds.
const WINDOW: u64 = (BYTES + crate::redact::CUT_LOOKAHEAD) as u64;
/// Most rejection reasons of an agent's last attempt kept.
const REASONS: usize = 10;
/// Most characters of one reason.
const REASON_CHARS: usize = 300;

/// Whether the report keeps `s`'s output tail under `mode` (`s` ran).
pub(crate) fn shown(s: &StepReport, mode: ShowOutput) -> bool {
    match mode {
        ShowOutput::None => false,
        ShowOutput::Failures => s.status.is_failure(),
        ShowOutput::All => true,
    }
}

/// The output tail of a step that ran, when `mode` shows it and there is something to show.
pub(crate) fn of_step(out_dir: &Path, s: &StepReport, mode: ShowOutput) -> Option<OutputTail> {
    if !shown(s, mode) {
        return None;
    }
    let mut tail = OutputTail::default();
    let read = |rel: &str| read_tail(&out_dir.join(rel));
    match s.agent_attempts.last() {
        Some(last) => {
            let stderr = format!("artifacts/{}/attempt-{}.stderr.txt", s.id, last.attempt);
            (tail.stderr, tail.stderr_truncated) = read(&stderr);
            tail.reasons = last
                .rejections
                .iter()
                .map(ToString::to_string)
                .chain(last.error.clone())
                .take(REASONS)
                .map(|r| crate::redact::cut(&r.replace(['\n', '\r'], " "), REASON_CHARS))
                .collect();
        }
        None => {
            let stream = |name: &str| {
                s.artifacts
                    .iter()
                    .rfind(|a| Path::new(a).file_name().is_some_and(|f| f == name))
                    .cloned()
            };
            if let Some(rel) = stream("stdout.txt") {
                (tail.stdout, tail.stdout_truncated) = read(&rel);
            }
            if let Some(rel) = stream("stderr.txt") {
                (tail.stderr, tail.stderr_truncated) = read(&rel);
            }
        }
    }
    (!tail.is_empty()).then_some(tail)
}

/// The tail of one file (nothing when it cannot be read) and whether it was cut.
fn read_tail(path: &Path) -> (Option<String>, bool) {
    let Ok(mut f) = crate::regular::open(path) else {
        return (None, false);
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let from = len.saturating_sub(WINDOW);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.take(WINDOW).read_to_end(&mut buf).is_err() {
        return (None, false);
    }
    if from > 0 {
        // From a line's start: the first one was cut off.
        let start = memchr::memchr(b'\n', &buf).map_or(buf.len(), |i| i + 1);
        buf.drain(..start);
    }
    let (text, cut) = crate::redact::tail(&buf, LINES, BYTES);
    (text, cut || from > 0)
}

/// A tail as labelled blocks of lines, in the order people read them: an
/// agent's reasons, stderr, stdout (`, last lines` when earlier ones were left out).
pub(crate) fn blocks(t: &OutputTail) -> Vec<(String, Vec<&str>)> {
    let more = |cut: bool| if cut { ", last lines" } else { "" };
    let mut out = Vec::new();
    if !t.reasons.is_empty() {
        out.push((
            "last attempt refused".to_owned(),
            t.reasons.iter().map(String::as_str).collect(),
        ));
    }
    for (name, text, cut) in [
        ("stderr", &t.stderr, t.stderr_truncated),
        ("stdout", &t.stdout, t.stdout_truncated),
    ] {
        if let Some(text) = text {
            out.push((format!("{name}{}", more(cut)), text.lines().collect()));
        }
    }
    out
}
