//! The `agent` tool: ask an agent, pass its answer through the fail-close
//! guard, retry with the guard's feedback, account for tokens and cost.
//!
//! Nothing the agent says reaches the workspace, the report or a later step
//! until `guard` accepts it. The raw answers are kept under
//! `artifacts/<step>/attempt-N.answer.txt` as evidence only; the accepted
//! value is written to `parsed.json` / `parsed.txt`, and later steps find it
//! through `PLANGATE_RESULT_<STEP_ID>`. Envelope artifacts are written into
//! the workspace only after the whole envelope is accepted, never through a
//! symlink, never outside the workspace.
//!
//! Providers: `command` (a local CLI, prompt on stdin), `openai` (an
//! OpenAI-compatible chat-completions endpoint), `replay` (recorded answers).

use std::collections::HashSet;
use std::path::{Component, Path};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::StepContext;
use crate::guard::envelope::{self, Status, Tier};
use crate::guard::{Category, Rejection, code, json, protocol};
use crate::model::{AttemptRecord, StepOutcome, StepStatus, Usage};
use crate::plan::raw::{CliOutputFormat, OutputKind, ProviderKind};
use crate::plan::{AgentAction, PromptSource, Step};
use crate::policy::{Risk, StepClassification};
use crate::process::{self, Capture, ProcessSpec, Termination};

/// Default most characters in a prompt or an answer.
pub const DEFAULT_MAX_CHARS: u64 = 400_000;
/// Default time for one agent call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Most bytes read from an HTTP reply.
const MAX_HTTP_BODY: u64 = 16 * 1024 * 1024;
/// Most bytes of a step's output appended to a prompt as context.
const MAX_CONTEXT_BYTES: u64 = 256 * 1024;
/// Largest replay file read.
const MAX_REPLAY_BYTES: u64 = 64 * 1024 * 1024;

/// The agent step's risk floor: what the provider and the output can do by themselves.
pub fn classify(a: &AgentAction) -> StepClassification {
    let writes = a.output == OutputKind::Envelope && a.write_artifacts;
    let (floor, reason) = match a.provider {
        ProviderKind::Command => (
            Risk::Moderate,
            format!(
                "runs the agent CLI `{}`, which can act on its own",
                a.agent
                    .command
                    .as_ref()
                    .and_then(|c| c.first())
                    .map_or("?", String::as_str)
            ),
        ),
        ProviderKind::Openai => (
            Risk::Moderate,
            format!(
                "sends the prompt to `{}`",
                a.agent.base_url.as_deref().unwrap_or("?")
            ),
        ),
        ProviderKind::Replay if writes => (
            Risk::Moderate,
            "writes the agent's files into the workspace".to_owned(),
        ),
        ProviderKind::Replay => (
            Risk::Safe,
            "replays recorded answers; writes nothing".to_owned(),
        ),
    };
    StepClassification {
        floor,
        classified: floor,
        blocked: None,
        unclassifiable: None,
        reason,
    }
}

/// One answer from a provider.
struct Answer {
    text: String,
    usage: Option<Usage>,
    /// The provider says it stopped early (e.g. `finish_reason: length`).
    cut_short: Option<String>,
}

/// Why a provider gave no answer.
enum CallError {
    /// The call failed; the step fails.
    Failed(String),
    /// The call ran out of time; the step times out.
    TimedOut(String),
    /// The run is stopping.
    Stopped,
}

