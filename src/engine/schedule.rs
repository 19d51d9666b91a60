//! The scheduler: starts steps in plan order as soon as their dependencies
//! succeeded (at most `max_parallel` at once), stops starting new ones after
//! the first failure (under `fail_fast`; otherwise only the failed step's
//! dependents stay out), runs the rollbacks, and checkpoints the diff tracker
//! when the workspace is quiet.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::events::RunEvent;
use super::lock;
use super::{RunSettings, matrix_outputs_var, output_var, result_var};
use crate::format::expr::{self, Lookup, Ref, Val};
use crate::model::{StepOutcome, StepStatus};
use crate::plan::Plan;
use crate::tools::{self, RunShared, StepContext};

/// Where a step is in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Pending,
    Running,
    Done(StepStatus),
}

/// Forward a signal, or the wall-time budget running out, to the steps' stop channel.
pub(super) fn spawn_stop_watchers(
    mut external: watch::Receiver<bool>,
    shared: Arc<RunShared>,
    stop: Arc<watch::Sender<bool>>,
) {
    let (s1, t1) = (Arc::clone(&shared), Arc::clone(&stop));
    tokio::spawn(async move {
        if external.wait_for(|c| *c).await.is_ok() {
            s1.set_interrupted();
            // A sweep under way stops at its next piece (the file is withheld).
            crate::tools::stop_sweeps();
            let _ = t1.send(true);
        }
    });
    if let Some(secs) = shared.budget.max_wall_seconds {
        tokio::spawn(async move {
            // A limit no clock can reach (`max_wall_seconds: 18446744073709551615`) is none.
            let Some(deadline) = shared.started.checked_add(Duration::from_secs(secs)) else {
                return;
            };
            tokio::time::sleep_until(deadline.into()).await;
            if shared.check().is_some() {
                let _ = stop.send(true);
            }
        });
    }
}

/// The dependency graph while it runs: who may start, who is running, what
/// succeeded (for the rollback) and what the steps found.
pub(super) struct Scheduler {
    pub(super) plan: Arc<Plan>,
    pub(super) settings: Arc<RunSettings>,
    pub(super) events: Sender<RunEvent>,
    pub(super) cancel: watch::Receiver<bool>,
    pub(super) shared: Arc<RunShared>,
    pub(super) step_ids: Arc<Vec<String>>,
    /// Each step's sandbox (None: it runs no process).
    pub(super) sandboxes: Arc<Vec<Option<crate::model::StepSandbox>>>,
    /// Each step's judge of the paths it finds at run time (None: no permission list).
    pub(super) judges: Arc<Vec<Option<Arc<tools::judge::PathJudge>>>>,
    /// Accepted agent results by step id (for PLANGATE_RESULT_<ID>).
    pub(super) results: BTreeMap<String, PathBuf>,
    /// Each step's outputs, by index (for its dependents).
    pub(super) outputs: Vec<BTreeMap<String, String>>,
    /// Steps whose output held a secret: under `fail_on_secrets` with
    /// `fail_fast: false`, nothing that depends on them starts.
    pub(super) leaked: Vec<bool>,
    /// Some step's `if:` calls a status function: after a failure, such steps are still considered.
    pub(super) status_conditions: bool,
    /// Steps that ended because the budget ran out.
    pub(super) budget_hit: Vec<usize>,
    /// Secrets found so far.
    pub(super) secrets: usize,
    /// Their fingerprints (so the diff does not report them twice).
    pub(super) fingerprints: std::collections::HashSet<String>,
    pub(super) state: Vec<State>,
    pub(super) selected: Vec<bool>,
    /// Steps that succeeded, in completion order.
    pub(super) completed: Vec<usize>,
    pub(super) sequence: u32,
    /// What the run changed and which step changed it (None if it could not start).
    pub(super) tracker: Option<Arc<Mutex<crate::diff::Tracker>>>,
    /// Steps started since the last checkpoint.
    pub(super) since_checkpoint: Vec<usize>,
    /// Steps whose changes are known exactly (agent change sets).
    pub(super) exact: Vec<usize>,
    /// The accepted requests of the steps that ended, in that order.
    pub(super) asked: Vec<(usize, crate::model::publish::Request)>,
    /// Each step's dependents (the steps that list it in `dependencies`).
    pub(super) dependents: Vec<Vec<usize>>,
    /// Steps whose readiness was `Wait` and none of whose dependencies has
    /// changed state since: still `Wait` (it reads only their states,
    /// outputs and leaks, which change with their state), so not asked again.
    pub(super) waiting: Vec<bool>,
}

