//! Option tables of the subcommands that change the repository or the
//! working tree (merge, rebase, cherry-pick, rm, mv, clean, switch, clone,
//! worktree, submodule, ...), with their rules.

use super::super::options::{
    Refusal as R, Refused, Spec,
    Tag::{Config, Discards, DryRun, Force, Plain as P, RunsProgram, WritesPath},
    Takes::{Attached as A, No as N, Value as V},
};
use super::{Rule, Sub};

const QUIET: &[Spec] = &[
    ("-q", N, P),
    ("--quiet", N, P),
    ("-v", N, P),
    ("--verbose", N, P),
];
const GPG: &[Refused] = &[("-S", A, R::Gpg), ("--gpg-sign", A, R::Gpg)];

/// Options of the sequencer commands (`merge`, `rebase`, `cherry-pick`, `revert`).
const SEQUENCER: &[Spec] = &[
    ("--continue", N, P),
    ("--abort", N, P),
    ("--skip", N, P),
    ("--quit", N, P),
    ("-s", V, P),
    ("--strategy", V, P),
    ("-X", V, P),
    ("--strategy-option", V, P),
    ("--signoff", N, P),
    ("--no-signoff", N, P),
    ("--no-gpg-sign", N, P),
    ("-e", N, P),
    ("--edit", N, P),
    ("--no-edit", N, P),
    ("--allow-empty", N, P),
    ("--ff", N, P),
    ("--no-ff", N, P),
    ("--rerere-autoupdate", N, P),
    ("--no-rerere-autoupdate", N, P),
    ("--cleanup", V, P),
];

const MERGE: &[Spec] = &[
    ("--commit", N, P),
    ("--no-commit", N, P),
    ("--ff-only", N, P),
    ("-m", V, P),
    ("--message", V, P),
    ("-F", V, P),
    ("--file", V, P),
    ("--squash", N, P),
    ("--no-squash", N, P),
    ("--stat", N, P),
    ("-n", N, P),
    ("--no-stat", N, P),
    ("--log", A, P),
    ("--no-log", N, P),
    ("--verify", N, P),
    ("--no-verify", N, P),
    ("--allow-unrelated-histories", N, P),
    ("--autostash", N, P),
    ("--no-autostash", N, P),
    ("--into-name", V, P),
    ("--no-verify-signatures", N, P),
];
const MERGE_REFUSED: &[Refused] = &[
    ("-S", A, R::Gpg),
    ("--gpg-sign", A, R::Gpg),
    ("--verify-signatures", N, R::Gpg),
];

const REBASE: &[Spec] = &[
    ("--onto", V, P),
    ("--keep-base", N, P),
    ("--root", N, P),
    ("--autosquash", N, P),
    ("--no-autosquash", N, P),
    ("--autostash", N, P),
    ("--no-autostash", N, P),
    ("--keep-empty", N, P),
    ("--no-keep-empty", N, P),
    ("--empty", V, P),
    ("--update-refs", N, P),
    ("--no-update-refs", N, P),
    ("-f", N, P),
    ("--force-rebase", N, P),
    ("--no-ff", N, P),
    ("--fork-point", N, P),
    ("--no-fork-point", N, P),
    ("-m", N, P),
    ("--merge", N, P),
    ("--apply", N, P),
    ("-i", N, P),
    ("--interactive", N, P),
    ("-r", N, P),
    ("--rebase-merges", A, P),
    ("--no-rebase-merges", N, P),
    ("--committer-date-is-author-date", N, P),
    ("--ignore-date", N, P),
    ("--reset-author-date", N, P),
    ("--reapply-cherry-picks", N, P),
    ("--no-reapply-cherry-picks", N, P),
    ("--stat", N, P),
    ("-n", N, P),
    ("--no-stat", N, P),
    ("--no-verify", N, P),
    ("--verify", N, P),
    ("--whitespace", V, P),
    ("-C", A, P),
    ("--ignore-whitespace", N, P),
    ("--edit-todo", N, P),
    ("--show-current-patch", N, P),
    ("-x", V, RunsProgram),
    ("--exec", V, RunsProgram),
];

const CHERRY_PICK: &[Spec] = &[
    ("-n", N, P),
    ("--no-commit", N, P),
    ("-x", N, P),
    ("-m", V, P),
    ("--mainline", V, P),
    ("-s", N, P),
    ("--keep-redundant-commits", N, P),
    ("--empty", V, P),
    ("--allow-empty-message", N, P),
];

const REVERT: &[Spec] = &[
    ("-n", N, P),
    ("--no-commit", N, P),
    ("-m", V, P),
    ("--mainline", V, P),
    ("-s", N, P),
    ("--reference", N, P),
];

