//! The engine: decide for every step, then run the dependency graph.
//!
//! Order of work:
//! 1. *Pre-flight*: every step is classified and decided before anything
//!    runs (like `terraform plan`). A blocked step, or a step without the
//!    approval it needs under `on_approval_required: deny`, ends the run
//!    right there with exit 3: nothing is executed, so a half-run plan never
//!    has to be undone.
//! 2. *Schedule*: steps start in plan order as soon as their dependencies
//!    succeeded, at most `max_parallel` at once. The first failure of a step
//!    without `continue_on_error` stops new steps from starting; running ones
//!    finish. Dependents of a failed step are `not_run`; of a skipped step,
//!    `skipped`.
//! 3. *Rollback*: when the run fails (not when it is interrupted or denied),
//!    the `rollback_command` of every step that succeeded runs, newest
//!    completion first, each with its step's timeout; a failing rollback is
//!    recorded and the others still run. Under `--resume`, the steps carried
//!    over from the resumed run count as completed before any of this run's.
//!
//! The engine reports only through [`events::RunEvent`]s.

pub mod events;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::model::RunStatus;
use crate::model::{StepOutcome, StepStatus};
use crate::plan::{Plan, Step};
use crate::policy::cap::EffectivePolicy;
use crate::policy::{Decision, DecisionInput, DecisionKind, OnApproval, RiskAssessment, decide};
use crate::tools::{self, RunShared, StepContext, ToolEnv};
use events::RunEvent;

/// The variable that carries an agent step's accepted result file to later steps.
pub fn result_var(step_id: &str) -> String {
    let up: String = step_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("PLANGATE_RESULT_{up}")
}

/// Everything about a run that is not in the plan.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The run's id.
    pub run_id: String,
    /// Absolute, canonical workspace, and `$HOME`.
    pub env: ToolEnv,
    /// Absolute output directory.
    pub out_dir: PathBuf,
    /// The policy in force.
    pub policy: EffectivePolicy,
    /// Step ids approved in advance.
    pub approvals: BTreeSet<String>,
    /// Decide but run nothing.
    pub dry_run: bool,
    /// Which steps `--steps` selected (all when None).
    pub selected: Option<Vec<bool>>,
    /// Most bytes kept per captured stream.
    pub max_output_bytes: u64,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// The workspace's git `HEAD` at the start (recorded in the report).
    pub workspace_head: Option<String>,
    /// `--resume`: the run resumed and the steps carried over from it.
    pub resume: Option<crate::resume::Resume>,
    /// `--shard i/N`: the report's `shard` block (the plan is already restricted to it).
    pub shard: Option<crate::model::ShardInfo>,
}

/// A step's risk and decision.
#[derive(Debug, Clone)]
pub struct StepDecision {
    /// Declared, classified, effective.
    pub risk: RiskAssessment,
    /// The verdict and its reason.
    pub decision: Decision,
}

/// Classify and decide every step (used by `run` and `validate`).
pub fn decide_all(
    plan: &Plan,
    env: &ToolEnv,
    policy: &EffectivePolicy,
    approvals: &BTreeSet<String>,
) -> Vec<StepDecision> {
    plan.steps
        .iter()
        .map(|step| {
            let classification = tools::classify(step, env);
            let (risk, decision) = decide(DecisionInput {
                declared: step.declared_risk,
                requires_approval: step.requires_approval,
                classification: &classification,
                approved: approvals.contains(&step.id) || approvals.contains(&step.template),
                tolerance: policy.risk_tolerance,
            });
            // Permission rules decide before any approval: a denial blocks.
            let lists = policy.permission_lists();
            let verdict = crate::policy::permissions::evaluate(
                &lists,
                step.tool.as_str(),
                &crate::policy::permissions::needs(step, risk.effective),
                risk.effective,
            );
            let decision = decision.with_permission(verdict);
            StepDecision { risk, decision }
        })
        .collect()
}

