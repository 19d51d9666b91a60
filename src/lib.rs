//! plangate: run agent plans in CI with nobody at the keyboard.
//!
//! The pipeline: **plan** (load, schema-check, validate) → **policy**
//! (classify each step's risk, decide: auto-approved, pre-approved, denied,
//! blocked) → **engine** (run the dependency graph: process groups,
//! timeouts, capped output, rollback) → **events** → **report**
//! (`report.json`, artifact manifest, `audit.jsonl`, console lines).
//!
//! `plan` and `policy` are pure; `engine` and `tools` do the work;
//! only `report` and this file write to stdout or stderr.

pub mod cli;
pub mod diff;
pub mod draft;
pub mod engine;
pub mod github;
pub mod guard;
pub mod integrations;
pub mod markdown;
pub mod merge;
pub mod model;
pub mod plan;
pub mod policy;
pub mod process;
pub mod report;
pub mod resume;
pub mod sandbox;
pub mod scan;
pub mod secrets;
pub mod selection;
pub mod shard;
pub mod tools;
pub mod version;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use cli::{
    Cli, Command, DecisionArgs, DraftArgs, Format, ReportArgs, ReportFormat, RunArgs, ScanArgs,
    ScanFormat, SchemaArgs, ValidateArgs,
};
use engine::{RunSettings, StepDecision};
use model::Diagnostic;
use model::EffectivePolicy;
use model::RunStatus;
use plan::{Plan, Pos};
use policy::cap::{Overrides, resolve};
use report::console::Console;
use tools::ToolEnv;

/// Run a parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> u8 {
    match cli.command {
        Command::Run(args) => cmd_run(&args),
        Command::Validate(args) => cmd_validate(&args),
        Command::Schema(args) => cmd_schema(&args),
        Command::Draft(args) => cmd_draft(&args),
        Command::Scan(args) => cmd_scan(&args),
        Command::Report(args) => cmd_report(&args),
        Command::SandboxExec(args) => {
            err_line(&sandbox::exec(&args));
            126
        }
        Command::Shard(args) => cmd_shard(&args),
        Command::Merge(args) => cmd_merge(&args),
    }
}

/// Write to stderr through the redaction layer.
fn stderr_text(text: &str) {
    let _ = anstream::stderr()
        .lock()
        .write_all(report::redact::clean_str(text).as_bytes());
}

/// Write to stdout through the redaction layer.
fn stdout_bytes(bytes: &[u8]) -> std::io::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(&report::redact::clean(bytes))
}

fn err_line(msg: &str) {
    stderr_text(&format!("plangate: error: {msg}\n"));
}

fn print_diags(diags: &[Diagnostic]) {
    let mut text = String::new();
    for d in diags {
        text.push_str(&format!("{d}\n"));
    }
    text.push_str(&format!(
        "plangate: {} problem(s) found; nothing was executed\n",
        diags.len()
    ));
    stderr_text(&text);
}

fn usage_diag(msg: String, help: &str) -> Diagnostic {
    Diagnostic {
        file: "<command line>".into(),
        line: 0,
        column: 0,
        message: msg,
        help: Some(help.into()),
    }
}

/// What `run` and `validate` share: the checked plan, the workspace, the policy, the approvals.
struct Prepared {
    plan: Plan,
    env: ToolEnv,
    policy: EffectivePolicy,
    approvals: BTreeSet<String>,
}

