//! Everything a running step is handed ([`StepContext`]), and where a long
//! step says it is still at work ([`Pulse`]) or a retry is announced
//! ([`RetryNotices`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::shared::RunShared;
use super::spec::ToolEnv;
use super::step::Step;
use crate::model::StepStatus;

/// Everything a step execution needs.
#[derive(Debug, Clone)]
pub(crate) struct StepContext {
    /// The run's environment.
    pub env: ToolEnv,
    /// The run's output directory (absolute).
    pub out_dir: PathBuf,
    /// This step's artifact folder (absolute).
    pub artifacts_dir: PathBuf,
    /// Same, relative to the output directory (for the report).
    pub artifacts_rel: String,
    /// Variables every child gets (PLANGATE_RUN_ID, results of earlier agent steps, ...).
    pub run_vars: BTreeMap<String, String>,
    /// Most bytes kept per captured stream.
    pub max_output_bytes: u64,
    /// Grace between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Becomes true when running steps must stop (signal or budget).
    pub cancel: watch::Receiver<bool>,
    /// Budget and stop reason.
    pub shared: std::sync::Arc<RunShared>,
    /// Ids of all steps, by index (for context lookups).
    pub step_ids: std::sync::Arc<Vec<String>>,
    /// The sandbox the step's processes run in (None: it runs none).
    pub sandbox: Option<crate::model::StepSandbox>,
    /// `fail_on_secrets` of the policy in force: an agent's envelope holding
    /// a secret then writes nothing into the workspace.
    pub fail_on_secrets: bool,
    /// The permission rules for the paths the step finds at run time (None: no list in force).
    pub judge: Option<Arc<super::judge::PathJudge>>,
    /// Paths outside the workspace the step's processes may read besides
    /// the usual ones (the real object store an agent's staged copy borrows).
    pub extra_readable: Vec<PathBuf>,
    /// `--record`: where live agent answers go.
    pub record: Option<Arc<super::agent::record::Recorder>>,
    /// Where a long step says it is still at work (None: it says nothing).
    pub pulse: Option<Pulse>,
    /// Where a bash step with `retry:` says it will run its command again (None: nowhere).
    pub on_retry: Option<RetryNotices>,
    /// Where the step's egress proxy reports each connection (None: nowhere).
    pub on_egress: Option<crate::egress::Notices>,
    /// What an agent prompt's templates render to, by reference (`inputs.x`,
    /// `matrix.k`, `steps.ID.outputs.NAME`).
    pub template_values: BTreeMap<String, String>,
    /// An agent CLI's staged overlay, mounted for its process (None: no overlay).
    pub overlay: Option<crate::sandbox::overlay::OverlayMount>,
}

/// A long step saying it is still at work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Beat {
    /// Since the step started.
    pub elapsed: Duration,
    /// The agent attempt running.
    pub attempt: u32,
    /// Events its CLI's stream printed so far (0: not a stream).
    pub events: u64,
    /// Tokens its CLI's stream reported so far.
    pub tokens: Option<u64>,
    /// Dollars its CLI's stream reported so far.
    pub cost_usd: Option<f64>,
}

/// How often a long step beats, and to whom (the engine turns a beat into a `RunEvent`).
#[derive(Clone)]
pub(crate) struct Pulse {
    /// Between beats.
    pub every: Duration,
    send: Arc<dyn Fn(Beat) + Send + Sync>,
}

impl Pulse {
    /// Beat every `every` through `send`.
    pub(crate) fn new(every: Duration, send: impl Fn(Beat) + Send + Sync + 'static) -> Pulse {
        Pulse {
            every,
            send: Arc::new(send),
        }
    }

    /// One beat.
    pub(crate) fn beat(&self, b: Beat) {
        (self.send)(b);
    }
}

impl std::fmt::Debug for Pulse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pulse").field("every", &self.every).finish()
    }
}

/// A bash step's attempt failed and its command will run again: what the
/// console and the audit log say.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RetryNotice {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// Attempts in all.
    pub max_attempts: u32,
    /// The wait before the next attempt.
    pub wait: Duration,
    /// How the failed attempt ended.
    pub status: StepStatus,
    /// Its exit code, if it exited.
    pub exit_code: Option<i32>,
    /// Why it failed.
    pub error: Option<String>,
}

/// Where [`RetryNotice`]s go (the engine turns each into a `RunEvent`).
#[derive(Clone)]
pub(crate) struct RetryNotices(Arc<dyn Fn(RetryNotice) + Send + Sync>);

impl RetryNotices {
    /// Send every notice through `send`.
    pub(crate) fn new(send: impl Fn(RetryNotice) + Send + Sync + 'static) -> RetryNotices {
        RetryNotices(Arc::new(send))
    }

    /// Say it.
    pub(crate) fn send(&self, n: RetryNotice) {
        (self.0)(n);
    }
}

impl std::fmt::Debug for RetryNotices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryNotices")
    }
}

impl StepContext {
    /// Whether the permission rules let the step use `path` at `level` (always, without rules).
    pub(crate) fn may(&self, path: &Path, level: crate::model::Level) -> Result<(), String> {
        self.judge.as_ref().map_or(Ok(()), |j| j.check(path, level))
    }
}

impl StepContext {
    /// The whole environment of a step's child (nothing else is inherited):
    /// the allow-list and `env_passthrough` from plangate's environment, the
    /// step's declared secrets, plangate's run variables, then the step's own
    /// `env` (the rules: `policy::env`).
    pub(crate) fn child_env(&self, step: &Step) -> Vec<(String, String)> {
        self.scoped_env(step).vars.into_iter().collect()
    }

    pub(super) fn scoped_env(&self, step: &Step) -> crate::policy::env::ChildEnv {
        self.env
            .scope
            .child(&step.secret_names(), self.run_vars.iter().chain(&step.env))
    }
}
