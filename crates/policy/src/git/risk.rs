//! The risk of a subcommand from its entry's `cases` in the rules file: the
//! first whose condition holds on the parsed arguments decides. The tool and
//! the bash classifier both call [`judge`] for the tool's operations, so an
//! operation has the same risk by either route.

use super::config::key_problem;
use super::parse::Parsed;
use super::push::{DEFAULT_BRANCHES, push_target};
use super::rules::{self, Atom, Case, Sub, Tag};
use super::{Op, Verdict, entry, stash_subs, tables, verdict};
use crate::model::Risk;
use std::collections::BTreeMap;

/// What the risk rules need besides the parsed arguments.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extra {
    /// The tool's `force` (git's `--force`, `--hard` for reset, `--force-with-lease` for push).
    pub force: bool,
    /// The tool's `dry_run`.
    pub dry_run: bool,
    /// Paths are given outside `args` (the tool's `files`, or a bash word read as a path).
    pub has_files: bool,
}

/// Whether the request only reads (status, diff, log, branch listing, stash
/// list/show): its rules call it safe, and not for a dry run.
pub fn read_only(op: Op, p: &Parsed) -> bool {
    !matches!(op, Op::Add | Op::Commit) && judge(op, p, Extra::default()).risk == Risk::Safe
}

/// The risk of the operation as its entry's cases say (refused, unknown and
/// run-time words are the caller's to add).
pub fn judge(op: Op, p: &Parsed, x: Extra) -> Verdict {
    let (sub, shown) = (p.stash_sub.as_deref(), entry(op, p.stash_sub.as_deref()));
    let changes = format!("git {shown} changes the working tree");
    case(tables(op, sub), &shown, p, x).map_or_else(|| verdict(Risk::Moderate, changes), |(_, v)| v)
}