/// Run an agent step.
pub async fn run(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
) -> StepOutcome {
    let mut out = StepOutcome::new(started);
    out.attempts = 0;
    let t0 = Instant::now();
    if let Err(e) = std::fs::create_dir_all(&ctx.artifacts_dir) {
        out.error = Some(format!("cannot create the step's artifact folder: {e}"));
        return out;
    }
    let base = match build_prompt(a, ctx) {
        Ok(p) => p,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let instructions = match a.output {
        OutputKind::Envelope => protocol::envelope_instructions(),
        OutputKind::Code => protocol::code_instructions(a.language.as_deref()),
        OutputKind::Json => protocol::json_instructions(a.schema.as_ref()),
    };
    let first = format!("{base}\n\n{instructions}");
    let max_in = a.agent.max_input_chars.unwrap_or(DEFAULT_MAX_CHARS);
    let max_out = a.agent.max_output_chars.unwrap_or(DEFAULT_MAX_CHARS);
    let mut sent: HashSet<String> = HashSet::new();
    let mut usage = Usage::default();
    let mut last: Vec<Rejection> = Vec::new();
    for n in 1..=a.max_attempts {
        if let Some(why) = ctx.shared.check() {
            out.budget_exhausted = true;
            out.error = Some(why);
            break;
        }
        let prompt = if n == 1 {
            first.clone()
        } else {
            protocol::retry_prompt(&base, n, a.max_attempts, &last, &instructions)
        };
        let digest = hex::encode(Sha256::digest(prompt.as_bytes()));
        if !sent.insert(digest.clone()) {
            out.error = Some(format!(
                "attempt {n} would repeat an earlier prompt exactly; refusing to resend it"
            ));
            break;
        }
        let chars = prompt.chars().count() as u64;
        if chars > max_in {
            out.error = Some(format!(
                "the prompt of attempt {n} has {chars} characters, more than max_input_chars {max_in} of agent `{}`; it is never truncated",
                a.agent_name
            ));
            break;
        }
        out.attempts = n;
        let prompt_rel = format!("{}/attempt-{n}.prompt.txt", ctx.artifacts_rel);
        let answer_rel = format!("{}/attempt-{n}.answer.txt", ctx.artifacts_rel);
        let _ = std::fs::write(ctx.out_dir.join(&prompt_rel), &prompt);
        out.artifacts.push(prompt_rel.clone());
        let call_started = Instant::now();
        let result = call(a, step, ctx, &prompt, n, &digest, max_out).await;
        let mut record = AttemptRecord {
            attempt: n,
            prompt_sha256: digest,
            verdict: "error".to_owned(),
            tier: None,
            rejections: Vec::new(),
            error: None,
            usage: Usage::default(),
            duration_ms: u64::try_from(call_started.elapsed().as_millis()).unwrap_or(u64::MAX),
            files: vec![prompt_rel],
        };
        let answer = match result {
            Ok(ans) => ans,
            Err(e) => {
                let (status, msg) = match e {
                    CallError::Failed(m) => (StepStatus::Failed, m),
                    CallError::TimedOut(m) => (StepStatus::TimedOut, m),
                    CallError::Stopped => (
                        StepStatus::Failed,
                        format!("{}; the agent was stopped", ctx.shared.stop_reason()),
                    ),
                };
                record.error = Some(msg.clone());
                out.agent_attempts.push(record);
                out.status = status;
                out.error = Some(msg);
                return finish(out, usage, t0);
            }
        };
        let _ = std::fs::write(ctx.out_dir.join(&answer_rel), &answer.text);
        out.artifacts.push(answer_rel.clone());
        record.files.push(answer_rel);
        let u = answer
            .usage
            .unwrap_or_else(|| estimate(&prompt, &answer.text));
        let u = priced(u, a);
        record.usage = u;
        usage.add(&u);
        let exhausted = ctx.shared.add_usage(&u);
        let verdict = judge(a, &answer, max_out);
        match verdict {
            Ok(accepted) => {
                record.verdict = "accepted".to_owned();
                record.tier = accepted.tier.map(|t| match t {
                    Tier::Strict => "strict".to_owned(),
                    Tier::Recovered => "recovered".to_owned(),
                });
                out.agent_attempts.push(record);
                out = accept(a, step, ctx, accepted, out);
                if let Some(why) = exhausted {
                    out.budget_exhausted = true;
                    if out.error.is_none() {
                        out.error = Some(format!("answer accepted, then {why}"));
                    }
                }
                return finish(out, usage, t0);
            }
            Err(rejections) => {
                record.verdict = "rejected".to_owned();
                record.rejections = rejections.clone();
                out.agent_attempts.push(record);
                last = rejections;
                if let Some(why) = exhausted {
                    out.budget_exhausted = true;
                    out.error = Some(why);
                    break;
                }
            }
        }
    }
    if out.error.is_none() {
        out.status = StepStatus::Rejected;
        out.error = Some(rejection_summary(out.attempts, &last));
        let evidence = match a.output {
            OutputKind::Envelope => {
                serde_json::to_value(envelope::tier3_failure(&last)).unwrap_or(Value::Null)
            }
            _ => serde_json::json!({"rejections": last}),
        };
        let rel = format!("{}/rejected.json", ctx.artifacts_rel);
        if write_json(&ctx.out_dir.join(&rel), &evidence).is_ok() {
            out.artifacts.push(rel);
        }
    }
    finish(out, usage, t0)
}

fn finish(mut out: StepOutcome, usage: Usage, t0: Instant) -> StepOutcome {
    out.usage = Some(usage);
    out.duration = t0.elapsed();
    out
}

fn rejection_summary(attempts: u32, last: &[Rejection]) -> String {
    let first = last
        .first()
        .map_or_else(|| "no reason".to_owned(), ToString::to_string);
    let more = if last.len() > 1 {
        format!(" (and {} more)", last.len() - 1)
    } else {
        String::new()
    };
    format!("answer rejected after {attempts} attempt(s): {first}{more}")
}

/// The parsed value of an accepted answer.
struct Accepted {
    tier: Option<Tier>,
    kind: AcceptedKind,
}

enum AcceptedKind {
    Envelope(envelope::Envelope),
    Code(String),
    Json(Value),
}

fn judge(a: &AgentAction, answer: &Answer, max_out: u64) -> Result<Accepted, Vec<Rejection>> {
    if let Some(why) = &answer.cut_short {
        return Err(vec![Rejection::whole(
            Category::Truncated,
            format!("the answer was cut short ({why}); give a complete, shorter answer"),
        )]);
    }
    let chars = answer.text.chars().count() as u64;
    if chars > max_out {
        return Err(vec![Rejection::whole(
            Category::Truncated,
            format!(
                "the answer has {chars} characters, more than the {max_out} allowed; give a shorter answer"
            ),
        )]);
    }
    match a.output {
        OutputKind::Envelope => envelope::parse_envelope(&answer.text).map(|(e, t)| Accepted {
            tier: Some(t),
            kind: AcceptedKind::Envelope(e),
        }),
        OutputKind::Code => {
            let c = code::parse_code(&answer.text, a.language.as_deref())?;
            if let Some(check) = a.check_code {
                let problems = check(&c);
                if !problems.is_empty() {
                    return Err(problems);
                }
            }
            Ok(Accepted {
                tier: None,
                kind: AcceptedKind::Code(c),
            })
        }
        OutputKind::Json => json::parse_json(&answer.text, a.schema.as_ref()).map(|v| Accepted {
            tier: None,
            kind: AcceptedKind::Json(v),
        }),
    }
}

/// Store the accepted value, write envelope files, set the outcome.
fn accept(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    acc: Accepted,
    mut out: StepOutcome,
) -> StepOutcome {
    let (rel, text, bytes) = match &acc.kind {
        AcceptedKind::Code(c) => (
            format!("{}/parsed.txt", ctx.artifacts_rel),
            c.clone(),
            c.clone().into_bytes(),
        ),
        AcceptedKind::Envelope(e) => {
            let body = serde_json::to_string_pretty(e).unwrap_or_default();
            (
                format!("{}/parsed.json", ctx.artifacts_rel),
                body.clone(),
                body.into_bytes(),
            )
        }
        AcceptedKind::Json(v) => {
            let body = serde_json::to_string_pretty(v).unwrap_or_default();
            (
                format!("{}/parsed.json", ctx.artifacts_rel),
                body.clone(),
                body.into_bytes(),
            )
        }
    };
    let path = ctx.out_dir.join(&rel);
    if let Err(e) = std::fs::write(&path, &bytes) {
        out.error = Some(format!("cannot store the accepted answer: {e}"));
        return out;
    }
    out.artifacts.push(rel);
    out.result_file = Some(path);
    if let AcceptedKind::Envelope(e) = &acc.kind {
        if e.status == Status::Fail {
            out.status = StepStatus::Failed;
            out.error = Some(format!("the agent reported FAIL: {}", one_line(&e.summary)));
            return out;
        }
        if a.write_artifacts {
            match write_envelope_files(&ctx.env.workspace, e) {
                Ok(n) => {
                    out.output_bytes = n;
                    out.workspace_files = e.artifacts.iter().map(|a| a.path.clone()).collect();
                }
                Err(why) => {
                    out.status = StepStatus::Failed;
                    out.error = Some(format!(
                        "the envelope was accepted but its files were not written: {why}"
                    ));
                    return out;
                }
            }
        }
    }
    if let Some(re) = &step.expected_output
        && !super::expected_output_matches(re, &text)
    {
        out.status = StepStatus::Failed;
        out.error = Some(format!(
            "the accepted answer does not match expected_output `{}`",
            re.as_str()
        ));
        return out;
    }
    out.status = StepStatus::Success;
    out.error = None;
    out
}

fn one_line(s: &str) -> String {
    let line: String = s.lines().next().unwrap_or("").chars().take(300).collect();
    if line.is_empty() {
        "(no summary)".to_owned()
    } else {
        line
    }
}

/// Write an accepted envelope's files into the workspace: every component must
/// be a real directory inside it (no symlinks), each file is replaced atomically.
/// All paths are checked before anything is written.
fn write_envelope_files(workspace: &Path, e: &envelope::Envelope) -> Result<u64, String> {
    let mut targets = Vec::new();
    for art in &e.artifacts {
        let rel = Path::new(&art.path);
        if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(format!("unsafe path `{}`", art.path));
        }
        let mut cur = workspace.to_path_buf();
        let parts: Vec<_> = rel.components().collect();
        for (i, c) in parts.iter().enumerate() {
            cur.push(c);
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(format!(
                        "`{}` goes through the symlink `{}`",
                        art.path,
                        cur.display()
                    ));
                }
                Ok(m) if i + 1 < parts.len() && !m.is_dir() => {
                    return Err(format!(
                        "`{}`: `{}` is not a directory",
                        art.path,
                        cur.display()
                    ));
                }
                Ok(m) if i + 1 == parts.len() && m.is_dir() => {
                    return Err(format!("`{}` is a directory", art.path));
                }
                _ => {}
            }
        }
        targets.push((cur, art.content.as_bytes()));
    }
    let mut total = 0u64;
    for (path, content) in targets {
        let dir = path
            .parent()
            .ok_or_else(|| "no parent directory".to_owned())?;
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".plangate-")
            .tempfile_in(dir)
            .map_err(|e| format!("cannot write in `{}`: {e}", dir.display()))?;
        std::io::Write::write_all(&mut tmp, content)
            .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = tmp
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644));
        }
        tmp.persist(&path)
            .map_err(|e| format!("cannot write `{}`: {}", path.display(), e.error))?;
        total += content.len() as u64;
    }
    Ok(total)
}

