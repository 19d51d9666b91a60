//! The one git risk table, called by the `git` tool and by the bash
//! classifier (`git …` in a bash step), so an operation has the same risk by
//! either route. No I/O here. Refused options are the tool's plan errors
//! (they make git run a program named by the plan, touch files plangate does
//! not check, or wait for a human); an unknown or ambiguous one makes the
//! step or command unclassifiable.

pub mod command;
pub mod config;
pub mod parse;
pub mod risk;
pub mod rules;

pub use GitOperation as Op;
pub use command::classify_command;
pub use parse::{Parsed, Word};
pub use risk::{Extra, PushTarget, push_target};
pub use rules::Tag;

use crate::model::Risk;
use rules::{FILE, Sub};
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
    /// The git subcommand (the variants' order).
    pub fn as_str(self) -> &'static str {
        const NAMES: [&str; 11] = [
            "status", "diff", "log", "add", "commit", "push", "pull", "branch", "checkout",
            "stash", "reset",
        ];
        NAMES[self as usize]
    }
}

/// An operation's entry in the rules (empty for a stash subcommand the file
/// does not list), and its name (`stash push` when stash names none).
pub fn entry(op: Op, stash_sub: Option<&str>) -> (&'static Sub, String) {
    static NONE: std::sync::OnceLock<Sub> = std::sync::OnceLock::new();
    let name = match op {
        Op::Stash => format!("stash {}", stash_sub.unwrap_or("push")),
        _ => op.as_str().to_owned(),
    };
    let sub = rules::raw().subs.iter().find(|s| s.name == name);
    (sub.unwrap_or_else(|| NONE.get_or_init(Sub::default)), name)
}

/// Stash subcommands plangate knows.
pub fn stash_subs() -> Vec<&'static str> {
    let subs = rules::raw().subs.iter();
    subs.filter_map(|s| s.name.strip_prefix("stash ")).collect()
}

/// The verdict on a git step or command: its risk and what decided it, why
/// plangate cannot judge it, and why the tool refuses it (a plan error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub risk: Risk,
    pub reason: String,
    pub unclassifiable: Option<String>,
    pub blocked: Option<String>,
}

pub fn verdict(risk: Risk, reason: impl Into<String>) -> Verdict {
    Verdict {
        risk,
        reason: reason.into(),
        unclassifiable: None,
        blocked: None,
    }
}

impl Verdict {
    /// Marks the verdict unclassifiable when there is a why (the risk is then
    /// at least moderate; the first why stays).
    pub fn cannot_judge(mut self, why: impl Into<Option<String>>) -> Verdict {
        let Some(why) = why.into() else { return self };
        self.unclassifiable.get_or_insert(why);
        self.risk = self.risk.max(Risk::Moderate);
        self
    }

    /// Raises the risk to `risk` with this reason when it is higher.
    pub fn at_least(mut self, risk: Risk, reason: impl Into<String>) -> Verdict {
        if risk > self.risk {
            self.risk = risk;
            self.reason = reason.into();
        }
        self
    }
}

/// Reads a tool step's `args` (literal words) with the operation's table.
pub fn parse(op: Op, args: &[String]) -> Parsed {
    let words: Vec<Word<'_>> = args.iter().map(|a| Word::lit(a)).collect();
    parse_op(op, &words)
}

/// Reads the words after the subcommand (the first word of `stash` is its
/// subcommand when it is not an option).
pub fn parse_op(op: Op, words: &[Word<'_>]) -> Parsed {
    let is_sub = |w: &&Word| op == Op::Stash && w.text.is_none_or(|t| !t.starts_with('-'));
    let sub = words.first().filter(is_sub);
    let stash_sub = sub.map(|w| w.text.unwrap_or(w.raw).to_owned());
    let (t, _) = entry(op, stash_sub.as_deref());
    let p = parse::parse_words(t, words, usize::from(sub.is_some()));
    Parsed { stash_sub, ..p }
}

/// The parts of a tool step the rules need (from the plan's nodes before
/// the parameters are typed, and from the typed parameters after).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub op: Op,
    pub args: &'a [String],
    pub has_files: bool,
    pub force: bool,
    pub dry_run: bool,
    pub has_message: bool,
}

