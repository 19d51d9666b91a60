//! The `git` tool (design 002, 2.3): status, diff, log, add, commit, push,
//! pull, branch, checkout, stash and reset, run as `git` child processes
//! (argv only, never a shell) through the engine's process runner, so the
//! step's timeout and the run's interruption stop them like any step.
//!
//! Files: [`args`] (the argv and what the run needs to know about the
//! parameters), [`problems`] (plan errors), `step` (one run from start to
//! end), `runner` (calling git), `env` and `config` (what git may run),
//! `repo` and `remote` (where it works and pushes), `own` (plangate's output
//! folder is never staged), [`status`], `text`.
//!
//! Git runs nothing but itself:
//! - hooks (`core.hooksPath=/dev/null`), pagers, editors (`true`), credential
//!   helpers and prompts (`GIT_TERMINAL_PROMPT=0`, empty askpass, `ssh -o
//!   BatchMode=yes`), fsmonitor, gpg, auto-gc daemons, submodule recursion and
//!   transports other than file/http/https/ssh (`GIT_ALLOW_PROTOCOL`) are
//!   switched off for every call, through command-scope configuration
//!   (`GIT_CONFIG_COUNT`), which beats any configuration file;
//! - diffs are shown with `--no-ext-diff --no-textconv`;
//! - filter drivers (`filter.<name>.clean/smudge/process`) and merge drivers
//!   found in the configuration are emptied: a `required` filter (git-lfs)
//!   makes git fail, an optional one is skipped (with a warning); a merge
//!   driver becomes a conflict;
//! - a push or pull refuses remotes whose configuration names a program
//!   (`remote.<name>.uploadpack/receivepack/vcs`, `core.alternateRefsCommand`);
//! - a push to a repository on this machine (a path or `file://`) runs that
//!   repository's `receive-pack` with its hooks off too;
//! - `GIT_*` variables of plangate's environment do not reach git (except the
//!   author/committer identity and `GIT_CONFIG_GLOBAL`), and a step `env`
//!   setting another one is refused.
//!
//! The repository must be a work tree whose top level and git directories
//! resolve inside the workspace. Risk rules are in [`crate::policy::git`],
//! shared with the bash classifier.

pub(crate) mod args;
mod config;
mod env;
pub(crate) mod error;
mod judged;
mod own;
pub(crate) mod problems;
mod remote;
mod repo;
mod runner;
pub(crate) mod spec;
pub(crate) mod status;
mod step;
mod text;

pub(crate) use judged::HISTORY_NAMES;

use std::time::SystemTime;

use serde_json::{Value, json};

use super::StepContext;
use crate::model::Risk;
use crate::model::{StepOutcome, StepStatus};
use crate::policy::StepClassification;
use crate::tools::params::git::GitAction;
use crate::tools::step::Step;
use error::{GitError, Halt};

/// Most characters of stdout (and stderr) kept in `result.json` (the files keep more).
const RESULT_TEXT_CHARS: usize = 64 * 1024;
/// Most paths listed in `changed_files`.
const MAX_CHANGED_FILES: usize = 10_000;

/// Classify a git step (the rules are in [`crate::policy::git`]).
pub(crate) fn classify(a: &GitAction) -> StepClassification {
    let v = args::classify(&a.params);
    StepClassification {
        floor: Risk::Safe,
        classified: v.risk,
        blocked: v.blocked,
        unclassifiable: v.unclassifiable,
        reason: v.reason,
    }
}

/// What the run found out, kept for `result.json` whatever happens.
#[derive(Default)]
struct Findings {
    command: Vec<String>,
    exit_code: Option<i32>,
    output: String,
    output_truncated: bool,
    stderr: String,
    status: Option<status::RepoStatus>,
    changed: Vec<String>,
    warnings: Vec<String>,
    commit: Option<Value>,
    head_before: Option<String>,
    head_after: Option<String>,
    artifacts: Vec<String>,
    truncated: bool,
    output_bytes: u64,
}

/// Run a git step.
pub(crate) async fn run(
    a: &GitAction,
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
) -> StepOutcome {
    let mut f = Findings::default();
    let res = match std::fs::create_dir_all(&ctx.artifacts_dir) {
        Ok(()) => step::go(a, step, ctx, &mut f).await,
        Err(source) => Err(Halt::Failed(GitError::ArtifactsDir {
            rel: ctx.artifacts_rel.clone(),
            source,
        })),
    };
    let mut outcome = StepOutcome::new(started);
    let (status, error) = match res {
        Ok(None) => (StepStatus::Success, None),
        Ok(Some(e)) => (StepStatus::Failed, Some(e)),
        Err(Halt::Failed(e)) => (StepStatus::Failed, Some(e.to_string())),
        Err(Halt::TimedOut) => (
            StepStatus::TimedOut,
            Some(format!(
                "timed out after {}; git was killed",
                humantime::format_duration(step.timeout)
            )),
        ),
        Err(Halt::Stopped) => (
            StepStatus::Failed,
            Some(format!("{}; git was stopped", ctx.shared.stop_reason())),
        ),
    };
    let mut warnings = std::mem::take(&mut f.warnings);
    warnings.dedup();
    let changed_total = f.changed.len();
    f.changed.truncate(MAX_CHANGED_FILES);
    let mut result = json!({
        "success": status == StepStatus::Success,
        "operation": a.params.operation.as_str(),
        "repository": if a.repo.as_os_str().is_empty() { ".".to_owned() } else { a.repo.display().to_string() },
        "command": f.command,
        "exit_code": f.exit_code,
        "dry_run": args::is_dry_run(&a.params),
        "output": f.output,
        "output_truncated": f.output_truncated,
        "stderr": f.stderr,
        "error": error,
        "status": f.status,
        "changed_files": f.changed,
        "changed_files_count": changed_total,
        "changed_files_truncated": changed_total > MAX_CHANGED_FILES,
        "warnings": warnings,
        "head_before": f.head_before,
        "head_after": f.head_after,
    });
    if let (Some(c), Some(obj)) = (f.commit.take(), result.as_object_mut()) {
        obj.insert("commit".to_owned(), c);
    }
    outcome.status = status;
    outcome.error = error;
    outcome.exit_code = f.exit_code;
    outcome.artifacts = std::mem::take(&mut f.artifacts);
    outcome.truncated = f.truncated;
    outcome.output_bytes = f.output_bytes;
    match super::write_result(ctx, &result) {
        Ok(rel) => outcome.artifacts.push(rel),
        Err(e) => {
            outcome.status = StepStatus::Failed;
            outcome.error = Some(e);
        }
    }
    outcome.started_at = started;
    outcome.duration = started.elapsed().unwrap_or_default();
    outcome
}
