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
//!
//! Where the kernel allows it ([`crate::sandbox::overlay::available`]), the
//! stage is an overlay instead of a copy (cost O(changes), not O(tree)): the
//! CLI's process sees, at the same folder, the workspace as the lower layer
//! with every write landing in a fresh upper folder; the paths the copy
//! leaves out are whiteouts planted in the upper before the CLI starts
//! (the output folder, what the rules forbid reading). The changes are read
//! from the upper folder alone; a workspace path changed since the stage was
//! made (ctime not older than its stamp) refuses a change to it. `reset`
//! starts a fresh upper folder. `PLANGATE_STAGE=copy` (or `overlay`) forces
//! one kind.

use std::collections::{BTreeMap, BTreeSet, HashSet};
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
    /// Some: the stage is an overlay (see the module doc).
    overlay: Option<Layers>,
    /// The workspace's git stores the CLI may not read (left out of the
    /// stage, never granted), and why.
    stores: crate::tools::git_store::Hidden,
}

/// An overlay stage's layers.
#[derive(Debug)]
struct Layers {
    upper: PathBuf,
    work: PathBuf,
    /// Workspace paths hidden by whiteouts planted in the upper layer.
    planted: BTreeSet<String>,
    /// The file clock when the upper layer was made.
    stamp: (i64, i64),
}

/// Which stage to make: `PLANGATE_STAGE` (`copy`, `overlay`, unset or `auto`).
fn wants_overlay(workspace: &Path, root: &Path) -> Result<bool, String> {
    use crate::sandbox::overlay::{available, nameable};
    let fits = || nameable(workspace) && nameable(root) && available();
    match crate::environ::var("PLANGATE_STAGE").as_deref() {
        Some("copy") => Ok(false),
        Some("overlay") if fits() => Ok(true),
        Some("overlay") => Err(
            "PLANGATE_STAGE=overlay, but an overlay cannot be mounted here (unprivileged user namespaces refused, or a workspace path with `,` or `:`); unset it to use a copy".to_owned(),
        ),
        Some("auto" | "") | None => Ok(fits()),
        Some(other) => Err(format!(
            "PLANGATE_STAGE=`{other}` is not a stage kind: use `copy`, `overlay` or `auto`"
        )),
    }
}

impl Stage {
    /// Copy the workspace of `ctx` (see the module doc).
    pub(crate) fn create(ctx: &StepContext) -> Result<Stage, String> {
        let root = tempfile::Builder::new()
            .prefix("plangate-stage-")
            .tempdir()
            .map_err(|e| format!("cannot create the agent's staged copy: {e}"))?;
        let ws = root.path().join("workspace");
        let overlay = wants_overlay(&ctx.env.workspace, root.path())?;
        let mut stage = Stage {
            ws,
            workspace: ctx.env.workspace.clone(),
            out_dir: ctx.out_dir.clone(),
            baseline: BTreeMap::new(),
            overlay: None,
            stores: stores_for(ctx)?,
            root,
        };
        std::fs::create_dir(&stage.ws)
            .map_err(|e| format!("cannot create the agent's staged copy: {e}"))?;
        if overlay {
            let planted = stage.left_out(ctx)?;
            stage.overlay = Some(stage.layers(planted)?);
            return Ok(stage);
        }
        stage.copy_tree(ctx)?;
        stage.copy_git()?;
        Ok(stage)
    }

    /// What the step is warned of: the git stores left out of the stage, and why.
    pub(crate) fn store_notes(&self) -> &[String] {
        &self.stores.notes
    }

    /// Whether `p` lies in a git store the CLI may not read.
    pub(crate) fn hides(&self, p: &Path) -> bool {
        self.stores.covers(p)
    }

