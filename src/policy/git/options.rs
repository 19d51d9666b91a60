//! The option tables of the subcommands the `git` tool runs: for each, the
//! options plangate understands (how each takes its value, what it means to
//! the risk rules) and the options the tool refuses (with why).
//!
//! Names are written in full; [`super::abbrev`] resolves the unambiguous
//! prefixes git accepts. An option missing here is unknown: the step or
//! command is unclassifiable.

use super::Op;

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    /// A flag.
    No,
    /// A required value: attached (`--x=v`, `-xV`) or the next argument.
    Value,
    /// An optional value, attached only (`--x=v`, `-xV`).
    Attached,
    /// An optional value: attached, or the next argument when there is one
    /// (`git branch --contains [<commit>]`).
    LastArg,
}

/// What an option means to the risk rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    /// Nothing special.
    Plain,
    /// Overrides a safety check of git (`--force` and friends).
    Force,
    /// Changes nothing (`--dry-run`).
    DryRun,
    /// Deletes refs (`push --delete`, `--prune`, `tag -d`).
    Delete,
    /// Pushes every ref or branch (`--all`, `--mirror`).
    AllRefs,
    /// `push --tags`.
    Tags,
    /// `add -A`/`-u`: a mode that needs no pathspec.
    AddAll,
    /// `pull --ff-only`/`--rebase`/...: the user chose how to integrate.
    Integrate,
    /// `reset --hard`.
    Hard,
    /// `reset --merge`.
    ResetMerge,
    /// `reset --soft`/`--mixed`/`--keep`.
    ResetMode,
    /// `branch -d`.
    BranchDelete,
    /// `branch -D`.
    BranchForceDelete,
    /// `branch -m`/`-c`.
    BranchMove,
    /// `branch -M`/`-C`.
    BranchForceMove,
    /// `branch --list` and the listing filters.
    BranchList,
    /// `branch -u`/`--unset-upstream`.
    BranchUpstream,
    /// `checkout -b`/`--orphan`.
    NewBranch,
    /// `checkout -B`.
    ResetBranch,
    /// `stash push -m`.
    Message,
    /// Names a program git runs, on this machine or the remote
    /// (`rebase --exec`, `fetch --upload-pack`): only allowed in the tables of
    /// subcommands the tool does not run.
    RunsProgram,
    /// Writes a file named by its value (`format-patch -o`).
    WritesPath,
    /// Reads or changes configuration outside the repository (`config --global`).
    OutsideRepo,
    /// Discards work in the working tree (`switch --discard-changes`).
    Discards,
    /// Sets configuration (`clone -c key=value`): judged by [`super::config`].
    Config,
}

/// A known option: (full name, how it takes a value, meaning).
pub(crate) type Spec = (&'static str, Takes, Tag);
/// A refused option of the tool: (full name, how it takes a value, why).
pub(crate) type Refused = (&'static str, Takes, Refusal);

/// Why the `git` tool refuses an option (a plan error); the bash classifier
/// judges the same option through [`Refusal::in_bash`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Signs or verifies with gpg.
    Gpg,
    /// Asks questions on a terminal.
    Interactive,
    /// Runs an external diff program.
    ExtDiff,
    /// Runs textconv filters.
    Textconv,
    /// Writes a file (`--output`).
    WritesFile,
    /// Compares files outside the repository.
    NoIndex,
    /// Reads an order file.
    OrderFile,
    /// `commit -m`: the tool takes `commit_message`.
    Message,
    /// `commit -F`.
    MessageFile,
    /// `commit -t`.
    TemplateFile,
    /// Names a program run for the remote side.
    RemoteProgram,
    /// Opens an editor.
    Editor,
    /// Opens files in a pager program named on the command line (`grep -O`).
    Pager,
    /// An argument holds a NUL byte.
    Nul,
}

/// What a refused option of the tool amounts to in a bash step, where git
/// runs as written and the tool's restrictions do not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InBash {
    /// Nothing more than the subcommand's own risk (reads a file, sets the message).
    Plain,
    /// Runs programs the repository's configuration names (like its hooks): at least moderate.
    RunsConfigured,
    /// Runs a program written on the command line: unclassifiable.
    RunsProgram,
    /// Writes a file named on the command line: dangerous.
    WritesFile,
}

