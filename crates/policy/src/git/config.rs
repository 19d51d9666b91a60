//! Git configuration keys, as set by `git -c key=value`, `--config-env` or
//! `git config key value`: a short allow-list of keys that change nothing
//! but presentation, identity or ordinary behaviour; every other key may make
//! git run a program later (hooks, pagers, editors, ssh, fsmonitor, filter,
//! diff and merge drivers, credential helpers, aliases, includes) or is not
//! one plangate knows, so it cannot be judged.

use super::rules;

/// Whether `key` (lowercase) matches `pattern`: equal, or with a `*` that
/// stands for any part of at least nothing (`branch.*.remote`, `alias.*`).
fn matches(pattern: &str, key: &str) -> bool {
    match pattern.split_once('*') {
        Some((head, tail)) => {
            key.len() >= head.len() + tail.len() && key.starts_with(head) && key.ends_with(tail)
        }
        None => pattern == key,
    }
}

fn any(patterns: &[String], key: &str) -> bool {
    patterns.iter().any(|p| matches(p, key))
}

/// Why setting `key` cannot be judged, or None when it is harmless (every
/// key cannot be judged when the rules file does not load).
pub fn judge_key(key: &str) -> Option<String> {
    match super::checked() {
        Ok(_) => key_problem(key),
        Err(e) => Some(e.to_owned()),
    }
}

/// [`judge_key`] without the check of the rules file, for the rules' own use.
pub(super) fn key_problem(key: &str) -> Option<String> {
    let c = &rules::raw().config;
    let lower = key.to_ascii_lowercase();
    if any(&c.harmless, &lower) {
        return None;
    }
    Some(if any(&c.runs_programs, &lower) {
        format!("configuration `{key}` can make git run a program")
    } else {
        format!("configuration `{key}` is not one plangate can judge")
    })
}

/// Why `key`, found in a repository's own configuration file, may make git
/// run a program (or cannot be judged), or None when it is harmless: the
/// keys [`judge_key`] accepts and those `git init` and `git clone` write.
/// `key` is `section.key` or `section.subsection.key`.
pub fn judge_stored_key(key: &str) -> Option<String> {
    match super::checked() {
        Ok(_) => stored_problem(key),
        Err(e) => Some(e.to_owned()),
    }
}

/// [`judge_stored_key`] without the check of the rules file.
pub(super) fn stored_problem(key: &str) -> Option<String> {
    let why = key_problem(key)?;
    let lower = key.to_ascii_lowercase();
    if any(&rules::raw().config.layout, &lower) {
        return None;
    }
    Some(why)
}