    /// What the report calls this stage (`agent_changes.stage`).
    pub(crate) fn kind(&self) -> &'static str {
        if self.overlay.is_some() {
            "overlay"
        } else {
            "copy"
        }
    }

    /// The overlay the CLI's process mounts (None: the stage is a copy).
    pub(crate) fn mount(&self) -> Option<crate::sandbox::overlay::OverlayMount> {
        self.overlay
            .as_ref()
            .map(|l| crate::sandbox::overlay::OverlayMount {
                lower: self.workspace.clone(),
                upper: l.upper.clone(),
                work: l.work.clone(),
                at: self.ws.clone(),
            })
    }

    /// The workspace paths an overlay hides (what the copy leaves out): the
    /// output folder, and what the rules forbid reading (the workspace is
    /// walked only when rules are in force).
    fn left_out(&self, ctx: &StepContext) -> Result<BTreeSet<String>, String> {
        let mut out = BTreeSet::new();
        if let Ok(rel) = self.out_dir.strip_prefix(&self.workspace)
            && let Some(rel) = rel.to_str()
            && !rel.is_empty()
            && self.out_dir.symlink_metadata().is_ok()
        {
            out.insert(rel.to_owned());
        }
        for p in &self.stores.inside {
            if let Some(rel) = p.strip_prefix(&self.workspace).ok().and_then(Path::to_str) {
                out.insert(rel.to_owned());
            }
        }
        let Some(judge) = ctx.judge.as_ref() else {
            return Ok(out);
        };
        let mut denied: Vec<PathBuf> = Vec::new();
        let walk = walkdir::WalkDir::new(&self.workspace)
            .min_depth(1)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| {
                if self.skip(e.path()) {
                    return false;
                }
                let ok = judge
                    .check_real(e.path(), crate::model::Level::Read)
                    .is_ok();
                if !ok {
                    denied.push(e.path().to_path_buf());
                }
                ok
            });
        for entry in walk {
            entry.map_err(|e| format!("cannot read the workspace to stage it: {e}"))?;
        }
        for p in denied {
            let Some(rel) = p.strip_prefix(&self.workspace).ok().and_then(Path::to_str) else {
                return Err(format!(
                    "`{}` is not a UTF-8 name; an agent step cannot stage this workspace",
                    p.display()
                ));
            };
            out.insert(rel.to_owned());
        }
        Ok(out)
    }

    /// Fresh upper and work folders, the whiteouts planted, the clock noted.
    fn layers(&self, planted: BTreeSet<String>) -> Result<Layers, String> {
        use crate::sandbox::overlay::{clear, plant_whiteout};
        let fail = |e: std::io::Error| format!("cannot create the agent's staged overlay: {e}");
        let upper = self.root.path().join("upper");
        let work = self.root.path().join("work");
        for d in [&upper, &work] {
            clear(d).map_err(fail)?;
            std::fs::create_dir(d).map_err(fail)?;
        }
        let mut made = Vec::new();
        for rel in &planted {
            plant_whiteout(&upper, &self.workspace, rel, &mut made).map_err(fail)?;
        }
        for (d, mode) in made.into_iter().rev() {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).map_err(fail)?;
        }
        let stamp_file = self.root.path().join("stamp");
        std::fs::write(&stamp_file, b"").map_err(fail)?;
        let m = std::fs::metadata(&stamp_file).map_err(fail)?;
        Ok(Layers {
            upper,
            work,
            planted,
            stamp: (m.ctime(), m.ctime_nsec()),
        })
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
        path == self.out_dir
            || path == self.workspace.join(".git")
            || self.stores.inside.iter().any(|h| h == path)
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
            .filter_entry(|e| {
                e.path() != objects
                    && e.path() != lfs
                    && !self.stores.inside.iter().any(|h| h == e.path())
            })
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
        if objects.is_dir() && !self.hides(&objects) {
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

    /// The agent's changes with an envelope's `files` on top (they win), as
    /// a change set against the workspace, checked as [`Stage::changes`].
    pub(crate) fn changes_with(&self, files: &[(&str, &[u8])]) -> Result<ChangeSet, String> {
        let Some(l) = &self.overlay else {
            // The envelope's files land in the copy first: one change set for both.
            ChangeSet::from_files(&self.ws, files.iter().copied()).apply(&self.ws)?;
            return self.changes();
        };
        let mut set = self.diff()?;
        for (path, content) in files {
            let before = set.changes.iter().position(|c| c.path == *path);
            let gone = before.is_some_and(|i| {
                set.changes
                    .get(i)
                    .is_some_and(|c| c.kind == ChangeKind::Deleted)
            });
            let upper = std::fs::symlink_metadata(l.upper.join(path)).ok();
            let exists = match &upper {
                Some(m) => !crate::sandbox::overlay::is_whiteout(m),
                None => {
                    !gone
                        && !l.planted.contains(*path)
                        && std::fs::symlink_metadata(self.workspace.join(path)).is_ok()
                }
            };
            if let Some(i) = before {
                set.changes.remove(i);
            }
            set.changes.push(Change {
                path: (*path).to_owned(),
                kind: if exists || gone {
                    ChangeKind::Modified
                } else {
                    ChangeKind::Added
                },
                what: What::envelope_file(content),
            });
        }
        self.no_conflict(&set)?;
        Ok(set)
    }

    /// What changed in the copy since it was made (or last reset).
    fn diff(&self) -> Result<ChangeSet, String> {
        if let Some(l) = &self.overlay {
            return self.overlay_diff(l);
        }
        let mut set = ChangeSet::default();
        let mut seen: HashSet<String> = HashSet::new();
        for found in changed_entries(&self.ws) {
            let (rel, entry) = found?;
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
            let what = what_of(entry.path(), &rel, &now)?;
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
        if let Some(l) = &self.overlay {
            return self.overlay_no_conflict(l, set);
        }
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
        if let Some(l) = self.overlay.take() {
            let n = self
                .overlay_diff(&l)
                .map_or(0, |set| set.listed().len() as u64);
            self.overlay = Some(self.layers(l.planted)?);
            return Ok(n);
        }
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

    /// What the agent changed, read from the overlay's upper layer.
    fn overlay_diff(&self, l: &Layers) -> Result<ChangeSet, String> {
        use crate::sandbox::overlay::{is_opaque, is_whiteout};
        let mut set = ChangeSet::default();
        for found in changed_entries(&l.upper) {
            let (rel, entry) = found?;
            let m = std::fs::symlink_metadata(entry.path())
                .map_err(|e| format!("cannot read the agent's change to `{rel}`: {e}"))?;
            // The workspace's entry, as the copy would have had it.
            let lower = if Path::new(&rel)
                .ancestors()
                .any(|a| a.to_str().is_some_and(|a| l.planted.contains(a)))
            {
                None
            } else {
                Meta::read(&self.workspace.join(&rel))
            };
            if is_whiteout(&m) {
                if let Some(low) = &lower {
                    if low.kind == Kind::Dir {
                        self.deleted_below(l, &rel, &mut set);
                    }
                    set.changes.push(Change {
                        path: rel,
                        kind: ChangeKind::Deleted,
                        what: if low.kind == Kind::Dir {
                            What::RemoveDir
                        } else {
                            What::Remove
                        },
                    });
                }
                continue;
            }
            let Some(now) = Meta::of(&m) else {
                return Err(format!(
                    "the agent created `{rel}`, which is neither a file, a folder nor a link"
                ));
            };
            if let Some(low) = &lower
                && low.kind == Kind::Dir
                && (now.kind != Kind::Dir || is_opaque(entry.path()))
            {
                self.deleted_below(l, &rel, &mut set);
            }
            let kind = match &lower {
                Some(low) if !self.overlay_differs(l, &rel, low, &now)? => continue,
                Some(_) => ChangeKind::Modified,
                None => ChangeKind::Added,
            };
            let what = what_of(entry.path(), &rel, &now)?;
            set.changes.push(Change {
                path: rel,
                kind,
                what,
            });
        }
        Ok(set)
    }

    /// The workspace entries below `rel` the agent's view no longer has
    /// (`rel` deleted, replaced or made opaque), as deletions.
    fn deleted_below(&self, l: &Layers, rel: &str, set: &mut ChangeSet) {
        let top = self.workspace.join(rel);
        let walk = walkdir::WalkDir::new(&top)
            .min_depth(1)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| {
                !self.skip(e.path())
                    && e.path()
                        .strip_prefix(&self.workspace)
                        .ok()
                        .and_then(Path::to_str)
                        .is_some_and(|r| !l.planted.contains(r))
            });
        for entry in walk.flatten() {
            let Some(sub) = entry
                .path()
                .strip_prefix(&self.workspace)
                .ok()
                .and_then(Path::to_str)
            else {
                continue;
            };
            if std::fs::symlink_metadata(l.upper.join(sub)).is_ok() {
                continue; // in the upper layer: its own entry
            }
            let Some(m) = Meta::read(entry.path()) else {
                continue;
            };
            set.changes.push(Change {
                path: sub.to_owned(),
                kind: ChangeKind::Deleted,
                what: if m.kind == Kind::Dir {
                    What::RemoveDir
                } else {
                    What::Remove
                },
            });
        }
    }

    /// Whether the upper layer's `rel` differs from the workspace's (a
    /// copy-up that moved only metadata is no change).
    fn overlay_differs(
        &self,
        l: &Layers,
        rel: &str,
        low: &Meta,
        now: &Meta,
    ) -> Result<bool, String> {
        if now.kind != low.kind || now.mode != low.mode {
            return Ok(true);
        }
        let upper = l.upper.join(rel);
        match now.kind {
            Kind::Dir => Ok(false),
            Kind::Link => Ok(std::fs::read_link(&upper).ok()
                != std::fs::read_link(self.workspace.join(rel)).ok()),
            Kind::File if now.len != low.len => Ok(true),
            Kind::File => same_content(&upper, &self.workspace.join(rel))
                .map(|same| !same)
                .map_err(|err| format!("cannot compare `{rel}`: {err}")),
        }
    }

    /// A change to a workspace path changed since the overlay was made
    /// (its ctime not older than the stamp: when unsure, refused), or gone
    /// since, is refused.
    fn overlay_no_conflict(&self, l: &Layers, set: &ChangeSet) -> Result<(), String> {
        for c in &set.changes {
            let now = std::fs::symlink_metadata(self.workspace.join(&c.path)).ok();
            let same = match &now {
                None => c.kind == ChangeKind::Added,
                Some(m) if m.is_dir() => c.kind != ChangeKind::Added || l.planted.contains(&c.path),
                Some(m) => (m.ctime(), m.ctime_nsec()) < l.stamp,
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

impl Drop for Stage {
    /// The overlay's work folder holds a mode-0 folder the temporary
    /// folder's own removal cannot enter: both layers go first.
    fn drop(&mut self) {
        if let Some(l) = &self.overlay {
            let _ = crate::sandbox::overlay::clear(&l.work);
            let _ = crate::sandbox::overlay::clear(&l.upper);
        }
    }
}

/// Every entry below `root` (the agent's copy, or its overlay's upper
/// layer) but its `.git`, with its UTF-8 path relative to `root`: the walk
/// both ways of reading an agent's changes share.
/// The workspace's git stores an agent CLI with these rules may not read
/// ([`crate::tools::git_store`]); none without rules.
fn stores_for(ctx: &StepContext) -> Result<crate::tools::git_store::Hidden, String> {
    let Some(judge) = ctx.judge.as_ref() else {
        return Ok(crate::tools::git_store::Hidden::default());
    };
    let (_, seen, _) = crate::tools::sandboxed::hidden_paths(&ctx.env.workspace, judge, false)?;
    Ok(crate::tools::git_store::judge(
        &ctx.env.workspace,
        &seen,
        judge,
        &ctx.shared.git_stores,
    ))
}

fn changed_entries(
    root: &Path,
) -> impl Iterator<Item = Result<(String, walkdir::DirEntry), String>> {
    let git = root.join(".git");
    let base = root.to_path_buf();
    walkdir::WalkDir::new(root)
        .min_depth(1)
        .follow_links(false)
        .into_iter()
        .filter_entry(move |e| e.path() != git)
        .filter_map(move |entry| {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => return Some(Err(format!("cannot read the agent's changes: {e}"))),
            };
            let rel = entry.path().strip_prefix(&base).ok()?;
            Some(match rel.to_str() {
                Some(r) => Ok((r.to_owned(), entry)),
                None => Err(format!(
                    "the agent created `{}`, which is not a UTF-8 name",
                    rel.display()
                )),
            })
        })
}

/// What applying an added or modified entry writes: a file's content (read
/// from where the agent left it), a link's target, a folder's mode.
fn what_of(path: &Path, rel: &str, now: &Meta) -> Result<What, String> {
    Ok(match now.kind {
        Kind::File => What::File {
            source: Source::Staged(path.to_path_buf()),
            mode: now.mode,
            len: now.len,
        },
        Kind::Link => What::Link(
            std::fs::read_link(path).map_err(|e| format!("cannot read the link `{rel}`: {e}"))?,
        ),
        Kind::Dir => What::Dir(now.mode),
    })
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
