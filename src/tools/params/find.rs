//! The `find_in_files` tool's parameters as written (design 002, 2.2) and its checked action.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

fn default_true() -> bool {
    true
}

/// Parameters of `find_in_files` (design 002, 2.2): a regex search with ripgrep's crates.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindInFilesParams {
    /// The pattern: a regular expression (Rust/ripgrep syntax), or a literal with `fixed_strings: true`.
    #[schemars(length(min = 1))]
    pub query: String,
    /// File or directory to search, relative to the workspace. Default `.`.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files whose name matches these globs (comma-separated), e.g. `*.rs,*.toml`.
    #[serde(default)]
    pub file_pattern: Option<String>,
    /// Lines of context shown before and after each match. Default 2.
    #[serde(default)]
    #[schemars(range(max = 1000))]
    pub max_context_lines: Option<u32>,
    /// Matches kept in the result (all are counted in `total_matches`). Default 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub max_matches: Option<u32>,
    /// Case-sensitive search. Default false (as in the design).
    #[serde(default)]
    pub case_sensitive: bool,
    /// Search binary files too (matches are reported with their line, text lossy). Default false.
    #[serde(default)]
    pub include_binary: bool,
    /// Directory names (or globs) never entered, e.g. `node_modules`. `.git` is always left out.
    #[serde(default)]
    pub exclude_dirs: Vec<String>,
    /// Treat `query` as a literal string, not a regex.
    #[serde(default)]
    pub fixed_strings: bool,
    /// Search hidden files and directories too. Default true (`.gitignore` is still respected).
    #[serde(default = "default_true")]
    pub hidden: bool,
    /// Fail the step when the query matches (a "must not appear" check). Default false.
    #[serde(default)]
    pub fail_on_match: bool,
    /// Fail the step when the query does not match (a "must appear" check). Default false.
    #[serde(default)]
    pub fail_if_none: bool,
    /// Print the matches on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

/// A checked `find_in_files` step.
#[derive(Debug, Clone)]
pub struct FindAction {
    /// Relative to the workspace, inside it (empty: the workspace).
    pub path: PathBuf,
    /// The parameters as written.
    pub params: FindInFilesParams,
}
