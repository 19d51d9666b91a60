//! The workspace's `.git` belongs to the git tool and to steps approved as
//! dangerous: a step below dangerous may change nothing in it (hooks,
//! configuration, `commondir`/`gitdir` files, `info/*`, packed refs, refs,
//! `HEAD`, the index, the object store), nor create one where there was
//! none. plangate's own git commands already ignore hooks and the risky
//! settings; this guard makes sure nothing a step plants survives it, for
//! the user's later git commands too.
//!
//! Under bwrap the whole `.git` (and a git directory a `.git` file or
//! `commondir` points to inside the workspace) is bound read-only
//! ([`existing_roots`]), so every attempt fails at once; the snapshot then
//! keeps only the files that make git run code or look elsewhere
//! ([`Scope::Code`]). Landlock cannot take back the write right it grants on
//! the workspace, so there (and for a step the sandbox does not enforce) the
//! snapshot covers all of `.git` ([`Scope::Whole`]): files by content, the
//! object store's files by mode, size and inode (new ones are removed; a
//! replaced, resized or removed one cannot be put back and is named so).
//!
//! [`Snapshot::take`] records them before a step; [`Snapshot::undo_changes`]
//! compares after it, puts back what changed (never following a symbolic link
//! the step may have planted) and names what it undid, so the step fails.
//! [`LOCK`] keeps the steps that may change `.git` (the git tool, dangerous
//! steps) from running while a guarded step's snapshot is live, so that
//! their changes are never undone in its name.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Most bytes of protected files kept in a snapshot; above, the snapshot
/// fails (fail-close: the step is not run).
const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Most entries of a snapshot; above, the snapshot fails (fail-close).
const MAX_ENTRIES: usize = 500_000;
/// How deep nested submodules (`.git/modules/a/modules/b/...`) are followed.
const MAX_DEPTH: usize = 12;
/// How deep the whole-`.git` walk goes.
const MAX_WALK_DEPTH: usize = 64;

/// Files directly in a git directory that make git run code or look elsewhere.
const FILES: [&str; 6] = [
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "packed-refs",
    "HEAD",
];

/// Files of a git directory's object store that point git elsewhere.
const ALTERNATES: [&str; 2] = ["objects/info/alternates", "objects/info/http-alternates"];

/// Keeps the steps whose snapshot is live ([`Side::Guarded`]) and the steps
/// that may change `.git` ([`Side::Writer`]: the git tool, a step approved
/// as dangerous) apart: either side runs many at once, never both.
pub(crate) static LOCK: Lanes = Lanes::new();

/// Which side of [`Lanes`] a step is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Below dangerous: `.git` is snapshotted around it.
    Guarded,
    /// May change `.git`.
    Writer,
}

#[derive(Debug)]
struct LaneState {
    active: [usize; 2],
    waiting: [usize; 2],
    /// Whose turn it is when both sides wait and none runs.
    turn: usize,
}

/// Two groups that exclude each other (see [`LOCK`]); waiting is fair: when
/// both sides wait, the side that did not run last goes first.
#[derive(Debug)]
pub(crate) struct Lanes {
    state: std::sync::Mutex<LaneState>,
    notify: tokio::sync::Notify,
}

/// A place in [`Lanes`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Lane {
    side: usize,
}

impl Drop for Lane {
    fn drop(&mut self) {
        let mut s = LOCK.lock();
        s.active[self.side] -= 1;
        if s.active[self.side] == 0 {
            s.turn = 1 - self.side;
        }
        drop(s);
        LOCK.notify.notify_waiters();
    }
}

/// Counts a waiter until it enters or gives up (a cancelled step).
struct Waiting {
    side: usize,
    counted: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.counted {
            LOCK.lock().waiting[self.side] -= 1;
            LOCK.notify.notify_waiters();
        }
    }
}

