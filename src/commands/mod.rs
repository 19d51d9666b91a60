//! One file per subcommand: each takes its parsed arguments, resolves its
//! settings (`crate::settings`), does its job and renders its own formats,
//! writing only through `crate::output`. Each returns the run's outcome
//! ([`RunStatus`]) or why it could not do its job ([`Error`]); `crate::run`
//! turns either into the exit code.
//!
//! This file holds what several commands share: publishing a finished report
//! to the CI (`run`, `merge`, `report`) and the outputs derived from
//! report.json (`run`, `merge`).

pub(crate) mod draft;
pub(crate) mod merge;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod scan;
pub(crate) mod schema;
pub(crate) mod shard;
pub(crate) mod usage;
pub(crate) mod validate;

use std::path::Path;

use crate::error::Error;
use crate::model::RunStatus;
use crate::{github, output, report as reports};

/// What every command returns.
pub(crate) type Outcome = Result<RunStatus, Error>;

/// GitLab's file name for `artifacts: reports: secret_detection:`.
pub const GITLAB_SECRETS_FILE: &str = "gl-secret-detection-report.json";

/// Outputs derived from the final report.json: `--junit FILE` when asked,
/// and `gl-secret-detection-report.json` in the output folder (always: an
/// empty report is how GitLab learns that nothing leaked). A failure is a
/// warning: the report itself is written.
fn write_derived_outputs(junit: Option<&Path>, out_dir: &Path) {
    let report = crate::integrations::read_report(&out_dir.join("report.json"));
    let write = |path: &Path, text: Option<String>| {
        let written = match (&report, text) {
            (Err(e), _) => Err(e.to_string()),
            (Ok(_), None) => Err("cannot render it".to_owned()),
            (Ok(_), Some(x)) => reports::write_text_atomic(path, &x).map_err(|e| e.to_string()),
        };
        if let Err(e) = written {
            output::warning(format_args!("cannot write {}: {e}", path.display()));
        }
    };
    if let Some(junit) = junit {
        write(junit, report.as_ref().ok().map(reports::render::junit));
    }
    let gitlab = report.as_ref().ok().and_then(|r| {
        serde_json::to_string_pretty(&reports::render::gitlab_secret_detection(r, out_dir))
            .ok()
            .map(|t| t + "\n")
    });
    write(&out_dir.join(GITLAB_SECRETS_FILE), gitlab);
}

/// Publish a final report (step summary, outputs, comment, check run). Each
/// result goes to the audit log; a failure is a `::warning::` line and
/// never changes the exit code.
fn publish_ci(
    out_dir: &Path,
    (gh, gl): (&github::Settings, &crate::gitlab::Settings),
    quiet: bool,
) {
    print_notices(
        Some(out_dir),
        &crate::integrations::publish(out_dir, gh, gl),
        quiet,
    );
}

/// Print what publishing did (a failure as a `::warning::`), and log it to
/// `out_dir/audit.jsonl` when there is one.
fn print_notices(out_dir: Option<&Path>, notices: &[(&str, github::Notice)], quiet: bool) {
    for (target, notice) in notices {
        let forge = if target.starts_with("gitlab") || *target == "commit_status" {
            "gitlab"
        } else {
            "github"
        };
        if let Some(dir) = out_dir {
            let _ = reports::append_audit(dir, &notice.to_event(target));
        }
        match notice {
            github::Notice::Failed(e) => output::line(format_args!(
                "::warning title=plangate::{}",
                reports::console::gh_data(&format!("could not publish the {target}: {e}"))
            )),
            github::Notice::Done(d) if !quiet => {
                output::line(format_args!("plangate: {forge}: {d}"));
            }
            github::Notice::Skipped(why) if !quiet => {
                output::line(format_args!("plangate: {forge}: no {target}: {why}"));
            }
            _ => {}
        }
    }
}

/// The async runtime for runs and drafts: two workers (CI machines are small;
/// steps are processes, not threads).
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}
