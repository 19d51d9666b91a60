//! A step's result: its final state ([`StepStatus`]), what happened when it
//! ran ([`StepOutcome`], the engine's and the tools' common currency) and the
//! agent attempts it made ([`AttemptRecord`]).

use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Finding, Usage};

/// A step's final state (SPEC's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Ran and succeeded.
    Success,
    /// Ran and failed (non-zero exit, signal, expected_output mismatch, could not start).
    Failed,
    /// Killed at its timeout.
    TimedOut,
    /// An agent answer was rejected after the last attempt.
    Rejected,
    /// Needed an approval it did not have.
    Denied,
    /// Blocked outright.
    Blocked,
    /// Not run on purpose: `on_approval_required: skip`, a skipped dependency, or not selected by `--steps`.
    Skipped,
    /// Not run: a dependency failed, the run stopped first, a dry run, or the run was interrupted.
    NotRun,
}

impl StepStatus {
    /// The report's name.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Success => "success",
            StepStatus::Failed => "failed",
            StepStatus::TimedOut => "timed_out",
            StepStatus::Rejected => "rejected",
            StepStatus::Denied => "denied",
            StepStatus::Blocked => "blocked",
            StepStatus::Skipped => "skipped",
            StepStatus::NotRun => "not_run",
        }
    }

    /// Whether this is a failure of a step that ran.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            StepStatus::Failed | StepStatus::TimedOut | StepStatus::Rejected
        )
    }
}

/// What happened when a step (or its rollback) ran.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    /// Final state.
    pub status: StepStatus,
    /// Exit code of the main process, if it exited.
    pub exit_code: Option<i32>,
    /// Signal that killed it, if one did (not sent by plangate).
    pub signal: Option<i32>,
    /// When it started.
    pub started_at: SystemTime,
    /// Wall time.
    pub duration: Duration,
    /// Attempts made (agents retry; bash steps with `retry:` too).
    pub attempts: u32,
    /// Files written, relative to the output directory.
    pub artifacts: Vec<String>,
    /// Output dropped at the cap.
    pub truncated: bool,
    /// Bytes the step wrote to stdout and stderr.
    pub output_bytes: u64,
    /// What went wrong, in one line.
    pub error: Option<String>,
    /// Tokens and cost of agent calls.
    pub usage: Option<Usage>,
    /// Every agent attempt, in order.
    pub agent_attempts: Vec<AttemptRecord>,
    /// Every run of a bash step's command when it has `retry:`, in order.
    pub command_attempts: Vec<CommandAttempt>,
    /// The run's budget ran out during this step.
    pub budget_exhausted: bool,
    /// Processes it left running when it ended (they were killed), when any.
    pub lingering_processes: Option<usize>,
    /// What plangate warns about how the step ran (a git object store hidden from its sandbox, and why).
    pub warnings: Vec<String>,
    /// The accepted, sanitized result (an agent step's `parsed.*`), absolute.
    pub result_file: Option<std::path::PathBuf>,
    /// The names of the variables its processes received (None: it started none).
    pub environment: Option<StepEnvironment>,
    /// Workspace files the step wrote through plangate (agent envelope files), relative.
    pub workspace_files: Vec<String>,
    /// An agent step's change set, applied after its answer was accepted (exact, whatever ran beside it).
    pub agent_changes: Option<AgentChanges>,
    /// A read-only agent step's edits, never applied: what it tried to change.
    pub attempted_changes: Option<AgentChanges>,
    /// An agent step's accepted result, as the summaries show it.
    pub result: Option<AgentResult>,
    /// Secrets found in the step's artifacts and files (values never kept).
    pub findings: Vec<Finding>,
    /// The step's outputs (name -> value), for its dependents and the report.
    pub outputs: std::collections::BTreeMap<String, String>,
    /// What it asked plangate to publish (`$PLANGATE_REQUESTS`), accepted.
    pub requests: Vec<super::publish::Request>,
    /// An agent step's context files marked `untrusted`: what the sanitiser did, by path.
    pub untrusted_context: std::collections::BTreeMap<String, UntrustedText>,
}

impl StepOutcome {
    /// An empty outcome (failed, nothing recorded) started at `started`.
    pub fn new(started: SystemTime) -> StepOutcome {
        StepOutcome {
            status: StepStatus::Failed,
            exit_code: None,
            signal: None,
            started_at: started,
            duration: started.elapsed().unwrap_or_default(),
            attempts: 1,
            artifacts: Vec::new(),
            truncated: false,
            output_bytes: 0,
            error: None,
            usage: None,
            agent_attempts: Vec::new(),
            command_attempts: Vec::new(),
            budget_exhausted: false,
            lingering_processes: None,
            warnings: Vec::new(),
            result_file: None,
            environment: None,
            workspace_files: Vec::new(),
            agent_changes: None,
            attempted_changes: None,
            result: None,
            findings: Vec::new(),
            outputs: std::collections::BTreeMap::new(),
            requests: Vec::new(),
            untrusted_context: std::collections::BTreeMap::new(),
        }
    }
}