fn write_json(path: &Path, v: &Value) -> std::io::Result<()> {
    std::fs::write(
        path,
        serde_json::to_vec_pretty(v).map_err(std::io::Error::other)?,
    )
}

/// Roughly four characters a token, marked as an estimate.
fn estimate(prompt: &str, answer: &str) -> Usage {
    let t = |s: &str| (s.chars().count() as u64).div_ceil(4);
    Usage {
        input_tokens: t(prompt),
        output_tokens: t(answer),
        cost_usd: 0.0,
        estimated: true,
    }
}

fn priced(mut u: Usage, a: &AgentAction) -> Usage {
    if let Some(p) = a.agent.price
        && u.cost_usd == 0.0
    {
        u.cost_usd = (u.input_tokens as f64 * p.input_per_mtok
            + u.output_tokens as f64 * p.output_per_mtok)
            / 1e6;
    }
    u
}

/// The prompt text with its context (earlier steps' output, workspace files).
fn build_prompt(a: &AgentAction, ctx: &StepContext) -> Result<String, String> {
    let mut prompt = match &a.prompt {
        PromptSource::Inline(t) => t.clone(),
        PromptSource::File(rel) => {
            let path = super::workspace_file(&ctx.env.workspace, rel)
                .map_err(|e| format!("prompt_file {e}"))?;
            std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read prompt_file `{}`: {e}", rel.display()))?
        }
    };
    for &i in &a.context_steps {
        let id = ctx.step_ids.get(i).cloned().unwrap_or_default();
        let dir = ctx.out_dir.join("artifacts").join(&id);
        let (label, file) = ["parsed.txt", "parsed.json", "stdout.txt"]
            .iter()
            .map(|f| (*f, dir.join(f)))
            .find(|(_, p)| p.is_file())
            .ok_or_else(|| format!("context step `{id}` left no output to include"))?;
        let text = read_capped(&file, MAX_CONTEXT_BYTES)?;
        prompt.push_str(&format!("\n\n--- output of step `{id}` ({label}) ---\n{text}\n--- end of output of step `{id}` ---"));
    }
    for rel in &a.context_files {
        let path = super::workspace_file(&ctx.env.workspace, rel)
            .map_err(|e| format!("context file {e}"))?;
        let text = read_capped(&path, MAX_CONTEXT_BYTES)?;
        let name = rel.display();
        prompt.push_str(&format!(
            "\n\n--- file `{name}` ---\n{text}\n--- end of file `{name}` ---"
        ));
    }
    Ok(prompt)
}

