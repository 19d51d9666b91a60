//! The `bash` tool: classify a command with the parser-based classifier, run
//! it as `bash --noprofile --norc -eo pipefail -c COMMAND` in its own process
//! group with stdin closed, output streamed to capped artifact files.
//!
//! The command text comes from the plan only; nothing an agent says is ever
//! spliced into it (agent results reach steps through files and variables).

mod retry;
pub(crate) mod spec;

use std::path::Path;
use std::time::SystemTime;

use crate::model::{StepOutcome, StepStatus};
use crate::process::{Capture, ProcessSpec, Termination};
use crate::tools::params::bash::BashAction;
use crate::tools::step::Step;

use super::StepContext;

/// What running a process produced (bash steps and rollbacks).
#[derive(Debug, Clone)]
pub(crate) struct ToolResult {
    /// How the process ended.
    pub process: crate::process::ProcessOutcome,
    /// Files written, relative to the output directory.
    pub artifacts: Vec<String>,
    /// Absolute path of the captured stdout, if kept.
    pub stdout_path: Option<std::path::PathBuf>,
    /// Why the step fails for changing git's code-running files (they were put back).
    pub undone: Option<String>,
    /// How many processes it left running (killed by its supervisor); None: not known.
    pub lingering: Option<usize>,
    /// What it is warned of (a git object store hidden from its sandbox).
    pub notes: Vec<String>,
}

/// The shell and its flags (GitHub Actions' `bash` shell, minus the script file).
pub(crate) const SHELL: &str = "bash";
/// Flags before `-c`.
pub(crate) const SHELL_FLAGS: [&str; 4] = ["--noprofile", "--norc", "-eo", "pipefail"];

/// Run a bash step (again after a failed attempt, with `retry:`).
pub(crate) async fn run(
    b: &BashAction,
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
) -> StepOutcome {
    match &step.retry {
        Some(r) => retry::run(b, step, ctx, started, r).await,
        None => attempt(b, step, ctx, started).await.0,
    }
}

/// Run the command once, with an empty `$PLANGATE_OUTPUT`. Also says whether
/// a failure may be retried: not when the run is stopping, the output could
/// not be saved, the step changed git's code-running files (a refusal) or
/// plangate itself could not run it.
async fn attempt(
    b: &BashAction,
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
) -> (StepOutcome, bool) {
    let output_file = ctx.artifacts_dir.join(super::outputs::FILE_NAME);
    let prepared = std::fs::create_dir_all(&ctx.artifacts_dir)
        .and_then(|()| std::fs::write(&output_file, b""));
    let result = match (
        prepared,
        super::working_dir(&ctx.env.workspace, b.working_directory.as_deref()),
    ) {
        (Err(e), _) => Err(e),
        (Ok(()), Ok(cwd)) => run_command(&b.command, &cwd, step, ctx, "", b.capture_output).await,
        (Ok(()), Err(e)) => Err(std::io::Error::other(e)),
    };
    let retryable = result.as_ref().is_ok_and(|r| {
        let p = &r.process;
        r.undone.is_none()
            && p.stdout.write_error.is_none()
            && p.stderr.write_error.is_none()
            && !matches!(p.termination, Termination::Cancelled)
    });
    let mut out = outcome(step, result, started, step.expected_output.as_ref(), ctx);
    read_outputs(&mut out, &output_file, ctx);
    (out, retryable)
}

/// The step's `$PLANGATE_OUTPUT` file: its outputs, or (malformed, too
/// large) the reason a step that succeeded fails. A file with content is
/// kept as an artifact.
fn read_outputs(out: &mut StepOutcome, file: &Path, ctx: &StepContext) {
    if let Some(what) = crate::regular::replaced(file) {
        // Looked at without opening it (a FIFO never blocks), before the sweep removes it.
        let why = format!(
            "$PLANGATE_OUTPUT (`{}/{}`) was replaced by {what} (not a regular file): plangate reads only the regular file it made there, so the step has no outputs",
            ctx.artifacts_rel,
            super::outputs::FILE_NAME
        );
        out.outputs.clear();
        if out.status == StepStatus::Success {
            out.status = StepStatus::Failed;
            out.error = Some(why);
        } else {
            out.warnings.push(why);
        }
        return;
    }
    if std::fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_file() && m.len() == 0) {
        // Left empty (most steps): no outputs, nothing to open.
        out.outputs.clear();
        return;
    }
    if std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file() && m.len() > 0) {
        out.artifacts.push(format!(
            "{}/{}",
            ctx.artifacts_rel,
            super::outputs::FILE_NAME
        ));
    }
    match super::outputs::read(file) {
        Ok(values) => out.outputs = values,
        Err(e) if out.status == StepStatus::Success => {
            out.status = StepStatus::Failed;
            out.error = Some(e.to_string());
        }
        Err(_) => {}
    }
}

