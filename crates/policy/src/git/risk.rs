//! The risk of a subcommand from its entry's `cases` in the rules file: the
//! first whose condition holds on the parsed arguments decides.

use super::config::key_problem;
use super::parse::Parsed;
use super::rules::{self, Atom, Case, Sub, Tag};
use super::{Op, Verdict, entry, stash_subs, verdict};
use crate::model::Risk;

/// The tool's `force` and `dry_run`, and whether paths are given outside
/// `args` (the tool's `files`, or a bash word read as a path).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extra {
    pub force: bool,
    pub dry_run: bool,
    pub has_files: bool,
}

/// Whether the request only reads: its rules call it safe, and not for a dry run.
pub fn read_only(op: Op, p: &Parsed) -> bool {
    !matches!(op, Op::Add | Op::Commit) && judge(op, p, Extra::default()).risk == Risk::Safe
}

/// The risk of the operation as its entry's cases say (refused, unknown and
/// run-time words are the caller's to add).
pub fn judge(op: Op, p: &Parsed, x: Extra) -> Verdict {
    let (sub, (t, shown)) = (p.stash_sub.as_deref(), entry(op, p.stash_sub.as_deref()));
    let changes = format!("git {shown} changes the working tree");
    let v = case(t, &shown, p, x).map_or_else(|| verdict(Risk::Moderate, changes), |(_, v)| v);
    let unknown = sub.filter(|s| !stash_subs().contains(s));
    v.cannot_judge(unknown.map(|s| format!("`git stash {s}` is not a subcommand plangate knows")))
}

/// The arguments (and the entry's name) as a case's condition and reasons see them.
pub(crate) struct Judged<'a>(pub &'a Parsed, pub Extra, pub &'a str);

impl Judged<'_> {
    /// What `{name}` shows in a reason when it holds: a fact, the entry, the
    /// first positional (`key`), or the full name of the first option with a tag.
    pub(crate) fn fact(&self, name: &str) -> Option<String> {
        let Judged(p, x, shown) = *self;
        let key = p.positionals.first().map_or("", String::as_str);
        let yes = |b: bool| b.then(String::new);
        let t = || push_target(p);
        match name {
            "name" => Some(shown.to_owned()),
            "key" => Some(key.to_owned()),
            "paths" => yes(!p.paths.is_empty()),
            "files" => yes(x.has_files),
            "plus-refspec" => yes(p.positionals.iter().skip(1).any(|s| s.starts_with('+'))),
            "push-forced" => yes(t().forced),
            "push-deletes" => yes(t().deletes),
            "push-unknown" => t().unknown,
            // The names taken as a remote's default branch when its own is unknown.
            "push-default" => (t().branches.into_iter()).find(|b| b == "main" || b == "master"),
            "push-branches" => Some(t().branches.join("`, `")).filter(|b| !b.is_empty()),
            "key-runtime" => yes(p.runtime_positionals.contains(&0)),
            "runtime-option" => p.runtime_options.first().cloned(),
            "unreadable" => p.unreadable(),
            "key-problem" => key_problem(key),
            "config-problem" => config_problem(p, &format!("git {shown}")),
            tag => Some(p.named(rules::named(tag)?)?.to_owned()),
        }
    }

    fn holds(&self, c: &Case) -> bool {
        let Judged(p, x, _) = self;
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
            Atom::Fact(f) => self.fact(f).is_some(),
        };
        c.when.is_empty() || (c.when.iter()).any(|all| all.iter().all(|(neg, a)| atom(a) != *neg))
    }

    fn fill(&self, text: &str) -> String {
        let mut parts = text.split('{');
        let mut out = parts.next().unwrap_or_default().to_owned();
        for part in parts {
            let (key, after) = part.split_once('}').unwrap_or((part, ""));
            out += &(self.fact(key).unwrap_or_default() + after);
        }
        out
    }

    /// `v` raised by `c` (to its risk with its reason when higher), and
    /// unclassifiable when `c` says so.
    fn raise(&self, v: Verdict, c: &Case) -> Verdict {
        let v = v.at_least(c.risk, self.fill(&c.why));
        v.cannot_judge(c.unclassifiable.as_ref().map(|u| self.fill(u)))
    }
}

