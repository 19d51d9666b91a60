//! The engine: decide for every step, then run the dependency graph.
//!
//! Order of work:
//! 1. *Pre-flight*: every step is classified and decided before anything
//!    runs (like `terraform plan`). A blocked step, or a step without the
//!    approval it needs under `on_approval_required: deny`, ends the run
//!    right there with exit 3: nothing is executed, so a half-run plan never
//!    has to be undone.
//! 2. *Schedule*: steps start in plan order as soon as their dependencies
//!    succeeded, at most `max_parallel` at once. Under `fail_fast` (the
//!    default) the first failure of a step without `continue_on_error` stops
//!    new steps from starting; running ones finish. With `fail_fast: false`
//!    every step that does not depend on a failed one still starts. A signal,
//!    an exhausted budget and (under `fail_fast`) a secret found under
//!    `fail_on_secrets` stop everything; with `fail_fast: false` a secret
//!    only stops the dependents of the step whose output held it.
//!    Dependents of a failed step are `not_run`; of a skipped step,
//!    `skipped`. A step with `if:` runs only when its condition holds
//!    (false: `skipped`, "condition false"); one whose condition calls a
//!    status function (`always()`, `success()`, `failure()`) is evaluated
//!    whatever its dependencies ended, even after a failure. A step gets its
//!    dependencies' outputs as `PLANGATE_OUTPUT_<STEP>_<NAME>`. A bash step
//!    with `retry:` runs again after a failed attempt (`tools/bash/retry.rs`).
//! 3. *Rollback*: when the run fails (not when it is interrupted or denied),
//!    the `rollback_command` of every step that succeeded runs, newest
//!    completion first, each with its step's timeout; a failing rollback is
//!    recorded and the others still run. With `fail_fast: false` only the
//!    successful steps a failed step depends on are rolled back, and not those
//!    a kept step depends on too (`finish::keep_going_rollbacks`). Under
//!    `--resume`, the steps carried over from the resumed run count as
//!    completed before any of this run's.
//!
//! The engine reports only through [`events::RunEvent`]s.

pub(crate) mod events;
mod finish;
mod preflight;
mod schedule;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::model::EffectivePolicy;
use crate::model::RunStatus;
use crate::model::{Decision, DecisionKind, RiskAssessment};
use crate::plan::{Plan, Step};
use crate::policy::{DecisionInput, decide};
use crate::tools::{self, RunShared, ToolEnv};
use events::RunEvent;
use schedule::Scheduler;

/// The variable that carries an agent step's accepted result file to later steps
/// (`PLANGATE_RESULT_<ID>`, the id as [`crate::format::names::env_key`] writes it).
pub(crate) fn result_var(step_id: &str) -> String {
    format!("PLANGATE_RESULT_{}", crate::format::names::env_key(step_id))
}

/// The variable that carries output `name` of step `step_id` to its dependents.
pub(crate) fn output_var(step_id: &str, name: &str) -> String {
    use crate::format::names::env_key;
    format!("PLANGATE_OUTPUT_{}_{}", env_key(step_id), env_key(name))
}

/// Everything about a run that is not in the plan.
#[derive(Debug, Clone)]
pub(crate) struct RunSettings {
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
    /// Between a long agent step's heartbeat lines (None: none).
    pub heartbeat: Option<Duration>,
    /// The workspace's git `HEAD` at the start (recorded in the report).
    pub workspace_head: Option<String>,
    /// `--resume`: the run resumed and the steps carried over from it.
    pub resume: Option<crate::resume::Resume>,
    /// `--shard i/N`: the report's `shard` block (the plan is already restricted to it).
    pub shard: Option<crate::model::ShardInfo>,
    /// `--record FILE`: where live agent answers are written.
    pub record: Option<Arc<crate::tools::agent::record::Recorder>>,
    /// The plan's input values (checked).
    pub inputs: Inputs,
    /// `--strict`: a partial success is a failure.
    pub strict: bool,
    /// `--show-output`: whose output tail the report keeps.
    pub show_output: crate::model::ShowOutput,
}

