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

pub(crate) mod audit;
pub(crate) mod decision;
pub(crate) mod diag;
pub(crate) mod diff;
pub(crate) mod finding;
pub(crate) mod permission;
pub(crate) mod policy;
pub(crate) mod publish;
pub(crate) mod rejection;
pub(crate) mod report;
pub(crate) mod risk;
pub(crate) mod run_status;
pub(crate) mod sandbox;
pub(crate) mod step;
pub(crate) mod tool;
pub(crate) mod usage;

pub(crate) use audit::{AttemptEvent, AuditEvent};
pub(crate) use decision::{Decision, DecisionKind, RiskAssessment, Verdict};
pub(crate) use diag::Diagnostic;
pub(crate) use diff::{Change, DiffSummary, FileChange, Method};
pub(crate) use finding::Finding;
pub(crate) use permission::{Conditions, Level, PermissionRule};
pub(crate) use policy::{BudgetBlock, EffectivePolicy, PolicyBlock, StepBudget};
pub(crate) use rejection::{Category, Rejection};
pub(crate) use report::{
    CarriedOver, MergedShard, OutputTail, PartialReason, PlanRef, Report, RollbackReport,
    SCHEMA_VERSION, ShardInfo, ShowOutput, StepReport,
};
pub(crate) use risk::{OnApproval, Risk, Tolerance};
pub(crate) use run_status::{Conclusion, PartialKind, RunStatus};
pub(crate) use sandbox::{
    Availability, Backend, Filesystem, Limits, Profile, SandboxMode, StepSandbox,
};
pub(crate) use step::{
    AgentChanges, AgentResult, AgentSession, AttemptRecord, ChangedPath, CommandAttempt,
    HttpAttempt, StepEnvironment, StepOutcome, StepStatus, UntrustedText,
};
pub(crate) use tool::ToolName;
pub(crate) use usage::Usage;
