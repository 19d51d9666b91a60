//! The subcommands the `git` tool does not run (rebase, merge, clean, tag,
//! fetch, clone, rm, restore, switch, config, remote, worktree, ...), judged
//! in bash steps by their entry in the rules file (`crates/policy/src/rules/git.toml`):
//! its options and its rule. Read-only ones are safe, local writes moderate,
//! writes that lose work or history dangerous, options that name a program
//! git runs unclassifiable. A subcommand or option missing from the file is
//! unclassifiable. Entries with `cases` are judged by them ([`super::risk::case`]),
//! the one whose rule is `custom` (config) here.

use super::options::Tag;
use super::parse::{Parsed, Word, parse_words};
use super::risk::Extra;
use super::rules::{self, Rule, Sub};
use super::{Verdict, verdict};
use crate::model::Risk;

/// Finds the entry of `name`, trying `name verb` first when the first
/// non-option word is a verb the file knows. Returns the entry and the
/// index of the first word after the verb. The tool's operations are not
/// looked up here.
fn lookup(name: &str, words: &[Word<'_>]) -> Option<(&'static Sub, usize)> {
    let r = rules::raw();
    let other = |n: &str| r.sub(n).filter(|s| s.rule != Rule::Operation);
    let verb = words
        .first()
        .and_then(|w| w.text)
        .filter(|t| !t.starts_with('-'));
    if let Some(s) = verb.and_then(|v| other(&format!("{name} {v}"))) {
        return Some((s, 1));
    }
    other(name).map(|s| (s, 0))
}

/// Judges `git NAME words...` for a subcommand the tool does not run; None when the file does not know it.
pub fn judge(name: &str, words: &[Word<'_>]) -> Option<Verdict> {
    let (sub, start) = lookup(name, words)?;
    let p = parse_words(sub, words, start);
    let shown = sub.name.as_str();
    let mut v = base(sub, &p);
    v = escalate(v, shown, &p);
    Some(super::risk::finish(v, shown, &p))
}

/// The verdict of its cases and its rule's (the loader checks that they
/// end with one that always holds), or of its custom rule.
fn base(sub: &Sub, p: &Parsed) -> Verdict {
    let name = &sub.name;
    match (
        super::risk::case(sub, name, p, Extra::default()),
        custom(name),
    ) {
        (Some((_, v)), _) => v,
        (None, Some(f)) => f(p),
        (None, None) => verdict(Risk::Moderate, format!("git {name} has no rule"))
            .cannot_judge(format!("git {name} has no rule plangate can apply")),
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
                Some(key) => match super::config::key_problem(key) {
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

/// The rule of a `custom` entry.
pub(super) fn custom(name: &str) -> Option<fn(&Parsed) -> Verdict> {
    (name == "config").then_some(config as fn(&Parsed) -> Verdict)
}

fn config(p: &Parsed) -> Verdict {
    let mut pos: Vec<&str> = p.positionals.iter().map(String::as_str).collect();
    // `git config get|set|unset|list|...` (git 2.46) names the action first.
    let verb = match pos.first().copied() {
        Some(v @ ("get" | "list" | "set" | "unset" | "rename-section" | "remove-section")) => {
            pos.remove(0);
            Some(v)
        }
        _ => None,
    };
    let reads = matches!(verb, Some("get" | "list"))
        || (verb.is_none() && p.has(Tag::DryRun))
        || (verb.is_none() && !p.has(Tag::Delete) && pos.len() < 2);
    if reads {
        return verdict(Risk::Safe, "git config only reads configuration");
    }
    if p.has(Tag::Delete) || matches!(verb, Some("unset" | "rename-section" | "remove-section")) {
        return verdict(Risk::Moderate, "git config removes configuration");
    }
    let key = pos.first().copied().unwrap_or_default();
    if p.runtime_positionals.contains(&0) {
        return verdict(Risk::Moderate, "git config sets configuration").cannot_judge(format!(
            "git config sets a key only known at run time (`{key}`)"
        ));
    }
    if let Some(why) = super::config::key_problem(key) {
        return verdict(Risk::Moderate, "git config sets configuration").cannot_judge(why);
    }
    if p.has(Tag::OutsideRepo) {
        return verdict(
            Risk::Moderate,
            format!("git config sets `{key}` outside the repository (user, system or named file)"),
        );
    }
    verdict(
        Risk::Moderate,
        format!("git config sets `{key}` in the repository's configuration"),
    )
}
