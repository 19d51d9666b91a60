//! The metadata walk behind per-step attribution: for every file (and
//! symlink) the size, mtime and ctime (nanoseconds), inode and mode, nothing
//! read. A file whose metadata changed between two checkpoints was written,
//! created, deleted, replaced or touched in between.
//!
//! It walks like the snapshot (`.gitignore` respected, `.git/` and the
//! output folder pruned, not entered), plus git's global excludes in a git
//! work tree, so the names match the diff's.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::{path_text, relative};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Meta {
    pub(super) len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    mode: u32,
}

impl Meta {
    /// What tells a changed file from an untouched one (size, times, inode, mode).
    pub(super) fn of(m: &std::fs::Metadata) -> Meta {
        Meta {
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            mode: m.mode(),
        }
    }
}

/// Every file's metadata, by absolute path.
#[derive(Debug, Default)]
pub(super) struct StatMap(HashMap<PathBuf, Meta>);

/// What to walk and what to leave out.
#[derive(Debug, Clone)]
pub(super) struct Walk {
    root: PathBuf,
    exclude: Vec<PathBuf>,
    git_global: bool,
}

impl Walk {
    pub(super) fn new(root: &Path, exclude: Vec<PathBuf>, git_global: bool) -> Walk {
        Walk {
            root: root.to_path_buf(),
            exclude,
            git_global,
        }
    }

    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    pub(super) fn exclude(&self) -> &[PathBuf] {
        &self.exclude
    }

    /// The workspace's metadata now; None past `limit` files.
    pub(super) fn take(&self, limit: usize) -> Option<StatMap> {
        let mut map = HashMap::new();
        for entry in walker(&self.root, &self.exclude, self.git_global).flatten() {
            let Some(t) = entry.file_type() else {
                continue;
            };
            if !(t.is_file() || t.is_symlink()) {
                continue;
            }
            let Ok(m) = entry.metadata() else {
                continue;
            };
            if map.len() >= limit {
                return None;
            }
            map.insert(entry.into_path(), Meta::of(&m));
        }
        Some(StatMap(map))
    }

    /// Files added, removed or changed from `old` to `new`, as the report names them, sorted.
    pub(super) fn changed(&self, old: &StatMap, new: &StatMap) -> Vec<String> {
        let mut out: Vec<String> = new
            .0
            .iter()
            .filter(|(p, m)| old.0.get(*p) != Some(m))
            .map(|(p, _)| p)
            .chain(old.0.keys().filter(|p| !new.0.contains_key(*p)))
            .filter_map(|p| relative(&self.root, p))
            .map(|rel| path_text(&rel))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The workspace walker shared with the snapshot: hidden files in, `.git/`
/// and `exclude` pruned, `.gitignore` (and `.git/info/exclude`) respected.
pub(super) fn walker(root: &Path, exclude: &[PathBuf], git_global: bool) -> ignore::Walk {
    let exclude = exclude.to_vec();
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(git_global)
        .require_git(false)
        .follow_links(false)
        // Sorted, so a snapshot's read budget always goes to the same files.
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            e.file_name() != ".git" && !exclude.iter().any(|x| e.path().starts_with(x))
        })
        .build()
}
