//! The `system_info` tool (read-only): the facts a CI log wants first — OS,
//! kernel, CPU, memory, the workspace's disk, the CI provider and the versions
//! of the tools on PATH. Nothing is written but the step's `result.json`.

pub(crate) mod spec;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{StepContext, Stop, ToolReturn};
use crate::model::{StepOutcome, StepStatus};
use crate::tools::params::system_info::SystemInfoParams;

/// Probed when the plan names none.
pub(crate) const DEFAULT_TOOLS: &[&str] = &[
    "git", "bash", "python3", "node", "cargo", "rustc", "go", "java", "docker",
];

/// Longest wait for one `--version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// Gather the facts.
pub(crate) fn run(p: &SystemInfoParams, ctx: &StepContext, stop: &Stop) -> ToolReturn {
    let mut outcome = StepOutcome::new(std::time::SystemTime::now());
    let uname = rustix::system::uname();
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let os_field = |k: &str| {
        os_release.lines().find_map(|l| {
            l.strip_prefix(k)
                .and_then(|v| v.strip_prefix('='))
                .map(|v| v.trim_matches('"').to_owned())
        })
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(k.trim(), "model name" | "Model" | "cpu model").then(|| v.trim().to_owned())
    });
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib = |k: &str| -> Option<u64> {
        meminfo.lines().find_map(|l| {
            let rest = l.strip_prefix(k)?.strip_prefix(':')?;
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    let disk = disk_of(&ctx.env.workspace);
    let names: Vec<String> = p
        .tools
        .clone()
        .unwrap_or_else(|| DEFAULT_TOOLS.iter().map(|s| (*s).to_owned()).collect());
    let mut tools = serde_json::Map::new();
    let mut warnings = Vec::new();
    // The probes get what any step's process gets without secrets (`policy::env`).
    let env = ctx
        .env
        .scope
        .child(&std::collections::BTreeSet::new(), &ctx.run_vars)
        .vars;
    for name in &names {
        if stop.now() {
            warnings.push(format!("stopped before probing `{name}`"));
            break;
        }
        tools.insert(
            name.clone(),
            version_of(name, &env, stop.remaining().min(VERSION_TIMEOUT)),
        );
    }
    let result = json!({
        "os": {
            "name": os_field("PRETTY_NAME").or_else(|| os_field("NAME")),
            "id": os_field("ID"),
            "version": os_field("VERSION_ID"),
            "kernel": format!("{} {}", uname.sysname().to_string_lossy(), uname.release().to_string_lossy()),
            "arch": std::env::consts::ARCH,
        },
        "cpu": {
            "model": cpu_model,
            "logical_cores": std::thread::available_parallelism().map(usize::from).ok(),
        },
        "memory": {
            "total_bytes": mem_kib("MemTotal").map(|k| k * 1024),
            "available_bytes": mem_kib("MemAvailable").map(|k| k * 1024),
        },
        "disk": disk,
        "ci": ci_provider(),
        "tools": tools,
        "warnings": warnings,
    });
    outcome.status = StepStatus::Success;
    ToolReturn {
        outcome,
        result: Some(result),
    }
}

/// Size and free space of the filesystem holding `path`.
fn disk_of(path: &Path) -> Value {
    match rustix::fs::statvfs(path) {
        Ok(s) => json!({
            "path": path.display().to_string(),
            "total_bytes": s.f_blocks.saturating_mul(s.f_frsize),
            "free_bytes": s.f_bavail.saturating_mul(s.f_frsize),
        }),
        Err(e) => json!({"path": path.display().to_string(), "error": e.to_string()}),
    }
}

/// Which CI runs us, from its well-known variables.
fn ci_provider() -> Value {
    let var = |k: &str| crate::environ::var(k).filter(|v| !v.is_empty());
    let provider = if var("GITHUB_ACTIONS").as_deref() == Some("true") {
        "github_actions"
    } else if var("GITLAB_CI").is_some() {
        "gitlab_ci"
    } else if var("CI").is_some() {
        "other"
    } else {
        "none"
    };
    json!({
        "provider": provider,
        "runner_os": var("RUNNER_OS"),
        "runner_arch": var("RUNNER_ARCH"),
    })
}

/// `NAME --version`, first line, with a timeout; `null` when the program is not on PATH.
fn version_of(
    name: &str,
    env: &std::collections::BTreeMap<String, String>,
    timeout: Duration,
) -> Value {
    let mut child = match Command::new(name)
        .arg("--version")
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Value::Null,
        Err(e) => return json!({"error": e.to_string()}),
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return json!({"error": format!("`{name} --version` did not answer within {timeout:?}")});
            }
        }
    }
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.by_ref().take(64 * 1024).read_to_string(&mut text);
    }
    if text.trim().is_empty()
        && let Some(mut err) = child.stderr.take()
    {
        // java and a few others print their version on stderr.
        let _ = err.by_ref().take(64 * 1024).read_to_string(&mut text);
    }
    match text.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => Value::from(line.chars().take(200).collect::<String>()),
        None => json!({"error": format!("`{name} --version` printed nothing")}),
    }
}