fn workspace_of(args: &DecisionArgs) -> Result<PathBuf, Diagnostic> {
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

/// Run-only flags that feed the policy (`--max-parallel`, `--fail-on-secrets`).
#[derive(Debug, Clone, Copy, Default)]
struct RunFlags {
    max_parallel: Option<u32>,
    fail_on_secrets: Option<bool>,
}

fn prepare(
    plan_path: &Path,
    args: &DecisionArgs,
    flags: RunFlags,
) -> Result<Prepared, Vec<Diagnostic>> {
    let workspace = workspace_of(args).map_err(|d| vec![d])?;
    let mut diags = Vec::new();
    let plan = plan::load_plan_file(plan_path);
    let cap = match &args.policy {
        Some(p) => match plan::load_policy_file(p) {
            Ok(b) => Some(b),
            Err(d) => {
                diags.extend(d);
                None
            }
        },
        None => None,
    };
    let plan = match plan {
        Ok(p) => p,
        Err(d) => {
            diags.extend(d);
            return Err(diags);
        }
    };
    if !diags.is_empty() {
        return Err(diags);
    }
    let mut approvals = BTreeSet::new();
    for id in args
        .approve
        .iter()
        .flat_map(|s| selection::split_list(s))
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
    if !diags.is_empty() {
        return Err(diags);
    }
    let policy = resolve(
        &plan.policy,
        Overrides {
            risk_tolerance: args.risk_tolerance.map(Into::into),
            max_parallel: flags.max_parallel,
            fail_on_secrets: flags.fail_on_secrets,
        },
        cap.as_ref(),
    );
    let hosts = plan::check_allowed_hosts(&plan, policy.allowed_hosts.as_deref());
    if !hosts.is_empty() {
        return Err(hosts);
    }
    // The sandbox pre-flight runs only when a step asks for one.
    let sandbox = plan
        .steps
        .iter()
        .any(|s| s.sandbox().is_some())
        .then(|| sandbox::preflight(args.sandbox_backend));
    let env = ToolEnv {
        workspace,
        home: std::env::var_os("HOME").map(PathBuf::from),
        allowed_hosts: policy.allowed_hosts.clone(),
        sandbox,
    };
    Ok(Prepared {
        plan,
        env,
        policy,
        approvals,
    })
}

/// `--junit FILE`: the final report as JUnit XML, through the redaction layer.
/// Outputs derived from the final report.json: `--junit FILE` when asked,
/// and `gl-secret-detection-report.json` in the output folder (always: an
/// empty report is how GitLab learns that nothing leaked).
fn write_derived_outputs(junit: Option<&Path>, out_dir: &Path) {
    let report = std::fs::read_to_string(out_dir.join("report.json"))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<model::Report>(&t).map_err(|e| e.to_string()));
    let write = |path: &Path, text: Result<String, String>| {
        let written =
            text.and_then(|x| report::write_text_atomic(path, &x).map_err(|e| e.to_string()));
        if let Err(e) = written {
            stderr_text(&format!(
                "plangate: warning: cannot write {}: {e}\n",
                path.display()
            ));
        }
    };
    if let Some(junit) = junit {
        write(junit, report.clone().map(|r| report::render::junit(&r)));
    }
    write(
        &out_dir.join(GITLAB_SECRETS_FILE),
        report.map(|r| {
            serde_json::to_string_pretty(&report::render::gitlab_secret_detection(&r, out_dir))
                .unwrap_or_default()
                + "\n"
        }),
    );
}

/// GitLab's file name for `artifacts: reports: secret_detection:`.
pub const GITLAB_SECRETS_FILE: &str = "gl-secret-detection-report.json";

