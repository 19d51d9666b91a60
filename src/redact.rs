//! The one redaction layer: every byte plangate writes (report, manifest,
//! audit log, console lines, every stdout and stderr line through
//! `output`) passes through [`clean`] on its way out.
//!
//! It scans the text with the built-in rules and also replaces every secret
//! value detected anywhere earlier in the run (artifacts, agent files), so a
//! secret that only a whole-file scan could recognise is still caught when a
//! piece of it shows up in a message. Replacements keep nothing of the value.
//!
//! It fails closed: the built-in rules are parsed, regex-checked and compiled
//! once by [`init`], which `plangate` calls before anything else and which
//! stops the program (internal error) when they are broken. Nothing here
//! skips the rule scan.

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use aho_corasick::AhoCorasick;

use crate::secrets::{RulesError, Ruleset, Scanner};

/// The built-in secret rules cannot be used: plangate must not write anything.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BrokenRules {
    /// `rules/default.toml` does not parse or a regex of it is invalid.
    #[error("the built-in secret rules do not parse: {0}")]
    Rules(RulesError),
    /// The scanner refused the rules (its error is text: `secrets::Scanner::new`).
    #[error("the built-in secret rules do not compile: {0}")]
    Scanner(String),
}

/// Compile a parsed (or refused) rule set into the scanner [`init`] keeps.
fn compile(rules: Result<&Ruleset, &RulesError>) -> Result<Scanner, BrokenRules> {
    let rules = rules.map_err(|e| BrokenRules::Rules(e.clone()))?;
    Scanner::new(rules).map_err(BrokenRules::Scanner)
}

/// Check and compile the built-in rules (once per process). `plangate` calls
/// this at startup and exits with an internal error when it fails.
pub(crate) fn init() -> Result<&'static Scanner, BrokenRules> {
    static S: OnceLock<Result<Scanner, BrokenRules>> = OnceLock::new();
    S.get_or_init(|| compile(Ruleset::builtin_checked()))
        .as_ref()
        .map_err(Clone::clone)
}

/// The built-in scanner. Never skipped: if the built-in rules are broken this
/// panics (the binary has already stopped at [`init`] in that case).
pub fn builtin_scanner() -> &'static Scanner {
    match init() {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

struct Known {
    values: Vec<Vec<u8>>,
    matcher: Option<AhoCorasick>,
}

fn known() -> MutexGuard<'static, Known> {
    static K: OnceLock<Mutex<Known>> = OnceLock::new();
    K.get_or_init(|| {
        Mutex::new(Known {
            values: Vec::new(),
            matcher: None,
        })
    })
    .lock()
    // A panic elsewhere while holding the lock leaves a usable list: keep redacting.
    .unwrap_or_else(PoisonError::into_inner)
}

/// Remember secret values found elsewhere, so they are replaced wherever they appear.
pub(crate) fn remember(values: impl IntoIterator<Item = Vec<u8>>) {
    let mut k = known();
    let mut changed = false;
    for v in values {
        // Very short values would redact ordinary text; rules never yield them.
        if v.len() >= 8 && !k.values.contains(&v) {
            k.values.push(v);
            changed = true;
        }
    }
    if changed {
        match AhoCorasick::new(&k.values) {
            Ok(m) => k.matcher = Some(m),
            // Only a size limit can refuse it; a value that cannot be matched must not leak.
            Err(e) => panic!("cannot index the remembered secret values: {e}"),
        }
    }
}

/// `bytes` with every detected or remembered secret replaced by `[REDACTED:<rule>]`.
pub fn clean(bytes: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Cow<'_, [u8]> = Cow::Borrowed(bytes);
    let found = builtin_scanner().scan(&out);
    if !found.is_empty() {
        remember(
            found
                .iter()
                .filter_map(|f| out.get(f.start..f.end).map(<[u8]>::to_vec)),
        );
        out = Cow::Owned(crate::secrets::redact(&out, &found));
    }
    let k = known();
    if let Some(m) = &k.matcher
        && m.is_match(&*out)
    {
        let mut buf = Vec::with_capacity(out.len());
        m.replace_all_with_bytes(&out, &mut buf, |_, _, dst| {
            dst.extend_from_slice(b"[REDACTED]");
            true
        });
        out = Cow::Owned(buf);
    }
    out
}

/// [`clean`] for text.
pub(crate) fn clean_str(s: &str) -> Cow<'_, str> {
    match clean(s.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(s),
        Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_rules_compile() {
        assert!(init().is_ok());
    }

    #[test]
    fn a_broken_rule_set_is_an_error_not_a_skip() {
        let broken = "[[rules]]\nid = \"x-rule\"\ndescription = \"x\"\nkeywords = [\"abc\"]\nregex = '''(?P<secret>abc[0-9'''\n";
        let err = compile(Ruleset::from_toml(broken).as_ref()).map(|_| ());
        assert!(
            matches!(err, Err(BrokenRules::Rules(RulesError::Regex { .. }))),
            "{err:?}"
        );
        let not_toml = compile(Ruleset::from_toml("[[rules]\n").as_ref()).map(|_| ());
        assert!(matches!(
            not_toml,
            Err(BrokenRules::Rules(RulesError::Toml(_)))
        ));
    }

    #[test]
    fn remembered_values_are_replaced() {
        remember([b"hunter2-but-longer".to_vec()]);
        assert_eq!(
            clean_str("password: hunter2-but-longer!"),
            "password: [REDACTED]!"
        );
    }
}
