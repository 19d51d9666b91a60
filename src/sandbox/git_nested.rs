//! Nested repositories a step leaves in the workspace: a step below
//! dangerous may create one (`git init sub`, `git clone`), but nothing in it
//! that would make the user's later git commands there run a program.
//!
//! After the step (its processes are gone by then), [`sweep`] walks the
//! workspace (links never followed, the run's output folder and the
//! workspace's own git directories left out: [`super::git_guard`] keeps
//! those) for git directories: every entry named `.git`, and every folder
//! git would take for a bare repository (`HEAD` beside `objects`, `refs` or
//! `commondir`). One the step created or changed (a watched file's ctime,
//! which no process can set back, is not older than the step) loses, each
//! named with its reason:
//!
//! - a `.git` that is not a folder (a `gitdir:` file or a link: it points
//!   git at a folder plangate does not judge), and a `commondir` file;
//! - `config` and `config.worktree` when a key may run a program or is not
//!   known (`policy::git::config::judge_stored_key`; includes count), when
//!   the file cannot be read as git configuration, or is not a regular file;
//! - every entry of `hooks/` but a regular `*.sample` file (and `hooks`
//!   itself when it is not a folder).
//!
//! The step then fails. A plain `git init` or `git clone` leaves only
//! harmless keys and sample hooks, so nothing is removed. Fail-closed: a
//! workspace too large or too deep to walk fails the step.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::git_config::config_keys;
use super::git_marks::{Marks, marks};
use crate::policy::git::config::judge_stored_key;

/// Most workspace entries looked at; beyond, the step fails.
const MAX_ENTRIES: usize = 1_000_000;
/// Deepest folder looked at; a deeper one fails the step.
const MAX_DEPTH: usize = 64;
/// Largest configuration file read; a larger one counts as risky.
const MAX_CONFIG: u64 = 1024 * 1024;

/// A moment on the kernel's file clock (seconds, nanoseconds).
pub(crate) type Stamp = (i64, i64);

/// The kernel's file clock now: the ctime of `dir` (a folder of plangate's
/// own) after setting its mode to what it is (a change of mode always sets
/// the ctime, as creating a file would, without making an inode). Whatever
/// a step creates or changes later has a ctime at least this.
pub(crate) fn stamp(dir: &Path) -> std::io::Result<Stamp> {
    let before = dir.symlink_metadata()?;
    std::fs::set_permissions(dir, before.permissions())?;
    let m = dir.symlink_metadata()?;
    Ok((m.ctime(), m.ctime_nsec()))
}

fn fresh(p: &Path, since: Stamp) -> bool {
    p.symlink_metadata()
        .is_ok_and(|m| (m.ctime(), m.ctime_nsec()) >= since)
}

/// The git directories git would use in a workspace before a step, each
/// with what makes it one ([`super::git_marks::marks`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct Before {
    repos: HashMap<PathBuf, Marks>,
}

