//! What agent CLIs print: Claude Code's `--output-format json` and
//! `stream-json`, Codex's `exec --json` events, Gemini CLI's
//! `--output-format json`, and the generic `json` object. Each reader turns
//! stdout into a [`CliRun`]: the final message, the CLI's own usage and cost,
//! what it said about its session, and whether it failed (ran out of turns,
//! errored). [`conclude`] makes the `command` provider's answer of it.
//!
//! Files: `claude.rs`, `codex.rs`, `gemini.rs` (one per CLI), `live.rs`
//! (progress read from a stream while the CLI runs, for heartbeats).

mod claude;
mod codex;
mod gemini;
pub(crate) mod live;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{Answer, CallError, Extra, Spent};
use crate::format::agent::CliOutputFormat;
use crate::model::{AgentSession, Usage};
use crate::process::Termination;
use crate::tools::StepContext;

/// What a CLI's output said.
#[derive(Debug, Default)]
pub(crate) struct CliRun {
    /// The final message (the answer handed to the guard).
    pub text: Option<String>,
    /// The CLI's own tokens and cost.
    pub usage: Option<Usage>,
    /// What went wrong, as a phrase after "agent `x` " (e.g. "ran out of turns ...").
    pub failure: Option<String>,
    /// What it said about its session.
    pub session: AgentSession,
    /// Why no final message came, when the format can tell (e.g. an older Codex event shape).
    pub no_answer_hint: Option<String>,
}

/// Why a CLI's output cannot be read as its format.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// A line of a JSON Lines stream is not a JSON object.
    #[error("line {line} is not a JSON object: {why}")]
    Line {
        /// 1-based.
        line: usize,
        /// The parser's message.
        why: String,
    },
    /// stdout is not one JSON object.
    #[error("stdout is not one JSON object: {0}")]
    NotObject(String),
    /// The object lacks what the format promises.
    #[error("{0}")]
    Shape(String),
}

/// Where the `command` provider captures attempt `attempt`'s stdout while the CLI runs.
pub(crate) fn stdout_file(artifacts_dir: &Path, attempt: u32) -> PathBuf {
    artifacts_dir.join(format!("attempt-{attempt}.stdout.raw"))
}

/// An argv as one line, each argument quoted when it would not read as one word.
pub(crate) fn shown_argv(argv: &[String]) -> String {
    let shown: Vec<String> = argv
        .iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,%".contains(c))
            {
                a.clone()
            } else {
                format!("{a:?}")
            }
        })
        .collect();
    shown.join(" ")
}

/// " (preset P, output_format F)" for an agent with a preset or a structured format, else "".
pub(crate) fn shown_format(agent: &crate::format::agent::AgentDef) -> String {
    let format = agent.output_format.unwrap_or(CliOutputFormat::Text);
    match (agent.preset, format) {
        (Some(p), f) => format!(" (preset {}, output_format {})", p.as_str(), f.as_str()),
        (None, CliOutputFormat::Text) => String::new(),
        (None, f) => format!(" (output_format {})", f.as_str()),
    }
}

/// Most bytes of stdout kept for `format`: the answer's own cap for `text`,
/// and room for the whole event stream (tool output included) for the others.
pub(crate) fn stdout_cap(format: Option<CliOutputFormat>, max_out: u64, max_output: u64) -> u64 {
    // Four bytes a character at most, and one more to notice an answer that is too long.
    let answer = max_out.saturating_mul(4).saturating_add(1);
    match format {
        None | Some(CliOutputFormat::Text) => answer,
        Some(_) => answer.max(max_output),
    }
}

/// Read `stdout` as `format`. `ended`: the CLI exited by itself (a stream
/// must then hold its final event); otherwise it was stopped, a last partial
/// line is ignored and only what was said so far is read.
pub(crate) fn read(
    format: CliOutputFormat,
    stdout: &str,
    ended: bool,
) -> Result<CliRun, ReadError> {
    let mut run = match format {
        CliOutputFormat::Text => CliRun {
            text: Some(stdout.to_owned()),
            ..CliRun::default()
        },
        CliOutputFormat::Json => claude::object(&object(stdout)?, false)?,
        CliOutputFormat::ClaudeJson => match serde_json::from_str::<Value>(stdout.trim()) {
            // `--verbose` makes `--output-format json` print every message, the result last.
            Ok(Value::Array(items)) => claude::array(&items)?,
            _ => claude::object(&object(stdout)?, true)?,
        },
        CliOutputFormat::GeminiJson => gemini::object(&object(stdout)?)?,
        CliOutputFormat::ClaudeStreamJson | CliOutputFormat::CodexJsonl => {
            if format == CliOutputFormat::ClaudeStreamJson && stdout.trim_start().starts_with('[') {
                return Err(ReadError::Shape(
                    "stdout is one JSON array of messages (`claude --output-format json --verbose`), not JSON Lines; set `output_format: claude-json`, or run claude with `--output-format stream-json`".to_owned(),
                ));
            }
            let mut s = live::Stream::new(format);
            for (i, line) in lines(stdout, ended) {
                let v = event(line, i)?;
                s.event(&v);
            }
            s.finish(ended)
        }
    };
    run.session.format = format.as_str().to_owned();
    Ok(run)
}

