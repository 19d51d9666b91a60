//! One git step from start to end: check the repository and the files,
//! build the environment, read the configuration, note the state before,
//! run the operation, and compare the state after.

use std::collections::BTreeSet;
use std::time::Instant;

use serde_json::json;

use super::error::{GitError, Halt};
use super::runner::Git;
use super::text::{cut, failure_message, hide_userinfo, read_prefix};
use super::{Findings, RESULT_TEXT_CHARS, args, config, env, judged, own, remote, repo, status};
use crate::process::{Capture, Termination};
use crate::tools::StepContext;
use crate::tools::params::git::GitAction;
use crate::tools::params::git::GitOperation;
use crate::tools::step::Step;

/// The step's work; `Ok(Some(error))` is a failure that still has a full result.
pub(super) async fn go(
    a: &GitAction,
    step: &Step,
    ctx: &StepContext,
    f: &mut Findings,
) -> Result<Option<String>, Halt> {
    let p = &a.params;
    let ws = &ctx.env.workspace;
    let mut git = prepare(a, step, ctx)?;
    let argv = args::argv(p);
    f.command = ["git", "--no-pager"]
        .into_iter()
        .map(str::to_owned)
        .chain(argv.iter().cloned())
        // What the result shows: no credentials of a URL written in `args`.
        .map(|c| hide_userinfo(&c))
        .collect();
    let mut run_argv = argv;
    repo::check_work_tree(&git, ws, &a.repo).await?;
    if let Some(j) = ctx.judge.as_deref() {
        match judged::judge(&git, a, j).await? {
            judged::Judged::Clear => {}
            judged::Judged::Refused(why) => return Err(GitError::Denied(why).into()),
            judged::Judged::Exclude(pathspecs) => {
                f.warnings.push(format!(
                    "{} path(s) left out: the permission rules deny them",
                    pathspecs.len()
                ));
                exclude(&mut run_argv, f, pathspecs);
            }
        }
    }
    if let own::Own::Exclude(pathspec) = own::guard(&git, a, ctx).await? {
        exclude(&mut run_argv, f, vec![pathspec]);
    }

    // What was withheld from the steps: includes always, credentials for a
    // push or pull (before the dump, so that what they name is neutralised too).
    let (network, trailers) = config::uses(p);
    git.config.extend(ctx.env.git_supply.config(network));
    // Drivers and remote programs named by the configuration.
    let dump = config::dump(&git).await?;
    let overrides = config::neutralise(&dump.stdout, network, trailers, &mut f.warnings)?;
    git.config.extend(overrides);

    let read_only = args::is_read_only(p) || args::is_dry_run(p);
    let before = if read_only {
        None
    } else {
        Some(git.status().await?)
    };
    f.head_before = before.as_ref().and_then(|b| b.status.head.clone());
    if p.operation == GitOperation::Push {
        if let Some(e) = remote::default_branch_check(&git, a, step).await? {
            return Ok(Some(e));
        }
        let branch = before.as_ref().and_then(|b| b.status.branch.as_deref());
        if let Some(flag) = remote::local_receive_pack(&git, a, &dump.stdout, branch).await? {
            f.command.insert(3, flag.clone());
            run_argv.insert(1, flag);
        }
    }
    let ran = operation(&git, step, &run_argv, read_only, f).await?;
    after(&git, a, step, before.as_ref(), ran, f).await
}

/// Append exclusion pathspecs to the argv run and to the command shown (after a `--`).
fn exclude(run_argv: &mut Vec<String>, f: &mut Findings, pathspecs: Vec<String>) {
    if !run_argv.iter().any(|a| a == "--") {
        run_argv.push("--".to_owned());
        f.command.push("--".to_owned());
    }
    f.command.extend(pathspecs.iter().cloned());
    run_argv.extend(pathspecs);
}

/// Checks the repository and `files`, and builds the environment of every call.
fn prepare<'a>(a: &GitAction, step: &Step, ctx: &'a StepContext) -> Result<Git<'a>, GitError> {
    let ws = &ctx.env.workspace;
    let cwd = repo::repo_dir(ws, &a.repo)?;
    for file in &a.params.files {
        repo::check_file(ws, &cwd, file)?;
        // The rules judged the path as written; here where it resolves too.
        ctx.may(&cwd.join(file), super::spec::level(a.params.operation))
            .map_err(GitError::Denied)?;
    }
    let mut step_env = env::step_env(ctx, step)?;
    step_env.extend(env::fixed_env(ws.parent().unwrap_or(ws)));
    Ok(Git {
        ctx,
        cwd,
        deadline: Instant::now() + step.timeout,
        env: step_env,
        config: env::CONFIG
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        unset: env::inherited_git_vars(),
    })
}