fn cmd_run(args: &RunArgs) -> u8 {
    let gh = github_settings(&args.github);
    let run_id = uuid::Uuid::now_v7().to_string();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let out_dir_for = |ws: &Path| match &args.out {
        Some(o) if o.is_absolute() => o.clone(),
        Some(o) => cwd.join(o),
        None => ws.join(".plangate").join("runs").join(&run_id),
    };
    let fail_invalid = |diags: &[Diagnostic], ws: &Path| {
        print_diags(diags);
        let out = out_dir_for(ws);
        match report::write_invalid(&out, &run_id, &args.plan, ws, diags) {
            Ok(p) => {
                stderr_text(&format!("report: {}\n", p.display()));
                write_derived_outputs(args.junit.as_deref(), &out);
                publish_ci(&out, &gh, args.quiet);
            }
            Err(e) => err_line(&format!(
                "cannot write the report to {}: {e}",
                out.display()
            )),
        }
        RunStatus::Invalid.code()
    };
    let flags = RunFlags {
        max_parallel: args.max_parallel,
        fail_on_secrets: args.fail_on_secrets,
    };
    let prepared = match prepare(&args.plan, &args.decision, flags) {
        Ok(p) => p,
        Err(diags) => {
            let ws = workspace_of(&args.decision).unwrap_or_else(|_| cwd.clone());
            return fail_invalid(&diags, &ws);
        }
    };
    let mut prepared = prepared;
    let mut shard_info = None;
    if let Some(spec) = &args.shard {
        match shard_plan(&prepared.plan, spec, args.timings.as_deref()) {
            Ok((sub, info)) => {
                prepared.plan = sub;
                shard_info = Some(info);
            }
            Err(msg) => {
                let d = usage_diag(
                    format!("--shard: {msg}"),
                    "use the shards `plangate shard` printed, with the same --timings file",
                );
                return fail_invalid(&[d], &prepared.env.workspace);
            }
        }
    }
    let selected = match &args.steps {
        Some(spec) => match selection::parse_steps(spec, &prepared.plan) {
            Ok(s) => Some(s),
            Err(msg) => {
                let d = usage_diag(
                    format!("--steps: {msg}"),
                    "use `3`, `2-5` or ids like `lint,test`",
                );
                return fail_invalid(&[d], &prepared.env.workspace);
            }
        },
        None => None,
    };
    let kill_grace = match Duration::try_from_secs_f64(args.kill_grace) {
        Ok(d) if d <= Duration::from_secs(600) => d,
        _ => {
            let d = usage_diag(
                format!(
                    "--kill-grace {} is not a number of seconds between 0 and 600",
                    args.kill_grace
                ),
                "e.g. --kill-grace 5",
            );
            return fail_invalid(&[d], &prepared.env.workspace);
        }
    };
    let workspace_head = diff::workspace_head(&prepared.env.workspace);
    let resume = match &args.resume {
        Some(path) => match resume::load(
            path,
            &prepared.plan,
            &prepared.env.workspace,
            workspace_head.as_deref(),
        ) {
            Ok(r) => Some(r),
            Err(d) => return fail_invalid(&[d], &prepared.env.workspace),
        },
        None => None,
    };
    let out_dir = out_dir_for(&prepared.env.workspace);
    let settings = Arc::new(RunSettings {
        run_id: run_id.clone(),
        env: prepared.env,
        out_dir,
        policy: prepared.policy,
        approvals: prepared.approvals,
        dry_run: args.dry_run,
        selected,
        max_output_bytes: args.max_output_bytes,
        kill_grace,
        workspace_head,
        resume,
        shard: shard_info,
    });
    let plan = Arc::new(prepared.plan);
    let mut console = Console::from_env();
    console.quiet = args.quiet;
    let out_dir = settings.out_dir.clone();
    let (code, finished) = execute(plan, settings, console);
    write_derived_outputs(args.junit.as_deref(), &out_dir);
    if finished {
        publish_ci(&out_dir, &gh, args.quiet);
    }
    code
}

/// The partition of `plan` into at most `jobs` shards, weighted by step
/// count or by the durations of the `timings` report.
fn partition_of(
    plan: &Plan,
    jobs: usize,
    timings: Option<&Path>,
) -> Result<shard::Partition, String> {
    let weights = match timings {
        None => vec![1; plan.steps.len()],
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read the timings report {}: {e}", p.display()))?;
            let r: model::Report = serde_json::from_str(&text)
                .map_err(|e| format!("{} is not a plangate report: {e}", p.display()))?;
            let t: std::collections::HashMap<String, u64> = r
                .steps
                .into_iter()
                .filter(|s| s.started_at.is_some())
                .map(|s| (s.id, s.duration_ms))
                .collect();
            let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
            shard::weights_from_timings(&ids, &t)
        }
    };
    let deps: Vec<Vec<usize>> = plan.steps.iter().map(|s| s.deps.clone()).collect();
    Ok(shard::partition(&plan.sha256, &deps, &weights, jobs))
}

/// `run --shard i/N`: the plan restricted to shard i, and the report's shard block.
fn shard_plan(
    plan: &Plan,
    spec: &str,
    timings: Option<&Path>,
) -> Result<(Plan, model::ShardInfo), String> {
    let (i, n) = shard::parse_shard(spec)?;
    let p = partition_of(plan, n, timings)?;
    if p.count != n {
        return Err(format!(
            "the plan has {} connected component(s), so it splits into {} shard(s), not {n}; run `plangate shard` and use the shards it prints",
            p.components, p.count
        ));
    }
    let keep: Vec<bool> = p.shard_of.iter().map(|&s| s == i - 1).collect();
    let steps = p.steps_of(i - 1);
    let info = model::ShardInfo {
        index: i,
        count: n,
        plan_sha256: plan.sha256.clone(),
        partition_sha256: p.sha256.clone(),
        plan_steps: plan.steps.len(),
        steps,
        merged: Vec::new(),
    };
    Ok((plan.restricted(&keep), info))
}