impl Before {
    /// The configuration files git reads for the git directories recorded
    /// (`config` and `config.worktree`, the common folder's `config`).
    pub(crate) fn configs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        // One plangate cannot tell about (git dies on its `commondir`) reads none.
        for (dir, m) in self.repos.iter().filter(|(_, m)| m.sure()) {
            out.push(dir.join("config"));
            out.push(dir.join("config.worktree"));
            if let Some(c) = m.common() {
                out.push(c.join("config"));
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Record the git directories git would use in `workspace` (the same walk
/// as [`sweep`]'s, nothing removed): what a step turns into one is judged
/// whole after it.
pub(crate) fn survey(workspace: &Path, skip: &[PathBuf]) -> std::io::Result<Before> {
    let (dirs, _) = candidates(workspace, skip)?;
    // Those plangate cannot tell about are kept too: one that stays so is
    // no more usable after the step than before; one that changes is judged.
    let repos = dirs
        .into_iter()
        .filter_map(|d| marks(&d).map(|m| (d, m)))
        .collect();
    Ok(Before { repos })
}

/// Remove from the nested git directories of `workspace` changed since
/// `since` what would make git run a program; returns each path removed
/// (relative) with its reason. A folder git takes for a git directory now
/// but did not `before` the step (or took through other files) is judged
/// whole, whatever the times of its files. `skip` are absolute paths not
/// walked (the output folder, the workspace's own git directories). An
/// error when the workspace cannot be walked whole, or a removal fails.
pub(crate) fn sweep(
    workspace: &Path,
    skip: &[PathBuf],
    since: Stamp,
    before: &Before,
) -> std::io::Result<Vec<String>> {
    let mut found = Vec::new();
    let (dirs, traps) = candidates(workspace, skip)?;
    for (trap, what) in traps {
        // Whenever it came: nothing of value is a FIFO, socket or device there.
        super::git_guard::remove(&trap)?;
        found.push((
            trap,
            format!(
                "{what} where git and plangate open a file by name: it would block them, and the user's git"
            ),
        ));
    }
    for dir in dirs {
        // Became a git directory during the step: judged by all it holds.
        let whole = marks(&dir).is_some_and(|m| before.repos.get(&dir) != Some(&m));
        judge(&dir, dir != workspace, since, whole, &mut found)?;
    }
    Ok(found
        .into_iter()
        .map(|(p, why)| {
            let rel = p.strip_prefix(workspace).unwrap_or(&p);
            format!("{} ({why})", rel.display())
        })
        .collect())
}

/// A special file planted where git or plangate opens a file by name, and what it is.
type Trap = (PathBuf, &'static str);

/// Every git directory (or `.git` entry) under `workspace`, but the skipped
/// paths; and every special file (or link to one) where git or plangate
/// opens a file by name: `.gitignore`, `.gitattributes`... in any folder,
/// anything in a git directory ([`crate::regular::opened_by_name`]), and
/// what a folder's `.git` file leads the diff's walker to inside the
/// workspace ([`crate::regular::walk_trap`]).
fn candidates(workspace: &Path, skip: &[PathBuf]) -> std::io::Result<(Vec<PathBuf>, Vec<Trap>)> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut traps: Vec<Trap> = Vec::new();
    let mut stack = vec![(workspace.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let mut names: Vec<(std::ffi::OsString, std::fs::FileType)> = Vec::new();
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            // Gone or unreadable since it was listed: nothing of git's to run there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(std::io::Error::other(format!(
                    "cannot list `{}` to look for planted git repositories: {e}",
                    dir.display()
                )));
            }
        };
        for e in rd {
            let e = e?;
            names.push((e.file_name(), e.file_type()?));
        }
        seen += names.len();
        if seen > MAX_ENTRIES {
            return Err(std::io::Error::other(format!(
                "the workspace holds more than {MAX_ENTRIES} entries: too many to look for planted git repositories"
            )));
        }
        let has = |n: &str| names.iter().any(|(x, _)| x == n);
        let bare = has("HEAD") && (has("objects") || has("refs") || has("commondir"));
        if bare {
            out.push(dir.clone());
        }
        let in_git = |name: &std::ffi::OsStr| {
            bare || dir
                .strip_prefix(workspace)
                .is_ok_and(|r| crate::regular::in_git_dir(&r.join(name)))
        };
        if let Some(t) = crate::regular::walk_trap(&dir)
            && t.starts_with(workspace)
            && !skip.iter().any(|s| t.starts_with(s))
            && let Some(what) = crate::regular::blocking(&t)
        {
            traps.push((t, what));
        }
        for (name, ft) in &names {
            let path = dir.join(name);
            if skip.contains(&path) {
                continue;
            }
            if !ft.is_dir()
                && !ft.is_file()
                && crate::regular::opened_by_name(name, in_git(name))
                && let Some(what) = crate::regular::blocking(&path)
            {
                traps.push((path.clone(), what));
                continue;
            }
            if name == ".git" && !ft.is_dir() {
                out.push(path);
                continue;
            }
            if ft.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    return Err(std::io::Error::other(format!(
                        "the workspace is deeper than {MAX_DEPTH} folders (`{}`): too deep to look for planted git repositories",
                        path.display()
                    )));
                }
                stack.push((path, depth + 1));
            }
        }
    }
    out.sort();
    out.dedup();
    traps.sort();
    traps.dedup();
    Ok((out, traps))
}

/// Judge one git directory (or `.git` entry) `dir`; what must go is removed
/// and pushed on `found`.
fn judge(
    dir: &Path,
    nested: bool,
    since: Stamp,
    whole: bool,
    found: &mut Vec<(PathBuf, String)>,
) -> std::io::Result<()> {
    let Ok(meta) = dir.symlink_metadata() else {
        return Ok(());
    };
    if !meta.is_dir() {
        if fresh(dir, since) {
            super::git_guard::remove(dir)?;
            found.push((
                dir.to_path_buf(),
                "a `.git` file or link points git at another folder".to_owned(),
            ));
        }
        return Ok(());
    }
    let hooks = dir.join("hooks");
    let mut watched = vec![
        dir.join("config"),
        dir.join("config.worktree"),
        dir.join("commondir"),
        hooks.clone(),
    ];
    if hooks.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(&hooks)?.flatten() {
            watched.push(e.path());
        }
    }
    // Created or moved here during the step: the folder and its parent
    // changed (the workspace itself is judged by its files alone).
    let placed = nested && fresh(dir, since) && dir.parent().is_some_and(|p| fresh(p, since));
    if !whole && !placed && !watched.iter().any(|p| fresh(p, since)) {
        return Ok(());
    }
    let mut drop = |p: PathBuf, why: String| -> std::io::Result<()> {
        super::git_guard::remove(&p)?;
        found.push((p, why));
        Ok(())
    };
    let common = dir.join("commondir");
    if common.symlink_metadata().is_ok() {
        drop(
            common,
            "a `commondir` file points git at another folder".to_owned(),
        )?;
    }
    for name in ["config", "config.worktree"] {
        let p = dir.join(name);
        if let Some(why) = config_risk(&p) {
            drop(p, why)?;
        }
    }
    match hooks.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            let mut entries: Vec<_> = std::fs::read_dir(&hooks)?.flatten().collect();
            entries.sort_by_key(std::fs::DirEntry::file_name);
            for e in entries {
                let sample = e.file_name().to_string_lossy().ends_with(".sample")
                    && e.file_type().is_ok_and(|t| t.is_file());
                if !sample {
                    drop(e.path(), "an active git hook".to_owned())?;
                }
            }
        }
        Ok(_) => drop(hooks, "`hooks` is not a folder".to_owned())?,
        Err(_) => {}
    }
    Ok(())
}

