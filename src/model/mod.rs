//! The run's vocabulary: the types the engine, the tools, the report, resume
//! and merge all speak, in one place so that dependencies run one way.
//!
//! ```text
//! plan, policy, guard, secrets   pure: what a plan says and how risky it is
//!          ^
//!        model                   this module: statuses, outcomes, findings, the report's shape
//!          ^
//!   engine, tools, process, sandbox, diff, resume
//!          ^
//!       report                   consumes the engine's events, writes report.json and audit.jsonl
//!          ^
//!   commands (lib), merge, github, integrations
//! ```
//!
//! Nothing here does I/O or depends on anything above the pure layer. The
//! report's types name the plan's `Diagnostic` and the policy's decisions,
//! which is why this module sits above `plan` and `policy` rather than below.

pub(crate) mod audit;
pub(crate) mod diff;
pub(crate) mod finding;
pub(crate) mod report;
pub(crate) mod run_status;
pub(crate) mod sandbox;
pub(crate) mod step;
pub(crate) mod usage;

pub(crate) use audit::{AttemptEvent, AuditEvent};
pub(crate) use diff::{Change, DiffSummary, FileChange, Method};
pub(crate) use finding::Finding;
pub(crate) use report::{
    CarriedOver, MergedShard, PlanRef, Report, RollbackReport, SCHEMA_VERSION, ShardInfo,
    StepReport,
};
pub(crate) use run_status::RunStatus;
pub(crate) use sandbox::{Availability, Backend};
pub(crate) use step::{AttemptRecord, StepOutcome, StepStatus};
pub(crate) use usage::Usage;
