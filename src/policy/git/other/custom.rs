//! Subcommands whose risk depends on more than a flag or two: `tag`
//! (listing or creating), `restore` (index or working tree), `config`
//! (reading, or setting a key), `fetch` (`+` refspecs), `gc --prune=now`,
//! `symbolic-ref`, `apply --check` and `reflog expire`.

use super::super::options::LOG_OPTS;
use super::super::options::{
    Refusal as R, Refused, Spec,
    Tag::{self, Delete, DryRun, Force, OutsideRepo, Plain as P, RunsProgram},
    Takes::{Attached as A, LastArg as L, No as N, Value as V},
};
use super::super::parse::Parsed;
use super::super::{Verdict, verdict};
use super::{Rule, Sub};
use crate::policy::Risk;

const TAG: &[Spec] = &[
    ("-a", N, P),
    ("--annotate", N, P),
    ("-m", V, P),
    ("--message", V, P),
    ("-F", V, P),
    ("--file", V, P),
    ("-f", N, Force),
    ("--force", N, Force),
    ("-d", N, Delete),
    ("--delete", N, Delete),
    ("-l", N, Tag::BranchList),
    ("--list", N, Tag::BranchList),
    ("-n", A, Tag::BranchList),
    ("--contains", L, Tag::BranchList),
    ("--no-contains", L, Tag::BranchList),
    ("--merged", L, Tag::BranchList),
    ("--no-merged", L, Tag::BranchList),
    ("--points-at", V, Tag::BranchList),
    ("--sort", V, Tag::BranchList),
    ("--format", V, Tag::BranchList),
    ("--column", A, Tag::BranchList),
    ("--no-column", N, Tag::BranchList),
    ("-i", N, Tag::BranchList),
    ("--ignore-case", N, Tag::BranchList),
    ("--omit-empty", N, Tag::BranchList),
    ("--cleanup", V, P),
    ("--create-reflog", N, P),
    ("--no-sign", N, P),
    ("-e", N, P),
    ("--edit", N, P),
    ("--trailer", V, P),
];
const TAG_REFUSED: &[Refused] = &[
    ("-s", N, R::Gpg),
    ("--sign", N, R::Gpg),
    ("-u", V, R::Gpg),
    ("--local-user", V, R::Gpg),
    ("-v", N, R::Gpg),
    ("--verify", N, R::Gpg),
];

fn tag(p: &Parsed) -> Verdict {
    if p.has(Tag::Delete) {
        verdict(Risk::Moderate, "git tag -d deletes a local tag")
    } else if p.positionals.is_empty() || p.has(Tag::BranchList) {
        verdict(Risk::Safe, "git tag only lists tags")
    } else {
        verdict(Risk::Moderate, "git tag creates a local tag")
    }
}

