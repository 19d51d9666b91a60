//! Tools: what a step does. Each tool's parameters as written and its checked
//! action are one file in [`params`] (the data layer, with the [`Action`]
//! enum); each tool is one folder holding the rest: `spec.rs` (pure:
//! load-time checks, lowering, classification, permission needs; the
//! [`spec::ToolSpec`] and [`spec::ActionSpec`] traits) and `mod.rs` (running
//! a step). [`registry`] holds the tables from `ToolName` and `Action`;
//! [`execute`] below is the only other per-tool table. The engine only calls
//! [`classify`] and [`execute`].
//!
//! Adding a tool: a variant in `ToolName` and `params::Action`, its
//! `params/<tool>.rs`, its arms in `registry.rs`, the folder `tools/<tool>/`,
//! and its arm in [`execute`]. The compiler names every table a new variant is missing from.

pub(crate) mod agent;
pub(crate) mod archive;
pub(crate) mod bash;
pub(crate) mod find;
pub(crate) mod git;
pub(crate) mod http;
pub(crate) mod judge;
pub(crate) mod outputs;
pub(crate) mod params;
pub(crate) mod registry;
pub(crate) mod sandboxed;
pub(crate) mod secrets_scan;
pub(crate) mod spec;
pub(crate) mod step;
mod sweep;
pub(crate) mod system_info;
pub(crate) mod temp;

pub(crate) use params::Action;
pub(crate) use spec::ToolEnv;
pub(crate) use sweep::{
    UNSCANNABLE, is_unscannable, sweep, sweep_output_folder, take_renamed, unscannable,
};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use crate::model::BudgetBlock;
use crate::model::Risk;
use crate::model::{StepOutcome, StepStatus, Usage};
use crate::policy::StepClassification;
use crate::process::ProcessOutcome;
use crate::tools::step::Step;

/// State every step of a run shares: the budget and why the run is stopping.
#[derive(Debug)]
pub(crate) struct RunShared {
    /// Limits for the run.
    pub budget: BudgetBlock,
    /// `policy.step_budget`: every agent step's default and cap.
    pub step_cap: crate::model::StepBudget,
    /// When the run started.
    pub started: Instant,
    usage: Mutex<Usage>,
    exhausted: Mutex<Option<String>>,
    interrupted: AtomicBool,
}

impl RunShared {
    /// A fresh run.
    pub(crate) fn new(budget: BudgetBlock) -> RunShared {
        RunShared {
            budget,
            step_cap: crate::model::StepBudget::default(),
            started: Instant::now(),
            usage: Mutex::new(Usage::default()),
            exhausted: Mutex::new(None),
            interrupted: AtomicBool::new(false),
        }
    }

    /// With `policy.step_budget` (each agent step's default and cap).
    pub(crate) fn with_step_cap(mut self, cap: crate::model::StepBudget) -> RunShared {
        self.step_cap = cap;
        self
    }

    /// The budget a step runs with: its own (and its agent's) lowered to `policy.step_budget`.
    pub(crate) fn step_budget(&self, own: crate::model::StepBudget) -> crate::model::StepBudget {
        own.narrowest(self.step_cap)
    }

    /// Usage so far.
    pub(crate) fn usage(&self) -> Usage {
        self.usage.lock().map(|u| *u).unwrap_or_default()
    }

    /// Record an agent call's usage; returns why the budget is now exhausted, if it is.
    pub(crate) fn add_usage(&self, u: &Usage) -> Option<String> {
        if let Ok(mut total) = self.usage.lock() {
            total.add(u);
        }
        self.check()
    }

