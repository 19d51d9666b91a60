//! `plangate draft`: ask an agent for a plan (the drafting itself is
//! `crate::draft`), write it for review with a header saying so, then show
//! it the way `validate` does. Never runs it.

use std::path::Path;

use super::{Outcome, runtime};
use crate::cli::DraftArgs;
use crate::commands::validate;
use crate::draft::{self, DraftRequest, DraftResult};
use crate::error::Error;
use crate::model::RunStatus;
use crate::plan;
use crate::settings::{self, PlanSettings, RunFlags, usage_diag};

/// `plangate draft`.
pub(crate) fn run(args: &DraftArgs) -> Outcome {
    // As `run` does: the sandbox self-test then finds what a run would.
    if let Some(why) = crate::environ::seal().refusal() {
        return Err(Error::Invalid(vec![usage_diag(
            why,
            crate::environ::REFUSAL_HELP,
        )]));
    }
    let workspace = settings::workspace(&args.decision).map_err(|d| Error::Invalid(vec![d]))?;
    let agents_path = args
        .agents
        .clone()
        .unwrap_or_else(|| workspace.join(".plangate").join("agents.yaml"));
    let agents = plan::load_agents_file(&agents_path).map_err(Error::Invalid)?;
    let Some(agent) = agents.get(&args.agent).cloned() else {
        let hint = plan::diag::did_you_mean(&args.agent, agents.keys().map(String::as_str))
            .map_or_else(
                || "declare it under `agents:`".to_owned(),
                |s| format!("did you mean `{s}`?"),
            );
        return Err(Error::Invalid(vec![usage_diag(
            format!("no agent `{}` in {}", args.agent, agents_path.display()),
            &hint,
        )]));
    };
    if args.out.exists() && !args.force {
        return Err(Error::Invalid(vec![usage_diag(
            format!(
                "{} exists; plangate does not overwrite a plan",
                args.out.display()
            ),
            "choose another --out, or pass --force",
        )]));
    }
    let run_id = uuid::Uuid::now_v7().to_string();
    // The evidence folder stays out of git like a run folder (best effort: the draft does not depend on it).
    let _ = settings::ignore_whole(&crate::format::paths::drafts_folder(&workspace));
    let req = DraftRequest {
        objective: args.objective.clone(),
        agent_name: args.agent.clone(),
        agent,
        agents_dir: agents_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        workspace: workspace.clone(),
        out_dir: draft::default_out_dir(&workspace, &run_id),
        max_attempts: args.max_attempts,
    };
    match runtime()?.block_on(draft::draft(&req)) {
        DraftResult::Plan { text, attempts } => write_and_show(args, &req, &text, attempts),
        DraftResult::Rejected(why) => Err(Error::DraftRejected {
            why,
            evidence: req.out_dir,
        }),
        DraftResult::Failed(why) => Err(Error::DraftFailed(why)),
    }
}

/// Write the drafted plan with its review header, then validate it like `validate`.
fn write_and_show(args: &DraftArgs, req: &DraftRequest, text: &str, attempts: u32) -> Outcome {
    let body = format!(
        "# Drafted by agent `{}` for: {}\n# Review it before running it: plangate never runs a drafted plan.\n{text}\n",
        args.agent,
        args.objective.lines().next().unwrap_or("")
    );
    std::fs::write(&args.out, body).map_err(|source| Error::WriteDraft {
        path: args.out.clone(),
        source,
    })?;
    crate::output::line(format_args!(
        "plangate: drafted {} in {attempts} attempt(s); evidence in {}",
        args.out.display(),
        req.out_dir.display()
    ));
    let p = PlanSettings::resolve(&args.out, &args.decision, RunFlags::default())
        .map_err(Error::Invalid)?;
    let decisions = crate::engine::decide_all(
        &p.plan,
        &p.env,
        &p.policy,
        &p.approvals,
        &p.inputs,
        &vec![true; p.plan.steps.len()],
    );
    crate::output::stdout(&validate::text(&p, &decisions)).map_err(Error::Stdout)?;
    Ok(RunStatus::Success)
}
