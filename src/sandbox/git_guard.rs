//! The files that make git run code later (hooks, configuration, attributes,
//! a `.git` file that points elsewhere): a step not approved as dangerous may
//! not change them. plangate's own git commands already ignore hooks and the
//! risky settings; this guard makes sure nothing a step plants survives it,
//! for the user's later git commands too.
//!
//! [`Snapshot::take`] records them before a step; [`Snapshot::undo_changes`]
//! compares after it, puts back what changed (never following a symbolic link
//! the step may have planted) and names what it undid, so the step fails.
//! Under bwrap the existing ones are also bound read-only
//! ([`existing_roots`]), so most attempts fail at once.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Most bytes of protected files kept in a snapshot; above, the snapshot
/// fails (fail-close: the step is not run).
const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How deep nested submodules (`.git/modules/a/modules/b/...`) are followed.
const MAX_DEPTH: usize = 12;

/// Files directly in a git directory that make git run code.
const FILES: [&str; 3] = ["config", "config.worktree", "info/attributes"];

/// One protected entry as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    Dir,
    Link(PathBuf),
    /// A FIFO, socket or device: recorded by its type and mode, never read
    /// (opening a FIFO would block plangate until a writer came).
    Special {
        mode: u32,
        rdev: u64,
    },
}

/// The protected files of a workspace at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    workspace: PathBuf,
    entries: BTreeMap<PathBuf, Entry>,
}

/// The existing protected roots of `workspace` (for read-only binds): its
/// `.git` file, or its git directory's hooks folder and configuration files.
pub(crate) fn existing_roots(workspace: &Path) -> Vec<PathBuf> {
    let git = workspace.join(".git");
    let Ok(meta) = git.symlink_metadata() else {
        return Vec::new();
    };
    if !meta.is_dir() {
        return vec![git];
    }
    let mut out: Vec<PathBuf> = ["hooks", "modules"]
        .iter()
        .chain(FILES.iter())
        .map(|f| git.join(f))
        .filter(|p| p.symlink_metadata().is_ok())
        .collect();
    out.sort();
    out
}

impl Snapshot {
    /// Record the protected files of `workspace`.
    pub(crate) fn take(workspace: &Path) -> std::io::Result<Snapshot> {
        let mut s = Snapshot {
            workspace: workspace.to_path_buf(),
            entries: BTreeMap::new(),
        };
        let mut budget = MAX_BYTES;
        for rel in protected(workspace) {
            if let Some(e) = read_entry(&workspace.join(&rel), &mut budget)? {
                s.entries.insert(rel, e);
            }
        }
        Ok(s)
    }

    /// Put back every protected file that differs from the snapshot; returns
    /// the paths (relative to the workspace) that were changed.
    pub(crate) fn undo_changes(&self) -> std::io::Result<Vec<String>> {
        let now = Snapshot::take(&self.workspace)?;
        let mut changed: Vec<&PathBuf> = self
            .entries
            .keys()
            .chain(now.entries.keys())
            .filter(|p| self.entries.get(*p) != now.entries.get(*p))
            .collect();
        changed.sort();
        changed.dedup();
        // Remove what is new first, deepest first, then restore what was there.
        for rel in changed.iter().rev() {
            if !self.entries.contains_key(*rel) {
                remove(&self.workspace.join(rel))?;
            }
        }
        for rel in &changed {
            if let Some(e) = self.entries.get(*rel) {
                self.restore(rel, e)?;
            }
        }
        Ok(changed.iter().map(|p| p.display().to_string()).collect())
    }

    fn restore(&self, rel: &Path, e: &Entry) -> std::io::Result<()> {
        let path = self.workspace.join(rel);
        make_parents(&self.workspace, rel)?;
        remove(&path)?;
        match e {
            Entry::Dir => std::fs::create_dir(&path),
            Entry::Link(target) => std::os::unix::fs::symlink(target, &path),
            Entry::File { bytes, mode } => {
                std::fs::write(&path, bytes)?;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))
            }
            Entry::Special { mode, rdev } => {
                // A FIFO is made again; a socket or device cannot be (fail-closed: an error).
                let ft = rustix::fs::FileType::from_raw_mode(*mode);
                if ft != rustix::fs::FileType::Fifo {
                    return Err(std::io::Error::other(format!(
                        "cannot put back the special file `{}`",
                        rel.display()
                    )));
                }
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &path,
                    ft,
                    rustix::fs::Mode::from_raw_mode(*mode & 0o7777),
                    *rdev,
                )
                .map_err(std::io::Error::from)
            }
        }
    }
}

/// The protected paths that exist now, relative to `workspace`.
fn protected(workspace: &Path) -> Vec<PathBuf> {
    let git = PathBuf::from(".git");
    let Ok(meta) = workspace.join(&git).symlink_metadata() else {
        return Vec::new();
    };
    let mut out = vec![git.clone()];
    if meta.is_dir() {
        git_dir(workspace, &git, 0, &mut out);
    }
    out
}

/// The protected paths of the git directory `dir` (relative), and of its submodules.
fn git_dir(workspace: &Path, dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    for f in ["info"].iter().chain(FILES.iter()) {
        let rel = dir.join(f);
        if workspace.join(&rel).symlink_metadata().is_ok() {
            out.push(rel);
        }
    }
    tree(workspace, &dir.join("hooks"), out);
    if depth >= MAX_DEPTH {
        return;
    }
    let modules = dir.join("modules");
    let Ok(meta) = workspace.join(&modules).symlink_metadata() else {
        return;
    };
    out.push(modules.clone());
    if !meta.is_dir() {
        return;
    }
    for name in sorted_children(&workspace.join(&modules)) {
        let sub = modules.join(name);
        let abs = workspace.join(&sub);
        match abs.symlink_metadata() {
            Ok(m) if m.is_dir() => {
                out.push(sub.clone());
                git_dir(workspace, &sub, depth + 1, out);
            }
            Ok(_) => out.push(sub),
            Err(_) => {}
        }
    }
}

