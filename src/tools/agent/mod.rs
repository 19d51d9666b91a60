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
//! Files: `params.rs` (parameters, checked action), `spec.rs` (load-time
//! checks, lowering, risk floor, permission needs), `agents.rs` (checks of
//! the `agents:` block), `provider/` (one file per provider behind the
//! `Provider` trait), `prompt.rs`, `accept.rs`, and the retry loop here.

mod accept;
pub(crate) mod agents;
mod changes;
mod heartbeat;
pub(crate) mod preflight;
mod prompt;
pub(crate) mod provider;
pub(crate) mod record;
pub(crate) mod spec;
mod stage;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::StepContext;
use crate::guard::envelope::{self, Tier};
use crate::guard::protocol;
use crate::model::Rejection;
use crate::model::{AttemptRecord, StepOutcome, StepStatus, Usage};
use crate::tools::params::agent::{AgentAction, OutputKind};
use crate::tools::step::Step;
use accept::{accept, judge, write_json};
use prompt::{build_prompt, estimate, priced};
use provider::{Answer, Call, CallError};
use stage::Stage;

use crate::format::agent::ProviderKind;

/// Default most characters in a prompt or an answer.
pub(crate) const DEFAULT_MAX_CHARS: u64 = 400_000;
/// Default time for one agent call.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Run an agent step.
pub(crate) async fn run(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
) -> StepOutcome {
    let mut out = StepOutcome::new(started);
    out.attempts = 0;
    let t0 = Instant::now();
    let (base, instructions) = match prepare(a, ctx) {
        Ok((base, instructions, untrusted)) => {
            out.untrusted_context = untrusted;
            (base, instructions)
        }
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let first = format!("{base}\n\n{instructions}");
    let max_in = a.agent.max_input_chars.unwrap_or(DEFAULT_MAX_CHARS);
    let max_out = a.agent.max_output_chars.unwrap_or(DEFAULT_MAX_CHARS);
    let mut sent: HashSet<String> = HashSet::new();
    let mut usage = Usage::default();
    let mut last: Vec<Rejection> = Vec::new();
    let mut stage = match staged(a, ctx, &mut out.warnings).await {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    for n in 1..=a.max_attempts {
        if let Some(why) = spent_out(a, ctx, &usage) {
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
        if let Err(why) = may_send(a, n, &prompt, &digest, &mut sent, max_in) {
            out.error = Some(why);
            break;
        }
        out.attempts = n;
        let prompt_rel = format!("{}/attempt-{n}.prompt.txt", ctx.artifacts_rel);
        let answer_rel = format!("{}/attempt-{n}.answer.txt", ctx.artifacts_rel);
        let _ = std::fs::write(ctx.out_dir.join(&prompt_rel), &prompt);
        out.artifacts.push(prompt_rel.clone());
        let call_started = Instant::now();
        let (log, staged) = (provider::HttpLog::default(), stage.as_ref());
        let log = (&log, usage);
        let asked = call(a, step, ctx, staged, &prompt, n, &digest, max_out, log);
        let result = heartbeat::around(asked, a, ctx, n, t0).await;
        let mut record = attempt_record(n, digest, prompt_rel, call_started);
        record.http_attempts = log.0.take();
        let mut answer = match result {
            Ok(ans) => ans,
            Err(e) => {
                call_failed(e, a, record, &mut out, &mut usage, ctx);
                return finish(out, usage, t0);
            }
        };
        let _ = std::fs::write(ctx.out_dir.join(&answer_rel), &answer.text);
        if let Err(why) = record_answer(a, step, ctx, &record, &answer) {
            out.error = Some(why);
            return finish(out, usage, t0);
        }
        out.artifacts.push(answer_rel.clone());
        record.files.push(answer_rel);
        let exclude = std::mem::take(&mut answer.extra.output_files);
        keep_extra(&mut record, &mut out, std::mem::take(&mut answer.extra));
        let u = answer
            .usage
            .unwrap_or_else(|| estimate(&prompt, &answer.text));
        let (u, exhausted) = charge(u, a, &mut usage, ctx);
        record.usage = u;
        let verdict = judge(a, &answer, max_out);
        match verdict {
            Ok(accepted) => {
                record.verdict = "accepted".to_owned();
                record.tier = accepted.tier.map(tier_name);
                out.agent_attempts.push(record);
                out = accept(a, step, ctx, stage.as_ref(), accepted, &exclude, out);
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
                if stage.is_some() {
                    match discard(&mut stage, ctx).await {
                        Ok(n) => record.discarded_changes = n,
                        Err(e) => {
                            out.agent_attempts.push(record);
                            out.error = Some(e);
                            return finish(out, usage, t0);
                        }
                    }
                }
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
        rejected(a, ctx, &last, &mut out);
    }
    finish(out, usage, t0)
}

fn tier_name(t: Tier) -> String {
    match t {
        Tier::Strict => "strict",
        Tier::Recovered => "recovered",
    }
    .to_owned()
}

/// `--record`: a live answer goes to the replay file (replayed ones are not recorded again).
fn record_answer(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    record: &AttemptRecord,
    answer: &Answer,
) -> Result<(), String> {
    match &ctx.record {
        Some(rec) if a.provider != ProviderKind::Replay => rec.append(
            &step.id,
            record.attempt,
            &record.prompt_sha256,
            &answer.text,
            answer.usage.as_ref(),
        ),
        _ => Ok(()),
    }
}

/// The record of attempt `n`, before its answer is judged.
fn attempt_record(n: u32, digest: String, prompt_rel: String, started: Instant) -> AttemptRecord {
    AttemptRecord {
        attempt: n,
        prompt_sha256: digest,
        verdict: "error".to_owned(),
        tier: None,
        rejections: Vec::new(),
        error: None,
        usage: Usage::default(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        files: vec![prompt_rel],
        discarded_changes: 0,
        session: None,
        http_attempts: Vec::new(),
    }
}

/// `--dry-run`: the step's full first prompt (its text, context, protocol;
/// results of earlier steps as placeholders; the system prompt first when
/// the agent has one), redacted, in `artifacts/<step>/prompt.dry-run.txt`.
/// Returns that path, relative to the output folder.
pub(crate) fn dry_run_prompt(a: &AgentAction, ctx: &StepContext) -> Result<String, String> {
    std::fs::create_dir_all(&ctx.artifacts_dir)
        .map_err(|e| format!("cannot create the step's artifact folder: {e}"))?;
    let (base, _) = build_prompt(a, ctx, true).map_err(|e| e.to_string())?;
    let mut text = String::new();
    if let Some(system) = &a.agent.system {
        text.push_str(&format!(
            "--- system prompt ---\n{system}\n--- prompt ---\n"
        ));
    }
    text.push_str(&format!("{base}\n\n{}", instructions_for(a)));
    let rel = format!("{}/prompt.dry-run.txt", ctx.artifacts_rel);
    std::fs::write(
        ctx.out_dir.join(&rel),
        crate::redact::clean(text.as_bytes()),
    )
    .map_err(|e| format!("cannot write {rel}: {e}"))?;
    Ok(rel)
}

fn instructions_for(a: &AgentAction) -> String {
    match a.output {
        OutputKind::Envelope => protocol::envelope_instructions(),
        OutputKind::Code => protocol::code_instructions(a.language.as_deref()),
        OutputKind::Json => protocol::json_instructions(a.schema.as_ref()),
    }
}

/// The artifact folder, the prompt and the protocol text for the step's output kind.
fn prepare(
    a: &AgentAction,
    ctx: &StepContext,
) -> Result<(String, String, prompt::UntrustedContext), String> {
    if let Some(why) = unpriced(a, ctx) {
        return Err(why);
    }
    std::fs::create_dir_all(&ctx.artifacts_dir)
        .map_err(|e| format!("cannot create the step's artifact folder: {e}"))?;
    let (base, untrusted) = build_prompt(a, ctx, false).map_err(|e| e.to_string())?;
    Ok((base, instructions_for(a), untrusted))
}

/// The staged copy an agent CLI works in (None for agents that cannot act
/// on files); what the step is warned of about it goes to `warnings`.
async fn staged(
    a: &AgentAction,
    ctx: &StepContext,
    warnings: &mut Vec<String>,
) -> Result<Option<Stage>, String> {
    if a.provider != ProviderKind::Command {
        return Ok(None);
    }
    let ctx = ctx.clone();
    let stage = tokio::task::spawn_blocking(move || Stage::create(&ctx))
        .await
        .map_err(|e| format!("internal error while staging the workspace: {e}"))??;
    warnings.extend(stage.store_notes().iter().cloned());
    Ok(Some(stage))
}

/// A rejected attempt's changes go: the copy is as the workspace again.
async fn discard(stage: &mut Option<Stage>, ctx: &StepContext) -> Result<u64, String> {
    let Some(mut s) = stage.take() else {
        return Ok(0);
    };
    let c = ctx.clone();
    let (s, r) = tokio::task::spawn_blocking(move || {
        let r = s.reset(&c);
        (s, r)
    })
    .await
    .map_err(|e| format!("internal error while resetting the staged copy: {e}"))?;
    *stage = Some(s);
    r
}

/// Every attempt was rejected: the step is `rejected`, with the last rejections as evidence.
fn rejected(a: &AgentAction, ctx: &StepContext, last: &[Rejection], out: &mut StepOutcome) {
    out.status = StepStatus::Rejected;
    out.error = Some(rejection_summary(out.attempts, last));
    let evidence = match a.output {
        OutputKind::Envelope => {
            serde_json::to_value(envelope::tier3_failure(last)).unwrap_or(Value::Null)
        }
        _ => serde_json::json!({"rejections": last}),
    };
    let rel = format!("{}/rejected.json", ctx.artifacts_rel);
    if write_json(&ctx.out_dir.join(&rel), &evidence).is_ok() {
        out.artifacts.push(rel);
    }
}

/// Whether attempt `n` may send `prompt`: never an exact repeat, never over `max_input_chars`.
fn may_send(
    a: &AgentAction,
    n: u32,
    prompt: &str,
    digest: &str,
    sent: &mut HashSet<String>,
    max_in: u64,
) -> Result<(), String> {
    if !sent.insert(digest.to_owned()) {
        return Err(format!(
            "attempt {n} would repeat an earlier prompt exactly; refusing to resend it"
        ));
    }
    let chars = prompt.chars().count() as u64;
    if chars > max_in {
        return Err(format!(
            "the prompt of attempt {n} has {chars} characters, more than max_input_chars {max_in} of agent `{}`; it is never truncated",
            a.agent_name
        ));
    }
    Ok(())
}

/// Under a cost budget (the plan's, or a `--policy` file's the load checks
/// did not see), why the agent's calls have no price, if they have none.
fn unpriced(a: &AgentAction, ctx: &StepContext) -> Option<String> {
    let cost = ctx.shared.budget.max_cost_usd.is_some()
        || ctx.shared.step_budget(a.budget).max_cost_usd.is_some();
    let from = agents::PriceFrom {
        price: a.agent.price.is_some(),
        api: a.agent.api.is_some(),
        kind: a.provider,
        model: a.agent.model.as_deref(),
    };
    let why = from.check(&a.agent_name).err().filter(|_| cost)?;
    Some(format!("{why}: {}", agents::PRICE_HELP))
}

/// Why no further attempt may start: the run's budget or the step's is spent.
fn spent_out(a: &AgentAction, ctx: &StepContext, usage: &Usage) -> Option<String> {
    ctx.shared
        .check()
        .or_else(|| ctx.shared.step_budget(a.budget).exhausted(usage))
}

/// A call that gave no answer ends the step: failed, timed out or stopped.
/// What it still cost is counted (and may exhaust the budget); what it left is kept.
fn call_failed(
    e: CallError,
    a: &AgentAction,
    mut record: AttemptRecord,
    out: &mut StepOutcome,
    usage: &mut Usage,
    ctx: &StepContext,
) {
    let (e, spent) = e.split();
    let (status, mut msg) = match e {
        CallError::Failed(m) => (StepStatus::Failed, m),
        CallError::TimedOut(m) => (StepStatus::TimedOut, m),
        CallError::Stopped | CallError::After { .. } => (
            StepStatus::Failed,
            format!("{}; the agent was stopped", ctx.shared.stop_reason()),
        ),
    };
    keep_extra(&mut record, out, spent.extra);
    if let Some(u) = spent.usage {
        let (u, exhausted) = charge(u, a, usage, ctx);
        record.usage = u;
        msg.push_str(&format!(" ({} spent)", u.summary()));
        if let Some(why) = exhausted {
            out.budget_exhausted = true;
            msg.push_str(&format!("; {why}"));
        }
    }
    record.error = Some(msg.clone());
    out.agent_attempts.push(record);
    out.status = status;
    out.error = Some(msg);
}

/// Whether an answer stored by an earlier run (`parsed.json`, carried over
/// by `--resume`) still reads as the parser accepts it: an envelope or a
/// JSON value is parsed again, strictly (a file edited since, with a key
/// twice or a key an envelope has not, is refused). Code is kept as text.
pub(crate) fn stored_answer_reads_back(
    a: &super::params::agent::AgentAction,
    text: &str,
) -> Result<(), String> {
    use super::params::agent::OutputKind;
    let problems = match a.output {
        OutputKind::Envelope => envelope::parse_envelope(text).err(),
        OutputKind::Json => crate::guard::json::parse_json(text, a.schema.as_ref()).err(),
        OutputKind::Code => None,
    };
    match problems {
        None => Ok(()),
        Some(p) => Err(p.first().map_or_else(
            || "it reads more than one way".to_owned(),
            |r| r.message.clone(),
        )),
    }
}

/// Price `u`, add it to the step's and the run's usage; why the run's or the
/// step's budget is now exhausted, if one is.
fn charge(
    u: Usage,
    a: &AgentAction,
    usage: &mut Usage,
    ctx: &StepContext,
) -> (Usage, Option<String>) {
    let u = priced(u, a);
    usage.add(&u);
    let run = ctx.shared.add_usage(&u);
    (
        u,
        run.or_else(|| ctx.shared.step_budget(a.budget).exhausted(usage)),
    )
}

/// An attempt's session facts and kept files go to its record and the step's artifacts.
fn keep_extra(record: &mut AttemptRecord, out: &mut StepOutcome, extra: provider::Extra) {
    record.session = extra.session;
    if extra.lingering > 0 {
        out.lingering_processes = Some(out.lingering_processes.unwrap_or(0) + extra.lingering);
    }
    for f in extra.files {
        out.artifacts.push(f.clone());
        record.files.push(f);
    }
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

/// What an agent CLI may read besides its staged copy and the system: its
/// program (found through `PATH`, links resolved) and the folder it lives
/// in (an installed CLI's package), and the existing absolute
/// paths its `command` names (a script, a configuration folder). Never the
/// real workspace or a folder above it; in it, only a file the permission
/// rules let the agent read.
fn command_paths(a: &AgentAction, ctx: &StepContext) -> Vec<PathBuf> {
    let ws = &ctx.env.workspace;
    let Some((program, args)) = a.agent.command.as_deref().and_then(<[String]>::split_first) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = Vec::new();
    let prog = if program.contains('/') {
        Some(ws.join(program))
    } else {
        crate::environ::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
    };
    // The folder the program really lives in (an installed CLI's package),
    // unless it is $HOME, the workspace or a folder above either.
    let home = ctx.env.home.as_deref();
    if let Some(dir) = prog
        .as_ref()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        && !ws.starts_with(&dir)
        && home.is_none_or(|h| !h.starts_with(&dir))
        && dir.parent().is_some()
    {
        found.push(dir);
    }
    found.extend(prog);
    found.extend(
        args.iter()
            .filter(|x| x.starts_with('/'))
            .map(PathBuf::from),
    );
    found
        .into_iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| p.parent().is_some() && !ws.starts_with(p))
        // Never plangate's private folder (the withheld git credentials).
        .filter(|p| !crate::sandbox::git_creds::covers_state(p))
        .filter(|p| {
            // Inside the workspace: a file the rules let the agent read only.
            !p.starts_with(ws)
                || p.is_file()
                    && ctx
                        .judge
                        .as_ref()
                        .is_none_or(|j| j.check_real(p, crate::model::Level::Read).is_ok())
        })
        .collect()
}

/// One call through the step's provider, within the agent's and the step's
/// timeouts; with a staged copy, in that copy with a fresh private home.
/// HTTP providers record each request in `http`.
#[allow(clippy::too_many_arguments)]
async fn call(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    stage: Option<&Stage>,
    prompt: &str,
    attempt: u32,
    digest: &str,
    max_out: u64,
    (http, spent): (&provider::HttpLog, Usage),
) -> Result<Answer, CallError> {
    let timeout = a
        .agent
        .timeout
        .map_or(DEFAULT_TIMEOUT, |t| t.0)
        .min(step.timeout);
    let mut c = ctx.clone();
    // The CLI may read its own program and the paths its command names.
    c.extra_readable.extend(command_paths(a, ctx));
    let home = match stage {
        Some(s) => {
            let home = s.fresh_home().map_err(CallError::Failed)?;
            // The copy borrows the workspace's object store (read-only).
            let objects = ctx.env.workspace.join(".git/objects");
            if objects.is_dir() && !s.hides(&objects) {
                c.extra_readable.push(objects);
            }
            c.env.workspace.clone_from(&s.ws);
            c.overlay = s.mount();
            c.run_vars
                .insert("PLANGATE_WORKSPACE".to_owned(), s.ws.display().to_string());
            Some(home)
        }
        None => None,
    };
    let ctx = &c;
    provider::of(a.provider)
        .call(Call {
            action: a,
            step,
            ctx,
            prompt,
            attempt,
            digest,
            max_out,
            timeout,
            home: home.as_deref(),
            http,
            spent,
        })
        .await
}