/// Why the configuration file `p` may make git run a program, or None when
/// it is absent or harmless.
fn config_risk(p: &Path) -> Option<String> {
    let m = p.symlink_metadata().ok()?;
    if !m.is_file() {
        return Some("the configuration is not a regular file".to_owned());
    }
    if m.len() > MAX_CONFIG {
        return Some("the configuration is too large to judge".to_owned());
    }
    let Some(keys) = crate::regular::read(p)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| config_keys(&t))
    else {
        return Some("the configuration cannot be read as git configuration".to_owned());
    };
    keys.iter().find_map(|k| judge_stored_key(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(root: &Path, name: &str, config: &str) -> PathBuf {
        let g = root.join(name).join(".git");
        for d in ["hooks", "objects", "refs"] {
            std::fs::create_dir_all(g.join(d)).expect("mkdir");
        }
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(g.join("config"), config).expect("write");
        std::fs::write(g.join("hooks/pre-commit.sample"), "#!/bin/sh\n").expect("write");
        g
    }

    #[test]
    fn a_folder_that_becomes_a_git_directory_is_judged_whole() {
        let t = tempfile::tempdir().expect("tmp");
        let ws = t.path();
        let evil = ws.join("c/evil");
        std::fs::create_dir_all(evil.join("refs/heads")).expect("mkdir");
        std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(evil.join("config"), "[alias]\n\tst = !x\n").expect("write");
        let old = repo(ws, "old", "[core]\n\tfsmonitor = x\n");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before = survey(ws, &[]).expect("survey");
        assert_eq!(
            before.configs(),
            [old.join("config"), old.join("config.worktree")]
        );
        let since = stamp(ws).expect("stamp");
        // Only `objects` is new: no watched file changed.
        std::fs::create_dir(evil.join("objects")).expect("mkdir");
        assert_eq!(
            sweep(ws, &[], since, &before).expect("sweep"),
            ["c/evil/config (configuration `alias.st` can make git run a program)"]
        );
        assert!(old.join("config").exists());
    }

    #[test]
    fn risky_parts_of_new_repositories_go_and_old_ones_stay() {
        let t = tempfile::tempdir().expect("tmp");
        let ws = t.path();
        let old = repo(ws, "old", "[core]\n\tfsmonitor = x\n");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let since = stamp(ws).expect("stamp");
        let before = survey(ws, &[]).expect("survey");
        let plain = repo(ws, "plain", "[core]\n\tbare = false\n");
        let fsm = repo(ws, "fsm", "[core]\n\tfsmonitor = x\n");
        let hook = repo(ws, "hook", "[core]\n");
        std::fs::write(hook.join("hooks/post-checkout"), "x").expect("write");
        let bare = ws.join("bare");
        for d in ["objects", "refs", "hooks"] {
            std::fs::create_dir_all(bare.join(d)).expect("mkdir");
        }
        std::fs::write(bare.join("HEAD"), "x").expect("write");
        std::fs::write(bare.join("config"), "[alias]\nst = !x\n").expect("write");
        std::fs::create_dir_all(ws.join("file")).expect("mkdir");
        std::fs::write(ws.join("file/.git"), "gitdir: ../bare\n").expect("write");
        let common = repo(ws, "common", "not config");
        std::fs::write(common.join("commondir"), "../..\n").expect("write");
        let mut found = sweep(ws, &[], since, &before).expect("sweep");
        found.sort();
        assert_eq!(
            found,
            [
                "bare/config (configuration `alias.st` can make git run a program)",
                "common/.git/commondir (a `commondir` file points git at another folder)",
                "common/.git/config (the configuration cannot be read as git configuration)",
                "file/.git (a `.git` file or link points git at another folder)",
                "fsm/.git/config (configuration `core.fsmonitor` can make git run a program)",
                "hook/.git/hooks/post-checkout (an active git hook)",
            ]
        );
        assert!(old.join("config").exists() && plain.join("config").exists());
        assert!(hook.join("hooks/pre-commit.sample").exists());
        // The skipped paths are not looked at.
        std::fs::write(fsm.join("config"), "[core]\n\tfsmonitor = x\n").expect("write");
        assert!(
            sweep(ws, &[ws.join("fsm")], since, &before)
                .expect("sweep")
                .is_empty()
        );
    }
}