impl Refusal {
    /// Why the tool refuses it.
    pub(crate) fn why(self) -> &'static str {
        match self {
            Refusal::Gpg => "makes git run gpg",
            Refusal::Interactive => {
                "waits for answers on a terminal, and a CI run has nobody to give them"
            }
            Refusal::ExtDiff => "makes git run an external diff program",
            Refusal::Textconv => "makes git run textconv filter programs",
            Refusal::WritesFile => "writes a file plangate does not check",
            Refusal::NoIndex => {
                "compares files outside the repository, which plangate does not check"
            }
            Refusal::OrderFile => "reads an order file plangate does not check",
            Refusal::Message => "sets the message: use `commit_message` instead",
            Refusal::MessageFile => {
                "reads the message from a file plangate does not check: use `commit_message`"
            }
            Refusal::TemplateFile => {
                "reads a template file plangate does not check: use `commit_message`"
            }
            Refusal::RemoteProgram => "names a program git runs for the remote side",
            Refusal::Editor => "opens an editor",
            Refusal::Pager => "names a program git runs",
            Refusal::Nul => "contains a NUL byte",
        }
    }

    /// What it amounts to in a bash step.
    pub(crate) fn in_bash(self) -> InBash {
        match self {
            Refusal::Gpg | Refusal::ExtDiff | Refusal::Textconv | Refusal::Editor => {
                InBash::RunsConfigured
            }
            Refusal::RemoteProgram | Refusal::Pager => InBash::RunsProgram,
            Refusal::WritesFile => InBash::WritesFile,
            Refusal::Interactive
            | Refusal::NoIndex
            | Refusal::OrderFile
            | Refusal::Message
            | Refusal::MessageFile
            | Refusal::TemplateFile
            | Refusal::Nul => InBash::Plain,
        }
    }
}

use Refusal as R;
use Tag::Plain as P;
use Takes::{Attached as A, LastArg as L, No as N, Value as V};

pub(super) const DIFF_OPTS: &[Spec] = &[
    ("-p", N, P),
    ("-u", N, P),
    ("--patch", N, P),
    ("--no-patch", N, P),
    ("-s", N, P),
    ("-U", A, P),
    ("--unified", V, P),
    ("--raw", N, P),
    ("--patch-with-raw", N, P),
    ("--patch-with-stat", N, P),
    ("--stat", A, P),
    ("--compact-summary", N, P),
    ("--numstat", N, P),
    ("--shortstat", N, P),
    ("--dirstat", A, P),
    ("-X", A, P),
    ("--summary", N, P),
    ("--name-only", N, P),
    ("--name-status", N, P),
    ("--submodule", A, P),
    ("--no-color", N, P),
    ("--word-diff", A, P),
    ("--word-diff-regex", V, P),
    ("--no-renames", N, P),
    ("--find-renames", A, P),
    ("-M", A, P),
    ("-C", A, P),
    ("--find-copies", A, P),
    ("--find-copies-harder", N, P),
    ("-D", N, P),
    ("--irreversible-delete", N, P),
    ("-B", A, P),
    ("--break-rewrites", A, P),
    ("-l", A, P),
    ("--diff-filter", V, P),
    ("-S", V, P),
    ("-G", V, P),
    ("--pickaxe-all", N, P),
    ("--pickaxe-regex", N, P),
    ("-R", N, P),
    ("--relative", A, P),
    ("--no-relative", N, P),
    ("-a", N, P),
    ("--text", N, P),
    ("--ignore-cr-at-eol", N, P),
    ("--ignore-space-at-eol", N, P),
    ("-b", N, P),
    ("--ignore-space-change", N, P),
    ("-w", N, P),
    ("--ignore-all-space", N, P),
    ("--ignore-blank-lines", N, P),
    ("-I", V, P),
    ("--ignore-matching-lines", V, P),
    ("--inter-hunk-context", V, P),
    ("-W", N, P),
    ("--function-context", N, P),
    ("--exit-code", N, P),
    ("--quiet", N, P),
    ("--minimal", N, P),
    ("--patience", N, P),
    ("--histogram", N, P),
    ("--anchored", V, P),
    ("--diff-algorithm", V, P),
    ("--indent-heuristic", N, P),
    ("--no-indent-heuristic", N, P),
    ("--full-index", N, P),
    ("--binary", N, P),
    ("--abbrev", A, P),
    ("--no-abbrev", N, P),
    ("--src-prefix", V, P),
    ("--dst-prefix", V, P),
    ("--no-prefix", N, P),
    ("--default-prefix", N, P),
    ("--line-prefix", V, P),
    ("--ita-invisible-in-index", N, P),
    ("--check", N, P),
    ("-z", N, P),
    ("--no-ext-diff", N, P),
    ("--no-textconv", N, P),
];

