//! `plangate run --resume REPORT.json`: carry over what succeeded, run the rest.
//!
//! A resumed run is a new run (new id, new output folder) of the same plan
//! in the same workspace. It is refused, with the reason, unless the plan
//! file is byte for byte the one the report names (sha256), the workspace is
//! the same folder, and — when the report recorded a git `HEAD` or the
//! workspace is in a git work tree now — `HEAD` is the same commit. A report
//! left `in_progress` by a killed run is accepted: resuming it is the point.
//!
//! Which steps are carried over (not run again, reported `success` with the
//! previous outcome and `carried_over`): those that ended `success` and whose
//! rollback did not run. A step whose rollback ran had its effects undone (or
//! partly undone), so it runs again, like every step that failed, timed out,
//! was rejected, denied, blocked, skipped or not run. Those are decided again
//! under the policy in force now.
//!
//! The input values are part of the pin: a resumed run must be given the
//! same values (the report's `inputs_sha256`). A carried-over step's outputs
//! are the report's `outputs`, so its dependents get them again; a value that
//! held a secret was redacted there and is carried over redacted.

use std::path::{Path, PathBuf};

use crate::model::Diagnostic;
use crate::model::{CarriedOver, Finding, Report, StepReport};
use crate::plan::Plan;
use crate::plan::inputs::InputValue;
use std::collections::BTreeMap;

/// What a resumed run takes from the report it resumes.
#[derive(Debug, Clone)]
pub(crate) struct Resume {
    /// The resumed run.
    pub from: CarriedOver,
    /// Per plan step: its previous report when it is carried over.
    pub carried: Vec<Option<CarriedStep>>,
}

/// A step carried over from the resumed run.
#[derive(Debug, Clone)]
pub(crate) struct CarriedStep {
    /// Its report in that run (with `carried_over` set to where it really ran).
    pub report: StepReport,
    /// The secrets found in its output then (they still count).
    pub findings: Vec<Finding>,
    /// An agent step's accepted result file, absolute, if it is still there.
    pub result_file: Option<PathBuf>,
    /// Its outputs, as the report recorded them.
    pub outputs: std::collections::BTreeMap<String, String>,
}

fn refuse(report: &Path, msg: String) -> Diagnostic {
    Diagnostic {
        file: report.display().to_string(),
        line: 0,
        column: 0,
        message: format!("cannot resume: {msg}"),
        help: Some(
            "resume with the same plan file, in the same workspace at the same commit; otherwise start a new run"
                .into(),
        ),
    }
}

