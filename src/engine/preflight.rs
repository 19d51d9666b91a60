//! Before anything runs: announce every decision, carry over what a resumed
//! run already did, skip what `--steps` left out, and stop the run at the
//! gate when a step is blocked or denied under `on_approval_required: deny`
//! (nothing is executed, so a half-run plan never has to be undone). A dry
//! run ends here too.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::mpsc::Sender;

use super::events::RunEvent;
use super::schedule::State;
use super::{RunSettings, StepDecision, decide_all, emit};
use crate::model::{DecisionKind, OnApproval};
use crate::model::{RunStatus, StepStatus};
use crate::plan::Plan;

/// Decide every step and emit the decisions.
pub(super) fn decide_and_announce(
    plan: &Plan,
    settings: &RunSettings,
    events: &Sender<RunEvent>,
) -> Vec<StepDecision> {
    let decisions = decide_all(
        plan,
        &settings.env,
        &settings.policy,
        &settings.approvals,
        &settings.inputs,
        &settings.active(plan.steps.len()),
    );
    for (i, d) in decisions.iter().enumerate() {
        emit(
            events,
            RunEvent::Decided {
                step: i,
                risk: d.risk,
                decision: d.decision.clone(),
                sandbox: d.sandbox.clone(),
            },
        );
    }
    decisions
}

/// The run's state before the first step starts.
pub(super) struct Start {
    /// Every step's state: carried over and unselected steps are done.
    pub(super) state: Vec<State>,
    /// Which steps `--steps` selected.
    pub(super) selected: Vec<bool>,
    /// Secrets the carried-over steps found.
    pub(super) secrets: usize,
    /// Their fingerprints.
    pub(super) fingerprints: HashSet<String>,
    /// The carried-over agent results, by step id.
    pub(super) results: BTreeMap<String, PathBuf>,
    /// The carried-over steps, in the order they completed.
    pub(super) completed: Vec<usize>,
    /// Each step's outputs (the carried-over steps' so far).
    pub(super) outputs: Vec<std::collections::BTreeMap<String, String>>,
    /// Steps the gate skipped for want of approval (`on_approval_required: skip`).
    pub(super) approval_skipped: Vec<usize>,
    /// The carried-over steps whose output held a secret.
    pub(super) leaked: Vec<bool>,
}

impl Start {
    /// Carry over what the resumed run did, and skip what `--steps` left out.
    pub(super) fn new(plan: &Plan, settings: &RunSettings, events: &Sender<RunEvent>) -> Start {
        let n = plan.steps.len();
        let mut start = Start {
            state: vec![State::Pending; n],
            selected: settings.selected.clone().unwrap_or_else(|| vec![true; n]),
            secrets: 0,
            fingerprints: HashSet::new(),
            results: BTreeMap::new(),
            completed: Vec::new(),
            outputs: vec![std::collections::BTreeMap::new(); n],
            approval_skipped: Vec::new(),
            leaked: vec![false; n],
        };
        start.carry_over(plan, settings, events);
        for i in 0..n {
            if !start.selected[i] && start.state[i] == State::Pending {
                start.skip(events, i, "not selected by --steps".into());
            }
        }
        start
    }

    /// Resumed: what succeeded before is not run again.
    fn carry_over(&mut self, plan: &Plan, settings: &RunSettings, events: &Sender<RunEvent>) {
        let Some(resume) = &settings.resume else {
            return;
        };
        let mut done: Vec<(String, usize)> = Vec::new();
        for (i, c) in resume.carried.iter().enumerate() {
            let Some(c) = c else { continue };
            self.state[i] = State::Done(StepStatus::Success);
            self.secrets += c.findings.len();
            self.leaked[i] = !c.findings.is_empty();
            self.fingerprints
                .extend(c.findings.iter().map(|f| f.fingerprint.clone()));
            if let Some(f) = &c.result_file {
                self.results.insert(plan.steps[i].id.clone(), f.clone());
            }
            self.outputs[i] = super::passed_on(&c.outputs);
            done.push((c.report.finished_at.clone().unwrap_or_default(), i));
            emit(
                events,
                RunEvent::StepCarriedOver {
                    step: i,
                    previous: Box::new(c.report.clone()),
                    findings: c.findings.clone(),
                },
            );
        }
        done.sort();
        self.completed = done.into_iter().map(|(_, i)| i).collect();
    }

    /// Marks step `i` skipped before the run starts, and says why.
    fn skip(&mut self, events: &Sender<RunEvent>, i: usize, reason: String) {
        self.state[i] = State::Done(StepStatus::Skipped);
        emit(
            events,
            RunEvent::StepNotRun {
                step: i,
                status: StepStatus::Skipped,
                reason,
            },
        );
    }

    /// Steps still to run.
    pub(super) fn pending(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.state.len()).filter(|&i| self.state[i] == State::Pending)
    }
}

/// The gate: a blocked step, or a denied one under `on_approval_required:
/// deny`, ends the run before anything runs (exit 3); under `skip`, denied
/// steps are skipped. A dry run ends here, successfully. Returns how the run
/// ended when it ends here.
pub(super) fn gate(
    plan: &Plan,
    settings: &RunSettings,
    decisions: &[StepDecision],
    start: &mut Start,
    events: &Sender<RunEvent>,
) -> Option<RunStatus> {
    let deny_mode = settings.policy.on_approval_required == OnApproval::Deny;
    // Never runs (a condition known before the run is false, for it or a
    // dependency): skipped, no approval, secret or sandbox needed.
    let known_false: Vec<usize> = start
        .pending()
        .filter(|&i| decisions[i].skip.is_some())
        .collect();
    for i in known_false {
        if let Some(why) = &decisions[i].skip {
            start.skip(events, i, why.clone());
        }
    }
    let stoppers: Vec<usize> = start
        .pending()
        .filter(|&i| match decisions[i].decision.decision {
            DecisionKind::Blocked => true,
            DecisionKind::Denied => deny_mode,
            DecisionKind::AutoApproved | DecisionKind::PreApproved => false,
        })
        .collect();
    if let Some(&first) = stoppers.first() {
        for i in start.pending() {
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
            emit(
                events,
                RunEvent::StepNotRun {
                    step: i,
                    status,
                    reason,
                },
            );
        }
        return Some(RunStatus::Denied);
    }
    let denied: Vec<usize> = start
        .pending()
        .filter(|&i| decisions[i].decision.decision == DecisionKind::Denied)
        .collect();
    for i in denied {
        let reason = format!(
            "skipped (on_approval_required: skip): {}",
            decisions[i].decision.reason
        );
        start.skip(events, i, reason);
        start.approval_skipped.push(i);
    }
    None
}
