//! Tools: what a step does. Each tool's parameters as written and its checked
//! action are one file in [`params`] (the data layer, with the [`Action`]
//! enum); each tool is one folder holding the rest: `spec.rs` (pure: the
//! [`spec::ToolSpec`] and [`spec::ActionSpec`] traits, every per-tool fact a
//! required method) and `mod.rs` (running a step). [`registry`] holds the
//! tables from `ToolName` and `Action`; [`execute`] below is the only other
//! per-tool table. The engine calls [`classify`] and [`execute`].
//!
//! The rest, one concept a file: [`step`] (the checked step), `classify`
//! (its risk), `environment` (its variables and secrets), `context` (what a
//! running step is handed), `shared` (the run's budget and stop reason),
//! `blocking` (in-process tools on the blocking pool), `paths` (workspace
//! paths at run time), `expected` (`expected_output`), [`judge`]
//! (permission rules on real paths), [`outputs`], `sweep` (secrets in
//! artifacts), [`sandboxed`], [`git_store`] (object stores a step may not read).
//!
//! Adding a tool: a variant in `ToolName` and `params::Action`, its
//! `params/<tool>.rs`, its arms in `registry.rs`, the folder `tools/<tool>/`
//! (`impl ToolSpec`, `impl ActionSpec`), and its arm in [`execute`]. The
//! compiler names every table a new variant is missing from and every fact
//! its action must state.

pub(crate) mod agent;
pub(crate) mod archive;
pub(crate) mod bash;
mod blocking;
mod classify;
mod context;
mod environment;
mod expected;
pub(crate) mod find;
pub(crate) mod git;
pub(crate) mod git_store;
pub(crate) mod http;
pub(crate) mod judge;
pub(crate) mod outputs;
pub(crate) mod params;
mod paths;
pub(crate) mod registry;
pub(crate) mod sandboxed;
mod secret_hosts;
pub(crate) mod secrets_scan;
mod shared;
pub(crate) mod spec;
pub(crate) mod step;
mod sweep;
pub(crate) mod system_info;
pub(crate) mod temp;
mod withhold;

pub(crate) use blocking::{Stop, ToolReturn, in_place, internal_failure, write_result};
pub(crate) use classify::classify;
pub(crate) use context::{Beat, Pulse, RetryNotice, RetryNotices, StepContext};
pub(crate) use environment::missing_secrets;
pub(crate) use expected::expected_output_matches;
pub(crate) use params::Action;
pub(crate) use paths::{WorkspacePathError, working_dir, workspace_file};
pub(crate) use shared::RunShared;
pub(crate) use spec::ToolEnv;
pub(crate) use sweep::{
    UNSCANNABLE, is_unscannable, stop_sweeps, sweep, sweep_output_folder, take_renamed, unscannable,
};

use std::time::SystemTime;

use crate::model::{StepOutcome, StepStatus};
use blocking::blocking_tool;
use step::Step;

/// Run a step; the report gets the names of the variables its processes received.
pub(crate) async fn execute(step: &Step, ctx: &StepContext, started: SystemTime) -> StepOutcome {
    let mut outcome = execute_tool(step, ctx, started).await;
    outcome.environment = environment::environment_record(step, ctx);
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