const RESTORE: &[Spec] = &[
    ("-s", V, P),
    ("--source", V, P),
    ("-S", N, P),
    ("--staged", N, P),
    ("-W", N, P),
    ("--worktree", N, P),
    ("--ours", N, P),
    ("--theirs", N, P),
    ("-m", N, P),
    ("--merge", N, P),
    ("--conflict", V, P),
    ("--ignore-unmerged", N, P),
    ("--overlay", N, P),
    ("--no-overlay", N, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("--progress", N, P),
    ("--no-progress", N, P),
    ("--recurse-submodules", N, P),
    ("--ignore-skip-worktree-bits", N, P),
    ("--pathspec-from-file", V, P),
    ("--pathspec-file-nul", N, P),
];
const PATCH: &[Refused] = &[("-p", N, R::Interactive), ("--patch", N, R::Interactive)];

fn restore(p: &Parsed) -> Verdict {
    let staged = p.has_name("-S") || p.has_name("--staged");
    let worktree = p.has_name("-W") || p.has_name("--worktree");
    if staged && !worktree {
        verdict(
            Risk::Moderate,
            "git restore --staged unstages changes (the working tree is kept)",
        )
    } else {
        verdict(
            Risk::Dangerous,
            "git restore overwrites working-tree files, discarding their uncommitted changes",
        )
    }
}

const CONFIG: &[Spec] = &[
    ("--local", N, P),
    ("--worktree", N, P),
    ("--global", N, OutsideRepo),
    ("--system", N, OutsideRepo),
    ("-f", V, OutsideRepo),
    ("--file", V, OutsideRepo),
    ("--blob", V, P),
    ("-l", N, DryRun),
    ("--list", N, DryRun),
    ("--get", N, DryRun),
    ("--get-all", N, DryRun),
    ("--get-regexp", N, DryRun),
    ("--get-urlmatch", N, DryRun),
    ("--get-color", N, DryRun),
    ("--get-colorbool", N, DryRun),
    ("--show-origin", N, P),
    ("--show-scope", N, P),
    ("--name-only", N, P),
    ("-z", N, P),
    ("--null", N, P),
    ("--type", V, P),
    ("--bool", N, P),
    ("--int", N, P),
    ("--path", N, P),
    ("--default", V, P),
    ("--includes", N, P),
    ("--no-includes", N, P),
    ("--all", N, P),
    ("--value", V, P),
    ("--fixed-value", N, P),
    ("--replace-all", N, P),
    ("--add", N, P),
    ("--append", N, P),
    ("--unset", N, Delete),
    ("--unset-all", N, Delete),
    ("--remove-section", N, Delete),
    ("--rename-section", N, Delete),
];
const CONFIG_REFUSED: &[Refused] = &[("-e", N, R::Editor), ("--edit", N, R::Editor)];

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
    if let Some(why) = super::super::config::judge_key(key) {
        return verdict(Risk::Moderate, "git config sets configuration").cannot_judge(why);
    }
    if p.has(OutsideRepo) {
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

const FETCH: &[Spec] = &[
    ("--all", N, P),
    ("-a", N, P),
    ("--append", N, P),
    ("--atomic", N, P),
    ("--depth", V, P),
    ("--deepen", V, P),
    ("--shallow-since", V, P),
    ("--shallow-exclude", V, P),
    ("--unshallow", N, P),
    ("--update-shallow", N, P),
    ("--negotiation-tip", V, P),
    ("--negotiate-only", N, P),
    ("--dry-run", N, P),
    ("--porcelain", N, P),
    ("--write-fetch-head", N, P),
    ("--no-write-fetch-head", N, P),
    ("-f", N, Force),
    ("--force", N, Force),
    ("-k", N, P),
    ("--keep", N, P),
    ("--multiple", N, P),
    ("--auto-maintenance", N, P),
    ("--no-auto-maintenance", N, P),
    ("--auto-gc", N, P),
    ("--no-auto-gc", N, P),
    ("--write-commit-graph", N, P),
    ("--no-write-commit-graph", N, P),
    ("--prefetch", N, P),
    ("-p", N, P),
    ("--prune", N, P),
    ("-P", N, P),
    ("--prune-tags", N, P),
    ("-n", N, P),
    ("--no-tags", N, P),
    ("-t", N, P),
    ("--tags", N, P),
    ("--refetch", N, P),
    ("--refmap", V, P),
    ("--recurse-submodules", A, P),
    ("--no-recurse-submodules", N, P),
    ("-j", V, P),
    ("--jobs", V, P),
    ("--set-upstream", N, P),
    ("--progress", N, P),
    ("--no-progress", N, P),
    ("-o", V, P),
    ("--server-option", V, P),
    ("--show-forced-updates", N, P),
    ("--no-show-forced-updates", N, P),
    ("-4", N, P),
    ("--ipv4", N, P),
    ("-6", N, P),
    ("--ipv6", N, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("-v", N, P),
    ("--verbose", N, P),
    ("--filter", V, P),
    ("-u", N, P),
    ("--update-head-ok", N, P),
    ("--upload-pack", V, RunsProgram),
];

fn fetch(p: &Parsed) -> Verdict {
    if p.positionals.iter().skip(1).any(|s| s.starts_with('+')) {
        verdict(
            Risk::Dangerous,
            "git fetch with a `+` refspec overwrites local refs that do not fast-forward",
        )
    } else {
        verdict(Risk::Moderate, "git fetch fetches over the network")
    }
}

const GC: &[Spec] = &[
    ("--aggressive", N, P),
    ("--auto", N, P),
    ("--detach", N, P),
    ("--no-detach", N, P),
    ("--cruft", N, P),
    ("--no-cruft", N, P),
    ("--max-cruft-size", V, P),
    ("--prune", A, P),
    ("--no-prune", N, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("--force", N, P),
    ("--keep-largest-pack", N, P),
];

fn gc(p: &Parsed) -> Verdict {
    let now = p
        .options
        .iter()
        .any(|o| o.name == "--prune" && matches!(o.value.as_deref(), Some("now" | "all")));
    if now {
        verdict(
            Risk::Dangerous,
            "git gc --prune=now deletes unreachable commits at once, which a reset or rebase left recoverable",
        )
    } else {
        verdict(Risk::Moderate, "git gc repacks the repository")
    }
}

const SYMBOLIC_REF: &[Spec] = &[
    ("-q", N, P),
    ("--quiet", N, P),
    ("--short", N, P),
    ("--recurse", N, P),
    ("--no-recurse", N, P),
    ("-m", V, P),
    ("-d", N, Delete),
    ("--delete", N, Delete),
];

fn symbolic_ref(p: &Parsed) -> Verdict {
    if p.positionals.len() < 2 && !p.has(Tag::Delete) {
        verdict(Risk::Safe, "git symbolic-ref only reads a ref")
    } else {
        verdict(Risk::Moderate, "git symbolic-ref changes a symbolic ref")
    }
}

const APPLY: &[Spec] = &[
    ("--stat", N, DryRun),
    ("--numstat", N, DryRun),
    ("--summary", N, DryRun),
    ("--check", N, DryRun),
    ("--apply", N, P),
    ("--index", N, P),
    ("--cached", N, P),
    ("--intent-to-add", N, P),
    ("-N", N, P),
    ("-3", N, P),
    ("--3way", N, P),
    ("--ours", N, P),
    ("--theirs", N, P),
    ("--union", N, P),
    ("-R", N, P),
    ("--reverse", N, P),
    ("--reject", N, P),
    ("-z", N, P),
    ("-p", V, P),
    ("-C", V, P),
    ("--unidiff-zero", N, P),
    ("--no-add", N, P),
    ("--allow-empty", N, P),
    ("--exclude", V, P),
    ("--include", V, P),
    ("--ignore-space-change", N, P),
    ("--ignore-whitespace", N, P),
    ("--whitespace", V, P),
    ("--inaccurate-eof", N, P),
    ("-v", N, P),
    ("--verbose", N, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("--recount", N, P),
    ("--directory", V, P),
    ("--unsafe-paths", N, OutsideRepo),
];

fn apply(p: &Parsed) -> Verdict {
    if p.has(DryRun) && !p.has_name("--apply") {
        verdict(Risk::Safe, "git apply --check/--stat only reads the patch")
    } else if p.has(OutsideRepo) {
        verdict(
            Risk::Dangerous,
            "git apply --unsafe-paths writes files outside the repository",
        )
    } else {
        verdict(Risk::Moderate, "git apply changes working-tree files")
    }
}

const REFLOG_EXPIRE: &[Spec] = &[
    ("--expire", V, P),
    ("--expire-unreachable", V, P),
    ("--rewrite", N, P),
    ("--updateref", N, P),
    ("--stale-fix", N, P),
    ("-n", N, DryRun),
    ("--dry-run", N, DryRun),
    ("--verbose", N, P),
    ("--all", N, P),
    ("--single-worktree", N, P),
];

fn reflog_expire(p: &Parsed) -> Verdict {
    if p.has(DryRun) {
        verdict(Risk::Safe, "git reflog --dry-run changes nothing")
    } else {
        verdict(
            Risk::Dangerous,
            "git reflog expire/delete removes the entries that make lost commits recoverable",
        )
    }
}

const fn custom(
    name: &'static str,
    known: &'static [&'static [Spec]],
    refused: &'static [&'static [Refused]],
    f: fn(&Parsed) -> Verdict,
) -> Sub {
    Sub {
        name,
        known,
        refused,
        abbrev: true,
        rule: Rule::Custom(f),
    }
}

/// The entries with rules of their own.
pub(super) const SUBS: &[Sub] = &[
    custom("tag", &[TAG], &[TAG_REFUSED], tag),
    custom("restore", &[RESTORE], &[PATCH], restore),
    custom("config", &[CONFIG], &[CONFIG_REFUSED], config),
    custom("fetch", &[FETCH], &[], fetch),
    custom("gc", &[GC], &[], gc),
    custom("symbolic-ref", &[SYMBOLIC_REF], &[], symbolic_ref),
    custom("apply", &[APPLY], &[], apply),
    custom("reflog expire", &[REFLOG_EXPIRE], &[], reflog_expire),
    custom("reflog delete", &[REFLOG_EXPIRE], &[], reflog_expire),
    Sub {
        name: "reflog",
        known: &[LOG_OPTS],
        refused: &[],
        abbrev: false,
        rule: Rule::Reads,
    },
    Sub {
        name: "reflog show",
        known: &[LOG_OPTS],
        refused: &[],
        abbrev: false,
        rule: Rule::Reads,
    },
    Sub {
        name: "reflog list",
        known: &[],
        refused: &[],
        abbrev: false,
        rule: Rule::Reads,
    },
    Sub {
        name: "reflog exists",
        known: &[],
        refused: &[],
        abbrev: false,
        rule: Rule::Reads,
    },
];
