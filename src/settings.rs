//! Every setting of a command, resolved once, into typed values.
//!
//! Precedence, highest first (the only place it is written down):
//!
//! 1. a command-line flag;
//! 2. its `PLANGATE_*` environment variable (clap reads it when the flag is
//!    absent: `cli.rs` declares the pair, so 1 and 2 arrive here as one value);
//! 3. the plan's `policy:` block;
//! 4. the built-in default;
//!
//! and then the maintainers' `--policy` file **caps** the result: it can make
//! any value stricter (lower tolerance, fewer parallel steps, smaller budgets,
//! a narrower host list, its permission rules, its own `env_passthrough`
//! list in place of the plan's), never looser; a flag or the
//! plan loosening a value the file pins is lowered back and said so
//! (`policy.capped`). The capping rules themselves are pure policy logic in
//! [`crate::policy::cap`]. `--fail-on-secrets false` beats the plan, but not a
//! policy file that pins `fail_on_secrets: true`. Likewise `fail_fast`:
//! `--no-fail-fast` (or `--fail-fast`, or `PLANGATE_FAIL_FAST=true|false`)
//! beats the plan's `policy.fail_fast`, whose default is true; a policy file's
//! `fail_fast: true` pins it (keeping going is no safety matter, but it runs
//! more unattended steps after a failure), its `fail_fast: false` changes
//! nothing.
//!
//! Settings outside the policy: the workspace is `--workspace` (or
//! `PLANGATE_WORKSPACE`), else the current directory; the output folder is
//! [`out_dir`] (`--out`, else the CI's temporary folder, else
//! `WORKSPACE/.plangate/runs/RUN_ID`), kept out of git by [`hide_from_git`];
//! the GitHub token is `--github-token` (or `PLANGATE_GITHUB_TOKEN`) and is
//! handed to the redaction layer at once; so is the GitLab token
//! ([`gitlab`]: `--gitlab-token`, else `GITLAB_TOKEN`, else `CI_JOB_TOKEN`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{DecisionArgs, GithubArgs, GitlabArgs};
use crate::model::Diagnostic;
use crate::model::EffectivePolicy;
use crate::plan::{self, Plan};
use crate::policy::cap::{Overrides, resolve};
use crate::policy::env::Scope;
use crate::tools::ToolEnv;

/// Run-only flags that feed the policy (`--max-parallel`, `--fail-on-secrets`,
/// `--fail-fast` / `--no-fail-fast`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunFlags {
    pub max_parallel: Option<u32>,
    pub fail_on_secrets: Option<bool>,
    pub fail_fast: Option<bool>,
}

/// What `run`, `validate` and `draft` share: the checked plan, the
/// workspace, the policy in force, the approvals.
pub(crate) struct PlanSettings {
    pub plan: Plan,
    pub env: ToolEnv,
    pub policy: EffectivePolicy,
    pub approvals: BTreeSet<String>,
    /// The inputs' values ([`inputs`]; empty until the command resolves them).
    pub inputs: std::collections::BTreeMap<String, plan::inputs::InputValue>,
    /// What was done to the untrusted inputs ([`untrusted_inputs`]).
    pub untrusted: std::collections::BTreeMap<String, crate::model::UntrustedText>,
}

/// The plan's input values: `--input`, else `PLANGATE_INPUT_<NAME>` in
/// plangate's environment, else the default (`plan::inputs::resolve`).
pub(crate) fn inputs(
    args: &crate::cli::InputArgs,
    plan: &Plan,
) -> Result<std::collections::BTreeMap<String, plan::inputs::InputValue>, Vec<Diagnostic>> {
    plan::inputs::resolve(&plan.inputs, &args.input, &crate::process::own_env())
}