    /// Why the budget would be exhausted with `extra` more (a CLI's calls
    /// measured so far at plangate's model API endpoint), if it would.
    pub(crate) fn exhausted_with(&self, extra: &Usage) -> Option<String> {
        if let Some(why) = self.check() {
            return Some(why);
        }
        let mut u = self.usage();
        u.add(extra);
        if let Some(max) = self.budget.max_tokens.filter(|&m| u.tokens() >= m) {
            Some(format!(
                "token budget exhausted: {} of {max} tokens used",
                u.tokens()
            ))
        } else {
            self.budget
                .max_cost_usd
                .filter(|&m| u.cost_usd >= m)
                .map(|max| {
                    format!(
                        "cost budget exhausted: ${:.4} of ${max:.4} spent",
                        u.cost_usd
                    )
                })
        }
    }

    /// Why the budget is exhausted, if it is (tokens, cost, wall time).
    pub(crate) fn check(&self) -> Option<String> {
        if let Some(why) = self.exhausted.lock().ok().and_then(|e| e.clone()) {
            return Some(why);
        }
        let u = self.usage();
        let why = if let Some(max) = self.budget.max_tokens.filter(|&m| u.tokens() >= m) {
            Some(format!(
                "token budget exhausted: {} of {max} tokens used",
                u.tokens()
            ))
        } else if let Some(max) = self.budget.max_cost_usd.filter(|&m| u.cost_usd >= m) {
            Some(format!(
                "cost budget exhausted: ${:.4} of ${max:.4} spent",
                u.cost_usd
            ))
        } else {
            self.budget
                .max_wall_seconds
                .filter(|&m| self.started.elapsed() >= Duration::from_secs(m))
                .map(|m| format!("wall-time budget exhausted: the run passed {m} s"))
        };
        if let Some(w) = &why
            && let Ok(mut e) = self.exhausted.lock()
        {
            e.get_or_insert_with(|| w.clone());
        }
        why
    }

    /// Mark the run interrupted by a signal.
    pub(crate) fn set_interrupted(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }

    /// Whether a signal interrupted the run.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Why running steps are being stopped.
    pub(crate) fn stop_reason(&self) -> String {
        if self.interrupted() {
            "interrupted".to_owned()
        } else if let Some(why) = self.exhausted.lock().ok().and_then(|e| e.clone()) {
            why
        } else {
            "stopped".to_owned()
        }
    }
}

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
    pub judge: Option<Arc<judge::PathJudge>>,
    /// Paths outside the workspace the step's processes may read besides
    /// the usual ones (the real object store an agent's staged copy borrows).
    pub extra_readable: Vec<PathBuf>,
    /// `--record`: where live agent answers go.
    pub record: Option<Arc<agent::record::Recorder>>,
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

    fn scoped_env(&self, step: &Step) -> crate::policy::env::ChildEnv {
        self.env
            .scope
            .child(&step.secret_names(), self.run_vars.iter().chain(&step.env))
    }
}

/// The names of the variables a step's processes get, for the report; None
/// for a step that starts no process (in-process tools, agents over HTTP).
fn environment_record(step: &Step, ctx: &StepContext) -> Option<crate::model::StepEnvironment> {
    let starts_process = match &step.action {
        Action::Bash(_) | Action::Git(_) => true,
        Action::Agent(a) => a.provider == crate::format::agent::ProviderKind::Command,
        _ => false,
    };
    starts_process.then(|| {
        let c = ctx.scoped_env(step);
        crate::model::StepEnvironment {
            variables: c.variables,
            write_tokens: c
                .secrets
                .iter()
                .filter(|n| crate::policy::env::WRITE_TOKENS.contains(&n.as_str()))
                .cloned()
                .collect(),
            secrets: c.secrets,
        }
    })
}

/// Why a step cannot run: a secret it declares is unset or empty in
/// plangate's environment (`engine::decide_all` blocks a step that may run on it).
pub(crate) fn missing_secrets(step: &Step, env: &ToolEnv) -> Option<String> {
    let declared = step.secret_names();
    let missing = env.scope.missing(&declared);
    (!missing.is_empty()).then(|| {
        let names: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "the secret{} {} (declared in `secrets:`, or the agent's `api_key_env` or `headers`) {} unset or empty in plangate's environment; set {} in the CI job's environment, or stop declaring {}",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "them" },
        )
    })
}

