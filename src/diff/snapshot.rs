//! The snapshot method: file metadata first, content where it is affordable.
//!
//! The walk sees the workspace like git would (`.gitignore` respected, hidden
//! files included, `.git/` and the run's own output folder left out). Before
//! the run each file's metadata (size, mtime, ctime, inode) is recorded, and
//! files are read — hashed, and their text kept for a line diff — while the
//! read budget lasts ([`KEEP_FILE`] per file, [`READ_BUDGET`] in all). After
//! the run a file whose metadata did not change is unchanged and is not read
//! again (git's rule for its index); a file whose metadata changed is read and
//! compared by hash when its old hash is known, else reported as modified
//! without line counts. So a large workspace costs two metadata walks plus the
//! budget, not two full reads. A deleted and an added file with the same
//! (non-empty) content are one rename.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{
    Body, Change, Compared, FileChange, KEEP_FILE, SHOW_LINES, cut_line, path_text, relative,
};

/// Longest a line diff of one file may take before `similar` approximates.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// Most bytes read before the run to hash files and keep their text.
pub(super) const READ_BUDGET: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
}

impl Meta {
    fn of(m: &std::fs::Metadata) -> Meta {
        use std::os::unix::fs::MetadataExt as _;
        Meta {
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    meta: Meta,
    /// None when the file was not read (past the read budget).
    hash: Option<[u8; 32]>,
    len: u64,
    text: Option<String>,
    binary: bool,
    /// After the run: the metadata matches the entry before, so nothing was read.
    unchanged: bool,
}

/// The workspace at one moment.
#[derive(Debug, Clone, Default)]
pub(super) struct Snapshot {
    files: BTreeMap<String, Entry>,
}

impl Snapshot {
    /// Snapshot `workspace` before the run, leaving out `exclude` (the run's
    /// output folder) and `.git/`.
    pub(super) fn take(workspace: &Path, exclude: &[PathBuf], budget: u64) -> Snapshot {
        Snapshot::walk(workspace, exclude, None, budget)
    }

    /// Snapshot after the run: files whose metadata matches `before` are not read.
    pub(super) fn take_after(workspace: &Path, exclude: &[PathBuf], before: &Snapshot) -> Snapshot {
        Snapshot::walk(workspace, exclude, Some(before), u64::MAX)
    }

    fn walk(
        workspace: &Path,
        exclude: &[PathBuf],
        before: Option<&Snapshot>,
        budget: u64,
    ) -> Snapshot {
        let mut files = BTreeMap::new();
        let mut read = 0u64;
        for entry in super::stat::walker(workspace, exclude, false)
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = entry.path();
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(rel) = relative(workspace, path) else {
                continue;
            };
            let Ok(m) = entry.metadata() else {
                continue;
            };
            let meta = Meta::of(&m);
            let key = path_text(&rel);
            if let Some(old) = before.and_then(|b| b.files.get(&key))
                && old.meta == meta
            {
                files.insert(
                    key,
                    Entry {
                        meta,
                        hash: old.hash,
                        len: old.len,
                        text: None,
                        binary: old.binary,
                        unchanged: true,
                    },
                );
                continue;
            }
            // Before the run, read while the budget lasts; after it, read every
            // file that changed (those are few, and the diff needs them).
            let affordable = meta.len <= KEEP_FILE && read + meta.len <= budget;
            if before.is_none() && !affordable {
                files.insert(
                    key,
                    Entry {
                        meta,
                        hash: None,
                        len: meta.len,
                        text: None,
                        binary: false,
                        unchanged: false,
                    },
                );
                continue;
            }
            if meta.len > KEEP_FILE {
                // Never read whole: hashed as a stream when the step paid
                // for its bytes, else known by its size and times only.
                let hash = (before.is_some() && !super::costly(&m))
                    .then(|| hash_file(path))
                    .flatten();
                files.insert(
                    key,
                    Entry {
                        meta,
                        hash,
                        len: meta.len,
                        text: None,
                        binary: false,
                        unchanged: false,
                    },
                );
                continue;
            }
            let Ok(bytes) = crate::regular::read(path) else {
                continue;
            };
            read += bytes.len() as u64;
            let binary =
                crate::secrets::looks_binary(&bytes) || std::str::from_utf8(&bytes).is_err();
            let len = bytes.len() as u64;
            let hash = Some(Sha256::digest(&bytes).into());
            let text = if !binary && len <= KEEP_FILE && (before.is_some() || affordable) {
                String::from_utf8(bytes).ok()
            } else {
                None
            };
            files.insert(
                key,
                Entry {
                    meta,
                    hash,
                    len,
                    text,
                    binary,
                    unchanged: false,
                },
            );
        }
        Snapshot { files }
    }

    /// What changed from `self` (before) to `after`, with the diff bodies.
    pub(super) fn compare(&self, after: &Snapshot) -> Compared {
        let mut out = Compared::default();
        let mut paths: Vec<&String> = self.files.keys().chain(after.files.keys()).collect();
        paths.sort();
        paths.dedup();
        let mut added: Vec<&String> = Vec::new();
        let mut deleted: Vec<&String> = Vec::new();
        for path in paths {
            match (self.files.get(path), after.files.get(path)) {
                (None, Some(_)) => added.push(path),
                (Some(_), None) => deleted.push(path),
                (Some(_), Some(n)) if n.unchanged => {}
                (Some(o), Some(n)) if o.hash.is_none() || o.hash != n.hash => {
                    out.files
                        .push(one(path, Change::Modified, Some(o), Some(n)));
                }
                _ => {}
            }
        }
        // Exact renames: a deleted and an added file with the same content,
        // paired in path order.
        let mut gone_by_hash: HashMap<[u8; 32], Vec<&String>> = HashMap::new();
        for p in &deleted {
            if let Some((e, h)) = self
                .files
                .get(*p)
                .filter(|e| e.len > 0)
                .and_then(|e| e.hash.map(|h| (e, h)))
            {
                debug_assert!(e.len > 0);
                gone_by_hash.entry(h).or_default().push(p);
            }
        }
        for list in gone_by_hash.values_mut() {
            list.reverse(); // pop() takes the first in path order
        }
        let mut renamed_from: Vec<&String> = Vec::new();
        for path in added {
            let Some(n) = after.files.get(path) else {
                continue;
            };
            match n
                .hash
                .and_then(|h| gone_by_hash.get_mut(&h))
                .and_then(Vec::pop)
            {
                Some(old) if n.len > 0 => {
                    renamed_from.push(old);
                    let f = FileChange {
                        oid: None,
                        path: path.clone(),
                        change: Change::Renamed,
                        insertions: 0,
                        deletions: 0,
                        binary: n.binary,
                        old_path: Some(old.clone()),
                        steps: Vec::new(),
                        ignored: false,
                    };
                    out.files.push((f, Body::Nothing));
                }
                _ => out.files.push(one(path, Change::Added, None, Some(n))),
            }
        }
        for path in deleted {
            if renamed_from.contains(&path) {
                continue;
            }
            if let Some(o) = self.files.get(path) {
                out.files.push(one(path, Change::Deleted, Some(o), None));
            }
        }
        out
    }
}

/// The sha256 of a regular file, read in pieces; None when it cannot be read.
fn hash_file(path: &Path) -> Option<[u8; 32]> {
    use std::io::Read as _;
    let mut f = crate::regular::open(path).ok()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Some(h.finalize().into()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// One changed file and its body from its bytes before and after (None: a
/// side that is absent, or was not read: `Some(None)`), for files diffed
/// outside a snapshot (the ignored ones).
pub(super) fn diff_bytes(
    path: &str,
    change: Change,
    old: Option<Option<&[u8]>>,
    new: Option<Option<&[u8]>>,
) -> (FileChange, Body) {
    let side = |b: Option<&[u8]>| {
        let len = b.map_or(0, |b| b.len() as u64);
        let binary =
            b.is_some_and(|b| crate::secrets::looks_binary(b) || std::str::from_utf8(b).is_err());
        Entry {
            meta: Meta {
                len,
                mtime: (0, 0),
                ctime: (0, 0),
                ino: 0,
            },
            hash: None,
            len,
            text: b
                .filter(|b| !binary && b.len() as u64 <= KEEP_FILE)
                .and_then(|b| String::from_utf8(b.to_vec()).ok()),
            binary,
            unchanged: false,
        }
    };
    let (old, new) = (old.map(side), new.map(side));
    one(path, change, old.as_ref(), new.as_ref())
}

/// One changed file and its body: a `similar` line diff when both sides are text.
fn one(path: &str, change: Change, old: Option<&Entry>, new: Option<&Entry>) -> (FileChange, Body) {
    let binary = old.is_some_and(|e| e.binary) || new.is_some_and(|e| e.binary);
    let mut f = FileChange {
        oid: None,
        path: path.to_owned(),
        change,
        insertions: 0,
        deletions: 0,
        binary,
        old_path: None,
        steps: Vec::new(),
        ignored: false,
    };
    if binary {
        return (f, Body::Binary);
    }
    // Both sides' text, "" for a missing side; None when a side was too large to keep.
    fn side(e: Option<&Entry>) -> Option<&str> {
        match e {
            None => Some(""),
            Some(e) => e.text.as_deref(),
        }
    }
    let (Some(a), Some(b)) = (side(old), side(new)) else {
        return (f, Body::TooLarge);
    };
    if a.is_empty() && b.is_empty() {
        return (f, Body::Nothing);
    }
    let td = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(a, b);
    for op in td.iter_all_changes() {
        match op.tag() {
            similar::ChangeTag::Insert => f.insertions += 1,
            similar::ChangeTag::Delete => f.deletions += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    // Quoted as git quotes a name with control characters (`"b/e\033[31m"`).
    let side = |prefix: &str| {
        String::from_utf8_lossy(&super::git::quote_c(format!("{prefix}{path}").as_bytes()))
            .into_owned()
    };
    let (from, to) = match change {
        Change::Added => ("/dev/null".to_owned(), side("b/")),
        Change::Deleted => (side("a/"), "/dev/null".to_owned()),
        _ => (side("a/"), side("b/")),
    };
    let text = td
        .unified_diff()
        .context_radius(3)
        .header(&from, &to)
        .to_string();
    let mut lines = Vec::new();
    let mut more = 0usize;
    for l in text.lines() {
        if lines.len() < SHOW_LINES {
            lines.push(cut_line(l));
        } else {
            more += 1;
        }
    }
    (
        f,
        Body::Text {
            lines,
            more,
            cut: false,
        },
    )
}