fn cmd_shard(args: &cli::ShardArgs) -> u8 {
    let plan = match plan::load_plan_file(&args.plan) {
        Ok(p) => p,
        Err(d) => {
            print_diags(&d);
            return RunStatus::Invalid.code();
        }
    };
    let p = match partition_of(&plan, args.jobs as usize, args.timings.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            err_line(&e);
            return RunStatus::Invalid.code();
        }
    };
    if p.components == 1 {
        stderr_text(&format!(
            "plangate: plan `{}` is one connected component ({} steps): it cannot be split, so it is one shard\n",
            plan.id,
            plan.steps.len()
        ));
    } else {
        stderr_text(&format!(
            "plangate: plan `{}`: {} steps in {} components -> {} shard(s)\n",
            plan.id,
            plan.steps.len(),
            p.components,
            p.count
        ));
    }
    let shards: Vec<serde_json::Value> = (0..p.count)
        .map(|s| {
            let ids: Vec<&str> = p
                .steps_of(s)
                .into_iter()
                .map(|i| plan.steps[i].id.as_str())
                .collect();
            json!({"index": s + 1, "shard": format!("{}/{}", s + 1, p.count), "steps": ids.len(), "weight": p.weights[s], "ids": ids})
        })
        .collect();
    let text = match args.format {
        cli::ShardFormat::Json => {
            let v = json!({
                "plan": {"id": plan.id, "path": plan.path.display().to_string(), "sha256": plan.sha256},
                "steps": plan.steps.len(),
                "components": p.components,
                "jobs": args.jobs,
                "count": p.count,
                "weighted_by": if args.timings.is_some() { "timings" } else { "steps" },
                "partition_sha256": p.sha256,
                "shards": shards,
            });
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        cli::ShardFormat::Github => {
            let include: Vec<serde_json::Value> = (0..p.count)
                .map(|s| json!({"shard": format!("{}/{}", s + 1, p.count), "index": s + 1, "steps": shards[s]["steps"]}))
                .collect();
            serde_json::to_string(&json!({"include": include})).unwrap_or_default() + "\n"
        }
        cli::ShardFormat::Gitlab => {
            let list: Vec<String> = (0..p.count)
                .map(|s| format!("\"{}/{}\"", s + 1, p.count))
                .collect();
            let template =
                serde_json::to_string(&args.gitlab_template).unwrap_or_else(|_| "\"\"".into());
            format!(
                "# Generated by `plangate shard`: plan `{}` (sha256 {}), {} steps in {} component(s), {} shard(s).\n\
                 include:\n  - local: {template}\n\n\
                 plangate-shard:\n  extends: .plangate-shard\n  parallel:\n    matrix:\n      - PLANGATE_SHARD: [{}]\n",
                plan.id,
                plan.sha256,
                plan.steps.len(),
                p.components,
                p.count,
                list.join(", ")
            )
        }
    };
    if let Err(e) = stdout_bytes(text.as_bytes()) {
        err_line(&format!("cannot write to stdout: {e}"));
        return 1;
    }
    0
}

fn cmd_merge(args: &cli::MergeArgs) -> u8 {
    let gh = github_settings(&args.github);
    let mut reports = Vec::with_capacity(args.reports.len());
    for p in &args.reports {
        let parsed = std::fs::read_to_string(p)
            .map_err(|e| format!("cannot read {}: {e}", p.display()))
            .and_then(|t| {
                serde_json::from_str::<model::Report>(&t)
                    .map_err(|e| format!("{} is not a plangate report: {e}", p.display()))
            });
        match parsed {
            Ok(r) => reports.push((p.clone(), r)),
            Err(e) => {
                err_line(&e);
                return RunStatus::Invalid.code();
            }
        }
    }
    let dirs: Vec<PathBuf> = args
        .reports
        .iter()
        .map(|p| p.parent().map(Path::to_path_buf).unwrap_or_default())
        .collect();
    let shard_index: Vec<usize> = reports
        .iter()
        .map(|(_, r)| r.shard.as_ref().map_or(0, |s| s.index))
        .collect();
    let merged = match merge::merge(reports, uuid::Uuid::now_v7().to_string()) {
        Ok(r) => r,
        Err(e) => {
            err_line(&format!("merge: {e}"));
            return RunStatus::Invalid.code();
        }
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        err_line(&format!("cannot create {}: {e}", args.out.display()));
        return RunStatus::Invalid.code();
    }
    // diff-summary.md: each shard's, under its heading, in shard order.
    let mut order: Vec<usize> = (0..dirs.len()).collect();
    order.sort_by_key(|&k| shard_index[k]);
    let mut summary = format!(
        "# Workspace changes ({} shards merged)\n\n",
        merged.shard.as_ref().map_or(0, |s| s.count)
    );
    for k in order {
        let text = std::fs::read_to_string(dirs[k].join("diff-summary.md"))
            .unwrap_or_else(|_| "_no diff summary in this shard's output_\n".into());
        summary.push_str(&format!("## Shard {}\n\n{text}\n", shard_index[k]));
    }
    let json = serde_json::to_string_pretty(&merged).unwrap_or_default() + "\n";
    for (name, text) in [
        ("report.json", json.as_str()),
        ("diff-summary.md", summary.as_str()),
    ] {
        if let Err(e) = report::write_text_atomic(&args.out.join(name), text) {
            err_line(&format!(
                "cannot write {}: {e}",
                args.out.join(name).display()
            ));
            return RunStatus::Invalid.code();
        }
    }
    write_derived_outputs(args.junit.as_deref(), &args.out);
    if !args.quiet {
        stderr_text(&format!(
            "plangate: merged {} shard report(s) of plan `{}`: {} steps, status {} (exit {})\nreport: {}\n",
            args.reports.len(),
            merged.plan.id.as_deref().unwrap_or("?"),
            merged.steps.len(),
            merged.status.as_str(),
            merged.exit_code,
            args.out.join("report.json").display()
        ));
    }
    publish_ci(&args.out, &gh, args.quiet);
    merged.exit_code
}

