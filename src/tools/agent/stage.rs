//! The staged copy an agent CLI works in, so that an answer plangate rejects
//! leaves the workspace byte-identical.
//!
//! [`Stage::create`] copies the workspace into a private temporary folder
//! (regular files with `copy_file_range`, so a copy-on-write filesystem
//! shares their blocks; links as links; special files left out), except the
//! run's output folder, `.git/objects` (reached through git's `alternates`,
//! read-only) and what the permission rules forbid the step to read. It
//! notes every entry's metadata, in the copy and in the workspace.
//! [`Stage::changes`] compares the copy with those notes (content compared
//! where only metadata moved) and refuses a change to a path the workspace
//! itself changed meanwhile. [`Stage::reset`] undoes a rejected attempt's
//! changes from the workspace, so the retry starts from the clean state.
//! Each attempt also gets a fresh private home for the CLI's own state.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::changes::{Change, ChangeSet, Source, What};
use crate::model::Change as ChangeKind;
use crate::tools::StepContext;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
}

/// The metadata that tells a change.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    kind: Kind,
    len: u64,
    mtime: (i64, i64),
    ino: u64,
    mode: u32,
}

impl Meta {
    fn of(m: &std::fs::Metadata) -> Option<Meta> {
        let t = m.file_type();
        let kind = if t.is_symlink() {
            Kind::Link
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_file() {
            Kind::File
        } else {
            return None;
        };
        Some(Meta {
            kind,
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ino: m.ino(),
            mode: m.mode() & 0o7777,
        })
    }

    fn read(path: &Path) -> Option<Meta> {
        std::fs::symlink_metadata(path)
            .ok()
            .as_ref()
            .and_then(Meta::of)
    }
}

#[derive(Debug, Clone)]
struct Entry {
    staged: Meta,
    original: Meta,
}

/// A staged copy of the workspace and the CLI's private home.
#[derive(Debug)]
pub(crate) struct Stage {
    root: tempfile::TempDir,
    /// The copy the agent works in.
    pub ws: PathBuf,
    workspace: PathBuf,
    out_dir: PathBuf,
    baseline: BTreeMap<String, Entry>,
}

impl Stage {
    /// Copy the workspace of `ctx` (see the module doc).
    pub(crate) fn create(ctx: &StepContext) -> Result<Stage, String> {
        let root = tempfile::Builder::new()
            .prefix("plangate-stage-")
            .tempdir()
            .map_err(|e| format!("cannot create the agent's staged copy: {e}"))?;
        let ws = root.path().join("workspace");
        let mut stage = Stage {
            ws,
            workspace: ctx.env.workspace.clone(),
            out_dir: ctx.out_dir.clone(),
            baseline: BTreeMap::new(),
            root,
        };
        std::fs::create_dir(&stage.ws)
            .map_err(|e| format!("cannot create the agent's staged copy: {e}"))?;
        stage.copy_tree(ctx)?;
        stage.copy_git()?;
        Ok(stage)
    }

    /// A fresh, empty private home (for the CLI's session and config files).
    pub(crate) fn fresh_home(&self) -> Result<PathBuf, String> {
        let home = self.root.path().join("home");
        if home.exists() {
            std::fs::remove_dir_all(&home)
                .map_err(|e| format!("cannot clear the agent's private home: {e}"))?;
        }
        std::fs::create_dir(&home)
            .map_err(|e| format!("cannot create the agent's private home: {e}"))?;
        Ok(home)
    }

    fn skip(&self, path: &Path) -> bool {
        path == self.out_dir || path == self.workspace.join(".git")
    }

