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
//!    a kept step depends on too (`rollbacks::keep_going_rollbacks`). Under
//!    `--resume`, the steps carried over from the resumed run count as
//!    completed before any of this run's.
//!
//! The engine reports only through [`events::RunEvent`]s.

mod effects;
pub(crate) mod events;
mod finish;
mod preflight;
mod rollbacks;
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

/// A step's outputs as every later reader gets them (dependents'
/// environment, `if:`, prompt templates): as the report shows them, each
/// value redacted, so a secret an output holds reaches no step that was not
/// given it (hashed or encoded there, no mask would catch it). An output
/// whose name holds a secret is left out.
pub(crate) fn passed_on(
    outputs: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    outputs
        .iter()
        .filter(|(name, _)| {
            matches!(
                crate::redact::clean_str(name),
                std::borrow::Cow::Borrowed(_)
            )
        })
        .map(|(name, value)| (name.clone(), crate::redact::clean_str(value).into_owned()))
        .collect()
}

/// The variable that carries output `name` of step `step_id` to its dependents.
pub(crate) fn output_var(step_id: &str, name: &str) -> String {
    use crate::format::names::env_key;
    format!("PLANGATE_OUTPUT_{}_{}", env_key(step_id), env_key(name))
}

/// The variable that carries output `name` of every expansion of matrix
/// step `template` a step depends on: a JSON object keyed by each
/// expansion's matrix values as its id writes them (`package=core`,
/// `arch=x,os=linux`).
pub(crate) fn matrix_outputs_var(template: &str, name: &str) -> String {
    use crate::format::names::env_key;
    format!("PLANGATE_OUTPUTS_{}_{}", env_key(template), env_key(name))
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
    /// What was done to the untrusted inputs (the report's `untrusted_inputs`).
    pub untrusted: std::collections::BTreeMap<String, crate::model::UntrustedText>,
    /// `--strict`: a partial success is a failure.
    pub strict: bool,
    /// `--show-output`: whose output tail the report keeps.
    pub show_output: crate::model::ShowOutput,
}

impl RunSettings {
    /// The steps this run decides and may start: not left out by `--steps`,
    /// not carried over by `--resume` (`n`: the plan's steps).
    pub(crate) fn active(&self, n: usize) -> Vec<bool> {
        (0..n)
            .map(|i| {
                self.selected
                    .as_ref()
                    .is_none_or(|s| s.get(i).copied().unwrap_or(false))
                    && self
                        .resume
                        .as_ref()
                        .is_none_or(|r| r.carried.get(i).is_none_or(Option::is_none))
            })
            .collect()
    }
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
    /// Why it is skipped before the run ([`never_runs`]): its `if:` reads
    /// only inputs and matrix values and is false, or a dependency is
    /// skipped so (then it needs no approval, no secret, no sandbox; a
    /// blocked step stays blocked).
    pub skip: Option<String>,
}

