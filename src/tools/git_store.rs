//! Which of the workspace's git object stores a sandboxed step may not read.
//!
//! Hiding `secrets/key.txt` from a step is not enough while git holds it:
//! `git show HEAD:secrets/key.txt`, `git cat-file --batch-all-objects`, `git
//! log -p`, or zlib over `.git/objects` would read it back. So when the
//! rules deny the step reading a path that a repository of the workspace
//! holds (in its index, a linked worktree's index, or any commit reachable
//! from a ref or a reflog: [`HISTORY_NAMES`], the `git` tool's own list),
//! that repository's stores of file contents are hidden from the step
//! ([`CONTENT`]: `objects`, and what keeps contents beside it), with the
//! alternates they borrow from, and the step is told why.
//!
//! The repositories are those the step's walk of the workspace sees
//! ([`Seen`]): every folder holding an `objects` entry that is named `.git`
//! or has a `HEAD` beside it (a `.git` folder, a submodule's git directory
//! under `.git/modules`, a bare repository, the folder a `.git` file or link
//! leads to). Their paths are judged where they are checked out: the folder
//! of each `.git` entry that leads to them; for a bare repository (none
//! does), both its own folder and the workspace's top. When git cannot list
//! them (it fails, its output is too large, the work tree lies outside the
//! workspace), the store is hidden all the same (fail-close) and the step is
//! told so.
//!
//! The listing costs a `git log` over the whole history: it is kept for the
//! run ([`Cache`], on `RunShared`) while the git directory's `HEAD`,
//! `index`, `packed-refs`, `config`, `commondir`, alternates, `refs/`,
//! `logs/` and `worktrees/` have the same size, times and inodes.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::git::HISTORY_NAMES;
use super::judge::PathJudge;
use crate::model::Level;

/// The folders of a git directory that hold file contents: the object store,
/// Git LFS's store, rerere's recorded conflicts, an interrupted rebase's patches.
const CONTENT: &[&str] = &["objects", "lfs", "rr-cache", "rebase-apply", "rebase-merge"];

/// Most alternates followed from one store (they may chain).
const MAX_ALTERNATES: usize = 64;

/// Most entries under `refs/`, `logs/` and `worktrees/` stamped; past it
/// the listing is not kept (it is made again for each step).
const MAX_STAMPED: usize = 100_000;

/// What a walk of the workspace saw of git (see the module doc).
#[derive(Debug, Default, Clone)]
pub(crate) struct Seen {
    /// Git directories holding an object store (resolved).
    git_dirs: BTreeSet<PathBuf>,
    /// Each folder holding a `.git` entry, and the git directory it leads to (resolved).
    checkouts: Vec<(PathBuf, PathBuf)>,
}

impl Seen {
    /// Note one entry of a walk that follows no link.
    pub(crate) fn note(&mut self, path: &Path, kind: std::fs::FileType) {
        let (Some(name), Some(parent)) = (path.file_name(), path.parent()) else {
            return;
        };
        if name == "objects"
            && !kind.is_file()
            && (parent.file_name() == Some(OsStr::new(".git"))
                || parent.join("HEAD").symlink_metadata().is_ok())
        {
            self.git_dirs.insert(resolved(parent));
        }
        if name == ".git"
            && let Some(g) = git_dir_of(path, kind)
        {
            self.checkouts.push((parent.to_path_buf(), g));
        }
    }
}

/// The git directory a `.git` entry leads to: the folder itself, where a
/// link leads, or what a `gitdir:` file names (then its `commondir`, a
/// linked worktree's shared directory).
fn git_dir_of(path: &Path, kind: std::fs::FileType) -> Option<PathBuf> {
    let dir = if kind.is_file() {
        let text = crate::regular::read(path).ok()?;
        let text = String::from_utf8(text.into_iter().take(4096).collect()).ok()?;
        let to = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        path.parent()?.join(to)
    } else {
        path.to_path_buf()
    };
    let dir = resolved(&dir);
    match std::fs::read_to_string(dir.join("commondir")) {
        Ok(common) => Some(resolved(&dir.join(common.trim()))),
        Err(_) => Some(dir),
    }
}

/// `p` with its links resolved (as written when it cannot be).
fn resolved(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// What a step may not read of the workspace's git, and why.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Hidden {
    /// Folders inside the walked root (resolved): hidden like a denied folder.
    pub inside: Vec<PathBuf>,
    /// Alternates outside it (resolved): never granted as readable.
    pub outside: Vec<PathBuf>,
    /// What the step is told, one line per hidden repository.
    pub notes: Vec<String>,
}

impl Hidden {
    /// Whether `p` (resolved) lies in a hidden store.
    pub(crate) fn covers(&self, p: &Path) -> bool {
        let p = resolved(p);
        self.inside
            .iter()
            .chain(&self.outside)
            .any(|h| p.starts_with(h))
    }
}