/// Each step's dependents, by index.
pub(super) fn dependents(plan: &Plan) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); plan.steps.len()];
    for (i, step) in plan.steps.iter().enumerate() {
        for &d in &step.deps {
            if let Some(v) = out.get_mut(d) {
                v.push(i);
            }
        }
    }
    out
}

enum Readiness {
    Ready,
    Wait,
    Never(StepStatus, String),
    /// Its condition could not be evaluated: the step fails without running.
    Fail(String),
}

/// What a step's condition reads: the run's inputs, its matrix values, its
/// dependencies (by the id written in the plan) and their outputs.
struct CondLookup<'a> {
    sched: &'a Scheduler,
    step: usize,
    deps: BTreeMap<&'a str, usize>,
}

impl CondLookup<'_> {
    fn state(&self, d: usize) -> Option<StepStatus> {
        match self.sched.state[d] {
            State::Done(s) => Some(s),
            State::Pending | State::Running => None,
        }
    }

    /// The selected dependencies and how they ended (None: not done).
    fn ended(&self) -> impl Iterator<Item = (usize, Option<StepStatus>)> + '_ {
        self.sched.plan.steps[self.step]
            .deps
            .iter()
            .filter(|&&d| self.sched.selected[d])
            .map(|&d| (d, self.state(d)))
    }
}

impl Lookup for CondLookup<'_> {
    fn value(&self, r: &Ref) -> Val {
        let step = &self.sched.plan.steps[self.step];
        let dep = |id: &str| self.deps.get(id).copied();
        match r {
            Ref::Input(n) => self
                .sched
                .settings
                .inputs
                .get(n)
                .map_or(Val::Null, super::input_val),
            Ref::Matrix(k) => step.matrix_values.get(k).cloned().unwrap_or(Val::Null),
            Ref::Output(id, n) => dep(id)
                .and_then(|d| self.sched.outputs[d].get(n))
                .map_or(Val::Null, |v| Val::Str(v.clone())),
            Ref::Status(id) => dep(id)
                .and_then(|d| self.state(d))
                .map_or(Val::Null, |s| Val::Str(s.as_str().to_owned())),
            Ref::Outcome(id) => dep(id)
                .and_then(|d| self.state(d))
                .map_or(Val::Null, |s| Val::Str(outcome(s).to_owned())),
        }
    }

    fn success(&self) -> bool {
        self.ended().all(|(d, s)| match s {
            Some(StepStatus::Success) => true,
            Some(s) => s.is_failure() && self.sched.plan.steps[d].continue_on_error,
            None => false,
        })
    }

    fn failure(&self) -> bool {
        self.ended().any(|(d, s)| {
            s.is_some_and(StepStatus::is_failure) && !self.sched.plan.steps[d].continue_on_error
        })
    }
}

/// `steps.ID.outcome`: success, failure (a failure allowed by
/// `continue_on_error` too) or skipped (anything that did not run).
fn outcome(s: StepStatus) -> &'static str {
    if s == StepStatus::Success {
        "success"
    } else if s.is_failure() {
        "failure"
    } else {
        "skipped"
    }
}

impl Scheduler {
    fn emit(&self, e: RunEvent) {
        let _ = self.events.send(e);
    }

    /// Step `i` enters `state`: its dependents' readiness is asked again.
    fn set_state(&mut self, i: usize, state: State) {
        self.state[i] = state;
        for &k in &self.dependents[i] {
            self.waiting[k] = false;
        }
    }

