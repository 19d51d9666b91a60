//! Bash command risk classifier: [`classify_bash`] parses a command line with
//! `brush-parser`, walks every command it can find (nested scripts included)
//! and returns the highest risk, a block, or "cannot read it" (fail-closed).
//! A pure function: no I/O, no processes, no environment; paths are resolved
//! lexically against [`ClassifyContext`].

mod arith;
mod braces;
mod builtins;
mod commands;
mod effects;
mod files;
mod infra;
mod nesting;
mod paths;
pub mod rules;
mod shells;
mod tools;
mod vars;
mod walk;
mod words;
mod wrappers;
mod writers;

use crate::model::Risk;

/// Where a command runs; all paths are absolute.
pub struct ClassifyContext<'a> {
    /// The repository the plan works on.
    pub workspace: &'a std::path::Path,
    /// Where the command runs (inside workspace).
    pub working_dir: &'a std::path::Path,
    /// `$HOME`, for resolving `~`.
    pub home: Option<&'a std::path::Path>,
}

/// The verdict on one command line. Blocked and unclassifiable commands are
/// dangerous by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classification {
    /// Read and judged: the highest risk found and the first reason at it,
    /// e.g. "`rm -rf build` deletes recursively inside the workspace".
    Judged { risk: Risk, reason: String },
    /// Must never run, whatever the approvals.
    Blocked { reason: String },
    /// The command cannot be read (syntax error, unsupported construct): an
    /// explicit approval is required.
    Unclassifiable { reason: String },
}

impl Classification {
    /// The risk: dangerous when blocked or unclassifiable.
    pub fn risk(&self) -> Risk {
        match self {
            Self::Judged { risk, .. } => *risk,
            Self::Blocked { .. } | Self::Unclassifiable { .. } => Risk::Dangerous,
        }
    }

    /// One line naming what decided the verdict.
    pub fn reason(&self) -> &str {
        match self {
            Self::Judged { reason, .. }
            | Self::Blocked { reason }
            | Self::Unclassifiable { reason } => reason,
        }
    }

    /// Why the command must never run, when it is blocked.
    pub fn blocked(&self) -> Option<&str> {
        match self {
            Self::Blocked { reason } => Some(reason),
            _ => None,
        }
    }

    /// Why the command cannot be read, when it is unclassifiable.
    pub fn unclassifiable(&self) -> Option<&str> {
        match self {
            Self::Unclassifiable { reason } => Some(reason),
            _ => None,
        }
    }

    /// The label fixtures and rule examples write: `blocked`,
    /// `unclassifiable` or the risk.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Judged { risk, .. } => risk.as_str(),
            Self::Blocked { .. } => "blocked",
            Self::Unclassifiable { .. } => "unclassifiable",
        }
    }
}

/// Classifies one bash command line. Never panics, does no I/O. Every
/// command is unclassifiable when a rules file (`crates/policy/src/rules/`) does
/// not load.
pub fn classify_bash(command: &str, ctx: &ClassifyContext<'_>) -> Classification {
    let c = classify_unchecked(command, ctx);
    match rules::checked() {
        Err(e) if c.blocked().is_none() => Classification::Unclassifiable {
            reason: e.to_owned(),
        },
        _ => c,
    }
}

/// [`classify_bash`] without the check of the rules file (its examples use it).
fn classify_unchecked(command: &str, ctx: &ClassifyContext<'_>) -> Classification {
    let mut walker = walk::Walker::new(ctx, true);
    walker.script(command);
    if walker.scratch_named {
        // The script may change `$PLANGATE_STEP_ARTIFACTS` or `$TMPDIR`:
        // judge it again with their values unknown.
        walker = walk::Walker::new(ctx, false);
        walker.script(command);
    }
    walker.finish()
}

/// Makes a reason printable on one line: control characters become spaces.
fn one_line(s: &str) -> String {
    let cleaned = s.replace(char::is_control, " ");
    if cleaned.trim().is_empty() {
        "unnamed reason".to_string()
    } else {
        cleaned
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
