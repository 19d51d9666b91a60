//! Running an in-process tool on the blocking pool, bounded by the step's
//! timeout and the run's stop signal; what such a tool returns; short
//! blocking work of a step done in place ([`in_place`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::context::StepContext;
use super::step::Step;
use crate::model::{StepOutcome, StepStatus};

/// Why an in-process tool must stop early, polled by its loops.
#[derive(Debug, Clone)]
pub(crate) struct Stop {
    deadline: Instant,
    flag: Arc<AtomicBool>,
}

impl Stop {
    /// A stop that fires at `timeout` from now (or when [`Stop::fire`] is called).
    pub(crate) fn after(timeout: Duration) -> Stop {
        Stop {
            deadline: Instant::now() + timeout,
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the tool must stop now (timeout, signal or exhausted budget).
    pub(crate) fn now(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }

    /// Time left before the deadline (zero once stopped).
    pub(crate) fn remaining(&self) -> Duration {
        if self.flag.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            self.deadline.saturating_duration_since(Instant::now())
        }
    }

    /// Whether the deadline itself has passed (whatever the flag says).
    pub(crate) fn deadline_passed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    fn fire(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }
}

/// What an in-process tool returns: its outcome, with the status and error
/// set, and its `result.json` (the design's return object) if it got that far.
pub(crate) struct ToolReturn {
    /// The outcome so far (status, error, artifacts the tool wrote itself).
    pub outcome: StepOutcome,
    /// The design's return object, written to `artifacts/<step>/result.json`.
    pub result: Option<serde_json::Value>,
}

/// Run an in-process tool on the blocking pool, bounded by the step's timeout
/// and the run's stop signal. The tool polls [`Stop`]; if it does not return
/// within the kill grace after being told to stop, the step is reported as
/// timed out (or stopped) anyway and its thread is left to finish on its own.
pub(crate) async fn blocking_tool<F>(
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
    f: F,
) -> StepOutcome
where
    F: FnOnce(&StepContext, &Stop) -> ToolReturn + Send + 'static,
{
    let stop = Stop::after(step.timeout);
    let (ctx2, stop2) = (ctx.clone(), stop.clone());
    let mut task = tokio::task::spawn_blocking(move || f(&ctx2, &stop2));
    let mut cancel = ctx.cancel.clone();
    let deadline = tokio::time::sleep(step.timeout);
    tokio::pin!(deadline);
    let mut why: Option<StepStatus> = None;
    let mut watch_cancel = true;
    let joined = loop {
        tokio::select! {
            r = &mut task => break Some(r),
            () = &mut deadline => {
                why = Some(StepStatus::TimedOut);
                stop.fire();
                break tokio::time::timeout(ctx.kill_grace, &mut task).await.ok();
            }
            cancelled = async { cancel.wait_for(|c| *c).await.is_ok() }, if watch_cancel => {
                if cancelled {
                    why = Some(StepStatus::Failed);
                    stop.fire();
                    break tokio::time::timeout(ctx.kill_grace, &mut task).await.ok();
                }
                // The sender is gone: nothing can cancel any more.
                watch_cancel = false;
            }
        }
    };
    let mut ret = match joined {
        Some(Ok(r)) => r,
        Some(Err(e)) => ToolReturn {
            outcome: internal_failure(started, format!("internal error: {e}")),
            result: None,
        },
        None => ToolReturn {
            outcome: internal_failure(started, "did not stop within the kill grace".to_owned()),
            result: None,
        },
    };
    // A tool that returns after its deadline cut its work short to do so:
    // the step timed out, whatever the tool managed before.
    let timed_out = why == Some(StepStatus::TimedOut) || (why.is_none() && stop.deadline_passed());
    if timed_out {
        ret.outcome.status = StepStatus::TimedOut;
        ret.outcome.error = Some(format!("timed out after {:?}", step.timeout));
    } else if why.is_some() {
        ret.outcome.status = StepStatus::Failed;
        ret.outcome.error = Some(format!(
            "{}; the step was stopped",
            ctx.shared.stop_reason()
        ));
    }
    if let Some(result) = &ret.result {
        match write_result(ctx, result) {
            Ok(rel) => ret.outcome.artifacts.push(rel),
            Err(e) => {
                ret.outcome.status = StepStatus::Failed;
                ret.outcome.error = Some(e);
            }
        }
    }
    ret.outcome.started_at = started;
    ret.outcome.duration = started.elapsed().unwrap_or_default();
    ret.outcome
}

/// Write a tool's return object to `artifacts/<step>/result.json`; returns its
/// path relative to the output directory. Secrets in it are found and
/// redacted by [`super::sweep`] like in any artifact.
pub(crate) fn write_result(
    ctx: &StepContext,
    result: &serde_json::Value,
) -> Result<String, String> {
    let rel = format!("{}/result.json", ctx.artifacts_rel);
    std::fs::create_dir_all(&ctx.artifacts_dir)
        .and_then(|()| {
            std::fs::write(
                ctx.out_dir.join(&rel),
                serde_json::to_vec_pretty(result).unwrap_or_default(),
            )
        })
        .map_err(|e| format!("cannot write {rel}: {e}"))?;
    Ok(rel)
}

/// A failed outcome that never got to run anything.
pub(crate) fn internal_failure(started: SystemTime, error: String) -> StepOutcome {
    let mut o = StepOutcome::new(started);
    o.error = Some(error);
    o
}

/// Run blocking work on this worker thread (`block_in_place`: the
/// runtime moves the worker's other tasks elsewhere meanwhile); a panic is
/// caught and returned as its message, as a joined blocking task's would be.
pub(crate) fn in_place<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    tokio::task::block_in_place(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
            p.downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned())
        })
    })
}