/// Run a bash command for a step (the command itself, or its rollback with `prefix` "rollback.").
pub(crate) async fn run_command(
    command: &str,
    cwd: &Path,
    step: &Step,
    ctx: &StepContext,
    prefix: &str,
    capture: bool,
) -> std::io::Result<ToolResult> {
    std::fs::create_dir_all(&ctx.artifacts_dir)?;
    let (stdout, stderr, artifacts) = if capture {
        let out = ctx.artifacts_dir.join(format!("{prefix}stdout.txt"));
        let err = ctx.artifacts_dir.join(format!("{prefix}stderr.txt"));
        (
            Capture::File {
                path: out.clone(),
                cap: ctx.max_output_bytes,
            },
            Capture::File {
                path: err,
                cap: ctx.max_output_bytes,
            },
            vec![
                format!("{}/{prefix}stdout.txt", ctx.artifacts_rel),
                format!("{}/{prefix}stderr.txt", ctx.artifacts_rel),
            ],
        )
    } else {
        (Capture::Discard, Capture::Discard, Vec::new())
    };
    let stdout_path = match &stdout {
        Capture::File { path, .. } => Some(path.clone()),
        Capture::Discard => None,
    };
    let mut args: Vec<String> = SHELL_FLAGS.iter().map(|s| (*s).to_owned()).collect();
    args.push("-c".to_owned());
    args.push(command.to_owned());
    let spec = ProcessSpec {
        program: SHELL.to_owned(),
        args,
        cwd: cwd.to_path_buf(),
        env: ctx.child_env(step),
        stdout,
        stderr,
        timeout: step.timeout,
        kill_grace: ctx.kill_grace,
        stdin: None,
        idle_timeout: None,
        lane: None,
    };
    let guarded = super::sandboxed::run(spec, ctx, step.limits()).await?;
    let undone = guarded.undone_error();
    let lingering = guarded.lingering;
    let notes = guarded.notes;
    let process = guarded.process;
    Ok(ToolResult {
        process,
        artifacts,
        stdout_path,
        undone,
        lingering,
        notes,
    })
}

/// Turn a finished bash process into the step's outcome (exit code, timeout, expected_output).
pub(crate) fn outcome(
    step: &Step,
    result: std::io::Result<ToolResult>,
    started: SystemTime,
    expected: Option<&regex::Regex>,
    ctx: &StepContext,
) -> StepOutcome {
    let res = match result {
        Ok(r) => r,
        Err(e) => {
            return super::internal_failure(started, format!("could not run the step: {e}"));
        }
    };
    let p = &res.process;
    let (mut status, exit_code, signal, mut error) = match p.termination {
        Termination::Exited(0) => (StepStatus::Success, Some(0), None, None),
        Termination::Exited(c) => (
            StepStatus::Failed,
            Some(c),
            None,
            Some(format!("exited with code {c}")),
        ),
        Termination::Signaled(s) => (
            StepStatus::Failed,
            None,
            Some(s),
            Some(format!("killed by signal {s}")),
        ),
        Termination::TimedOut => (
            StepStatus::TimedOut,
            None,
            None,
            Some(format!(
                "timed out after {}; its process group was killed",
                humantime::format_duration(step.timeout)
            )),
        ),
        Termination::IdleTimedOut => (
            StepStatus::TimedOut,
            None,
            None,
            Some("printed nothing for too long; its process group was killed".to_owned()),
        ),
        Termination::Cancelled => (
            StepStatus::Failed,
            None,
            None,
            Some(format!(
                "{}; its process group was stopped",
                ctx.shared.stop_reason()
            )),
        ),
    };
    // Output that could not be kept cannot be checked or scanned: the step
    // does not pass as if nothing happened.
    if let Some(kind) = p.stdout.write_error.or(p.stderr.write_error)
        && status == StepStatus::Success
    {
        status = StepStatus::Failed;
        error = Some(format!(
            "the step's output could not be saved ({kind}); {} of {} bytes kept",
            p.stdout.kept + p.stderr.kept,
            p.stdout.bytes + p.stderr.bytes
        ));
    }
    // Its supervisor reports what it left running (and killed); without that
    // report (the supervisor itself was killed) nothing says all is gone.
    let stopped = matches!(
        p.termination,
        Termination::TimedOut | Termination::IdleTimedOut | Termination::Cancelled
    );
    if res.lingering.is_none() && !stopped && status == StepStatus::Success {
        status = StepStatus::Failed;
        error = Some(
            "its sandbox supervisor ended before it could check that nothing the step started is still running".to_owned(),
        );
    }
    // Files that make git run code, changed by a step below dangerous, were put back.
    if let Some(why) = &res.undone {
        status = StepStatus::Failed;
        error = Some(why.clone());
    }
    if status == StepStatus::Success
        && let Some(re) = expected
    {
        match res.stdout_path.as_ref().map(std::fs::read) {
            Some(Ok(bytes)) => {
                let text = String::from_utf8_lossy(&bytes);
                if !crate::tools::expected_output_matches(re, &text) {
                    status = StepStatus::Failed;
                    error = Some(format!(
                        "stdout does not match expected_output `{}`",
                        re.as_str()
                    ));
                }
            }
            Some(Err(e)) => {
                status = StepStatus::Failed;
                error = Some(format!("cannot read stdout to check expected_output: {e}"));
            }
            None => {
                status = StepStatus::Failed;
                error = Some("expected_output is set but the output was not captured".to_owned());
            }
        }
    }
    StepOutcome {
        status,
        exit_code,
        signal,
        started_at: started,
        duration: p.duration,
        attempts: 1,
        artifacts: res.artifacts,
        truncated: p.stdout.truncated || p.stderr.truncated,
        output_bytes: p.stdout.bytes + p.stderr.bytes,
        error,
        lingering_processes: res.lingering.filter(|n| *n > 0),
        warnings: res.notes,
        ..StepOutcome::new(started)
    }
}
