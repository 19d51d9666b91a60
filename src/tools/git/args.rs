//! Pure reading of a git step's parameters: which options `args` holds (per
//! operation, from a table of the options plangate understands), the risk they
//! carry, the problems that are plan errors, and the argv that is run.
//!
//! Three kinds of option:
//! - known ones (the tables below): judged, passed on as written;
//! - refused ones: they make git run a program named by the plan (`--upload-pack`,
//!   `--exec`, `--ext-diff`, gpg signing), read or write files plangate does not
//!   check (`--output`, `--no-index`, `-F`), or wait for a human (`--patch`,
//!   `--interactive`). They are plan errors, with the position of the entry;
//! - anything else: plangate cannot judge it, so the step is unclassifiable and
//!   needs an explicit `--approve` at any tolerance (fail-close). Git's own
//!   abbreviations of long options (`--forc`) are switched off when git runs
//!   (`GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS`), so what the table reads is what
//!   git reads.
//!
//! No I/O here: this module is called by the plan checks and by the classifier.

use crate::plan::tool_params::{GitOperation, GitParams};
use crate::policy::Risk;

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
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

/// What an option means to the classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// Nothing special.
    Plain,
    /// Overrides a safety check of git (`--force` and friends).
    Force,
    /// Changes nothing (`--dry-run`).
    DryRun,
    /// Deletes remote refs (`push --delete`, `--prune`).
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
}

