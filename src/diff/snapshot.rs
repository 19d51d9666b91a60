//! The snapshot method: content hashes of the workspace's files.
//!
//! The walk sees the workspace like git would (`.gitignore` respected, hidden
//! files included, `.git/` and the run's own output folder left out) and
//! keeps each file's hash, plus its text when it is small enough to diff
//! later. Memory is bounded: past [`KEEP_TOTAL`] bytes of kept text, files are
//! compared by hash only and reported without line counts. A deleted and an
//! added file with the same (non-empty) content are one rename.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{
    Body, Change, Compared, FileChange, KEEP_FILE, KEEP_TOTAL, SHOW_LINES, cut_line, path_text,
    relative,
};

/// Longest a line diff of one file may take before `similar` approximates.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
struct Entry {
    hash: [u8; 32],
    len: u64,
    text: Option<String>,
    binary: bool,
}

/// The workspace at one moment.
#[derive(Debug, Clone, Default)]
pub(super) struct Snapshot {
    files: BTreeMap<String, Entry>,
}

impl Snapshot {
    /// Snapshot `workspace`, leaving out `exclude` (the run's output folder) and `.git/`.
    pub(super) fn take(workspace: &Path, exclude: &[PathBuf]) -> Snapshot {
        let mut files = BTreeMap::new();
        let mut kept = 0u64;
        for entry in super::stat::walker(workspace, exclude, false).flatten() {
            let path = entry.path();
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(rel) = relative(workspace, path) else {
                continue;
            };
            let Ok(bytes) = std::fs::read(path) else {
                continue;
            };
            let binary =
                crate::secrets::looks_binary(&bytes) || std::str::from_utf8(&bytes).is_err();
            let len = bytes.len() as u64;
            let small = len <= KEEP_FILE && kept + len <= KEEP_TOTAL;
            let hash = Sha256::digest(&bytes).into();
            let text = if !binary && small {
                kept += len;
                String::from_utf8(bytes).ok()
            } else {
                None
            };
            files.insert(
                path_text(&rel),
                Entry {
                    hash,
                    len,
                    text,
                    binary,
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
                (Some(o), Some(n)) if o.hash != n.hash => {
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
            if let Some(e) = self.files.get(*p).filter(|e| e.len > 0) {
                gone_by_hash.entry(e.hash).or_default().push(p);
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
            match gone_by_hash.get_mut(&n.hash).and_then(Vec::pop) {
                Some(old) if n.len > 0 => {
                    renamed_from.push(old);
                    let f = FileChange {
                        path: path.clone(),
                        change: Change::Renamed,
                        insertions: 0,
                        deletions: 0,
                        binary: n.binary,
                        old_path: Some(old.clone()),
                        steps: Vec::new(),
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

/// One changed file and its body: a `similar` line diff when both sides are text.
fn one(path: &str, change: Change, old: Option<&Entry>, new: Option<&Entry>) -> (FileChange, Body) {
    let binary = old.is_some_and(|e| e.binary) || new.is_some_and(|e| e.binary);
    let mut f = FileChange {
        path: path.to_owned(),
        change,
        insertions: 0,
        deletions: 0,
        binary,
        old_path: None,
        steps: Vec::new(),
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
    let (from, to) = match change {
        Change::Added => ("/dev/null".to_owned(), format!("b/{path}")),
        Change::Deleted => (format!("a/{path}"), "/dev/null".to_owned()),
        _ => (format!("a/{path}"), format!("b/{path}")),
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
