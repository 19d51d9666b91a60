//! What the options in the rules file (`crates/policy/src/rules/git.toml`) mean:
//! how one takes its value, what it means to the risk rules ([`Tag`]), why
//! the tool refuses one ([`Refusal`]) and what that amounts to in a bash
//! step; and the tables of the tool's operations.
//!
//! Names are written in full; [`super::abbrev`] resolves the unambiguous
//! prefixes git accepts. An option missing from the file is unknown: the
//! step or command is unclassifiable.

use super::Op;
use super::rules::{self, OptSpec, Sub};
pub use super::rules::{Refusal, Tag, Takes};

/// What a refused option of the tool amounts to in a bash step, where git
/// runs as written and the tool's restrictions do not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InBash {
    /// Nothing more than the subcommand's own risk (reads a file, sets the message).
    Plain,
    /// Runs programs the repository's configuration names (like its hooks): at least moderate.
    RunsConfigured,
    /// Runs a program written on the command line: unclassifiable.
    RunsProgram,
    /// Writes a file named on the command line: dangerous.
    WritesFile,
}

impl Refusal {
    /// Why the tool refuses it.
    pub fn why(self) -> &'static str {
        match self {
            Refusal::Gpg => "makes git run gpg",
            Refusal::Interactive => {
                "waits for answers on a terminal, and a CI run has nobody to give them"
            }
            Refusal::ExtDiff => "makes git run an external diff program",
            Refusal::Textconv => "makes git run textconv filter programs",
            Refusal::WritesFile => "writes a file plangate does not check",
            Refusal::NoIndex => {
                "compares files outside the repository, which plangate does not check"
            }
            Refusal::OrderFile => "reads an order file plangate does not check",
            Refusal::Message => "sets the message: use `commit_message` instead",
            Refusal::MessageFile => {
                "reads the message from a file plangate does not check: use `commit_message`"
            }
            Refusal::TemplateFile => {
                "reads a template file plangate does not check: use `commit_message`"
            }
            Refusal::RemoteProgram => "names a program git runs for the remote side",
            Refusal::Editor => "opens an editor",
            Refusal::Pager => "names a program git runs",
            Refusal::Nul => "contains a NUL byte",
        }
    }

    /// What it amounts to in a bash step.
    pub fn in_bash(self) -> InBash {
        match self {
            Refusal::Gpg | Refusal::ExtDiff | Refusal::Textconv | Refusal::Editor => {
                InBash::RunsConfigured
            }
            Refusal::RemoteProgram | Refusal::Pager => InBash::RunsProgram,
            Refusal::WritesFile => InBash::WritesFile,
            Refusal::Interactive
            | Refusal::NoIndex
            | Refusal::OrderFile
            | Refusal::Message
            | Refusal::MessageFile
            | Refusal::TemplateFile
            | Refusal::Nul => InBash::Plain,
        }
    }
}

/// The tables of one subcommand: its options and how git reads them.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// Its options (known and refused).
    pub options: &'static [OptSpec],
    /// Whether git accepts unambiguous prefixes of the long options (its
    /// parse-options library does; the revision and diff parsers of `log`
    /// and `diff` do not).
    pub abbrev: bool,
    /// Whether `-<n>` means `-n <n>` (the log family).
    pub counts: bool,
    /// Whether `--` introduces paths (otherwise it only ends the options).
    pub paths: bool,
}

impl Tables {
    /// The tables of a rules entry.
    pub fn of(s: &'static Sub) -> Tables {
        Tables {
            options: &s.options,
            abbrev: s.abbrev,
            counts: s.counts,
            paths: s.paths,
        }
    }
}

/// Which tables apply to an operation (and stash subcommand): the entry of
/// the operation (`stash push` when stash names none) in the rules; none
/// for a stash subcommand they do not list.
pub fn tables(op: Op, stash_sub: Option<&str>) -> Tables {
    let name = match op {
        Op::Stash => format!("stash {}", stash_sub.unwrap_or("push")),
        _ => op.as_str().to_owned(),
    };
    rules::raw().sub(&name).map(Tables::of).unwrap_or_default()
}

/// Stash subcommands plangate knows.
pub fn stash_subs() -> Vec<&'static str> {
    rules::verbs("stash")
}
