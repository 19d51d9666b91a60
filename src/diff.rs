//! What the run changed in the workspace: a snapshot before the first step,
//! a comparison after the last, the report's `diff` block and
//! `diff-summary.md`.
//!
//! The snapshot walks the workspace like git would see it (`.gitignore`
//! respected, hidden files included, `.git/` and the run's own output folder
//! left out) and keeps each file's hash, plus its text when it is small enough
//! to diff later. Memory is bounded: past [`KEEP_TOTAL`] bytes of kept text,
//! files are compared by hash only and reported without line counts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Largest file whose text is kept for a line diff.
pub const KEEP_FILE: u64 = 1024 * 1024;
/// Most text kept over the whole snapshot.
pub const KEEP_TOTAL: u64 = 128 * 1024 * 1024;
/// Most lines of unified diff shown per file in the summary.
pub const SHOW_LINES: usize = 400;
/// Most bytes of unified diffs in the summary.
pub const SHOW_TOTAL: usize = 512 * 1024;

#[derive(Debug, Clone)]
struct Entry {
    hash: [u8; 32],
    text: Option<String>,
    binary: bool,
}

/// The workspace at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    files: BTreeMap<String, Entry>,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// New file.
    Added,
    /// Content changed.
    Modified,
    /// Removed.
    Deleted,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileChange {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    /// added | modified | deleted.
    pub change: Change,
    /// Lines added (0 for binary or uncompared files).
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// Not text: compared by hash only.
    #[serde(default)]
    pub binary: bool,
}

/// The report's `diff` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiffSummary {
    /// Files added, modified or deleted.
    pub files_changed: u64,
    /// Lines added.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// Each changed file, sorted by path.
    pub files: Vec<FileChange>,
}

impl Snapshot {
    /// Snapshot `workspace`, leaving out `exclude` (the run's output folder) and `.git/`.
    pub fn take(workspace: &Path, exclude: &[PathBuf]) -> Snapshot {
        let mut files = BTreeMap::new();
        let mut kept = 0u64;
        let walker = ignore::WalkBuilder::new(workspace)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walker.flatten() {
            let path = entry.path();
            if !entry.file_type().is_some_and(|t| t.is_file())
                || exclude.iter().any(|x| path.starts_with(x))
            {
                continue;
            }
            let Ok(rel) = path.strip_prefix(workspace) else {
                continue;
            };
            let Ok(bytes) = std::fs::read(path) else {
                continue;
            };
            let binary =
                crate::secrets::looks_binary(&bytes) || std::str::from_utf8(&bytes).is_err();
            let small =
                (bytes.len() as u64) <= KEEP_FILE && kept + bytes.len() as u64 <= KEEP_TOTAL;
            let text = if !binary && small {
                kept += bytes.len() as u64;
                String::from_utf8(bytes.clone()).ok()
            } else {
                None
            };
            files.insert(
                rel.to_string_lossy().replace('\\', "/"),
                Entry {
                    hash: Sha256::digest(&bytes).into(),
                    text,
                    binary,
                },
            );
        }
        Snapshot { files }
    }