    fn readiness(&self, i: usize) -> Readiness {
        let step = &self.plan.steps[i];
        if self.settings.policy.fail_on_secrets
            && let Some(&d) = step
                .deps
                .iter()
                .find(|&&d| self.selected[d] && self.leaked[d])
        {
            // Not even a status function runs on what a leaking step produced.
            return Readiness::Never(
                StepStatus::NotRun,
                format!(
                    "dependency `{}` produced a secret (fail_on_secrets)",
                    self.plan.steps[d].id
                ),
            );
        }
        let Some(cond) = &step.condition else {
            return self.deps_ready(i);
        };
        if cond.uses_status {
            let waiting = step.deps.iter().any(|&d| {
                self.selected[d] && matches!(self.state[d], State::Pending | State::Running)
            });
            if waiting {
                return Readiness::Wait;
            }
        } else {
            match self.deps_ready(i) {
                Readiness::Ready => {}
                other => return other,
            }
        }
        let lookup = CondLookup {
            sched: self,
            step: i,
            deps: step
                .deps
                .iter()
                .map(|&d| (self.plan.steps[d].template.as_str(), d))
                .collect(),
        };
        match expr::eval(&cond.expr, &lookup) {
            Ok(Val::Bool(true)) => Readiness::Ready,
            Ok(Val::Bool(false)) => Readiness::Never(
                StepStatus::Skipped,
                format!("condition false: `{}`", cond.text),
            ),
            Ok(_) => Readiness::Fail(format!("the condition `{}` is not a boolean", cond.text)),
            Err(e) => Readiness::Fail(format!(
                "the condition `{}` cannot be evaluated: {}",
                cond.text, e.message
            )),
        }
    }