pub(super) const DIFF_ONLY: &[Spec] = &[
    ("--cached", N, P),
    ("--staged", N, P),
    ("--merge-base", N, P),
];

pub(super) const DIFF_REFUSED: &[Refused] = &[
    ("--ext-diff", N, R::ExtDiff),
    ("--textconv", N, R::Textconv),
    ("--output", V, R::WritesFile),
    ("--no-index", N, R::NoIndex),
    ("-O", A, R::OrderFile),
];

pub(super) const LOG_OPTS: &[Spec] = &[
    ("-n", V, P),
    ("--max-count", V, P),
    ("--skip", V, P),
    ("--since", V, P),
    ("--after", V, P),
    ("--until", V, P),
    ("--before", V, P),
    ("--since-as-filter", V, P),
    ("--author", V, P),
    ("--committer", V, P),
    ("--grep", V, P),
    ("--all-match", N, P),
    ("--invert-grep", N, P),
    ("-i", N, P),
    ("--regexp-ignore-case", N, P),
    ("-E", N, P),
    ("--extended-regexp", N, P),
    ("-F", N, P),
    ("--fixed-strings", N, P),
    ("--basic-regexp", N, P),
    ("--merges", N, P),
    ("--no-merges", N, P),
    ("--min-parents", V, P),
    ("--max-parents", V, P),
    ("--no-min-parents", N, P),
    ("--no-max-parents", N, P),
    ("--first-parent", N, P),
    ("--exclude-first-parent-only", N, P),
    ("--not", N, P),
    ("--all", N, P),
    ("--branches", A, P),
    ("--tags", A, P),
    ("--remotes", A, P),
    ("--glob", V, P),
    ("--exclude", V, P),
    ("--reflog", N, P),
    ("--ignore-missing", N, P),
    ("--no-walk", A, P),
    ("--do-walk", N, P),
    ("--topo-order", N, P),
    ("--date-order", N, P),
    ("--author-date-order", N, P),
    ("--reverse", N, P),
    ("--oneline", N, P),
    ("--pretty", A, P),
    ("--format", V, P),
    ("--abbrev-commit", N, P),
    ("--no-abbrev-commit", N, P),
    ("--encoding", V, P),
    ("--expand-tabs", A, P),
    ("--no-expand-tabs", N, P),
    ("--notes", A, P),
    ("--no-notes", N, P),
    ("--relative-date", N, P),
    ("--date", V, P),
    ("--parents", N, P),
    ("--children", N, P),
    ("--left-right", N, P),
    ("--left-only", N, P),
    ("--right-only", N, P),
    ("--cherry-pick", N, P),
    ("--cherry-mark", N, P),
    ("--cherry", N, P),
    ("--graph", N, P),
    ("--decorate", A, P),
    ("--no-decorate", N, P),
    ("--decorate-refs", V, P),
    ("--decorate-refs-exclude", V, P),
    ("--clear-decorations", N, P),
    ("--source", N, P),
    ("--use-mailmap", N, P),
    ("--mailmap", N, P),
    ("--no-mailmap", N, P),
    ("--no-use-mailmap", N, P),
    ("--full-history", N, P),
    ("--simplify-merges", N, P),
    ("--simplify-by-decoration", N, P),
    ("--ancestry-path", A, P),
    ("--dense", N, P),
    ("--sparse", N, P),
    ("--boundary", N, P),
    ("--follow", N, P),
    ("--no-follow", N, P),
    ("--log-size", N, P),
    ("--full-diff", N, P),
    ("-m", N, P),
    ("-c", N, P),
    ("--cc", N, P),
    ("--dd", N, P),
    ("--diff-merges", V, P),
    ("--no-diff-merges", N, P),
    ("--no-show-signature", N, P),
];