/// A file's size, times and inode (a ref moved, a commit made, an index written).
type Stamp = (PathBuf, u64, i64, i64, i64, i64, u64);

/// The paths each git directory holds, kept for the run (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Cache {
    listed: Mutex<HashMap<PathBuf, Listed>>,
    /// The first denied path, by rules and work trees, while the listing is the same.
    judged: Mutex<HashMap<JudgedKey, Judged>>,
}

/// A listing and the stamps it was made under.
type Listed = (Vec<Stamp>, Arc<Names>);

/// The first denied path of a listing.
type Judged = (Arc<Names>, Option<String>);

/// What a listing found: the paths, or why they could not be listed.
type Names = Result<Vec<String>, String>;

/// Whose rules judged which work trees of which walked root.
type JudgedKey = (
    crate::model::ToolName,
    crate::model::Risk,
    PathBuf,
    Vec<PathBuf>,
);

impl Cache {
    /// The paths `g` holds, listed now or kept from an earlier step.
    fn names(&self, g: &Path) -> Arc<Names> {
        let stamp = stamp(g);
        if let Some(s) = &stamp
            && let Some((old, names)) = self
                .listed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(g)
            && old == s
        {
            return Arc::clone(names);
        }
        let names = Arc::new(list(g));
        if let Some(s) = stamp {
            self.listed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(g.to_path_buf(), (s, Arc::clone(&names)));
        }
        names
    }

    /// [`first_denied`] of a listing, kept while the listing is the same.
    fn denied(
        &self,
        listed: &Arc<Names>,
        root: &Path,
        trees: &[PathBuf],
        judge: &PathJudge,
    ) -> Option<String> {
        let Ok(names) = listed.as_ref() else {
            return None;
        };
        let (tool, risk) = judge.key();
        let key = (tool, risk, root.to_path_buf(), trees.to_vec());
        let mut judged = self.judged.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((of, d)) = judged.get(&key)
            && Arc::ptr_eq(of, listed)
        {
            return d.clone();
        }
        let d = first_denied(root, trees, names, judge);
        judged.insert(key, (Arc::clone(listed), d.clone()));
        d
    }
}

