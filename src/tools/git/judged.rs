//! The permission rules over a repository's paths at run time: `files` are
//! judged before the run (`spec.rs`), but `git add` with no path, `git diff`,
//! `git status` or `git log -p` reach every file, and `diff` and `log` reach
//! every file the history ever held. Each such file (tracked or untracked,
//! and, for the operations that read history, every path of every commit
//! reachable from a ref or a reflog) is judged at the level the operation
//! needs; the ones the rules deny are left out of status, diff, log and add
//! (`:(top,exclude,literal)` pathspecs, a denied folder excluded whole, and
//! a warning says how many). What pathspecs cannot limit is refused when
//! anything is denied: `log --full-diff`, a `<rev>:<path>` blob or tree
//! argument of `diff` or `log`, `stash show` (and `pop`, `apply`, `branch`)
//! of a stash holding a denied path. An operation that cannot leave them out
//! (commit, checkout, reset, stash) is refused when a denied path has changes,
//! and a `checkout` or `reset` to another commit when that commit differs from
//! `HEAD` on a denied path (it would write that path).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::error::{GitError, Halt};
use super::runner::Git;
use crate::model::Level;
use crate::policy::git::{self as rules, Parsed};
use crate::tools::judge::PathJudge;
use crate::tools::params::git::{GitAction, GitOperation};

/// What the rules make of one git step.
pub(super) enum Judged {
    /// Nothing denied (or no rules): run as planned.
    Clear,
    /// Run with these exclusion pathspecs appended.
    Exclude(Vec<String>),
    /// Refused: why.
    Refused(String),
}

/// The level an operation needs on each path it reaches.
fn level(op: GitOperation, stash_sub: Option<&str>) -> Option<Level> {
    match op {
        GitOperation::Status | GitOperation::Diff | GitOperation::Log => Some(Level::Read),
        GitOperation::Stash => match stash_sub {
            Some("list") => None,
            Some("show") => Some(Level::Read),
            _ => Some(Level::Write),
        },
        GitOperation::Add | GitOperation::Commit | GitOperation::Checkout | GitOperation::Reset => {
            Some(Level::Write)
        }
        // No pathspec: their needs are the repository's (judged before the run).
        GitOperation::Push | GitOperation::Pull | GitOperation::Branch => None,
    }
}

/// Whether the operation shows or restores content from commits (every path
/// of the history is judged, not only the files here).
fn reads_history(op: GitOperation, stash_sub: Option<&str>) -> bool {
    match op {
        GitOperation::Diff | GitOperation::Log => true,
        GitOperation::Stash => matches!(stash_sub, Some("show" | "pop" | "apply" | "branch")),
        _ => false,
    }
}

/// Judge the repository's paths for this step.
pub(super) async fn judge(git: &Git<'_>, a: &GitAction, judge: &PathJudge) -> Result<Judged, Halt> {
    let op = a.params.operation;
    let parsed = rules::parse(op, &a.params.args);
    let sub = parsed.stash_sub.as_deref();
    let Some(level) = level(op, sub) else {
        return Ok(Judged::Clear);
    };
    let top = toplevel(git).await?;
    if let Some(why) = rewrites_denied(git, op, &parsed, &top, judge).await? {
        return Ok(Judged::Refused(why));
    }
    let history = reads_history(op, sub);
    let mut names = work_tree_names(git, a.params.force).await?;
    if history {
        names.extend(history_names(git).await?);
        names.sort_unstable();
        names.dedup();
    }
    let units = denied_units(&top, &names, |p| judge.check_real(p, level).is_ok());
    if units.is_empty() {
        return Ok(Judged::Clear);
    }
    if history && let Some(why) = unlimited(git, a, &parsed, &top, judge, level).await? {
        return Ok(Judged::Refused(format!(
            "{why}, and the permission rules deny paths of this repository (under {}); refused",
            shown_units(&units)
        )));
    }
    let pathspecs: Vec<String> = units
        .iter()
        .map(|u| format!(":(top,exclude,literal){u}"))
        .collect();
    match op {
        GitOperation::Status | GitOperation::Diff | GitOperation::Log | GitOperation::Add => {
            Ok(Judged::Exclude(pathspecs))
        }
        GitOperation::Stash if sub == Some("show") => Ok(Judged::Clear),
        _ => {
            let mut status: Vec<String> = vec![
                "status".into(),
                "--porcelain".into(),
                "-z".into(),
                "--untracked-files=all".into(),
                "--".into(),
            ];
            status.extend(units.iter().map(|u| format!(":(top,literal){u}")));
            let refs: Vec<&str> = status.iter().map(String::as_str).collect();
            let changed = git.names(&refs).await?;
            if changed.is_empty() {
                Ok(Judged::Clear)
            } else {
                Ok(Judged::Refused(format!(
                    "git {} would touch {} changed path(s) the permission rules deny (under {}); refused",
                    op.as_str(),
                    changed.len(),
                    shown_units(&units)
                )))
            }
        }
    }
}