/// Why configuration an option tagged config sets (`-c key=value`) cannot be
/// judged; `shown` is the command so far (`git clone`).
pub(super) fn config_problem(p: &Parsed, shown: &str) -> Option<String> {
    let mut config = p.options.iter().filter(|o| o.tag == Tag::Config);
    config.find_map(|o| match o.value.as_deref() {
        Some(kv) => key_problem(kv.split('=').next().unwrap_or(kv)),
        None => Some(format!("{shown} {} sets unknown configuration", o.name)),
    })
}

/// The verdict of the first case of `sub` whose condition holds, and its index.
pub(super) fn case(sub: &Sub, shown: &str, p: &Parsed, x: Extra) -> Option<(usize, Verdict)> {
    let j = Judged(p, x, shown);
    let (at, c) = sub.cases.iter().enumerate().find(|(_, c)| j.holds(c))?;
    Some((at, j.raise(verdict(c.risk, j.fill(&c.why)), c)))
}

/// What a bash step adds to the rules' verdict: the `[[raise]]` rows (unknown
/// options, words only known at run time where an option could be, ...),
/// and refused options as they are outside the tool.
pub fn finish(mut v: Verdict, shown: &str, p: &Parsed) -> Verdict {
    let j = Judged(p, Extra::default(), shown);
    let raised = (rules::raw().raise.iter()).filter(|c| j.holds(c));
    let refused = (p.refused.iter()).filter_map(|(_, name)| rules::refusal(name).1);
    for c in raised.chain(refused) {
        v = j.raise(v, c);
    }
    v
}

/// Where a push goes, as far as `args` say: the repository (a remote name or
/// URL), destination branches (`refs/heads/` stripped), why the destination
/// cannot be known before the run, a forced update, a deletion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushTarget {
    pub remote: Option<String>,
    pub branches: Vec<String>,
    pub unknown: Option<String>,
    pub forced: bool,
    pub deletes: bool,
}

/// Reads a push's repository and refspecs (the `push` entry's cases say how risky each is).
pub fn push_target(p: &Parsed) -> PushTarget {
    let mut t = PushTarget {
        remote: p.positionals.first().cloned(),
        ..PushTarget::default()
    };
    let refspecs = p.positionals.get(1..).unwrap_or(&[]);
    if refspecs.is_empty() && !p.has(Tag::Tags) {
        let why =
            "pushes without an explicit refspec, so it may update the remote's default branch";
        t.unknown = Some(why.to_owned());
    }
    for (k, spec) in refspecs.iter().enumerate() {
        if p.runtime_positionals.contains(&(k + 1)) {
            t.unknown = Some(format!(
                "refspec `{spec}` is only known at run time, so it may update the remote's default branch"
            ));
            continue;
        }
        let unforced = spec.strip_prefix('+');
        t.forced |= unforced.is_some();
        let spec = unforced.unwrap_or(spec);
        let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
        t.deletes |= src.is_empty() && !dst.is_empty();
        let bare = dst.strip_prefix("refs/heads/").unwrap_or(dst);
        let symbolic = matches!(bare, "HEAD" | "@") || bare.contains(['~', '^', '@']);
        let sha_like = bare.len() >= 7 && bare.chars().all(|c| c.is_ascii_hexdigit());
        if dst.is_empty() || dst.contains('*') {
            t.unknown = Some(format!(
                "refspec `{spec}` names no single destination branch"
            ));
        } else if dst.starts_with("refs/") && !dst.starts_with("refs/heads/") {
            // Tags and other namespaces are not branches.
        } else if symbolic || sha_like {
            t.unknown = Some(format!(
                "refspec `{spec}` does not name its destination branch (write `SRC:BRANCH`)"
            ));
        } else {
            t.branches.push(bare.to_owned());
        }
    }
    t
}