/// The facts a condition may name (`rules::FACTS`) that hold, each with the
/// text a reason's `{fact}` shows; `{name}` (the entry) and `{key}` (the first
/// positional: the key `git config` sets) are always there.
pub(super) fn facts(p: &Parsed, x: Extra, shown: &str) -> [(&'static str, Option<String>); 13] {
    let t = push_target(p);
    let default = t
        .branches
        .iter()
        .find(|b| DEFAULT_BRANCHES.contains(&b.as_str()));
    let key = p.positionals.first().map_or("", String::as_str);
    let yes = |b: bool| b.then(String::new);
    let plus = p.positionals.iter().skip(1).any(|s| s.starts_with('+'));
    [
        ("name", Some(shown.to_owned())),
        ("key", Some(key.to_owned())),
        ("paths", yes(!p.paths.is_empty())),
        ("files", yes(x.has_files)),
        ("plus-refspec", yes(plus)),
        ("push-forced", yes(t.forced)),
        ("push-deletes", yes(t.deletes)),
        ("push-unknown", t.unknown.clone()),
        ("push-default", default.cloned()),
        (
            "push-branches",
            (!t.branches.is_empty()).then(|| t.branches.join("`, `")),
        ),
        ("key-runtime", yes(p.runtime_positionals.contains(&0))),
        ("key-problem", key_problem(key)),
        ("config-problem", config_problem(p, &format!("git {shown}"))),
    ]
}

/// The facts that hold for some arguments: whether a case's condition holds,
/// and its reasons filled in (a `{TAG}` is the full name of the first option
/// with that tag).
struct Judged<'a>(&'a Parsed, Extra, BTreeMap<&'static str, String>);

impl<'a> Judged<'a> {
    fn new(p: &'a Parsed, x: Extra, shown: &str) -> Self {
        let holding = facts(p, x, shown).into_iter();
        Judged(p, x, holding.filter_map(|(k, v)| Some((k, v?))).collect())
    }

    fn holds(&self, c: &Case) -> bool {
        let Judged(p, x, facts) = self;
        let atom = |a: &Atom| match a {
            Atom::Tag(Tag::Force) if x.force => true,
            Atom::Tag(Tag::DryRun) if x.dry_run => true,
            Atom::Tag(tag) => p.has(*tag),
            Atom::Name(n, v) => {
                (p.options.iter()).any(|o| o.name == *n && (v.is_none() || o.value == *v))
            }
            Atom::Args('<', n) => p.positionals.len() < *n,
            Atom::Args('>', n) => p.positionals.len() > *n,
            Atom::Args(_, n) => p.positionals.len() == *n,
            Atom::Fact(f) => facts.contains_key(f),
        };
        c.when.is_empty() || (c.when.iter()).any(|all| all.iter().all(|(neg, a)| atom(a) != *neg))
    }

    fn fill(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some((head, tail)) = rest.split_once('{') {
            let (key, after) = tail.split_once('}').unwrap_or((tail, ""));
            let tag = rules::tag_named(key).and_then(|t| self.0.named(t));
            out += head;
            out += self
                .2
                .get(key)
                .map_or(tag.unwrap_or_default(), String::as_str);
            rest = after;
        }
        out + rest
    }

    /// `v` raised by `c` (to its risk with its reason when higher; `c`'s own
    /// verdict when there is none), and unclassifiable when `c` says so.
    fn raise(&self, v: Option<Verdict>, c: &Case) -> Verdict {
        let why = self.fill(&c.why);
        let v = match v {
            Some(v) => v.at_least(c.risk, why),
            None => verdict(c.risk, why),
        };
        match &c.unclassifiable {
            Some(u) => v.cannot_judge(self.fill(u)),
            None => v,
        }
    }
}

/// Why configuration an option tagged config sets (`-c key=value`) cannot be
/// judged, if it cannot; `shown` is the command so far (`git clone`).
pub(super) fn config_problem(p: &Parsed, shown: &str) -> Option<String> {
    let config = p.options.iter().filter(|o| o.tag == Tag::Config);
    let problem = config.map(|o| match o.value.as_deref() {
        Some(kv) => key_problem(kv.split('=').next().unwrap_or(kv)),
        None => Some(format!("{shown} {} sets unknown configuration", o.name)),
    });
    problem.flatten().next()
}

/// The verdict of the first case of `sub` whose condition holds
/// (and its index, for the check that every case has an example).
pub(super) fn case(sub: &Sub, shown: &str, p: &Parsed, x: Extra) -> Option<(usize, Verdict)> {
    let j = Judged::new(p, x, shown);
    let (at, c) = sub.cases.iter().enumerate().find(|(_, c)| j.holds(c))?;
    Some((at, j.raise(None, c)))
}

/// Why a stash subcommand cannot be judged, if it cannot.
pub fn unknown_stash_sub(op: Op, p: &Parsed) -> Option<String> {
    let sub = p.stash_sub.as_deref()?;
    (op == Op::Stash && !stash_subs().contains(&sub))
        .then(|| format!("`git stash {sub}` is not a subcommand plangate knows"))
}

/// What a bash step adds to the rules' verdict: the `[[raise]]` rows (for a
/// subcommand the tool does not run), refused options judged as they are
/// outside the tool, unknown or ambiguous options, and words only known at
/// run time where an option could be.
pub fn finish(mut v: Verdict, shown: &str, p: &Parsed, raise: bool) -> Verdict {
    let j = Judged::new(p, Extra::default(), shown);
    let raised = (rules::raw().raise.iter()).filter(|c| raise && j.holds(c));
    let refused = p
        .refused
        .iter()
        .filter_map(|(_, name)| rules::refusal(name).1);
    for c in raised.chain(refused) {
        v = j.raise(Some(v), c);
    }
    if let Some(w) = p.runtime_options.first() {
        v = v.at_least(
            Risk::Dangerous,
            format!(
                "`{w}` is only known at run time and may be an option of git {shown} (`--force`, ...): write `git {shown} --end-of-options {w}` so git reads it as a revision, or `-- {w}` for a path (or use the `git` tool for a value known when the plan is written)"
            ),
        );
    }
    if let Some(why) = p.unreadable() {
        v = v.cannot_judge(format!(
            "{why} for git {shown}, so it cannot judge what it does"
        ));
    }
    v
}