const RM: &[Spec] = &[
    ("-f", N, Force),
    ("--force", N, Force),
    ("-n", N, DryRun),
    ("--dry-run", N, DryRun),
    ("-r", N, P),
    ("--cached", N, P),
    ("--ignore-unmatch", N, P),
    ("--sparse", N, P),
    ("--pathspec-from-file", V, P),
    ("--pathspec-file-nul", N, P),
];

const MV: &[Spec] = &[
    ("-f", N, Force),
    ("--force", N, Force),
    ("-k", N, P),
    ("-n", N, DryRun),
    ("--dry-run", N, DryRun),
    ("--sparse", N, P),
];

const CLEAN: &[Spec] = &[
    ("-f", N, Force),
    ("--force", N, Force),
    ("-n", N, DryRun),
    ("--dry-run", N, DryRun),
    ("-d", N, P),
    ("-x", N, P),
    ("-X", N, P),
    ("-i", N, P),
    ("--interactive", N, P),
    ("-e", V, P),
    ("--exclude", V, P),
];

const SWITCH: &[Spec] = &[
    ("-c", V, P),
    ("--create", V, P),
    ("-C", V, Force),
    ("--force-create", V, Force),
    ("-d", N, P),
    ("--detach", N, P),
    ("--guess", N, P),
    ("--no-guess", N, P),
    ("-f", N, Discards),
    ("--force", N, Discards),
    ("--discard-changes", N, Discards),
    ("-m", N, P),
    ("--merge", N, P),
    ("--conflict", V, P),
    ("--progress", N, P),
    ("--no-progress", N, P),
    ("-t", N, P),
    ("--track", A, P),
    ("--no-track", N, P),
    ("--orphan", V, P),
    ("--ignore-other-worktrees", N, P),
];

const CLONE: &[Spec] = &[
    ("-l", N, P),
    ("--local", N, P),
    ("--no-local", N, P),
    ("--no-hardlinks", N, P),
    ("-s", N, P),
    ("--shared", N, P),
    ("--reference", V, P),
    ("--dissociate", N, P),
    ("-n", N, P),
    ("--no-checkout", N, P),
    ("--bare", N, P),
    ("--mirror", N, P),
    ("-o", V, P),
    ("--origin", V, P),
    ("-b", V, P),
    ("--branch", V, P),
    ("--revision", V, P),
    ("--depth", V, P),
    ("--shallow-since", V, P),
    ("--shallow-exclude", V, P),
    ("--single-branch", N, P),
    ("--no-single-branch", N, P),
    ("--no-tags", N, P),
    ("--tags", N, P),
    ("--recurse-submodules", A, P),
    ("--shallow-submodules", N, P),
    ("--no-shallow-submodules", N, P),
    ("--remote-submodules", N, P),
    ("--filter", V, P),
    ("--also-filter-submodules", N, P),
    ("-j", V, P),
    ("--jobs", V, P),
    ("--sparse", N, P),
    ("--progress", N, P),
    ("--no-progress", N, P),
    ("-c", V, Config),
    ("--config", V, Config),
    ("-u", V, RunsProgram),
    ("--upload-pack", V, RunsProgram),
    ("--template", V, RunsProgram),
    ("--separate-git-dir", V, P),
];

const INIT: &[Spec] = &[
    ("-b", V, P),
    ("--initial-branch", V, P),
    ("--bare", N, P),
    ("--shared", A, P),
    ("--object-format", V, P),
    ("--ref-format", V, P),
    ("--separate-git-dir", V, P),
    ("--template", V, RunsProgram),
];

const WORKTREE_ADD: &[Spec] = &[
    ("-b", V, P),
    ("-B", V, Force),
    ("-f", N, Force),
    ("--force", N, Force),
    ("-d", N, P),
    ("--detach", N, P),
    ("--checkout", N, P),
    ("--no-checkout", N, P),
    ("--lock", N, P),
    ("--reason", V, P),
    ("--orphan", N, P),
    ("--track", N, P),
    ("--no-track", N, P),
    ("--guess-remote", N, P),
    ("--no-guess-remote", N, P),
    ("--relative-paths", N, P),
];
const FORCE: &[Spec] = &[("-f", N, Force), ("--force", N, Force)];
const WORKTREE_LIST: &[Spec] = &[("--porcelain", N, P), ("-z", N, P), ("--expire", V, P)];
const EXPIRE: &[Spec] = &[
    ("-n", N, DryRun),
    ("--dry-run", N, DryRun),
    ("--expire", V, P),
];

