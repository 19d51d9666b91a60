//! The report's shape (`report.json`, schema_version 1): SPEC's fields and
//! what users need besides. Serialize and Deserialize, so a saved report can
//! be read back.

use serde::{Deserialize, Serialize};

use super::{AttemptRecord, Availability, DiffSummary, Finding, RunStatus, StepStatus, Usage};
use super::{Conclusion, PartialKind};
use super::{Decision, Diagnostic, EffectivePolicy, RiskAssessment};

/// The current report format version.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Format version.
    pub schema_version: u32,
    /// The plangate that wrote it.
    pub plangate_version: String,
    /// The run's id.
    pub run_id: String,
    /// True while the run is going on. A run killed outright leaves
    /// `in_progress: true` with status `interrupted`: it did not finish.
    pub in_progress: bool,
    /// Which plan.
    pub plan: PlanRef,
    /// How the run ended (while in progress: `interrupted`, see `in_progress`).
    pub status: RunStatus,
    /// The process exit code (SPEC's table).
    pub exit_code: u8,
    /// `success`, `partial` (exit 0, but see `partial_reasons`) or `failure`
    /// (any other exit code); absent in reports written before it existed
    /// (read them with [`Report::conclusion`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<Conclusion>,
    /// What the run left undone although the plan let it go on: steps skipped
    /// for want of approval (and their dependents skipped because of them),
    /// failures allowed by `continue_on_error`. Listed whatever the status;
    /// with exit 0 they make the conclusion `partial`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_reasons: Vec<PartialReason>,
    /// `--strict`: a partial success was made a failure (`denied` or `failed`).
    #[serde(default)]
    pub strict: bool,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339; null while in progress.
    pub finished_at: Option<String>,
    /// Wall time so far.
    pub duration_ms: u64,
    /// Nothing was executed on purpose.
    pub dry_run: bool,
    /// The workspace the run worked on.
    pub workspace: String,
    /// The policy in force (null for an invalid plan).
    pub policy: Option<EffectivePolicy>,
    /// Step ids approved in advance.
    pub approvals: Vec<String>,
    /// What the sandbox pre-flight found (`bwrap`, `landlock+seccomp` or `none`, and why); absent when no step runs a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Availability>,
    /// Credentials found in the workspace's git configuration (keys only,
    /// users and passwords masked) that were withheld from every step for
    /// the run and put back at its end; plangate's git push or pull used them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git_credentials_withheld: Vec<String>,
    /// Every step of the plan, in plan order.
    pub steps: Vec<StepReport>,
    /// Secrets found (rule, location, line, fingerprint; never the value).
    pub findings: Vec<Finding>,
    /// What the run changed in the workspace; null until the diff summary is computed.
    pub diff: Option<DiffSummary>,
    /// Tokens and cost of all agent calls (the sum of the steps').
    pub usage: Usage,
    /// Why the budget ran out, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_exhausted: Option<String>,
    /// The workspace's git `HEAD` when the run started (null outside a git
    /// work tree); `--resume` refuses a report whose HEAD is not the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_head: Option<String>,
    /// The run this one resumed (`--resume`): its id and report file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<CarriedOver>,
    /// Which shard of the plan this run covered (`run --shard i/N`), or which shards were merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// The plan's input values (redacted like everything written); absent when it has none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub inputs: std::collections::BTreeMap<String, serde_json::Value>,
    /// The untrusted inputs: where each came from, whether it was withheld, what was removed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub untrusted_inputs: std::collections::BTreeMap<String, super::UntrustedText>,
    /// sha256 over the input values as given (`--resume` refuses other values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_sha256: Option<String>,
    /// What the run asked to publish and what became of it (`publish:` in the plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publish: Vec<super::publish::PublishEntry>,
    /// Plan or usage errors (status `invalid`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Diagnostic>,
}

impl Report {
    /// The conclusion: the recorded one, or (a report from before it was
    /// recorded) the one its status gives.
    pub fn conclusion(&self) -> Conclusion {
        self.conclusion
            .unwrap_or_else(|| self.status.conclusion(!self.partial_reasons.is_empty()))
    }
}

/// One reason a run succeeded only partly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialReason {
    /// The step.
    pub step: String,
    /// `approval_required` or `allowed_failure`.
    pub reason: PartialKind,
    /// A step skipped because its dependency was skipped for want of
    /// approval: the step that was (absent for that step itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

