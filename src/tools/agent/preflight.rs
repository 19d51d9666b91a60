//! Before any step runs: every agent the selected steps use must be
//! reachable, so a run never finds one missing after earlier steps ran. A
//! `command` agent's program is on plangate's `PATH` (or is an executable
//! path); its key variable (`api_key_env`, or the provider's default) and
//! the variables of its `headers` are set and not empty; a CLI `preset`
//! (which calls its model's API) declares `network: true`; a `replay` file
//! exists, fits the size cap and every line is a record the provider reads.
//! Any problem is a diagnostic: the run is invalid (exit 2) and nothing runs.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::format::agent::ProviderKind;
use crate::model::Diagnostic;
use crate::tools::params::agent::AgentAction;
use crate::tools::step::Step;
use crate::tools::{Action, ToolEnv};

/// Largest replay file read (the provider's cap too).
pub(crate) const MAX_REPLAY_BYTES: u64 = 64 * 1024 * 1024;

/// The problems of every agent the selected steps use (`file`: the plan, as named).
pub(crate) fn check(
    steps: &[Step],
    selected: Option<&[bool]>,
    env: &ToolEnv,
    file: &str,
) -> Vec<Diagnostic> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if selected.is_some_and(|s| !s.get(i).copied().unwrap_or(false)) {
            continue;
        }
        let Action::Agent(a) = &step.action else {
            continue;
        };
        if !seen.insert(a.agent_name.clone()) {
            continue;
        }
        for (message, help) in problems(a, env) {
            out.push(Diagnostic {
                file: file.to_owned(),
                line: 0,
                column: 0,
                message: format!(
                    "agent `{}` (step `{}`) cannot run: {message}",
                    a.agent_name, step.id
                ),
                help: Some(help),
            });
        }
    }
    out
}

/// What stops agent `a` from running here: (message, what to do).
fn problems(a: &AgentAction, env: &ToolEnv) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(var) = a.key_env().map(str::to_owned)
        && !env.scope.missing([&var]).is_empty()
    {
        out.push((
            format!("its key variable `{var}` (api_key_env) is unset or empty"),
            format!("set {var} in the CI job's environment (a secret), or change `api_key_env`"),
        ));
    }
    for (header, var) in a.agent.headers.iter().flatten() {
        if !env.scope.missing([var]).is_empty() {
            out.push((
                format!("the variable `{var}` of its header `{header}` is unset or empty"),
                format!("set {var} in the CI job's environment (a secret), or remove the header"),
            ));
        }
    }
    match a.provider {
        ProviderKind::Command => {
            let program = a
                .agent
                .command
                .as_ref()
                .and_then(|c| c.first())
                .map_or("", String::as_str);
            if let Err(why) = program_found(program, &env.workspace) {
                out.push((why, format!("install `{program}` in the CI image (on plangate's PATH), or fix the agent's `command`")));
            }
            if let Some(preset) = a.agent.preset
                && !a.agent.network
                && a.agent.egress.is_none()
                && a.agent.api.is_none()
            {
                out.push((
                    format!(
                        "it runs the {} CLI (`preset: {}`), which calls its model's API, but its sandbox has no network",
                        preset.program(),
                        preset.as_str()
                    ),
                    "add `api: {}` to the agent (plangate serves its model API and keeps the key), or `egress: [its API's host]` (e.g. `api.anthropic.com`); its steps' risk is then at least moderate"
                        .to_owned(),
                ));
            }
        }
        ProviderKind::Replay => {
            if let Some(path) = &a.replay_file
                && let Err(why) = replay_file_ok(path)
            {
                out.push((
                    why,
                    "record the answers again (`plangate run --record FILE`), or fix the agent's `file`"
                        .to_owned(),
                ));
            }
        }
        ProviderKind::Openai | ProviderKind::Anthropic => {}
    }
    out
}

/// `program` is an executable path (relative: to the workspace), or a name found on plangate's `PATH`.
fn program_found(program: &str, workspace: &Path) -> Result<PathBuf, String> {
    if program.trim().is_empty() {
        return Err("its command has no program".to_owned());
    }
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = workspace.join(program);
        return if executable(&p) {
            Ok(p)
        } else {
            Err(format!("its program `{program}` is not an executable file"))
        };
    }
    crate::environ::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .filter(|dir| dir.is_absolute())
                .map(|dir| dir.join(program))
                .find(|p| executable(p))
        })
        .ok_or_else(|| format!("its program `{program}` is not on plangate's PATH"))
}

/// The replay file exists, is not too large, and every line is a record.
pub(crate) fn replay_file_ok(path: &Path) -> Result<(), String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("its replay file `{shown}`: {e}"))?;
    if meta.len() > MAX_REPLAY_BYTES {
        return Err(format!(
            "its replay file `{shown}` has {} bytes, more than {MAX_REPLAY_BYTES}",
            meta.len()
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("its replay file `{shown}`: {e}"))?;
    // Which line holds each (step, attempt): a record that reads two ways
    // (a key twice, two records of one attempt) is refused, not resolved.
    let mut seen: std::collections::HashMap<(String, u64), usize> =
        std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let v: Value = serde_json::from_str(line)
            .map_err(|e| format!("its replay file `{shown}` line {n}: not JSON: {e}"))?;
        if let Err(problems) = plangate_guard::json::parse_json(line, None) {
            let why = problems.first().map_or_else(
                || "it reads more than one way".to_owned(),
                |r| r.message.clone(),
            );
            return Err(format!("its replay file `{shown}` line {n}: {why}"));
        }
        let (Some(step), Some(attempt), true) = (
            v.get("step").and_then(Value::as_str),
            v.get("attempt").and_then(Value::as_u64),
            v.get("answer").is_some_and(Value::is_string),
        ) else {
            return Err(format!(
                "its replay file `{shown}` line {n}: a record needs a string `step`, a number `attempt` and a string `answer`"
            ));
        };
        if let Some(first) = seen.insert((step.to_owned(), attempt), n) {
            return Err(format!(
                "its replay file `{shown}` line {n}: a second record of step `{step}` attempt {attempt} (the first is line {first}); keep one"
            ));
        }
    }
    Ok(())
}