/// `--github-*`, `--comment`, `--check-run`. The token is remembered by the
/// redaction layer at once, so it is replaced wherever it would show up.
fn github_settings(args: &cli::GithubArgs) -> github::Settings {
    let token = args
        .github_token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    if let Some(t) = &token {
        report::redact::remember([t.as_bytes().to_vec()]);
    }
    github::Settings {
        token,
        api_url: args.github_api_url.clone(),
        comment: args.comment,
        check_run: args.check_run,
    }
}

/// Publish a final report (step summary, outputs, comment, check run). Each
/// result goes to the audit log; a failure is a `::warning::` line and
/// never changes the exit code.
fn publish_ci(out_dir: &Path, gh: &github::Settings, quiet: bool) {
    print_notices(Some(out_dir), &integrations::publish(out_dir, gh), quiet);
}

/// Print what publishing did (a failure as a `::warning::`), and log it to
/// `out_dir/audit.jsonl` when there is one.
fn print_notices(out_dir: Option<&Path>, notices: &[(&str, github::Notice)], quiet: bool) {
    for (target, notice) in notices {
        if let Some(dir) = out_dir {
            let _ = report::append_audit(dir, &notice.to_event(target));
        }
        match notice {
            github::Notice::Failed(e) => stderr_text(&format!(
                "::warning title=plangate::{}\n",
                report::console::gh_data(&format!("could not publish the {target}: {e}"))
            )),
            github::Notice::Done(d) if !quiet => {
                stderr_text(&format!("plangate: github: {d}\n"));
            }
            github::Notice::Skipped(why) if !quiet => {
                stderr_text(&format!("plangate: github: no {target}: {why}\n"));
            }
            _ => {}
        }
    }
}

/// Run the plan; returns the exit code and whether the final report was written.
fn execute(plan: Arc<Plan>, settings: Arc<RunSettings>, console: Console) -> (u8, bool) {
    let reporter = match report::Reporter::new(Arc::clone(&plan), &settings, console) {
        Ok(r) => r,
        Err(e) => {
            err_line(&format!(
                "cannot write to the output directory {}: {e}; nothing was executed",
                settings.out_dir.display()
            ));
            return (RunStatus::Invalid.code(), false);
        }
    };
    // Steps a killed earlier run left behind are stopped before this one starts.
    for line in process::live::reap_orphans() {
        stderr_text(&format!("plangate: {line}\n"));
    }
    process::live::start(&settings.run_id);
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || reporter.consume(&rx));
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            err_line(&format!("cannot start the async runtime: {e}"));
            drop(tx);
            let _ = writer.join();
            return (RunStatus::Failed.code(), false);
        }
    };
    let status = runtime.block_on(async move {
        let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
        spawn_signal_watch(cancel_tx);
        engine::run(plan, settings, tx, cancel_rx).await
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    process::live::finish();
    let finished = match writer.join() {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            err_line(&format!("failed to write the report: {e}"));
            false
        }
        Err(_) => {
            err_line("the report writer crashed");
            false
        }
    };
    (status.code(), finished)
}