/// What running a process produced (bash steps and rollbacks).
#[derive(Debug, Clone)]
pub(crate) struct ToolResult {
    /// How the process ended.
    pub process: ProcessOutcome,
    /// Files written, relative to the output directory.
    pub artifacts: Vec<String>,
    /// Absolute path of the captured stdout, if kept.
    pub stdout_path: Option<PathBuf>,
    /// Why the step fails for changing git's code-running files (they were put back).
    pub undone: Option<String>,
    /// How many processes it left running (killed by its supervisor); None: not known.
    pub lingering: Option<usize>,
}

/// Classify a step's concrete parameters and its rollback command: the
/// rollback runs unattended too, so the higher risk (or a block) wins. Its
/// declared secrets are not looked at here ([`missing_secrets`]).
pub(crate) fn classify(step: &Step, env: &ToolEnv) -> StepClassification {
    let mut c = step.action.spec().classify(env);
    if let Some(rb) = step.rollback_command.as_deref() {
        let ctx = crate::policy::classify::ClassifyContext {
            workspace: &env.workspace,
            working_dir: &env.workspace,
            home: env.home.as_deref(),
        };
        let r = crate::policy::classify::classify_bash(rb, &ctx);
        if c.blocked.is_none() {
            c.blocked = r.blocked().map(|w| format!("rollback_command: {w}"));
        }
        if c.unclassifiable.is_none() {
            c.unclassifiable = r.unclassifiable().map(|w| format!("rollback_command: {w}"));
        }
        if r.risk() > c.classified {
            c.classified = r.risk();
            c.reason = format!("rollback_command: {}", r.reason());
        }
    }
    if let Some(req) = step.sandbox_request(&env.workspace, env.home.as_deref()) {
        floor_for_sandbox(&mut c, &req, &env.workspace, env.home.as_deref());
    }
    c
}

/// Whether reading `p` reaches credentials: `$HOME` itself or a folder above
/// it, a credential folder in it, or the runtime folders (sockets).
fn sensitive_read(p: &Path, home: Option<&Path>) -> bool {
    let above = |dir: &Path| dir.starts_with(p);
    if above(Path::new("/home")) || above(Path::new("/root")) || above(Path::new("/run")) {
        return true;
    }
    if p.starts_with("/run") || p.starts_with("/var/run") || p.starts_with("/proc") {
        return true;
    }
    let Some(home) = home else {
        return false;
    };
    if above(home) {
        return true;
    }
    [
        ".ssh",
        ".aws",
        ".gnupg",
        ".docker",
        ".kube",
        ".config",
        ".git-credentials",
        ".netrc",
    ]
    .iter()
    .any(|d| {
        let d = home.join(d);
        p.starts_with(&d) || d.starts_with(p)
    })
}

/// What a step declares about its sandbox raises its risk: the network to
/// moderate; a writable path inside the workspace to moderate, outside it to
/// dangerous; no sandbox at all to dangerous.
fn floor_for_sandbox(
    c: &mut StepClassification,
    req: &crate::sandbox::Request,
    workspace: &Path,
    home: Option<&Path>,
) {
    let mut raise = |risk: Risk, why: String| {
        if risk > c.classified.max(c.floor) {
            c.reason = why;
        }
        c.floor = c.floor.max(risk);
    };
    if req.network {
        raise(Risk::Moderate, "declares `network: true`".to_owned());
    }
    if let Some(hosts) = &req.egress {
        raise(
            Risk::Moderate,
            format!("reaches the network (`egress`: {})", hosts.join(", ")),
        );
    }
    for w in &req.writable {
        if w.starts_with(workspace) {
            raise(
                Risk::Moderate,
                format!("declares `{}` writable", w.display()),
            );
        } else {
            raise(
                Risk::Dangerous,
                format!(
                    "declares `{}` (outside the workspace) writable",
                    w.display()
                ),
            );
        }
    }
    for r in &req.readable {
        if sensitive_read(r, home) {
            raise(
                Risk::Dangerous,
                format!("declares `{}` readable", r.display()),
            );
        } else {
            raise(
                Risk::Moderate,
                format!(
                    "declares `{}` (outside the workspace) readable",
                    r.display()
                ),
            );
        }
    }
    if req.unsandboxed {
        raise(
            Risk::Dangerous,
            "asks to run without a sandbox (`sandbox: false`)".to_owned(),
        );
    }
}

