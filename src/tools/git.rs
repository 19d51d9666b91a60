//! The `git` tool (design 002, 2.3): status, diff, log, add, commit, push,
//! pull, branch, checkout, stash and reset, run as `git` child processes
//! (argv only, never a shell) through the engine's process runner, so the
//! step's timeout and the run's interruption stop them like any step.
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
//! resolve inside the workspace. Risk rules are in [`args`].

pub mod args;
pub mod params;
pub mod spec;
pub mod status;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::StepContext;
use crate::model::{StepOutcome, StepStatus};
use crate::plan::tool_params::GitOperation;
use crate::plan::{GitAction, Step};
use crate::policy::{Risk, StepClassification};
use crate::process::{self, Capture, ProcessSpec, Termination};

/// Most characters of stdout (and stderr) kept in `result.json` (the files keep more).
const RESULT_TEXT_CHARS: usize = 64 * 1024;
/// Most paths listed in `changed_files`.
const MAX_CHANGED_FILES: usize = 10_000;
/// Most bytes read back from a helper call (`status`, `diff --name-only`).
const AUX_CAP: u64 = 64 * 1024 * 1024;

/// `GIT_*` variables that may reach git: who made a commit, and which global configuration file is read.
const KEPT_GIT_VARS: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG_GLOBAL",
];

