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
//! A crate of its own (`plangate-model`), so that this is checked by the
//! compiler: it depends on nothing but serde, serde_json and schemars (no
//! I/O crate) and on no other crate of the workspace. These are data types
//! with their names and orderings, and the few constructors that need nothing
//! else (`Diagnostic::at` a `Pos`, `Rejection::at` a byte offset,
//! `Decision::with_permission`, `EffectivePolicy::permission_lists`). The
//! logic that produces them stays with its owner (`policy::decide`, `plan`'s
//! loader, the guard); what a tool is to the rest lives in the binary crate
//! (`tools::registry::ToolSpecOf::spec`), which cargo keeps from coming back here.

pub mod audit;
pub mod decision;
pub mod diag;
pub mod diff;
pub mod finding;
pub mod permission;
pub mod policy;
pub mod publish;
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
pub use diag::{Diagnostic, Pos};
pub use diff::{Change, DiffSummary, FileChange, Method};
pub use finding::Finding;
pub use permission::{Conditions, Level, PermissionRule, RuleList};
pub use policy::{BudgetBlock, EffectivePolicy, PolicyBlock, StepBudget};
pub use rejection::{Category, Rejection};
pub use report::{
    CarriedOver, MergedShard, OutputTail, PartialReason, PlanRef, Report, RollbackReport,
    SCHEMA_VERSION, ShardInfo, ShowOutput, StepReport,
};
pub use risk::{OnApproval, Risk, Tolerance};
pub use run_status::{Conclusion, PartialKind, RunStatus};
pub use sandbox::{Availability, Backend, Filesystem, Limits, Profile, SandboxMode, StepSandbox};
pub use step::{
    AgentChanges, AgentResult, AgentSession, AttemptRecord, ChangedPath, CommandAttempt,
    HttpAttempt, StepEnvironment, StepOutcome, StepStatus, UntrustedText,
};
pub use tool::ToolName;
pub use usage::Usage;
