//! The `git` tool's parameters as written (design 002, 2.3) and its checked action.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::format::timeout::Timeout;

/// The operations (owned by the git risk rules, which the bash classifier shares).
pub(crate) use crate::policy::git::GitOperation;

/// Parameters of the `git` tool (design 002, 2.3). Runs `git` directly (no shell),
/// with hooks, pagers, credential prompts and external diff drivers disabled.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitParams {
    /// The operation.
    pub operation: GitOperation,
    /// More arguments for the git subcommand, one per item (never parsed by a shell).
    #[serde(default)]
    pub args: Vec<String>,
    /// The repository, relative to the workspace. Default: the workspace.
    #[serde(default)]
    pub repository_path: Option<String>,
    /// The commit message (required for `commit`; also the message of a `stash push`).
    #[serde(default)]
    pub commit_message: Option<String>,
    /// Paths (git pathspecs, relative to the repository) for status, diff, log, add, commit,
    /// checkout, reset and stash push. `add` without files stages all changes; `commit`
    /// without files commits what is staged (`args: [--all]` for every tracked change).
    #[serde(default)]
    pub files: Vec<String>,
    /// Force the operation (`push --force-with-lease`, `pull --force`, `add --force`,
    /// `checkout --force`, `branch --force`/`-D`, `reset --hard`): dangerous.
    #[serde(default)]
    pub force: bool,
    /// Show what would be done: `--dry-run` for add, commit, push and pull; nothing to do for
    /// the read-only operations; a plan error for the others (git has no dry run for them).
    #[serde(default)]
    pub dry_run: bool,
    /// Same as the step's `timeout`; set one or the other.
    #[serde(default)]
    pub timeout: Option<Timeout>,
    /// Print git's output on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

/// A checked `git` step.
#[derive(Debug, Clone)]
pub struct GitAction {
    /// The repository, relative to the workspace (empty: the workspace).
    pub repo: PathBuf,
    /// The parameters as written.
    pub params: GitParams,
}