const SUBMODULE: &[Spec] = &[
    ("--recursive", N, P),
    ("--init", N, P),
    ("--remote", N, P),
    ("-f", N, Force),
    ("--force", N, Force),
    ("--cached", N, P),
    ("--depth", V, P),
    ("-j", V, P),
    ("--jobs", V, P),
    ("-b", V, P),
    ("--branch", V, P),
    ("--name", V, P),
    ("--reference", V, P),
    ("--rebase", N, P),
    ("--merge", N, P),
    ("--checkout", N, P),
    ("-N", N, P),
    ("--no-fetch", N, P),
    ("--single-branch", N, P),
    ("--all", N, P),
    ("--filter", V, P),
];

const REMOTE_ADD: &[Spec] = &[
    ("-t", V, P),
    ("-m", V, P),
    ("-f", N, P),
    ("--tags", N, P),
    ("--no-tags", N, P),
    ("--mirror", A, P),
];
const REMOTE_SET_URL: &[Spec] = &[("--push", N, P), ("--add", N, P), ("--delete", N, P)];
const REMOTE_READ: &[Spec] = &[("-n", N, P), ("--push", N, P), ("--all", N, P)];
const REMOTE_SET_HEAD: &[Spec] = &[
    ("-a", N, P),
    ("--auto", N, P),
    ("-d", N, P),
    ("--delete", N, P),
];
const REMOTE_PRUNE: &[Spec] = &[
    ("-n", N, DryRun),
    ("--dry-run", N, DryRun),
    ("-p", N, P),
    ("--prune", N, P),
];

const ARCHIVE: &[Spec] = &[
    ("--format", V, P),
    ("-l", N, P),
    ("--list", N, P),
    ("--prefix", V, P),
    ("--add-file", V, P),
    ("--add-virtual-file", V, P),
    ("--worktree-attributes", N, P),
    ("--mtime", V, P),
    ("-o", V, WritesPath),
    ("--output", V, WritesPath),
    ("--remote", V, RunsProgram),
    ("--exec", V, RunsProgram),
];

const SPARSE: &[Spec] = &[
    ("--cone", N, P),
    ("--no-cone", N, P),
    ("--sparse-index", N, P),
    ("--no-sparse-index", N, P),
    ("--skip-checks", N, P),
    ("--stdin", N, P),
];