/// The async runtime for runs and drafts: two workers (CI machines are small;
/// steps are processes, not threads).
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

fn spawn_signal_watch(cancel: tokio::sync::watch::Sender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        err_line("cannot install signal handlers; SIGINT/SIGTERM will kill plangate outright");
        return;
    };
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        let _ = writeln!(
            anstream::stderr(),
            "plangate: {name} received: stopping running steps"
        );
        let _ = cancel.send(true);
    });
}

fn cmd_validate(args: &ValidateArgs) -> u8 {
    let mut out: Vec<u8> = Vec::new();
    let prepared = match prepare(&args.plan, &args.decision, RunFlags::default()) {
        Ok(p) => p,
        Err(diags) => {
            if args.format == Format::Json {
                let v = json!({"valid": false, "plan": args.plan.display().to_string(), "errors": diags});
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&v).unwrap_or_default()
                );
            }
            let _ = stdout_bytes(&out);
            print_diags(&diags);
            return RunStatus::Invalid.code();
        }
    };
    let decisions = engine::decide_all(
        &prepared.plan,
        &prepared.env,
        &prepared.policy,
        &prepared.approvals,
    );
    let res = match args.format {
        Format::Json => write_validate_json(&mut out, &prepared, &decisions),
        Format::Text => write_validate_text(&mut out, &prepared, &decisions),
    };
    let res = res.and_then(|()| stdout_bytes(&out));
    if let Err(e) = res {
        err_line(&format!("cannot write to stdout: {e}"));
        return 1;
    }
    0
}

fn write_validate_json(
    out: &mut impl Write,
    p: &Prepared,
    decisions: &[StepDecision],
) -> std::io::Result<()> {
    let steps: Vec<_> = p
        .plan
        .steps
        .iter()
        .zip(decisions)
        .map(|(s, d)| {
            json!({
                "id": s.id,
                "template": s.template,
                "matrix": s.matrix,
                "tool": s.tool.as_str(),
                "line": s.pos.line,
                "dependencies": s.deps.iter().map(|&i| p.plan.steps[i].id.clone()).collect::<Vec<_>>(),
                "risk": d.risk,
                "approval": d.decision,
            })
        })
        .collect();
    let v = json!({
        "valid": true,
        "plan": {"id": p.plan.id, "path": p.plan.path.display().to_string(), "sha256": p.plan.sha256, "objective": p.plan.objective},
        "workspace": p.env.workspace.display().to_string(),
        "policy": p.policy,
        "approvals": p.approvals,
        "size": {"written": p.plan.template_count(), "expanded": p.plan.steps.len()},
        "steps": steps,
        "errors": [],
    });
    writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&v).map_err(std::io::Error::other)?
    )
}