fn read_capped(path: &Path, cap: u64) -> Result<String, String> {
    use std::io::Read;
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut buf = Vec::new();
    f.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let cut = buf.len() as u64 > cap;
    buf.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if cut {
        text.push_str(&format!("\n[... cut at {cap} bytes ...]"));
    }
    Ok(text)
}

async fn call(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    prompt: &str,
    attempt: u32,
    digest: &str,
    max_out: u64,
) -> Result<Answer, CallError> {
    let timeout = a
        .agent
        .timeout
        .map_or(DEFAULT_TIMEOUT, |t| t.0)
        .min(step.timeout);
    match a.provider {
        ProviderKind::Command => {
            call_command(a, step, ctx, prompt, attempt, timeout, max_out).await
        }
        ProviderKind::Openai => call_openai(a, ctx, prompt, timeout).await,
        ProviderKind::Replay => replay(a, &step.id, attempt, digest),
    }
}

async fn call_command(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    prompt: &str,
    attempt: u32,
    timeout: Duration,
    max_out: u64,
) -> Result<Answer, CallError> {
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
    let outcome = process::run(spec, ctx.cancel.clone())
        .await
        .map_err(|e| CallError::Failed(format!("cannot start agent `{}`: {e}", a.agent_name)))?;
    let bytes = std::fs::read(&raw).unwrap_or_default();
    let _ = std::fs::remove_file(&raw);
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

async fn call_openai(
    a: &AgentAction,
    ctx: &StepContext,
    prompt: &str,
    timeout: Duration,
) -> Result<Answer, CallError> {
    let base = a.agent.base_url.clone().unwrap_or_default();
    let url = format!("{}/chat/completions", base.trim_end_matches('/'));
    let key = match &a.agent.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => Some(k),
            _ => {
                return Err(CallError::Failed(format!(
                    "agent `{}` reads its API key from ${var}, which is not set",
                    a.agent_name
                )));
            }
        },
        None => None,
    };
    let mut body = serde_json::json!({
        "model": a.agent.model,
        "messages": [{"role": "user", "content": prompt}],
    });
    if let Some(t) = a.agent.temperature {
        body["temperature"] = Value::from(t);
    }
    if let Some(m) = a.agent.max_tokens {
        body["max_tokens"] = Value::from(m);
    }
    let name = a.agent_name.clone();
    let task = tokio::task::spawn_blocking(move || http_post(&url, key.as_deref(), &body, timeout));
    let mut cancel = ctx.cancel.clone();
    let result = tokio::select! {
        r = task => r.map_err(|e| CallError::Failed(format!("agent `{name}` call crashed: {e}")))?,
        _ = cancel.wait_for(|c| *c) => return Err(CallError::Stopped),
    };
    let (status, reply) = result.map_err(|e| {
        if e.contains("timed out") || e.contains("Timeout") {
            CallError::TimedOut(format!("agent `{name}`: {e}"))
        } else {
            CallError::Failed(format!("agent `{name}`: {e}"))
        }
    })?;
    if !(200..300).contains(&status) {
        let snippet: String = reply.chars().take(300).collect();
        return Err(CallError::Failed(format!(
            "agent `{name}`: HTTP {status}: {}",
            one_line(&snippet)
        )));
    }
    openai_answer(&name, &reply)
}