/// Run a step; the report gets the names of the variables its processes received.
pub(crate) async fn execute(step: &Step, ctx: &StepContext, started: SystemTime) -> StepOutcome {
    let mut outcome = execute_tool(step, ctx, started).await;
    outcome.environment = environment_record(step, ctx);
    if let (Action::Agent(a), Some(file), StepStatus::Success) =
        (&step.action, &outcome.result_file, outcome.status)
    {
        outcome.outputs = outputs::of_agent(a.output, file);
    }
    outcome
}

async fn execute_tool(step: &Step, ctx: &StepContext, started: SystemTime) -> StepOutcome {
    match &step.action {
        Action::Bash(b) => bash::run(b, step, ctx, started).await,
        Action::Agent(a) => agent::run(a, step, ctx, started).await,
        Action::SecretsScan(a) => {
            let (a, id, ctx2) = (a.clone(), step.id.clone(), ctx.clone());
            tokio::task::spawn_blocking(move || secrets_scan::run(&a, &id, &ctx2, started))
                .await
                .unwrap_or_else(|e| internal_failure(started, format!("internal error: {e}")))
        }
        Action::FindInFiles(a) => {
            let a = a.clone();
            blocking_tool(step, ctx, started, move |ctx, stop| {
                find::run(&a, ctx, stop)
            })
            .await
        }
        Action::Git(a) => {
            // It may change `.git`: never while a guarded step's snapshot is live.
            let _lane = crate::sandbox::git_guard::LOCK
                .enter(crate::sandbox::git_guard::Side::Writer)
                .await;
            git::run(a, step, ctx, started).await
        }
        Action::Http(a) => {
            let a = a.clone();
            blocking_tool(step, ctx, started, move |ctx, stop| {
                http::run(&a, ctx, stop)
            })
            .await
        }
        Action::Archive(a) => {
            let a = a.clone();
            blocking_tool(step, ctx, started, move |ctx, stop| {
                archive::run(&a, ctx, stop)
            })
            .await
        }
        Action::SystemInfo(p) => {
            let p = p.clone();
            blocking_tool(step, ctx, started, move |ctx, stop| {
                system_info::run(&p, ctx, stop)
            })
            .await
        }
    }
}

/// Why an in-process tool must stop early, polled by its loops.
#[derive(Debug, Clone)]
pub(crate) struct Stop {
    deadline: Instant,
    flag: Arc<AtomicBool>,
}