    /// What changed from `self` (before) to `after`, and the unified diffs.
    pub fn compare(&self, after: &Snapshot) -> (DiffSummary, String) {
        let mut summary = DiffSummary::default();
        let mut diffs = String::new();
        let mut shown = 0usize;
        let mut paths: Vec<&String> = self.files.keys().chain(after.files.keys()).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            let (change, old, new) = match (self.files.get(path), after.files.get(path)) {
                (None, Some(n)) => (Change::Added, None, Some(n)),
                (Some(o), None) => (Change::Deleted, Some(o), None),
                (Some(o), Some(n)) if o.hash != n.hash => (Change::Modified, Some(o), Some(n)),
                _ => continue,
            };
            let binary = old.is_some_and(|e| e.binary) || new.is_some_and(|e| e.binary);
            let old_text = old.map(|e| e.text.as_deref());
            let new_text = new.map(|e| e.text.as_deref());
            let (mut ins, mut del) = (0u64, 0u64);
            let comparable = !binary && old_text != Some(None) && new_text != Some(None);
            if comparable {
                let a = old_text.flatten().unwrap_or("");
                let b = new_text.flatten().unwrap_or("");
                let td = similar::TextDiff::from_lines(a, b);
                for op in td.iter_all_changes() {
                    match op.tag() {
                        similar::ChangeTag::Insert => ins += 1,
                        similar::ChangeTag::Delete => del += 1,
                        similar::ChangeTag::Equal => {}
                    }
                }
                if shown < SHOW_TOTAL {
                    let text = td
                        .unified_diff()
                        .context_radius(3)
                        .header(&format!("a/{path}"), &format!("b/{path}"))
                        .to_string();
                    let lines: Vec<&str> = text.lines().collect();
                    let _ = writeln!(diffs, "### `{}`\n\n```diff", md_escape(path));
                    for l in lines.iter().take(SHOW_LINES) {
                        let _ = writeln!(diffs, "{l}");
                    }
                    if lines.len() > SHOW_LINES {
                        let _ = writeln!(
                            diffs,
                            "... ({} more lines not shown)",
                            lines.len() - SHOW_LINES
                        );
                    }
                    let _ = writeln!(diffs, "```\n");
                    shown += text.len().min(SHOW_LINES * 120);
                } else {
                    let _ = writeln!(
                        diffs,
                        "### `{}`\n\n(diff not shown: the summary is full)\n",
                        md_escape(path)
                    );
                }
            } else {
                let why = if binary {
                    "binary file"
                } else {
                    "too large to compare line by line"
                };
                let _ = writeln!(
                    diffs,
                    "### `{}`\n\n({why}; compared by hash)\n",
                    md_escape(path)
                );
            }
            summary.insertions += ins;
            summary.deletions += del;
            summary.files.push(FileChange {
                path: path.clone(),
                change,
                insertions: ins,
                deletions: del,
                binary,
            });
        }
        summary.files_changed = summary.files.len() as u64;
        let mut md = String::from("# What the run changed\n\n");
        if summary.files.is_empty() {
            md.push_str("No file in the workspace changed.\n");
        } else {
            let _ = writeln!(
                md,
                "{} file(s) changed, {} insertion(s), {} deletion(s).\n\n| file | change | + | - |\n| --- | --- | ---: | ---: |",
                summary.files_changed, summary.insertions, summary.deletions
            );
            for f in &summary.files {
                let kind = match f.change {
                    Change::Added => "added",
                    Change::Modified => "modified",
                    Change::Deleted => "deleted",
                };
                let _ = writeln!(
                    md,
                    "| `{}` | {kind}{} | {} | {} |",
                    md_escape(&f.path),
                    if f.binary { " (binary)" } else { "" },
                    f.insertions,
                    f.deletions
                );
            }
            md.push_str("\n## Diffs\n\n");
            md.push_str(&diffs);
        }
        (summary, md)
    }
}

/// Escape what would break a Markdown table cell or code span.
fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('`', "'")
        .replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_modified_deleted_and_binary() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path();
        std::fs::write(ws.join("keep.txt"), "a\nb\n").ok();
        std::fs::write(ws.join("gone.txt"), "x\n").ok();
        std::fs::write(ws.join("img.bin"), b"\0\x01\x02").ok();
        std::fs::write(ws.join(".gitignore"), "ignored.log\n").ok();
        let before = Snapshot::take(ws, &[]);
        std::fs::write(ws.join("keep.txt"), "a\nc\nd\n").ok();
        std::fs::remove_file(ws.join("gone.txt")).ok();
        std::fs::write(ws.join("new file.md"), "hello | world\n").ok();
        std::fs::write(ws.join("img.bin"), b"\0\x01\x03").ok();
        std::fs::write(ws.join("ignored.log"), "noise\n").ok();
        let (s, md) = before.compare(&Snapshot::take(ws, &[]));
        let got: Vec<(&str, Change, u64, u64, bool)> = s
            .files
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    f.change,
                    f.insertions,
                    f.deletions,
                    f.binary,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("gone.txt", Change::Deleted, 0, 1, false),
                ("img.bin", Change::Modified, 0, 0, true),
                ("keep.txt", Change::Modified, 2, 1, false),
                ("new file.md", Change::Added, 1, 0, false),
            ]
        );
        assert_eq!((s.files_changed, s.insertions, s.deletions), (4, 3, 2));
        assert!(md.contains("| `new file.md` | added | 1 | 0 |"));
        assert!(md.contains("+c"));
        assert!(!md.contains("ignored.log"));
    }
}
