//! `plangate run`: resolve the settings, run the plan on the engine with the
//! reporter consuming its events, stop on SIGINT/SIGTERM, then write the
//! derived outputs and publish to the CI.
//!
//! A plan or usage problem is still a run: it gets a report (status
//! `invalid`) in the output folder, so CI always finds one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{Outcome, publish_ci, runtime, write_derived_outputs};
use crate::cli::RunArgs;
use crate::engine::{self, RunSettings};
use crate::model::Diagnostic;
use crate::model::RunStatus;
use crate::plan::Plan;
use crate::report::{self, console::Console};
use crate::settings::{self, PlanSettings, RunFlags, usage_diag};
use crate::{diff, output, process, resume, selection, shard};

/// What `run` knows before the engine starts.
struct Start<'a> {
    args: &'a RunArgs,
    gh: crate::github::Settings,
    gl: crate::gitlab::Settings,
    run_id: String,
    cwd: PathBuf,
}

impl Start<'_> {
    /// The run folder ([`settings::out_dir`]), created and kept out of git
    /// ([`settings::hide_from_git`]; a failure there is a warning: the
    /// diff and the `git` tool leave the folder out all the same).
    fn out_dir(&self, workspace: &Path) -> PathBuf {
        let out = settings::out_dir(
            self.args.out.as_deref(),
            &self.cwd,
            workspace,
            &self.run_id,
            &|k| crate::environ::var_os(k),
        );
        if let Err(e) = settings::hide_from_git(&out, workspace) {
            output::warning(format_args!(
                "could not keep the output folder out of git ({e}); it is left out of the diff and of `git` steps all the same"
            ));
        }
        out.path
    }

    /// Print the problems, write the `invalid` report, publish it.
    fn invalid(&self, diags: &[Diagnostic], ws: &Path) -> Outcome {
        self.write_invalid(diags, ws, true)
    }

    /// Print the problems and write the `invalid` report; publish nothing.
    fn refused(&self, diags: &[Diagnostic], ws: &Path) -> Outcome {
        self.write_invalid(diags, ws, false)
    }

    /// Print the problems, write the `invalid` report and, if `publish`, publish it.
    fn write_invalid(&self, diags: &[Diagnostic], ws: &Path, publish: bool) -> Outcome {
        output::diagnostics(diags);
        let out = self.out_dir(ws);
        match report::write_invalid(&out, &self.run_id, &self.args.plan, ws, diags) {
            Ok(p) => {
                output::line(format_args!("report: {}", p.display()));
                write_derived_outputs(self.args.junit.as_deref(), &out);
                if publish {
                    publish_ci(&out, (&self.gh, &self.gl), self.args.quiet);
                }
            }
            Err(e) => output::error(format_args!(
                "cannot write the report to {}: {e}",
                out.display()
            )),
        }
        Ok(RunStatus::Invalid)
    }
}