const fn sub(name: &'static str, known: &'static [&'static [Spec]], rule: Rule) -> Sub {
    Sub {
        name,
        known,
        refused: &[],
        abbrev: true,
        rule,
    }
}

const MERGES: &str =
    "changes the current branch and the working tree (recoverable from the reflog)";
const REASON: &[Spec] = &[("--reason", V, P)];
const NOTHING: &[Spec] = &[];

/// The entries that change the repository.
pub(super) const SUBS: &[Sub] = &[
    Sub {
        name: "merge",
        known: &[SEQUENCER, MERGE, QUIET],
        refused: &[MERGE_REFUSED],
        abbrev: true,
        rule: Rule::Writes(MERGES),
    },
    Sub {
        name: "rebase",
        known: &[SEQUENCER, REBASE, QUIET],
        refused: &[GPG],
        abbrev: true,
        rule: Rule::Writes("rewrites the current branch's commits (recoverable from the reflog)"),
    },
    Sub {
        name: "cherry-pick",
        known: &[SEQUENCER, CHERRY_PICK, QUIET],
        refused: &[GPG],
        abbrev: true,
        rule: Rule::Writes(MERGES),
    },
    Sub {
        name: "revert",
        known: &[SEQUENCER, REVERT, QUIET],
        refused: &[GPG],
        abbrev: true,
        rule: Rule::Writes(MERGES),
    },
    Sub {
        name: "am",
        known: &[
            SEQUENCER,
            QUIET,
            &[
                ("-3", N, P),
                ("--3way", N, P),
                ("-k", N, P),
                ("--keep", N, P),
                ("--keep-cr", N, P),
                ("-c", N, P),
                ("--scissors", N, P),
                ("--whitespace", V, P),
                ("--directory", V, P),
                ("--exclude", V, P),
                ("--include", V, P),
                ("--resolved", N, P),
                ("-r", N, P),
                ("--empty", V, P),
            ],
        ],
        refused: &[
            GPG,
            &[
                ("-i", N, R::Interactive),
                ("--interactive", N, R::Interactive),
            ],
        ],
        abbrev: true,
        rule: Rule::Writes("applies patches as commits"),
    },
    sub(
        "rm",
        &[RM, QUIET],
        Rule::Writes("removes tracked files from the working tree and the index"),
    ),
    sub("mv", &[MV, QUIET], Rule::Writes("moves tracked files")),
    sub(
        "clean",
        &[CLEAN, QUIET],
        Rule::Writes("deletes untracked files (git refuses without --force)"),
    ),
    sub(
        "switch",
        &[SWITCH, QUIET],
        Rule::Writes("switches branches (it refuses to lose uncommitted changes)"),
    ),
    sub(
        "clone",
        &[CLONE, QUIET],
        Rule::Network("copies a repository over the network"),
    ),
    sub("init", &[INIT, QUIET], Rule::Writes("creates a repository")),
    sub("worktree list", &[WORKTREE_LIST, QUIET], Rule::Reads),
    sub(
        "worktree add",
        &[WORKTREE_ADD, QUIET],
        Rule::Writes("creates a working tree"),
    ),
    sub(
        "worktree remove",
        &[FORCE],
        Rule::Writes("removes a clean working tree"),
    ),
    sub(
        "worktree move",
        &[FORCE],
        Rule::Writes("moves a working tree"),
    ),
    sub(
        "worktree prune",
        &[EXPIRE, QUIET],
        Rule::Writes("forgets working trees that are gone"),
    ),
    sub(
        "worktree lock",
        &[REASON],
        Rule::Writes("locks a working tree"),
    ),
    sub(
        "worktree unlock",
        &[NOTHING],
        Rule::Writes("unlocks a working tree"),
    ),
    sub(
        "worktree repair",
        &[NOTHING],
        Rule::Writes("repairs working tree links"),
    ),
    sub("submodule status", &[SUBMODULE, QUIET], Rule::Reads),
    sub(
        "submodule summary",
        &[
            SUBMODULE,
            QUIET,
            &[("-n", V, P), ("--summary-limit", V, P), ("--files", N, P)],
        ],
        Rule::Reads,
    ),
    sub(
        "submodule init",
        &[SUBMODULE, QUIET],
        Rule::Writes("registers submodules in the configuration"),
    ),
    sub(
        "submodule update",
        &[SUBMODULE, QUIET],
        Rule::Network("fetches and checks out submodules"),
    ),
    sub(
        "submodule sync",
        &[SUBMODULE, QUIET],
        Rule::Writes("updates submodule URLs"),
    ),
    sub(
        "submodule add",
        &[SUBMODULE, QUIET],
        Rule::Network("clones a submodule over the network"),
    ),
    sub(
        "submodule deinit",
        &[SUBMODULE, QUIET],
        Rule::Writes("removes a submodule's working tree"),
    ),
    sub(
        "submodule absorbgitdirs",
        &[SUBMODULE, QUIET],
        Rule::Writes("moves submodule git directories"),
    ),
    sub(
        "submodule set-url",
        &[SUBMODULE, QUIET],
        Rule::Writes("changes a submodule's URL"),
    ),
    sub(
        "submodule set-branch",
        &[SUBMODULE, QUIET, &[("-d", N, P), ("--default", N, P)]],
        Rule::Writes("changes a submodule's branch"),
    ),
    sub(
        "submodule foreach",
        &[SUBMODULE, QUIET],
        Rule::RunsCommands("runs a command in every submodule"),
    ),
    sub("remote", &[QUIET], Rule::Reads),
    sub(
        "remote show",
        &[REMOTE_READ],
        Rule::Network("queries a remote over the network"),
    ),
    sub("remote get-url", &[REMOTE_READ], Rule::Reads),
    sub("remote add", &[REMOTE_ADD], Rule::Writes("adds a remote")),
    sub(
        "remote remove",
        &[NOTHING],
        Rule::Writes("removes a remote and its remote-tracking branches"),
    ),
    sub(
        "remote rm",
        &[NOTHING],
        Rule::Writes("removes a remote and its remote-tracking branches"),
    ),
    sub(
        "remote rename",
        &[&[("--progress", N, P), ("--no-progress", N, P)]],
        Rule::Writes("renames a remote"),
    ),
    sub(
        "remote set-url",
        &[REMOTE_SET_URL],
        Rule::Writes("changes a remote's URL"),
    ),
    sub(
        "remote set-head",
        &[REMOTE_SET_HEAD],
        Rule::Writes("sets a remote's default branch"),
    ),
    sub(
        "remote set-branches",
        &[&[("--add", N, P)]],
        Rule::Writes("changes a remote's tracked branches"),
    ),
    sub(
        "remote prune",
        &[REMOTE_PRUNE],
        Rule::Network("deletes stale remote-tracking branches"),
    ),
    sub(
        "remote update",
        &[REMOTE_PRUNE],
        Rule::Network("fetches over the network"),
    ),
    sub("archive", &[ARCHIVE, QUIET], Rule::Reads),
    sub("sparse-checkout list", &[NOTHING], Rule::Reads),
    sub("sparse-checkout check-rules", &[SPARSE], Rule::Reads),
    sub(
        "sparse-checkout set",
        &[SPARSE],
        Rule::Writes("changes which files are checked out"),
    ),
    sub(
        "sparse-checkout add",
        &[SPARSE],
        Rule::Writes("changes which files are checked out"),
    ),
    sub(
        "sparse-checkout init",
        &[SPARSE],
        Rule::Writes("changes which files are checked out"),
    ),
    sub(
        "sparse-checkout reapply",
        &[SPARSE],
        Rule::Writes("changes which files are checked out"),
    ),
    sub(
        "sparse-checkout disable",
        &[NOTHING],
        Rule::Writes("checks out every file"),
    ),
    sub("notes", &[NOTHING], Rule::Reads),
    sub("notes list", &[NOTHING], Rule::Reads),
    sub("notes show", &[NOTHING], Rule::Reads),
    sub(
        "notes add",
        &[
            FORCE,
            &[
                ("-m", V, P),
                ("-F", V, P),
                ("-C", V, P),
                ("-c", V, P),
                ("--allow-empty", N, P),
            ],
        ],
        Rule::Writes("adds a note"),
    ),
    sub(
        "notes remove",
        &[&[("--ignore-missing", N, P), ("--stdin", N, P)]],
        Rule::Writes("removes a note"),
    ),
    sub(
        "prune",
        &[EXPIRE, QUIET, &[("--progress", N, P)]],
        Rule::Writes("deletes unreachable objects"),
    ),
    sub(
        "bisect run",
        &[NOTHING],
        Rule::RunsCommands("runs a command on each commit"),
    ),
    sub(
        "bisect start",
        &[&[
            ("--term-old", V, P),
            ("--term-new", V, P),
            ("--no-checkout", N, P),
            ("--first-parent", N, P),
        ]],
        Rule::Writes("checks out commits to bisect"),
    ),
    sub(
        "bisect good",
        &[NOTHING],
        Rule::Writes("checks out commits to bisect"),
    ),
    sub(
        "bisect bad",
        &[NOTHING],
        Rule::Writes("checks out commits to bisect"),
    ),
    sub(
        "bisect new",
        &[NOTHING],
        Rule::Writes("checks out commits to bisect"),
    ),
    sub(
        "bisect old",
        &[NOTHING],
        Rule::Writes("checks out commits to bisect"),
    ),
    sub(
        "bisect skip",
        &[NOTHING],
        Rule::Writes("checks out commits to bisect"),
    ),
    sub("bisect reset", &[NOTHING], Rule::Writes("ends a bisection")),
    sub("bisect log", &[NOTHING], Rule::Reads),
    sub(
        "update-ref",
        &[
            QUIET,
            &[
                ("-d", N, P),
                ("-m", V, P),
                ("--no-deref", N, P),
                ("--create-reflog", N, P),
                ("--stdin", N, P),
                ("-z", N, P),
                ("--batch-updates", N, P),
            ],
        ],
        Rule::Dangerous("moves or deletes any ref without git's checks"),
    ),
    sub(
        "replace",
        &[
            FORCE,
            &[
                ("-d", N, P),
                ("--delete", N, P),
                ("-l", N, P),
                ("--list", N, P),
                ("--format", V, P),
                ("-g", N, P),
                ("--graft", N, P),
                ("--convert-graft-file", N, P),
                ("--raw", N, P),
            ],
        ],
        Rule::Dangerous("makes git read other objects in place of existing ones"),
    ),
    sub(
        "filter-branch",
        &[NOTHING],
        Rule::RunsCommands("rewrites history running the filter commands it is given"),
    ),
    sub(
        "maintenance run",
        &[
            QUIET,
            &[
                ("--auto", N, P),
                ("--schedule", V, P),
                ("--task", V, P),
                ("--detach", N, P),
                ("--no-detach", N, P),
            ],
        ],
        Rule::Writes("repacks the repository"),
    ),
    sub(
        "maintenance start",
        &[&[("--scheduler", V, P)]],
        Rule::Dangerous("schedules background jobs on this machine"),
    ),
    sub(
        "maintenance register",
        &[&[("--config-file", V, P)]],
        Rule::Dangerous("schedules background jobs on this machine"),
    ),
    sub(
        "maintenance stop",
        &[NOTHING],
        Rule::Writes("stops background maintenance"),
    ),
    sub(
        "maintenance unregister",
        &[&[("--config-file", V, P), ("--force", N, P)]],
        Rule::Writes("stops background maintenance"),
    ),
];