pub(super) const LOG_REFUSED: &[Refused] = &[("--show-signature", N, R::Gpg)];

pub(super) const STATUS_OPTS: &[Spec] = &[
    ("-s", N, P),
    ("--short", N, P),
    ("-b", N, P),
    ("--branch", N, P),
    ("--porcelain", A, P),
    ("--long", N, P),
    ("-u", A, P),
    ("--untracked-files", A, P),
    ("--ignored", A, P),
    ("--ignore-submodules", A, P),
    ("-z", N, P),
    ("--show-stash", N, P),
    ("--ahead-behind", N, P),
    ("--no-ahead-behind", N, P),
    ("--renames", N, P),
    ("--no-renames", N, P),
    ("--find-renames", A, P),
    ("--no-column", N, P),
];

pub(super) const ADD_OPTS: &[Spec] = &[
    ("-A", N, Tag::AddAll),
    ("--all", N, Tag::AddAll),
    ("--no-all", N, Tag::AddAll),
    ("--ignore-removal", N, Tag::AddAll),
    ("--no-ignore-removal", N, Tag::AddAll),
    ("-u", N, Tag::AddAll),
    ("--update", N, Tag::AddAll),
    ("-N", N, P),
    ("--intent-to-add", N, P),
    ("-f", N, Tag::Force),
    ("--force", N, Tag::Force),
    ("-n", N, Tag::DryRun),
    ("--dry-run", N, Tag::DryRun),
    ("-v", N, P),
    ("--verbose", N, P),
    ("--ignore-errors", N, P),
    ("--ignore-missing", N, P),
    ("--sparse", N, P),
    ("--renormalize", N, P),
    ("--chmod", V, P),
    ("--refresh", N, P),
    ("--no-warn-embedded-repo", N, P),
];

pub(super) const ADD_REFUSED: &[Refused] = &[
    ("-p", N, R::Interactive),
    ("--patch", N, R::Interactive),
    ("-i", N, R::Interactive),
    ("--interactive", N, R::Interactive),
    ("-e", N, R::Interactive),
    ("--edit", N, R::Interactive),
];