fn write_validate_text(
    out: &mut impl Write,
    p: &Prepared,
    decisions: &[StepDecision],
) -> std::io::Result<()> {
    let pol = &p.policy;
    if p.plan.has_matrix() {
        writeln!(
            out,
            "plan `{}` ({}): {} steps once expanded ({} written, matrices expanded), valid",
            p.plan.id,
            p.plan.path.display(),
            p.plan.steps.len(),
            p.plan.template_count()
        )?;
    } else {
        writeln!(
            out,
            "plan `{}` ({}): {} steps, valid",
            p.plan.id,
            p.plan.path.display(),
            p.plan.steps.len()
        )?;
    }
    writeln!(
        out,
        "policy: risk_tolerance {}, on_approval_required {}, max_parallel {}, fail_on_secrets {}",
        pol.risk_tolerance.as_str(),
        pol.on_approval_required.as_str(),
        pol.max_parallel,
        pol.fail_on_secrets
    )?;
    if let Some(hosts) = &pol.allowed_hosts {
        writeln!(out, "policy: allowed_hosts [{}]", hosts.join(", "))?;
    }
    for list in pol.permission_lists() {
        writeln!(
            out,
            "policy: {} permission rule(s) from the {} (what no rule allows is blocked)",
            list.rules.len(),
            list.source
        )?;
    }
    for c in &pol.capped {
        writeln!(out, "policy: {c}")?;
    }
    let w = p
        .plan
        .steps
        .iter()
        .map(|s| s.id.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let t = p
        .plan
        .steps
        .iter()
        .map(|s| s.tool.as_str().len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(out)?;
    writeln!(
        out,
        "{:<w$}  {:<t$}  {:<9}  {:<10}  {:<9}  {:<13}  REASON",
        "STEP", "TOOL", "DECLARED", "CLASSIFIED", "EFFECTIVE", "DECISION"
    )?;
    for (s, d) in p.plan.steps.iter().zip(decisions) {
        writeln!(
            out,
            "{:<w$}  {:<t$}  {:<9}  {:<10}  {:<9}  {:<13}  {}",
            s.id,
            s.tool.as_str(),
            d.risk.declared.as_str(),
            d.risk.classified.as_str(),
            d.risk.effective.as_str(),
            d.decision.decision.as_str(),
            d.decision.reason
        )?;
    }
    let _ = Pos::default();
    Ok(())
}

fn cmd_schema(args: &SchemaArgs) -> u8 {
    let schema = if args.policy {
        plan::schema::policy_schema()
    } else {
        plan::schema::plan_schema()
    };
    let mut out = std::io::stdout().lock();
    match serde_json::to_string_pretty(&schema) {
        Ok(s) if writeln!(out, "{s}").is_ok() => 0,
        _ => 1,
    }
}

fn cmd_draft(args: &DraftArgs) -> u8 {
    let workspace = match workspace_of(&args.decision) {
        Ok(w) => w,
        Err(d) => {
            print_diags(&[d]);
            return RunStatus::Invalid.code();
        }
    };
    let agents_path = args
        .agents
        .clone()
        .unwrap_or_else(|| workspace.join(".plangate").join("agents.yaml"));
    let agents = match plan::load_agents_file(&agents_path) {
        Ok(a) => a,
        Err(diags) => {
            print_diags(&diags);
            return RunStatus::Invalid.code();
        }
    };
    let Some(agent) = agents.get(&args.agent).cloned() else {
        let hint = plan::diag::did_you_mean(&args.agent, agents.keys().map(String::as_str))
            .map_or_else(
                || "declare it under `agents:`".to_owned(),
                |s| format!("did you mean `{s}`?"),
            );
        print_diags(&[usage_diag(
            format!("no agent `{}` in {}", args.agent, agents_path.display()),
            &hint,
        )]);
        return RunStatus::Invalid.code();
    };
    if args.out.exists() && !args.force {
        print_diags(&[usage_diag(
            format!(
                "{} exists; plangate does not overwrite a plan",
                args.out.display()
            ),
            "choose another --out, or pass --force",
        )]);
        return RunStatus::Invalid.code();
    }
    let run_id = uuid::Uuid::now_v7().to_string();
    let req = draft::DraftRequest {
        objective: args.objective.clone(),
        agent_name: args.agent.clone(),
        agent,
        agents_dir: agents_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        workspace: workspace.clone(),
        out_dir: draft::default_out_dir(&workspace, &run_id),
        max_attempts: args.max_attempts,
    };
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            err_line(&format!("cannot start the async runtime: {e}"));
            return RunStatus::Failed.code();
        }
    };
    let result = runtime.block_on(draft::draft(&req));
    match result {
        draft::DraftResult::Plan { text, attempts } => {
            let body = format!(
                "# Drafted by agent `{}` for: {}\n# Review it before running it: plangate never runs a drafted plan.\n{text}\n",
                args.agent,
                args.objective.lines().next().unwrap_or("")
            );
            if let Err(e) = std::fs::write(&args.out, body) {
                err_line(&format!("cannot write {}: {e}", args.out.display()));
                return RunStatus::Failed.code();
            }
            let _ = writeln!(
                anstream::stderr(),
                "plangate: drafted {} in {attempts} attempt(s); evidence in {}",
                args.out.display(),
                req.out_dir.display()
            );
            match prepare(&args.out, &args.decision, RunFlags::default()) {
                Ok(p) => {
                    let decisions = engine::decide_all(&p.plan, &p.env, &p.policy, &p.approvals);
                    let mut out: Vec<u8> = Vec::new();
                    if write_validate_text(&mut out, &p, &decisions).is_err()
                        || stdout_bytes(&out).is_err()
                    {
                        return 1;
                    }
                    0
                }
                Err(diags) => {
                    print_diags(&diags);
                    RunStatus::Invalid.code()
                }
            }
        }
        draft::DraftResult::Rejected(why) => {
            err_line(&format!(
                "no plan written: {why}; evidence in {}",
                req.out_dir.display()
            ));
            RunStatus::Rejected.code()
        }
        draft::DraftResult::Failed(why) => {
            err_line(&format!("no plan written: {why}"));
            RunStatus::Failed.code()
        }
    }
}

