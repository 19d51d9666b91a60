//! Plan errors of a git step, found at load time: options the tool refuses
//! (they make git run a program, read or write files plangate does not
//! check, or wait for a human), and parameters the operation cannot honour
//! (`force` on a read, `dry_run` where git has none, `files` or
//! `commit_message` where they mean nothing).

use crate::policy::git::{Parsed, Request, Tag, parse, risk::read_only, stash_subs};
use crate::tools::params::git::GitOperation;

/// Where a problem of the parameters is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Where {
    /// `args[i]`.
    Arg(usize),
    /// `force`.
    Force,
    /// `dry_run`.
    DryRun,
    /// `files`.
    Files,
    /// `commit_message`.
    CommitMessage,
}

/// A plan error in a git step's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// Which parameter.
    pub at: Where,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub help: String,
}

fn problem(at: Where, message: String, help: impl Into<String>) -> Problem {
    Problem {
        at,
        message,
        help: help.into(),
    }
}

/// Plan errors of a git step: refused options, and parameters the operation cannot honour.
pub(crate) fn problems(r: &Request<'_>) -> Vec<Problem> {
    let p = parse(r.op, r.args);
    let op = r.op.as_str();
    let mut out: Vec<Problem> = p
        .refused
        .iter()
        .map(|(i, why)| {
            problem(
                Where::Arg(*i),
                format!(
                    "`args` entry `{}` of git {op} {}",
                    r.args[*i].replace('\0', "\\0"),
                    crate::policy::git::rules::refusal(why).0
                ),
                "plangate never lets git run programs, read files or wait for input on its behalf; remove it",
            )
        })
        .collect();
    if r.op == GitOperation::Stash
        && let Some(sub) = p.stash_sub.as_deref()
        && !stash_subs().contains(&sub)
    {
        out.push(problem(
            Where::Arg(0),
            format!("`{sub}` is not a git stash subcommand plangate runs"),
            format!("use one of {}", stash_subs().join(", ")),
        ));
    }
    let reads = read_only(r.op, &p);
    out.extend(force_problem(r, &p, reads));
    if r.dry_run
        && !reads
        && matches!(
            r.op,
            GitOperation::Branch
                | GitOperation::Checkout
                | GitOperation::Reset
                | GitOperation::Stash
        )
    {
        out.push(problem(
            Where::DryRun,
            format!("git {op} has no dry-run mode, so `dry_run` cannot be honoured"),
            "remove `dry_run` (git has one for add, commit, push and pull)",
        ));
    }
    out.extend(files_problem(r, &p));
    out.extend(message_problem(r, &p));
    out
}

fn force_problem(r: &Request<'_>, p: &Parsed, reads: bool) -> Option<Problem> {
    use GitOperation as G;
    if !r.force {
        return None;
    }
    let op = r.op.as_str();
    let meaningless = match r.op {
        G::Status | G::Diff | G::Log | G::Commit | G::Stash => true,
        G::Branch => reads,
        _ => false,
    };
    if meaningless {
        return Some(problem(
            Where::Force,
            format!("`force` has no meaning for git {op}"),
            "remove `force`; it applies to push, pull, add, branch, checkout and reset",
        ));
    }
    let mode = p
        .named(Tag::ResetMode)
        .or_else(|| p.named(Tag::ResetMerge))
        .filter(|_| r.op == G::Reset)?;
    Some(problem(
        Where::Force,
        format!("`force` on reset means `--hard`, which contradicts `{mode}`"),
        "remove `force` or the mode in `args`",
    ))
}

fn files_problem(r: &Request<'_>, p: &Parsed) -> Option<Problem> {
    use GitOperation as G;
    let takes = match r.op {
        G::Push | G::Pull | G::Branch => false,
        G::Stash => matches!(p.stash_sub.as_deref(), None | Some("push")),
        _ => true,
    };
    (r.has_files && !takes).then(|| {
        problem(
            Where::Files,
            format!("`files` has no meaning for git {}", r.op.as_str()),
            "remove `files`; it applies to status, diff, log, add, commit, checkout, reset and stash push",
        )
    })
}

fn message_problem(r: &Request<'_>, p: &Parsed) -> Option<Problem> {
    use GitOperation as G;
    if !r.has_message {
        return None;
    }
    let stash_push = r.op == G::Stash && matches!(p.stash_sub.as_deref(), None | Some("push"));
    if r.op != G::Commit && !stash_push {
        return Some(problem(
            Where::CommitMessage,
            format!("`commit_message` has no meaning for git {}", r.op.as_str()),
            "remove it; it is the message of a commit (or of a stash push)",
        ));
    }
    (r.op == G::Stash && p.has(Tag::Message)).then(|| {
        problem(
            Where::CommitMessage,
            "the stash message is set twice (`commit_message` and `-m` in `args`)".to_owned(),
            "keep one of them",
        )
    })
}