/// The complete, non-blank lines of `stdout` with their 1-based numbers (a
/// last line without its newline only when the CLI ended by itself).
fn lines(stdout: &str, ended: bool) -> impl Iterator<Item = (usize, &str)> {
    let complete = if ended || stdout.ends_with('\n') {
        stdout
    } else {
        stdout.rfind('\n').map_or("", |i| &stdout[..=i])
    };
    complete
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// One event line: a JSON object.
fn event(line: &str, n: usize) -> Result<Value, ReadError> {
    match serde_json::from_str::<Value>(line) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(ReadError::Line {
            line: n,
            why: "not an object".to_owned(),
        }),
        Err(e) => Err(ReadError::Line {
            line: n,
            why: e.to_string(),
        }),
    }
}

fn object(stdout: &str) -> Result<Value, ReadError> {
    match serde_json::from_str::<Value>(stdout.trim()) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(Value::Array(_)) => Err(ReadError::NotObject(
            "it is a JSON array (Claude Code prints its messages as one array under `--verbose`: read it with `output_format: claude-json`)".to_owned(),
        )),
        Ok(_) => Err(ReadError::NotObject("it is not an object".to_owned())),
        Err(e) => Err(ReadError::NotObject(e.to_string())),
    }
}

/// A non-negative integer field, 0 when absent.
pub(super) fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A string field.
pub(super) fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The file Codex writes its last message to (`-o FILE`,
/// `--output-last-message FILE` or `=FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputFile {
    /// As the command names it.
    pub named: String,
    /// Resolved against the CLI's working folder (its staged copy).
    pub path: PathBuf,
    /// Its path relative to that folder, `/`-separated, when it lies inside
    /// it (no `..`); None: outside, never read.
    pub inside: Option<String>,
}

/// `root/rel` when every folder on the way from `root` is a real folder (no
/// symlink, which could lead outside `root`); None otherwise. `rel` is a
/// checked relative path (no `..`).
pub(crate) fn plain_inside(root: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    let mut at = root.to_path_buf();
    let parents = rel.parent().map(|p| p.components().count()).unwrap_or(0);
    for c in rel.components().take(parents) {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_dir() => {}
            _ => return None,
        }
    }
    Some(root.join(rel))
}

/// Codex's `-o` file, when the command names one (the last one named wins, as for Codex).
pub(crate) fn last_message_file(
    format: Option<CliOutputFormat>,
    args: &[String],
    cwd: &Path,
) -> Option<OutputFile> {
    if format != Some(CliOutputFormat::CodexJsonl) {
        return None;
    }
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let file = if a == "-o" || a == "--output-last-message" {
            it.next().cloned()
        } else {
            a.strip_prefix("--output-last-message=").map(str::to_owned)
        };
        if let Some(f) = file {
            found = Some(f);
        }
    }
    let named = found?;
    let rel = match Path::new(&named).strip_prefix(cwd) {
        Ok(r) => r.to_str().map(str::to_owned),
        Err(_) if Path::new(&named).is_absolute() => None,
        Err(_) => Some(named.clone()),
    };
    let inside = rel
        .and_then(|r| crate::format::paths::relative_inside(&r).ok())
        .and_then(|p| p.to_str().map(str::to_owned))
        .filter(|r| !r.is_empty() && r != ".");
    Some(OutputFile {
        path: cwd.join(&named),
        named,
        inside,
    })
}