/// The untrusted inputs made safe (`plan::event::apply`): `from_event` ones
/// filled from the CI event (GitHub's `GITHUB_EVENT_PATH` payload, read here;
/// GitLab's merge request variables) or withheld, `untrusted` ones sanitised.
pub(crate) fn untrusted_inputs(
    plan: &Plan,
    values: &mut std::collections::BTreeMap<String, plan::inputs::InputValue>,
) -> std::collections::BTreeMap<String, crate::model::UntrustedText> {
    if !plan
        .inputs
        .values()
        .any(|d| d.untrusted || d.from_event.is_some())
    {
        return std::collections::BTreeMap::new();
    }
    let env = crate::process::own_env();
    let mut event = plan::event::EventSource::default();
    if let Some(path) = env.get("GITHUB_EVENT_PATH").filter(|p| !p.is_empty()) {
        match crate::regular::read_to_string(std::path::Path::new(path)) {
            Ok(text) => match serde_json::from_str(&text) {
                Ok(v) => event.github = Some(v),
                Err(e) => {
                    event.github_error = Some(format!(
                        "the event payload (GITHUB_EVENT_PATH) is not JSON: {e}"
                    ));
                }
            },
            Err(e) => {
                event.github_error = Some(format!(
                    "cannot read the event payload (GITHUB_EVENT_PATH): {e}"
                ));
            }
        }
    } else if env.get("GITLAB_CI").is_some_and(|v| v == "true") {
        event.gitlab = Some(
            ["CI_MERGE_REQUEST_TITLE", "CI_MERGE_REQUEST_DESCRIPTION"]
                .iter()
                .filter_map(|k| env.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect(),
        );
    }
    plan::event::apply(&plan.inputs, values, &event)
}

/// A problem with the command line, as a diagnostic of `<command line>`.
pub(crate) fn usage_diag(msg: String, help: &str) -> Diagnostic {
    Diagnostic {
        file: "<command line>".into(),
        line: 0,
        column: 0,
        message: msg,
        help: Some(help.into()),
    }
}

/// The workspace: `--workspace`, else the current directory; canonical.
pub(crate) fn workspace(args: &DecisionArgs) -> Result<PathBuf, Diagnostic> {
    let raw = args.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
    let ws = raw.canonicalize().map_err(|e| {
        usage_diag(
            format!("workspace `{}` is not usable: {e}", raw.display()),
            "pass an existing directory with --workspace (or PLANGATE_WORKSPACE)",
        )
    })?;
    if !ws.is_dir() {
        return Err(usage_diag(
            format!("workspace `{}` is not a directory", raw.display()),
            "pass an existing directory with --workspace",
        ));
    }
    Ok(ws)
}

/// A run's output folder and who chose it ([`out_dir`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutDir {
    /// The run folder.
    pub path: PathBuf,
    /// Who chose it.
    pub origin: OutOrigin,
}

/// Who chose the output folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutOrigin {
    /// `--out` (or `PLANGATE_OUT`).
    Flag,
    /// The CI job's temporary folder ([`ci_temp`]).
    CiTemp,
    /// `WORKSPACE/.plangate/runs/RUN_ID`.
    Workspace,
}

