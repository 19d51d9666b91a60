//! plangate's own output and the `git` tool: a step never stages, commits
//! or stashes the run's report, prompts and artifacts.
//!
//! The folder plangate owns ([`crate::format::paths::own_folder`]:
//! `.plangate/runs/` for a default run folder, else the run folder) matters
//! only when it lies inside the step's repository. Then:
//!
//! - `add`, and `stash push` with untracked files, get
//!   `:(top,exclude,literal)<folder>` appended, unless git ignores the folder
//!   itself (the user's `.gitignore` lists it): git leaves it out then, and
//!   naming an ignored path in any pathspec, an exclusion too, makes `git add`
//!   and `git stash -u` fail. `add --force` and `stash --all`, which take
//!   ignored files, always get it. (plangate's own `.gitignore` of `*` sits
//!   *inside* the folder: the folder is not ignored, its files are, and the
//!   exclusion is appended.)
//! - any of `add`, `commit` (`-a` included) and `stash push` is refused while
//!   git tracks or has staged a path of the run folder (an earlier commit, a
//!   bash step's `git add`): no pathspec keeps `commit -a` from taking it, and
//!   only the user can take it out of the index.

use std::path::Path;

use super::error::{GitError, Halt};
use super::runner::Git;
use crate::policy::git::{self as rules, Tag};
use crate::tools::StepContext;
use crate::tools::params::git::{GitAction, GitOperation};

/// What plangate's output folder means for one git step.
pub(super) enum Own {
    /// Nothing to do.
    Clear,
    /// Append this exclusion pathspec.
    Exclude(String),
}

/// Check a step against the output folder (see the module's comment).
pub(super) async fn guard(git: &Git<'_>, a: &GitAction, ctx: &StepContext) -> Result<Own, Halt> {
    let op = a.params.operation;
    let parsed = rules::parse(op, &a.params.args);
    let (untracked, forced) = match op {
        GitOperation::Add => (true, a.params.force || parsed.has(Tag::Force)),
        GitOperation::Commit => (false, false),
        GitOperation::Stash if parsed.stash_sub.as_deref().unwrap_or("push") == "push" => {
            let all = parsed.has_name("--all") || parsed.has_name("-a");
            let untracked = parsed.has_name("--include-untracked") || parsed.has_name("-u");
            (all || untracked, all)
        }
        _ => return Ok(Own::Clear),
    };
    let ws = &ctx.env.workspace;
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let run = real(&ctx.out_dir);
    // The repository lies inside the workspace: a folder outside it is out of reach.
    if !run.starts_with(ws) {
        return Ok(Own::Clear);
    }
    let own = real(&crate::format::paths::own_folder(&ctx.out_dir, ws));
    let top = super::judged::toplevel(git).await?;
    let (Some(run_rel), Some(own_rel)) = (rel(&top, &run), rel(&top, &own)) else {
        return Ok(Own::Clear);
    };
    let tracked = git
        .names(&[
            "ls-files",
            "-z",
            "--cached",
            "--",
            &format!(":(top,literal){run_rel}"),
        ])
        .await?;
    if !tracked.is_empty() {
        return Err(GitError::Denied(format!(
            "git {} refused: git tracks or has staged {} path(s) of plangate's output folder `{run_rel}`, which a step must never commit; take them out of the index (`git rm -r --cached {run_rel}`) or choose another --out",
            op.as_str(),
            tracked.len()
        ))
        .into());
    }
    if !untracked {
        return Ok(Own::Clear);
    }
    if !forced && ignored(git, &own).await? {
        return Ok(Own::Clear);
    }
    Ok(Own::Exclude(format!(":(top,exclude,literal){own_rel}")))
}

/// `path` relative to the repository's top level, as text; None outside it,
/// at the top itself (a folder holding the repository is never excluded
/// whole), or for a name that is not UTF-8 (argv is text here).
fn rel(top: &Path, path: &Path) -> Option<String> {
    let r = path.strip_prefix(top).ok()?;
    if r.as_os_str().is_empty() {
        return None;
    }
    r.to_str().map(str::to_owned)
}

/// Whether git's ignore rules cover the folder itself (or a folder above it).
async fn ignored(git: &Git<'_>, folder: &Path) -> Result<bool, Halt> {
    let shown = folder.to_string_lossy();
    let a = git
        .aux(&["check-ignore", "-q", "--no-index", "--", &shown])
        .await?;
    match a.code {
        0 => Ok(true),
        1 => Ok(false),
        _ => Err(GitError::HelperFailed {
            command: "check-ignore".to_owned(),
            why: a.first_error(),
        }
        .into()),
    }
}
