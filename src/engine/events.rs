//! The event stream between doing and reporting.
//!
//! The engine emits [`RunEvent`]s and nothing else; the report, the artifact
//! manifest, the audit log and the console lines are all built from them
//! (see `report`). A new output format is one more consumer.

use std::time::SystemTime;

use crate::model::PartialReason;
use crate::model::{Decision, RiskAssessment};
use crate::model::{DiffSummary, Finding, RunStatus, StepOutcome, StepReport, StepStatus};

/// One event of a run.
#[derive(Debug, Clone)]
pub(crate) enum RunEvent {
    /// The policy decided about a step (emitted for every step before anything runs).
    Decided {
        /// Step index.
        step: usize,
        /// The three risk figures.
        risk: RiskAssessment,
        /// The decision and its reason.
        decision: Decision,
        /// The sandbox its processes will run in, when it runs any.
        sandbox: Option<crate::model::StepSandbox>,
    },
    /// A step started.
    StepStarted {
        /// Step index.
        step: usize,
        /// Start order, from 1.
        sequence: u32,
        /// When.
        at: SystemTime,
    },
    /// A long step is still at work (console only).
    Heartbeat {
        /// Step index.
        step: usize,
        /// Elapsed time and what its agent reported so far.
        beat: crate::tools::Beat,
    },
    /// A bash step's attempt failed; its command runs again after a wait (`retry:`).
    StepRetrying {
        /// Step index.
        step: usize,
        /// The failed attempt and the wait.
        notice: crate::tools::RetryNotice,
    },
    /// A step ended after running.
    StepFinished {
        /// Step index.
        step: usize,
        /// Start order, from 1.
        sequence: u32,
        /// What happened.
        outcome: StepOutcome,
    },
    /// A connection through a step's egress proxy (allowed: when it closed;
    /// refused: at once).
    Egress {
        /// Step index.
        step: usize,
        /// What it asked for and what happened.
        conn: crate::egress::Connection,
    },
    /// What the run may publish, decided after its gates (`publish::gate`).
    Publish {
        /// One row per request (per declaration in a dry run).
        entries: Vec<crate::model::publish::PublishEntry>,
    },
    /// A step will not run.
    StepNotRun {
        /// Step index.
        step: usize,
        /// denied, blocked, skipped or not_run.
        status: StepStatus,
        /// Why, in one line.
        reason: String,
    },
    /// A step is not run again: it succeeded in the run this one resumes.
    StepCarriedOver {
        /// Step index.
        step: usize,
        /// Its report in that run, `carried_over` set.
        previous: Box<StepReport>,
        /// The secrets found in its output then.
        findings: Vec<Finding>,
    },
    /// A completed step's rollback command started.
    RollbackStarted {
        /// Step index.
        step: usize,
        /// Start order, from 1 (shared with steps).
        sequence: u32,
    },
    /// A rollback command ended.
    RollbackFinished {
        /// Step index.
        step: usize,
        /// Start order, from 1 (shared with steps).
        sequence: u32,
        /// What happened.
        outcome: StepOutcome,
    },
    /// The files a step (or its rollback) changed, when it ran alone.
    StepChanges {
        /// Step index.
        step: usize,
        /// Its rollback command, not the step.
        rollback: bool,
        /// Relative to the workspace, sorted, at most `diff::STEP_FILES_MAX`.
        files: Vec<String>,
        /// How many more were left out.
        omitted: u64,
    },
    /// What the run changed in the workspace (after the last step and the rollbacks).
    Diff {
        /// The report's `diff` block.
        summary: DiffSummary,
        /// `diff-summary.md` (written through the redaction layer).
        markdown: String,
        /// Secrets in the diff that no step's artifacts already showed.
        findings: Vec<Finding>,
    },
    /// plangate itself failed (a panic caught at the top): the report's
    /// `errors` says so, redacted; a `RunFinished` (failed) follows.
    InternalError {
        /// What failed.
        message: String,
    },
    /// The run is over.
    RunFinished {
        /// How it ended.
        status: RunStatus,
        /// What it left undone although the plan let it go on (the report's `partial_reasons`).
        partial: Vec<PartialReason>,
    },
}