pub(super) const COMMIT_OPTS: &[Spec] = &[
    ("-a", N, P),
    ("--all", N, P),
    ("--amend", N, P),
    ("--no-edit", N, P),
    ("--allow-empty", N, P),
    ("--allow-empty-message", N, P),
    ("-s", N, P),
    ("--signoff", N, P),
    ("--no-signoff", N, P),
    ("-n", N, P),
    ("--no-verify", N, P),
    ("--verify", N, P),
    ("--author", V, P),
    ("--date", V, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("--reset-author", N, P),
    ("--fixup", V, P),
    ("--squash", V, P),
    ("--trailer", V, P),
    ("--cleanup", V, P),
    ("--status", N, P),
    ("--no-status", N, P),
    ("--only", N, P),
    ("-o", N, P),
    ("--include", N, P),
    ("-i", N, P),
    ("--no-post-rewrite", N, P),
    ("--dry-run", N, Tag::DryRun),
    // These print a dry run's result and imply --dry-run.
    ("--short", N, Tag::DryRun),
    ("--porcelain", N, Tag::DryRun),
    ("--long", N, Tag::DryRun),
    ("-z", N, P),
    ("--null", N, P),
    ("-u", A, P),
    ("--untracked-files", A, P),
    ("--no-gpg-sign", N, P),
];

pub(super) const COMMIT_REFUSED: &[Refused] = &[
    ("-m", V, R::Message),
    ("--message", V, R::Message),
    ("-F", V, R::MessageFile),
    ("--file", V, R::MessageFile),
    ("-t", V, R::TemplateFile),
    ("--template", V, R::TemplateFile),
    ("-S", A, R::Gpg),
    ("--gpg-sign", A, R::Gpg),
    ("-p", N, R::Interactive),
    ("--patch", N, R::Interactive),
    ("--interactive", N, R::Interactive),
];

pub(super) const PUSH_OPTS: &[Spec] = &[
    ("-f", N, Tag::Force),
    ("--force", N, Tag::Force),
    ("--force-with-lease", A, Tag::Force),
    ("--force-if-includes", N, Tag::Force),
    ("-n", N, Tag::DryRun),
    ("--dry-run", N, Tag::DryRun),
    ("-d", N, Tag::Delete),
    ("--delete", N, Tag::Delete),
    ("--prune", N, Tag::Delete),
    ("--mirror", N, Tag::AllRefs),
    ("--all", N, Tag::AllRefs),
    ("--branches", N, Tag::AllRefs),
    ("--tags", N, Tag::Tags),
    ("--follow-tags", N, P),
    ("--no-follow-tags", N, P),
    ("-u", N, P),
    ("--set-upstream", N, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("-v", N, P),
    ("--verbose", N, P),
    ("--progress", N, P),
    ("--no-progress", N, P),
    ("--porcelain", N, P),
    ("--atomic", N, P),
    ("--no-atomic", N, P),
    ("--no-verify", N, P),
    ("--verify", N, P),
    ("--thin", N, P),
    ("--no-thin", N, P),
    ("-4", N, P),
    ("--ipv4", N, P),
    ("-6", N, P),
    ("--ipv6", N, P),
    ("-o", V, P),
    ("--push-option", V, P),
    ("--no-signed", N, P),
];

pub(super) const PUSH_REFUSED: &[Refused] = &[
    ("--receive-pack", V, R::RemoteProgram),
    ("--exec", V, R::RemoteProgram),
    ("--signed", A, R::Gpg),
];

pub(super) const PULL_OPTS: &[Spec] = &[
    ("--ff-only", N, Tag::Integrate),
    ("--ff", N, Tag::Integrate),
    ("--no-ff", N, Tag::Integrate),
    ("-r", N, Tag::Integrate),
    ("--rebase", A, Tag::Integrate),
    ("--no-rebase", N, Tag::Integrate),
    ("--squash", N, Tag::Integrate),
    ("--no-squash", N, P),
    ("--commit", N, P),
    ("--no-commit", N, P),
    ("--no-edit", N, P),
    ("--autostash", N, P),
    ("--no-autostash", N, P),
    ("--allow-unrelated-histories", N, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("-v", N, P),
    ("--verbose", N, P),
    ("--stat", N, P),
    ("--no-stat", N, P),
    // `pull -n` is --no-stat, not a dry run.
    ("-n", N, P),
    ("--summary", N, P),
    ("--no-summary", N, P),
    ("--log", A, P),
    ("--no-log", N, P),
    ("--signoff", N, P),
    ("--no-signoff", N, P),
    ("--no-verify", N, P),
    ("--verify", N, P),
    ("--all", N, P),
    ("-a", N, P),
    ("--append", N, P),
    ("--depth", V, P),
    ("--deepen", V, P),
    ("--shallow-since", V, P),
    ("--shallow-exclude", V, P),
    ("--unshallow", N, P),
    ("--update-shallow", N, P),
    ("-t", N, P),
    ("--tags", N, P),
    ("--no-tags", N, P),
    ("-p", N, P),
    ("--prune", N, P),
    ("-j", V, P),
    ("--jobs", V, P),
    ("--dry-run", N, Tag::DryRun),
    ("-f", N, Tag::Force),
    ("--force", N, Tag::Force),
    ("-4", N, P),
    ("--ipv4", N, P),
    ("-6", N, P),
    ("--ipv6", N, P),
    ("--progress", N, P),
    ("--no-progress", N, P),
    ("--set-upstream", N, P),
    ("--no-gpg-sign", N, P),
    ("--no-verify-signatures", N, P),
];

pub(super) const PULL_REFUSED: &[Refused] = &[
    ("--upload-pack", V, R::RemoteProgram),
    ("-S", A, R::Gpg),
    ("--gpg-sign", A, R::Gpg),
    ("--verify-signatures", N, R::Gpg),
];

pub(super) const BRANCH_OPTS: &[Spec] = &[
    ("-d", N, Tag::BranchDelete),
    ("--delete", N, Tag::BranchDelete),
    ("-D", N, Tag::BranchForceDelete),
    ("-m", N, Tag::BranchMove),
    ("--move", N, Tag::BranchMove),
    ("-M", N, Tag::BranchForceMove),
    ("-c", N, Tag::BranchMove),
    ("--copy", N, Tag::BranchMove),
    ("-C", N, Tag::BranchForceMove),
    ("-f", N, Tag::Force),
    ("--force", N, Tag::Force),
    ("-l", N, Tag::BranchList),
    ("--list", N, Tag::BranchList),
    ("-a", N, Tag::BranchList),
    ("--all", N, Tag::BranchList),
    ("-r", N, Tag::BranchList),
    ("--remotes", N, Tag::BranchList),
    ("-v", N, Tag::BranchList),
    ("--verbose", N, Tag::BranchList),
    ("--show-current", N, Tag::BranchList),
    ("--contains", L, Tag::BranchList),
    ("--no-contains", L, Tag::BranchList),
    ("--merged", L, Tag::BranchList),
    ("--no-merged", L, Tag::BranchList),
    ("--points-at", V, Tag::BranchList),
    ("--sort", V, Tag::BranchList),
    ("--format", V, Tag::BranchList),
    ("--abbrev", A, Tag::BranchList),
    ("--no-abbrev", N, Tag::BranchList),
    ("--omit-empty", N, Tag::BranchList),
    ("-i", N, Tag::BranchList),
    ("--ignore-case", N, Tag::BranchList),
    ("--no-color", N, Tag::BranchList),
    ("--no-column", N, Tag::BranchList),
    ("-q", N, P),
    ("--quiet", N, P),
    ("-t", N, P),
    ("--track", A, P),
    ("--no-track", N, P),
    ("--create-reflog", N, P),
    ("-u", V, Tag::BranchUpstream),
    ("--set-upstream-to", V, Tag::BranchUpstream),
    ("--unset-upstream", N, Tag::BranchUpstream),
];

pub(super) const BRANCH_REFUSED: &[Refused] = &[("--edit-description", N, R::Editor)];

pub(super) const CHECKOUT_OPTS: &[Spec] = &[
    ("-b", V, Tag::NewBranch),
    ("--orphan", V, Tag::NewBranch),
    ("-B", V, Tag::ResetBranch),
    ("--detach", N, P),
    ("-t", N, P),
    ("--track", A, P),
    ("--no-track", N, P),
    ("-f", N, Tag::Force),
    ("--force", N, Tag::Force),
    ("-q", N, P),
    ("--quiet", N, P),
    ("--progress", N, P),
    ("--no-progress", N, P),
    ("-m", N, P),
    ("--merge", N, P),
    ("--conflict", V, P),
    ("--ours", N, P),
    ("--theirs", N, P),
    ("--guess", N, P),
    ("--no-guess", N, P),
    ("--ignore-other-worktrees", N, P),
    ("--overwrite-ignore", N, P),
    ("--no-overwrite-ignore", N, P),
    ("--overlay", N, P),
    ("--no-overlay", N, P),
    ("-l", N, P),
];

pub(super) const RESET_OPTS: &[Spec] = &[
    ("--soft", N, Tag::ResetMode),
    ("--mixed", N, Tag::ResetMode),
    ("--keep", N, Tag::ResetMode),
    ("--hard", N, Tag::Hard),
    ("--merge", N, Tag::ResetMerge),
    ("-q", N, P),
    ("--quiet", N, P),
    ("-N", N, P),
    ("--intent-to-add", N, P),
    ("--refresh", N, P),
    ("--no-refresh", N, P),
];

pub(super) const PATCH_REFUSED: &[Refused] =
    &[("-p", N, R::Interactive), ("--patch", N, R::Interactive)];

pub(super) const STASH_PUSH_OPTS: &[Spec] = &[
    ("-u", N, P),
    ("--include-untracked", N, P),
    ("--no-include-untracked", N, P),
    ("-a", N, P),
    ("--all", N, P),
    ("-k", N, P),
    ("--keep-index", N, P),
    ("--no-keep-index", N, P),
    ("-q", N, P),
    ("--quiet", N, P),
    ("-m", V, Tag::Message),
    ("--message", V, Tag::Message),
    ("-S", N, P),
    ("--staged", N, P),
];

pub(super) const STASH_LIST_OPTS: &[Spec] = &[
    ("--oneline", N, P),
    ("-n", V, P),
    ("--max-count", V, P),
    ("--format", V, P),
    ("--pretty", A, P),
    ("--date", V, P),
];

pub(super) const STASH_SHOW_ONLY: &[Spec] = &[
    ("--include-untracked", N, P),
    ("--only-untracked", N, P),
    ("--no-include-untracked", N, P),
];

pub(super) const STASH_APPLY_OPTS: &[Spec] = &[("--index", N, P), ("-q", N, P), ("--quiet", N, P)];
pub(super) const QUIET: &[Spec] = &[("-q", N, P), ("--quiet", N, P)];

/// The tables of one subcommand: what it knows and what the tool refuses.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tables {
    /// Known options.
    pub known: Vec<&'static [Spec]>,
    /// Refused options.
    pub refused: Vec<&'static [Refused]>,
    /// Whether git accepts unambiguous prefixes of the long options (its
    /// parse-options library does; the revision and diff parsers of `log`
    /// and `diff` do not).
    pub abbrev: bool,
    /// Whether `-<n>` means `-n <n>` (the log family).
    pub counts: bool,
}

/// Which tables apply to an operation (and stash subcommand).
pub(crate) fn tables(op: Op, stash_sub: Option<&str>) -> Tables {
    let t = |known: Vec<&'static [Spec]>, refused: Vec<&'static [Refused]>, abbrev: bool| Tables {
        known,
        refused,
        abbrev,
        counts: op == Op::Log,
    };
    match op {
        Op::Status => t(vec![STATUS_OPTS], vec![], true),
        Op::Diff => t(vec![DIFF_OPTS, DIFF_ONLY], vec![DIFF_REFUSED], false),
        Op::Log => t(
            vec![LOG_OPTS, DIFF_OPTS],
            vec![DIFF_REFUSED, LOG_REFUSED],
            false,
        ),
        Op::Add => t(vec![ADD_OPTS], vec![ADD_REFUSED], true),
        Op::Commit => t(vec![COMMIT_OPTS], vec![COMMIT_REFUSED], true),
        Op::Push => t(vec![PUSH_OPTS], vec![PUSH_REFUSED], true),
        Op::Pull => t(vec![PULL_OPTS], vec![PULL_REFUSED], true),
        Op::Branch => t(vec![BRANCH_OPTS], vec![BRANCH_REFUSED], true),
        Op::Checkout => t(vec![CHECKOUT_OPTS], vec![PATCH_REFUSED], true),
        Op::Reset => t(vec![RESET_OPTS], vec![PATCH_REFUSED], true),
        Op::Stash => match stash_sub.unwrap_or("push") {
            "push" | "save" => t(vec![STASH_PUSH_OPTS], vec![PATCH_REFUSED], true),
            "list" => t(vec![STASH_LIST_OPTS], vec![], false),
            "show" => t(vec![DIFF_OPTS, STASH_SHOW_ONLY], vec![DIFF_REFUSED], false),
            "pop" | "apply" => t(vec![STASH_APPLY_OPTS], vec![], true),
            "drop" => t(vec![QUIET], vec![], true),
            _ => Tables::default(),
        },
    }
}

/// Stash subcommands plangate knows.
pub(crate) const STASH_SUBS: &[&str] = &[
    "push", "save", "list", "show", "pop", "apply", "drop", "clear", "branch",
];

/// Operations whose `--` introduces paths (the others only end the options).
pub(crate) fn takes_paths(op: Op, stash_sub: Option<&str>) -> bool {
    match op {
        Op::Status | Op::Diff | Op::Log | Op::Add | Op::Commit | Op::Checkout | Op::Reset => true,
        Op::Stash => matches!(stash_sub, None | Some("push")),
        Op::Push | Op::Pull | Op::Branch => false,
    }
}