impl Stop {
    /// A stop that fires at `timeout` from now (or when [`Stop::fire`] is called).
    pub(crate) fn after(timeout: Duration) -> Stop {
        Stop {
            deadline: Instant::now() + timeout,
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Whether the tool must stop now (timeout, signal or exhausted budget).
    pub(crate) fn now(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }

    /// Time left before the deadline (zero once stopped).
    pub(crate) fn remaining(&self) -> Duration {
        if self.flag.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            self.deadline.saturating_duration_since(Instant::now())
        }
    }

    /// Whether the deadline itself has passed (whatever the flag says).
    pub(crate) fn deadline_passed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    fn fire(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }
}

/// What an in-process tool returns: its outcome, with the status and error
/// set, and its `result.json` (the design's return object) if it got that far.
pub(crate) struct ToolReturn {
    /// The outcome so far (status, error, artifacts the tool wrote itself).
    pub outcome: StepOutcome,
    /// The design's return object, written to `artifacts/<step>/result.json`.
    pub result: Option<serde_json::Value>,
}

/// Run an in-process tool on the blocking pool, bounded by the step's timeout
/// and the run's stop signal. The tool polls [`Stop`]; if it does not return
/// within the kill grace after being told to stop, the step is reported as
/// timed out (or stopped) anyway and its thread is left to finish on its own.
async fn blocking_tool<F>(step: &Step, ctx: &StepContext, started: SystemTime, f: F) -> StepOutcome
where
    F: FnOnce(&StepContext, &Stop) -> ToolReturn + Send + 'static,
{
    let stop = Stop::after(step.timeout);
    let (ctx2, stop2) = (ctx.clone(), stop.clone());
    let mut task = tokio::task::spawn_blocking(move || f(&ctx2, &stop2));
    let mut cancel = ctx.cancel.clone();
    let deadline = tokio::time::sleep(step.timeout);
    tokio::pin!(deadline);
    let mut why: Option<StepStatus> = None;
    let mut watch_cancel = true;
    let joined = loop {
        tokio::select! {
            r = &mut task => break Some(r),
            () = &mut deadline => {
                why = Some(StepStatus::TimedOut);
                stop.fire();
                break tokio::time::timeout(ctx.kill_grace, &mut task).await.ok();
            }
            cancelled = async { cancel.wait_for(|c| *c).await.is_ok() }, if watch_cancel => {
                if cancelled {
                    why = Some(StepStatus::Failed);
                    stop.fire();
                    break tokio::time::timeout(ctx.kill_grace, &mut task).await.ok();
                }
                // The sender is gone: nothing can cancel any more.
                watch_cancel = false;
            }
        }
    };
    let mut ret = match joined {
        Some(Ok(r)) => r,
        Some(Err(e)) => ToolReturn {
            outcome: internal_failure(started, format!("internal error: {e}")),
            result: None,
        },
        None => ToolReturn {
            outcome: internal_failure(started, "did not stop within the kill grace".to_owned()),
            result: None,
        },
    };
    // A tool that returns after its deadline cut its work short to do so:
    // the step timed out, whatever the tool managed before.
    let timed_out = why == Some(StepStatus::TimedOut) || (why.is_none() && stop.deadline_passed());
    if timed_out {
        ret.outcome.status = StepStatus::TimedOut;
        ret.outcome.error = Some(format!("timed out after {:?}", step.timeout));
    } else if why.is_some() {
        ret.outcome.status = StepStatus::Failed;
        ret.outcome.error = Some(format!(
            "{}; the step was stopped",
            ctx.shared.stop_reason()
        ));
    }
    if let Some(result) = &ret.result {
        match write_result(ctx, result) {
            Ok(rel) => ret.outcome.artifacts.push(rel),
            Err(e) => {
                ret.outcome.status = StepStatus::Failed;
                ret.outcome.error = Some(e);
            }
        }
    }
    ret.outcome.started_at = started;
    ret.outcome.duration = started.elapsed().unwrap_or_default();
    ret.outcome
}

/// Write a tool's return object to `artifacts/<step>/result.json`; returns its
/// path relative to the output directory. Secrets in it are found and
/// redacted by [`sweep`] like in any artifact.
pub(crate) fn write_result(
    ctx: &StepContext,
    result: &serde_json::Value,
) -> Result<String, String> {
    let rel = format!("{}/result.json", ctx.artifacts_rel);
    std::fs::create_dir_all(&ctx.artifacts_dir)
        .and_then(|()| {
            std::fs::write(
                ctx.out_dir.join(&rel),
                serde_json::to_vec_pretty(result).unwrap_or_default(),
            )
        })
        .map_err(|e| format!("cannot write {rel}: {e}"))?;
    Ok(rel)
}

/// A failed outcome that never got to run anything.
pub(crate) fn internal_failure(started: SystemTime, error: String) -> StepOutcome {
    let mut o = StepOutcome::new(started);
    o.error = Some(error);
    o
}

/// Why a workspace path a step names cannot be used at run time.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkspacePathError {
    /// The workspace itself is gone.
    #[error("the workspace `{}` is no longer a directory (did an earlier step remove it?)", .0.display())]
    WorkspaceGone(PathBuf),
    /// The working directory cannot be resolved.
    #[error("working directory `{}` is not usable: {source}", .rel.display())]
    DirUnusable {
        /// As written.
        rel: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The working directory resolves outside the workspace.
    #[error("working directory `{}` resolves to `{}`, outside the workspace", .rel.display(), .real.display())]
    DirOutside {
        /// As written.
        rel: PathBuf,
        /// Where it resolves.
        real: PathBuf,
    },
    /// The working directory is not a directory.
    #[error("working directory `{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The file cannot be resolved.
    #[error("`{}` is not readable: {source}", .rel.display())]
    Unreadable {
        /// As written.
        rel: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file resolves outside the workspace.
    #[error("`{}` resolves outside the workspace", .0.display())]
    FileOutside(PathBuf),
    /// Not a regular file.
    #[error("`{}` is not a regular file", .0.display())]
    NotAFile(PathBuf),
}

/// Resolve a step's working directory inside the workspace, following symlinks;
/// refuses a directory that resolves outside.
pub(crate) fn working_dir(
    workspace: &Path,
    rel: Option<&Path>,
) -> Result<PathBuf, WorkspacePathError> {
    if !workspace.is_dir() {
        return Err(WorkspacePathError::WorkspaceGone(workspace.to_path_buf()));
    }
    let Some(rel) = rel else {
        return Ok(workspace.to_path_buf());
    };
    let real =
        workspace
            .join(rel)
            .canonicalize()
            .map_err(|source| WorkspacePathError::DirUnusable {
                rel: rel.to_path_buf(),
                source,
            })?;
    if !real.starts_with(workspace) {
        return Err(WorkspacePathError::DirOutside {
            rel: rel.to_path_buf(),
            real,
        });
    }
    if !real.is_dir() {
        return Err(WorkspacePathError::NotADirectory(rel.to_path_buf()));
    }
    Ok(real)
}

/// Resolve a workspace file for reading: relative, inside after following symlinks, a regular file.
pub(crate) fn workspace_file(workspace: &Path, rel: &Path) -> Result<PathBuf, WorkspacePathError> {
    let real =
        workspace
            .join(rel)
            .canonicalize()
            .map_err(|source| WorkspacePathError::Unreadable {
                rel: rel.to_path_buf(),
                source,
            })?;
    if !real.starts_with(workspace) {
        return Err(WorkspacePathError::FileOutside(rel.to_path_buf()));
    }
    if !real.is_file() {
        return Err(WorkspacePathError::NotAFile(rel.to_path_buf()));
    }
    Ok(real)
}

/// Whether a step's output satisfies its `expected_output` regex. The regex is
/// searched in the text; a final newline is ignored the way `$` ignores it in
/// Python, PCRE and grep, so `^ok$` accepts the output of `echo ok`. Use
/// `(?m)` for per-line anchors.
pub(crate) fn expected_output_matches(re: &regex::Regex, text: &str) -> bool {
    let trimmed = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text);
    re.is_match(text) || re.is_match(trimmed)
}

#[cfg(test)]
mod expected_output_tests {
    use super::expected_output_matches;

    #[test]
    fn a_final_newline_does_not_defeat_end_anchors() {
        let re = regex::Regex::new("^a$").unwrap_or_else(|e| panic!("{e}"));
        assert!(expected_output_matches(&re, "a\n"));
        assert!(expected_output_matches(&re, "a\r\n"));
        assert!(expected_output_matches(&re, "a"));
        assert!(!expected_output_matches(&re, "a\n\n"));
        assert!(!expected_output_matches(&re, "a\nb\n"));
        assert!(!expected_output_matches(&re, "ba\n"));
    }
}