    /// The rule without a condition: every dependency succeeded (or failed
    /// under `continue_on_error`); a skipped one skips, another end stops it.
    fn deps_ready(&self, i: usize) -> Readiness {
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

    fn context(&self, i: usize) -> StepContext {
        let step = &self.plan.steps[i];
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
        for (name, value) in &s.inputs {
            run_vars.insert(crate::plan::inputs::env_name(name), value.text());
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
            sandbox: self.sandboxes.get(i).cloned().flatten(),
            fail_on_secrets: s.policy.fail_on_secrets,
            judge: self.judges.get(i).cloned().flatten(),
            extra_readable: Vec::new(),
            record: s.record.clone(),
            pulse: s.heartbeat.map(|every| {
                let events = self.events.clone();
                tools::Pulse::new(every, move |beat| {
                    let _ = events.send(RunEvent::Heartbeat { step: i, beat });
                })
            }),
            on_retry: Some({
                let events = self.events.clone();
                tools::RetryNotices::new(move |notice| {
                    let _ = events.send(RunEvent::StepRetrying { step: i, notice });
                })
            }),
            on_egress: Some({
                let events = self.events.clone();
                crate::egress::Notices::new(move |conn| {
                    let _ = events.send(RunEvent::Egress { step: i, conn });
                })
            }),
            template_values: BTreeMap::new(),
            overlay: None,
        }
    }

    /// What a step gets from its dependencies and the plan besides
    /// [`Scheduler::context`]: `$PLANGATE_OUTPUT` (bash steps), each
    /// dependency's outputs as `PLANGATE_OUTPUT_<STEP>_<NAME>` (of a matrix
    /// dependency also `PLANGATE_OUTPUT_<TEMPLATE>_<NAME>` from the
    /// dependent's own expansion, and `PLANGATE_OUTPUTS_<TEMPLATE>_<NAME>`,
    /// a JSON object of every expansion's value), and the values
    /// its prompt templates may use. Two outputs with one variable name
    /// are refused (the step fails without running).
    fn flow(&self, i: usize, ctx: &mut StepContext) -> Result<(), String> {
        let step = &self.plan.steps[i];
        if step.action.spec().outputs() == crate::tools::spec::Outputs::File {
            ctx.run_vars.insert(
                "PLANGATE_OUTPUT".to_owned(),
                ctx.artifacts_dir
                    .join(crate::tools::outputs::FILE_NAME)
                    .display()
                    .to_string(),
            );
        }
        let mut from: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut claim = |var: String, id: &str, name: &str| -> Result<String, String> {
            if let Some((other, other_name)) = from.get(&var) {
                return Err(format!(
                    "output `{other_name}` of step `{other}` and output `{name}` of step `{id}` would both be `{var}`; rename one of them"
                ));
            }
            from.insert(var.clone(), (id.to_owned(), name.to_owned()));
            Ok(var)
        };
        // A matrix dependency's outputs, per template and name: each
        // expansion's value keyed by its matrix values (`package=core`).
        let mut matrix_outputs: BTreeMap<(&str, &str), BTreeMap<String, &str>> = BTreeMap::new();
        for &d in &step.deps {
            let dep = &self.plan.steps[d];
            // The dependent's own expansion of a matrix dependency (it has
            // every key of the dependency's matrix, with the same values).
            let own = !dep.matrix.is_empty()
                && dep
                    .matrix
                    .iter()
                    .all(|(k, v)| step.matrix.get(k) == Some(v));
            let values: Vec<String> = dep.matrix.iter().map(|(k, v)| format!("{k}={v}")).collect();
            for (name, value) in &self.outputs[d] {
                // A bash step's file is refused at the source; an agent's
                // answer or a resumed report may still carry one.
                if let Some(at) = value.find('\0') {
                    return Err(format!(
                        "step `{}`: {}",
                        dep.id,
                        crate::tools::outputs::nul_message(name, at)
                    ));
                }
                let var = claim(output_var(&dep.id, name), &dep.id, name)?;
                ctx.run_vars.insert(var, value.clone());
                if own {
                    let short = claim(output_var(&dep.template, name), &dep.id, name)?;
                    ctx.run_vars.insert(short, value.clone());
                }
                if !dep.matrix.is_empty() {
                    matrix_outputs
                        .entry((dep.template.as_str(), name.as_str()))
                        .or_default()
                        .insert(values.join(","), value.as_str());
                }
                ctx.template_values.insert(
                    format!("steps.{}.outputs.{name}", dep.template),
                    value.clone(),
                );
            }
        }
        for ((template, name), by_values) in matrix_outputs {
            let var = claim(matrix_outputs_var(template, name), template, name)?;
            let json = serde_json::to_string(&by_values).unwrap_or_default();
            ctx.run_vars.insert(var, json);
        }
        for (name, value) in &self.settings.inputs {
            ctx.template_values
                .insert(format!("inputs.{name}"), value.text());
        }
        for (k, v) in &step.matrix {
            ctx.template_values.insert(format!("matrix.{k}"), v.clone());
        }
        Ok(())
    }

    /// `--dry-run`: every step that would run is `not_run`, saying so; an
    /// agent step's full first prompt is written to its artifact folder
    /// (results of earlier steps as placeholders) and the reason says where.
    pub(super) fn dry_run(&self, decisions: &[super::StepDecision]) {
        for (i, d) in decisions.iter().enumerate() {
            if self.state.get(i) != Some(&State::Pending) {
                continue;
            }
            let mut reason = format!("dry run: would run ({})", d.decision.decision.as_str());
            if let tools::Action::Agent(a) = &self.plan.steps[i].action {
                let mut ctx = self.context(i);
                let _ = self.flow(i, &mut ctx);
                match tools::agent::dry_run_prompt(a, &ctx) {
                    Ok(rel) => reason.push_str(&format!("; its prompt is in {rel}")),
                    Err(why) => reason.push_str(&format!("; its prompt cannot be built: {why}")),
                }
            }
            self.emit(RunEvent::StepNotRun {
                step: i,
                status: StepStatus::NotRun,
                reason,
            });
        }
    }

    /// Returns (first blocking failure, interrupted).
    pub(super) async fn run_graph(&mut self) -> (Option<usize>, bool) {
        let max = usize::try_from(self.settings.policy.max_parallel)
            .unwrap_or(1)
            .max(1);
        let mut running: JoinSet<(usize, u32, StepOutcome)> = JoinSet::new();
        let mut failed: Option<usize> = None;
        let mut cancel = self.cancel.clone();
        let fail_fast = self.settings.policy.fail_fast;
        loop {
            // A signal and the budget stop everything; a secret too under
            // fail_fast (without it, only the leaking step's dependents stay out).
            let stopping = *cancel.borrow()
                || self.shared.check().is_some()
                || (fail_fast && self.secrets > 0 && self.settings.policy.fail_on_secrets);
            if !stopping && (failed.is_none() || self.status_conditions || !fail_fast) {
                self.resolve(&mut running, max, &mut failed);
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
                    self.set_state(i, State::Done(status));
                    let stopped_by_budget = *self.cancel.borrow() && !self.shared.interrupted() && self.shared.check().is_some();
                    if outcome.budget_exhausted || (status.is_failure() && stopped_by_budget) {
                        self.budget_hit.push(i);
                    }
                    self.secrets += outcome.findings.len();
                    self.leaked[i] = !outcome.findings.is_empty();
                    self.fingerprints.extend(outcome.findings.iter().map(|f| f.fingerprint.clone()));
                    if let Some(f) = &outcome.result_file {
                        self.results.insert(self.plan.steps[i].id.clone(), f.clone());
                    }
                    self.outputs[i] = super::passed_on(&outcome.outputs);
                    self.asked.extend(outcome.requests.iter().cloned().map(|r| (i, r)));
                    if status == StepStatus::Success {
                        self.completed.push(i);
                    } else if status.is_failure() && !self.plan.steps[i].continue_on_error && failed.is_none() && !self.budget_hit.contains(&i) {
                        failed = Some(i);
                    }
                    let exact = outcome.agent_changes.as_ref().map(|c| c.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>());
                    self.emit(RunEvent::StepFinished { step: i, sequence, outcome });
                    if let Some(files) = exact {
                        self.credit(i, files);
                    }
                    if running.is_empty() && !self.since_checkpoint.is_empty() {
                        // Quiet workspace: credit its changes to the step that
                        // ran alone (unless its change set already said exactly
                        // what it changed), or to nobody after an overlap.
                        let alone = match self.since_checkpoint[..] {
                            [only] if !self.exact.contains(&only) => Some(only),
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

    /// Resolve never-runnable steps until nothing changes, then start what is
    /// ready. After a failure under `fail_fast`, only steps whose `if:` calls
    /// a status function start; the others are `not_run`. Without `fail_fast`
    /// every ready step starts (a failed step's dependents are never ready).
    fn resolve(
        &mut self,
        running: &mut JoinSet<(usize, u32, StepOutcome)>,
        max: usize,
        failed: &mut Option<usize>,
    ) {
        let n = self.plan.steps.len();
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                if self.state[i] != State::Pending || self.waiting[i] {
                    continue;
                }
                let step = &self.plan.steps[i];
                let status_step = step.condition.as_ref().is_some_and(|c| c.uses_status);
                let (status, reason) = match self.readiness(i) {
                    Readiness::Never(status, reason) => (status, reason),
                    Readiness::Fail(reason) => {
                        if !step.continue_on_error && failed.is_none() {
                            *failed = Some(i);
                        }
                        (StepStatus::Failed, reason)
                    }
                    Readiness::Ready => match *failed {
                        Some(f) if !status_step && self.settings.policy.fail_fast => (
                            StepStatus::NotRun,
                            format!(
                                "the run stopped after step `{}` failed",
                                self.plan.steps[f].id
                            ),
                        ),
                        _ => {
                            if running.len() < max && !self.exposed_by_running(i) {
                                self.start(i, running);
                            }
                            continue;
                        }
                    },
                    Readiness::Wait => {
                        self.waiting[i] = true;
                        continue;
                    }
                };
                self.set_state(i, State::Done(status));
                self.emit(RunEvent::StepNotRun {
                    step: i,
                    status,
                    reason,
                });
                changed = true;
            }
        }
    }

    /// Whether step `i` must wait because it and a running step could see
    /// each other's processes with a secret among them: a step whose
    /// processes hold secrets never runs beside a step whose processes live
    /// outside a pid namespace (Landlock, or no sandbox), which could read
    /// their command lines in `/proc` (and, unsandboxed, their environment).
    fn exposed_by_running(&self, i: usize) -> bool {
        (0..self.state.len()).any(|j| {
            self.state[j] == State::Running
                && ((self.holds_secrets(i) && self.sees_processes(j))
                    || (self.holds_secrets(j) && self.sees_processes(i)))
        })
    }

    /// Step `i` runs processes that are given secrets.
    fn holds_secrets(&self, i: usize) -> bool {
        self.sandboxes.get(i).is_some_and(Option::is_some)
            && !self.plan.steps[i].secret_names().is_empty()
    }

    /// Step `i` runs processes that can read other processes' `/proc`
    /// entries: under Landlock (which cannot follow pids) or unsandboxed.
    fn sees_processes(&self, i: usize) -> bool {
        self.sandboxes
            .get(i)
            .and_then(Option::as_ref)
            .is_some_and(|sb| sb.backend() != Some(crate::model::Backend::Bwrap))
    }

    fn start(&mut self, i: usize, running: &mut JoinSet<(usize, u32, StepOutcome)>) {
        self.sequence += 1;
        let sequence = self.sequence;
        self.set_state(i, State::Running);
        self.since_checkpoint.push(i);
        let at = SystemTime::now();
        self.emit(RunEvent::StepStarted {
            step: i,
            sequence,
            at,
        });
        let plan = Arc::clone(&self.plan);
        let mut ctx = self.context(i);
        let refused = self
            .flow(i, &mut ctx)
            .and_then(|()| {
                crate::outdir::ensure_dir(&ctx.artifacts_dir).map_err(|e| {
                    format!(
                        "cannot make the step's artifact folder {}: {e}",
                        ctx.artifacts_dir.display()
                    )
                })
            })
            .and_then(|()| super::effects::prepare(&mut ctx))
            .err();
        running.spawn(async move {
            if let Some(why) = refused {
                return (i, sequence, tools::internal_failure(at, why));
            }
            crate::redact::debug_panic("step");
            let mut outcome = tools::execute(&plan.steps[i], &ctx, at).await;
            let id = plan.steps[i].id.clone();
            let folder = ctx.artifacts_rel.clone();
            // Scanning reads and rewrites files: blocking, in place (the
            // worker's other tasks move to another thread; a hop to the
            // blocking pool and back cost more than a short step's sweep).
            let held = Arc::clone(&plan);
            let swept = tools::in_place(move || {
                // Looked at before the sweep removes a special file there.
                let replaced = super::effects::replaced(&ctx);
                tools::sweep(&mut outcome, &ctx, &id);
                super::effects::collect(&mut outcome, &ctx, &held, i, replaced);
                outcome.findings.extend(tampered(Some(&id)));
                outcome
            });
            let outcome = swept.unwrap_or_else(|e| {
                // A crashed sweep is an error, never "no findings" (exit 4).
                let why = format!("internal error while scanning: {e}");
                let mut o = tools::internal_failure(at, why.clone());
                let step = plan.steps[i].id.clone();
                o.findings
                    .push(tools::unscannable(Some(step), folder, &why));
                o
            });
            (i, sequence, outcome)
        });
    }

    /// Run the rollbacks of a failed run, newest completion first: every
    /// step that succeeded under `fail_fast`; without it, those
    /// [`super::rollbacks::keep_going_rollbacks`] picks.
    pub(super) async fn rollback(&mut self) {
        let order: Vec<usize> = if self.settings.policy.fail_fast {
            self.completed.iter().rev().copied().collect()
        } else {
            let deps: Vec<&[usize]> = self.plan.steps.iter().map(|s| s.deps.as_slice()).collect();
            let failed: Vec<usize> = (0..self.state.len())
                .filter(|&i| {
                    matches!(self.state[i], State::Done(s) if s.is_failure())
                        && !self.plan.steps[i].continue_on_error
                })
                .collect();
            super::rollbacks::keep_going_rollbacks(&deps, &self.completed, &failed)
        };
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
            let mut ctx = self.context(i);
            // A rollback is a bash command: the rules for bash decide what it may read.
            ctx.judge = ctx
                .judge
                .map(|j| Arc::new(j.for_tool(crate::model::ToolName::Bash)));
            let started = SystemTime::now();
            let result =
                tools::bash::run_command(&cmd, &ctx.env.workspace, step, &ctx, "rollback.", true)
                    .await;
            let mut outcome = tools::bash::outcome(step, result, started, None, &ctx);
            tools::sweep(&mut outcome, &ctx, &step.id);
            outcome.findings.extend(tampered(Some(&step.id)));
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

    /// An agent step's exact change set: its `changed_files`, and its files in the diff.
    fn credit(&mut self, step: usize, files: Vec<String>) {
        self.exact.push(step);
        if let Some(tracker) = &self.tracker {
            lock(tracker).credit(&self.plan.steps[step].id, &files);
        }
        self.emit(RunEvent::StepChanges {
            step,
            rollback: false,
            files,
            omitted: 0,
        });
    }

    /// Note what changed in the (quiet) workspace since the last checkpoint,
    /// credited to `step` (or its rollback), or to nobody. Blocking, in place ([`tools::in_place`]).
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
        let files = tools::in_place(move || lock(&tracker).checkpoint(label.as_deref()))
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

/// What a step changed in the output folder outside its artifact folder
/// ([`crate::outdir::check`]), put right: each an `unscannable` finding
/// (exit 4), credited to `step` (the step that just ended; None at the end).
pub(super) fn tampered(step: Option<&str>) -> Vec<crate::model::Finding> {
    crate::outdir::check()
        .into_iter()
        .map(|(location, why)| {
            let location = if location.is_empty() {
                "output folder".to_owned()
            } else {
                location
            };
            crate::output::warning(format_args!(
                "`{location}` (output folder): {why}; the run fails (exit 4)"
            ));
            crate::model::Finding {
                rule: tools::UNSCANNABLE.to_owned(),
                step: step.map(str::to_owned),
                fingerprint: format!("{}:{location}", tools::UNSCANNABLE),
                location,
                line: 0,
            }
        })
        .collect()
}