/// A step's risk and decision.
#[derive(Debug, Clone)]
pub(crate) struct StepDecision {
    /// Declared, classified, effective.
    pub risk: RiskAssessment,
    /// The verdict and its reason.
    pub decision: Decision,
    /// The sandbox its processes run in (None: it runs none, or it does not run).
    pub sandbox: Option<crate::model::StepSandbox>,
    /// Why it is skipped before the run: its `if:` reads only inputs and
    /// matrix values and is false (then it needs no approval; a blocked
    /// step stays blocked).
    pub skip: Option<String>,
}

/// Classify and decide every step (used by `run` and `validate`).
pub(crate) fn decide_all(
    plan: &Plan,
    env: &ToolEnv,
    policy: &EffectivePolicy,
    approvals: &BTreeSet<String>,
    inputs: &Inputs,
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
            // Every part of the step is judged (its rollback too), links resolved.
            let verdict = tools::judge::verdict(step, env, policy, risk.effective);
            let mut decision = decision.with_permission(verdict);
            let approved = approvals.contains(&step.id) || approvals.contains(&step.template);
            let sandbox = sandbox_for(step, env, policy, &risk, approved, &mut decision);
            // The classifier quotes commands whole; they are cut here, after
            // redaction, so no secret's prefix survives the cut.
            decision.reason = crate::redact::cut_reason(&decision.reason);
            let skip = (decision.decision != DecisionKind::Blocked)
                .then(|| static_skip(step, inputs))
                .flatten();
            StepDecision {
                risk,
                decision,
                sandbox,
                skip,
            }
        })
        .collect()
}

/// The run's input values.
pub(crate) type Inputs = std::collections::BTreeMap<String, crate::plan::inputs::InputValue>;

/// A condition known before the run: an `if:` that reads only inputs and
/// matrix values (no step, no status function) is evaluated with the
/// decisions; false gives the reason the step is skipped.
fn static_skip(step: &Step, inputs: &Inputs) -> Option<String> {
    use crate::format::expr::{self, Ref, Val};
    let cond = step.condition.as_ref()?;
    let known = |r: &Ref| matches!(r, Ref::Input(_) | Ref::Matrix(_));
    if cond.uses_status || !cond.expr.refs().iter().all(|(r, _)| known(r)) {
        return None;
    }
    let lookup = StaticLookup { step, inputs };
    match expr::eval(&cond.expr, &lookup) {
        Ok(Val::Bool(false)) => Some(format!("condition false: `{}`", cond.text)),
        // True, or an error the run reports when the step's turn comes.
        _ => None,
    }
}

/// The values a condition known before the run reads.
struct StaticLookup<'a> {
    step: &'a Step,
    inputs: &'a Inputs,
}

impl crate::format::expr::Lookup for StaticLookup<'_> {
    fn value(&self, r: &crate::format::expr::Ref) -> crate::format::expr::Val {
        use crate::format::expr::{Ref, Val};
        match r {
            Ref::Input(n) => self.inputs.get(n).map_or(Val::Null, input_val),
            Ref::Matrix(k) => self.step.matrix_values.get(k).cloned().unwrap_or(Val::Null),
            Ref::Output(..) | Ref::Status(_) | Ref::Outcome(_) => Val::Null,
        }
    }

    fn success(&self) -> bool {
        true
    }

    fn failure(&self) -> bool {
        false
    }
}

/// An input's value as a condition sees it.
pub(crate) fn input_val(v: &crate::plan::inputs::InputValue) -> crate::format::expr::Val {
    use crate::format::expr::Val;
    use crate::plan::inputs::InputValue;
    match v {
        InputValue::Str(s) => Val::Str(s.clone()),
        InputValue::Num(n) => Val::Num(n.as_f64().unwrap_or(f64::NAN)),
        InputValue::Bool(b) => Val::Bool(*b),
    }
}