/// sha256 over a step's tool, parameters and environment (the manifest's input hash).
pub fn input_hash(step: &Step) -> String {
    let v = serde_json::json!({
        "tool": step.tool.as_str(),
        "parameters": step.parameters,
        "env": step.env,
        "rollback_command": step.rollback_command,
    });
    hex::encode(Sha256::digest(v.to_string().as_bytes()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    Done(StepStatus),
}

/// Run a plan. Returns how the run ended; everything else goes out as events.
pub async fn run(
    plan: Arc<Plan>,
    settings: Arc<RunSettings>,
    events: Sender<RunEvent>,
    cancel: watch::Receiver<bool>,
) -> RunStatus {
    let emit = |e: RunEvent| {
        let _ = events.send(e);
    };
    let n = plan.steps.len();
    let selected: Vec<bool> = settings.selected.clone().unwrap_or_else(|| vec![true; n]);
    let decisions = decide_all(&plan, &settings.env, &settings.policy, &settings.approvals);
    for (i, d) in decisions.iter().enumerate() {
        emit(RunEvent::Decided {
            step: i,
            risk: d.risk,
            decision: d.decision.clone(),
            input_hash: input_hash(&plan.steps[i]),
        });
    }
    let mut state = vec![State::Pending; n];
    // Resumed: what succeeded before is not run again.
    let mut carried_secrets = 0;
    let mut carried_fps = std::collections::HashSet::new();
    let mut carried_results = BTreeMap::new();
    let mut carried_done: Vec<(String, usize)> = Vec::new();
    if let Some(resume) = &settings.resume {
        for (i, c) in resume.carried.iter().enumerate() {
            let Some(c) = c else { continue };
            state[i] = State::Done(StepStatus::Success);
            carried_secrets += c.findings.len();
            carried_fps.extend(c.findings.iter().map(|f| f.fingerprint.clone()));
            if let Some(f) = &c.result_file {
                carried_results.insert(plan.steps[i].id.clone(), f.clone());
            }
            carried_done.push((c.report.finished_at.clone().unwrap_or_default(), i));
            emit(RunEvent::StepCarriedOver {
                step: i,
                previous: Box::new(c.report.clone()),
                findings: c.findings.clone(),
            });
        }
    }
    carried_done.sort();
    for i in 0..n {
        if !selected[i] && state[i] == State::Pending {
            state[i] = State::Done(StepStatus::Skipped);
            emit(RunEvent::StepNotRun {
                step: i,
                status: StepStatus::Skipped,
                reason: "not selected by --steps".into(),
            });
        }
    }

    // Pre-flight gate.
    let deny_mode = settings.policy.on_approval_required == OnApproval::Deny;
    let stoppers: Vec<usize> = (0..n)
        .filter(|&i| state[i] == State::Pending)
        .filter(|&i| match decisions[i].decision.decision {
            DecisionKind::Blocked => true,
            DecisionKind::Denied => deny_mode,
            DecisionKind::AutoApproved | DecisionKind::PreApproved => false,
        })
        .collect();
    if let Some(&first) = stoppers.first() {
        for i in (0..n).filter(|&i| state[i] == State::Pending) {
            let (status, reason) = if stoppers.contains(&i) {
                let s = if decisions[i].decision.decision == DecisionKind::Blocked {
                    StepStatus::Blocked
                } else {
                    StepStatus::Denied
                };
                (s, decisions[i].decision.reason.clone())
            } else {
                (
                    StepStatus::NotRun,
                    format!(
                        "nothing ran: step `{}` was refused before the run started",
                        plan.steps[first].id
                    ),
                )
            };
            emit(RunEvent::StepNotRun {
                step: i,
                status,
                reason,
            });
        }
        emit(RunEvent::RunFinished {
            status: RunStatus::Denied,
        });
        return RunStatus::Denied;
    }
    for i in 0..n {
        if state[i] == State::Pending && decisions[i].decision.decision == DecisionKind::Denied {
            state[i] = State::Done(StepStatus::Skipped);
            emit(RunEvent::StepNotRun {
                step: i,
                status: StepStatus::Skipped,
                reason: format!(
                    "skipped (on_approval_required: skip): {}",
                    decisions[i].decision.reason
                ),
            });
        }
    }
    if settings.dry_run {
        for i in (0..n).filter(|&i| state[i] == State::Pending) {
            emit(RunEvent::StepNotRun {
                step: i,
                status: StepStatus::NotRun,
                reason: format!(
                    "dry run: would run ({})",
                    decisions[i].decision.decision.as_str()
                ),
            });
        }
        emit(RunEvent::RunFinished {
            status: RunStatus::Success,
        });
        return RunStatus::Success;
    }

    // What the workspace looked like before anything ran (off the async
    // workers) — unless nothing that will run can write it.
    let read_only = (0..n).filter(|&i| state[i] == State::Pending).all(|i| {
        !plan.steps[i].action.may_write_workspace() && plan.steps[i].rollback_command.is_none()
    }) && carried_done
        .iter()
        .all(|&(_, i)| plan.steps[i].rollback_command.is_none());
    let tracker = if read_only {
        None
    } else {
        let ws = settings.env.workspace.clone();
        let out = settings.out_dir.clone();
        tokio::task::spawn_blocking(move || crate::diff::Tracker::start(&ws, &out))
            .await
            .ok()
            .map(|t| Arc::new(Mutex::new(t)))
    };
    // Running steps stop on one channel, for a signal or an exhausted budget.
    let shared = Arc::new(RunShared::new(settings.policy.budget));
    let (stop_tx, stop_rx) = watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    spawn_stop_watchers(cancel, Arc::clone(&shared), Arc::clone(&stop_tx));
    let mut sched = Scheduler {
        plan: Arc::clone(&plan),
        settings: Arc::clone(&settings),
        events: events.clone(),
        cancel: stop_rx,
        shared: Arc::clone(&shared),
        step_ids: Arc::new(plan.steps.iter().map(|s| s.id.clone()).collect()),
        results: carried_results,
        budget_hit: Vec::new(),
        secrets: carried_secrets,
        fingerprints: carried_fps,
        state,
        selected,
        completed: carried_done.iter().map(|&(_, i)| i).collect(),
        sequence: 0,
        tracker: tracker.clone(),
        since_checkpoint: Vec::new(),
    };
    let (failed_step, _) = sched.run_graph().await;
    let interrupted = shared.interrupted();
    let budget_out = shared.check().is_some() || !sched.budget_hit.is_empty();
    let mut status = RunStatus::Success;
    if budget_out {
        status = status.combine(RunStatus::BudgetExhausted);
    }
    for (i, s) in sched.state.iter().enumerate() {
        if let State::Done(st) = s
            && st.is_failure()
            && !plan.steps[i].continue_on_error
            && !sched.budget_hit.contains(&i)
        {
            status = status.combine(if *st == StepStatus::Rejected {
                RunStatus::Rejected
            } else {
                RunStatus::Failed
            });
        }
    }
    if interrupted {
        status = status.combine(RunStatus::Interrupted);
    }
    for i in 0..n {
        if matches!(sched.state[i], State::Pending | State::Running) {
            let reason = if interrupted {
                "the run was interrupted first".to_owned()
            } else if budget_out {
                format!("not started: {}", shared.stop_reason())
            } else if sched.secrets > 0 && settings.policy.fail_on_secrets {
                "not started: a secret was found in what the run produced (fail_on_secrets)"
                    .to_owned()
            } else if let Some(f) = failed_step {
                format!("the run stopped after step `{}` failed", plan.steps[f].id)
            } else {
                "not reached".to_owned()
            };
            emit(RunEvent::StepNotRun {
                step: i,
                status: StepStatus::NotRun,
                reason,
            });
        }
    }
    if matches!(status, RunStatus::Failed | RunStatus::Rejected) {
        sched.rollback().await;
    }
    let (summary, markdown, findings) = {
        let seen = sched.fingerprints.clone();
        tokio::task::spawn_blocking(move || {
            let (summary, markdown) = match tracker {
                Some(t) => lock(&t).finish(),
                None if read_only => crate::diff::read_only_run(),
                None => crate::diff::not_recorded(),
            };
            let findings = diff_findings(&markdown, &seen);
            (summary, markdown, findings)
        })
        .await
        .unwrap_or_default()
    };
    sched.secrets += findings.len();
    emit(RunEvent::Diff {
        summary,
        markdown,
        findings,
    });
    if sched.secrets > 0 && settings.policy.fail_on_secrets {
        status = status.combine(RunStatus::SecretsFound);
    }
    emit(RunEvent::RunFinished { status });
    status
}

/// The diff tracker, even if a checkpoint panicked while holding it.
fn lock(t: &Mutex<crate::diff::Tracker>) -> std::sync::MutexGuard<'_, crate::diff::Tracker> {
    t.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Secrets in the diff summary not already found in a step's output or files.
fn diff_findings(
    markdown: &str,
    seen: &std::collections::HashSet<String>,
) -> Vec<crate::model::Finding> {
    let scanner = crate::redact::builtin_scanner();
    let found = scanner.scan(markdown.as_bytes());
    crate::redact::remember(
        found
            .iter()
            .filter_map(|f| markdown.as_bytes().get(f.start..f.end).map(<[u8]>::to_vec)),
    );
    found
        .into_iter()
        .filter(|f| !seen.contains(&f.fingerprint))
        .map(|f| crate::model::Finding {
            rule: f.rule,
            step: None,
            location: "diff-summary.md".to_owned(),
            line: f.line as u64,
            fingerprint: f.fingerprint,
        })
        .collect()
}

/// Forward a signal, or the wall-time budget running out, to the steps' stop channel.
fn spawn_stop_watchers(
    mut external: watch::Receiver<bool>,
    shared: Arc<RunShared>,
    stop: Arc<watch::Sender<bool>>,
) {
    let (s1, t1) = (Arc::clone(&shared), Arc::clone(&stop));
    tokio::spawn(async move {
        if external.wait_for(|c| *c).await.is_ok() {
            s1.set_interrupted();
            let _ = t1.send(true);
        }
    });
    if let Some(secs) = shared.budget.max_wall_seconds {
        tokio::spawn(async move {
            let deadline = shared.started + Duration::from_secs(secs);
            tokio::time::sleep_until(deadline.into()).await;
            if shared.check().is_some() {
                let _ = stop.send(true);
            }
        });
    }
}

struct Scheduler {
    plan: Arc<Plan>,
    settings: Arc<RunSettings>,
    events: Sender<RunEvent>,
    cancel: watch::Receiver<bool>,
    shared: Arc<RunShared>,
    step_ids: Arc<Vec<String>>,
    /// Accepted agent results by step id (for PLANGATE_RESULT_<ID>).
    results: BTreeMap<String, PathBuf>,
    /// Steps that ended because the budget ran out.
    budget_hit: Vec<usize>,
    /// Secrets found so far.
    secrets: usize,
    /// Their fingerprints (so the diff does not report them twice).
    fingerprints: std::collections::HashSet<String>,
    state: Vec<State>,
    selected: Vec<bool>,
    /// Steps that succeeded, in completion order.
    completed: Vec<usize>,
    sequence: u32,
    /// What the run changed and which step changed it (None if it could not start).
    tracker: Option<Arc<Mutex<crate::diff::Tracker>>>,
    /// Steps started since the last checkpoint.
    since_checkpoint: Vec<usize>,
}

enum Readiness {
    Ready,
    Wait,
    Never(StepStatus, String),
}

impl Scheduler {
    fn emit(&self, e: RunEvent) {
        let _ = self.events.send(e);
    }

    fn readiness(&self, i: usize) -> Readiness {
        let step = &self.plan.steps[i];
        for &d in &step.deps {
            if !self.selected[d] {
                continue; // outside --steps: assumed done
            }
            let dep = &self.plan.steps[d];
            match self.state[d] {
                State::Pending | State::Running => return Readiness::Wait,
                State::Done(StepStatus::Success) => {}
                State::Done(s) if s.is_failure() && dep.continue_on_error => {}
                State::Done(StepStatus::Skipped) => {
                    return Readiness::Never(
                        StepStatus::Skipped,
                        format!("dependency `{}` was skipped", dep.id),
                    );
                }
                State::Done(s) => {
                    return Readiness::Never(
                        StepStatus::NotRun,
                        format!("dependency `{}` ended {}", dep.id, s.as_str()),
                    );
                }
            }
        }
        Readiness::Ready
    }

    fn context(&self, step: &Step) -> StepContext {
        let s = &self.settings;
        let artifacts_rel = format!("artifacts/{}", step.id);
        let mut run_vars = BTreeMap::new();
        run_vars.insert("PLANGATE_RUN_ID".to_owned(), s.run_id.clone());
        run_vars.insert("PLANGATE_STEP_ID".to_owned(), step.id.clone());
        run_vars.insert("PLANGATE_PLAN_ID".to_owned(), self.plan.id.clone());
        run_vars.insert(
            "PLANGATE_WORKSPACE".to_owned(),
            s.env.workspace.display().to_string(),
        );
        run_vars.insert(
            "PLANGATE_OUT_DIR".to_owned(),
            s.out_dir.display().to_string(),
        );
        run_vars.insert(
            "PLANGATE_STEP_ARTIFACTS".to_owned(),
            s.out_dir.join(&artifacts_rel).display().to_string(),
        );
        for (id, path) in &self.results {
            run_vars.insert(result_var(id), path.display().to_string());
        }
        StepContext {
            out_dir: s.out_dir.clone(),
            shared: Arc::clone(&self.shared),
            step_ids: Arc::clone(&self.step_ids),
            env: s.env.clone(),
            artifacts_dir: s.out_dir.join(&artifacts_rel),
            artifacts_rel,
            run_vars,
            max_output_bytes: s.max_output_bytes,
            kill_grace: s.kill_grace,
            cancel: self.cancel.clone(),
        }
    }

    /// Returns (first blocking failure, interrupted).
    async fn run_graph(&mut self) -> (Option<usize>, bool) {
        let n = self.plan.steps.len();
        let max = usize::try_from(self.settings.policy.max_parallel)
            .unwrap_or(1)
            .max(1);
        let mut running: JoinSet<(usize, u32, StepOutcome)> = JoinSet::new();
        let mut failed: Option<usize> = None;
        let mut cancel = self.cancel.clone();
        loop {
            let stopping = *cancel.borrow()
                || self.shared.check().is_some()
                || (self.secrets > 0 && self.settings.policy.fail_on_secrets);
            if failed.is_none() && !stopping {
                // Resolve never-runnable steps until nothing changes, then start what is ready.
                let mut changed = true;
                while changed {
                    changed = false;
                    for i in 0..n {
                        if self.state[i] != State::Pending {
                            continue;
                        }
                        match self.readiness(i) {
                            Readiness::Never(status, reason) => {
                                self.state[i] = State::Done(status);
                                self.emit(RunEvent::StepNotRun {
                                    step: i,
                                    status,
                                    reason,
                                });
                                changed = true;
                            }
                            Readiness::Ready if running.len() < max => {
                                self.start(i, &mut running);
                            }
                            Readiness::Ready | Readiness::Wait => {}
                        }
                    }
                }
            }
            if running.is_empty() {
                return (failed, *cancel.borrow());
            }
            tokio::select! {
                joined = running.join_next() => {
                    let Some(joined) = joined else { continue };
                    let (i, sequence, outcome) = match joined {
                        Ok(r) => r,
                        Err(e) => {
                            // A panicked step task: record it as failed rather than lose it.
                            let i = self.state.iter().position(|s| *s == State::Running).unwrap_or(0);
                            (i, 0, tools::internal_failure(SystemTime::now(), format!("internal error: {e}")))
                        }
                    };
                    let status = outcome.status;
                    self.state[i] = State::Done(status);
                    let stopped_by_budget = *self.cancel.borrow() && !self.shared.interrupted() && self.shared.check().is_some();
                    if outcome.budget_exhausted || (status.is_failure() && stopped_by_budget) {
                        self.budget_hit.push(i);
                    }
                    self.secrets += outcome.findings.len();
                    self.fingerprints.extend(outcome.findings.iter().map(|f| f.fingerprint.clone()));
                    if let Some(f) = &outcome.result_file {
                        self.results.insert(self.plan.steps[i].id.clone(), f.clone());
                    }
                    if status == StepStatus::Success {
                        self.completed.push(i);
                    } else if status.is_failure() && !self.plan.steps[i].continue_on_error && failed.is_none() && !self.budget_hit.contains(&i) {
                        failed = Some(i);
                    }
                    self.emit(RunEvent::StepFinished { step: i, sequence, outcome });
                    if running.is_empty() && !self.since_checkpoint.is_empty() {
                        // Quiet workspace: credit its changes to the step that
                        // ran alone, or to nobody after an overlap.
                        let alone = match self.since_checkpoint[..] {
                            [only] => Some(only),
                            _ => None,
                        };
                        self.since_checkpoint.clear();
                        self.checkpoint(alone, false).await;
                    }
                }
                _ = cancel.wait_for(|c| *c), if !*cancel.borrow() => {
                    // Running steps see the same signal and stop their process groups.
                }
            }
        }
    }

    fn start(&mut self, i: usize, running: &mut JoinSet<(usize, u32, StepOutcome)>) {
        self.sequence += 1;
        let sequence = self.sequence;
        self.state[i] = State::Running;
        self.since_checkpoint.push(i);
        let at = SystemTime::now();
        self.emit(RunEvent::StepStarted {
            step: i,
            sequence,
            at,
        });
        let plan = Arc::clone(&self.plan);
        let ctx = self.context(&plan.steps[i]);
        running.spawn(async move {
            let mut outcome = tools::execute(&plan.steps[i], &ctx, at).await;
            let id = plan.steps[i].id.clone();
            // Scanning reads and rewrites files: off the async workers.
            let swept = tokio::task::spawn_blocking(move || {
                tools::sweep(&mut outcome, &ctx, &id);
                outcome
            })
            .await;
            let outcome = swept.unwrap_or_else(|e| {
                tools::internal_failure(at, format!("internal error while scanning: {e}"))
            });
            (i, sequence, outcome)
        });
    }

    async fn rollback(&mut self) {
        let order: Vec<usize> = self.completed.iter().rev().copied().collect();
        for i in order {
            let step = &self.plan.steps[i];
            let Some(cmd) = step.rollback_command.clone() else {
                continue;
            };
            if *self.cancel.borrow() {
                break;
            }
            self.sequence += 1;
            let sequence = self.sequence;
            self.emit(RunEvent::RollbackStarted { step: i, sequence });
            let ctx = self.context(step);
            let started = SystemTime::now();
            let result =
                tools::bash::run_command(&cmd, &ctx.env.workspace, step, &ctx, "rollback.", true)
                    .await;
            let mut outcome = tools::bash::outcome(step, result, started, None, &ctx);
            tools::sweep(&mut outcome, &ctx, &step.id);
            self.secrets += outcome.findings.len();
            self.fingerprints
                .extend(outcome.findings.iter().map(|f| f.fingerprint.clone()));
            self.emit(RunEvent::RollbackFinished {
                step: i,
                sequence,
                outcome,
            });
            self.checkpoint(Some(i), true).await;
        }
    }

    /// Note what changed in the (quiet) workspace since the last checkpoint,
    /// credited to `step` (or its rollback), or to nobody. Off the async workers.
    async fn checkpoint(&mut self, step: Option<usize>, rollback: bool) {
        let Some(tracker) = self.tracker.clone() else {
            return;
        };
        let label = step.map(|i| {
            let id = &self.plan.steps[i].id;
            if rollback {
                format!("{id} (rollback)")
            } else {
                id.clone()
            }
        });
        let files =
            tokio::task::spawn_blocking(move || lock(&tracker).checkpoint(label.as_deref()))
                .await
                .ok()
                .flatten();
        if let (Some(step), Some(files)) = (step, files) {
            self.emit(RunEvent::StepChanges {
                step,
                rollback,
                files: files.files,
                omitted: files.omitted,
            });
        }
    }
}