impl Lanes {
    const fn new() -> Lanes {
        Lanes {
            state: std::sync::Mutex::new(LaneState {
                active: [0, 0],
                waiting: [0, 0],
                turn: 0,
            }),
            notify: tokio::sync::Notify::const_new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wait until `side` may run (only [`LOCK`] is used: a [`Lane`] gives
    /// its place back there).
    pub(crate) async fn enter(&'static self, side: Side) -> Lane {
        let me = usize::from(side == Side::Writer);
        let other = 1 - me;
        let mut waiting = Waiting {
            side: me,
            counted: false,
        };
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                let free = s.active[other] == 0 && (s.waiting[other] == 0 || s.turn == me);
                if free {
                    if waiting.counted {
                        s.waiting[me] -= 1;
                        waiting.counted = false;
                    }
                    s.active[me] += 1;
                    return Lane { side: me };
                }
                if !waiting.counted {
                    s.waiting[me] += 1;
                    waiting.counted = true;
                }
            }
            notified.await;
        }
    }
}

/// How much of `.git` a snapshot keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The files that make git run code or look elsewhere (the rest is
    /// kept read-only by the sandbox).
    Code,
    /// Everything.
    Whole,
}

/// One protected entry as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    /// A file of the object store, by its mode, size and inode (not kept: it
    /// cannot be put back). Not its times: git "freshens" an object it writes
    /// again by touching it, and objects hardlinked from another repository
    /// change times with it; a same-size rewrite in place is caught by git's
    /// own checksums when it reads the object.
    Bulk {
        mode: u32,
        len: u64,
        ino: u64,
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
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    workspace: PathBuf,
    scope: Scope,
    /// The git directories the snapshot covers besides `.git` (relative).
    roots: Vec<PathBuf>,
    /// The configuration files git includes from the workspace, and the
    /// links on the way there (relative; [`super::git_includes`]).
    includes: Vec<PathBuf>,
    entries: BTreeMap<PathBuf, Entry>,
}

/// The git directories of `workspace` that lie inside it, relative to it:
/// `.git` (a folder or a `gitdir:` file), the folder a `.git` file points
/// to and the folder a `commondir` file points to, when they are inside the
/// workspace (elsewhere a step cannot write them). Links are resolved only
/// to decide where a folder is.
pub(crate) fn git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from(".git")];
    let Ok(ws) = workspace.canonicalize() else {
        return out;
    };
    let dot = workspace.join(".git");
    let Ok(meta) = dot.symlink_metadata() else {
        return out;
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    if meta.is_file() {
        if let Some(target) = pointer(&dot, "gitdir:") {
            dirs.push(workspace.join(target));
        }
    } else if meta.is_dir() || meta.is_symlink() {
        // A link is followed only to find the folder it names (inside the
        // workspace, that folder is the repository's own: guarded, and left
        // out of the nested-repository sweep, never treated as a nested one).
        dirs.push(dot.clone());
    }
    let mut i = 0;
    while i < dirs.len() && i < 8 {
        let d = dirs[i].clone();
        if let Some(common) = pointer(&d.join("commondir"), "") {
            dirs.push(d.join(common));
        }
        i += 1;
    }
    for d in dirs {
        let Ok(real) = d.canonicalize() else {
            continue;
        };
        if let Ok(rel) = real.strip_prefix(&ws)
            && !rel.as_os_str().is_empty()
            && !out.iter().any(|o| rel.starts_with(o))
        {
            out.push(rel.to_path_buf());
        }
    }
    out
}