/// How the `command` provider's call ended, for [`conclude`].
pub(crate) struct Ended<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// Its output format (not `text`).
    pub format: CliOutputFormat,
    /// How the process ended.
    pub termination: Termination,
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// stdout went past its cap.
    pub truncated: bool,
    /// Attempt number.
    pub attempt: u32,
    /// stderr's artifact, relative to the output directory.
    pub err_rel: &'a str,
    /// The call's time limit.
    pub timeout: Duration,
    /// Most characters of an answer.
    pub max_out: u64,
    /// Codex's `-o` file, when the command names one.
    pub last_message: Option<OutputFile>,
}

/// The answer of a CLI with a structured output format: its final message,
/// its own usage, or a failure that still carries what it spent. stdout is
/// kept as `attempt-N.stdout.json[l]` in every case.
pub(crate) fn conclude(e: Ended<'_>, ctx: &StepContext) -> Result<Answer, CallError> {
    let ext = if e.format.is_stream() {
        "jsonl"
    } else {
        "json"
    };
    let kept = format!("{}/attempt-{}.stdout.{ext}", ctx.artifacts_rel, e.attempt);
    let mut files = Vec::new();
    if std::fs::write(ctx.out_dir.join(&kept), &e.stdout).is_ok() {
        files.push(kept.clone());
    }
    let agent = e.agent;
    let ended = matches!(e.termination, Termination::Exited(_));
    let text = String::from_utf8_lossy(&e.stdout);
    let read = if e.truncated {
        Err(ReadError::Shape(format!(
            "stdout passed the {} bytes kept",
            stdout_cap(Some(e.format), e.max_out, ctx.max_output_bytes)
        )))
    } else {
        read(e.format, &text, ended)
    };
    let stopped = match e.termination {
        Termination::Exited(_) => None,
        Termination::Signaled(sig) => Some(CallError::Failed(format!(
            "agent `{agent}` was killed by signal {sig}"
        ))),
        Termination::TimedOut => Some(CallError::TimedOut(format!(
            "agent `{agent}` did not answer within {}",
            humantime::format_duration(e.timeout)
        ))),
        Termination::IdleTimedOut => Some(CallError::TimedOut(format!(
            "agent `{agent}` printed nothing for too long"
        ))),
        Termination::Cancelled => Some(CallError::Stopped),
    };
    if let Some(err) = stopped {
        // What it said before it was stopped still counts.
        return Err(match read {
            Ok(mut run) => err.after(spent(&mut run, files)),
            Err(_) => err.after(Spent {
                usage: None,
                extra: Extra {
                    session: None,
                    files,
                    lingering: 0,
                    output_files: Vec::new(),
                },
            }),
        });
    }
    let code = match e.termination {
        Termination::Exited(c) => c,
        _ => 0,
    };
    let read = with_stderr_error(&e, read, ctx);
    let mut run = match read {
        Ok(run) => run,
        Err(why) => {
            let exited = if code == 0 {
                String::new()
            } else {
                format!(" (it exited with code {code}, stderr in {})", e.err_rel)
            };
            return Err(CallError::Failed(format!(
                "agent `{agent}` printed output that cannot be read as `output_format: {}`: {why}{exited}; the raw output is kept in {kept}",
                e.format.as_str()
            ))
            .after(Spent {
                usage: None,
                extra: Extra {
                    session: None,
                    files,
                    lingering: 0,
                    output_files: Vec::new(),
                },
            }));
        }
    };
    if e.format == CliOutputFormat::CodexJsonl {
        relative_changes(&mut run, ctx);
    }
    let mut output_files = Vec::new();
    if let Some(file) = &e.last_message {
        last_message(&mut run, file, e.max_out, ctx);
        output_files.extend(file.inside.clone());
    }
    if e.format == CliOutputFormat::GeminiJson {
        gemini_exit(&mut run, code);
    }
    let failure = match (run.failure.take(), code) {
        (Some(f), 0) => Some(f),
        (Some(f), c) => Some(format!("{f}; it exited with code {c}")),
        (None, 0) if run.text.is_none() => Some(match run.no_answer_hint.take() {
            Some(h) => format!("printed no final message: {h}"),
            None => "printed no final message".to_owned(),
        }),
        (None, 0) => None,
        (None, c) => Some(format!(
            "exited with code {c} (stderr in {}) although its output reports success",
            e.err_rel
        )),
    };
    if let Some(f) = failure {
        return Err(CallError::Failed(format!("agent `{agent}` {f}")).after(spent(&mut run, files)));
    }
    let usage = run.usage.take();
    Ok(Answer {
        text: run.text.take().unwrap_or_default(),
        usage,
        cut_short: None,
        extra: Extra {
            session: Some(run.session),
            files,
            lingering: 0,
            output_files,
        },
    })
}

