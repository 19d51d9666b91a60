//! The `command` provider: a local agent CLI (argv, no shell), the prompt on
//! its stdin, the answer on its stdout: as printed (`output_format: text`) or
//! read from the CLI's JSON or JSON Lines (`cli::conclude`).

use super::{Answer, Call, CallError, CallFuture, Extra, Provider, Spent, cli};
use crate::format::agent::CliOutputFormat;
use crate::model::{Risk, Usage};
use crate::process::{Capture, ProcessSpec, Termination};
use crate::tools::params::agent::AgentAction;

/// The `command` provider.
pub(super) struct Command;

impl Provider for Command {
    fn required_keys(&self) -> &'static [&'static str] {
        // `command` or `preset`: checked in `agents.rs`.
        &[]
    }

    fn keys(&self) -> &'static [&'static str] {
        &[
            "command",
            "preset",
            "args",
            "output_format",
            "idle_timeout",
            "api_key_env",
            "secrets",
            "network",
            "egress",
            "api",
        ]
    }

    fn risk_floor(&self, a: &AgentAction) -> (Risk, String) {
        (
            Risk::Moderate,
            format!(
                "runs the agent CLI `{}`{}, which can act on its own{}",
                cli::shown_argv(a.agent.command.as_deref().unwrap_or_default()),
                cli::shown_format(&a.agent),
                if a.read_only {
                    " (read-only: its edits are never applied, but it still runs with its network and secrets)"
                } else {
                    ""
                }
            ),
        )
    }

    fn call<'a>(&'a self, call: Call<'a>) -> CallFuture<'a> {
        Box::pin(call_command(call))
    }
}

async fn call_command(c: Call<'_>) -> Result<Answer, CallError> {
    let Call {
        action: a,
        step,
        ctx,
        prompt,
        attempt,
        timeout,
        max_out,
        ..
    } = c;
    let (program, args) = preset_argv(a, ctx)?;
    let raw = cli::stdout_file(&ctx.artifacts_dir, attempt);
    let err_rel = format!("{}/attempt-{attempt}.stderr.txt", ctx.artifacts_rel);
    let mut env = ctx.child_env(step);
    let api = api_serve(a, ctx, &mut env, c.spent)?;
    preset_env(a, &mut env, api.is_some());
    let spec = ProcessSpec {
        program,
        args,
        cwd: ctx.env.workspace.clone(),
        env,
        stdout: Capture::File {
            path: raw.clone(),
            cap: cli::stdout_cap(a.agent.output_format, max_out, ctx.max_output_bytes),
        },
        stderr: Capture::File {
            path: ctx.out_dir.join(&err_rel),
            cap: ctx.max_output_bytes,
        },
        timeout,
        kill_grace: ctx.kill_grace,
        stdin: Some(prompt.as_bytes().to_vec()),
        idle_timeout: a.agent.idle_timeout.map(|t| t.0),
        lane: None,
    };
    let last_message = cli::last_message_file(a.agent.output_format, &spec.args, &spec.cwd);
    // In the staged copy, a copy of the -o file from the workspace would read as
    // the answer were the CLI to write none: it goes before the CLI starts (the
    // file is the CLI's output, never one of its edits: see `output_files`).
    if c.home.is_some()
        && let Some(rel) = last_message.as_ref().and_then(|f| f.inside.as_deref())
    {
        // An overlay stage: the workspace's file is hidden by a whiteout.
        if let Some(o) = &ctx.overlay {
            if let Some(low) = cli::plain_inside(&o.lower, rel)
                && std::fs::symlink_metadata(&low).is_ok_and(|m| !m.is_dir())
            {
                let mut made = Vec::new();
                let planted =
                    crate::sandbox::overlay::plant_whiteout(&o.upper, &o.lower, rel, &mut made);
                for (d, mode) in made.into_iter().rev() {
                    use std::os::unix::fs::PermissionsExt as _;
                    let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode));
                }
                planted.map_err(|e| {
                    CallError::Failed(format!(
                        "cannot clear the -o file `{rel}` of agent `{}` in its staged overlay: {e}",
                        a.agent_name
                    ))
                })?;
            }
        }
        // Never through a symlinked folder (it could lead outside the copy).
        else if let Some(staged) = cli::plain_inside(&ctx.env.workspace, rel)
            && std::fs::symlink_metadata(&staged).is_ok_and(|m| !m.is_dir())
        {
            std::fs::remove_file(&staged).map_err(|e| {
                CallError::Failed(format!(
                    "cannot clear the -o file `{rel}` of agent `{}` in its staged copy: {e}",
                    a.agent_name
                ))
            })?;
        }
    }
    let started = match c.home {
        Some(home) => crate::tools::sandboxed::run_with_home(spec, ctx, home, api.as_ref()).await,
        None if api.is_some() => Err(std::io::Error::other(
            "its model API endpoint needs the CLI's private home; it was not run",
        )),
        None => crate::tools::sandboxed::run(spec, ctx, None).await,
    };
    let guarded = started
        .map_err(|e| CallError::Failed(format!("cannot start agent `{}`: {e}", a.agent_name)))?;
    let bytes = crate::regular::read(&raw).unwrap_or_default();
    let _ = std::fs::remove_file(&raw);
    if let Some(why) = guarded.undone_error() {
        return Err(CallError::Failed(format!("agent `{}` {why}", a.agent_name)));
    }
    let stopped = matches!(
        guarded.process.termination,
        Termination::TimedOut | Termination::IdleTimedOut | Termination::Cancelled
    );
    let Some(lingering) = guarded.lingering.or(stopped.then_some(0)) else {
        // Without its supervisor's report nothing says all it started is gone.
        return Err(CallError::Failed(format!(
            "agent `{}`: its sandbox supervisor ended before it could check that nothing the CLI started is still running",
            a.agent_name
        )));
    };
    let outcome = guarded.process;
    let answer = conclude_answer(
        a,
        outcome,
        bytes,
        &err_rel,
        timeout,
        max_out,
        last_message,
        attempt,
        ctx,
    );
    let answer = answer.map(|mut ans| {
        ans.extra.lingering = lingering;
        ans
    });
    match &api {
        Some(api) => measured(answer, &api.meter),
        None => answer,
    }
}