/// Classifies a `git` tool step: a refused option blocks it, an unknown or
/// ambiguous one (or a rules file that does not load) makes it unclassifiable.
pub fn classify(r: &Request<'_>) -> Verdict {
    let (p, op) = (parse(r.op, r.args), r.op.as_str());
    let x = Extra {
        force: r.force,
        dry_run: r.dry_run,
        has_files: r.has_files,
    };
    let mut v = risk::judge(r.op, &p, x);
    if let Some((i, why)) = p.refused.first() {
        v.blocked = Some(format!("`{}` {}", r.args[*i], rules::refusal(why).0));
        v.risk = Risk::Dangerous;
    } else if let Some(why) = p.unreadable() {
        let why = format!("{why} for git {op}, so it cannot judge what it does");
        v = v.cannot_judge(why);
    }
    v.cannot_judge(checked().err().map(str::to_owned))
}

// The rules' examples are checked here, above the files they call, so that
// no file of this folder depends on one that depends on it.

/// Runs every example of `r` through the classifier (which reads the
/// loaded rules: `r` is them, except in the tests of this checker).
fn check_examples(r: &rules::Rules) -> Result<(), String> {
    let stored: Judge = |key| match config::stored_problem(key) {
        None => ("harmless", String::new()),
        Some(w) if w.contains("run a program") => ("runs", w),
        Some(w) => ("unknown", w),
    };
    for (n, l) in &r.groups {
        check(&format!("group `{n}`"), None, &l.examples, command)?;
    }
    for s in &r.subs {
        let entry = format!("subcommand `{}`", s.name);
        let op = rules::named::<Op>(s.name.split(' ').next().unwrap_or_default());
        if s.rule == "operation" && op.is_none() {
            return Err(format!("{FILE}: {entry}: not an operation of the git tool"));
        }
        check(&entry, Some(s), &s.lists.examples, command)?;
    }
    let (g, c) = (&r.globals, &r.config);
    check("globals", Some(g), &g.lists.examples, command)?;
    check("config", None, &c.examples, command)?;
    check("config (stored keys)", None, &c.stored_examples, stored)
}

/// What the classifier says of an example: its label (`safe`, ...,
/// `unclassifiable`) and why.
type Judge = fn(&str) -> (&'static str, String);

fn lits(line: &str) -> Vec<Word<'_>> {
    line.split_whitespace().map(Word::lit).collect()
}

fn command(line: &str) -> (&'static str, String) {
    let v = command::judge_words(&lits(line)).verdict;
    let unclassifiable = v.unclassifiable.is_some().then_some("unclassifiable");
    (unclassifiable.unwrap_or(v.risk.as_str()), v.reason)
}

/// Checks the examples of one entry (`sub`: its table; none for a group or
/// `[config]`): each is judged as written, each own case of `sub` decides
/// one, and each of its `not_examples` has an option it does not know.
fn check(entry: &str, sub: Option<&Sub>, examples: &[String], judge: Judge) -> Result<(), String> {
    let at = |what: String| format!("{FILE}: {entry}: {what}");
    // `line` after the entry's name (none for the global options), read with its table.
    let parsed = |line: &str, s: &Sub| {
        let (words, n) = (lits(line), s.name.split_whitespace().count());
        let named = (words.iter().take(n).map(|w| w.raw)).eq(s.name.split_whitespace());
        let why = format!("example `{line}`: it does not start with `{}`", s.name);
        (named.then(|| parse::parse_words(s, &words[n..], 0))).ok_or_else(|| at(why))
    };
    let mut decided = std::collections::BTreeSet::new();
    for e in examples {
        let example = |why: String| at(format!("example `{e}`: {why}"));
        let (want, line) =
            (e.split_once(": ")).ok_or_else(|| example("write `LABEL: LINE`".into()))?;
        let (got, why) = judge(line);
        if got != want {
            return Err(example(format!("the classifier says {got} ({why})")));
        }
        if let Some(s) = sub {
            let p = parsed(line, s)?;
            decided.extend(risk::case(s, &s.name, &p, Extra::default()).map(|(i, _)| i));
        }
    }
    let Some(s) = sub else { return Ok(()) };
    if let Some(i) = (0..s.own).find(|i| !decided.contains(i)) {
        return Err(at(format!("no example is decided by its case {}", i + 1)));
    }
    for line in &s.not_examples {
        if parsed(line, s)?.unreadable().is_none() {
            let known = format!("not_example `{line}`: every option of it is known");
            return Err(at(known));
        }
    }
    Ok(())
}

/// The rules once their examples are checked (once per process), or why
/// they cannot be used.
pub fn checked() -> Result<&'static rules::Rules, &'static str> {
    static C: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let r = rules::loaded().as_ref().map_err(String::as_str)?;
    let checked = C.get_or_init(|| check_examples(r));
    checked.as_ref().map(|_| r).map_err(String::as_str)
}