impl PartialReason {
    /// One sentence, with each step id passed through `id` (a code span, quotes).
    pub fn describe(&self, id: impl Fn(&str) -> String) -> String {
        match (self.reason, &self.via) {
            (PartialKind::ApprovalRequired, None) => format!(
                "{} was skipped: it needs an approval it does not have (on_approval_required: skip)",
                id(&self.step)
            ),
            (PartialKind::ApprovalRequired, Some(via)) => format!(
                "{} was skipped: it depends on {}, which needs an approval",
                id(&self.step),
                id(via)
            ),
            (PartialKind::AllowedFailure, _) => {
                format!("{} failed, allowed by continue_on_error", id(&self.step))
            }
        }
    }
}

/// Whose output the report keeps and the summaries show (`--show-output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShowOutput {
    /// Failed steps' (allowed failures included).
    #[default]
    Failures,
    /// Every step that ran.
    All,
    /// Nobody's.
    None,
}

/// The end of a step's output, as the console, the annotations, JUnit and
/// the summaries show it: stripped of escape sequences, redacted, then cut to
/// its last lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputTail {
    /// The last lines of stdout (absent when it printed nothing or was not captured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// The last lines of stderr (an agent step: its last attempt's CLI stderr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// An agent step: why its last attempt was refused (its rejections, or its error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Earlier lines (or bytes) of stdout were left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdout_truncated: bool,
    /// Earlier lines (or bytes) of stderr were left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stderr_truncated: bool,
}

impl OutputTail {
    /// Nothing to show.
    pub fn is_empty(&self) -> bool {
        self.stdout.is_none() && self.stderr.is_none() && self.reasons.is_empty()
    }
}

/// The plan a report is about.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanRef {
    /// The plan's id (null if it could not be read).
    pub id: Option<String>,
    /// The file, as given.
    pub path: String,
    /// sha256 of the file (null if it could not be read).
    pub sha256: Option<String>,
    /// The plan's objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
}

impl StepReport {
    /// What the console and the summaries warn about an agent step: tool
    /// calls its CLI's permission mode refused (the agent could not do all
    /// it was asked to) and, for a read-only step, the edits it tried.
    pub fn agent_warnings(&self) -> Vec<String> {
        let mut v = Vec::new();
        for a in &self.agent_attempts {
            let Some(n) = a
                .session
                .as_ref()
                .map(|s| s.permission_denials)
                .filter(|n| *n > 0)
            else {
                continue;
            };
            v.push(format!(
                "attempt {}: the agent CLI's permission mode refused {n} tool call(s); the agent could not run everything it was asked to (see agent_attempts[].session)",
                a.attempt
            ));
        }
        if let Some(c) = &self.attempted_changes {
            const SHOWN: usize = 5;
            // A path is the agent's: no control character of it reaches the console.
            let mut names: Vec<String> = c
                .files
                .iter()
                .take(SHOWN)
                .map(|f| {
                    f.path
                        .chars()
                        .map(|ch| if ch.is_control() { '?' } else { ch })
                        .collect()
                })
                .collect();
            if c.files.len() > SHOWN {
                names.push("...".to_owned());
            }
            v.push(format!(
                "read-only: the agent tried to change {} file(s), not applied: {}",
                c.files.len(),
                names.join(", ")
            ));
        }
        v
    }
}

