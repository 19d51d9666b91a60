//! Effects requested by steps (`$PLANGATE_REQUESTS`): the fresh file each
//! step gets in its artifact folder, read back when it ends (through
//! `regular`, size-capped, after the sweep redacted it) and checked by
//! `publish::request`; after the run, the facts `publish::gate` decides on.

use std::io::Read;
use std::path::Path;

use crate::model::publish::{PublishEntry, Request};
use crate::model::{DiffSummary, StepOutcome, StepStatus};
use crate::plan::Plan;
use crate::publish::patch::PatchFile;
use crate::publish::{gate, request};
use crate::tools::StepContext;
use crate::tools::spec::Outputs;

use super::RunSettings;

/// The variable naming a step's requests file.
pub(crate) const VAR: &str = "PLANGATE_REQUESTS";

/// Give the step an empty requests file and its name in `$PLANGATE_REQUESTS`.
pub(super) fn prepare(ctx: &mut StepContext) -> Result<(), String> {
    let file = ctx.artifacts_dir.join(request::FILE_NAME);
    std::fs::create_dir_all(&ctx.artifacts_dir)
        .and_then(|()| std::fs::write(&file, b""))
        .map_err(|e| format!("cannot prepare {}: {e}", file.display()))?;
    ctx.run_vars
        .insert(VAR.to_owned(), file.display().to_string());
    Ok(())
}

/// What the step left in place of its requests file when that is not a
/// regular file (a FIFO, socket, device, symbolic link, folder), looked at
/// before the sweep removes it (`lstat`: nothing is opened or followed).
pub(super) fn replaced(ctx: &StepContext) -> Option<&'static str> {
    crate::regular::replaced(&ctx.artifacts_dir.join(request::FILE_NAME))
}

/// Read what the step asked for into `outcome.requests`. A refused request
/// fails a step that succeeded (an agent's: `rejected`, exit 5); so does a
/// requests file the step replaced by something else (`replaced`, from
/// [`replaced`] before the sweep): nothing it asked for is published.
pub(super) fn collect(
    outcome: &mut StepOutcome,
    ctx: &StepContext,
    plan: &Plan,
    step: usize,
    replaced: Option<&str>,
) {
    let file = ctx.artifacts_dir.join(request::FILE_NAME);
    let read = || -> std::io::Result<Vec<u8>> {
        // Never followed: a link could point plangate at a file the step cannot read.
        let meta = std::fs::symlink_metadata(&file)?;
        if meta.file_type().is_file() && meta.len() == 0 {
            // Left empty (most steps): nothing asked, nothing to open.
            return Ok(Vec::new());
        }
        let f = crate::regular::open_no_link(&file)?;
        let mut buf = Vec::new();
        f.take(request::MAX_FILE_BYTES + 1).read_to_end(&mut buf)?;
        Ok(buf)
    };
    let shown = format!("{}/{}", ctx.artifacts_rel, request::FILE_NAME);
    let result = match (replaced, read()) {
        (Some(what), _) => {
            let why = format!(
                "$PLANGATE_REQUESTS (`{shown}`) was replaced by {what} (not a regular file): plangate reads only the regular file it made there, so nothing the step asked for is published"
            );
            if outcome.status != StepStatus::Success {
                outcome.warnings.push(why.clone());
            }
            Err(vec![why])
        }
        (None, Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        (None, Err(e)) if crate::regular::is_not_regular(&e) => Err(vec![format!(
            "$PLANGATE_REQUESTS (`{shown}`) cannot be read: {e}"
        )]),
        (None, Err(e)) => Err(vec![format!("cannot read $PLANGATE_REQUESTS: {e}")]),
        (None, Ok(b)) if b.len() as u64 > request::MAX_FILE_BYTES => Err(vec![format!(
            "$PLANGATE_REQUESTS is larger than {} bytes",
            request::MAX_FILE_BYTES
        )]),
        (None, Ok(b)) => {
            if !b.is_empty() {
                outcome
                    .artifacts
                    .push(format!("{}/{}", ctx.artifacts_rel, request::FILE_NAME));
            }
            request::parse(&b, &plan.publish)
        }
    };
    match result {
        Ok(r) => outcome.requests = r,
        Err(errors) => {
            if outcome.status == StepStatus::Success {
                // A refused request of a judged answer is a rejection.
                let answer = matches!(plan.steps[step].action.spec().outputs(), Outputs::Answer(_));
                outcome.status = if answer {
                    StepStatus::Rejected
                } else {
                    StepStatus::Failed
                };
                let shown: Vec<&str> = errors.iter().take(5).map(String::as_str).collect();
                let more = errors.len().saturating_sub(5);
                let tail = if more > 0 {
                    format!(" (and {more} more)")
                } else {
                    String::new()
                };
                outcome.error = Some(format!(
                    "publish request refused: {}{tail}",
                    shown.join("; ")
                ));
            }
            outcome.requests.clear();
        }
    }
}

/// Per step: it and every step it depends on succeeded.
fn chain_ok(plan: &Plan, succeeded: &[bool]) -> Vec<bool> {
    let mut ok: Vec<Option<bool>> = vec![None; plan.steps.len()];
    fn walk(i: usize, plan: &Plan, succeeded: &[bool], ok: &mut Vec<Option<bool>>) -> bool {
        if let Some(v) = ok[i] {
            return v;
        }
        ok[i] = Some(false);
        let own = succeeded.get(i).copied().unwrap_or(false);
        let v = own
            && plan.steps[i]
                .deps
                .iter()
                .all(|&d| walk(d, plan, succeeded, ok));
        ok[i] = Some(v);
        v
    }
    (0..plan.steps.len())
        .map(|i| walk(i, plan, succeeded, &mut ok))
        .collect()
}

/// The changed files as the patch policy sees them, with their new sizes.
fn patch_files(workspace: &Path, diff: Option<&DiffSummary>) -> Vec<PatchFile> {
    diff.map(|d| {
        d.files
            .iter()
            .map(|f| PatchFile {
                path: f.path.clone(),
                old_path: f.old_path.clone(),
                bytes: std::fs::symlink_metadata(workspace.join(&f.path))
                    .map(|m| m.len())
                    .unwrap_or(0),
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Decide every request of the run.
/// `succeeded`: per step, it ended `success` (in this run or the one resumed).
pub(super) fn decide(
    plan: &Plan,
    settings: &RunSettings,
    succeeded: &[bool],
    asked: &[(usize, Request)],
    diff: Option<&DiffSummary>,
    secrets: usize,
) -> Vec<PublishEntry> {
    let files = patch_files(&settings.env.workspace, diff);
    let ok = chain_ok(plan, succeeded);
    let ids: Vec<String> = plan.steps.iter().map(|s| s.id.clone()).collect();
    gate::decide(
        asked,
        &gate::Facts {
            step_ids: &ids,
            chain_ok: &ok,
            secrets,
            dry_run: settings.dry_run,
            files: &files,
            policies: &settings.policy.patch,
            decl: &plan.publish,
        },
    )
}
