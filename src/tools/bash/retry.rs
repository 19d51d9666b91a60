//! `retry:` on a bash step: run the command again after a failed attempt.
//!
//! An attempt that fails (non-zero exit, killed, timed out, `expected_output`
//! not matched, a bad `$PLANGATE_OUTPUT`) runs again after a wait (`delay`,
//! times `backoff` after each attempt, at most 600 s), up to `max_attempts`.
//! Never retried: a stopping run (a signal, the budget), a refusal (git's
//! code-running files changed), a failure of plangate itself, and an attempt
//! whose output held a secret under `fail_on_secrets` (each failed attempt
//! is swept before the wait). A wait ends at once when the run stops. Each
//! attempt starts with an empty `$PLANGATE_OUTPUT`; outputs come from the
//! last one. A failed attempt's streams are kept as `attempt-N.stdout.txt`
//! and `attempt-N.stderr.txt`; the last attempt's are `stdout.txt` and
//! `stderr.txt`. The step's outcome is the last attempt's, with every
//! attempt in `command_attempts`.

use std::time::{Duration, Instant, SystemTime};

use crate::format::retry::Retry;
use crate::model::{CommandAttempt, Finding, StepOutcome};
use crate::tools::params::bash::BashAction;
use crate::tools::step::Step;
use crate::tools::{RetryNotice, StepContext};

/// What the failed attempts left for the step's outcome.
#[derive(Default)]
struct Earlier {
    artifacts: Vec<String>,
    findings: Vec<Finding>,
    output_bytes: u64,
    truncated: bool,
}

impl Earlier {
    /// Take a failed attempt's kept files, findings and byte counts.
    fn take(&mut self, out: &mut StepOutcome) {
        self.artifacts.append(&mut out.artifacts);
        self.findings.append(&mut out.findings);
        self.output_bytes += out.output_bytes;
        self.truncated |= out.truncated;
    }
}

/// Run a bash step under its `retry:` block.
pub(super) async fn run(
    b: &BashAction,
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
    retry: &Retry,
) -> StepOutcome {
    let mut records: Vec<CommandAttempt> = Vec::new();
    let mut earlier = Earlier::default();
    let mut n = 1u32;
    let mut last = loop {
        let at = SystemTime::now();
        let (out, retryable) = super::attempt(b, step, ctx, at).await;
        let mut record = record_of(n, at, &out);
        if !(retryable && out.status.is_failure() && n < retry.max_attempts && !stopping(ctx)) {
            records.push(record);
            break out;
        }
        let mut out = sweep(out, ctx, &step.id).await;
        if !out.findings.is_empty() && ctx.fail_on_secrets {
            records.push(record);
            break out;
        }
        if let Err(e) = keep_as_attempt(&mut out, ctx, n) {
            out.error = Some(format!(
                "{}; not retried: its output could not be kept: {e}",
                out.error.unwrap_or_default()
            ));
            records.push(record);
            break out;
        }
        record.files = streams(&out.artifacts);
        let wait = retry.wait_after(n);
        if let Some(notices) = &ctx.on_retry {
            notices.send(RetryNotice {
                attempt: n,
                max_attempts: retry.max_attempts,
                wait,
                status: out.status,
                exit_code: out.exit_code,
                error: out.error.clone(),
            });
        }
        let waited = Instant::now();
        let go_on = wait_or_stop(ctx, wait).await;
        record.wait_ms = Some(millis(waited.elapsed()));
        records.push(record);
        if !go_on {
            out.error = Some(format!(
                "{}; {} before attempt {}/{} started",
                out.error.unwrap_or_default(),
                ctx.shared.stop_reason(),
                n + 1,
                retry.max_attempts
            ));
            earlier.take(&mut out);
            break out;
        }
        earlier.take(&mut out);
        n += 1;
    };
    earlier.artifacts.append(&mut last.artifacts);
    last.artifacts = earlier.artifacts;
    earlier.findings.append(&mut last.findings);
    last.findings = earlier.findings;
    last.output_bytes += earlier.output_bytes;
    last.truncated |= earlier.truncated;
    last.attempts = n;
    last.started_at = started;
    last.duration = started.elapsed().unwrap_or_default();
    last.command_attempts = records;
    last
}

/// Whether the run is stopping (a signal, or the budget ran out).
fn stopping(ctx: &StepContext) -> bool {
    *ctx.cancel.borrow() || ctx.shared.check().is_some()
}

/// Wait `wait`, unless the run stops first; true when the next attempt may start.
async fn wait_or_stop(ctx: &StepContext, wait: Duration) -> bool {
    let mut cancel = ctx.cancel.clone();
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        stopped = async { cancel.wait_for(|c| *c).await.is_ok() } => {
            if stopped {
                return false;
            }
            // The sender is gone: nothing can stop the run any more.
            tokio::time::sleep(wait).await;
        }
    }
    !stopping(ctx)
}

/// One attempt as the report lists it.
fn record_of(n: u32, at: SystemTime, out: &StepOutcome) -> CommandAttempt {
    CommandAttempt {
        attempt: n,
        status: out.status,
        exit_code: out.exit_code,
        signal: out.signal,
        started_at: humantime::format_rfc3339_millis(at).to_string(),
        duration_ms: millis(out.duration),
        wait_ms: None,
        error: out.error.clone(),
        files: streams(&out.artifacts),
    }
}

/// The captured streams among a step's artifacts.
fn streams(artifacts: &[String]) -> Vec<String> {
    artifacts
        .iter()
        .filter(|a| a.ends_with("stdout.txt") || a.ends_with("stderr.txt"))
        .cloned()
        .collect()
}

/// Scan a failed attempt's output for secrets now (off the async workers),
/// as the step's own sweep would.
async fn sweep(out: StepOutcome, ctx: &StepContext, id: &str) -> StepOutcome {
    let (ctx, step) = (ctx.clone(), id.to_owned());
    let folder = ctx.artifacts_rel.clone();
    let started = out.started_at;
    tokio::task::spawn_blocking(move || {
        let mut out = out;
        crate::tools::sweep(&mut out, &ctx, &step);
        out
    })
    .await
    .unwrap_or_else(|e| {
        // A crashed sweep is an error, never "no findings" (exit 4).
        let why = format!("internal error while scanning: {e}");
        let mut o = crate::tools::internal_failure(started, why.clone());
        o.findings
            .push(crate::tools::unscannable(Some(id.to_owned()), folder, &why));
        o
    })
}

/// Keep a failed attempt's streams as `attempt-N.stdout.txt` and
/// `attempt-N.stderr.txt` (its findings follow them); its other artifacts
/// (the `$PLANGATE_OUTPUT` file, emptied by the next attempt) are dropped.
fn keep_as_attempt(out: &mut StepOutcome, ctx: &StepContext, n: u32) -> std::io::Result<()> {
    let mut kept = Vec::new();
    let mut failed = None;
    for rel in std::mem::take(&mut out.artifacts) {
        let Some(name) = ["stdout.txt", "stderr.txt"]
            .into_iter()
            .find(|s| rel == format!("{}/{s}", ctx.artifacts_rel))
        else {
            continue;
        };
        let new = format!("{}/attempt-{n}.{name}", ctx.artifacts_rel);
        if let Err(e) = std::fs::rename(ctx.out_dir.join(&rel), ctx.out_dir.join(&new)) {
            failed.get_or_insert(e);
            kept.push(rel);
            continue;
        }
        for f in &mut out.findings {
            if f.location == rel {
                f.location.clone_from(&new);
            }
        }
        kept.push(new);
    }
    out.artifacts = kept;
    failed.map_or(Ok(()), Err)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