/// Gemini CLI's own exit codes (turn limit, input error) name the failure first.
fn gemini_exit(run: &mut CliRun, code: i32) {
    let Some(meaning) = gemini::exit_meaning(code) else {
        return;
    };
    let said = run
        .failure
        .take()
        .map(|f| format!("; it {f}"))
        .unwrap_or_default();
    run.failure = Some(format!("{meaning}{said}"));
    run.text = None;
}

/// Gemini CLI prints a fatal error as JSON on stderr, not stdout: it names
/// the failure when stdout holds none, and refuses a response beside it.
fn with_stderr_error(
    e: &Ended<'_>,
    read: Result<CliRun, ReadError>,
    ctx: &StepContext,
) -> Result<CliRun, ReadError> {
    if e.format != CliOutputFormat::GeminiJson {
        return read;
    }
    let Some((kind, phrase)) = gemini::stderr_error(&stderr_text(&ctx.out_dir.join(e.err_rel)))
    else {
        return read;
    };
    match read {
        Err(_) => {
            let mut run = CliRun::default();
            run.session.format = e.format.as_str().to_owned();
            run.session.outcome = Some(kind);
            run.failure = Some(format!("{phrase} (on stderr, stdout held no result)"));
            Ok(run)
        }
        Ok(mut run) if run.failure.is_none() => {
            run.text = None;
            run.failure = Some(format!(
                "printed a response on stdout and an error on stderr, which {phrase}; an answer that reads two ways is refused"
            ));
            Ok(run)
        }
        ok => ok,
    }
}

/// Codex names the files it changed by their path in the staged copy: shown
/// as the repository knows them.
fn relative_changes(run: &mut CliRun, ctx: &StepContext) {
    let ws = &ctx.env.workspace;
    let canonical = ws.canonicalize().ok();
    let roots: Vec<&Path> = std::iter::once(ws.as_path())
        .chain(canonical.as_deref())
        .collect();
    for c in &mut run.session.file_changes {
        *c = codex::relative_change(c, &roots);
    }
}

/// The start of a stderr artifact (at most 1 MiB), as text.
fn stderr_text(path: &Path) -> String {
    use std::io::Read;
    let mut buf = Vec::new();
    if let Ok(f) = crate::regular::open(path) {
        let _ = f.take(1024 * 1024).read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// What a failed run spent: its usage and session, the kept files.
fn spent(run: &mut CliRun, files: Vec<String>) -> Spent {
    Spent {
        usage: run.usage.take(),
        extra: Extra {
            session: Some(std::mem::take(&mut run.session)),
            files,
            lingering: 0,
            output_files: Vec::new(),
        },
    }
}

/// Codex's `-o` file, when it is there, inside the staged copy and may be
/// read, is the final message (plangate removed any copy of it before the
/// CLI started, so what is there now the CLI wrote).
fn last_message(run: &mut CliRun, file: &OutputFile, max_out: u64, ctx: &StepContext) {
    use std::io::Read;
    let Some(rel) = &file.inside else {
        run.session.warnings.push(format!(
            "its -o file `{}` is not inside the staged copy of the repository the CLI works in; not read (name a path relative to the repository)",
            super::one_line(&file.named)
        ));
        return;
    };
    // Through a symlinked folder it could be a file outside the copy. An
    // overlay stage: what the CLI wrote is in the upper layer.
    let root = ctx
        .overlay
        .as_ref()
        .map_or(&ctx.env.workspace, |o| &o.upper);
    let Some(path) = plain_inside(root, rel) else {
        run.session.warnings.push(format!(
            "its -o file `{}` lies under a symlink or a missing folder; not read",
            super::one_line(rel)
        ));
        return;
    };
    // Judged where it lies in the workspace (the CLI works in a staged copy of it).
    if ctx.may(Path::new(rel), crate::model::Level::Read).is_err() {
        run.session
            .warnings
            .push("its -o file is denied by the permission rules; not read".to_owned());
        return;
    }
    let Ok(f) = crate::regular::open(&path) else {
        return;
    };
    let mut buf = Vec::new();
    let cap = max_out.saturating_mul(4).saturating_add(1);
    if f.take(cap).read_to_end(&mut buf).is_err() {
        return;
    }
    match String::from_utf8(buf) {
        Ok(t) if !t.trim().is_empty() => run.text = Some(t),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