/// With plangate's model API endpoint, the usage is what it measured (the
/// CLI's own token figure, when it differs, becomes a warning; its own cost
/// figure, when it differs, `reported_by_cli_usd` beside it); a call it
/// refused fails the attempt.
fn measured(
    answer: Result<Answer, CallError>,
    meter: &crate::egress::meter::Meter,
) -> Result<Answer, CallError> {
    let measured_usage = meter.usage();
    // The CLI's own cost figure goes beside the measured one when they differ.
    let beside = |reported: Option<Usage>| {
        let mut u = measured_usage;
        u.reported_by_cli_usd = reported
            .map(|r| r.cost_usd)
            .filter(|c| *c > 0.0 && (c - u.cost_usd).abs() >= 0.000_05);
        u
    };
    let used = measured_usage;
    let note = |reported: Option<Usage>, session: &mut Option<crate::model::AgentSession>| {
        let mut notes = Vec::new();
        if let Some(r) = reported.filter(|r| r.tokens() != used.tokens()) {
            notes.push(format!(
                "the CLI reported {} tokens; plangate measured {} at its model API endpoint",
                r.tokens(),
                used.tokens()
            ));
        }
        if meter.unmeasured() > 0 {
            notes.push(format!(
                "{} model call(s) reported no usage plangate could read",
                meter.unmeasured()
            ));
        }
        if let Some(s) = session.as_mut() {
            s.warnings.extend(notes);
        }
    };
    match answer {
        Ok(mut ans) => {
            note(ans.usage, &mut ans.extra.session);
            let used = beside(ans.usage);
            ans.usage = Some(used);
            match meter.refused() {
                Some(why) => Err(CallError::Failed(format!(
                    "plangate refused a model call: {why}"
                ))
                .after(Spent {
                    usage: Some(used),
                    extra: ans.extra,
                })),
                None => Ok(ans),
            }
        }
        Err(e) => {
            let (e, mut spent) = e.split();
            note(spent.usage, &mut spent.extra.session);
            spent.usage = Some(beside(spent.usage));
            let e = match meter.refused() {
                Some(why) => CallError::Failed(format!("plangate refused a model call: {why}")),
                None => e,
            };
            Err(e.after(spent))
        }
    }
}

/// With `api`: take the real key out of the CLI's environment (a
/// placeholder takes its place in every variable the CLI reads it from) and
/// say what the endpoint serves.
fn api_serve(
    a: &AgentAction,
    ctx: &crate::tools::StepContext,
    env: &mut Vec<(String, String)>,
    spent: Usage,
) -> Result<Option<crate::egress::api::Serve>, CallError> {
    if a.agent.api.is_none() {
        return Ok(None);
    }
    let (Some(provider), Some(var)) = (a.api_provider(), a.api_key_env()) else {
        return Err(CallError::Failed(format!(
            "agent `{}`: `api` names no provider (set `api.provider` or a `preset`)",
            a.agent_name
        )));
    };
    let key = env
        .iter()
        .rev()
        .find(|(k, _)| *k == var)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            CallError::Failed(format!(
                "agent `{}`: `{var}` (its model API key) is not set",
                a.agent_name
            ))
        })?;
    let placeholders: Vec<&str> = provider
        .key_vars()
        .iter()
        .copied()
        .chain(std::iter::once(var.as_str()))
        .collect();
    env.retain(|(k, v)| !placeholders.contains(&k.as_str()) && *v != key);
    for p in placeholders {
        env.push((p.to_owned(), crate::egress::api::PLACEHOLDER.to_owned()));
    }
    let base_url = a
        .agent
        .api
        .as_ref()
        .and_then(|x| x.base_url.clone())
        .unwrap_or_else(|| provider.default_base_url().to_owned());
    let shared = std::sync::Arc::clone(&ctx.shared);
    let step_budget = ctx.shared.step_budget(a.budget);
    let pricing = crate::egress::meter::Pricing {
        fixed: a.agent.price.map(|p| p.rates()),
        agent: a.agent_name.clone(),
        cost_budget: shared.budget.max_cost_usd.is_some() || step_budget.max_cost_usd.is_some(),
    };
    // Before each call: the run's budget (with this CLI run's calls), then
    // the step's (its earlier attempts and this CLI run's calls).
    let meter = crate::egress::meter::Meter::new(
        pricing,
        std::sync::Arc::new(move |u: &Usage| {
            shared.exhausted_with(u).or_else(|| {
                let mut step = spent;
                step.add(u);
                step_budget.exhausted(&step)
            })
        }),
    );
    Ok(Some(crate::egress::api::Serve {
        provider,
        base_url: base_url.trim_end_matches('/').to_owned(),
        key,
        meter: std::sync::Arc::new(meter),
    }))
}

