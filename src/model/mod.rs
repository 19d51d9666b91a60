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

pub mod audit;
pub mod diff;
pub mod finding;
pub mod report;
pub mod run_status;
pub mod sandbox;
pub mod step;
pub mod usage;

pub use audit::{AttemptEvent, AuditEvent};
pub use diff::{Change, DiffSummary, FileChange, Method};
pub use finding::Finding;
pub use report::{
    CarriedOver, MergedShard, PlanRef, Report, RollbackReport, SCHEMA_VERSION, ShardInfo,
    StepReport,
};
pub use run_status::RunStatus;
pub use sandbox::{Availability, Backend};
pub use step::{AttemptRecord, StepOutcome, StepStatus};
pub use usage::Usage;
