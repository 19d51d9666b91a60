//! The risk of the subcommands the `git` tool runs (status, diff, log, add,
//! commit, push, pull, branch, checkout, reset, stash), read from the parsed
//! arguments. The tool and the bash classifier both call [`judge`], so an
//! operation has the same risk by either route.

use super::options::{InBash, Tag, stash_subs};
use super::parse::Parsed;
use super::push::classify_push;
use super::{Op, Verdict, verdict};
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

/// Whether the request only reads (status, diff, log, branch listing, stash list/show).
pub fn read_only(op: Op, p: &Parsed) -> bool {
    match op {
        Op::Status | Op::Diff | Op::Log => true,
        Op::Branch => branch_lists(p),
        Op::Stash => matches!(p.stash_sub.as_deref(), Some("list" | "show")),
        _ => false,
    }
}

/// Whether `git branch` with these arguments only lists.
pub fn branch_lists(p: &Parsed) -> bool {
    let modes = [
        Tag::BranchDelete,
        Tag::BranchForceDelete,
        Tag::BranchMove,
        Tag::BranchForceMove,
        Tag::BranchUpstream,
        Tag::Force,
    ];
    if modes.iter().any(|t| p.has(*t)) {
        return false;
    }
    // `git branch NAME` creates; with `--list` (or a listing filter) names are patterns.
    p.positionals.is_empty() || p.has(Tag::BranchList)
}

/// The risk of the operation as its options and positionals say (refused,
/// unknown and run-time words are the caller's to add).
pub fn judge(op: Op, p: &Parsed, x: Extra) -> Verdict {
    let dry = x.dry_run || p.has(Tag::DryRun);
    let force = x.force || p.has(Tag::Force);
    match op {
        Op::Status | Op::Diff | Op::Log => verdict(
            Risk::Safe,
            format!("git {} only reads the repository", op.as_str()),
        ),
        Op::Add => add(dry, force),
        Op::Commit if dry => verdict(Risk::Safe, "git commit --dry-run changes nothing"),
        Op::Commit => verdict(
            Risk::Moderate,
            "git commit adds a commit to the current branch",
        ),
        Op::Push => classify_push(p, dry, force),
        Op::Pull => pull(p, dry, force),
        Op::Branch => branch(p, force),
        Op::Checkout => checkout(p, force, x.has_files),
        Op::Reset => reset(p, force),
        Op::Stash => stash(p),
    }
}

fn add(dry: bool, force: bool) -> Verdict {
    if dry {
        verdict(Risk::Safe, "git add --dry-run changes nothing")
    } else if force {
        verdict(
            Risk::Dangerous,
            "git add --force stages ignored files, which often hold secrets or build output",
        )
    } else {
        verdict(Risk::Moderate, "git add changes the index")
    }
}

fn pull(p: &Parsed, dry: bool, force: bool) -> Verdict {
    let plus = p.positionals.iter().skip(1).any(|s| s.starts_with('+'));
    if force || plus {
        verdict(
            Risk::Dangerous,
            "git pull --force (or a `+` refspec) overwrites local refs that do not fast-forward",
        )
    } else if dry {
        verdict(
            Risk::Moderate,
            "git pull --dry-run contacts the remote but changes nothing",
        )
    } else {
        verdict(
            Risk::Moderate,
            "git pull fetches over the network and updates the current branch",
        )
    }
}

fn branch(p: &Parsed, force: bool) -> Verdict {
    if branch_lists(p) {
        verdict(Risk::Safe, "git branch only lists branches")
    } else if p.has(Tag::BranchForceDelete) || (p.has(Tag::BranchDelete) && force) {
        verdict(
            Risk::Dangerous,
            "git branch -D deletes a branch even when it is not merged",
        )
    } else if p.has(Tag::BranchForceMove) || (p.has(Tag::BranchMove) && force) {
        verdict(
            Risk::Dangerous,
            "git branch -M/-C overwrites an existing branch",
        )
    } else if force {
        verdict(
            Risk::Dangerous,
            "git branch --force moves an existing branch, dropping its commits from it",
        )
    } else if p.has(Tag::BranchDelete) {
        verdict(Risk::Moderate, "git branch -d deletes a merged branch")
    } else {
        verdict(
            Risk::Moderate,
            "git branch changes the repository's branches",
        )
    }
}

fn checkout(p: &Parsed, force: bool, has_files: bool) -> Verdict {
    let has_paths = p.positionals.len() > 1 || !p.paths.is_empty() || has_files;
    if has_paths {
        verdict(
            Risk::Dangerous,
            "git checkout with paths overwrites working-tree files, discarding their uncommitted changes",
        )
    } else if force {
        verdict(
            Risk::Dangerous,
            "git checkout --force discards uncommitted changes",
        )
    } else if p.has(Tag::ResetBranch) {
        verdict(Risk::Dangerous, "git checkout -B resets an existing branch")
    } else {
        verdict(
            Risk::Moderate,
            "git checkout switches branches (it refuses to lose uncommitted changes)",
        )
    }
}

fn reset(p: &Parsed, force: bool) -> Verdict {
    if force || p.has(Tag::Hard) {
        verdict(
            Risk::Dangerous,
            "git reset --hard discards uncommitted changes",
        )
    } else if p.has(Tag::ResetMerge) {
        verdict(
            Risk::Dangerous,
            "git reset --merge can discard staged changes",
        )
    } else {
        verdict(
            Risk::Moderate,
            "git reset moves the branch or unstages changes (the working tree is kept)",
        )
    }
}

fn stash(p: &Parsed) -> Verdict {
    match p.stash_sub.as_deref().unwrap_or("push") {
        "list" | "show" => verdict(Risk::Safe, "git stash list/show only reads"),
        "drop" | "clear" => verdict(
            Risk::Dangerous,
            "git stash drop/clear deletes stashed changes for good",
        ),
        sub => verdict(
            Risk::Moderate,
            format!("git stash {sub} changes the working tree"),
        ),
    }
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
    for (_, why) in &p.refused {
        v = match why.in_bash() {
            InBash::Plain => v,
            InBash::RunsConfigured => {
                v.at_least(Risk::Moderate, format!("git {shown} {}", why.why()))
            }
            InBash::WritesFile => v.at_least(
                Risk::Dangerous,
                format!("git {shown} writes a file named on the command line"),
            ),
            InBash::RunsProgram => v.cannot_judge(format!(
                "git {shown} {}, which plangate cannot judge",
                why.why()
            )),
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