type Spec = (&'static str, Takes, Tag);
type Refused = (&'static str, Takes, &'static str);

use Tag::Plain as P;
use Takes::{Attached as A, LastArg as L, No as N, Value as V};

const RUNS_GPG: &str = "makes git run gpg";
const INTERACTIVE: &str = "waits for answers on a terminal, and a CI run has nobody to give them";
const RUNS_DIFF: &str = "makes git run an external diff program";
const RUNS_TEXTCONV: &str = "makes git run textconv filter programs";
const WRITES_FILE: &str = "writes a file plangate does not check";

const DIFF_OPTS: &[Spec] = &[
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

const DIFF_ONLY: &[Spec] = &[
    ("--cached", N, P),
    ("--staged", N, P),
    ("--merge-base", N, P),
];

const DIFF_REFUSED: &[Refused] = &[
    ("--ext-diff", N, RUNS_DIFF),
    ("--textconv", N, RUNS_TEXTCONV),
    ("--output", V, WRITES_FILE),
    (
        "--no-index",
        N,
        "compares files outside the repository, which plangate does not check",
    ),
    ("-O", A, "reads an order file plangate does not check"),
];

const LOG_OPTS: &[Spec] = &[
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

const LOG_REFUSED: &[Refused] = &[("--show-signature", N, RUNS_GPG)];

const STATUS_OPTS: &[Spec] = &[
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

const ADD_OPTS: &[Spec] = &[
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

const ADD_REFUSED: &[Refused] = &[
    ("-p", N, INTERACTIVE),
    ("--patch", N, INTERACTIVE),
    ("-i", N, INTERACTIVE),
    ("--interactive", N, INTERACTIVE),
    ("-e", N, INTERACTIVE),
    ("--edit", N, INTERACTIVE),
];

const COMMIT_OPTS: &[Spec] = &[
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

const COMMIT_REFUSED: &[Refused] = &[
    ("-m", V, "sets the message: use `commit_message` instead"),
    (
        "--message",
        V,
        "sets the message: use `commit_message` instead",
    ),
    (
        "-F",
        V,
        "reads the message from a file plangate does not check: use `commit_message`",
    ),
    (
        "--file",
        V,
        "reads the message from a file plangate does not check: use `commit_message`",
    ),
    (
        "-t",
        V,
        "reads a template file plangate does not check: use `commit_message`",
    ),
    (
        "--template",
        V,
        "reads a template file plangate does not check: use `commit_message`",
    ),
    ("-S", A, RUNS_GPG),
    ("--gpg-sign", A, RUNS_GPG),
    ("-p", N, INTERACTIVE),
    ("--patch", N, INTERACTIVE),
    ("--interactive", N, INTERACTIVE),
];

const PUSH_OPTS: &[Spec] = &[
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

const PUSH_REFUSED: &[Refused] = &[
    (
        "--receive-pack",
        V,
        "names a program git runs for the remote side",
    ),
    ("--exec", V, "names a program git runs for the remote side"),
    ("--signed", A, RUNS_GPG),
];

const PULL_OPTS: &[Spec] = &[
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

const PULL_REFUSED: &[Refused] = &[
    (
        "--upload-pack",
        V,
        "names a program git runs for the remote side",
    ),
    ("-S", A, RUNS_GPG),
    ("--gpg-sign", A, RUNS_GPG),
    ("--verify-signatures", N, RUNS_GPG),
];

const BRANCH_OPTS: &[Spec] = &[
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

const BRANCH_REFUSED: &[Refused] = &[("--edit-description", N, "opens an editor")];

const CHECKOUT_OPTS: &[Spec] = &[
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

const RESET_OPTS: &[Spec] = &[
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

const PATCH_REFUSED: &[Refused] = &[("-p", N, INTERACTIVE), ("--patch", N, INTERACTIVE)];

const STASH_PUSH_OPTS: &[Spec] = &[
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

const STASH_LIST_OPTS: &[Spec] = &[
    ("--oneline", N, P),
    ("-n", V, P),
    ("--max-count", V, P),
    ("--format", V, P),
    ("--pretty", A, P),
    ("--date", V, P),
];

const STASH_SHOW_ONLY: &[Spec] = &[
    ("--include-untracked", N, P),
    ("--only-untracked", N, P),
    ("--no-include-untracked", N, P),
];

const STASH_APPLY_OPTS: &[Spec] = &[("--index", N, P), ("-q", N, P), ("--quiet", N, P)];
const QUIET: &[Spec] = &[("-q", N, P), ("--quiet", N, P)];

/// What `args` says, read with the operation's table.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The stash subcommand (`push` when none is written).
    pub stash_sub: Option<String>,
    /// Known options, in order: (name as written, value, tag, the tokens).
    options: Vec<(String, Option<String>, Tag, Vec<String>)>,
    /// Positional arguments before `--`.
    pub positionals: Vec<String>,
    /// Paths after `--`.
    pub paths: Vec<String>,
    /// Whether `args` held `--`.
    pub dashdash: bool,
    /// Options the table does not know.
    pub unknown: Vec<String>,
    /// (index in `args`, why) of refused options.
    pub refused: Vec<(usize, String)>,
}

impl Parsed {
    fn has(&self, tag: Tag) -> bool {
        self.options.iter().any(|o| o.2 == tag)
    }

    fn named(&self, tag: Tag) -> Option<&str> {
        self.options
            .iter()
            .find(|o| o.2 == tag)
            .map(|o| o.0.as_str())
    }

    fn value_of(&self, tag: Tag) -> Option<&str> {
        self.options
            .iter()
            .find(|o| o.2 == tag)
            .and_then(|o| o.1.as_deref())
    }

    /// The tokens of the known options, in order.
    fn option_tokens(&self) -> impl Iterator<Item = &String> {
        self.options.iter().flat_map(|o| o.3.iter())
    }
}

/// Which tables apply to an operation (and stash subcommand).
fn tables(
    op: GitOperation,
    stash_sub: Option<&str>,
) -> (Vec<&'static [Spec]>, Vec<&'static [Refused]>) {
    use GitOperation as G;
    match op {
        G::Status => (vec![STATUS_OPTS], vec![]),
        G::Diff => (vec![DIFF_OPTS, DIFF_ONLY], vec![DIFF_REFUSED]),
        G::Log => (vec![LOG_OPTS, DIFF_OPTS], vec![DIFF_REFUSED, LOG_REFUSED]),
        G::Add => (vec![ADD_OPTS], vec![ADD_REFUSED]),
        G::Commit => (vec![COMMIT_OPTS], vec![COMMIT_REFUSED]),
        G::Push => (vec![PUSH_OPTS], vec![PUSH_REFUSED]),
        G::Pull => (vec![PULL_OPTS], vec![PULL_REFUSED]),
        G::Branch => (vec![BRANCH_OPTS], vec![BRANCH_REFUSED]),
        G::Checkout => (vec![CHECKOUT_OPTS], vec![PATCH_REFUSED]),
        G::Reset => (vec![RESET_OPTS], vec![PATCH_REFUSED]),
        G::Stash => match stash_sub.unwrap_or("push") {
            "push" | "save" => (vec![STASH_PUSH_OPTS], vec![PATCH_REFUSED]),
            "list" => (vec![STASH_LIST_OPTS], vec![]),
            "show" => (vec![DIFF_OPTS, STASH_SHOW_ONLY], vec![DIFF_REFUSED]),
            "pop" | "apply" => (vec![STASH_APPLY_OPTS], vec![]),
            "drop" => (vec![QUIET], vec![]),
            _ => (vec![], vec![]),
        },
    }
}

/// Stash subcommands plangate knows.
const STASH_SUBS: &[&str] = &[
    "push", "save", "list", "show", "pop", "apply", "drop", "clear", "branch",
];

/// Operations whose `--` introduces paths (the others only end the options).
fn takes_paths(op: GitOperation, stash_sub: Option<&str>) -> bool {
    use GitOperation as G;
    match op {
        G::Status | G::Diff | G::Log | G::Add | G::Commit | G::Checkout | G::Reset => true,
        G::Stash => matches!(stash_sub, None | Some("push")),
        G::Push | G::Pull | G::Branch => false,
    }
}

/// Read `args` with the operation's table.
pub fn parse(op: GitOperation, args: &[String]) -> Parsed {
    let mut p = Parsed::default();
    let mut start = 0;
    if op == GitOperation::Stash
        && let Some(first) = args.first()
        && !first.starts_with('-')
    {
        p.stash_sub = Some(first.clone());
        start = 1;
    }
    let (known, refused) = tables(op, p.stash_sub.as_deref());
    let find = |name: &str| -> Option<(Takes, Tag)> {
        known
            .iter()
            .flat_map(|t| t.iter())
            .find(|s| s.0 == name)
            .map(|s| (s.1, s.2))
    };
    let find_refused = |name: &str| -> Option<(Takes, &'static str)> {
        refused
            .iter()
            .flat_map(|t| t.iter())
            .find(|s| s.0 == name)
            .map(|s| (s.1, s.2))
    };
    let paths_after_dashdash = takes_paths(op, p.stash_sub.as_deref());
    let mut i = start;
    let mut options_done = false;
    while i < args.len() {
        let a = &args[i];
        if a.contains('\0') {
            p.refused.push((i, "contains a NUL byte".to_owned()));
            i += 1;
            continue;
        }
        if options_done || !a.starts_with('-') || a == "-" {
            if options_done && p.dashdash && paths_after_dashdash {
                p.paths.push(a.clone());
            } else {
                p.positionals.push(a.clone());
            }
            i += 1;
            continue;
        }
        if a == "--" {
            p.dashdash = true;
            options_done = true;
            i += 1;
            continue;
        }
        if a == "--end-of-options" {
            options_done = true;
            i += 1;
            continue;
        }
        let start_i = i;
        let next = args.get(i + 1);
        if let Some(long) = a.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_owned())),
                None => (a.clone(), None),
            };
            if let Some((takes, why)) = find_refused(&name) {
                p.refused.push((i, why.to_owned()));
                if takes == Takes::Value && attached.is_none() {
                    i += 1;
                }
                i += 1;
                continue;
            }
            match find(&name) {
                Some((takes, tag)) => {
                    let (value, used_next) = match (takes, attached) {
                        (Takes::No, Some(_)) => {
                            p.unknown.push(a.clone());
                            i += 1;
                            continue;
                        }
                        (Takes::No, None) | (Takes::Attached, None) => (None, false),
                        (_, Some(v)) => (Some(v), false),
                        (Takes::Value, None) => (next.cloned(), next.is_some()),
                        (Takes::LastArg, None) => match next {
                            Some(n) if !n.starts_with('-') => (Some(n.clone()), true),
                            _ => (None, false),
                        },
                    };
                    if used_next {
                        i += 1;
                    }
                    let tokens = args[start_i..=i].to_vec();
                    p.options.push((name, value, tag, tokens));
                }
                None => p.unknown.push(a.clone()),
            }
            i += 1;
            continue;
        }
        // Short options, possibly bundled (`-fu`), possibly with a value (`-n5`, `-bname`).
        if op == GitOperation::Log && a[1..].chars().all(|c| c.is_ascii_digit()) {
            p.options.push((
                "-n".to_owned(),
                Some(a[1..].to_owned()),
                Tag::Plain,
                vec![a.clone()],
            ));
            i += 1;
            continue;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        let mut consumed_next = false;
        let mut bad = false;
        while k < chars.len() {
            let name = format!("-{}", chars[k]);
            let rest: String = chars[k + 1..].iter().collect();
            if let Some((takes, why)) = find_refused(&name) {
                p.refused.push((i, why.to_owned()));
                if takes == Takes::Value && rest.is_empty() {
                    consumed_next = true;
                }
                bad = true;
                break;
            }
            let Some((takes, tag)) = find(&name) else {
                p.unknown.push(a.clone());
                bad = true;
                break;
            };
            match takes {
                Takes::No => {
                    p.options.push((name, None, tag, Vec::new()));
                    k += 1;
                }
                Takes::Attached => {
                    p.options
                        .push((name, (!rest.is_empty()).then_some(rest), tag, Vec::new()));
                    break;
                }
                Takes::Value | Takes::LastArg => {
                    let value = if !rest.is_empty() {
                        Some(rest)
                    } else if takes == Takes::Value || next.is_some_and(|n| !n.starts_with('-')) {
                        consumed_next = next.is_some();
                        next.cloned()
                    } else {
                        None
                    };
                    p.options.push((name, value, tag, Vec::new()));
                    break;
                }
            }
        }
        if consumed_next {
            i += 1;
        }
        if !bad {
            // The whole bundle is kept as written, on the bundle's last option.
            if let Some(last) = p.options.last_mut() {
                last.3 = args[start_i..=i].to_vec();
            }
        }
        i += 1;
    }
    p
}

/// Where a problem of the parameters is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Where {
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
    /// The parameters as a whole.
    Params,
}

/// A plan error in a git step's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Which parameter.
    pub at: Where,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub help: String,
}

/// The parts of the parameters the checks need (built from the plan's nodes
/// before the parameters are typed, and from [`GitParams`] after).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The operation.
    pub op: GitOperation,
    /// `args`.
    pub args: &'a [String],
    /// `files` is not empty.
    pub has_files: bool,
    /// `force`.
    pub force: bool,
    /// `dry_run`.
    pub dry_run: bool,
    /// `commit_message` is set.
    pub has_message: bool,
}

impl<'a> Request<'a> {
    /// From typed parameters.
    pub fn of(p: &'a GitParams) -> Request<'a> {
        Request {
            op: p.operation,
            args: &p.args,
            has_files: !p.files.is_empty(),
            force: p.force,
            dry_run: p.dry_run,
            has_message: p.commit_message.is_some(),
        }
    }
}

/// Whether the request only reads (status, diff, log, branch listing, stash list/show).
fn read_only(op: GitOperation, p: &Parsed) -> bool {
    match op {
        GitOperation::Status | GitOperation::Diff | GitOperation::Log => true,
        GitOperation::Branch => branch_lists(p),
        GitOperation::Stash => matches!(p.stash_sub.as_deref(), Some("list" | "show")),
        _ => false,
    }
}

fn branch_lists(p: &Parsed) -> bool {
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

/// Plan errors of a git step: refused options, and parameters the operation cannot honour.
pub fn problems(r: &Request<'_>) -> Vec<Problem> {
    use GitOperation as G;
    let p = parse(r.op, r.args);
    let op = r.op.as_str();
    let mut out: Vec<Problem> = p
        .refused
        .iter()
        .map(|(i, why)| Problem {
            at: Where::Arg(*i),
            message: format!("`args` entry `{}` of git {op} {why}", r.args[*i].replace('\0', "\\0")),
            help: "plangate never lets git run programs, read files or wait for input on its behalf; remove it".to_owned(),
        })
        .collect();
    if r.op == G::Stash
        && let Some(sub) = p.stash_sub.as_deref()
        && !STASH_SUBS.contains(&sub)
    {
        out.push(Problem {
            at: Where::Arg(0),
            message: format!("`{sub}` is not a git stash subcommand plangate runs"),
            help: format!("use one of {}", STASH_SUBS.join(", ")),
        });
    }
    let reads = read_only(r.op, &p);
    if r.force {
        let meaningless = match r.op {
            G::Status | G::Diff | G::Log | G::Commit | G::Stash => true,
            G::Branch => reads,
            _ => false,
        };
        if meaningless {
            out.push(Problem {
                at: Where::Force,
                message: format!("`force` has no meaning for git {op}"),
                help: "remove `force`; it applies to push, pull, add, branch, checkout and reset"
                    .to_owned(),
            });
        } else if r.op == G::Reset
            && let Some(mode) = p.named(Tag::ResetMode).or_else(|| p.named(Tag::ResetMerge))
        {
            out.push(Problem {
                at: Where::Force,
                message: format!("`force` on reset means `--hard`, which contradicts `{mode}`"),
                help: "remove `force` or the mode in `args`".to_owned(),
            });
        }
    }
    if r.dry_run && !reads && matches!(r.op, G::Branch | G::Checkout | G::Reset | G::Stash) {
        out.push(Problem {
            at: Where::DryRun,
            message: format!("git {op} has no dry-run mode, so `dry_run` cannot be honoured"),
            help: "remove `dry_run` (git has one for add, commit, push and pull)".to_owned(),
        });
    }
    if r.has_files {
        let takes = match r.op {
            G::Push | G::Pull | G::Branch => false,
            G::Stash => matches!(p.stash_sub.as_deref(), None | Some("push")),
            _ => true,
        };
        if !takes {
            out.push(Problem {
                at: Where::Files,
                message: format!("`files` has no meaning for git {op}"),
                help: "remove `files`; it applies to status, diff, log, add, commit, checkout, reset and stash push".to_owned(),
            });
        }
    }
    if r.has_message {
        let takes = r.op == G::Commit
            || (r.op == G::Stash && matches!(p.stash_sub.as_deref(), None | Some("push")));
        if !takes {
            out.push(Problem {
                at: Where::CommitMessage,
                message: format!("`commit_message` has no meaning for git {op}"),
                help: "remove it; it is the message of a commit (or of a stash push)".to_owned(),
            });
        } else if r.op == G::Stash && p.has(Tag::Message) {
            out.push(Problem {
                at: Where::CommitMessage,
                message: "the stash message is set twice (`commit_message` and `-m` in `args`)"
                    .to_owned(),
                help: "keep one of them".to_owned(),
            });
        }
    }
    out
}

/// The classifier's verdict on a git step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The risk.
    pub risk: Risk,
    /// What decided it.
    pub reason: String,
    /// Set when `args` hold something plangate cannot judge.
    pub unclassifiable: Option<String>,
    /// Set when `args` hold a refused option (a plan error; never reached in a valid plan).
    pub blocked: Option<String>,
}

/// Branch names taken as a remote's default branch when the remote's own is unknown.
pub const DEFAULT_BRANCHES: &[&str] = &["main", "master"];

/// Where a push goes, as far as `args` say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTarget {
    /// The repository argument (a remote name or URL), if written.
    pub remote: Option<String>,
    /// Destination branch names (`refs/heads/` stripped); empty when unknown.
    pub branches: Vec<String>,
    /// Why the destination cannot be known before the run, if it cannot.
    pub unknown: Option<String>,
    /// A forced update (`+refspec`).
    pub forced: bool,
    /// A deletion (`:dst`).
    pub deletes: bool,
}

/// Read a push's repository and refspecs.
pub fn push_target(p: &Parsed) -> PushTarget {
    let mut t = PushTarget {
        remote: p.positionals.first().cloned(),
        branches: Vec::new(),
        unknown: None,
        forced: false,
        deletes: false,
    };
    let refspecs = p.positionals.get(1..).unwrap_or(&[]);
    if refspecs.is_empty() {
        if !p.has(Tag::Tags) {
            t.unknown = Some(
                "pushes without an explicit refspec, so it may update the remote's default branch"
                    .to_owned(),
            );
        }
        return t;
    }
    for spec in refspecs {
        let (forced, spec) = match spec.strip_prefix('+') {
            Some(s) => (true, s),
            None => (false, spec.as_str()),
        };
        t.forced |= forced;
        let (src, dst) = match spec.split_once(':') {
            Some((s, d)) => (s, d),
            None => (spec, spec),
        };
        if src.is_empty() && !dst.is_empty() {
            t.deletes = true;
        }
        if dst.is_empty() || dst.contains('*') {
            t.unknown = Some(format!(
                "refspec `{spec}` names no single destination branch"
            ));
            continue;
        }
        let bare = dst.strip_prefix("refs/heads/").unwrap_or(dst);
        if dst.starts_with("refs/") && !dst.starts_with("refs/heads/") {
            // Tags and other namespaces are not branches.
            continue;
        }
        let symbolic = matches!(bare, "HEAD" | "@") || bare.contains(['~', '^', '@']);
        let sha_like = bare.len() >= 7 && bare.chars().all(|c| c.is_ascii_hexdigit());
        if symbolic || sha_like {
            t.unknown = Some(format!(
                "refspec `{spec}` does not name its destination branch (write `SRC:BRANCH`)"
            ));
            continue;
        }
        t.branches.push(bare.to_owned());
    }
    t
}

fn verdict(risk: Risk, reason: impl Into<String>) -> Verdict {
    Verdict {
        risk,
        reason: reason.into(),
        unclassifiable: None,
        blocked: None,
    }
}

/// Classify a git step.
pub fn classify(params: &GitParams) -> Verdict {
    let p = parse(params.operation, &params.args);
    let mut v = classify_parsed(params, &p);
    if let Some((i, why)) = p.refused.first() {
        v.blocked = Some(format!("`{}` {why}", params.args[*i]));
        v.risk = Risk::Dangerous;
    } else if let Some(u) = p.unknown.first() {
        v.unclassifiable = Some(format!(
            "`{u}` is not an option plangate knows for git {}, so it cannot judge what it does",
            params.operation.as_str()
        ));
        v.risk = v.risk.max(Risk::Moderate);
    } else if params.operation == GitOperation::Stash
        && let Some(sub) = p.stash_sub.as_deref()
        && !STASH_SUBS.contains(&sub)
    {
        v.unclassifiable = Some(format!(
            "`git stash {sub}` is not a subcommand plangate knows"
        ));
        v.risk = v.risk.max(Risk::Moderate);
    }
    v
}

fn classify_parsed(params: &GitParams, p: &Parsed) -> Verdict {
    use GitOperation as G;
    let op = params.operation;
    let dry = params.dry_run || p.has(Tag::DryRun);
    let force = params.force || p.has(Tag::Force);
    match op {
        G::Status | G::Diff | G::Log => verdict(
            Risk::Safe,
            format!("git {} only reads the repository", op.as_str()),
        ),
        G::Add => {
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
        G::Commit => {
            if dry {
                verdict(Risk::Safe, "git commit --dry-run changes nothing")
            } else {
                verdict(
                    Risk::Moderate,
                    "git commit adds a commit to the current branch",
                )
            }
        }
        G::Push => classify_push(p, dry, force),
        G::Pull => {
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
        G::Branch => {
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
        G::Checkout => {
            let has_paths =
                p.positionals.len() > 1 || !p.paths.is_empty() || !params.files.is_empty();
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
        G::Reset => {
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
        G::Stash => match p.stash_sub.as_deref().unwrap_or("push") {
            "list" | "show" => verdict(Risk::Safe, "git stash list/show only reads"),
            "drop" | "clear" => verdict(
                Risk::Dangerous,
                "git stash drop/clear deletes stashed changes for good",
            ),
            sub => verdict(
                Risk::Moderate,
                format!("git stash {sub} changes the working tree"),
            ),
        },
    }
}

fn classify_push(p: &Parsed, dry: bool, force: bool) -> Verdict {
    let t = push_target(p);
    if dry {
        return verdict(
            Risk::Moderate,
            "git push --dry-run contacts the remote but changes nothing",
        );
    }
    if force || t.forced {
        return verdict(
            Risk::Dangerous,
            "a forced push rewrites the remote's history",
        );
    }
    if p.has(Tag::Delete) || t.deletes {
        return verdict(Risk::Dangerous, "git push --delete removes remote refs");
    }
    if let Some(flag) = p.named(Tag::AllRefs) {
        return verdict(
            Risk::Dangerous,
            format!("git push {flag} pushes every branch, the default branch included"),
        );
    }
    if let Some(why) = &t.unknown {
        return verdict(Risk::Dangerous, format!("git push {why}"));
    }
    if let Some(b) = t
        .branches
        .iter()
        .find(|b| DEFAULT_BRANCHES.contains(&b.as_str()))
    {
        return verdict(
            Risk::Dangerous,
            format!("git push updates `{b}`, a default branch"),
        );
    }
    if t.branches.is_empty() {
        verdict(Risk::Moderate, "git push sends tags to a remote")
    } else {
        verdict(
            Risk::Moderate,
            format!("git push updates `{}` on a remote", t.branches.join("`, `")),
        )
    }
}

/// The git command line after `git`: the subcommand, plangate's own flags, then `args`, then `files`.
///
/// `args` are re-ordered as options, positionals, `--`, paths (and `--` is
/// added after a checkout's or reset's target so that git never reads it as a
/// path) — unless they hold an option plangate does not know: then they are
/// passed exactly as written (such a step needs an explicit approval anyway).
pub fn argv(params: &GitParams) -> Vec<String> {
    use GitOperation as G;
    let p = parse(params.operation, &params.args);
    if !p.unknown.is_empty()
        || (params.operation == G::Stash
            && p.stash_sub
                .as_deref()
                .is_some_and(|s| !STASH_SUBS.contains(&s)))
    {
        return argv_verbatim(params, &p);
    }
    let s = |x: &str| x.to_owned();
    let mut v: Vec<String> = Vec::new();
    let files = &params.files;
    let verbatim_with_files = |v: &mut Vec<String>| {
        v.extend(params.args.iter().cloned());
        if !files.is_empty() {
            if !p.dashdash {
                v.push(s("--"));
            }
            v.extend(files.iter().cloned());
        }
    };
    match params.operation {
        G::Status => {
            v.push(s("status"));
            verbatim_with_files(&mut v);
        }
        G::Diff | G::Log => {
            v.push(s(params.operation.as_str()));
            v.extend(["--no-ext-diff", "--no-textconv", "--no-color"].map(s));
            verbatim_with_files(&mut v);
        }
        G::Add => {
            v.push(s("add"));
            if params.dry_run {
                v.push(s("--dry-run"));
            }
            if params.force {
                v.push(s("--force"));
            }
            v.extend(p.option_tokens().cloned());
            let mut paths: Vec<String> = p.positionals.clone();
            paths.extend(p.paths.iter().cloned());
            paths.extend(files.iter().cloned());
            if paths.is_empty() && !p.has(Tag::AddAll) {
                v.push(s("--all"));
            }
            if !paths.is_empty() {
                v.push(s("--"));
                v.extend(paths);
            }
        }
        G::Commit => {
            v.push(s("commit"));
            v.push(s("-m"));
            v.push(params.commit_message.clone().unwrap_or_default());
            if params.dry_run {
                v.push(s("--dry-run"));
            }
            v.extend(p.option_tokens().cloned());
            let mut paths: Vec<String> = p.positionals.clone();
            paths.extend(p.paths.iter().cloned());
            paths.extend(files.iter().cloned());
            if !paths.is_empty() {
                v.push(s("--"));
                v.extend(paths);
            }
        }
        G::Push | G::Pull | G::Branch => {
            v.push(s(params.operation.as_str()));
            if params.operation == G::Pull && !p.has(Tag::Integrate) {
                v.push(s("--ff-only"));
            }
            if params.force {
                v.push(s(match params.operation {
                    G::Push => "--force-with-lease",
                    _ => "--force",
                }));
            }
            if params.dry_run && params.operation != G::Branch {
                v.push(s("--dry-run"));
            }
            v.extend(p.option_tokens().cloned());
            v.extend(p.positionals.iter().cloned());
        }
        G::Checkout | G::Reset => {
            v.push(s(params.operation.as_str()));
            if params.force {
                v.push(s(if params.operation == G::Reset {
                    "--hard"
                } else {
                    "--force"
                }));
            }
            v.extend(p.option_tokens().cloned());
            let mut pos = p.positionals.iter();
            let target = pos.next();
            let mut paths: Vec<String> = pos.cloned().collect();
            paths.extend(p.paths.iter().cloned());
            paths.extend(files.iter().cloned());
            if let Some(t) = target {
                v.push(t.clone());
            }
            // `--` after the target makes git read it as a commit, never as a path.
            if target.is_some() || !paths.is_empty() {
                v.push(s("--"));
                v.extend(paths);
            }
        }
        G::Stash => {
            let sub = p.stash_sub.clone().unwrap_or_else(|| s("push"));
            v.push(s("stash"));
            v.push(sub.clone());
            if sub == "show" {
                v.extend(["--no-ext-diff", "--no-textconv", "--no-color"].map(s));
            }
            if sub == "push"
                && let Some(m) = &params.commit_message
            {
                v.push(s("-m"));
                v.push(m.clone());
            }
            v.extend(p.option_tokens().cloned());
            v.extend(p.positionals.iter().cloned());
            let mut paths = p.paths.clone();
            paths.extend(files.iter().cloned());
            if !paths.is_empty() {
                v.push(s("--"));
                v.extend(paths);
            }
        }
    }
    v
}

/// `args` as written, after the subcommand and plangate's flags, then `files`.
fn argv_verbatim(params: &GitParams, p: &Parsed) -> Vec<String> {
    use GitOperation as G;
    let op = params.operation;
    let mut v = vec![op.as_str().to_owned()];
    match op {
        G::Diff | G::Log => {
            v.extend(["--no-ext-diff", "--no-textconv", "--no-color"].map(str::to_owned))
        }
        G::Commit => {
            v.push("-m".to_owned());
            v.push(params.commit_message.clone().unwrap_or_default());
        }
        G::Pull if !p.has(Tag::Integrate) => v.push("--ff-only".to_owned()),
        _ => {}
    }
    if params.force {
        let flag = match op {
            G::Push => Some("--force-with-lease"),
            G::Reset => Some("--hard"),
            G::Pull | G::Add | G::Branch | G::Checkout => Some("--force"),
            _ => None,
        };
        v.extend(flag.map(str::to_owned));
    }
    if params.dry_run && matches!(op, G::Add | G::Commit | G::Push | G::Pull) {
        v.push("--dry-run".to_owned());
    }
    let mut args: &[String] = &params.args;
    if op == G::Stash
        && let Some(m) = &params.commit_message
    {
        // `commit_message` is only accepted for `stash push` (checked at load).
        if p.stash_sub.is_some() {
            args = args.get(1..).unwrap_or(&[]);
        }
        v.extend(["push".to_owned(), "-m".to_owned(), m.clone()]);
    }
    v.extend(args.iter().cloned());
    if !params.files.is_empty() {
        if !p.dashdash {
            v.push("--".to_owned());
        }
        v.extend(params.files.iter().cloned());
    }
    v
}

/// Whether the operation, as asked, only reads (runs with `GIT_OPTIONAL_LOCKS=0`, no before/after comparison).
pub fn is_read_only(params: &GitParams) -> bool {
    let p = parse(params.operation, &params.args);
    read_only(params.operation, &p)
}

/// Whether the operation, as asked, is a dry run (changes nothing).
pub fn is_dry_run(params: &GitParams) -> bool {
    let p = parse(params.operation, &params.args);
    params.dry_run || p.has(Tag::DryRun)
}

/// The stash subcommand run (`push` when none is written).
pub fn stash_sub(params: &GitParams) -> String {
    parse(params.operation, &params.args)
        .stash_sub
        .unwrap_or_else(|| "push".to_owned())
}

/// A push's target (for the run-time default-branch check).
pub fn push_target_of(params: &GitParams) -> PushTarget {
    push_target(&parse(params.operation, &params.args))
}

/// The stash message written in `args` (`-m`), if any.
pub fn stash_message(params: &GitParams) -> Option<String> {
    parse(params.operation, &params.args)
        .value_of(Tag::Message)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn rules() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tools/git_rules.json"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn params(v: &Value) -> GitParams {
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    fn cases<'a>(r: &'a Value, key: &str) -> &'a Vec<Value> {
        r[key].as_array().unwrap_or_else(|| panic!("no {key}"))
    }

    #[test]
    fn classification_table() {
        let r = rules();
        let mut failures = Vec::new();
        for c in cases(&r, "classify") {
            let want = c[0].as_str().unwrap_or("");
            let (kind, reason) = want.split_once(": ").unwrap_or((want, ""));
            let v = classify(&params(&c[1]));
            let got = if v.blocked.is_some() {
                "blocked"
            } else if v.unclassifiable.is_some() {
                "unclassifiable"
            } else {
                v.risk.as_str()
            };
            if got != kind || !v.reason.contains(reason) {
                failures.push(format!("{}: got {got} ({}), want {want}", c[1], v.reason));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn argv_table() {
        let r = rules();
        let mut failures = Vec::new();
        for c in cases(&r, "argv") {
            let want: Vec<String> = serde_json::from_value(c[1].clone()).unwrap_or_default();
            let got = argv(&params(&c[0]));
            if got != want {
                failures.push(format!("{}: got {got:?}, want {want:?}", c[0]));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn problems_table() {
        let r = rules();
        let mut failures = Vec::new();
        for c in cases(&r, "problems") {
            let p = params(&c[0]);
            let found: Vec<String> = problems(&Request::of(&p))
                .into_iter()
                .map(|pb| {
                    let at = match pb.at {
                        Where::Arg(i) => format!("args[{i}]"),
                        Where::Force => "force".to_owned(),
                        Where::DryRun => "dry_run".to_owned(),
                        Where::Files => "files".to_owned(),
                        Where::CommitMessage => "commit_message".to_owned(),
                        Where::Params => "params".to_owned(),
                    };
                    format!("{at}: {}", pb.message)
                })
                .collect();
            let want: Vec<&str> = c[1]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let ok = if want.is_empty() {
                found.is_empty()
            } else {
                found.iter().any(|f| want.iter().all(|w| f.contains(w)))
            };
            if !ok {
                failures.push(format!("{}: found {found:?}, want {want:?}", c[0]));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn push_targets() {
        let t = |a: &[&str]| {
            let args: Vec<String> = a.iter().map(|s| (*s).to_owned()).collect();
            push_target(&parse(GitOperation::Push, &args))
        };
        assert_eq!(t(&["origin", "a", "b:refs/heads/c"]).branches, ["a", "c"]);
        assert_eq!(
            t(&["origin", "x:refs/tags/v1"]).branches,
            Vec::<String>::new()
        );
        assert!(t(&["origin"]).unknown.is_some());
        assert!(t(&["--tags", "origin"]).unknown.is_none());
        assert!(t(&["origin", "+a"]).forced);
        assert!(t(&["origin", ":a"]).deletes);
        assert_eq!(t(&["origin", "a"]).remote.as_deref(), Some("origin"));
        assert!(t(&["origin", "0123456789abcdef"]).unknown.is_some());
    }

    #[test]
    fn bundles_and_values() {
        let args: Vec<String> = ["-uf", "--push-option", "-x", "origin", "br"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let p = parse(GitOperation::Push, &args);
        assert!(p.unknown.is_empty(), "{:?}", p.unknown);
        assert_eq!(
            p.positionals,
            ["origin", "br"],
            "`-x` is the push option's value"
        );
        assert!(p.has(Tag::Force));
        let p = parse(
            GitOperation::Log,
            &["-n5".to_owned(), "-Sneedle".to_owned()],
        );
        assert!(p.unknown.is_empty() && p.positionals.is_empty(), "{p:?}");
    }
}
