//! After the steps: how the run ended, why the steps left were not run, and
//! what the run changed in the workspace (the diff and the secrets in it).

use std::collections::HashSet;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use super::events::RunEvent;
use super::schedule::{Scheduler, State};
use super::{RunSettings, emit, lock};
use crate::diff::Tracker;
use crate::model::{DiffSummary, Finding, RunStatus, StepStatus};
use crate::model::{PartialKind, PartialReason};
use crate::plan::Plan;
use crate::tools::RunShared;

/// Whether nothing that will run (steps or rollbacks, carried-over ones
/// included) can write the workspace: then the diff is not recorded.
pub(super) fn read_only(
    plan: &Plan,
    pending: impl Iterator<Item = usize>,
    carried: &[usize],
) -> bool {
    let mut pending = pending;
    pending.all(|i| {
        !plan.steps[i].action.may_write_workspace() && plan.steps[i].rollback_command.is_none()
    }) && carried
        .iter()
        .all(|&i| plan.steps[i].rollback_command.is_none())
}

/// Record what the workspace looks like before anything runs (off the async
/// workers); None when the run is read-only or the tracker could not start.
pub(super) async fn start_tracker(
    settings: &RunSettings,
    read_only: bool,
) -> Option<Arc<Mutex<Tracker>>> {
    if read_only {
        return None;
    }
    let ws = settings.env.workspace.clone();
    let out = settings.out_dir.clone();
    // A file some tool may not read never shows its content in the diff.
    let judges: Vec<_> = crate::model::ToolName::ALL
        .iter()
        .filter_map(|&tool| {
            crate::tools::judge::PathJudge::new(
                &ws,
                tool,
                crate::model::Risk::Dangerous,
                &settings.policy,
            )
        })
        .collect();
    tokio::task::spawn_blocking(move || {
        if !judges.is_empty() {
            // Recorded by identity: a link or a rename made during the run
            // never shows the content either (an error leaves the judges,
            // and the steps hide and record again when they start).
            let _ = crate::tools::sandboxed::hidden_by(
                &ws,
                |rel| {
                    judges
                        .iter()
                        .any(|j| j.check_rel(rel, crate::model::Level::Read).is_err())
                },
                false,
            );
        }
        let mut t = Tracker::start(&ws, &out);
        let root = ws.clone();
        t.withhold(Box::new(move |path: &str| {
            crate::denied::path_is_denied(&root.join(path))
                || judges.iter().any(|j| {
                    j.check(std::path::Path::new(path), crate::model::Level::Read)
                        .is_err()
                })
        }));
        t
    })
    .await
    .ok()
    .map(|t| Arc::new(Mutex::new(t)))
}

/// Why the steps stopped, read once when the graph is done.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stop {
    /// A signal arrived.
    pub(super) interrupted: bool,
    /// The budget ran out (or a step ended because it did).
    pub(super) budget_out: bool,
}

impl Stop {
    /// Read the run's stop state.
    pub(super) fn read(sched: &Scheduler, shared: &RunShared) -> Stop {
        Stop {
            interrupted: shared.interrupted(),
            budget_out: shared.check().is_some() || !sched.budget_hit.is_empty(),
        }
    }
}

/// How the run ended after its steps (before secrets in the diff are counted).
pub(super) fn status_after_steps(plan: &Plan, sched: &Scheduler, stop: Stop) -> RunStatus {
    let mut status = RunStatus::Success;
    if stop.budget_out {
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
    if stop.interrupted {
        status = status.combine(RunStatus::Interrupted);
    }
    status
}

/// The run's last event: what made it partial and, under `--strict`, the
/// status that makes of it. Returns the final status.
pub(super) fn conclude(
    sched: &Scheduler,
    approval_skipped: &[usize],
    decisions: &[super::StepDecision],
    status: RunStatus,
) -> RunStatus {
    let partial = partial_reasons(
        &sched.plan,
        &sched.state,
        &sched.selected,
        approval_skipped,
        &super::condition_false(decisions),
    );
    let status = if sched.settings.strict {
        status.strict(partial.iter().map(|p| p.reason))
    } else {
        status
    };
    emit(&sched.events, RunEvent::RunFinished { status, partial });
    status
}

/// What the run left undone although the plan let it go on, in plan order:
/// the steps the gate skipped for want of approval, the selected steps
/// skipped because a dependency was (by the dependency rule, not by a
/// condition that calls a status function), and the failures allowed by
/// `continue_on_error`. Steps in `condition_false` (a condition known before
/// the run is false) were skipped on their own.
pub(super) fn partial_reasons(
    plan: &Plan,
    state: &[State],
    selected: &[bool],
    approval_skipped: &[usize],
    condition_false: &[usize],
) -> Vec<PartialReason> {
    let n = plan.steps.len();
    // For each step skipped for want of approval: the step whose approval was missing.
    let mut root: Vec<Option<usize>> = vec![None; n];
    for &i in approval_skipped {
        root[i] = Some(i);
    }
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            let step = &plan.steps[i];
            if root[i].is_some()
                || condition_false.contains(&i)
                || state[i] != State::Done(StepStatus::Skipped)
                || !selected[i]
                || step.condition.as_ref().is_some_and(|c| c.uses_status)
            {
                continue;
            }
            if let Some(r) = step.deps.iter().find_map(|&d| root[d]) {
                root[i] = Some(r);
                changed = true;
            }
        }
    }
    (0..n)
        .filter_map(|i| {
            let step = &plan.steps[i];
            if let Some(r) = root[i] {
                return Some(PartialReason {
                    step: step.id.clone(),
                    reason: PartialKind::ApprovalRequired,
                    via: (r != i).then(|| plan.steps[r].id.clone()),
                });
            }
            match state[i] {
                State::Done(s) if s.is_failure() && step.continue_on_error => Some(PartialReason {
                    step: step.id.clone(),
                    reason: PartialKind::AllowedFailure,
                    via: None,
                }),
                _ => None,
            }
        })
        .collect()
}

