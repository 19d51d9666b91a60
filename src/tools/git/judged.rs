//! The permission rules over a repository's paths at run time: `files` are
//! judged before the run (`spec.rs`), but `git add` with no path, `git diff`
//! or `git status` reach every file. Each file git knows here (tracked or
//! untracked) is judged at the level the operation needs; the ones the rules
//! deny are left out of status, diff, log and add (`:(exclude,literal)`
//! pathspecs, a denied folder excluded whole, and a warning says how many),
//! and an operation that cannot leave them out (commit, checkout, reset,
//! stash) is refused when a denied path has changes.

use std::collections::BTreeSet;
use std::path::Path;

use super::error::Halt;
use super::params::{GitAction, GitOperation};
use super::runner::Git;
use crate::model::Level;
use crate::tools::judge::PathJudge;

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
fn level(op: GitOperation) -> Option<Level> {
    match op {
        GitOperation::Status | GitOperation::Diff | GitOperation::Log => Some(Level::Read),
        GitOperation::Add
        | GitOperation::Commit
        | GitOperation::Checkout
        | GitOperation::Reset
        | GitOperation::Stash => Some(Level::Write),
        // No pathspec: their needs are the repository's (judged before the run).
        GitOperation::Push | GitOperation::Pull | GitOperation::Branch => None,
    }
}

/// Judge the repository's paths for this step.
pub(super) async fn judge(git: &Git<'_>, a: &GitAction, judge: &PathJudge) -> Result<Judged, Halt> {
    let Some(level) = level(a.params.operation) else {
        return Ok(Judged::Clear);
    };
    let mut args = vec!["ls-files", "-z", "--cached", "--others"];
    if !a.params.force {
        args.push("--exclude-standard");
    }
    let names = git.names(&args).await?;
    let units = denied_units(&git.cwd, &names, |p| judge.check_real(p, level).is_ok());
    if units.is_empty() {
        return Ok(Judged::Clear);
    }
    let pathspecs: Vec<String> = units
        .iter()
        .map(|u| format!(":(exclude,literal){u}"))
        .collect();
    match a.params.operation {
        GitOperation::Status | GitOperation::Diff | GitOperation::Log | GitOperation::Add => {
            Ok(Judged::Exclude(pathspecs))
        }
        _ => {
            let mut status: Vec<String> = vec![
                "status".into(),
                "--porcelain".into(),
                "-z".into(),
                "--untracked-files=all".into(),
                "--".into(),
            ];
            status.extend(units.iter().map(|u| format!(":(literal){u}")));
            let refs: Vec<&str> = status.iter().map(String::as_str).collect();
            let changed = git.names(&refs).await?;
            if changed.is_empty() {
                Ok(Judged::Clear)
            } else {
                Ok(Judged::Refused(format!(
                    "git {} would touch {} changed path(s) the permission rules deny (under {}); refused",
                    a.params.operation.as_str(),
                    changed.len(),
                    units
                        .iter()
                        .take(3)
                        .map(|u| format!("`{u}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
    }
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
