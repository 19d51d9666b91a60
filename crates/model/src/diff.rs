//! What the run changed in the workspace, as the report's `diff` block
//! ([`DiffSummary`]). The `diff` module computes it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// New file.
    Added,
    /// Content (or mode, or type) changed.
    Modified,
    /// Removed.
    Deleted,
    /// Moved from `old_path` (maybe changed too).
    Renamed,
}

impl Change {
    /// The report's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Modified => "modified",
            Change::Deleted => "deleted",
            Change::Renamed => "renamed",
        }
    }
}

/// How the comparison was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Two git trees in a private index and object directory.
    Git,
    /// Content hashes of the files.
    #[default]
    Snapshot,
    /// Not compared: no step that ran could write the workspace.
    None,
}

/// One changed file. Fields are in alphabetical order: that is the key order
/// `report.json` has always had (the block was once an untyped JSON map).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    /// Not text: no line counts.
    #[serde(default)]
    pub binary: bool,
    /// added | modified | deleted | renamed.
    pub change: Change,
    /// Lines removed.
    pub deletions: u64,
    /// Left out by git's ignore rules (`.gitignore`, `.git/info/exclude`,
    /// the global excludes) after the run (before it, for a deleted file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
    /// Lines added (0 for binary or uncompared files).
    pub insertions: u64,
    /// The git blob id of its content after the run (of a symbolic link:
    /// its target), as git's comparison recorded it; absent for a deleted
    /// file and when the diff was not made by git. A push sends only bytes
    /// with this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oid: Option<String>,
    /// Where a renamed file was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// Relative to the workspace, `/`-separated (non-UTF-8 names: see the `diff` module).
    pub path: String,
    /// The steps (or `<id> (rollback)`) that changed it, in order; empty when
    /// it changed while steps overlapped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
}

/// The report's `diff` block: built by `diff`, carried by the report, read
/// by the renderers and `merge`. Fields in alphabetical order, as in [`FileChange`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiffSummary {
    /// Lines removed.
    pub deletions: u64,
    /// Each changed file, sorted by path.
    pub files: Vec<FileChange>,
    /// Files added, modified, deleted or renamed.
    pub files_changed: u64,
    /// Lines added.
    pub insertions: u64,
    /// git or snapshot.
    #[serde(default)]
    pub method: Method,
    /// What the reader should know: why git was not used, what was left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The workspace's folder inside its git repository (`""` at its top,
    /// else ending in `/`), as git said before the first step ran; absent
    /// when the diff was not made by git. A push lays the files there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}