/// The environment a step's processes received, by name (values are never
/// recorded): the report's `environment`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEnvironment {
    /// Passed in the clear: the allow-list and `env_passthrough` variables set
    /// in plangate's environment, plangate's run variables and the step's `env`.
    pub variables: Vec<String>,
    /// The declared secrets passed (their values are masked in every output).
    pub secrets: Vec<String>,
    /// A warning: those of `secrets` that are a CI platform's repository write
    /// token (`GITHUB_TOKEN`, `GH_TOKEN`, `GITLAB_TOKEN`, `CI_JOB_TOKEN`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_tokens: Vec<String>,
}

/// What an agent step changed in the workspace: its checked change set,
/// applied only after its answer was accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentChanges {
    /// How the agent worked: `staged copy` (an agent CLI, in a copy of the
    /// workspace) or `envelope` (plangate wrote the envelope's files).
    pub via: String,
    /// Each path created, modified or deleted (relative to the workspace), by path.
    pub files: Vec<ChangedPath>,
    /// Bytes of content written.
    pub bytes: u64,
    /// An agent CLI's stage: `overlay` (the workspace under an overlay
    /// mount, changes read from its upper layer) or `copy`; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

/// An agent step's accepted result as the step summary, the PR comment and
/// `plangate report --format markdown` show it: redacted, cut.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentResult {
    /// envelope | json | code.
    pub kind: String,
    /// An envelope's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// An envelope's files (paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// An envelope's next actions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_actions: Vec<String>,
    /// A code block's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The JSON value (pretty) or the code, cut at [`AgentResult::MAX_TEXT`] characters.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// `text` was cut (the whole value is in `parsed.*`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

impl AgentResult {
    /// Most characters of `text` kept.
    pub const MAX_TEXT: usize = 4000;
}

/// One path of an agent's change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedPath {
    /// Relative to the workspace.
    pub path: String,
    /// added | modified | deleted.
    pub change: super::Change,
}

/// One agent attempt, as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// 1-based.
    pub attempt: u32,
    /// sha256 of the prompt sent (prompts are kept in the artifacts, never repeated).
    pub prompt_sha256: String,
    /// accepted | rejected | error.
    pub verdict: String,
    /// For envelopes: strict | recovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// Why the answer was refused: category, line, column, message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejections: Vec<super::Rejection>,
    /// Provider error (no answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tokens and cost of this call.
    pub usage: Usage,
    /// Wall time of the call.
    pub duration_ms: u64,
    /// The prompt and the raw answer, relative to the output directory (kept as evidence, never used as input).
    pub files: Vec<String>,
    /// Files the attempt changed in its staged copy that were discarded with its rejected answer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub discarded_changes: u64,
    /// What an agent CLI said about its own session (its JSON or JSON Lines output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<AgentSession>,
    /// HTTP providers: every request of this attempt, retries included (absent for other providers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_attempts: Vec<HttpAttempt>,
}

/// One run of a bash step's command under `retry:`, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandAttempt {
    /// 1-based.
    pub attempt: u32,
    /// How it ended: success, failed or timed_out.
    pub status: StepStatus,
    /// Its exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if one did (not sent by plangate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// Its wall time.
    pub duration_ms: u64,
    /// How long plangate waited after it before the next attempt (absent after the last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// What went wrong, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its captured output, relative to the output directory (`attempt-N.stdout.txt`, ...;
    /// the last attempt's are the step's `stdout.txt` and `stderr.txt`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// What an agent CLI reported about its session besides the answer (read
/// from its JSON or JSON Lines output; never used as input).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    /// The output format read (`claude-stream-json`, `codex-jsonl`, ...).
    pub format: String,
    /// How the CLI said it ended: `success`, `error_max_turns`, `turn.failed`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The CLI's session (or thread) id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Turns the CLI says it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u64>,
    /// Commands the CLI says it ran.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub commands: u64,
    /// Files the CLI says it changed (`update src/lib.rs`), as it named them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_changes: Vec<String>,
    /// Tool calls its permission mode refused.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub permission_denials: u64,
    /// Errors it reported along the way without failing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One HTTP request of an agent attempt (an HTTP provider retries on 429, 5xx,
/// overload and dropped connections).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpAttempt {
    /// The reply's status (absent when no reply came: refused, reset, timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Wall time of the request.
    pub duration_ms: u64,
    /// What the server asked to wait (`retry-after-ms` or `Retry-After`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// How long plangate waited before the next request (absent after the last one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// Why it failed: the provider's message or the connection error (one line, redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An untrusted input as the report shows it: where its text came from, whose
/// it was, whether it was withheld, what the sanitiser removed (never the text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntrustedText {
    /// `input` (given to the run), `event title` / `event body` / `event comment`, or
    /// `context file` (an agent step's `context_files` entry marked untrusted).
    pub source: String,
    /// The author's association as the event says it (GitHub), if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Why the text was withheld (the value then says so, and nothing of the text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
    /// What the sanitiser removed or changed, by kind (`invisible`, `bidi`, `tag`,
    /// `variation_selector`, `control`, `html_comment`, `mention`, `cut_bytes`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub removed: std::collections::BTreeMap<String, u64>,
}
