//! The subcommands the `git` tool does not run (rebase, merge, clean, tag,
//! fetch, clone, rm, restore, switch, config, remote, worktree, ...), judged
//! in bash steps: one table entry per subcommand (or `subcommand verb`, like
//! `remote add`) with its options and its rule. Read-only ones are safe,
//! local writes moderate, writes that lose work or history dangerous,
//! options that name a program git runs unclassifiable. A subcommand or
//! option missing from the table is unclassifiable.

mod custom;
mod reads;
mod writes;

use super::options::{Refused, Spec, Tables, Tag};
use super::parse::{Parsed, Word, parse_words};
use super::{Verdict, verdict};
use crate::model::Risk;

/// What a subcommand does before its options are looked at.
#[derive(Clone, Copy)]
pub(crate) enum Rule {
    /// Only reads the repository.
    Reads,
    /// Talks to a remote (and may update remote-tracking refs).
    Network(&'static str),
    /// Changes the repository or working tree in a way git can undo.
    Writes(&'static str),
    /// Always dangerous.
    Dangerous(&'static str),
    /// Runs commands written on the command line.
    RunsCommands(&'static str),
    /// A rule of its own.
    Custom(fn(&Parsed) -> Verdict),
}

/// One subcommand (or `subcommand verb`) and how to read it.
pub(crate) struct Sub {
    /// `rebase`, or `remote add` for a verb.
    pub name: &'static str,
    /// Known options.
    pub known: &'static [&'static [Spec]],
    /// Options with a [`super::options::Refusal`] meaning.
    pub refused: &'static [&'static [Refused]],
    /// Whether git accepts abbreviated long options here.
    pub abbrev: bool,
    /// The rule.
    pub rule: Rule,
}

/// Finds the entry of `name`, trying `name verb` first when the first
/// non-option word is a verb the table knows. Returns the entry and the
/// index of the first word after the verb.
fn lookup(name: &str, words: &[Word<'_>]) -> Option<(&'static Sub, usize)> {
    let verb = words
        .first()
        .and_then(|w| w.text)
        .filter(|t| !t.starts_with('-'));
    if let Some(v) = verb {
        let full = format!("{name} {v}");
        if let Some(s) = all().find(|s| s.name == full) {
            return Some((s, 1));
        }
    }
    all().find(|s| s.name == name).map(|s| (s, 0))
}

fn all() -> impl Iterator<Item = &'static Sub> {
    reads::SUBS
        .iter()
        .chain(writes::SUBS.iter())
        .chain(custom::SUBS.iter())
}

/// Judges `git NAME words...` for a subcommand the tool does not run; None when the table does not know it.
pub(crate) fn judge(name: &str, words: &[Word<'_>]) -> Option<Verdict> {
    let (sub, start) = lookup(name, words)?;
    let t = Tables {
        known: sub.known.to_vec(),
        refused: sub.refused.to_vec(),
        abbrev: sub.abbrev,
        counts: false,
    };
    let p = parse_words(&t, words, start, true);
    let shown = sub.name;
    let mut v = base(sub, &p);
    v = escalate(v, shown, &p);
    Some(super::risk::finish(v, shown, &p))
}

/// The rule's verdict, before the options that raise it.
fn base(sub: &Sub, p: &Parsed) -> Verdict {
    let name = sub.name;
    let dry = p.has(Tag::DryRun);
    match sub.rule {
        Rule::Reads => verdict(Risk::Safe, format!("git {name} only reads the repository")),
        Rule::Network(why) => verdict(Risk::Moderate, format!("git {name} {why}")),
        Rule::Writes(_) if dry => {
            verdict(Risk::Safe, format!("git {name} --dry-run changes nothing"))
        }
        Rule::Writes(why) => verdict(Risk::Moderate, format!("git {name} {why}")),
        Rule::Dangerous(why) => verdict(Risk::Dangerous, format!("git {name} {why}")),
        Rule::RunsCommands(why) => verdict(Risk::Moderate, format!("git {name} {why}"))
            .cannot_judge(format!("git {name} {why}, which plangate cannot judge")),
        Rule::Custom(f) => f(p),
    }
}

/// Options that raise any subcommand's risk.
fn escalate(mut v: Verdict, name: &str, p: &Parsed) -> Verdict {
    for o in &p.options {
        v = match o.tag {
            Tag::RunsProgram => v.cannot_judge(format!(
                "git {name} {} names a program git runs, which plangate cannot judge",
                o.name
            )),
            Tag::WritesPath => v.at_least(
                Risk::Dangerous,
                format!(
                    "git {name} {} writes a file named on the command line",
                    o.name
                ),
            ),
            Tag::Config => match o
                .value
                .as_deref()
                .map(|kv| kv.split('=').next().unwrap_or(kv))
            {
                Some(key) => match super::config::judge_key(key) {
                    Some(why) => v.cannot_judge(why),
                    None => v,
                },
                None => v.cannot_judge(format!("git {name} {} sets unknown configuration", o.name)),
            },
            Tag::Force | Tag::Discards if !p.has(Tag::DryRun) => v.at_least(
                Risk::Dangerous,
                format!(
                    "git {name} {} overrides git's checks and can lose work",
                    o.name
                ),
            ),
            _ => v,
        };
    }
    v
}