    fn copy_tree(&mut self, ctx: &StepContext) -> Result<(), String> {
        let mut dirs: Vec<(PathBuf, u32)> = Vec::new();
        let walk = walkdir::WalkDir::new(&self.workspace)
            .min_depth(1)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| {
                !self.skip(e.path())
                    && ctx
                        .judge
                        .as_ref()
                        .is_none_or(|j| j.check_real(e.path(), crate::model::Level::Read).is_ok())
            });
        let mut found: Vec<(String, PathBuf, Meta)> = Vec::new();
        for entry in walk {
            let entry = entry.map_err(|e| format!("cannot read the workspace to stage it: {e}"))?;
            let Ok(rel) = entry.path().strip_prefix(&self.workspace) else {
                continue;
            };
            let Some(rel) = rel.to_str() else {
                return Err(format!(
                    "`{}` is not a UTF-8 name; an agent step cannot stage this workspace",
                    rel.display()
                ));
            };
            let Some(meta) = Meta::read(entry.path()) else {
                continue; // sockets, fifos, devices: never copied
            };
            found.push((rel.to_owned(), entry.path().to_path_buf(), meta));
        }
        for (rel, src, original) in found {
            let dest = self.ws.join(&rel);
            copy_entry(&src, &dest, original.kind)
                .map_err(|e| format!("cannot stage `{rel}`: {e}"))?;
            if original.kind == Kind::Dir {
                dirs.push((dest.clone(), original.mode));
            }
            let Some(staged) = Meta::read(&dest) else {
                return Err(format!("cannot stage `{rel}`"));
            };
            self.baseline.insert(rel, Entry { staged, original });
        }
        // Modes last: a read-only folder is filled first.
        for (d, mode) in dirs.into_iter().rev() {
            let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode));
        }
        Ok(())
    }

    /// `.git` without its object store (reached through `alternates`), or a `.git` file as it is.
    fn copy_git(&self) -> Result<(), String> {
        let git = self.workspace.join(".git");
        let dest = self.ws.join(".git");
        let Ok(m) = std::fs::symlink_metadata(&git) else {
            return Ok(());
        };
        if !m.is_dir() {
            return copy_entry(
                &git,
                &dest,
                if m.is_file() { Kind::File } else { Kind::Link },
            )
            .map_err(|e| format!("cannot stage `.git`: {e}"));
        }
        let objects = git.join("objects");
        let lfs = git.join("lfs");
        for entry in walkdir::WalkDir::new(&git)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| e.path() != objects && e.path() != lfs)
        {
            let entry = entry.map_err(|e| format!("cannot stage `.git`: {e}"))?;
            let Ok(rel) = entry.path().strip_prefix(&git) else {
                continue;
            };
            let Some(meta) = Meta::read(entry.path()) else {
                continue;
            };
            copy_entry(entry.path(), &dest.join(rel), meta.kind)
                .map_err(|e| format!("cannot stage `.git/{}`: {e}", rel.display()))?;
        }
        if objects.is_dir() {
            let info = dest.join("objects/info");
            std::fs::create_dir_all(&info)
                .and_then(|()| std::fs::create_dir_all(dest.join("objects/pack")))
                .and_then(|()| {
                    std::fs::write(info.join("alternates"), format!("{}\n", objects.display()))
                })
                .map_err(|e| format!("cannot stage `.git`: {e}"))?;
        }
        Ok(())
    }

    /// What the agent changed in the copy, as a change set against the
    /// workspace; refused when the workspace itself changed one of those paths meanwhile.
    pub(crate) fn changes(&self) -> Result<ChangeSet, String> {
        let set = self.diff()?;
        self.no_conflict(&set)?;
        Ok(set)
    }

    /// What the agent changed in the copy (a read-only agent's attempt,
    /// never applied): no check against the workspace.
    pub(crate) fn attempted(&self) -> Result<ChangeSet, String> {
        self.diff()
    }

    /// What changed in the copy since it was made (or last reset).
    fn diff(&self) -> Result<ChangeSet, String> {
        let mut set = ChangeSet::default();
        let mut seen: HashSet<String> = HashSet::new();
        let git = self.ws.join(".git");
        let walk = walkdir::WalkDir::new(&self.ws)
            .min_depth(1)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| e.path() != git);
        for entry in walk {
            let entry = entry.map_err(|e| format!("cannot read the agent's changes: {e}"))?;
            let Ok(rel) = entry.path().strip_prefix(&self.ws) else {
                continue;
            };
            let Some(rel) = rel.to_str().map(str::to_owned) else {
                return Err(format!(
                    "the agent created `{}`, which is not a UTF-8 name",
                    rel.display()
                ));
            };
            let Some(now) = Meta::read(entry.path()) else {
                return Err(format!(
                    "the agent created `{rel}`, which is neither a file, a folder nor a link"
                ));
            };
            let kind = match self.baseline.get(&rel) {
                Some(e) if !self.differs(&rel, e, &now)? => {
                    seen.insert(rel);
                    continue;
                }
                Some(_) => ChangeKind::Modified,
                None => ChangeKind::Added,
            };
            let what = match now.kind {
                Kind::File => What::File {
                    source: Source::Staged(entry.path().to_path_buf()),
                    mode: now.mode,
                    len: now.len,
                },
                Kind::Link => What::Link(
                    std::fs::read_link(entry.path())
                        .map_err(|e| format!("cannot read the link `{rel}`: {e}"))?,
                ),
                Kind::Dir => What::Dir(now.mode),
            };
            seen.insert(rel.clone());
            set.changes.push(Change {
                path: rel,
                kind,
                what,
            });
        }
        for (rel, e) in &self.baseline {
            if !seen.contains(rel) {
                set.changes.push(Change {
                    path: rel.clone(),
                    kind: ChangeKind::Deleted,
                    what: if e.original.kind == Kind::Dir {
                        What::RemoveDir
                    } else {
                        What::Remove
                    },
                });
            }
        }
        Ok(set)
    }

    /// Whether the copy's `rel` differs from the workspace's as staged.
    fn differs(&self, rel: &str, e: &Entry, now: &Meta) -> Result<bool, String> {
        if now.kind != e.staged.kind || now.mode != e.staged.mode {
            return Ok(true);
        }
        match now.kind {
            Kind::Dir => Ok(false),
            Kind::Link => Ok(now != &e.staged
                && std::fs::read_link(self.ws.join(rel)).ok()
                    != std::fs::read_link(self.workspace.join(rel)).ok()),
            Kind::File if now == &e.staged => Ok(false),
            Kind::File if now.len != e.original.len => Ok(true),
            Kind::File => same_content(&self.ws.join(rel), &self.workspace.join(rel))
                .map(|same| !same)
                .map_err(|err| format!("cannot compare `{rel}`: {err}")),
        }
    }

    /// A change to a path the workspace changed while the agent worked is refused.
    fn no_conflict(&self, set: &ChangeSet) -> Result<(), String> {
        for c in &set.changes {
            let now = Meta::read(&self.workspace.join(&c.path));
            let before = self.baseline.get(&c.path).map(|e| &e.original);
            let same = match (before, &now) {
                (None, None) => true,
                (Some(b), Some(n)) if b.kind == Kind::Dir => n.kind == Kind::Dir,
                (Some(b), Some(n)) => b == n,
                _ => false,
            };
            if !same {
                return Err(format!(
                    "`{}` changed in the workspace while the agent worked on its copy (another step?); nothing was applied",
                    c.path
                ));
            }
        }
        Ok(())
    }

    /// Undo a rejected attempt in the copy: removed and modified entries
    /// come back from the workspace, added ones go, and `.git` is staged
    /// again. Any failure: the copy is made again from scratch. Returns how
    /// many paths the attempt had changed.
    pub(crate) fn reset(&mut self, ctx: &StepContext) -> Result<u64, String> {
        let undone = self
            .diff()
            .ok()
            .and_then(|set| self.undo(&set).ok().map(|()| set.listed().len() as u64));
        match undone {
            Some(n) => Ok(n),
            None => {
                *self = Stage::create(ctx)?;
                Ok(0)
            }
        }
    }

    fn undo(&mut self, set: &ChangeSet) -> std::io::Result<()> {
        let mut order: Vec<&Change> = set.changes.iter().collect();
        // Parents before children when putting back; removal order does not matter.
        order.sort_by_key(|c| c.path.len());
        for c in order {
            let dest = self.ws.join(&c.path);
            if c.kind != ChangeKind::Deleted {
                match std::fs::symlink_metadata(&dest) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(&dest)?,
                    Ok(_) => std::fs::remove_file(&dest)?,
                    Err(_) => {}
                }
            }
            if c.kind == ChangeKind::Added {
                continue;
            }
            let src = self.workspace.join(&c.path);
            let meta = Meta::read(&src).ok_or_else(|| std::io::Error::other("gone"))?;
            if meta.kind == Kind::Dir && dest.is_dir() {
                continue;
            }
            copy_entry(&src, &dest, meta.kind)?;
            let staged = Meta::read(&dest).ok_or_else(|| std::io::Error::other("gone"))?;
            self.baseline.insert(
                c.path.clone(),
                Entry {
                    staged,
                    original: meta,
                },
            );
        }
        let git = self.ws.join(".git");
        if let Ok(m) = std::fs::symlink_metadata(&git) {
            if m.is_dir() {
                std::fs::remove_dir_all(&git)?;
            } else {
                std::fs::remove_file(&git)?;
            }
        }
        self.copy_git().map_err(std::io::Error::other)
    }
}

fn copy_entry(src: &Path, dest: &Path, kind: Kind) -> std::io::Result<()> {
    match kind {
        Kind::Dir => match std::fs::create_dir(dest) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dest.is_dir() => Ok(()),
            r => r,
        },
        Kind::File => {
            // Only a regular file (one swapped for a FIFO since it was listed
            // is refused, never waited on), with its permissions.
            let mut from = crate::regular::open(src)?;
            let perms = from.metadata()?.permissions();
            let mut to = std::fs::File::create(dest)?;
            std::io::copy(&mut from, &mut to)?;
            to.set_permissions(perms)
        }
        Kind::Link => std::os::unix::fs::symlink(std::fs::read_link(src)?, dest),
    }
}

fn same_content(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (mut fa, mut fb) = (crate::regular::open(a)?, crate::regular::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let na = read_full(&mut fa, &mut ba)?;
        let nb = read_full(&mut fb, &mut bb)?;
        if na != nb || ba.get(..na) != bb.get(..nb) {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(buf.get_mut(n..).unwrap_or_default())? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