/// The answer of an ended agent CLI, from its stdout in its output format.
#[allow(clippy::too_many_arguments)]
fn conclude_answer(
    a: &AgentAction,
    outcome: crate::process::ProcessOutcome,
    bytes: Vec<u8>,
    err_rel: &str,
    timeout: std::time::Duration,
    max_out: u64,
    last_message: Option<cli::OutputFile>,
    attempt: u32,
    ctx: &crate::tools::StepContext,
) -> Result<Answer, CallError> {
    if let Some(format) = a
        .agent
        .output_format
        .filter(|f| *f != CliOutputFormat::Text)
    {
        let ended = cli::Ended {
            agent: &a.agent_name,
            format,
            termination: outcome.termination,
            stdout: bytes,
            truncated: outcome.stdout.truncated,
            attempt,
            err_rel,
            timeout,
            max_out,
            last_message,
        };
        return cli::conclude(ended, ctx);
    }
    text_answer(&a.agent_name, &outcome, bytes, err_rel, timeout, max_out)
}

/// `output_format: text`: stdout is the answer, when the CLI exited with 0.
fn text_answer(
    agent: &str,
    outcome: &crate::process::ProcessOutcome,
    bytes: Vec<u8>,
    err_rel: &str,
    timeout: std::time::Duration,
    max_out: u64,
) -> Result<Answer, CallError> {
    match outcome.termination {
        Termination::Exited(0) => {}
        Termination::Exited(c) => {
            return Err(CallError::Failed(format!(
                "agent `{agent}` exited with code {c} (stderr in {err_rel})"
            )));
        }
        Termination::Signaled(s) => {
            return Err(CallError::Failed(format!(
                "agent `{agent}` was killed by signal {s}"
            )));
        }
        Termination::TimedOut => {
            return Err(CallError::TimedOut(format!(
                "agent `{agent}` did not answer within {}",
                humantime::format_duration(timeout)
            )));
        }
        Termination::IdleTimedOut => {
            return Err(CallError::TimedOut(format!(
                "agent `{agent}` printed nothing for too long"
            )));
        }
        Termination::Cancelled => return Err(CallError::Stopped),
    }
    let cut_short = outcome
        .stdout
        .truncated
        .then(|| format!("longer than max_output_chars {max_out}"));
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) if cut_short.is_some() => String::new(),
        Err(e) => {
            return Ok(Answer {
                text: String::new(),
                usage: None,
                cut_short: Some(format!(
                    "the answer is not valid UTF-8 (byte {})",
                    e.utf8_error().valid_up_to()
                )),
                extra: Extra::default(),
            });
        }
    };
    Ok(Answer {
        text,
        usage: None,
        cut_short,
        extra: Extra::default(),
    })
}

/// Replace the preset's `theirs` flags (the first place they appear, right
/// after the program and its subcommand) by `ours`.
fn sandboxed_flags(argv: &mut Vec<String>, theirs: &[&str], ours: &[&str]) {
    if let Some(at) = argv
        .windows(theirs.len())
        .position(|w| w.iter().zip(theirs).all(|(a, b)| a == b))
    {
        argv.splice(at..at + theirs.len(), ours.iter().map(|s| (*s).to_owned()));
    }
}

/// The agent's program and arguments as it starts: a preset's flags for a CLI that
/// plangate sandboxes ([`crate::format::agent::Preset::when_sandboxed`]).
fn preset_argv(
    a: &AgentAction,
    ctx: &crate::tools::StepContext,
) -> Result<(String, Vec<String>), CallError> {
    let mut argv = a.agent.command.clone().unwrap_or_default();
    if let Some((theirs, ours)) = a.agent.preset.and_then(|p| p.when_sandboxed())
        && ctx.sandbox.as_ref().is_some_and(|s| s.backend().is_some())
    {
        sandboxed_flags(&mut argv, theirs, ours);
    }
    if argv.is_empty() {
        return Err(CallError::Failed(format!(
            "agent `{}` has no command",
            a.agent_name
        )));
    }
    let program = argv.remove(0);
    Ok((program, argv))
}

/// The variables a preset's CLI needs to run headless.
fn preset_env(a: &AgentAction, env: &mut Vec<(String, String)>, api: bool) {
    if let Some(p) = a.agent.preset {
        for (k, v) in p.env(api) {
            env.retain(|(name, _)| name != k);
            env.push(((*k).to_owned(), (*v).to_owned()));
        }
    }
}