/// POST JSON; returns (status, body) with the body capped.
fn http_post(
    url: &str,
    key: Option<&str>,
    body: &Value,
    timeout: Duration,
) -> Result<(u16, String), String> {
    use std::io::Read;
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build(),
    );
    let mut req = agent.post(url).header("content-type", "application/json");
    if let Some(k) = key {
        req = req.header("authorization", &format!("Bearer {k}"));
    }
    let payload = serde_json::to_vec(body).map_err(|e| e.to_string())?;
    let mut resp = req
        .send(&payload[..])
        .map_err(|e| format!("request to {url} failed: {e}"))?;
    let status = resp.status().as_u16();
    let mut buf = Vec::new();
    resp.body_mut()
        .as_reader()
        .take(MAX_HTTP_BODY + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("reading the reply from {url} failed: {e}"))?;
    if buf.len() as u64 > MAX_HTTP_BODY {
        return Err(format!(
            "the reply from {url} is larger than {MAX_HTTP_BODY} bytes"
        ));
    }
    String::from_utf8(buf)
        .map(|s| (status, s))
        .map_err(|_| format!("the reply from {url} is not UTF-8"))
}

fn openai_answer(agent: &str, reply: &str) -> Result<Answer, CallError> {
    let v: Value = serde_json::from_str(reply)
        .map_err(|e| CallError::Failed(format!("agent `{agent}`: the reply is not JSON: {e}")))?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| CallError::Failed(format!("agent `{agent}`: the reply has no `choices`")))?;
    let text = choice
        .pointer("/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            CallError::Failed(format!("agent `{agent}`: the reply has no message content"))
        })?
        .to_owned();
    let cut_short = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => Some("finish_reason `length`: the model hit its token limit".to_owned()),
        Some("content_filter") => Some("finish_reason `content_filter`".to_owned()),
        _ => None,
    };
    let usage = v.get("usage").map(|u| Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        cost_usd: 0.0,
        estimated: false,
    });
    Ok(Answer {
        text,
        usage,
        cut_short,
    })
}

