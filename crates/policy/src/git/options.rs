//! What the options in the rules file (`crates/policy/src/rules/git.toml`) mean:
//! how one takes its value, what it means to the risk rules ([`Tag`]), why
//! the tool refuses one ([`Refusal`]) and what that amounts to in a bash
//! step; and the entries of the tool's operations.
//!
//! Names are written in full; [`super::abbrev`] resolves the unambiguous
//! prefixes git accepts. An option missing from the file is unknown: the
//! step or command is unclassifiable.

use super::Op;
use super::rules::{self, Sub};
pub use super::rules::{InBash, Refusal, Tag, Takes};

/// The entry of an operation (and stash subcommand) in the rules: `stash
/// push` when stash names none; one without options for a stash subcommand
/// the file does not list.
pub fn tables(op: Op, stash_sub: Option<&str>) -> &'static Sub {
    static NONE: Sub = Sub {
        name: String::new(),
        rule: rules::Rule::Reads,
        why: String::new(),
        options: Vec::new(),
        cases: Vec::new(),
        own: 0,
        abbrev: false,
        counts: false,
        paths: false,
    };
    let name = match op {
        Op::Stash => format!("stash {}", stash_sub.unwrap_or("push")),
        _ => op.as_str().to_owned(),
    };
    rules::raw().sub(&name).unwrap_or(&NONE)
}

/// Stash subcommands plangate knows.
pub fn stash_subs() -> Vec<&'static str> {
    rules::verbs("stash")
}