/// What the operation itself printed.
pub(super) struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the operation, its output captured to the step's artifacts.
async fn operation(
    git: &Git<'_>,
    step: &Step,
    run_argv: &[String],
    read_only: bool,
    f: &mut Findings,
) -> Result<Ran, Halt> {
    let ctx = git.ctx;
    let out_rel = format!("{}/stdout.txt", ctx.artifacts_rel);
    let err_rel = format!("{}/stderr.txt", ctx.artifacts_rel);
    let capture = |rel: &str| Capture::File {
        path: ctx.out_dir.join(rel),
        cap: ctx.max_output_bytes,
    };
    let spec = git.spec(run_argv, capture(&out_rel), capture(&err_rel), read_only);
    f.artifacts = vec![out_rel.clone(), err_rel.clone()];
    let out = git.spawn(spec).await?;
    f.truncated = out.stdout.truncated || out.stderr.truncated;
    f.output_bytes = out.stdout.bytes + out.stderr.bytes;
    // The whole stdout only when expected_output must see it; else what result.json keeps.
    let keep = (RESULT_TEXT_CHARS * 4) as u64;
    let limit = if step.expected_output.is_some() {
        u64::MAX
    } else {
        keep
    };
    let stdout_bytes = read_prefix(&ctx.out_dir.join(&out_rel), limit);
    let stdout = String::from_utf8_lossy(&stdout_bytes).into_owned();
    let stderr_bytes = read_prefix(&ctx.out_dir.join(&err_rel), keep);
    let stderr = String::from_utf8_lossy(&stderr_bytes).into_owned();
    f.output_truncated = out.stdout.truncated
        || out.stdout.kept > stdout_bytes.len() as u64
        || stdout.chars().count() > RESULT_TEXT_CHARS;
    // Redacted before they are cut: a cut secret is no longer recognised.
    f.output = crate::redact::clean_str(&stdout)
        .chars()
        .take(RESULT_TEXT_CHARS)
        .collect();
    f.stderr = crate::redact::clean_str(&stderr)
        .chars()
        .take(RESULT_TEXT_CHARS)
        .collect();
    let code = match out.termination {
        Termination::Exited(c) => c,
        Termination::Signaled(s) => return Err(GitError::Signaled(s).into()),
        _ => -1,
    };
    f.exit_code = Some(code);
    f.warnings.extend(
        stderr
            .lines()
            .filter_map(|l| l.strip_prefix("warning: "))
            .take(10)
            .map(|w| cut(w, 300)),
    );
    Ok(Ran {
        code,
        stdout,
        stderr,
    })
}

/// The state after, what changed, and whether the step failed.
async fn after(
    git: &Git<'_>,
    a: &GitAction,
    step: &Step,
    before: Option<&status::Reading>,
    ran: Ran,
    f: &mut Findings,
) -> Result<Option<String>, Halt> {
    let op = a.params.operation;
    let after = git.status().await?;
    f.head_after = after.status.head.clone();
    if after.status.detached {
        f.warnings.push(format!(
            "HEAD is detached at {}",
            after
                .status
                .head
                .as_deref()
                .map_or("(none)", |h| &h[..h.len().min(12)])
        ));
    }
    let mut failure = (ran.code != 0)
        .then(|| failure_message(a, ran.code, &ran.stdout, &ran.stderr, &mut f.warnings));
    if failure.is_none()
        && op == GitOperation::Stash
        && ran.stdout.contains("No local changes to save")
    {
        f.warnings.push("no local changes to stash".to_owned());
    }
    if let Some(before) = before {
        changed(git, op, before, &after, failure.is_none(), f).await?;
    }
    f.status = Some(after.status);
    if failure.is_none()
        && let Some(re) = step.expected_output.as_ref()
        && !crate::tools::expected_output_matches(re, &ran.stdout)
    {
        failure = Some(format!(
            "stdout does not match expected_output `{}`",
            re.as_str()
        ));
    }
    Ok(failure)
}

/// The paths that changed between the two readings (and the commit made, if any).
async fn changed(
    git: &Git<'_>,
    op: GitOperation,
    before: &status::Reading,
    after: &status::Reading,
    succeeded: bool,
    f: &mut Findings,
) -> Result<(), Halt> {
    let mut changed: BTreeSet<String> = status::changed_paths(before, after).into_iter().collect();
    let (h0, h1) = (before.status.head.as_deref(), after.status.head.as_deref());
    if h0 != h1
        && let Some(h1) = h1
    {
        let names = match h0 {
            Some(h0) => {
                git.names(&[
                    "diff",
                    "--name-only",
                    "-z",
                    "--no-renames",
                    "--no-ext-diff",
                    "--no-textconv",
                    h0,
                    h1,
                ])
                .await?
            }
            None => {
                git.names(&["ls-tree", "-r", "--name-only", "-z", h1])
                    .await?
            }
        };
        changed.extend(names);
    }
    f.changed = changed.into_iter().collect();
    if op == GitOperation::Commit && succeeded && h0 != h1 {
        let files = git
            .names(&[
                "diff-tree",
                "-r",
                "--root",
                "--no-commit-id",
                "--name-only",
                "-z",
                "--no-renames",
                "HEAD",
            ])
            .await?;
        f.changed.clone_from(&files);
        f.commit = Some(json!({"sha": h1, "files": files}));
    }
    Ok(())
}
