//! The run's vocabulary: the types the engine, the tools, the report, resume
//! and merge all speak, in one place so that dependencies run one way.
//!
//! ```text
//!        model                   this module: tools, risks, decisions, permission rules,
//!                                diagnostics, rejections, statuses, outcomes, findings,
//!                                the report's shape
//! plan, policy, guard, secrets   pure: what a plan says and how risky it is
//!          ^
//!   engine, tools, process, sandbox, diff, resume
//!          ^
//!       report                   consumes the engine's events, writes report.json and audit.jsonl
//!          ^
//!   commands (lib), merge, github, integrations
//! ```
//!
//! Nothing here does I/O or depends on any other module of the crate: these
//! are data types with their names and orderings. The logic that produces
//! them stays with its owner (`policy::decide`, `plan`'s loader, the guard),
//! some of it as `impl` blocks there (`Diagnostic::at`, `Rejection::at`,
//! `ToolName::spec`, `Decision::with_permission`).

pub mod audit;
pub mod decision;
pub mod diag;
pub mod diff;
pub mod finding;
pub mod permission;
pub mod policy;
pub mod rejection;
pub mod report;
pub mod risk;
pub mod run_status;
pub mod sandbox;
pub mod step;
pub mod tool;
pub mod usage;

pub use audit::{AttemptEvent, AuditEvent};
pub use decision::{Decision, DecisionKind, RiskAssessment, Verdict};
pub use diag::Diagnostic;
pub use diff::{Change, DiffSummary, FileChange, Method};
pub use finding::Finding;
pub use permission::{Conditions, Level, PermissionRule};
pub use policy::{BudgetBlock, EffectivePolicy, HOST_PATTERN, PolicyBlock};
pub use rejection::{Category, Rejection};
pub use report::{
    CarriedOver, MergedShard, PlanRef, Report, RollbackReport, SCHEMA_VERSION, ShardInfo,
    StepReport,
};
pub use risk::{OnApproval, Risk, Tolerance};
pub use run_status::RunStatus;
pub use sandbox::{Availability, Backend, Limits};
pub use step::{AttemptRecord, StepOutcome, StepStatus};
pub use tool::ToolName;
pub use usage::Usage;
