//! The one redaction layer: every byte plangate writes (report, manifest,
//! audit log, console lines, validate and scan output) passes through
//! [`clean`] on its way out.
//!
//! It scans the text with the built-in rules and also replaces every secret
//! value detected anywhere earlier in the run (artifacts, agent files), so a
//! secret that only a whole-file scan could recognise is still caught when a
//! piece of it shows up in a message. Replacements keep nothing of the value.

use std::borrow::Cow;
use std::sync::{Mutex, OnceLock};

use aho_corasick::AhoCorasick;

use crate::secrets::Scanner;

struct Known {
    values: Vec<Vec<u8>>,
    matcher: Option<AhoCorasick>,
}

fn scanner() -> Option<&'static Scanner> {
    crate::scan::builtin_scanner()
}

fn known() -> &'static Mutex<Known> {
    static K: OnceLock<Mutex<Known>> = OnceLock::new();
    K.get_or_init(|| {
        Mutex::new(Known {
            values: Vec::new(),
            matcher: None,
        })
    })
}

/// Remember secret values found elsewhere, so they are replaced wherever they appear.
pub fn remember(values: impl IntoIterator<Item = Vec<u8>>) {
    let Ok(mut k) = known().lock() else { return };
    let mut changed = false;
    for v in values {
        // Very short values would redact ordinary text; rules never yield them.
        if v.len() >= 8 && !k.values.contains(&v) {
            k.values.push(v);
            changed = true;
        }
    }
    if changed {
        k.matcher = AhoCorasick::new(&k.values).ok();
    }
}

/// `bytes` with every detected or remembered secret replaced by `[REDACTED:<rule>]`.
pub fn clean(bytes: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Cow<'_, [u8]> = Cow::Borrowed(bytes);
    if let Some(s) = scanner() {
        let found = s.scan(&out);
        if !found.is_empty() {
            remember(
                found
                    .iter()
                    .filter_map(|f| out.get(f.start..f.end).map(<[u8]>::to_vec)),
            );
            out = Cow::Owned(crate::secrets::redact(&out, &found));
        }
    }
    if let Ok(k) = known().lock()
        && let Some(m) = &k.matcher
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
pub fn clean_str(s: &str) -> Cow<'_, str> {
    match clean(s.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(s),
        Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
    }
}