/// `rel` and everything beneath it (symbolic links are entries, never followed).
fn tree(workspace: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let abs = workspace.join(rel);
    let Ok(meta) = abs.symlink_metadata() else {
        return;
    };
    out.push(rel.to_path_buf());
    if meta.is_dir() {
        for name in sorted_children(&abs) {
            tree(workspace, &rel.join(name), out);
        }
    }
}

fn sorted_children(dir: &Path) -> Vec<std::ffi::OsString> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn read_entry(path: &Path, budget: &mut u64) -> std::io::Result<Option<Entry>> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    Ok(Some(if ft.is_symlink() {
        Entry::Link(std::fs::read_link(path)?)
    } else if ft.is_dir() {
        Entry::Dir
    } else if !ft.is_file() {
        use std::os::unix::fs::MetadataExt;
        Entry::Special {
            mode: meta.mode(),
            rdev: meta.rdev(),
        }
    } else {
        *budget = budget.checked_sub(meta.len()).ok_or_else(|| {
            std::io::Error::other(format!(
                "the git hooks and configuration exceed {} MiB",
                MAX_BYTES / 1024 / 1024
            ))
        })?;
        Entry::File {
            // Swapped for a FIFO since the check above: refused, never a hang.
            bytes: crate::regular::read(path)?,
            mode: meta.permissions().mode() & 0o7777,
        }
    }))
}

/// Remove whatever is at `path` (a link itself, never its target).
fn remove(path: &Path) -> std::io::Result<()> {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Make every parent of `rel` under `workspace` a real directory (a link the
/// step put in place of one is removed, so nothing is written through it).
fn make_parents(workspace: &Path, rel: &Path) -> std::io::Result<()> {
    let mut cur = workspace.to_path_buf();
    let parents: Vec<_> = rel.components().collect();
    for c in parents.iter().take(parents.len().saturating_sub(1)) {
        cur.push(c);
        match cur.symlink_metadata() {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                std::fs::remove_file(&cur)?;
                std::fs::create_dir(&cur)?;
            }
            Err(_) => std::fs::create_dir(&cur)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tempdir");
        let g = d.path().join(".git");
        std::fs::create_dir_all(g.join("hooks")).expect("mkdir");
        std::fs::create_dir_all(g.join("objects")).expect("mkdir");
        std::fs::write(g.join("config"), "[core]\n").expect("write");
        std::fs::write(g.join("hooks/pre-commit.sample"), "#!/bin/sh\n").expect("write");
        d
    }

    #[test]
    fn unchanged_is_nothing() {
        let d = repo();
        let s = Snapshot::take(d.path()).expect("snapshot");
        std::fs::write(d.path().join(".git/objects/x"), "ok").expect("write");
        std::fs::write(d.path().join("file"), "ok").expect("write");
        assert!(s.undo_changes().expect("undo").is_empty());
    }

    #[test]
    fn new_hook_changed_config_and_link_are_undone() {
        let d = repo();
        let outside = tempfile::tempdir().expect("tempdir");
        let s = Snapshot::take(d.path()).expect("snapshot");
        let g = d.path().join(".git");
        std::fs::write(g.join("hooks/post-checkout"), "#!/bin/sh\n").expect("write");
        std::fs::write(g.join("config"), "[core]\nfsmonitor = x\n").expect("write");
        std::fs::write(g.join("config.worktree"), "[core]\n").expect("write");
        std::fs::remove_dir_all(g.join("hooks")).expect("rm");
        std::os::unix::fs::symlink(outside.path(), g.join("hooks")).expect("symlink");
        let changed = s.undo_changes().expect("undo");
        assert!(changed.contains(&".git/config".to_owned()), "{changed:?}");
        assert!(changed.contains(&".git/hooks".to_owned()), "{changed:?}");
        assert!(
            changed.contains(&".git/config.worktree".to_owned()),
            "{changed:?}"
        );
        assert_eq!(
            std::fs::read_to_string(g.join("config")).expect("read"),
            "[core]\n"
        );
        assert!(!g.join("config.worktree").exists());
        assert!(g.join("hooks").symlink_metadata().expect("hooks").is_dir());
        assert!(g.join("hooks/pre-commit.sample").is_file());
        assert!(!g.join("hooks/post-checkout").exists());
        assert_eq!(std::fs::read_dir(outside.path()).expect("dir").count(), 0);
        assert!(Snapshot::take(d.path()).expect("again").entries == s.entries);
    }

    #[test]
    fn a_git_file_is_protected_too() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join(".git"), "gitdir: /elsewhere\n").expect("write");
        let s = Snapshot::take(d.path()).expect("snapshot");
        std::fs::write(d.path().join(".git"), "gitdir: ./evil\n").expect("write");
        assert_eq!(s.undo_changes().expect("undo"), [".git"]);
        assert_eq!(
            std::fs::read_to_string(d.path().join(".git")).expect("read"),
            "gitdir: /elsewhere\n"
        );
        assert_eq!(existing_roots(d.path()), [d.path().join(".git")]);
    }
}
