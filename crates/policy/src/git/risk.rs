//! The risk of a subcommand from its entry's `cases` in the rules file: the
//! first whose condition holds on the parsed arguments decides. The tool and
//! the bash classifier both call [`judge`] for the tool's operations, so an
//! operation has the same risk by either route.

use super::config::key_problem;
use super::parse::Parsed;
use super::push::{DEFAULT_BRANCHES, PushTarget, push_target};
use super::rules::{self, Atom, Case, InBash, Sub, Tag};
use super::{Op, Verdict, stash_subs, tables, verdict};
use crate::model::Risk;

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
    let sub = (op == Op::Stash).then(|| p.stash_sub.as_deref().unwrap_or("push"));
    let shown = sub.map_or_else(|| op.as_str().to_owned(), |s| format!("stash {s}"));
    case(tables(op, sub), &shown, p, x).map_or_else(
        || {
            verdict(
                Risk::Moderate,
                format!("git {shown} changes the working tree"),
            )
        },
        |(_, v)| v,
    )
}

/// What conditions and reasons read: the parsed arguments, the tool's
/// parameters, where a push goes, the configuration a command sets.
struct Facts<'a> {
    p: &'a Parsed,
    x: Extra,
    shown: &'a str,
    push: PushTarget,
    default: Option<String>,
    /// Why the key `git config` sets (its first positional) cannot be judged.
    key_problem: Option<String>,
    /// Why configuration an option sets (`clone -c key=value`) cannot be judged.
    config_problem: Option<String>,
}

impl<'a> Facts<'a> {
    fn new(p: &'a Parsed, x: Extra, shown: &'a str) -> Self {
        let push = push_target(p);
        let default = push
            .branches
            .iter()
            .find(|b| DEFAULT_BRANCHES.contains(&b.as_str()));
        Facts {
            default: default.cloned(),
            key_problem: key_problem(p.positionals.first().map_or("", String::as_str)),
            config_problem: config_problem(p, &format!("git {shown}")),
            p,
            x,
            shown,
            push,
        }
    }

    fn holds(&self, a: &Atom) -> bool {
        let (p, t) = (self.p, &self.push);
        match a {
            Atom::Tag(Tag::Force) if self.x.force => true,
            Atom::Tag(Tag::DryRun) if self.x.dry_run => true,
            Atom::Tag(tag) => p.has(*tag),
            Atom::Name(n, None) => p.has_name(n),
            Atom::Name(n, Some(v)) => {
                (p.options.iter()).any(|o| o.name == *n && o.value.as_deref() == Some(v))
            }
            Atom::Args('<', n) => p.positionals.len() < *n,
            Atom::Args('>', n) => p.positionals.len() > *n,
            Atom::Args(_, n) => p.positionals.len() == *n,
            Atom::Fact("paths") => !p.paths.is_empty(),
            Atom::Fact("files") => self.x.has_files,
            Atom::Fact("plus-refspec") => p.positionals.iter().skip(1).any(|s| s.starts_with('+')),
            Atom::Fact("push-forced") => t.forced,
            Atom::Fact("push-deletes") => t.deletes,
            Atom::Fact("push-unknown") => t.unknown.is_some(),
            Atom::Fact("push-default") => self.default.is_some(),
            Atom::Fact("push-branches") => !t.branches.is_empty(),
            Atom::Fact("key-runtime") => p.runtime_positionals.contains(&0),
            Atom::Fact("key-problem") => self.key_problem.is_some(),
            Atom::Fact("config-problem") => self.config_problem.is_some(),
            Atom::Fact(_) => false, // the loader admits only `rules::FACTS`
        }
    }

    /// Whether the condition of `c` holds.
    fn when(&self, c: &Case) -> bool {
        let all = |all: &Vec<(bool, Atom)>| all.iter().all(|(neg, a)| self.holds(a) != *neg);
        c.when.is_empty() || c.when.iter().any(all)
    }

    /// `text` with its placeholders filled in.
    fn fill(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some((head, tail)) = rest.split_once('{') {
            let (key, after) = tail.split_once('}').unwrap_or((tail, ""));
            out.push_str(head);
            let or_none = |s: &Option<String>| s.clone().unwrap_or_default();
            out.push_str(&match key {
                "name" => self.shown.to_owned(),
                "push-unknown" => or_none(&self.push.unknown),
                "push-default" => or_none(&self.default),
                "push-branches" => self.push.branches.join("`, `"),
                "key" => self.p.positionals.first().cloned().unwrap_or_default(),
                "key-problem" => or_none(&self.key_problem),
                "config-problem" => or_none(&self.config_problem),
                tag => (rules::tag_named(tag).and_then(|t| self.p.named(t)))
                    .unwrap_or_default()
                    .to_owned(),
            });
            rest = after;
        }
        out + rest
    }

    /// Marks `v` unclassifiable when `c` says so.
    fn unclassifiable(&self, v: Verdict, c: &Case) -> Verdict {
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
    config
        .map(|o| match o.value.as_deref() {
            Some(kv) => key_problem(kv.split('=').next().unwrap_or(kv)),
            None => Some(format!("{shown} {} sets unknown configuration", o.name)),
        })
        .find(Option::is_some)
        .flatten()
}

/// The verdict of the first case of `sub` whose condition holds
/// (and its index, for the check that every case has an example).
pub(super) fn case(sub: &Sub, shown: &str, p: &Parsed, x: Extra) -> Option<(usize, Verdict)> {
    let f = Facts::new(p, x, shown);
    let (at, c) = sub.cases.iter().enumerate().find(|(_, c)| f.when(c))?;
    Some((at, f.unclassifiable(verdict(c.risk, f.fill(&c.why)), c)))
}

/// Raises `v` by every `[[raise]]` row of the rules whose condition holds
/// (for the subcommands the tool does not run).
pub(super) fn raise(v: Verdict, shown: &str, p: &Parsed) -> Verdict {
    let f = Facts::new(p, Extra::default(), shown);
    let rows = rules::raw().raise.iter().filter(|c| f.when(c));
    rows.fold(v, |v, c| {
        f.unclassifiable(v.at_least(c.risk, f.fill(&c.why)), c)
    })
}

/// Why a stash subcommand cannot be judged, if it cannot.
pub fn unknown_stash_sub(op: Op, p: &Parsed) -> Option<String> {
    let sub = p.stash_sub.as_deref()?;
    (op == Op::Stash && !stash_subs().contains(&sub))
        .then(|| format!("`git stash {sub}` is not a subcommand plangate knows"))
}

/// What a bash step adds to the rules' verdict: refused options judged as
/// they are outside the tool, unknown or ambiguous options, and words only
/// known at run time where an option could be.
pub fn finish(mut v: Verdict, shown: &str, p: &Parsed) -> Verdict {
    for (_, name) in &p.refused {
        let (why, in_bash) = rules::refusal(name);
        v = match in_bash {
            InBash::Plain => v,
            InBash::RunsConfigured => v.at_least(Risk::Moderate, format!("git {shown} {why}")),
            InBash::WritesFile => v.at_least(
                Risk::Dangerous,
                format!("git {shown} writes a file named on the command line"),
            ),
            InBash::RunsProgram => {
                v.cannot_judge(format!("git {shown} {why}, which plangate cannot judge"))
            }
        };
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