/// One step in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepReport {
    /// Step id.
    pub id: String,
    /// Tool name.
    pub tool: String,
    /// For humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Final state (while in progress: `not_run` until it ends).
    pub status: StepStatus,
    /// Declared, classified, effective.
    pub risk: Option<RiskAssessment>,
    /// The decision and its reason.
    pub approval: Option<Decision>,
    /// Ids it depends on.
    pub dependencies: Vec<String>,
    /// Exit code of the main process.
    pub exit_code: Option<i32>,
    /// Signal that killed it (not sent by plangate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// RFC 3339, when it started.
    pub started_at: Option<String>,
    /// RFC 3339, when it ended.
    pub finished_at: Option<String>,
    /// Wall time.
    pub duration_ms: u64,
    /// Attempts made.
    pub attempts: u32,
    /// Files, relative to the output directory.
    pub artifacts: Vec<String>,
    /// Output dropped at the cap.
    pub truncated: bool,
    /// Bytes written to stdout and stderr.
    pub output_bytes: u64,
    /// What went wrong or why it did not run, in one line.
    pub error: Option<String>,
    /// How many processes it left running when it ended (daemons, `setsid`
    /// children, background jobs): all were killed by its sandbox supervisor
    /// before the git guard and the workspace sweep; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lingering_processes: Option<usize>,
    /// What plangate warns about how it ran: a git object store its sandbox hid from it (the
    /// permission rules deny reading a path git holds there), and why; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The end of its output (`--show-output`: failed steps by default):
    /// `stdout`, `stderr`, an agent's `reasons`, `stdout_truncated`, `stderr_truncated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<OutputTail>,
    /// The sandbox its processes ran in (steps that run a bash command, a rollback or an agent
    /// CLI, once approved): `enforcement` (`bwrap`, `landlock+seccomp` or `not enforced`), the
    /// `profile` its approval granted (`filesystem`: read-only | workspace-write | declared,
    /// `network`, extra `writable` paths), and `reason` when not enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::StepSandbox>,
    /// What went through its egress proxy (a step that declares `egress`):
    /// connections allowed and denied, bytes each way. Every connection is a
    /// line of the audit log (`egress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<EgressTally>,
    /// The rollback, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackReport>,
    /// Tokens and cost of this step's agent calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// An agent step's CLI as started (a preset resolved to its program and flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_command: Option<Vec<String>>,
    /// Every agent attempt: prompt hash, verdict, rejections, usage, evidence files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_attempts: Vec<AttemptRecord>,
    /// A bash step with `retry:`: every run of its command (`attempt`, `status`, `exit_code`,
    /// `started_at`, `duration_ms`, `wait_ms` before the next one, `error`, `files`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_attempts: Vec<super::CommandAttempt>,
    /// An agent step's change set (`via`, `files` with `path` and `change`,
    /// `bytes`): what it changed, checked and applied after its answer was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_changes: Option<super::AgentChanges>,
    /// A read-only agent step (`mode: read-only`): what it tried to change in its staged copy
    /// or its envelope's files (`via`, `files`, `bytes` as in `agent_changes`), never applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempted_changes: Option<super::AgentChanges>,
    /// An agent step's context files marked `untrusted: true`, by path: what the sanitiser
    /// removed or changed before they reached the prompt (`source`: `context file`, `removed`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub untrusted_context: std::collections::BTreeMap<String, super::UntrustedText>,
    /// An agent step's accepted result (`kind`: envelope | json | code;
    /// `summary`, `files`, `next_actions` of an envelope; `text`: the JSON or
    /// code, redacted and cut at 4000 characters, `cut` when it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<super::AgentResult>,
    /// Workspace files the step created, changed or removed (by their
    /// metadata), when it ran alone; absent when it overlapped another step.
    /// For an agent step with a change set: exactly those files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_files: Option<Vec<String>>,
    /// Changed files left out of `changed_files` (past the first 1000).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub changed_files_omitted: u64,
    /// The names (never the values) of the environment variables its processes
    /// received; absent for a step that started none or did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<super::StepEnvironment>,
    /// The step's outputs (`$PLANGATE_OUTPUT` lines of a bash step, the accepted values of an
    /// agent step), redacted like everything written; absent when it set none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub outputs: std::collections::BTreeMap<String, String>,
    /// Set when the step did not run in this run because it succeeded in the
    /// run this one resumed: its outcome is that run's (its `artifacts` are
    /// relative to that run's output folder, the folder of `report`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_over: Option<CarriedOver>,
}

/// Where a resumed run, or a carried-over step, comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedOver {
    /// The id of the run whose outcome this is.
    pub run_id: String,
    /// That run's `report.json`, absolute.
    pub report: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A rollback command's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RollbackReport {
    /// success, failed or timed_out.
    pub status: StepStatus,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// Files, relative to the output directory.
    pub artifacts: Vec<String>,
    /// What went wrong.
    pub error: Option<String>,
    /// Workspace files the rollback created, changed or removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_files: Option<Vec<String>>,
    /// Changed files left out of `changed_files`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub changed_files_omitted: u64,
}

/// The shard a report covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// 1-based shard number (0 in a merged report).
    pub index: usize,
    /// How many shards the plan was cut into.
    pub count: usize,
    /// sha256 of the plan file.
    pub plan_sha256: String,
    /// Names the partition (plan, shard count and assignment); equal across the shards of one cut.
    pub partition_sha256: String,
    /// How many steps the whole (expanded) plan has.
    pub plan_steps: usize,
    /// This shard's steps: their 0-based positions in the whole plan.
    pub steps: Vec<usize>,
    /// Merged reports: the shards joined, with their run ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<MergedShard>,
}

/// One shard report joined by `plangate merge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedShard {
    /// 1-based shard number.
    pub index: usize,
    /// Its run id.
    pub run_id: String,
    /// Its status.
    pub status: RunStatus,
}

/// A step's egress proxy traffic, counted over every process it ran (its
/// command or CLI, and its rollback).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressTally {
    /// Connections let through.
    pub allowed: u64,
    /// Connections refused (not declared, a private address, not HTTP).
    pub denied: u64,
    /// Bytes from the step to the hosts.
    pub bytes_out: u64,
    /// Bytes from the hosts to the step.
    pub bytes_in: u64,
}
