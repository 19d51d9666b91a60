//! The hidden markers that find plangate's comments, notes, issues and pull
//! or merge requests again on a re-run, on either forge: one scheme, so a
//! plan's markers agree whichever forge publishes (`<!-- plangate:PLAN -->`,
//! `<!-- plangate:PLAN:KIND:NAME -->`). Pure.

use crate::model::Report;
use crate::redact;

/// The plan id as it appears in the marker and the check run's name:
/// redacted, then `[A-Za-z0-9._-]` kept, anything else `_`, at most 100 characters (so it
/// can neither close the HTML comment nor break a line).
pub(crate) fn plan_key(r: &Report) -> String {
    // An invalid plan's report may have no id: its file name stands in.
    let stem = std::path::Path::new(&r.plan.path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    let id = r.plan.id.as_deref().or(stem.as_deref()).unwrap_or("plan");
    // Redacted before it is cut or rewritten: a secret in the id is still whole here.
    let id = redact::clean_str(id);
    let key: String = id
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if key.is_empty() {
        "plan".to_owned()
    } else {
        key
    }
}

/// The hidden marker that finds this plan's comment again on a re-run.
pub(crate) fn marker(r: &Report) -> String {
    format!("<!-- plangate:{} -->", plan_key(r))
}

/// The hidden marker a comment, an issue or a pull request of this plan starts with.
pub(crate) fn kind_marker(r: &Report, kind: &str, name: &str) -> String {
    format!("<!-- plangate:{}:{kind}:{name} -->", plan_key(r))
}

/// A short stable key of a title (an issue's marker name): the first 8 bytes
/// of its SHA-256, in hex.
pub(crate) fn title_key(s: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(s.as_bytes())[..8])
}

#[cfg(test)]
mod tests {
    use super::title_key;

    #[test]
    fn a_title_key_is_stable_and_short() {
        // The key published markers already carry: it must never change.
        assert_eq!(title_key("nightly failed"), "2d322959a991252d");
        assert_eq!(title_key(""), "e3b0c44298fc1c14");
        assert_ne!(title_key("a"), title_key("b"));
    }
}
