//! The events of `audit.jsonl`: one [`AuditEvent`] variant per line kind.
//!
//! A line is the event as a JSON object whose `event` key names the variant
//! (snake_case), plus a `ts` key (RFC 3339) the writer adds. The writer
//! (`report::audit`) puts the keys in alphabetical order, as the log always
//! had them; field names and values here are the log's contract.

use serde::Serialize;

use super::{CarriedOver, Method, RunStatus, StepStatus, Usage};
use super::{DecisionKind, EffectivePolicy, Rejection, RiskAssessment};

/// One line of `audit.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AuditEvent {
    /// The plan was read and validated.
    PlanLoaded {
        /// The plan's id.
        plan_id: String,
        /// The plan file, as given.
        path: String,
        /// sha256 of the plan file.
        sha256: String,
        /// How many steps (after matrix expansion).
        steps: usize,
    },
    /// The plan (or the flags) were invalid: nothing ran.
    PlanInvalid {
        /// How many problems.
        errors: usize,
    },
    /// The run started.
    RunStarted {
        /// The run's id.
        run_id: String,
        /// The policy in force.
        policy: Box<EffectivePolicy>,
        /// Nothing is executed on purpose.
        dry_run: bool,
        /// Step ids approved in advance.
        approvals: Vec<String>,
        /// The workspace's git `HEAD`, when in a git work tree.
        #[serde(skip_serializing_if = "Option::is_none")]
        workspace_head: Option<String>,
        /// The run this one resumes.
        #[serde(skip_serializing_if = "Option::is_none")]
        resumed_from: Option<CarriedOver>,
    },
    /// The policy decided about a step.
    Decision {
        /// Step id.
        step: String,
        /// The three risk figures.
        risk: RiskAssessment,
        /// The verdict.
        decision: DecisionKind,
        /// Why.
        reason: String,
    },
    /// A connection through a step's egress proxy (refused: at once;
    /// allowed: when it closed or the step ended).
    Egress {
        /// Step id.
        step: String,
        /// The host asked for (empty when the request could not be read).
        host: String,
        /// The port asked for.
        port: u16,
        /// The address connected to.
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<String>,
        /// Let through.
        allowed: bool,
        /// Why it was refused (or could not be reached).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Bytes from the step to the host.
        bytes_out: u64,
        /// Bytes from the host to the step.
        bytes_in: u64,
    },
    /// A step started.
    StepStarted {
        /// Step id.
        step: String,
        /// Start order, from 1.
        sequence: u32,
    },
    /// A step ended after running.
    StepFinished {
        /// Step id.
        step: String,
        /// Start order, from 1.
        sequence: u32,
        /// Final state.
        status: StepStatus,
        /// Exit code of the main process.
        exit_code: Option<i32>,
        /// Wall time.
        duration_ms: u64,
        /// Output dropped at the cap.
        truncated: bool,
        /// What went wrong.
        error: Option<String>,
    },
    /// A bash step's attempt failed and its command will run again (`retry:`).
    StepRetry {
        /// Step id.
        step: String,
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Attempts in all.
        max_attempts: u32,
        /// How it ended.
        status: StepStatus,
        /// Its exit code, if it exited.
        exit_code: Option<i32>,
        /// Why it failed.
        error: Option<String>,
        /// The wait before the next attempt.
        wait_ms: u64,
    },
    /// A step will not run.
    StepNotRun {
        /// Step id.
        step: String,
        /// denied, blocked, skipped or not_run.
        status: StepStatus,
        /// Why.
        reason: String,
    },
    /// A step is carried over from the run this one resumes.
    StepCarriedOver {
        /// Step id.
        step: String,
        /// The run it comes from.
        from: Option<CarriedOver>,
    },
    /// An agent attempt that was accepted or failed.
    AgentAttempt(AttemptEvent),
    /// An agent answer the fail-close parser rejected.
    ParseFailure(AttemptEvent),
    /// A secret was found (never its value).
    Finding {
        /// The step whose output held it (absent for the diff's findings).
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        /// Rule id.
        rule: String,
        /// Where, relative to the output directory or workspace.
        location: String,
        /// 1-based line.
        line: u64,
        /// Stable fingerprint.
        fingerprint: String,
    },
    /// The files a step (or its rollback) changed.
    StepChanges {
        /// Step id.
        step: String,
        /// Its rollback, not the step.
        rollback: bool,
        /// How many files (listed and omitted).
        files: u64,
    },
    /// A completed step's rollback started.
    RollbackStarted {
        /// Step id.
        step: String,
        /// Start order, from 1 (shared with steps).
        sequence: u32,
    },
    /// A rollback ended.
    RollbackFinished {
        /// Step id.
        step: String,
        /// Its final state.
        status: StepStatus,
        /// What went wrong.
        error: Option<String>,
    },
    /// What the run changed in the workspace.
    Diff {
        /// git, snapshot or none.
        method: Method,
        /// Files changed.
        files_changed: u64,
        /// Lines added.
        insertions: u64,
        /// Lines removed.
        deletions: u64,
        /// What the reader should know.
        notes: Vec<String>,
    },
    /// A file or folder of the output folder was renamed by a sweep: its
    /// name held a secret, or a piece of one (or was no UTF-8).
    Renamed {
        /// The step whose artifact folder holds it (absent: elsewhere).
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        /// Its new path, relative to the output directory.
        path: String,
    },
    /// Something plangate could not write.
    Error {
        /// Which file.
        what: String,
        /// Why.
        error: String,
    },
    /// The run is over.
    RunFinished {
        /// How it ended.
        status: RunStatus,
        /// The process exit code.
        exit_code: u8,
    },
    /// A publication to GitHub (after the report was final).
    Github {
        /// What was published (`comment`, `check run`, ...).
        target: String,
        /// done, skipped or failed.
        result: String,
        /// What happened, in one line.
        detail: String,
    },
}

/// One agent attempt in the log (`agent_attempt` or `parse_failure`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptEvent {
    /// Step id.
    pub step: String,
    /// 1-based.
    pub attempt: u32,
    /// accepted | rejected | error.
    pub verdict: String,
    /// Why the answer was refused.
    pub rejections: Vec<Rejection>,
    /// Tokens and cost of this call.
    pub usage: Usage,
}
