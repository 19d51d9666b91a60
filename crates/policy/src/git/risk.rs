//! The risk of a subcommand from its entry's `cases` in the rules file: the
//! first whose condition holds on the parsed arguments decides. The tool and
//! the bash classifier both call [`judge`] for the tool's operations, so an
//! operation has the same risk by either route.

use super::parse::Parsed;
use super::push::{DEFAULT_BRANCHES, push_target};
use super::rules::{self, Atom, InBash, Sub, Tag};
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

/// The verdict of the first case of `sub` whose condition holds.
/// (and its index, for the check that every case has an example).
pub(super) fn case(sub: &Sub, shown: &str, p: &Parsed, x: Extra) -> Option<(usize, Verdict)> {
    let t = push_target(p);
    let default = t
        .branches
        .iter()
        .find(|b| DEFAULT_BRANCHES.contains(&b.as_str()));
    let holds = |a: &Atom| match a {
        Atom::Tag(Tag::Force) if x.force => true,
        Atom::Tag(Tag::DryRun) if x.dry_run => true,
        Atom::Tag(tag) => p.has(*tag),
        Atom::Name(n, None) => p.has_name(n),
        Atom::Name(n, Some(v)) => p
            .options
            .iter()
            .any(|o| o.name == *n && o.value.as_deref() == Some(v)),
        Atom::Args('<', n) => p.positionals.len() < *n,
        Atom::Args('>', n) => p.positionals.len() > *n,
        Atom::Args(_, n) => p.positionals.len() == *n,
        Atom::Fact("paths") => !p.paths.is_empty(),
        Atom::Fact("files") => x.has_files,
        Atom::Fact("plus-refspec") => p.positionals.iter().skip(1).any(|s| s.starts_with('+')),
        Atom::Fact("push-forced") => t.forced,
        Atom::Fact("push-deletes") => t.deletes,
        Atom::Fact("push-unknown") => t.unknown.is_some(),
        Atom::Fact("push-default") => default.is_some(),
        Atom::Fact("push-branches") => !t.branches.is_empty(),
        Atom::Fact(_) => false, // the loader admits only `rules::FACTS`
    };
    let (at, c) = sub.cases.iter().enumerate().find(|(_, c)| {
        c.when.is_empty()
            || c.when
                .iter()
                .any(|all| all.iter().all(|(neg, a)| holds(a) != *neg))
    })?;
    let fill = |text: &str| {
        let mut out = String::new();
        let mut rest = text;
        while let Some((head, tail)) = rest.split_once('{') {
            let (key, after) = tail.split_once('}').unwrap_or((tail, ""));
            out.push_str(head);
            out.push_str(&match key {
                "name" => shown.to_owned(),
                "push-unknown" => t.unknown.clone().unwrap_or_default(),
                "push-default" => default.cloned().unwrap_or_default(),
                "push-branches" => t.branches.join("`, `"),
                tag => rules::tag_named(tag)
                    .and_then(|t| p.named(t))
                    .unwrap_or_default()
                    .to_owned(),
            });
            rest = after;
        }
        out + rest
    };
    let mut v = verdict(c.risk, fill(&c.why));
    if let Some(u) = &c.unclassifiable {
        v = v.cannot_judge(fill(u));
    }
    Some((at, v))
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