/// The path a one-line pointer file names after `prefix` (`gitdir: X`, or a
/// `commondir` file's `X`), if it is a small regular file.
fn pointer(file: &Path, prefix: &str) -> Option<PathBuf> {
    let meta = file.symlink_metadata().ok()?;
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = String::from_utf8(crate::regular::read(file).ok()?).ok()?;
    let line = text.lines().next()?.strip_prefix(prefix)?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// The configuration files git reads for the repository of `workspace`
/// (absolute, as git names them): `config` and `config.worktree` of the git
/// directory its `.git` is or names (inside the workspace or not) and of
/// the common folder that one's `commondir` names, and those of `roots`
/// (relative: the git directories inside the workspace) and their
/// submodules and linked work trees.
fn own_configs(workspace: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    let dot = workspace.join(".git");
    let mut dirs = Vec::new();
    match dot.symlink_metadata() {
        Ok(m) if m.is_file() => {
            if let Some(t) = pointer(&dot, "gitdir:") {
                dirs.push(workspace.join(t));
            }
        }
        Ok(_) => dirs.push(dot),
        Err(_) => {}
    }
    if let Some(g) = dirs.first().cloned()
        && let Some(common) = pointer(&g.join("commondir"), "")
    {
        dirs.push(g.join(common));
    }
    let mut out = Vec::new();
    for d in dirs {
        out.push(d.join("config"));
        out.push(d.join("config.worktree"));
    }
    for root in roots {
        for rel in protected(workspace, root) {
            if rel
                .file_name()
                .is_some_and(|n| n == "config" || n == "config.worktree")
            {
                out.push(workspace.join(rel));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The user's and the system's configuration files (whose includes may
/// lead into the workspace too).
fn user_configs() -> Vec<PathBuf> {
    let var = |k: &str| {
        crate::environ::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut out = vec![PathBuf::from("/etc/gitconfig")];
    out.extend(var("GIT_CONFIG_SYSTEM"));
    out.extend(var("GIT_CONFIG_GLOBAL"));
    if let Some(home) = var("HOME") {
        out.push(home.join(".gitconfig"));
        out.push(home.join(".config/git/config"));
    }
    if let Some(xdg) = var("XDG_CONFIG_HOME") {
        out.push(xdg.join("git/config"));
    }
    out
}

/// The existing protected roots of `workspace` (for read-only binds): its
/// `.git` (folder or file) and the git directories it points to inside it.
pub(crate) fn existing_roots(workspace: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = git_dirs(workspace)
        .into_iter()
        .map(|r| workspace.join(r))
        .filter(|p| p.symlink_metadata().is_ok())
        .collect();
    out.sort();
    out
}

impl Snapshot {
    /// Record the protected files of `workspace`: its git directories and
    /// the files their configuration (and `nested`, the configuration files
    /// of the nested repositories, and the user's own) include from it.
    pub(crate) fn take(
        workspace: &Path,
        scope: Scope,
        nested: &[PathBuf],
    ) -> std::io::Result<Snapshot> {
        let roots = git_dirs(workspace);
        let mut configs = own_configs(workspace, &roots);
        configs.extend_from_slice(nested);
        configs.extend(user_configs());
        let includes = super::git_includes::included(workspace, &configs)?;
        Snapshot::take_roots(workspace, scope, roots, includes)
    }

    fn take_roots(
        workspace: &Path,
        scope: Scope,
        roots: Vec<PathBuf>,
        includes: Vec<PathBuf>,
    ) -> std::io::Result<Snapshot> {
        let mut s = Snapshot {
            workspace: workspace.to_path_buf(),
            scope,
            roots,
            includes,
            entries: BTreeMap::new(),
        };
        let mut budget = MAX_BYTES;
        for root in &s.roots.clone() {
            let rels = match scope {
                Scope::Code => protected(workspace, root),
                Scope::Whole => whole(workspace, root)?,
            };
            for rel in rels {
                if s.entries.len() >= MAX_ENTRIES {
                    return Err(std::io::Error::other(format!(
                        "the repository's `.git` holds more than {MAX_ENTRIES} entries (run `git gc`)"
                    )));
                }
                let bulk = scope == Scope::Whole && is_bulk(&rel);
                if let Some(e) = read_entry(&workspace.join(&rel), bulk, &mut budget)? {
                    s.entries.insert(rel, e);
                }
            }
        }
        for rel in &s.includes {
            if let Some(e) = read_entry(&workspace.join(rel), false, &mut budget)? {
                s.entries.insert(rel.clone(), e);
            }
        }
        Ok(s)
    }

    /// Put back every protected file that differs from the snapshot; returns
    /// the paths (relative to the workspace) that were changed, a path that
    /// could not be put back (a file of the object store) followed by
    /// " (could not be put back)".
    pub(crate) fn undo_changes(&self) -> std::io::Result<Vec<String>> {
        let now = Snapshot::take_roots(
            &self.workspace,
            self.scope,
            self.roots.clone(),
            self.includes.clone(),
        )?;
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
        let mut names = Vec::with_capacity(changed.len());
        for rel in &changed {
            let mut name = rel.display().to_string();
            if let Some(e) = self.entries.get(*rel)
                && !self.restore(rel, e)?
            {
                name.push_str(" (could not be put back)");
            } else if quiet(rel) {
                // Put back without failing the step: `git diff` rewrites the
                // index to refresh file times even with optional locks off.
                continue;
            }
            names.push(name);
        }
        Ok(names)
    }

    /// Put `e` back at `rel`; false when it cannot be (a file kept by its metadata only).
    fn restore(&self, rel: &Path, e: &Entry) -> std::io::Result<bool> {
        let path = self.workspace.join(rel);
        if matches!(e, Entry::Bulk { .. }) {
            return Ok(false);
        }
        make_parents(&self.workspace, rel)?;
        remove(&path)?;
        match e {
            Entry::Bulk { .. } => return Ok(false),
            Entry::Dir => std::fs::create_dir(&path)?,
            Entry::Link(target) => std::os::unix::fs::symlink(target, &path)?,
            Entry::File { bytes, mode } => {
                std::fs::write(&path, bytes)?;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
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
                .map_err(std::io::Error::from)?;
            }
        }
        Ok(true)
    }
}

/// Whether a change of `rel` is put back without failing the step: a git
/// directory's index (or its lock), which reading git commands rewrite.
fn quiet(rel: &Path) -> bool {
    rel.file_name()
        .is_some_and(|n| n == "index" || n == "index.lock")
        && !is_bulk(rel)
}

/// Whether `rel` (inside a git directory) is a file of the object store (or
/// of git-lfs's), kept by its metadata: the alternates files are not.
fn is_bulk(rel: &Path) -> bool {
    let mut names = rel.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n),
        _ => None,
    });
    if !names.any(|n| n == "objects" || n == "lfs") {
        return false;
    }
    // `objects/info/alternates` and `objects/info/http-alternates` point git elsewhere.
    let rest: Vec<&std::ffi::OsStr> = names.collect();
    !matches!(rest[..], [info, file] if info == "info" && (file == "alternates" || file == "http-alternates"))
}

/// Every entry of the git directory `root` (relative), links not followed.
fn whole(workspace: &Path, root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let abs = workspace.join(root);
    if abs.symlink_metadata().is_err() {
        return Ok(out);
    }
    // A `.git` link is an entry of its own (the folder it names inside the
    // workspace is a root of its own): never walked through, so putting a
    // file back never turns the link into a folder.
    for e in walkdir::WalkDir::new(&abs)
        .follow_links(false)
        .follow_root_links(false)
        .max_depth(MAX_WALK_DEPTH)
    {
        let e = match e {
            Ok(e) => e,
            // Gone while it was listed (a lock file): nothing to keep.
            Err(e)
                if e.io_error().map(std::io::Error::kind) == Some(std::io::ErrorKind::NotFound) =>
            {
                continue;
            }
            Err(e) => return Err(std::io::Error::other(format!("cannot read `.git`: {e}"))),
        };
        if out.len() > MAX_ENTRIES {
            break;
        }
        if let Ok(rel) = e.path().strip_prefix(workspace) {
            out.push(rel.to_path_buf());
        }
    }
    Ok(out)
}

/// The protected paths of the git directory (or `.git` file) `root` that
/// exist now, relative to `workspace`.
fn protected(workspace: &Path, root: &Path) -> Vec<PathBuf> {
    let Ok(meta) = workspace.join(root).symlink_metadata() else {
        return Vec::new();
    };
    let mut out = vec![root.to_path_buf()];
    if meta.is_dir() {
        git_dir(workspace, root, 0, &mut out);
    }
    out
}

/// The protected paths of the git directory `dir` (relative), of its
/// linked work trees' folders and of its submodules.
fn git_dir(workspace: &Path, dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    for f in FILES.iter().chain(ALTERNATES.iter()) {
        let rel = dir.join(f);
        if workspace.join(&rel).symlink_metadata().is_ok() {
            out.push(rel);
        }
    }
    tree(workspace, &dir.join("hooks"), out);
    tree(workspace, &dir.join("info"), out);
    if depth >= MAX_DEPTH {
        return;
    }
    for nested in ["modules", "worktrees"] {
        let folder = dir.join(nested);
        let Ok(meta) = workspace.join(&folder).symlink_metadata() else {
            continue;
        };
        out.push(folder.clone());
        if !meta.is_dir() {
            continue;
        }
        for name in sorted_children(&workspace.join(&folder)) {
            let sub = folder.join(name);
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
}

/// `rel` and everything beneath it (symbolic links are entries, never followed).
fn tree(workspace: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let abs = workspace.join(rel);
    let Ok(meta) = abs.symlink_metadata() else {
        return;
    };
    out.push(rel.to_path_buf());
    if meta.is_dir() && out.len() < MAX_ENTRIES {
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

fn read_entry(path: &Path, bulk: bool, budget: &mut u64) -> std::io::Result<Option<Entry>> {
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
        Entry::Special {
            mode: meta.mode(),
            rdev: meta.rdev(),
        }
    } else if bulk {
        Entry::Bulk {
            mode: meta.mode(),
            len: meta.len(),
            ino: meta.ino(),
        }
    } else {
        *budget = budget.checked_sub(meta.len()).ok_or_else(|| {
            std::io::Error::other(format!(
                "the repository's `.git` files (its object store aside) exceed {} MiB",
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
pub(super) fn remove(path: &Path) -> std::io::Result<()> {
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
    fn lanes_let_one_side_in_at_a_time_many_of_it_at_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let w1 = LOCK.enter(Side::Writer).await;
            let w2 = LOCK.enter(Side::Writer).await;
            // A guarded step waits while a writer runs.
            let mut g = Box::pin(LOCK.enter(Side::Guarded));
            let wait = tokio::time::timeout(std::time::Duration::from_millis(50), &mut g).await;
            assert!(wait.is_err(), "entered beside a writer");
            drop(w1);
            let wait = tokio::time::timeout(std::time::Duration::from_millis(50), &mut g).await;
            assert!(wait.is_err(), "entered beside a writer");
            drop(w2);
            let g1 = tokio::time::timeout(std::time::Duration::from_secs(5), g)
                .await
                .expect("entered once the writers left");
            // Another guarded one joins; a writer waits for both to leave.
            let g2 = LOCK.enter(Side::Guarded).await;
            let mut w = Box::pin(LOCK.enter(Side::Writer));
            assert!(
                tokio::time::timeout(std::time::Duration::from_millis(50), &mut w)
                    .await
                    .is_err()
            );
            drop((g1, g2));
            let w = tokio::time::timeout(std::time::Duration::from_secs(5), w)
                .await
                .expect("the writer's turn");
            drop(w);
            let s = LOCK.lock();
            assert_eq!((s.active, s.waiting), ([0, 0], [0, 0]));
        });
    }

    #[test]
    fn unchanged_is_nothing() {
        let d = repo();
        let s = Snapshot::take(d.path(), Scope::Code, &[]).expect("snapshot");
        std::fs::write(d.path().join(".git/objects/x"), "ok").expect("write");
        std::fs::write(d.path().join("file"), "ok").expect("write");
        assert!(s.undo_changes().expect("undo").is_empty());
    }

    #[test]
    fn new_hook_changed_config_and_link_are_undone() {
        let d = repo();
        let outside = tempfile::tempdir().expect("tempdir");
        let s = Snapshot::take(d.path(), Scope::Code, &[]).expect("snapshot");
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
        assert!(
            Snapshot::take(d.path(), Scope::Code, &[])
                .expect("again")
                .entries
                == s.entries
        );
    }

    #[test]
    fn a_git_file_is_protected_too() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join(".git"), "gitdir: /elsewhere\n").expect("write");
        let s = Snapshot::take(d.path(), Scope::Code, &[]).expect("snapshot");
        std::fs::write(d.path().join(".git"), "gitdir: ./evil\n").expect("write");
        assert_eq!(s.undo_changes().expect("undo"), [".git"]);
        assert_eq!(
            std::fs::read_to_string(d.path().join(".git")).expect("read"),
            "gitdir: /elsewhere\n"
        );
        assert_eq!(existing_roots(d.path()), [d.path().join(".git")]);
    }

    #[test]
    fn the_whole_scope_keeps_every_file_and_names_what_cannot_be_put_back() {
        let d = repo();
        let g = d.path().join(".git");
        std::fs::create_dir_all(g.join("objects/ab")).expect("mkdir");
        std::fs::create_dir_all(g.join("objects/info")).expect("mkdir");
        std::fs::create_dir_all(g.join("info")).expect("mkdir");
        std::fs::create_dir_all(g.join("refs/heads")).expect("mkdir");
        std::fs::write(g.join("objects/ab/cdef"), "object").expect("write");
        std::fs::write(g.join("refs/heads/main"), "1111\n").expect("write");
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(g.join("index"), "old index").expect("write");
        let s = Snapshot::take(d.path(), Scope::Whole, &[]).expect("snapshot");
        // The index alone: put back, and no failure (`git diff` refreshes it).
        std::fs::write(g.join("index"), "refreshed").expect("write");
        assert!(s.undo_changes().expect("undo").is_empty());
        assert_eq!(
            std::fs::read_to_string(g.join("index")).expect("read"),
            "old index"
        );
        assert!(matches!(
            s.entries.get(Path::new(".git/objects/ab/cdef")),
            Some(Entry::Bulk { .. })
        ));
        for (f, text) in [
            ("commondir", "../elsewhere\n"),
            ("info/exclude", "*\n"),
            ("packed-refs", "x\n"),
            ("objects/info/alternates", "/tmp\n"),
            ("refs/heads/main", "2222\n"),
            ("HEAD", "ref: refs/heads/other\n"),
            ("objects/ab/new", "x"),
            ("objects/ab/cdef", "changed"),
        ] {
            std::fs::write(g.join(f), text).expect("write");
        }
        let changed = s.undo_changes().expect("undo");
        for f in [
            ".git/commondir",
            ".git/info/exclude",
            ".git/packed-refs",
            ".git/objects/info/alternates",
            ".git/refs/heads/main",
            ".git/HEAD",
            ".git/objects/ab/new",
            ".git/objects/ab/cdef (could not be put back)",
        ] {
            assert!(changed.contains(&f.to_owned()), "{f}: {changed:?}");
        }
        assert!(!g.join("commondir").exists());
        assert!(!g.join("objects/ab/new").exists());
        assert_eq!(
            std::fs::read_to_string(g.join("refs/heads/main")).expect("read"),
            "1111\n"
        );
        assert_eq!(
            std::fs::read_to_string(g.join("HEAD")).expect("read"),
            "ref: refs/heads/main\n"
        );
    }

    #[test]
    fn a_new_git_folder_is_removed_and_pointed_to_folders_are_covered() {
        let d = tempfile::tempdir().expect("tempdir");
        let s = Snapshot::take(d.path(), Scope::Code, &[]).expect("snapshot");
        std::fs::create_dir_all(d.path().join(".git/hooks")).expect("mkdir");
        std::fs::write(d.path().join(".git/config"), "[core]\n").expect("write");
        assert!(!s.undo_changes().expect("undo").is_empty());
        assert!(!d.path().join(".git").exists());
        // A `.git` file whose folder (and its common folder) lie inside.
        let ws = d.path().canonicalize().expect("canon");
        std::fs::create_dir_all(ws.join("real/wt")).expect("mkdir");
        std::fs::write(ws.join(".git"), "gitdir: real/wt\n").expect("write");
        std::fs::write(ws.join("real/wt/commondir"), "..\n").expect("write");
        assert_eq!(
            git_dirs(&ws),
            [
                PathBuf::from(".git"),
                PathBuf::from("real/wt"),
                PathBuf::from("real")
            ]
        );
        let s = Snapshot::take(&ws, Scope::Code, &[]).expect("snapshot");
        std::fs::create_dir_all(ws.join("real/hooks")).expect("mkdir");
        std::fs::write(ws.join("real/hooks/pre-commit"), "#!/bin/sh\n").expect("write");
        let changed = s.undo_changes().expect("undo");
        assert!(changed.contains(&"real/hooks".to_owned()), "{changed:?}");
        assert!(!ws.join("real/hooks").exists());
        // Pointing outside the workspace: not ours to guard.
        std::fs::write(ws.join(".git"), "gitdir: /nonexistent/x\n").expect("write");
        assert_eq!(git_dirs(&ws), [PathBuf::from(".git")]);
        // A `.git` link to a folder inside: that folder is the repository's
        // own, kept whole through the link, and the link stays a link.
        std::fs::remove_file(ws.join(".git")).expect("rm");
        std::fs::write(ws.join("real/config"), "[core]\n").expect("write");
        std::os::unix::fs::symlink("real", ws.join(".git")).expect("symlink");
        assert_eq!(
            git_dirs(&ws),
            [PathBuf::from(".git"), PathBuf::from("real")]
        );
        let s = Snapshot::take(&ws, Scope::Whole, &[]).expect("snapshot");
        std::fs::write(ws.join("real/config"), "[core]\nfsmonitor = x\n").expect("write");
        assert_eq!(s.undo_changes().expect("undo"), ["real/config"]);
        assert_eq!(
            std::fs::read_to_string(ws.join("real/config")).expect("read"),
            "[core]\n"
        );
        assert!(
            ws.join(".git")
                .symlink_metadata()
                .expect("link")
                .is_symlink()
        );
    }
}