/// A command line clap refused (`why`, already worded for the user): the
/// `invalid` report, nothing run and nothing published.
pub(crate) fn refused_usage(args: &RunArgs, why: &str) -> RunStatus {
    let start = Start {
        args,
        gh: settings::github(&args.github),
        gl: settings::gitlab(&args.gitlab, &args.github),
        run_id: uuid::Uuid::now_v7().to_string(),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let ws = settings::workspace(&args.decision).unwrap_or_else(|_| start.cwd.clone());
    let diag = usage_diag(
        why.to_owned(),
        "see `plangate run --help` for each flag's values (a flag's PLANGATE_* variable takes the same)",
    );
    start.refused(&[diag], &ws).unwrap_or(RunStatus::Invalid)
}

/// Every step has ended: a child still here is one a step orphaned after
/// its supervisor was killed (plangate is a child subreaper). Kill and name them.
fn warn_lingering() {
    let left = crate::sandbox::kill_descendants_named();
    if !left.is_empty() {
        let names: Vec<String> = left
            .iter()
            .take(5)
            .map(|(pid, name)| format!("`{name}` ({pid})"))
            .collect();
        output::warning(format_args!(
            "{} process(es) started by steps were still running at the end of the run; they were killed: {}{}",
            left.len(),
            names.join(", "),
            if left.len() > 5 { ", ..." } else { "" }
        ));
    }
}

/// `plangate run`.
pub(crate) fn run(args: &RunArgs) -> Outcome {
    // Before any thread or child: the environment goes into memory and out of
    // /proc, inherited descriptors stop at exec (issue 23).
    let sealed = crate::environ::seal();
    let start = Start {
        args,
        gh: crate::github::Settings {
            push: true,
            ..settings::github(&args.github)
        },
        gl: crate::gitlab::Settings {
            push: true,
            ..settings::gitlab(&args.gitlab, &args.github)
        },
        run_id: uuid::Uuid::now_v7().to_string(),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    // Fail-close: a part of the sealed boundary that failed is a property
    // plangate cannot enforce. Nothing runs and nothing is published (no
    // API call with a token); the `invalid` report is written all the same.
    if let Some(why) = sealed.refusal() {
        let ws = settings::workspace(&args.decision).unwrap_or_else(|_| start.cwd.clone());
        return start.refused(&[usage_diag(why, crate::environ::REFUSAL_HELP)], &ws);
    }
    let flags = RunFlags {
        max_parallel: args.max_parallel,
        fail_on_secrets: args.fail_on_secrets,
        fail_fast: args.fail_fast(),
    };
    let mut prepared = match PlanSettings::resolve(&args.plan, &args.decision, flags) {
        Ok(p) => p,
        Err(diags) => {
            let ws = settings::workspace(&args.decision).unwrap_or_else(|_| start.cwd.clone());
            return start.invalid(&diags, &ws);
        }
    };
    match settings::inputs(&args.inputs, &prepared.plan) {
        Ok(mut values) => {
            prepared.untrusted = settings::untrusted_inputs(&prepared.plan, &mut values);
            prepared.inputs = values;
        }
        Err(diags) => return start.invalid(&diags, &prepared.env.workspace),
    }
    let settings = match run_settings(&start, &mut prepared) {
        Ok(s) => s,
        Err(d) => return start.invalid(&[d], &prepared.env.workspace),
    };
    // Every agent the selected steps use must be reachable before anything
    // runs; a step that never runs (a condition known before the run is
    // false, for it or a dependency) needs none.
    let never = engine::never_runs(
        &prepared.plan,
        &settings.inputs,
        &settings.active(prepared.plan.steps.len()),
    );
    let needed: Vec<bool> = (0..prepared.plan.steps.len())
        .map(|i| {
            never[i].is_none()
                && settings
                    .selected
                    .as_ref()
                    .is_none_or(|s| s.get(i).copied().unwrap_or(false))
        })
        .collect();
    let missing = crate::tools::agent::preflight::check(
        &prepared.plan.steps,
        Some(&needed),
        &prepared.env,
        &args.plan.display().to_string(),
    );
    if !missing.is_empty() {
        return start.invalid(&missing, &prepared.env.workspace);
    }
    let mut settings = settings;
    // Credentials a checkout left in .git/config: withheld from every step
    // until the run ends (put back when `withheld` drops, below).
    let mut withheld = None;
    if !settings.dry_run {
        match crate::sandbox::git_creds::withhold(&settings.env.workspace) {
            Ok(Some(w)) => {
                for k in &w.recovered {
                    output::line(format_args!(
                        "plangate: put back the git credential an earlier, killed run withheld: {k}"
                    ));
                }
                if !w.supply.withheld.is_empty() && !args.quiet {
                    output::line(format_args!(
                        "plangate: withheld {} git credential(s) from the steps for this run (put back at the end; plangate's git push/pull uses them): {}",
                        w.supply.withheld.len(),
                        w.supply.withheld.join(", ")
                    ));
                }
                settings.env.git_supply = Arc::new(w.supply.clone());
                withheld = Some(w);
            }
            Ok(None) => {}
            Err(e) => {
                return start.invalid(
                    &[usage_diag(
                        e,
                        "remove the credential from .git/config (actions/checkout: `persist-credentials: false`) or fix the file",
                    )],
                    &prepared.env.workspace,
                );
            }
        }
    }
    let plan = Arc::new(prepared.plan);
    let mut console = Console::from_env();
    console.quiet = args.quiet;
    let out_dir = settings.out_dir.clone();
    let (status, finished) = execute(plan, Arc::new(settings), console);
    // The resident step supervisors, idle now, end.
    crate::process::lane::close_all();
    warn_lingering();
    if let Some(mut w) = withheld
        && let Err(e) = w.restore()
    {
        output::error(format_args!("{e}"));
    }
    write_derived_outputs(args.junit.as_deref(), &out_dir);
    if finished {
        publish_ci(&out_dir, (&start.gh, &start.gl), args.quiet);
    }
    Ok(status)
}

/// The engine's settings: `--shard`, `--steps`, `--kill-grace`, `--resume`
/// applied to the resolved plan. Moves the workspace out of `prepared.env`.
fn run_settings(start: &Start<'_>, prepared: &mut PlanSettings) -> Result<RunSettings, Diagnostic> {
    let args = start.args;
    let mut shard_info = None;
    if let Some(spec) = &args.shard {
        let (sub, info) = shard::shard_plan(&prepared.plan, spec, args.timings.as_deref())
            .map_err(|e| {
                usage_diag(
                    format!("--shard: {e}"),
                    "use the shards `plangate shard` printed, with the same --timings file",
                )
            })?;
        prepared.plan = sub;
        shard_info = Some(info);
    }
    let selected = match &args.steps {
        Some(spec) => Some(selection::parse_steps(spec, &prepared.plan).map_err(|e| {
            usage_diag(
                format!("--steps: {e}"),
                "use `3`, `2-5` or ids like `lint,test`",
            )
        })?),
        None => None,
    };
    let kill_grace = settings::kill_grace(args.kill_grace)?;
    let heartbeat = settings::heartbeat(args.heartbeat)?;
    let workspace_head = diff::workspace_head(&prepared.env.workspace);
    let resume = match &args.resume {
        Some(path) => Some(resume::load(
            path,
            &prepared.plan,
            &prepared.env.workspace,
            workspace_head.as_deref(),
            &prepared.inputs,
        )?),
        None => None,
    };
    let record = match &args.record {
        Some(path) => Some(std::sync::Arc::new(
            crate::tools::agent::record::Recorder::create(path).map_err(|e| {
                usage_diag(
                    format!("--record {}: {e}", path.display()),
                    "name a file in a folder that exists and is writable",
                )
            })?,
        )),
        None => None,
    };
    Ok(RunSettings {
        record,
        run_id: start.run_id.clone(),
        env: prepared.env.clone(),
        out_dir: start.out_dir(&prepared.env.workspace),
        policy: prepared.policy.clone(),
        approvals: prepared.approvals.clone(),
        dry_run: args.dry_run,
        selected,
        max_output_bytes: args.max_output_bytes,
        kill_grace,
        heartbeat,
        workspace_head,
        resume,
        shard: shard_info,
        inputs: prepared.inputs.clone(),
        untrusted: prepared.untrusted.clone(),
        strict: args.strict,
        show_output: args.show_output.into(),
    })
}

/// Run the plan; returns the outcome and whether the final report was written.
fn execute(plan: Arc<Plan>, settings: Arc<RunSettings>, console: Console) -> (RunStatus, bool) {
    let reporter = match report::Reporter::new(Arc::clone(&plan), &settings, console) {
        Ok(r) => r,
        Err(e) => {
            output::error(format_args!(
                "cannot write to the output directory {}: {e}; nothing was executed",
                settings.out_dir.display()
            ));
            return (RunStatus::Invalid, false);
        }
    };
    // Steps a killed earlier run left behind are stopped before this one starts.
    for line in process::live::reap_orphans() {
        output::line(format_args!("plangate: {line}"));
    }
    process::live::start(&settings.run_id);
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || reporter.consume(&rx));
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            e.display_to_stderr();
            drop(tx);
            let _ = writer.join();
            return (e.status(), false);
        }
    };
    let last_word = tx.clone();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(async move {
            let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
            spawn_signal_watch(cancel_tx);
            engine::run(plan, settings, tx, cancel_rx).await
        })
    }));
    // A panic in the engine (the hook printed it, redacted) still leaves a
    // finished, valid report: failed, with the message in `errors`.
    let status = ran.unwrap_or_else(|payload| {
        let message = output::panic_text(payload.as_ref());
        let _ = last_word.send(engine::events::RunEvent::InternalError { message });
        let _ = last_word.send(engine::events::RunEvent::RunFinished {
            status: RunStatus::Failed,
            partial: Vec::new(),
        });
        RunStatus::Failed
    });
    drop(last_word);
    runtime.shutdown_timeout(Duration::from_secs(1));
    process::live::finish();
    let finished = match writer.join() {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            output::error(format_args!("failed to write the report: {e}"));
            false
        }
        Err(_) => {
            output::error("the report writer crashed");
            false
        }
    };
    (status, finished)
}

/// SIGINT/SIGTERM: say so (through the output writer) and tell the engine to stop.
fn spawn_signal_watch(cancel: tokio::sync::watch::Sender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        output::error("cannot install signal handlers; SIGINT/SIGTERM will kill plangate outright");
        return;
    };
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        output::line(format_args!(
            "plangate: {name} received: stopping running steps"
        ));
        let _ = cancel.send(true);
        // The diff's git commands end too (a planted file may hold one).
        crate::diff::stop();
    });
}
