//! Git configuration keys (`git -c key=value`, `git config key value`): a
//! short allow-list of harmless keys; any other may make git run a program
//! later or is not one plangate knows, so it cannot be judged.

use super::rules;

/// Whether `key` (lowercase) matches one of `patterns`: equal, or with a `*`
/// that stands for any part of at least nothing (`branch.*.remote`, `alias.*`).
fn any(patterns: &[String], key: &str) -> bool {
    patterns.iter().any(|p| match p.split_once('*') {
        Some((head, tail)) => key.strip_prefix(head).is_some_and(|r| r.ends_with(tail)),
        None => p == key,
    })
}

/// Why setting `key` cannot be judged, or None when it is harmless.
pub fn judge_key(key: &str) -> Option<String> {
    (super::checked().err().map(str::to_owned)).or_else(|| key_problem(key))
}

/// [`judge_key`] without the check of the rules file, for the rules' own use.
pub(super) fn key_problem(key: &str) -> Option<String> {
    let c = &rules::raw().config;
    let lower = key.to_ascii_lowercase();
    let what = if any(&c.runs_programs, &lower) {
        "can make git run a program"
    } else {
        "is not one plangate can judge"
    };
    (!any(&c.harmless, &lower)).then(|| format!("configuration `{key}` {what}"))
}

/// Why `key`, found in a repository's own configuration file, cannot be
/// judged, or None when it is harmless: a key [`judge_key`] accepts or one
/// `git init` and `git clone` write.
pub fn judge_stored_key(key: &str) -> Option<String> {
    (super::checked().err().map(str::to_owned)).or_else(|| stored_problem(key))
}

/// [`judge_stored_key`] without the check of the rules file.
pub(super) fn stored_problem(key: &str) -> Option<String> {
    let layout = &rules::raw().config.layout;
    key_problem(key).filter(|_| !any(layout, &key.to_ascii_lowercase()))
}