/// The output folder of a run, the one place it is decided:
///
/// 1. `--out` / `PLANGATE_OUT` (relative to `cwd`);
/// 2. on a CI runner that has one, the job's temporary folder
///    ([`ci_temp`]): `TEMP/plangate/runs/RUN_ID`, outside the checkout, so
///    git never sees it;
/// 3. `WORKSPACE/.plangate/runs/RUN_ID` ([`crate::format::paths::runs_folder`]).
///
/// `env` reads plangate's environment (a parameter, for the tests).
pub(crate) fn out_dir(
    out: Option<&Path>,
    cwd: &Path,
    workspace: &Path,
    run_id: &str,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> OutDir {
    let (path, origin) = match out {
        Some(o) if o.is_absolute() => (o.to_owned(), OutOrigin::Flag),
        Some(o) => (cwd.join(o), OutOrigin::Flag),
        None => match ci_temp(env) {
            Some(t) => (
                t.join("plangate").join("runs").join(run_id),
                OutOrigin::CiTemp,
            ),
            None => (
                crate::format::paths::runs_folder(workspace).join(run_id),
                OutOrigin::Workspace,
            ),
        },
    };
    OutDir { path, origin }
}

/// The CI job's temporary folder, when plangate runs on a runner that gives
/// one and it is an existing absolute directory:
///
/// - GitHub Actions (`GITHUB_ACTIONS=true`): `RUNNER_TEMP`, emptied at the
///   start and end of every job;
/// - GitLab CI (`GITLAB_CI=true`): `RUNNER_TEMP_PROJECT_DIR`, the job's
///   temporary folder GitLab Runner keeps beside the checkout
///   (`${CI_PROJECT_DIR}.tmp`, where it writes file-type variables). GitLab
///   Runner sets it although GitLab's table of predefined variables does not
///   list it; when it is missing the workspace default applies. GitLab uploads
///   `artifacts:paths` only from inside `CI_PROJECT_DIR`: a job that keeps the
///   run folder as an artifact passes `--out` (the component does).
fn ci_temp(env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let on = |k: &str| env(k).is_some_and(|v| v == "true");
    let dir = |k: &str| {
        env(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.is_dir())
    };
    if on("GITHUB_ACTIONS")
        && let Some(d) = dir("RUNNER_TEMP")
    {
        return Some(d);
    }
    if on("GITLAB_CI") {
        return dir("RUNNER_TEMP_PROJECT_DIR");
    }
    None
}

/// What plangate writes in a `.gitignore` of a folder it owns whole.
const IGNORE_ALL: &str =
    "# Written by plangate: this folder holds its output; git ignores all of it.\n*\n";

/// Keep the run folder out of git without the user editing a `.gitignore`:
/// creates it (when it can: the report writer says why not) and, when it
/// lies inside the workspace, writes a `.gitignore`
/// holding `*` in the folder plangate owns around it
/// ([`crate::format::paths::own_folder`]: `.plangate/runs/` for the default,
/// the `--out` folder itself otherwise), unless one is there. A folder outside
/// the workspace (a CI temporary folder, `--out` elsewhere) gets none; nor
/// does an `--out` that is the workspace or holds it.
pub(crate) fn hide_from_git(out: &OutDir, workspace: &Path) -> Result<(), String> {
    let shown = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    if std::fs::create_dir_all(&out.path).is_err() {
        // The report writer says why the folder cannot be used.
        return Ok(());
    }
    let root = match out.origin {
        OutOrigin::CiTemp => return Ok(()),
        OutOrigin::Workspace => crate::format::paths::own_folder(&out.path, workspace),
        OutOrigin::Flag => {
            let real = out.path.canonicalize().map_err(|e| shown(&out.path, e))?;
            if real == workspace || !real.starts_with(workspace) {
                return Ok(());
            }
            out.path.clone()
        }
    };
    ignore_whole(&root).map_err(|e| shown(&root.join(".gitignore"), e))
}

/// Write `folder/.gitignore` holding `*` unless the folder has one.
pub(crate) fn ignore_whole(folder: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::create_dir_all(folder)?;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(folder.join(".gitignore"))
    {
        Ok(mut f) => f.write_all(IGNORE_ALL.as_bytes()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// `--kill-grace`: seconds between 0 and 600.
pub(crate) fn kill_grace(secs: f64) -> Result<Duration, Diagnostic> {
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= Duration::from_secs(600) => Ok(d),
        _ => Err(usage_diag(
            format!("--kill-grace {secs} is not a number of seconds between 0 and 600"),
            "e.g. --kill-grace 5",
        )),
    }
}

/// `--heartbeat`: seconds between 0 (off) and 3600.
pub(crate) fn heartbeat(secs: f64) -> Result<Option<Duration>, Diagnostic> {
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d.is_zero() => Ok(None),
        Ok(d) if d <= Duration::from_secs(3600) => Ok(Some(d.max(Duration::from_millis(100)))),
        _ => Err(usage_diag(
            format!("--heartbeat {secs} is not a number of seconds between 0 and 3600"),
            "e.g. --heartbeat 30, or 0 for none",
        )),
    }
}

/// The `--approve` ids, each checked against the plan's steps and templates.
fn approvals(args: &DecisionArgs, plan: &Plan) -> Result<BTreeSet<String>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut approvals = BTreeSet::new();
    for id in args
        .approve
        .iter()
        .flat_map(|s| crate::selection::split_list(s))
        .filter(|s| !s.is_empty())
    {
        if plan.index_of(id).is_none() && !plan.steps.iter().any(|s| s.template == id) {
            let ids = plan.steps.iter().map(|s| s.id.as_str());
            let hint = match plan::diag::did_you_mean(id, ids) {
                Some(s) => format!("did you mean `{s}`?"),
                None => "approve the id of a step of this plan".to_owned(),
            };
            diags.push(usage_diag(
                format!(
                    "--approve names `{id}`, which is not a step of plan `{}`",
                    plan.id
                ),
                &hint,
            ));
        }
        approvals.insert(id.to_owned());
    }
    if diags.is_empty() {
        Ok(approvals)
    } else {
        Err(diags)
    }
}

impl PlanSettings {
    /// Load and check the plan and the `--policy` file, and resolve the
    /// policy in force (the precedence above).
    pub(crate) fn resolve(
        plan_path: &Path,
        args: &DecisionArgs,
        flags: RunFlags,
    ) -> Result<PlanSettings, Vec<Diagnostic>> {
        let workspace = workspace(args).map_err(|d| vec![d])?;
        let plan = plan::load_plan_file(plan_path);
        let cap = args.policy.as_deref().map(plan::load_policy_file);
        let (plan, cap) = match (plan, cap.transpose()) {
            (Ok(p), Ok(c)) => (p, c),
            (p, c) => {
                let mut diags = c.err().unwrap_or_default();
                diags.extend(p.err().unwrap_or_default());
                return Err(diags);
            }
        };
        let approvals = approvals(args, &plan)?;
        let mut policy = resolve(
            &plan.policy,
            Overrides {
                risk_tolerance: args.risk_tolerance.map(Into::into),
                max_parallel: flags.max_parallel,
                fail_on_secrets: flags.fail_on_secrets,
                fail_fast: flags.fail_fast,
            },
            cap.as_ref(),
        );
        policy.cap_file = args.policy.as_deref().map(|p| p.display().to_string());
        let hosts = plan::check_allowed_hosts(&plan, policy.allowed_hosts.as_deref());
        if !hosts.is_empty() {
            return Err(hosts);
        }
        // The sandbox pre-flight runs only when a step runs processes.
        let sandbox = plan
            .steps
            .iter()
            .any(crate::tools::step::Step::runs_processes)
            .then(|| crate::sandbox::preflight(args.sandbox_backend));
        if let Some(a) = &sandbox {
            let missing: Vec<String> = a
                .properties
                .iter()
                .filter(|(_, v)| v.as_str() != crate::model::sandbox::ENFORCED)
                .map(|(k, v)| format!("{k} ({v})"))
                .collect();
            if !missing.is_empty() {
                crate::output::warning(format_args!(
                    "the {} sandbox does not enforce everything here: {}; steps that depend on it are not auto-approved",
                    a.available,
                    missing.join(", ")
                ));
            }
        }
        let env = ToolEnv {
            workspace,
            home: crate::environ::var_os("HOME").map(PathBuf::from),
            allowed_hosts: policy.allowed_hosts.clone(),
            secret_hosts: crate::policy::hosts::SecretHosts {
                any: policy.file_hosts.clone(),
                by_name: policy.secret_hosts.clone(),
            },
            sandbox,
            scope: scoped_env(&plan, &policy),
            git_supply: std::sync::Arc::default(),
        };
        Ok(PlanSettings {
            plan,
            env,
            policy,
            approvals,
            inputs: std::collections::BTreeMap::new(),
            untrusted: std::collections::BTreeMap::new(),
        })
    }
}

/// What steps' processes get from plangate's environment (`policy::env`);
/// every secret value in it (declared by a step or agent, or named like a
/// credential) is handed to the redaction layer now, before the first step.
fn scoped_env(plan: &Plan, policy: &EffectivePolicy) -> Arc<Scope> {
    let scope = Scope::new(crate::process::own_env(), &policy.env_passthrough);
    let declared: BTreeSet<String> = plan
        .steps
        .iter()
        .flat_map(crate::plan::Step::secret_names)
        .collect();
    crate::redact::remember_secrets(scope.secret_values(&declared));
    Arc::new(scope)
}

/// `--github-*`, `--comment`, `--check-run`. The token is remembered by the
/// redaction layer at once, so it is replaced wherever it would show up.
pub(crate) fn github(args: &GithubArgs) -> crate::github::Settings {
    let token = args
        .github_token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    if let Some(t) = &token {
        crate::redact::remember([t.as_bytes().to_vec()]);
    }
    crate::github::Settings {
        token,
        api_url: args.github_api_url.clone(),
        comment: args.comment,
        check_run: args.check_run,
        push: false,
    }
}

/// `--gitlab-*` (with `--comment` and `--check-run`). The token is the flag
/// (or `PLANGATE_GITLAB_TOKEN`), else `GITLAB_TOKEN`, else `CI_JOB_TOKEN`;
/// it goes in `JOB-TOKEN` when it is the job's token (the value of
/// `CI_JOB_TOKEN`, or `glcbt-…`), else in `PRIVATE-TOKEN`. Every one found is
/// remembered by the redaction layer at once.
pub(crate) fn gitlab(args: &GitlabArgs, gh: &GithubArgs) -> crate::gitlab::Settings {
    gitlab_from(args, gh, &crate::environ::var)
}

fn gitlab_from(
    args: &GitlabArgs,
    gh: &GithubArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> crate::gitlab::Settings {
    use crate::gitlab::TokenKind;
    let clean = |t: Option<String>| t.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    let job = clean(env("CI_JOB_TOKEN"));
    let explicit = clean(args.gitlab_token.clone());
    let token = explicit
        .clone()
        .or_else(|| clean(env("GITLAB_TOKEN")))
        .or_else(|| job.clone());
    for t in [&token, &job].into_iter().flatten() {
        crate::redact::remember([t.as_bytes().to_vec()]);
    }
    let kind = match &token {
        Some(t) if job.as_ref() == Some(t) || t.starts_with("glcbt-") => TokenKind::Job,
        _ => TokenKind::Private,
    };
    crate::gitlab::Settings {
        token,
        kind,
        explicit: explicit.is_some(),
        api_url: args.gitlab_api_url.clone(),
        comment: gh.comment,
        status: gh.check_run,
        push: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn the_gitlab_token_is_the_flag_then_gitlab_token_then_the_job_token() {
        use crate::gitlab::TokenKind;
        let gh = GithubArgs {
            github_token: None,
            github_api_url: None,
            comment: true,
            check_run: false,
        };
        let at = |flag: Option<&str>, vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            let args = GitlabArgs {
                gitlab_token: flag.map(str::to_owned),
                gitlab_api_url: None,
            };
            let s = gitlab_from(&args, &gh, &|k| {
                vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
            });
            (s.token, s.kind, s.explicit)
        };
        let some = |t: &str| Some(t.to_owned());
        assert_eq!(at(None, &[]), (None, TokenKind::Private, false));
        assert_eq!(
            at(
                None,
                &[("CI_JOB_TOKEN", "jt"), ("GITLAB_TOKEN", " glpat-a\n")]
            )
            .0,
            some("glpat-a")
        );
        assert_eq!(
            at(None, &[("CI_JOB_TOKEN", "jt"), ("GITLAB_TOKEN", "glpat-a")]),
            (some("glpat-a"), TokenKind::Private, false)
        );
        assert_eq!(
            at(None, &[("CI_JOB_TOKEN", "jt"), ("GITLAB_TOKEN", "")]),
            (some("jt"), TokenKind::Job, false)
        );
        assert_eq!(
            at(Some("jt"), &[("CI_JOB_TOKEN", "jt")]),
            (some("jt"), TokenKind::Job, true)
        );
        assert_eq!(
            at(Some("glcbt-x"), &[]),
            (some("glcbt-x"), TokenKind::Job, true)
        );
        assert_eq!(
            at(Some("glpat-b"), &[("GITLAB_TOKEN", "glpat-a")]),
            (some("glpat-b"), TokenKind::Private, true)
        );
    }

    fn env_of(pairs: Vec<(&'static str, OsString)>) -> impl Fn(&str) -> Option<OsString> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_output_folder_is_the_flag_then_the_ci_temp_then_the_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().canonicalize().unwrap();
        let ws = Path::new("/w");
        let cwd = Path::new("/c");
        let at = |out: Option<&Path>, env: Vec<(&'static str, OsString)>| {
            out_dir(out, cwd, ws, "r1", &env_of(env))
        };
        let gh = |temp: &Path| {
            vec![
                ("GITHUB_ACTIONS", OsString::from("true")),
                ("RUNNER_TEMP", temp.as_os_str().to_owned()),
            ]
        };
        assert_eq!(
            at(Some(Path::new("o")), gh(&t)),
            OutDir {
                path: PathBuf::from("/c/o"),
                origin: OutOrigin::Flag
            }
        );
        assert_eq!(
            at(None, gh(&t)),
            OutDir {
                path: t.join("plangate/runs/r1"),
                origin: OutOrigin::CiTemp
            }
        );
        let local = OutDir {
            path: PathBuf::from("/w/.plangate/runs/r1"),
            origin: OutOrigin::Workspace,
        };
        // A RUNNER_TEMP that is missing, relative or not a folder, or not on Actions.
        assert_eq!(at(None, gh(&t.join("missing"))), local);
        assert_eq!(at(None, gh(Path::new("rel"))), local);
        assert_eq!(
            at(None, vec![("RUNNER_TEMP", t.as_os_str().to_owned())]),
            local
        );
        let gl = vec![
            ("GITLAB_CI", OsString::from("true")),
            ("RUNNER_TEMP_PROJECT_DIR", t.as_os_str().to_owned()),
        ];
        assert_eq!(at(None, gl).path, t.join("plangate/runs/r1"));
        assert_eq!(at(None, vec![("GITLAB_CI", OsString::from("true"))]), local);
        assert_eq!(at(None, Vec::new()), local);
    }

    #[test]
    fn a_gitignore_goes_where_plangate_owns_the_folder_inside_the_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ignore = |p: &Path| std::fs::read_to_string(p.join(".gitignore")).ok();
        let run = |path: PathBuf, origin| {
            hide_from_git(&OutDir { path, origin }, &ws).unwrap();
        };
        // The default: `.plangate/runs/.gitignore`, not `.plangate/` (agents.yaml stays visible).
        run(ws.join(".plangate/runs/r1"), OutOrigin::Workspace);
        assert!(ws.join(".plangate/runs/r1").is_dir());
        assert_eq!(
            ignore(&ws.join(".plangate/runs")).as_deref(),
            Some(IGNORE_ALL)
        );
        assert_eq!(ignore(&ws.join(".plangate")), None);
        // --out inside the workspace (through `..`): the folder itself.
        run(ws.join("sub/../out"), OutOrigin::Flag);
        assert_eq!(ignore(&ws.join("out")).as_deref(), Some(IGNORE_ALL));
        // One of the user's is left alone.
        std::fs::create_dir_all(ws.join("mine")).unwrap();
        std::fs::write(ws.join("mine/.gitignore"), "x\n").unwrap();
        run(ws.join("mine"), OutOrigin::Flag);
        assert_eq!(ignore(&ws.join("mine")).as_deref(), Some("x\n"));
        // Outside the workspace, the workspace itself, a CI folder: none.
        run(root.join("elsewhere"), OutOrigin::Flag);
        run(ws.clone(), OutOrigin::Flag);
        run(ws.join("ci"), OutOrigin::CiTemp);
        assert_eq!(ignore(&root.join("elsewhere")), None);
        assert_eq!(ignore(&ws), None);
        assert_eq!(ignore(&ws.join("ci")), None);
    }
}