/// What `run` would make of these decisions before any step starts (for
/// `validate`): the steps that stop it at the gate (blocked, or denied under
/// `on_approval_required: deny`; then its status is `denied`, exit 3), and
/// otherwise the steps it would skip for want of approval with the
/// dependents the dependency rule skips with them (a partial success).
pub(crate) fn gate_outcome(
    plan: &Plan,
    policy: &EffectivePolicy,
    decisions: &[StepDecision],
) -> (Vec<usize>, Vec<crate::model::PartialReason>) {
    let deny_mode = policy.on_approval_required == crate::model::OnApproval::Deny;
    let refused: Vec<usize> = (0..decisions.len())
        .filter(|&i| {
            decisions[i].skip.is_none() || decisions[i].decision.decision == DecisionKind::Blocked
        })
        .filter(|&i| match decisions[i].decision.decision {
            DecisionKind::Blocked => true,
            DecisionKind::Denied => deny_mode,
            DecisionKind::AutoApproved | DecisionKind::PreApproved => false,
        })
        .collect();
    if !refused.is_empty() {
        return (refused, Vec::new());
    }
    let skipped: Vec<usize> = (0..decisions.len())
        .filter(|&i| {
            decisions[i].decision.decision == DecisionKind::Denied && decisions[i].skip.is_none()
        })
        .collect();
    // Every step might end skipped: the dependency rule decides which do.
    let n = plan.steps.len();
    let state = vec![schedule::State::Done(crate::model::StepStatus::Skipped); n];
    let partial = finish::partial_reasons(
        plan,
        &state,
        &vec![true; n],
        &skipped,
        &condition_false(decisions),
    );
    (Vec::new(), partial)
}

/// The steps whose condition, known before the run, is false: skipped on their own.
pub(crate) fn condition_false(decisions: &[StepDecision]) -> Vec<usize> {
    (0..decisions.len())
        .filter(|&i| decisions[i].skip.is_some())
        .collect()
}

/// The sandbox an approved step's processes run in; when it cannot be had,
/// the decision becomes `blocked` with the reason (fail-close).
fn sandbox_for(
    step: &Step,
    env: &ToolEnv,
    policy: &EffectivePolicy,
    risk: &RiskAssessment,
    approved: bool,
    decision: &mut Decision,
) -> Option<crate::model::StepSandbox> {
    if !matches!(
        decision.decision,
        DecisionKind::AutoApproved | DecisionKind::PreApproved
    ) {
        return None;
    }
    let request = step.sandbox_request(&env.workspace, env.home.as_deref())?;
    match crate::sandbox::plan_for(&request, risk.effective, env.sandbox.as_ref(), policy) {
        Ok(s) => {
            // Fail-close: a property the backend does not enforce here lowers
            // what may run unattended; an explicit approval still runs it.
            let missing = match (s.backend(), env.sandbox.as_ref()) {
                (Some(_), Some(a)) => a.unenforced_for(s.profile.filesystem),
                _ => Vec::new(),
            };
            if decision.decision == DecisionKind::AutoApproved && !missing.is_empty() {
                if approved {
                    decision.decision = DecisionKind::PreApproved;
                    decision.reason = format!(
                        "approved in advance; the {} sandbox here does not enforce {} for a {} step, so it would not have been auto-approved",
                        s.enforcement,
                        missing.join(", "),
                        s.profile.filesystem.as_str()
                    );
                    return Some(s);
                }
                decision.decision = DecisionKind::Denied;
                decision.reason = format!(
                    "not auto-approved: the {} sandbox here does not enforce {} for a {} step \
                     (see the report's sandbox.properties); approve it explicitly (--approve {}) \
                     or run where the sandbox enforces them (bubblewrap, or Landlock on Linux 6.12+)",
                    s.enforcement,
                    missing.join(", "),
                    s.profile.filesystem.as_str(),
                    step.id
                );
                return None;
            }
            Some(s)
        }
        Err(why) => {
            decision.decision = DecisionKind::Blocked;
            decision.reason = format!("blocked: {why}");
            None
        }
    }
}

/// sha256 over a step's tool, parameters and environment (the manifest's input hash).
pub(crate) fn input_hash(step: &Step) -> String {
    let v = serde_json::json!({
        "tool": step.tool.as_str(),
        "parameters": step.parameters,
        "env": step.env,
        "rollback_command": step.rollback_command,
    });
    hex::encode(Sha256::digest(v.to_string().as_bytes()))
}

/// Send an event; a reporter that is gone (the process is going down) is not an error.
fn emit(events: &Sender<RunEvent>, e: RunEvent) {
    let _ = events.send(e);
}