/// Every step that never started is `not_run`, with the reason the run stopped.
pub(super) fn mark_unreached(
    plan: &Plan,
    settings: &RunSettings,
    sched: &Scheduler,
    shared: &RunShared,
    stop: Stop,
    failed_step: Option<usize>,
    events: &Sender<RunEvent>,
) {
    for (i, s) in sched.state.iter().enumerate() {
        if !matches!(s, State::Pending | State::Running) {
            continue;
        }
        let reason = if stop.interrupted {
            "the run was interrupted first".to_owned()
        } else if stop.budget_out {
            format!("not started: {}", shared.stop_reason())
        } else if sched.secrets > 0 && settings.policy.fail_on_secrets {
            "not started: a secret was found in what the run produced (fail_on_secrets)".to_owned()
        } else if let Some(f) = failed_step {
            format!("the run stopped after step `{}` failed", plan.steps[f].id)
        } else {
            "not reached".to_owned()
        };
        emit(
            events,
            RunEvent::StepNotRun {
                step: i,
                status: StepStatus::NotRun,
                reason,
            },
        );
    }
}

/// What the run changed (off the async workers): the summary, its markdown,
/// and the secrets in it that no step's output already showed (`seen`).
pub(super) async fn changes(
    tracker: Option<Arc<Mutex<Tracker>>>,
    read_only: bool,
    seen: HashSet<String>,
) -> (DiffSummary, String, Vec<Finding>) {
    tokio::task::spawn_blocking(move || {
        let mut errors = Vec::new();
        let (summary, markdown) = match tracker {
            Some(t) => {
                let mut t = lock(&t);
                let out = t.finish();
                errors = t.errors().to_vec();
                out
            }
            None if read_only => crate::diff::read_only_run(),
            None => crate::diff::not_recorded(),
        };
        let mut findings = diff_findings(&markdown, &seen);
        // A diff that could not be made whole is an error (exit 4), never
        // "nothing changed": what it could not see was not scanned either.
        if !errors.is_empty() {
            findings.push(crate::tools::unscannable(
                None,
                "diff-summary.md".to_owned(),
                &format!("the diff is not complete: {}", errors.join("; ")),
            ));
        }
        (summary, markdown, findings)
    })
    .await
    .unwrap_or_else(|e| {
        // A crashed diff or scan is an error, never "no findings" (exit 4).
        let why = format!("internal error: the diff could not be made or scanned ({e})");
        let (summary, markdown) = crate::diff::failed(why.clone());
        let finding = crate::tools::unscannable(None, "diff-summary.md".to_owned(), &why);
        (summary, markdown, vec![finding])
    })
}

/// The last sweep of the output folder ([`crate::tools::sweep_output_folder`]),
/// off the async workers. A crashed sweep is an error, never "no findings":
/// an `unscannable` finding (exit 4).
pub(super) async fn final_sweep(out: &std::path::Path, sched: &Scheduler) -> Vec<Finding> {
    let (out, ids, seen) = (
        out.to_path_buf(),
        Arc::clone(&sched.step_ids),
        sched.fingerprints.clone(),
    );
    tokio::task::spawn_blocking(move || crate::tools::sweep_output_folder(&out, &ids, &seen))
        .await
        .unwrap_or_else(|e| {
            vec![crate::tools::unscannable(
                None,
                "the output folder".to_owned(),
                &format!("internal error: the final sweep failed ({e})"),
            )]
        })
}

/// Secrets in the diff summary not already found in a step's output or files.
fn diff_findings(markdown: &str, seen: &HashSet<String>) -> Vec<Finding> {
    let scanner = crate::redact::builtin_scanner();
    let found = scanner.scan_shown(markdown.as_bytes());
    crate::redact::remember(
        found
            .iter()
            .filter_map(|f| markdown.as_bytes().get(f.start..f.end).map(<[u8]>::to_vec)),
    );
    found
        .into_iter()
        .filter(|f| !seen.contains(&f.fingerprint))
        .map(|f| Finding {
            rule: f.rule,
            step: None,
            location: "diff-summary.md".to_owned(),
            line: f.line as u64,
            fingerprint: f.fingerprint,
        })
        .collect()
}
