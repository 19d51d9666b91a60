//! The operations of the `git` tool: the subcommands whose option tables
//! and risk rules are in this module (the tool's `operation` parameter).

use schemars::JsonSchema;
use serde::Deserialize;

/// The operations of the `git` tool (design 002, 2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GitOperation {
    /// `git status` (read-only).
    Status,
    /// `git diff` (read-only).
    Diff,
    /// `git log` (read-only).
    Log,
    /// `git add` (`files`, default all changes).
    Add,
    /// `git commit -m commit_message` (`files` to commit only those).
    Commit,
    /// `git push` (dangerous with `force` or to the default branch).
    Push,
    /// `git pull --ff-only` unless `args` say otherwise.
    Pull,
    /// `git branch` (lists without args; creates, deletes with args).
    Branch,
    /// `git checkout`.
    Checkout,
    /// `git stash`.
    Stash,
    /// `git reset` (dangerous with `--hard` or `force`).
    Reset,
}

impl GitOperation {
    /// The git subcommand.
    pub fn as_str(self) -> &'static str {
        match self {
            GitOperation::Status => "status",
            GitOperation::Diff => "diff",
            GitOperation::Log => "log",
            GitOperation::Add => "add",
            GitOperation::Commit => "commit",
            GitOperation::Push => "push",
            GitOperation::Pull => "pull",
            GitOperation::Branch => "branch",
            GitOperation::Checkout => "checkout",
            GitOperation::Stash => "stash",
            GitOperation::Reset => "reset",
        }
    }
}
