//! Tools: what a step does. Each tool classifies its concrete parameters
//! (pure) and executes a step (I/O). Adding a tool means one more `Action`
//! variant in `plan` and one module here; the engine only calls
//! [`classify`] and [`execute`].

pub mod bash;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;

use crate::engine::process::ProcessOutcome;
use crate::plan::{Action, Step};
use crate::policy::StepClassification;

/// What a tool needs to know about the run.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    /// Absolute, canonical workspace.
    pub workspace: PathBuf,
    /// `$HOME`, for the classifier.
    pub home: Option<PathBuf>,
}

/// Everything a step execution needs.
#[derive(Debug, Clone)]
pub struct StepContext {
    /// The run's environment.
    pub env: ToolEnv,
    /// This step's artifact folder (absolute).
    pub artifacts_dir: PathBuf,
    /// Same, relative to the output directory (for the report).
    pub artifacts_rel: String,
    /// Variables every child gets (PLANGATE_RUN_ID, ...).
    pub run_vars: BTreeMap<String, String>,
    /// Most bytes kept per captured stream.
    pub max_output_bytes: u64,
    /// Grace between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Becomes true when the run is interrupted.
    pub cancel: watch::Receiver<bool>,
}

/// What running a step produced.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// How the process ended.
    pub process: ProcessOutcome,
    /// Files written, relative to the output directory.
    pub artifacts: Vec<String>,
    /// Absolute path of the captured stdout, if kept.
    pub stdout_path: Option<PathBuf>,
}

/// Classify a step's concrete parameters (and its rollback command).
pub fn classify(step: &Step, env: &ToolEnv) -> StepClassification {
    match &step.action {
        Action::Bash(b) => bash::classify(b, step.rollback_command.as_deref(), env),
    }
}

/// Run a step.
pub async fn execute(step: &Step, ctx: &StepContext) -> std::io::Result<ToolResult> {
    match &step.action {
        Action::Bash(b) => bash::run(b, step, ctx).await,
    }
}

/// Resolve a step's working directory inside the workspace, following symlinks;
/// refuses a directory that resolves outside.
pub fn working_dir(workspace: &Path, rel: Option<&Path>) -> Result<PathBuf, String> {
    let Some(rel) = rel else {
        return Ok(workspace.to_path_buf());
    };
    let joined = workspace.join(rel);
    let real = joined
        .canonicalize()
        .map_err(|e| format!("working directory `{}` is not usable: {e}", rel.display()))?;
    if !real.starts_with(workspace) {
        return Err(format!(
            "working directory `{}` resolves to `{}`, outside the workspace",
            rel.display(),
            real.display()
        ));
    }
    if !real.is_dir() {
        return Err(format!(
            "working directory `{}` is not a directory",
            rel.display()
        ));
    }
    Ok(real)
}