/// Classify and decide every step (used by `run` and `validate`). `active`:
/// the steps this run decides and may start (not left out by `--steps`, not
/// carried over by `--resume`); every step for `validate`.
///
/// A step that never runs ([`never_runs`]) is decided on its parameters
/// alone: its missing secrets and its sandbox do not block it, and it needs
/// no approval (the gate skips it). A step the classifier or the permission
/// rules block stays blocked whatever its condition.
pub(crate) fn decide_all(
    plan: &Plan,
    env: &ToolEnv,
    policy: &EffectivePolicy,
    approvals: &BTreeSet<String>,
    inputs: &Inputs,
    active: &[bool],
) -> Vec<StepDecision> {
    let never = never_runs(plan, inputs, active);
    plan.steps
        .iter()
        .zip(never)
        .map(|(step, never)| {
            let mut classification = tools::classify(step, env);
            let decide_with = |c: &crate::policy::StepClassification| {
                decide(DecisionInput {
                    declared: step.declared_risk,
                    requires_approval: step.requires_approval,
                    classification: c,
                    approved: approvals.contains(&step.id) || approvals.contains(&step.template),
                    tolerance: policy.risk_tolerance,
                })
            };
            let (mut risk, decision) = decide_with(&classification);
            // Permission rules decide before any approval: a denial blocks.
            // Every part of the step is judged (its rollback too), links resolved.
            let verdict = tools::judge::verdict(step, env, policy, risk.effective);
            let mut decision = decision.with_permission(verdict.clone());
            // Fail-close: a step that may run never runs without a secret it
            // declares; one that never runs does not need it.
            if never.is_none()
                && classification.blocked.is_none()
                && let Some(why) = tools::missing_secrets(step, env)
            {
                classification.blocked = Some(why);
                let (r, d) = decide_with(&classification);
                risk = r;
                decision = d.with_permission(verdict);
            }
            let approved = approvals.contains(&step.id) || approvals.contains(&step.template);
            let sandbox = if never.is_none() {
                sandbox_for(step, env, policy, &risk, approved, &mut decision)
            } else {
                None
            };
            // The classifier quotes commands whole; they are cut here, after
            // redaction, so no secret's prefix survives the cut.
            decision.reason = crate::redact::cut_reason(&decision.reason);
            let skip = never.filter(|_| decision.decision != DecisionKind::Blocked);
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

/// Why each step never runs, known before the run (None: it may run). A step
/// of `active` never runs when its own condition, read from inputs and
/// matrix values alone, is false ([`static_skip`]), or, unless its `if:`
/// calls a status function (`always()`, `success()`, `failure()`, which are
/// evaluated whatever its dependencies ended), when an active dependency
/// never runs: the dependency rule then skips it. Transitively. A dependency
/// outside `active` is done before the run (carried over, or left out by
/// `--steps`, which reads as done) and skips nothing.
pub(crate) fn never_runs(plan: &Plan, inputs: &Inputs, active: &[bool]) -> Vec<Option<String>> {
    let n = plan.steps.len();
    let is_active = |i: usize| active.get(i).copied().unwrap_or(false);
    // Each step's own reason, then (step, root) for the ones a dependency skips.
    let mut why: Vec<Option<String>> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| is_active(i).then(|| static_skip(s, inputs)).flatten())
        .collect();
    let mut root: Vec<Option<usize>> = (0..n).map(|i| why[i].is_some().then_some(i)).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            let step = &plan.steps[i];
            if root[i].is_some()
                || !is_active(i)
                || step.condition.as_ref().is_some_and(|c| c.uses_status)
            {
                continue;
            }
            if let Some(&d) = step
                .deps
                .iter()
                .find(|&&d| is_active(d) && root[d].is_some())
            {
                let r = root[d].unwrap_or(d);
                root[i] = Some(r);
                why[i] = Some(format!(
                    "dependency `{}` is skipped before the run (`{}`: {})",
                    plan.steps[d].id,
                    plan.steps[r].id,
                    why[r].clone().unwrap_or_default()
                ));
                changed = true;
            }
        }
    }
    why
}

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
    // A step waiting for an approval is still blocked by what no approval
    // gives (`sandbox: false` the policy forbids): `validate` says so too.
    let pending = decision.decision == DecisionKind::Denied;
    if !pending
        && !matches!(
            decision.decision,
            DecisionKind::AutoApproved | DecisionKind::PreApproved
        )
    {
        return None;
    }
    let request = step.sandbox_request(&env.workspace, env.home.as_deref())?;
    match crate::sandbox::plan_for(&request, risk.effective, env.sandbox.as_ref(), policy) {
        Ok(_) if pending => None,
        Ok(s)
            if s.profile.egress.is_some()
                && !egress_ok(&s, &step.id, env, policy, approved, decision) =>
        {
            None
        }
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

/// Whether a step that declares `egress` may run as decided: blocked where
/// the backend cannot confine it to the proxy (Landlock below ABI 4); not
/// auto-approved where it confines it to the proxy's port only (Landlock),
/// unless the policy allows any network anyway (`allow_any_network`).
fn egress_ok(
    s: &crate::model::StepSandbox,
    id: &str,
    env: &ToolEnv,
    policy: &EffectivePolicy,
    approved: bool,
    decision: &mut Decision,
) -> bool {
    use crate::model::sandbox::{EGRESS, ENFORCED, PORT_ONLY};
    let held = env
        .sandbox
        .as_ref()
        .and_then(|a| a.properties.get(EGRESS))
        .map(String::as_str);
    match held {
        Some(ENFORCED) => true,
        Some(PORT_ONLY) if policy.allow_any_network => true,
        Some(PORT_ONLY) => {
            if decision.decision != DecisionKind::AutoApproved {
                return true;
            }
            let why = format!(
                "the {} sandbox here confines `egress` to the proxy's port only (a host \
                 listening on that port is reachable directly)",
                s.enforcement
            );
            if approved {
                decision.decision = DecisionKind::PreApproved;
                decision.reason =
                    format!("approved in advance; {why}, so it would not have been auto-approved");
                return true;
            }
            decision.decision = DecisionKind::Denied;
            decision.reason = format!(
                "not auto-approved: {why}; approve it explicitly (--approve {id}), run under \
                 bubblewrap, or set `allow_any_network: true` in the --policy file"
            );
            false
        }
        _ => {
            decision.decision = DecisionKind::Blocked;
            decision.reason = format!(
                "blocked: the step declares `egress`, and the {} sandbox here cannot confine it \
                 to plangate's proxy (Landlock needs ABI 4, Linux 6.7+; or install bubblewrap)",
                s.enforcement
            );
            false
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

/// The diff tracker, even if a checkpoint panicked while holding it.
fn lock(
    t: &std::sync::Mutex<crate::diff::Tracker>,
) -> std::sync::MutexGuard<'_, crate::diff::Tracker> {
    t.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    let shared =
        Arc::new(RunShared::new(settings.policy.budget).with_step_cap(settings.policy.step_budget));
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
        asked: Vec::new(),
        dependents: schedule::dependents(&plan),
        waiting: vec![false; plan.steps.len()],
    };
    if settings.dry_run {
        sched.dry_run(&decisions);
        let entries = effects::decide(&plan, &settings, &[], &[], None, 0);
        emit(&events, RunEvent::Publish { entries });
        return finish::conclude(&sched, &approval_skipped, &decisions, RunStatus::Success);
    }
    let (failed_step, _) = sched.run_graph().await;
    crate::redact::debug_panic("engine");
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
    let mut late = schedule::tampered(None);
    late.extend(finish::final_sweep(&settings.out_dir, &sched).await);
    sched
        .fingerprints
        .extend(late.iter().map(|f| f.fingerprint.clone()));
    let (summary, markdown, mut findings) =
        finish::changes(tracker, read_only, sched.fingerprints.clone()).await;
    findings.splice(0..0, late);
    sched.secrets += findings.len();
    // A file no sweep could read or rewrite (withheld), or a sweep or scan
    // that failed: exit 4 whatever `fail_on_secrets` says (fail-closed).
    let withheld = findings.iter().any(tools::is_unscannable)
        || sched
            .fingerprints
            .iter()
            .any(|f| f.starts_with(tools::UNSCANNABLE));
    let entries = publish_entries(&sched, &summary, withheld);
    emit(
        &events,
        RunEvent::Diff {
            summary,
            markdown,
            findings,
        },
    );
    emit(&events, RunEvent::Publish { entries });
    if sched.secrets > 0 && settings.policy.fail_on_secrets {
        status = status.combine(RunStatus::SecretsFound);
    }
    if withheld {
        status = status.combine(RunStatus::SecretsFound);
    }
    finish::conclude(&sched, &approval_skipped, &decisions, status)
}

/// The gates after the run over every accepted request (`engine::effects`).
fn publish_entries(
    sched: &schedule::Scheduler,
    summary: &crate::model::DiffSummary,
    withheld: bool,
) -> Vec<crate::model::publish::PublishEntry> {
    let succeeded: Vec<bool> = sched
        .state
        .iter()
        .map(|s| matches!(s, schedule::State::Done(crate::model::StepStatus::Success)))
        .collect();
    effects::decide(
        &sched.plan,
        &sched.settings,
        &succeeded,
        &sched.asked,
        Some(summary),
        sched.secrets + usize::from(withheld),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::inputs::InputValue;

    const PLAN: &str = r#"version: 1
id: n
inputs:
  push: {type: boolean, default: false}
steps:
  - {id: a, tool: bash, parameters: {command: 'true'}}
  - {id: push, tool: bash, dependencies: [a], if: inputs.push == true, parameters: {command: 'true'}}
  - {id: b, tool: bash, dependencies: [push], parameters: {command: 'true'}}
  - {id: c, tool: bash, dependencies: [b], if: "steps.b.outputs.x == 'y'", parameters: {command: 'true'}}
  - {id: two, tool: bash, dependencies: [a, push], parameters: {command: 'true'}}
  - {id: always, tool: bash, dependencies: [b], if: always(), parameters: {command: 'true'}}
  - {id: after-always, tool: bash, dependencies: [always], parameters: {command: 'true'}}
  - {id: per, tool: bash, matrix: {os: [linux, mac]}, if: "matrix.os == 'linux'", parameters: {command: 'true'}}
  - {id: per-next, tool: bash, dependencies: [per], matrix: {os: [linux, mac]}, parameters: {command: 'true'}}
  - {id: per-all, tool: bash, dependencies: [per], parameters: {command: 'true'}}
"#;

    fn skipped(push: bool, active: &[bool]) -> Vec<String> {
        let plan = crate::plan::load_plan_str("n.yaml", PLAN).expect("valid");
        let inputs: Inputs = [("push".to_owned(), InputValue::Bool(push))].into();
        let active = if active.is_empty() {
            vec![true; plan.steps.len()]
        } else {
            active.to_vec()
        };
        never_runs(&plan, &inputs, &active)
            .iter()
            .zip(&plan.steps)
            .filter(|(w, _)| w.is_some())
            .map(|(_, s)| s.id.clone())
            .collect()
    }

    #[test]
    fn never_runs_follows_the_dependency_rule_transitively_but_not_status_functions() {
        assert_eq!(
            skipped(false, &[]),
            [
                "push",
                "b",
                "c",
                "two",
                "per[os=mac]",
                "per-next[os=mac]",
                "per-all"
            ]
        );
        // True: only the matrix expansion whose own condition is false.
        assert_eq!(
            skipped(true, &[]),
            ["per[os=mac]", "per-next[os=mac]", "per-all"]
        );
    }

    #[test]
    fn a_dependency_outside_the_run_skips_nothing() {
        // `push` left out by --steps (or carried over): `b` may run.
        let plan = crate::plan::load_plan_str("n.yaml", PLAN).expect("valid");
        let mut active = vec![true; plan.steps.len()];
        active[1] = false;
        let got = skipped(false, &active);
        assert!(
            !got.contains(&"push".to_owned()) && !got.contains(&"b".to_owned()),
            "{got:?}"
        );
        assert!(!got.contains(&"two".to_owned()), "{got:?}");
    }

    #[test]
    fn the_reason_names_the_dependency_and_the_root() {
        let plan = crate::plan::load_plan_str("n.yaml", PLAN).expect("valid");
        let inputs: Inputs = [("push".to_owned(), InputValue::Bool(false))].into();
        let why = never_runs(&plan, &inputs, &vec![true; plan.steps.len()]);
        assert_eq!(
            why[3].as_deref(),
            Some(
                "dependency `b` is skipped before the run (`push`: condition false: `inputs.push == true`)"
            )
        );
    }
}