/// The first denied units, quoted, for a message.
fn shown_units(units: &[String]) -> String {
    units
        .iter()
        .take(3)
        .map(|u| format!("`{u}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The repository's top level (paths below are judged from there: a step in
/// a subfolder still reads the whole repository's status and history).
pub(super) async fn toplevel(git: &Git<'_>) -> Result<PathBuf, Halt> {
    let a = git
        .aux(&["rev-parse", "--path-format=absolute", "--show-toplevel"])
        .await?;
    let text = String::from_utf8_lossy(&a.stdout);
    let line = text.lines().next().unwrap_or_default();
    if a.code != 0 || line.is_empty() {
        return Err(GitError::HelperFailed {
            command: "rev-parse".to_owned(),
            why: a.first_error(),
        }
        .into());
    }
    let top = Path::new(line);
    Ok(top.canonicalize().unwrap_or_else(|_| top.to_path_buf()))
}

/// Every file of the work tree and the index (relative to the top level).
async fn work_tree_names(git: &Git<'_>, force: bool) -> Result<Vec<String>, Halt> {
    let mut args = vec!["ls-files", "-z", "--full-name", "--cached", "--others"];
    if !force {
        args.push("--exclude-standard");
    }
    args.extend(["--", ":/"]);
    git.names(&args).await
}

/// Every path a commit reachable from a ref (stashes included) or a reflog
/// changes, merges against each parent, root commits whole (relative to the
/// top level).
async fn history_names(git: &Git<'_>) -> Result<Vec<String>, Halt> {
    git.names(HISTORY_NAMES).await
}

/// The `git` arguments that list every path of every commit reachable from
/// a ref or a reflog (NUL-separated, relative to the top level): also what
/// hides an object store from the sandboxed steps (`tools::git_store`).
pub(crate) const HISTORY_NAMES: &[&str] = &[
    "log",
    "--all",
    "--reflog",
    "-m",
    "--root",
    "--format=",
    "--name-only",
    "-z",
    "--no-renames",
    "--no-relative",
    "--no-ext-diff",
    "--no-textconv",
];

/// Why exclusion pathspecs would not limit what this step shows, if so.
async fn unlimited(
    git: &Git<'_>,
    a: &GitAction,
    parsed: &Parsed,
    top: &Path,
    judge: &PathJudge,
    level: Level,
) -> Result<Option<String>, Halt> {
    let op = a.params.operation;
    if op == GitOperation::Log && a.params.args.iter().any(|x| x == "--full-diff") {
        return Ok(Some(
            "`--full-diff` shows whole commits past the pathspecs that leave denied paths out"
                .to_owned(),
        ));
    }
    if matches!(op, GitOperation::Diff | GitOperation::Log) {
        for arg in &parsed.positionals {
            if let Some(kind) = content_object(git, arg).await? {
                return Ok(Some(format!(
                    "`{}` names a {kind}, whose content no pathspec limits",
                    super::text::shown(Path::new(arg))
                )));
            }
        }
        return Ok(None);
    }
    // stash show, pop, apply, branch: the stash's own paths (`branch` names
    // the new branch first).
    let at = usize::from(parsed.stash_sub.as_deref() == Some("branch"));
    let stash = parsed
        .positionals
        .get(at)
        .cloned()
        .unwrap_or_else(|| "stash@{0}".to_owned());
    let names = git
        .names(&[
            "stash",
            "show",
            "--name-only",
            "-z",
            "--include-untracked",
            "--no-renames",
            "--no-relative",
            &stash,
        ])
        .await?;
    let denied = names
        .iter()
        .filter(|n| judge.check_real(&top.join(n), level).is_err())
        .count();
    Ok((denied > 0).then(|| {
        format!(
            "git stash {} would show or restore {denied} path(s) of `{}` that no pathspec limits",
            parsed.stash_sub.as_deref().unwrap_or("show"),
            super::text::shown(Path::new(&stash))
        )
    }))
}

/// Why a `checkout` or `reset` to another commit is refused, if it is: the
/// paths that differ between `HEAD` and the target are the ones it writes
/// (into the work tree or the index), and the rules deny some of them.
async fn rewrites_denied(
    git: &Git<'_>,
    op: GitOperation,
    parsed: &Parsed,
    top: &Path,
    judge: &PathJudge,
) -> Result<Option<String>, Halt> {
    let Some(target) = parsed
        .positionals
        .first()
        .filter(|_| matches!(op, GitOperation::Checkout | GitOperation::Reset))
    else {
        return Ok(None);
    };
    let shown = super::text::shown(Path::new(target));
    let a = git
        .aux(&[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--no-relative",
            "--no-ext-diff",
            "--no-textconv",
            "HEAD",
            target,
            "--",
        ])
        .await?;
    if a.code != 0 {
        return Ok(Some(format!(
            "git {} `{shown}`: cannot tell which paths it would change ({}), so the permission rules cannot judge them; refused",
            op.as_str(),
            a.first_error()
        )));
    }
    let denied: Vec<String> = a
        .stdout
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .filter(|n| judge.check_real(&top.join(n), Level::Write).is_err())
        .collect();
    Ok((!denied.is_empty()).then(|| {
        format!(
            "git {} `{shown}` would rewrite {} path(s) the permission rules deny ({}); refused",
            op.as_str(),
            denied.len(),
            shown_units(&denied)
        )
    }))
}

/// `blob` or `tree` when `arg` (or a side of a range in it) names one (a
/// `<rev>:<path>` argument), whose content `diff` shows past every pathspec.
async fn content_object(git: &Git<'_>, arg: &str) -> Result<Option<&'static str>, Halt> {
    let mut names: Vec<&str> = vec![arg];
    if let Some((l, r)) = arg.split_once("...").or_else(|| arg.split_once("..")) {
        names.extend([l, r]);
    }
    for name in names {
        let name = name.trim_start_matches('^');
        if name.is_empty() {
            continue;
        }
        for form in [name.to_owned(), format!("{name}^{{}}")] {
            let t = git
                .aux(&["cat-file", "-t", "--end-of-options", &form])
                .await?;
            if t.code != 0 {
                continue;
            }
            match String::from_utf8_lossy(&t.stdout).trim() {
                "blob" => return Ok(Some("blob")),
                "tree" => return Ok(Some("tree")),
                _ => {}
            }
        }
    }
    Ok(None)
}

/// The denied paths among `names` (relative to `cwd`), each replaced by its
/// topmost folder holding no allowed path, so a denied tree is one unit.
fn denied_units(cwd: &Path, names: &[String], allowed: impl Fn(&Path) -> bool) -> Vec<String> {
    let mut denied = Vec::new();
    let mut mixed: BTreeSet<&str> = BTreeSet::new();
    for n in names {
        if allowed(&cwd.join(n)) {
            let mut s = n.as_str();
            while let Some(i) = s.rfind('/') {
                s = &s[..i];
                if !mixed.insert(s) {
                    break;
                }
            }
        } else {
            denied.push(n.as_str());
        }
    }
    let mut units = BTreeSet::new();
    for d in denied {
        let mut unit = d;
        let mut end = 0;
        while let Some(i) = d[end..].find('/') {
            let dir = &d[..end + i];
            if !mixed.contains(dir) {
                unit = dir;
                break;
            }
            end += i + 1;
        }
        units.insert(unit.to_owned());
    }
    units.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_tree_is_one_unit_and_mixed_folders_are_split() {
        let cwd = Path::new("/r");
        let names: Vec<String> = ["a.txt", "secrets/k", "secrets/x/y", "mix/ok", "mix/no"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let allowed = |p: &Path| {
            let s = p.to_string_lossy();
            !(s.starts_with("/r/secrets/") || s == "/r/mix/no")
        };
        assert_eq!(denied_units(cwd, &names, allowed), ["mix/no", "secrets"]);
    }
}