/// The stamps of what decides which paths `g` holds (None: too many to keep).
fn stamp(g: &Path) -> Option<Vec<Stamp>> {
    let mut out = Vec::new();
    let mut one = |p: &Path| {
        if let Ok(m) = p.symlink_metadata() {
            out.push((
                p.to_path_buf(),
                m.len(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
                m.ino(),
            ));
        }
    };
    for f in [
        "HEAD",
        "index",
        "packed-refs",
        "config",
        "commondir",
        "shallow",
        "objects/info/alternates",
    ] {
        one(&g.join(f));
    }
    let mut seen = 0usize;
    for d in ["refs", "logs", "worktrees"] {
        let d = g.join(d);
        if d.symlink_metadata().is_err() {
            continue;
        }
        for e in walkdir::WalkDir::new(d).follow_links(false) {
            let Ok(e) = e else { return None };
            seen += 1;
            if seen > MAX_STAMPED {
                return None;
            }
            one(e.path());
        }
    }
    Some(out)
}

/// Every path `g` holds: its history's (every commit reachable from a ref
/// or a reflog), its index's and its linked worktrees' indexes', relative
/// to the top of the work tree, deduplicated.
fn list(g: &Path) -> Result<Vec<String>, String> {
    let at = |dir: &Path| {
        let mut s = OsString::from("--git-dir=");
        s.push(dir);
        s
    };
    let mut bytes = Vec::new();
    let main = at(g);
    let mut args: Vec<&OsStr> = vec![main.as_os_str()];
    args.extend(HISTORY_NAMES.iter().map(OsStr::new));
    bytes.extend(crate::diff::git_read(g, &args)?);
    let mut indexes = vec![g.to_path_buf()];
    if let Ok(rd) = std::fs::read_dir(g.join("worktrees")) {
        indexes.extend(rd.flatten().map(|e| e.path()));
    }
    for dir in indexes.iter().filter(|d| d.join("index").is_file()) {
        let d = at(dir);
        let args: Vec<&OsStr> = [d.as_os_str()]
            .into_iter()
            .chain(
                ["ls-files", "-z", "--cached", "--full-name"]
                    .iter()
                    .map(OsStr::new),
            )
            .collect();
        bytes.push(0);
        bytes.extend(crate::diff::git_read(g, &args)?);
    }
    let mut names: Vec<String> = bytes
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    names.sort_unstable();
    names.dedup();
    Ok(names)
}

/// The stores of the repositories `seen` in `root` that hold a path the
/// rules of `judge` deny reading (or whose paths cannot be listed).
pub(crate) fn judge(root: &Path, seen: &Seen, judge: &PathJudge, cache: &Cache) -> Hidden {
    let root = resolved(root);
    let mut out = Hidden::default();
    for g in &seen.git_dirs {
        let shown = g
            .strip_prefix(&root)
            .map_or_else(|_| g.display().to_string(), |r| r.display().to_string());
        let listed = cache.names(g);
        let why = match listed.as_ref() {
            Err(e) => format!(
                "plangate could not list the paths git holds there ({e}), so it cannot tell that the permission rules let this step read them all"
            ),
            Ok(_) => match cache.denied(&listed, &root, &trees_of(g, &root, seen), judge) {
                None => continue,
                Some(d) => {
                    format!("the permission rules deny reading `{d}`, which git holds there")
                }
            },
        };
        out.notes.push(format!(
            "the object store of `{shown}` is hidden from this step: {why}; git commands that read objects (`git status`, `git log`, `git show`) fail here"
        ));
        for h in stores_of(g) {
            if h.starts_with(&root) {
                out.inside.push(h);
            } else {
                out.outside.push(h);
            }
        }
    }
    out.inside.sort();
    out.inside.dedup();
    out.outside.sort();
    out.outside.dedup();
    out
}

/// Where the paths of `g` are checked out: the folders whose `.git` leads
/// to it; for a bare repository, its own folder and `root`.
fn trees_of(g: &Path, root: &Path, seen: &Seen) -> Vec<PathBuf> {
    let mut trees: Vec<PathBuf> = seen
        .checkouts
        .iter()
        .filter(|(_, to)| to == g)
        .map(|(tree, _)| resolved(tree))
        .collect();
    if trees.is_empty() {
        trees.extend(g.parent().map(Path::to_path_buf));
        trees.push(root.to_path_buf());
    }
    trees.sort();
    trees.dedup();
    trees
}

/// The first of `names`, checked out in one of `trees`, the rules deny
/// reading (as a path of `root`); a tree outside `root` denies them all.
fn first_denied(
    root: &Path,
    trees: &[PathBuf],
    names: &[String],
    judge: &PathJudge,
) -> Option<String> {
    for t in trees {
        let Ok(base) = t.strip_prefix(root) else {
            return names.first().map(|n| t.join(n).display().to_string());
        };
        for n in names {
            let rel = base.join(n);
            if judge.check_rel(&rel, Level::Read).is_err() {
                return Some(rel.display().to_string());
            }
        }
    }
    None
}

/// The content stores of `g` ([`CONTENT`]) and the alternates its object
/// store borrows from, transitively (resolved).
fn stores_of(g: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = CONTENT
        .iter()
        .map(|c| g.join(c))
        .filter(|p| p.symlink_metadata().is_ok())
        .map(|p| resolved(&p))
        .collect();
    let mut todo = vec![resolved(&g.join("objects"))];
    let mut seen = 0usize;
    while let Some(objects) = todo.pop() {
        let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) else {
            continue;
        };
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let alt = resolved(&objects.join(line.trim_matches('"')));
            seen += 1;
            if seen > MAX_ALTERNATES || out.contains(&alt) {
                continue;
            }
            out.push(alt.clone());
            todo.push(alt);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternates_are_followed_and_content_stores_named() {
        let t = tempfile::tempdir().expect("tmp");
        let r = t.path().canonicalize().expect("canon");
        for d in [".git/objects/info", ".git/lfs", "alt/objects/info", "far"] {
            std::fs::create_dir_all(r.join(d)).expect("mkdir");
        }
        std::fs::write(
            r.join(".git/objects/info/alternates"),
            format!("# c\n{}\n", r.join("alt/objects").display()),
        )
        .expect("w");
        std::fs::write(r.join("alt/objects/info/alternates"), "../../far\n").expect("w");
        let s = stores_of(&r.join(".git"));
        assert_eq!(
            s,
            vec![
                r.join(".git/objects"),
                r.join(".git/lfs"),
                r.join("alt/objects"),
                r.join("far")
            ]
        );
    }

    #[test]
    fn a_gitdir_file_leads_to_its_common_directory() {
        let t = tempfile::tempdir().expect("tmp");
        let r = t.path().canonicalize().expect("canon");
        std::fs::create_dir_all(r.join("main/.git/worktrees/w")).expect("mkdir");
        std::fs::create_dir_all(r.join("w")).expect("mkdir");
        std::fs::write(r.join("main/.git/worktrees/w/commondir"), "../..\n").expect("w");
        std::fs::write(
            r.join("w/.git"),
            format!("gitdir: {}\n", r.join("main/.git/worktrees/w").display()),
        )
        .expect("w");
        let kind = std::fs::symlink_metadata(r.join("w/.git"))
            .expect("m")
            .file_type();
        assert_eq!(
            git_dir_of(&r.join("w/.git"), kind),
            Some(r.join("main/.git"))
        );
    }
}