/// Command-scope configuration of every git call.
const CONFIG: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "ssh -o BatchMode=yes"),
    ("core.quotePath", "false"),
    ("credential.helper", ""),
    ("color.ui", "never"),
    ("gc.auto", "0"),
    ("gc.autoDetach", "false"),
    ("maintenance.auto", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    // Signature checks (`%G?` in a format, merging a signed tag) run `false`, not a configured program.
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("merge.verifySignatures", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    ("safe.bareRepository", "explicit"),
];

/// Environment of every git call (on top of the step's).
fn fixed_env(ceiling: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = [
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_ASKPASS", ""),
        ("SSH_ASKPASS", ""),
        ("SSH_ASKPASS_REQUIRE", "never"),
        ("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_EDITOR", "true"),
        ("GIT_SEQUENCE_EDITOR", "true"),
        ("GIT_MERGE_AUTOEDIT", "no"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_ALLOW_PROTOCOL", "file:http:https:ssh"),
        ("GIT_PROXY_COMMAND", ""),
        ("GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS", "true"),
        ("LC_ALL", "C"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    v.push((
        "GIT_CEILING_DIRECTORIES".to_owned(),
        ceiling.display().to_string(),
    ));
    v
}

/// Classify a git step (see [`args`] for the rules).
pub fn classify(a: &GitAction) -> StepClassification {
    let v = args::classify(&a.params);
    StepClassification {
        floor: Risk::Safe,
        classified: v.risk,
        blocked: v.blocked,
        unclassifiable: v.unclassifiable,
        reason: v.reason,
    }
}

/// Why a git step stopped early.
enum Halt {
    /// The step's timeout.
    TimedOut,
    /// The run is stopping.
    Stopped,
    /// Anything else, in one line.
    Failed(String),
}

/// A helper call's result.
struct Aux {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl Aux {
    fn first_error(&self) -> String {
        first_error_line(&self.stderr)
    }
}

/// The most telling line of git's stderr (`fatal:`/`error:` first), without the prefix noise.
fn first_error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
        .collect();
    let pick = lines
        .iter()
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or_else(|| lines.first())
        .copied()
        .unwrap_or("");
    let pick = pick
        .strip_prefix("fatal: ")
        .or_else(|| pick.strip_prefix("error: "))
        .unwrap_or(pick);
    cut(pick, 300)
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// Everything one git step needs to call git.
struct Git<'a> {
    ctx: &'a StepContext,
    cwd: PathBuf,
    deadline: Instant,
    /// The step's environment, then plangate's.
    env: Vec<(String, String)>,
    /// Command-scope configuration (fixed, then found in the repository's).
    config: Vec<(String, String)>,
    /// Inherited `GIT_*` variables to remove.
    unset: Vec<String>,
}

impl Git<'_> {
    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The argv after `env`: unsets, then `git --no-pager ARGS`.
    fn spec(
        &self,
        git_args: &[String],
        stdout: Capture,
        stderr: Capture,
        read_only: bool,
    ) -> ProcessSpec {
        let mut env = self.env.clone();
        env.push(("GIT_CONFIG_COUNT".to_owned(), self.config.len().to_string()));
        for (i, (k, v)) in self.config.iter().enumerate() {
            env.push((format!("GIT_CONFIG_KEY_{i}"), k.clone()));
            env.push((format!("GIT_CONFIG_VALUE_{i}"), v.clone()));
        }
        env.push((
            "GIT_OPTIONAL_LOCKS".to_owned(),
            if read_only { "0" } else { "1" }.to_owned(),
        ));
        // `env -u` runs after the variables are set: never unset one plangate sets.
        let mut args: Vec<String> = Vec::new();
        for u in self
            .unset
            .iter()
            .filter(|u| !env.iter().any(|(k, _)| k == *u))
        {
            args.push("-u".to_owned());
            args.push(u.clone());
        }
        args.push("git".to_owned());
        args.push("--no-pager".to_owned());
        args.extend(git_args.iter().cloned());
        ProcessSpec {
            program: "env".to_owned(),
            args,
            cwd: self.cwd.clone(),
            env,
            stdout,
            stderr,
            timeout: self.remaining(),
            kill_grace: self.ctx.kill_grace,
            stdin: None,
            idle_timeout: None,
        }
    }

    async fn spawn(&self, spec: ProcessSpec) -> Result<process::ProcessOutcome, Halt> {
        if spec.timeout.is_zero() {
            return Err(Halt::TimedOut);
        }
        let out = process::run(spec, self.ctx.cancel.clone())
            .await
            .map_err(|e| Halt::Failed(format!("could not run git: {e}")))?;
        match out.termination {
            Termination::TimedOut | Termination::IdleTimedOut => Err(Halt::TimedOut),
            Termination::Cancelled => Err(Halt::Stopped),
            Termination::Exited(127) => Err(Halt::Failed(
                "git is not installed (not found on PATH)".to_owned(),
            )),
            _ => Ok(out),
        }
    }

    /// A read-only helper call whose output is read back.
    async fn aux(&self, git_args: &[&str]) -> Result<Aux, Halt> {
        let out_path = self.ctx.artifacts_dir.join(".git-aux-stdout");
        let err_path = self.ctx.artifacts_dir.join(".git-aux-stderr");
        let args: Vec<String> = git_args.iter().map(|s| (*s).to_owned()).collect();
        let spec = self.spec(
            &args,
            Capture::File {
                path: out_path.clone(),
                cap: AUX_CAP,
            },
            Capture::File {
                path: err_path.clone(),
                cap: 64 * 1024,
            },
            true,
        );
        let res = self.spawn(spec).await;
        let stdout = std::fs::read(&out_path).unwrap_or_default();
        let stderr =
            String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
        let _ = std::fs::remove_file(&out_path);
        let _ = std::fs::remove_file(&err_path);
        let out = res?;
        if out.stdout.truncated {
            return Err(Halt::Failed(format!(
                "`git {}` printed more than {} MiB",
                git_args.first().copied().unwrap_or(""),
                AUX_CAP >> 20
            )));
        }
        let code = match out.termination {
            Termination::Exited(c) => c,
            _ => -1,
        };
        Ok(Aux {
            code,
            stdout,
            stderr,
        })
    }

    async fn status(&self) -> Result<status::Reading, Halt> {
        let a = self
            .aux(&[
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
                "--no-renames",
            ])
            .await?;
        if a.code != 0 {
            return Err(Halt::Failed(format!(
                "git status failed: {}",
                a.first_error()
            )));
        }
        Ok(status::parse(&a.stdout))
    }

    /// NUL-separated names printed by a helper call.
    async fn names(&self, git_args: &[&str]) -> Result<Vec<String>, Halt> {
        let a = self.aux(git_args).await?;
        if a.code != 0 {
            return Err(Halt::Failed(format!(
                "git {} failed: {}",
                git_args.first().copied().unwrap_or(""),
                a.first_error()
            )));
        }
        Ok(a.stdout
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect())
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
pub async fn run(
    a: &GitAction,
    step: &Step,
    ctx: &StepContext,
    started: SystemTime,
) -> StepOutcome {
    let mut f = Findings::default();
    let res = match std::fs::create_dir_all(&ctx.artifacts_dir) {
        Ok(()) => go(a, step, ctx, &mut f).await,
        Err(e) => Err(Halt::Failed(format!(
            "cannot create {}: {e}",
            ctx.artifacts_rel
        ))),
    };
    let mut outcome = StepOutcome::new(started);
    let (status, error) = match res {
        Ok(None) => (StepStatus::Success, None),
        Ok(Some(e)) | Err(Halt::Failed(e)) => (StepStatus::Failed, Some(e)),
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

/// Resolve the repository directory: inside the workspace after following symlinks.
fn repo_dir(ws: &Path, rel: &Path) -> Result<PathBuf, String> {
    let shown = if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.display().to_string()
    };
    let real = ws
        .join(rel)
        .canonicalize()
        .map_err(|e| format!("repository_path `{shown}` is not usable: {e}"))?;
    if !real.starts_with(ws) {
        return Err(format!(
            "repository_path `{shown}` resolves to `{}`, outside the workspace",
            real.display()
        ));
    }
    if !real.is_dir() {
        return Err(format!("repository_path `{shown}` is not a directory"));
    }
    Ok(real)
}

/// A `files` entry must not lead outside the workspace through a symlink.
/// The last component is not followed (git adds a symlink as a link).
fn check_file(ws: &Path, repo: &Path, file: &str) -> Result<(), String> {
    let joined = repo.join(file);
    let mut probe: Option<&Path> = joined.parent();
    // The nearest existing ancestor decides (the file itself may be deleted or a pattern).
    while let Some(p) = probe {
        if p.exists() {
            let real = p
                .canonicalize()
                .map_err(|e| format!("`files` entry `{file}` is not usable: {e}"))?;
            if !real.starts_with(ws) {
                return Err(format!(
                    "`files` entry `{file}` resolves outside the workspace (through `{}`)",
                    real.display()
                ));
            }
            return Ok(());
        }
        probe = p.parent();
    }
    Err(format!("`files` entry `{file}` is not usable"))
}

/// The step's own environment: `GIT_*` variables other than identity ones are refused.
fn step_env(ctx: &StepContext, step: &Step) -> Result<Vec<(String, String)>, String> {
    let env = ctx.child_env(step);
    if let Some((k, _)) = env
        .iter()
        .find(|(k, _)| k.starts_with("GIT_") && !KEPT_GIT_VARS.contains(&k.as_str()))
    {
        return Err(format!(
            "step env `{k}` would change how plangate runs git; only {} may be set",
            KEPT_GIT_VARS.join(", ")
        ));
    }
    Ok(env)
}

/// Inherited `GIT_*` variables that must not reach git (those plangate sets itself are
/// replaced, not removed: see [`Git::spec`]).
fn inherited_git_vars() -> Vec<String> {
    let mut v: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("GIT_") && !KEPT_GIT_VARS.contains(&k.as_str()))
        .collect();
    v.sort();
    v
}

/// Read the repository's configuration for drivers and remote programs.
/// Returns overrides, and an error when a push or pull would run a configured program.
fn neutralise(
    dump: &[u8],
    network: bool,
    trailers: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut overrides: Vec<(String, String)> = Vec::new();
    let mut filters: BTreeSet<String> = BTreeSet::new();
    let mut required: BTreeSet<String> = BTreeSet::new();
    let mut merges: BTreeSet<String> = BTreeSet::new();
    for rec in dump.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        let (key, value) = rec.split_once('\n').unwrap_or((&rec, "true"));
        let (Some(first), Some(last)) = (key.find('.'), key.rfind('.')) else {
            continue;
        };
        if first == last {
            if key == "core.alternaterefscommand" && network {
                return Err("the repository sets core.alternateRefsCommand, a program git would run; plangate refuses to push or pull here".to_owned());
            }
            continue;
        }
        let (section, name, var) = (&key[..first], &key[first + 1..last], &key[last + 1..]);
        match (section, var) {
            ("filter", "clean" | "smudge" | "process") => {
                filters.insert(name.to_owned());
            }
            ("filter", "required") if matches!(value, "true" | "yes" | "on" | "1") => {
                required.insert(name.to_owned());
            }
            ("merge", "driver") => {
                merges.insert(name.to_owned());
            }
            ("trailer", "cmd" | "command") if trailers => {
                return Err(format!(
                    "the repository sets trailer.{name}.{var}, a program `git commit --trailer` would run; plangate refuses"
                ));
            }
            ("remote", "vcs" | "uploadpack" | "receivepack") if network => {
                return Err(format!(
                    "remote `{name}` sets remote.{name}.{var}, a program git would run; plangate refuses to push or pull with it"
                ));
            }
            _ => {}
        }
    }
    for name in &filters {
        for var in ["clean", "smudge", "process"] {
            overrides.push((format!("filter.{name}.{var}"), String::new()));
        }
        if !required.contains(name) {
            warnings.push(format!(
                "filter driver `{name}` is disabled (plangate runs no configured programs): files using it are read and written unfiltered"
            ));
        }
    }
    for name in &merges {
        overrides.push((format!("merge.{name}.driver"), String::new()));
    }
    Ok(overrides)
}

/// The step's work; `Ok(Some(error))` is a failure that still has a full result.
async fn go(
    a: &GitAction,
    step: &Step,
    ctx: &StepContext,
    f: &mut Findings,
) -> Result<Option<String>, Halt> {
    let p = &a.params;
    let op = p.operation;
    let ws = &ctx.env.workspace;
    let deadline = Instant::now() + step.timeout;
    let cwd = repo_dir(ws, &a.repo).map_err(Halt::Failed)?;
    for file in &p.files {
        check_file(ws, &cwd, file).map_err(Halt::Failed)?;
    }
    let mut env = step_env(ctx, step).map_err(Halt::Failed)?;
    let fixed = fixed_env(ws.parent().unwrap_or(ws));
    let unset = inherited_git_vars();
    env.extend(fixed);
    let mut git = Git {
        ctx,
        cwd,
        deadline,
        env,
        config: CONFIG
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        unset,
    };
    let argv = args::argv(p);
    f.command = std::iter::once("git".to_owned())
        .chain(std::iter::once("--no-pager".to_owned()))
        .chain(argv.iter().cloned())
        .collect();
    let mut run_argv: Vec<String> = argv.clone();
    // What the result shows: no credentials of a URL written in `args`.
    for c in &mut f.command {
        *c = hide_userinfo(c);
    }

    // The repository: a work tree whose top level and git directories are inside the workspace.
    let probe = git
        .aux(&[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ])
        .await?;
    if probe.code != 0 {
        return Err(Halt::Failed(format!(
            "repository_path `{}` is not inside a git work tree: {}",
            shown(&a.repo),
            probe.first_error()
        )));
    }
    let text = String::from_utf8_lossy(&probe.stdout).into_owned();
    for (what, path) in ["top level", "git directory", "common git directory"]
        .iter()
        .zip(text.lines())
    {
        let real = Path::new(path)
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from(path));
        if !real.starts_with(ws) {
            return Err(Halt::Failed(format!(
                "the repository's {what} `{}` is outside the workspace; plangate only runs git on repositories inside it",
                real.display()
            )));
        }
    }

    // Drivers and remote programs named by the configuration.
    let network = matches!(op, GitOperation::Push | GitOperation::Pull);
    let dump = git
        .aux(&[
            "config",
            "--null",
            "--get-regexp",
            r"^(filter|merge|remote)\.|^core\.alternaterefscommand$|^branch\..*\.(pushremote|remote)$|^trailer\..*\.(cmd|command)$",
        ])
        .await?;
    let trailers = op == GitOperation::Commit
        && p.args
            .iter()
            .any(|x| x == "--trailer" || x.starts_with("--trailer="));
    let overrides =
        neutralise(&dump.stdout, network, trailers, &mut f.warnings).map_err(Halt::Failed)?;
    git.config.extend(overrides);

    let read_only = args::is_read_only(p) || args::is_dry_run(p);
    let before = if read_only {
        None
    } else {
        Some(git.status().await?)
    };
    f.head_before = before.as_ref().and_then(|b| b.status.head.clone());

    if op == GitOperation::Push {
        if let Some(e) = default_branch_check(&git, a, step).await? {
            return Ok(Some(e));
        }
        let branch = before.as_ref().and_then(|b| b.status.branch.as_deref());
        if let Some(flag) = local_receive_pack(&git, a, &dump.stdout, branch).await? {
            f.command.insert(3, flag.clone());
            run_argv.insert(1, flag);
        }
    }

    // The operation itself.
    let out_rel = format!("{}/stdout.txt", ctx.artifacts_rel);
    let err_rel = format!("{}/stderr.txt", ctx.artifacts_rel);
    let spec = git.spec(
        &run_argv,
        Capture::File {
            path: ctx.out_dir.join(&out_rel),
            cap: ctx.max_output_bytes,
        },
        Capture::File {
            path: ctx.out_dir.join(&err_rel),
            cap: ctx.max_output_bytes,
        },
        read_only,
    );
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
    let stdout = String::from_utf8_lossy(&stdout_bytes);
    let stderr_bytes = read_prefix(&ctx.out_dir.join(&err_rel), keep);
    let stderr = String::from_utf8_lossy(&stderr_bytes).into_owned();
    f.output_truncated = out.stdout.truncated
        || out.stdout.kept > stdout_bytes.len() as u64
        || stdout.chars().count() > RESULT_TEXT_CHARS;
    f.output = stdout.chars().take(RESULT_TEXT_CHARS).collect();
    f.stderr = stderr.chars().take(RESULT_TEXT_CHARS).collect();
    let code = match out.termination {
        Termination::Exited(c) => c,
        Termination::Signaled(s) => {
            return Err(Halt::Failed(format!("git was killed by signal {s}")));
        }
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

    // The state after, and what changed.
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
    let mut failure =
        (code != 0).then(|| failure_message(a, code, &stdout, &stderr, &mut f.warnings));
    if failure.is_none() && op == GitOperation::Stash && stdout.contains("No local changes to save")
    {
        f.warnings.push("no local changes to stash".to_owned());
    }
    if let Some(before) = &before {
        let mut changed: BTreeSet<String> =
            status::changed_paths(before, &after).into_iter().collect();
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
        if op == GitOperation::Commit && failure.is_none() && h0 != h1 {
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
    }
    f.status = Some(after.status);
    if failure.is_none()
        && let Some(re) = step.expected_output.as_ref()
        && !super::expected_output_matches(re, &stdout)
    {
        failure = Some(format!(
            "stdout does not match expected_output `{}`",
            re.as_str()
        ));
    }
    Ok(failure)
}

/// `scheme://user:password@host/...` → `scheme://***@host/...` (anywhere in the text).
fn hide_userinfo(s: &str) -> String {
    let Some(i) = s.find("://") else {
        return s.to_owned();
    };
    let rest = &s[i + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{}://***{}", &s[..i], &rest[at..]),
        None => s.to_owned(),
    }
}

/// At most `limit` bytes from the start of a file.
fn read_prefix(path: &Path, limit: u64) -> Vec<u8> {
    use std::io::Read;
    let mut buf = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(limit).read_to_end(&mut buf);
    }
    buf
}

fn shown(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.display().to_string()
    }
}

/// How git runs the receiving side of a push to a repository on this machine:
/// with that repository's hooks switched off too.
const LOCAL_RECEIVE_PACK: &str = "--receive-pack=git -c core.hooksPath=/dev/null receive-pack";

/// Whether a remote URL is a path on this machine (git's own rule: `file://`, or no
/// `scheme://` and no `host:` before the first slash).
fn is_local_url(url: &str) -> bool {
    if url.starts_with("file://") {
        return true;
    }
    if url.contains("://") {
        return false;
    }
    match (url.find(':'), url.find('/')) {
        (None, _) => true,
        (Some(c), Some(s)) => s < c,
        (Some(_), None) => false,
    }
}

/// The remote a push without a repository argument goes to (git's order:
/// `branch.<b>.pushRemote`, `remote.pushDefault`, `branch.<b>.remote`, `origin`).
fn default_push_remote(dump: &[u8], branch: Option<&str>) -> String {
    let mut keys: Vec<(String, String)> = Vec::new();
    for rec in dump.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        if let Some((k, v)) = rec.split_once('\n') {
            keys.push((k.to_owned(), v.to_owned()));
        }
    }
    let get = |k: &str| {
        keys.iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    branch
        .and_then(|b| get(&format!("branch.{b}.pushremote")))
        .or_else(|| get("remote.pushdefault"))
        .or_else(|| branch.and_then(|b| get(&format!("branch.{b}.remote"))))
        .unwrap_or_else(|| "origin".to_owned())
}

/// A push to a repository on this machine runs that repository's
/// `receive-pack` here, hooks included: plangate runs it with hooks off
/// (the flag to add). A push that mixes local and network URLs is refused.
async fn local_receive_pack(
    git: &Git<'_>,
    a: &GitAction,
    dump: &[u8],
    branch: Option<&str>,
) -> Result<Option<String>, Halt> {
    let t = args::push_target_of(&a.params);
    let remote = t
        .remote
        .unwrap_or_else(|| default_push_remote(dump, branch));
    let looks_like_url = remote.contains(['/', ':']) || remote.starts_with('.');
    let urls: Vec<String> = if looks_like_url {
        vec![remote]
    } else {
        let got = git
            .aux(&["remote", "get-url", "--push", "--all", &remote])
            .await?;
        if got.code == 0 {
            String::from_utf8_lossy(&got.stdout)
                .lines()
                .map(str::to_owned)
                .collect()
        } else {
            // Not a configured remote: git reads the name as a path.
            vec![remote]
        }
    };
    let local = urls.iter().filter(|u| is_local_url(u)).count();
    if local == 0 {
        return Ok(None);
    }
    if local < urls.len() {
        return Err(Halt::Failed(
            "the push URLs mix repositories on this machine and on the network; plangate cannot switch off the local ones' hooks alone".to_owned(),
        ));
    }
    Ok(Some(LOCAL_RECEIVE_PACK.to_owned()))
}

/// One line saying why git failed.
fn failure_message(
    a: &GitAction,
    code: i32,
    stdout: &str,
    stderr: &str,
    warnings: &mut Vec<String>,
) -> String {
    let op = a.params.operation;
    if op == GitOperation::Commit
        && [
            "nothing to commit",
            "nothing added to commit",
            "no changes added to commit",
        ]
        .iter()
        .any(|m| stdout.contains(m))
    {
        warnings.push("nothing to commit".to_owned());
        return "nothing to commit: no changes are staged (stage them with an `add` step, list them in `files`, or pass `args: [--all]`)".to_owned();
    }
    if op == GitOperation::Diff && code == 1 && stderr.trim().is_empty() {
        return "git diff found differences (exit 1 with --exit-code/--quiet)".to_owned();
    }
    let why = first_error_line(stderr);
    let why = if why.is_empty() {
        first_error_line(stdout)
    } else {
        why
    };
    format!("git {} failed (exit {code}): {why}", op.as_str())
}

/// A push to the remote's own default branch (`refs/remotes/<remote>/HEAD`) is
/// dangerous even when its name is not main/master; the classifier cannot read
/// the repository, so the step must say so itself (`risk_level: dangerous`).
async fn default_branch_check(
    git: &Git<'_>,
    a: &GitAction,
    step: &Step,
) -> Result<Option<String>, Halt> {
    let v = args::classify(&a.params);
    if v.risk >= Risk::Dangerous
        || step.declared_risk >= Risk::Dangerous
        || args::is_dry_run(&a.params)
    {
        return Ok(None);
    }
    let t = args::push_target_of(&a.params);
    let Some(remote) = t.remote.as_deref() else {
        return Ok(None);
    };
    if remote.contains(['/', ':']) || remote.starts_with('.') {
        return Ok(None);
    }
    let head_ref = format!("refs/remotes/{remote}/HEAD");
    let sym = git.aux(&["symbolic-ref", "-q", &head_ref]).await?;
    if sym.code != 0 {
        return Ok(None);
    }
    let target = String::from_utf8_lossy(&sym.stdout).trim().to_owned();
    let prefix = format!("refs/remotes/{remote}/");
    let Some(default) = target.strip_prefix(&prefix) else {
        return Ok(None);
    };
    if t.branches.iter().any(|b| b == default) {
        return Ok(Some(format!(
            "this push updates `{default}`, the default branch of `{remote}` ({head_ref}): declare `risk_level: dangerous` on the step (then it needs --risk-tolerance high or --approve)"
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutralise_empties_drivers_and_refuses_remote_programs() {
        let dump = b"filter.lfs.clean\ngit-lfs clean -- %f\0filter.lfs.required\ntrue\0filter.strip.clean\nnbstripout\0merge.ours.driver\ntrue\0remote.origin.url\n/x\0";
        let mut w = Vec::new();
        let o = neutralise(dump, false, false, &mut w).unwrap_or_default();
        assert!(o.contains(&("filter.lfs.clean".to_owned(), String::new())));
        assert!(o.contains(&("filter.lfs.process".to_owned(), String::new())));
        assert!(o.contains(&("filter.strip.smudge".to_owned(), String::new())));
        assert!(o.contains(&("merge.ours.driver".to_owned(), String::new())));
        assert_eq!(w.len(), 1, "only the optional filter warns: {w:?}");
        assert!(w[0].contains("`strip`"));
        let bad = b"remote.origin.uploadpack\ntouch /tmp/x; git-upload-pack\0";
        assert!(neutralise(bad, true, false, &mut Vec::new()).is_err());
        assert!(
            neutralise(bad, false, false, &mut Vec::new()).is_ok(),
            "irrelevant without network"
        );
        assert!(
            neutralise(
                b"core.alternaterefscommand\nx\0",
                true,
                false,
                &mut Vec::new()
            )
            .is_err()
        );
        let t = b"trailer.sign.cmd\nsh x\0";
        assert!(neutralise(t, false, true, &mut Vec::new()).is_err());
        assert!(neutralise(t, false, false, &mut Vec::new()).is_ok());
        // Subsection names may hold dots.
        let o =
            neutralise(b"filter.a.b.clean\nx\0", false, false, &mut Vec::new()).unwrap_or_default();
        assert!(o.contains(&("filter.a.b.clean".to_owned(), String::new())));
    }

    #[test]
    fn local_urls_and_default_push_remote() {
        for u in [
            "/srv/r.git",
            "../r.git",
            "r.git",
            "file:///srv/r",
            "./a:b",
            "C",
        ] {
            assert!(is_local_url(u), "{u}");
        }
        for u in [
            "https://h/r.git",
            "ssh://h/r",
            "git@github.com:o/r.git",
            "h:r",
        ] {
            assert!(!is_local_url(u), "{u}");
        }
        let dump =
            b"remote.pushdefault\nmirror\0branch.dev.remote\nup\0branch.dev.pushremote\nfork\0";
        assert_eq!(default_push_remote(dump, Some("dev")), "fork");
        assert_eq!(default_push_remote(dump, Some("other")), "mirror");
        assert_eq!(
            default_push_remote(b"branch.dev.remote\nup\0", Some("dev")),
            "up"
        );
        assert_eq!(default_push_remote(b"", None), "origin");
    }

    #[test]
    fn credentials_in_urls_are_hidden() {
        assert_eq!(
            hide_userinfo("https://x-access-token:ghp_abc@github.com/o/r.git"),
            "https://***@github.com/o/r.git"
        );
        assert_eq!(
            hide_userinfo("--repo=https://tok@h/r"),
            "--repo=https://***@h/r"
        );
        assert_eq!(hide_userinfo("https://h/r@x"), "https://h/r@x");
        assert_eq!(
            hide_userinfo("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert_eq!(hide_userinfo("main"), "main");
    }

    #[test]
    fn first_error_line_prefers_fatal() {
        assert_eq!(
            first_error_line("hint: x\nwarning: w\nfatal: not a git repository\n"),
            "not a git repository"
        );
        assert_eq!(first_error_line("\n\nsomething\n"), "something");
        assert_eq!(first_error_line(""), "");
    }
}
