//! The `command` provider: a local agent CLI (argv, no shell), the prompt on
//! its stdin, the answer on its stdout (`output_format: json`: one JSON object
//! with the answer in `result` and token counts in `usage`).

use serde_json::Value;

use super::{Answer, Call, CallError, CallFuture, Provider, one_line};
use crate::format::agent::CliOutputFormat;
use crate::model::Risk;
use crate::model::Usage;
use crate::process::{Capture, ProcessSpec, Termination};
use crate::tools::agent::params::AgentAction;

/// The `command` provider.
pub(super) struct Command;

impl Provider for Command {
    fn required_keys(&self) -> &'static [&'static str] {
        &["command"]
    }

    fn keys(&self) -> &'static [&'static str] {
        &[
            "command",
            "output_format",
            "idle_timeout",
            "api_key_env",
            "secrets",
            "network",
        ]
    }

    fn risk_floor(&self, a: &AgentAction) -> (Risk, String) {
        (
            Risk::Moderate,
            format!(
                "runs the agent CLI `{}`, which can act on its own",
                a.agent
                    .command
                    .as_ref()
                    .and_then(|c| c.first())
                    .map_or("?", String::as_str)
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
    let argv = a.agent.command.clone().unwrap_or_default();
    let Some((program, args)) = argv.split_first() else {
        return Err(CallError::Failed(format!(
            "agent `{}` has no command",
            a.agent_name
        )));
    };
    let raw = ctx
        .artifacts_dir
        .join(format!("attempt-{attempt}.stdout.raw"));
    let err_rel = format!("{}/attempt-{attempt}.stderr.txt", ctx.artifacts_rel);
    let env = ctx.child_env(step);
    let spec = ProcessSpec {
        program: program.clone(),
        args: args.to_vec(),
        cwd: ctx.env.workspace.clone(),
        env,
        // Four bytes a character at most, and one more to notice an answer that is too long.
        stdout: Capture::File {
            path: raw.clone(),
            cap: max_out.saturating_mul(4).saturating_add(1),
        },
        stderr: Capture::File {
            path: ctx.out_dir.join(&err_rel),
            cap: ctx.max_output_bytes,
        },
        timeout,
        kill_grace: ctx.kill_grace,
        stdin: Some(prompt.as_bytes().to_vec()),
        idle_timeout: a.agent.idle_timeout.map(|t| t.0),
    };
    let started = match c.home {
        Some(home) => crate::tools::sandboxed::run_with_home(spec, ctx, home).await,
        None => crate::tools::sandboxed::run(spec, ctx, None).await,
    };
    let guarded = started
        .map_err(|e| CallError::Failed(format!("cannot start agent `{}`: {e}", a.agent_name)))?;
    let bytes = std::fs::read(&raw).unwrap_or_default();
    let _ = std::fs::remove_file(&raw);
    if let Some(why) = guarded.undone_error() {
        return Err(CallError::Failed(format!("agent `{}` {why}", a.agent_name)));
    }
    let outcome = guarded.process;
    match outcome.termination {
        Termination::Exited(0) => {}
        Termination::Exited(c) => {
            return Err(CallError::Failed(format!(
                "agent `{}` exited with code {c} (stderr in {err_rel})",
                a.agent_name
            )));
        }
        Termination::Signaled(s) => {
            return Err(CallError::Failed(format!(
                "agent `{}` was killed by signal {s}",
                a.agent_name
            )));
        }
        Termination::TimedOut => {
            return Err(CallError::TimedOut(format!(
                "agent `{}` did not answer within {}",
                a.agent_name,
                humantime::format_duration(timeout)
            )));
        }
        Termination::IdleTimedOut => {
            return Err(CallError::TimedOut(format!(
                "agent `{}` printed nothing for too long",
                a.agent_name
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
            });
        }
    };
    if a.agent.output_format == Some(CliOutputFormat::Json) && cut_short.is_none() {
        return cli_json_answer(&a.agent_name, &text);
    }
    Ok(Answer {
        text,
        usage: None,
        cut_short,
    })
}

/// `output_format: json`: `{"result": "...", "usage": {"input_tokens", "output_tokens"}, "total_cost_usd"?}`.
fn cli_json_answer(agent: &str, stdout: &str) -> Result<Answer, CallError> {
    let v: Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        CallError::Failed(format!(
            "agent `{agent}` has output_format json but printed something else: {e}"
        ))
    })?;
    let text = v
        .get("result")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            CallError::Failed(format!(
                "agent `{agent}` printed JSON without a string `result`"
            ))
        })?
        .to_owned();
    let usage = v.get("usage").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input_tokens: n("input_tokens")
                + n("cache_read_input_tokens")
                + n("cache_creation_input_tokens"),
            output_tokens: n("output_tokens"),
            cost_usd: v
                .get("total_cost_usd")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
            estimated: false,
            cache_creation_input_tokens: n("cache_creation_input_tokens"),
            cache_read_input_tokens: n("cache_read_input_tokens"),
        }
    });
    let cut_short = match v.get("is_error").and_then(Value::as_bool) {
        Some(true) => {
            return Err(CallError::Failed(format!(
                "agent `{agent}` reported an error: {}",
                one_line(&text)
            )));
        }
        _ => None,
    };
    Ok(Answer {
        text,
        usage,
        cut_short,
    })
}