/// `replay`: the recorded answer for (step, attempt) from a JSON Lines file:
/// `{"step": "fix", "attempt": 1, "answer": "...", "usage": {...}, "prompt_sha256": "..."}`.
/// A record that names a `prompt_sha256` must match the prompt sent now.
fn replay(a: &AgentAction, step_id: &str, attempt: u32, digest: &str) -> Result<Answer, CallError> {
    use std::io::Read;
    let path = a
        .replay_file
        .as_ref()
        .ok_or_else(|| CallError::Failed(format!("agent `{}` has no replay file", a.agent_name)))?;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_REPLAY_BYTES).read_to_string(&mut text))
        .map_err(|e| {
            CallError::Failed(format!("cannot read replay file `{}`: {e}", path.display()))
        })?;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            CallError::Failed(format!(
                "replay file `{}` line {}: not JSON: {e}",
                path.display(),
                i + 1
            ))
        })?;
        if v.get("step").and_then(Value::as_str) != Some(step_id)
            || v.get("attempt").and_then(Value::as_u64) != Some(u64::from(attempt))
        {
            continue;
        }
        if let Some(want) = v.get("prompt_sha256").and_then(Value::as_str)
            && want != digest
        {
            return Err(CallError::Failed(format!(
                "replay file `{}` line {}: the answer was recorded for a different prompt (sha256 {want}, now {digest}); record it again",
                path.display(),
                i + 1
            )));
        }
        let answer = v.get("answer").and_then(Value::as_str).ok_or_else(|| {
            CallError::Failed(format!(
                "replay file `{}` line {}: no string `answer`",
                path.display(),
                i + 1
            ))
        })?;
        let usage = v.get("usage").map(|u| Usage {
            input_tokens: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
            cost_usd: u.get("cost_usd").and_then(Value::as_f64).unwrap_or(0.0),
            estimated: false,
        });
        return Ok(Answer {
            text: answer.to_owned(),
            usage,
            cut_short: None,
        });
    }
    Err(CallError::Failed(format!(
        "replay file `{}` has no answer for step `{step_id}` attempt {attempt}",
        path.display()
    )))
}
