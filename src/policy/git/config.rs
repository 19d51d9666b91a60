//! Git configuration keys, as set by `git -c key=value`, `--config-env` or
//! `git config key value`: a short allow-list of keys that change nothing
//! but presentation, identity or ordinary behaviour; every other key may make
//! git run a program later (hooks, pagers, editors, ssh, fsmonitor, filter,
//! diff and merge drivers, credential helpers, aliases, includes) or is not
//! one plangate knows, so it cannot be judged.

/// Keys (lowercase) that are harmless to set.
const HARMLESS: &[&str] = &[
    "user.name",
    "user.email",
    "user.useconfigonly",
    "author.name",
    "author.email",
    "committer.name",
    "committer.email",
    "core.quotepath",
    "core.autocrlf",
    "core.safecrlf",
    "core.eol",
    "core.filemode",
    "core.ignorecase",
    "core.abbrev",
    "core.longpaths",
    "core.precomposeunicode",
    "core.whitespace",
    "init.defaultbranch",
    "push.default",
    "push.autosetupremote",
    "push.followtags",
    "pull.rebase",
    "pull.ff",
    "fetch.prune",
    "fetch.prunetags",
    "fetch.parallel",
    "merge.ff",
    "merge.conflictstyle",
    "rebase.autostash",
    "rebase.autosquash",
    "rebase.updaterefs",
    "diff.renames",
    "diff.algorithm",
    "diff.noprefix",
    "status.showuntrackedfiles",
    "log.date",
    "log.decorate",
    "tag.sort",
    "gc.auto",
    "maintenance.auto",
    "protocol.version",
    "http.postbuffer",
    "pack.threads",
    "feature.manyfiles",
    "index.version",
    "versionsort.suffix",
    "column.ui",
];

/// Sections whose every key is harmless (`color.*`, `advice.*`).
const HARMLESS_SECTIONS: &[&str] = &["color", "advice", "i18n"];

/// Keys or sections that make git run a program (lowercase; `*` is a subsection).
const RUNS_PROGRAMS: &[&str] = &[
    "core.hookspath",
    "core.sshcommand",
    "core.fsmonitor",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "core.alternaterefscommand",
    "sequence.editor",
    "diff.external",
    "credential.helper",
    "gpg.program",
    "uploadpack.packobjectshook",
    "alias.",
    "pager.",
    "filter.",
    "diff.",
    "merge.",
    "include.",
    "includeif.",
    "credential.",
    "gpg.",
    "protocol.",
    "remote.",
    "trailer.",
    "mergetool.",
    "difftool.",
    "sendemail.",
    "browser.",
    "man.",
    "interactive.difffilter",
];

/// Why setting `key` cannot be judged, or None when it is harmless.
pub(crate) fn judge_key(key: &str) -> Option<String> {
    let lower = key.to_ascii_lowercase();
    let section = lower.split('.').next().unwrap_or("");
    if HARMLESS.contains(&lower.as_str()) || HARMLESS_SECTIONS.contains(&section) {
        return None;
    }
    if lower.starts_with("branch.")
        && (lower.ends_with(".remote") || lower.ends_with(".merge") || lower.ends_with(".rebase"))
    {
        return None;
    }
    let runs = RUNS_PROGRAMS
        .iter()
        .any(|k| lower == *k || (k.ends_with('.') && lower.starts_with(k)));
    Some(if runs {
        format!("configuration `{key}` can make git run a program")
    } else {
        format!("configuration `{key}` is not one plangate can judge")
    })
}

/// Keys `git init` and `git clone` write into a new repository's own
/// configuration (lowercase; `*` is any subsection): they run nothing.
const LAYOUT: &[&str] = &[
    "core.repositoryformatversion",
    "core.bare",
    "core.logallrefupdates",
    "core.symlinks",
    "extensions.objectformat",
    "extensions.refstorage",
    "remote.*.url",
    "remote.*.fetch",
];

/// Why `key`, found in a repository's own configuration file, may make git
/// run a program (or cannot be judged), or None when it is harmless: the
/// keys [`judge_key`] accepts and those `git init` and `git clone` write.
/// `key` is `section.key` or `section.subsection.key`.
pub(crate) fn judge_stored_key(key: &str) -> Option<String> {
    let why = judge_key(key)?;
    let lower = key.to_ascii_lowercase();
    let (first, rest) = lower.split_once('.').unwrap_or((lower.as_str(), ""));
    let last = rest.rsplit('.').next().unwrap_or("");
    let shape = if rest.contains('.') {
        format!("{first}.*.{last}")
    } else {
        lower.clone()
    };
    if LAYOUT.contains(&shape.as_str()) {
        return None;
    }
    Some(why)
}

#[cfg(test)]
mod tests {
    use super::{judge_key, judge_stored_key};

    #[test]
    fn stored_keys() {
        for k in [
            "core.repositoryformatversion",
            "core.bare",
            "core.filemode",
            "remote.origin.url",
            "remote.origin.fetch",
            "branch.main.remote",
            "user.name",
        ] {
            assert_eq!(judge_stored_key(k), None, "{k}");
        }
        for k in [
            "core.fsmonitor",
            "core.hooksPath",
            "remote.origin.uploadpack",
            "remote.origin.receivepack",
            "alias.st",
            "include.path",
            "includeIf.gitdir:/x.path",
            "filter.x.clean",
            "core.url",
            "unknown.key",
        ] {
            assert!(judge_stored_key(k).is_some(), "{k}");
        }
    }

    #[test]
    fn keys() {
        assert_eq!(judge_key("user.name"), None);
        assert_eq!(judge_key("User.Email"), None);
        assert_eq!(judge_key("color.ui"), None);
        assert_eq!(judge_key("branch.main.remote"), None);
        for k in [
            "core.hooksPath",
            "alias.co",
            "core.sshCommand",
            "core.fsmonitor",
            "filter.lfs.clean",
            "diff.x.textconv",
            "core.pager",
            "include.path",
        ] {
            assert!(
                judge_key(k).is_some_and(|w| w.contains("run a program")),
                "{k}"
            );
        }
        assert!(
            judge_key("foo.bar")
                .is_some_and(|w| w.contains("cannot judge") || w.contains("not one"))
        );
    }
}