/// Run a plan. Returns how the run ended; everything else goes out as events.
pub(crate) async fn run(
    plan: Arc<Plan>,
    settings: Arc<RunSettings>,
    events: Sender<RunEvent>,
    cancel: watch::Receiver<bool>,
) -> RunStatus {
    let decisions = preflight::decide_and_announce(&plan, &settings, &events);
    let mut start = preflight::Start::new(&plan, &settings, &events);
    if let Some(status) = preflight::gate(&plan, &settings, &decisions, &mut start, &events) {
        emit(
            &events,
            RunEvent::RunFinished {
                status,
                partial: Vec::new(),
            },
        );
        return status;
    }
    let approval_skipped = std::mem::take(&mut start.approval_skipped);
    // A dry run changes nothing: no snapshot of the workspace.
    let read_only = settings.dry_run || finish::read_only(&plan, start.pending(), &start.completed);
    let tracker = finish::start_tracker(&settings, read_only).await;
    // Running steps stop on one channel, for a signal or an exhausted budget.
    let shared = Arc::new(RunShared::new(settings.policy.budget));
    // The sender lives as long as the run, so the channel never closes under running steps.
    let (stop_tx, stop_rx) = watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    schedule::spawn_stop_watchers(cancel, Arc::clone(&shared), Arc::clone(&stop_tx));
    let mut sched = Scheduler {
        plan: Arc::clone(&plan),
        settings: Arc::clone(&settings),
        events: events.clone(),
        cancel: stop_rx,
        shared: Arc::clone(&shared),
        step_ids: Arc::new(plan.steps.iter().map(|s| s.id.clone()).collect()),
        sandboxes: Arc::new(decisions.iter().map(|d| d.sandbox.clone()).collect()),
        judges: Arc::new(
            plan.steps
                .iter()
                .zip(&decisions)
                .map(|(step, d)| {
                    tools::judge::PathJudge::new(
                        &settings.env.workspace,
                        step.tool,
                        d.risk.effective,
                        &settings.policy,
                    )
                    .map(Arc::new)
                })
                .collect(),
        ),
        results: start.results,
        outputs: start.outputs,
        leaked: start.leaked,
        status_conditions: plan
            .steps
            .iter()
            .any(|s| s.condition.as_ref().is_some_and(|c| c.uses_status)),
        budget_hit: Vec::new(),
        secrets: start.secrets,
        fingerprints: start.fingerprints,
        state: start.state,
        selected: start.selected,
        completed: start.completed,
        sequence: 0,
        tracker: tracker.clone(),
        since_checkpoint: Vec::new(),
        exact: Vec::new(),
    };
    if settings.dry_run {
        sched.dry_run(&decisions);
        return finish::conclude(&sched, &approval_skipped, &decisions, RunStatus::Success);
    }
    let (failed_step, _) = sched.run_graph().await;
    let stop = finish::Stop::read(&sched, &shared);
    let mut status = finish::status_after_steps(&plan, &sched, stop);
    finish::mark_unreached(
        &plan,
        &settings,
        &sched,
        &shared,
        stop,
        failed_step,
        &events,
    );
    if matches!(status, RunStatus::Failed | RunStatus::Rejected) {
        sched.rollback().await;
    }
    // Whatever a step left in the output folder, wherever, is scanned before the run ends.
    let late = {
        let (out, ids, seen) = (
            settings.out_dir.clone(),
            Arc::clone(&sched.step_ids),
            sched.fingerprints.clone(),
        );
        tokio::task::spawn_blocking(move || tools::sweep_output_folder(&out, &ids, &seen))
            .await
            .unwrap_or_default()
    };
    sched
        .fingerprints
        .extend(late.iter().map(|f| f.fingerprint.clone()));
    let (summary, markdown, mut findings) =
        finish::changes(tracker, read_only, sched.fingerprints.clone()).await;
    findings.splice(0..0, late);
    sched.secrets += findings.len();
    emit(
        &events,
        RunEvent::Diff {
            summary,
            markdown,
            findings,
        },
    );
    if sched.secrets > 0 && settings.policy.fail_on_secrets {
        status = status.combine(RunStatus::SecretsFound);
    }
    finish::conclude(&sched, &approval_skipped, &decisions, status)
}