fn cmd_scan(args: &ScanArgs) -> u8 {
    let (rules, scanner) = match scan::scanner_with(args.rules.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            err_line(&e);
            return RunStatus::Invalid.code();
        }
    };
    for p in &args.paths {
        if !p.exists() {
            err_line(&format!("{}: no such file or directory", p.display()));
            return RunStatus::Invalid.code();
        }
    }
    let baseline = match &args.baseline {
        Some(b) => match scan::load_baseline(b) {
            Ok(set) => set,
            Err(e) => {
                err_line(&e);
                return RunStatus::Invalid.code();
            }
        },
        None => Default::default(),
    };
    let opts = scan::ScanOptions {
        redact: args.redact,
        baseline,
        ..scan::ScanOptions::default()
    };
    let outcome = scan::scan_paths(&rules, &scanner, &args.paths, &opts);
    let body = match args.format {
        ScanFormat::Text => scan::to_text(&outcome),
        ScanFormat::Json => {
            serde_json::to_string_pretty(&scan::to_json(&outcome)).unwrap_or_default() + "\n"
        }
        ScanFormat::Sarif => {
            serde_json::to_string_pretty(&scan::to_sarif(&rules, &outcome.findings))
                .unwrap_or_default()
                + "\n"
        }
        ScanFormat::GitlabSecretDetection => {
            let end = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
            let start =
                humantime::format_rfc3339_seconds(std::time::SystemTime::now() - outcome.scan_time)
                    .to_string();
            let v = report::gitlab::secret_detection(
                &outcome.findings,
                &report::gitlab::schema_time(Some(&start)),
                &report::gitlab::schema_time(Some(&end)),
                &report::gitlab::commit_from_env(),
                outcome.errors.is_empty(),
            );
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
    };
    if std::io::stdout().lock().write_all(body.as_bytes()).is_err() {
        return 1;
    }
    for e in &outcome.errors {
        stderr_text(&format!("plangate: warning: {e}\n"));
    }
    if outcome.findings.is_empty() {
        0
    } else {
        RunStatus::SecretsFound.code()
    }
}

fn cmd_report(args: &ReportArgs) -> u8 {
    let text = match std::fs::read_to_string(&args.report) {
        Ok(t) => t,
        Err(e) => {
            err_line(&format!("cannot read {}: {e}", args.report.display()));
            return RunStatus::Invalid.code();
        }
    };
    let report: model::Report = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => {
            err_line(&format!(
                "{} is not a plangate report: {e} (line {}, column {})",
                args.report.display(),
                e.line(),
                e.column()
            ));
            return RunStatus::Invalid.code();
        }
    };
    if args.publish_github {
        let gh = github_settings(&args.github);
        if gh.token.is_none() {
            err_line("--publish-github needs a token (PLANGATE_GITHUB_TOKEN or --github-token)");
            return RunStatus::Invalid.code();
        }
        let notices = github::publish(&report, &gh);
        let dir = args
            .report
            .parent()
            .filter(|d| d.join("audit.jsonl").is_file());
        print_notices(dir, &notices, false);
        if notices
            .iter()
            .any(|(_, n)| matches!(n, github::Notice::Failed(_)))
        {
            return RunStatus::Failed.code();
        }
    }
    let Some(format) = args.format else { return 0 };
    // Findings in run output are under the folder report.json is in.
    let out_dir = args.report.parent().unwrap_or(std::path::Path::new("."));
    let body = match format {
        ReportFormat::Markdown => report::render::markdown(&report),
        ReportFormat::Junit => report::render::junit(&report),
        ReportFormat::Sarif => {
            serde_json::to_string_pretty(&report::render::sarif(&report, out_dir))
                .unwrap_or_default()
                + "\n"
        }
        ReportFormat::Json => {
            serde_json::to_string_pretty(&report::render::json(&report)).unwrap_or_default() + "\n"
        }
        ReportFormat::GitlabSecretDetection => {
            serde_json::to_string_pretty(&report::render::gitlab_secret_detection(&report, out_dir))
                .unwrap_or_default()
                + "\n"
        }
    };
    match stdout_bytes(body.as_bytes()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}