/// Read `report_path` and check it against the plan and the workspace now
/// (`head`: the workspace's git `HEAD`, see [`crate::diff::workspace_head`]).
pub(crate) fn load(
    report_path: &Path,
    plan: &Plan,
    workspace: &Path,
    head: Option<&str>,
    inputs: &BTreeMap<String, InputValue>,
) -> Result<Resume, Diagnostic> {
    let text = std::fs::read_to_string(report_path)
        .map_err(|e| refuse(report_path, format!("cannot read the report: {e}")))?;
    let report: Report = serde_json::from_str(&text).map_err(|e| {
        refuse(
            report_path,
            format!(
                "not a plangate report: {e} (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })?;
    let abs = report_path
        .canonicalize()
        .unwrap_or_else(|_| report_path.to_path_buf());
    check(&report, plan, workspace, head).map_err(|r| refuse(report_path, r.to_string()))?;
    check_inputs(&report, plan, inputs).map_err(|r| refuse(report_path, r.to_string()))?;
    let from = CarriedOver {
        run_id: report.run_id.clone(),
        report: abs.display().to_string(),
    };
    let carried: Vec<Option<CarriedStep>> = plan
        .steps
        .iter()
        .map(|step| {
            let prev = report.steps.iter().find(|s| s.id == step.id)?;
            if prev.status != crate::model::StepStatus::Success || prev.rollback.is_some() {
                return None;
            }
            let origin = prev.carried_over.clone().unwrap_or_else(|| from.clone());
            let origin_dir = Path::new(&origin.report)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let result_file = prev
                .artifacts
                .iter()
                .find(|a| {
                    Path::new(a)
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("parsed."))
                })
                .map(|a| origin_dir.join(a))
                .filter(|p| p.is_file());
            let mut r = prev.clone();
            r.carried_over = Some(origin);
            Some(CarriedStep {
                outputs: prev.outputs.clone(),
                report: r,
                findings: report
                    .findings
                    .iter()
                    .filter(|f| f.step.as_deref() == Some(step.id.as_str()))
                    .cloned()
                    .collect(),
                result_file,
            })
        })
        .collect();
    // An agent's answer is parsed before anything uses it, a stored one
    // too: a result file that no longer reads back refuses the resume, and
    // the outputs later steps get come from the file, not the report.
    let mut carried = carried;
    for (step, c) in plan.steps.iter().zip(carried.iter_mut()) {
        let (crate::tools::Action::Agent(a), Some(c)) = (&step.action, c.as_mut()) else {
            continue;
        };
        let Some(file) = &c.result_file else {
            return Err(refuse(
                report_path,
                format!(
                    "step `{}`: an agent step that succeeded, but its stored answer (`parsed.*` in its artifact folder) is gone: the report's folder was changed since; run the plan again without --resume",
                    step.id
                ),
            ));
        };
        let text = crate::regular::read_to_string(file).map_err(|e| {
            refuse(
                report_path,
                format!(
                    "step `{}`: cannot read its stored answer `{}`: {e}",
                    step.id,
                    file.display()
                ),
            )
        })?;
        crate::tools::agent::stored_answer_reads_back(a, &text).map_err(|why| {
            refuse(
                report_path,
                format!(
                    "step `{}`: its stored answer `{}` no longer reads as the parser accepts it ({why}): the report's folder was changed since; run the plan again without --resume",
                    step.id,
                    file.display()
                ),
            )
        })?;
        c.outputs = crate::tools::outputs::of_agent(a.output, file);
    }
    Ok(Resume { from, carried })
}

/// Why a report cannot be resumed with this plan in this workspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// The resumed run's plan or flags were invalid.
    #[error(
        "run {run_id} never started (its plan or flags were invalid): there is nothing to resume"
    )]
    NeverStarted {
        /// The resumed run.
        run_id: String,
    },
    /// The plan file is not the one the report names.
    #[error(
        "the plan changed since run {run_id}: {plan} has sha256 {now}, the report recorded {then}"
    )]
    PlanChanged {
        /// The resumed run.
        run_id: String,
        /// The plan file now.
        plan: String,
        /// Its sha256 now.
        now: String,
        /// The sha256 the report recorded.
        then: String,
    },
    /// The report recorded no plan hash.
    #[error("run {run_id} recorded no plan hash")]
    NoPlanHash {
        /// The resumed run.
        run_id: String,
    },
    /// Another workspace.
    #[error("run {run_id} worked on {then}, this run on {now}")]
    OtherWorkspace {
        /// The resumed run.
        run_id: String,
        /// The workspace the report names.
        then: String,
        /// This run's.
        now: String,
    },
    /// `HEAD` is another commit.
    #[error("the workspace's git HEAD moved since run {run_id}: it was {then}, it is {now}")]
    HeadMoved {
        /// The resumed run.
        run_id: String,
        /// `HEAD` then.
        then: String,
        /// `HEAD` now.
        now: String,
    },
    /// The report recorded a `HEAD`; the workspace has none now.
    #[error("run {run_id} recorded git HEAD {then}, but the workspace has no git HEAD now")]
    HeadGone {
        /// The resumed run.
        run_id: String,
        /// `HEAD` then.
        then: String,
    },
    /// The input values are not the ones the resumed run was given.
    #[error("the inputs differ from run {run_id}'s ({which}): resume with the same --input values")]
    InputsChanged {
        /// The resumed run.
        run_id: String,
        /// Which differ, as far as the report shows (its values are redacted).
        which: String,
    },
    /// The workspace has a `HEAD` now; the report recorded none.
    #[error(
        "run {run_id} recorded no git HEAD, but the workspace is at {now} now: plangate cannot tell whether it moved"
    )]
    HeadUnknown {
        /// The resumed run.
        run_id: String,
        /// `HEAD` now.
        now: String,
    },
}

/// Why the report cannot be resumed with this plan in this workspace (pure).
pub(crate) fn check(
    report: &Report,
    plan: &Plan,
    workspace: &Path,
    head: Option<&str>,
) -> Result<(), Refusal> {
    let run_id = report.run_id.clone();
    if report.status == crate::model::RunStatus::Invalid && report.steps.is_empty() {
        return Err(Refusal::NeverStarted { run_id });
    }
    match &report.plan.sha256 {
        Some(h) if *h == plan.sha256 => {}
        Some(h) => {
            return Err(Refusal::PlanChanged {
                run_id,
                plan: plan.path.display().to_string(),
                now: plan.sha256.clone(),
                then: h.clone(),
            });
        }
        None => return Err(Refusal::NoPlanHash { run_id }),
    }
    if Path::new(&report.workspace) != workspace {
        return Err(Refusal::OtherWorkspace {
            run_id,
            then: report.workspace.clone(),
            now: workspace.display().to_string(),
        });
    }
    match (report.workspace_head.as_deref(), head) {
        (None, None) => Ok(()),
        (Some(then), Some(now)) if then == now => Ok(()),
        (Some(then), Some(now)) => Err(Refusal::HeadMoved {
            run_id,
            then: then.to_owned(),
            now: now.to_owned(),
        }),
        (Some(then), None) => Err(Refusal::HeadGone {
            run_id,
            then: then.to_owned(),
        }),
        (None, Some(now)) => Err(Refusal::HeadUnknown {
            run_id,
            now: now.to_owned(),
        }),
    }
}

/// Whether this run's input values are the resumed run's (pure).
pub(crate) fn check_inputs(
    report: &Report,
    plan: &Plan,
    inputs: &BTreeMap<String, InputValue>,
) -> Result<(), Refusal> {
    let now = (!plan.inputs.is_empty()).then(|| crate::plan::inputs::digest(inputs));
    if now == report.inputs_sha256 {
        return Ok(());
    }
    let mut names: Vec<String> = Vec::new();
    for name in plan.inputs.keys() {
        let then = report.inputs.get(name);
        let value = inputs.get(name).map(InputValue::to_json);
        if then != value.as_ref() {
            names.push(format!("`{name}`"));
        }
    }
    let which = if names.is_empty() {
        "a value the report shows redacted".to_owned()
    } else {
        names.join(", ")
    };
    Err(Refusal::InputsChanged {
        run_id: report.run_id.clone(),
        which,
    })
}
