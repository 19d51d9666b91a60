//! The redacted JSON of a growing report, written again and again without
//! redacting it whole each time.
//!
//! `report.json` and the artifact manifest are rewritten while the run goes
//! on (at most every [`super::FLUSH_INTERVAL`]); redacting the whole text
//! each time made a run's cost grow with the square of its steps. Here each
//! entry of the document's one long list (`steps`, `entries`) is serialized
//! exactly as serde_json's pretty printer writes it inside the document, and
//! redacted on its own; its redacted text is reused while both its bytes and
//! the redaction layer's set of values ([`redact::generation`]) are the same.
//! The rest of the document is redacted whole on every write.
//!
//! Fail-close: an entry cleaned with an older set of values is never reused
//! (the generation is read before cleaning, so a value added meanwhile makes
//! it stale); when a value is added during a write, or the list's place in
//! the document cannot be found exactly once, the write falls back to
//! redacting the whole document, as before.

use serde::Serialize;

use crate::redact;

/// One entry of the list: its bytes as in the document, and them cleaned.
struct Entry {
    raw: Vec<u8>,
    clean: Vec<u8>,
    /// [`redact::generation`] read before `clean` was made.
    generation: u64,
}

/// The cleaned entries of one document's list, kept between writes.
#[derive(Default)]
pub(crate) struct Fragments {
    entries: Vec<Entry>,
}

/// `value` as serde_json's pretty printer (two spaces) writes it as an
/// element `depth` levels deep: every line after the first indented by
/// `2 * depth` spaces. A JSON string holds no raw newline, so only the
/// printer's own line breaks are indented.
fn pretty_at<T: Serialize>(value: &T, depth: usize) -> serde_json::Result<Vec<u8>> {
    let flat = serde_json::to_vec_pretty(value)?;
    let pad = 2 * depth;
    let lines = memchr::memchr_iter(b'\n', &flat).count();
    let mut out = Vec::with_capacity(flat.len() + lines * pad);
    for (i, line) in flat.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
            out.resize(out.len() + pad, b' ');
        }
        out.extend_from_slice(line);
    }
    Ok(out)
}

impl Fragments {
    /// [`Self::render_changed`] with every entry counted as changed.
    #[cfg(test)]
    pub(crate) fn render<S: Serialize, T: Serialize>(
        &mut self,
        skeleton: &S,
        key: &str,
        items: &[T],
    ) -> serde_json::Result<Option<Vec<u8>>> {
        self.render_changed(skeleton, key, items, |_| true)
    }

    /// The pretty JSON of a document (`skeleton`: the document with its
    /// top-level field `key` an empty list) with `items` as that list,
    /// redacted, and a final line break: byte for byte what
    /// `to_vec_pretty` of the whole document, then [`redact::clean`], gives
    /// (but for a secret that would span two entries, which must then
    /// contain plangate's own JSON between them). None when `key` is not a
    /// top-level field of `skeleton` holding `[]`: write the document the
    /// plain way.
    ///
    /// `changed` says which entries may have changed since the last write:
    /// an entry it says is not, and that the last write kept, is not
    /// serialized again (its kept bytes stand for it; they are cleaned again
    /// when the redaction's values grew). The caller answers `true` for
    /// every entry it cannot vouch for; the final, whole write of a document
    /// never comes here.
    pub(crate) fn render_changed<S: Serialize, T: Serialize>(
        &mut self,
        skeleton: &S,
        key: &str,
        items: &[T],
        changed: impl Fn(usize) -> bool,
    ) -> serde_json::Result<Option<Vec<u8>>> {
        let generation = redact::generation();
        let raw_skeleton = serde_json::to_vec_pretty(skeleton)?;
        // A top-level field: two spaces after a line break (strings hold no
        // raw line break, nested fields are indented deeper).
        let marker = format!("\n  {}: []", serde_json::to_string(key)?);
        let Some(raw_at) = find_once(&raw_skeleton, marker.as_bytes()) else {
            // Written the plain way: what is kept no longer matches a write.
            self.entries.clear();
            return Ok(None);
        };
        // Each entry's bytes: kept when unchanged, else serialized now (a
        // fresh one whose bytes are the kept ones keeps its cleaned text).
        self.entries.truncate(items.len());
        let mut dirty = vec![false; items.len()];
        for (i, item) in items.iter().enumerate() {
            if i < self.entries.len() && !changed(i) {
                continue;
            }
            let raw = pretty_at(item, 2)?;
            match self.entries.get_mut(i) {
                Some(e) if e.raw == raw => {}
                Some(e) => {
                    e.raw = raw;
                    dirty[i] = true;
                }
                None => {
                    self.entries.push(Entry {
                        raw,
                        clean: Vec::new(),
                        generation: 0,
                    });
                    dirty[i] = true;
                }
            }
        }
        // The old way: the whole document, cleaned whole.
        let whole = |entries: &[Entry]| -> Vec<u8> {
            let raws: Vec<&[u8]> = entries.iter().map(|e| e.raw.as_slice()).collect();
            let mut doc = splice(&raw_skeleton, raw_at, &marker, &raws);
            doc.push(b'\n');
            redact::clean(&doc).into_owned()
        };
        // Cleaned on its own: the skeleton, then each entry not cached.
        let clean_skeleton = redact::clean(&raw_skeleton).into_owned();
        let Some(at) = find_once(&clean_skeleton, marker.as_bytes()) else {
            // Never reused: the cleaned texts kept may be stale.
            for e in &mut self.entries {
                e.generation = u64::MAX;
            }
            return Ok(Some(whole(&self.entries)));
        };
        for (i, e) in self.entries.iter_mut().enumerate() {
            if !dirty[i] && e.generation == generation {
                continue;
            }
            let before = redact::generation();
            e.clean = redact::clean(&e.raw).into_owned();
            e.generation = before;
        }
        // A value added while cleaning (a rule's find, another thread's):
        // what was cleaned before it may hold it.
        if redact::generation() != generation {
            return Ok(Some(whole(&self.entries)));
        }
        let cleans: Vec<&[u8]> = self.entries.iter().map(|e| e.clean.as_slice()).collect();
        let mut doc = splice(&clean_skeleton, at, &marker, &cleans);
        doc.push(b'\n');
        Ok(Some(doc))
    }
}

/// Where `needle` starts in `hay`, when it is there exactly once.
fn find_once(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let mut it = memchr::memmem::find_iter(hay, needle);
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// `doc` with the marker at `at` (`\n  "key": []`) replaced by the field
/// holding `items`, as the pretty printer writes it.
fn splice<B: AsRef<[u8]>>(doc: &[u8], at: usize, marker: &str, items: &[B]) -> Vec<u8> {
    let head = marker.strip_suffix("[]").unwrap_or(marker);
    let size: usize = items.iter().map(|i| i.as_ref().len() + 6).sum();
    let mut out = Vec::with_capacity(doc.len() + size);
    out.extend_from_slice(doc.get(..at).unwrap_or_default());
    out.extend_from_slice(head.as_bytes());
    if items.is_empty() {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b"\n    " } else { b",\n    " });
            out.extend_from_slice(item.as_ref());
        }
        out.extend_from_slice(b"\n  ]");
    }
    out.extend_from_slice(doc.get(at + marker.len()..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the plain write gives: the whole document, pretty, cleaned whole.
    fn plain(doc: &serde_json::Value) -> Vec<u8> {
        let mut raw = serde_json::to_vec_pretty(doc).unwrap();
        raw.push(b'\n');
        redact::clean(&raw).into_owned()
    }

    fn with(
        skeleton: &serde_json::Value,
        key: &str,
        items: &[serde_json::Value],
    ) -> serde_json::Value {
        let mut doc = skeleton.clone();
        doc[key] = json!(items);
        doc
    }

    /// Entries of every shape the printer writes differently: nested
    /// objects and lists, empty ones, escaped line breaks and quotes,
    /// non-ASCII text, scalars.
    fn shapes() -> Vec<serde_json::Value> {
        vec![
            json!({"id": "a", "outputs": {}, "artifacts": [], "n": 1}),
            json!({"id": "b\nc \"q\" é 💡", "nested": {"list": [1, [2, []], {"k": null}]}}),
            json!("a bare string"),
            json!(42),
            json!([]),
            json!({}),
            json!(null),
        ]
    }

    #[test]
    fn the_document_is_byte_for_byte_the_plain_one() {
        let skeleton = json!({"a": 1, "steps": [], "z": {"in": [1, 2]}, "steps_x": "steps"});
        let all = shapes();
        let mut cache = Fragments::default();
        for n in 0..=all.len() {
            let items = &all[..n];
            let got = cache.render(&skeleton, "steps", items).unwrap().unwrap();
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&plain(&with(&skeleton, "steps", items))),
                "{n} entries"
            );
        }
        // Shrinking and changing entries too.
        let changed = vec![json!({"id": "b", "changed": true}), json!(7)];
        let got = cache.render(&skeleton, "steps", &changed).unwrap().unwrap();
        assert_eq!(got, plain(&with(&skeleton, "steps", &changed)));
    }

    /// A list that is not a top-level field holding `[]` is not placed:
    /// the caller writes the plain way.
    #[test]
    fn a_list_it_cannot_place_is_left_to_the_plain_write() {
        let mut cache = Fragments::default();
        let items = [json!(1)];
        for skeleton in [
            json!({"other": []}),
            json!({"inner": {"steps": []}}),
            json!({"steps": [1]}),
            json!({"steps": {}}),
        ] {
            assert!(
                cache.render(&skeleton, "steps", &items).unwrap().is_none(),
                "{skeleton}"
            );
        }
    }

    /// An entry cleaned before a value was known is cleaned again once it
    /// is: a value remembered between two writes, and a value that a rule
    /// finds in a later entry of the same write, are masked in every entry.
    #[test]
    fn an_entry_cleaned_with_fewer_values_is_never_reused() {
        let _ = redact::init();
        let skeleton = json!({"steps": []});
        let mut cache = Fragments::default();
        let early = json!({"out": "given later: Zq8vKp3mWt5x"});
        let first = cache
            .render(&skeleton, "steps", std::slice::from_ref(&early))
            .unwrap()
            .unwrap();
        assert!(memchr::memmem::find(&first, b"Zq8vKp3mWt5x").is_some());
        redact::remember_secrets(["Zq8vKp3mWt5x"]);
        let second = cache
            .render(&skeleton, "steps", std::slice::from_ref(&early))
            .unwrap()
            .unwrap();
        assert!(memchr::memmem::find(&second, b"Zq8vKp3mWt5x").is_none());
        assert!(memchr::memmem::find(&second, b"[REDACTED]").is_some());

        // A piece of a token only a rule recognises (whole, in a later entry).
        let token = "AKIAW4RZ8QK2MXT7PLB5";
        let piece = &token[4..16];
        let before = json!({"out": format!("a piece: {piece}")});
        let third = cache
            .render(&skeleton, "steps", std::slice::from_ref(&before))
            .unwrap()
            .unwrap();
        assert!(memchr::memmem::find(&third, piece.as_bytes()).is_some());
        let later = json!({"out": format!("the token: {token}")});
        let fourth = cache
            .render(&skeleton, "steps", &[before.clone(), later.clone()])
            .unwrap()
            .unwrap();
        let text = String::from_utf8_lossy(&fourth);
        assert!(!text.contains(piece), "{text}");
        assert!(!text.contains(token), "{text}");
        // And the next write, from the cache, too.
        let fifth = cache
            .render(&skeleton, "steps", &[before, later])
            .unwrap()
            .unwrap();
        assert!(!String::from_utf8_lossy(&fifth).contains(piece));
    }

    /// Unchanged entries are reused while no value is added (other tests
    /// of this process add values: retried until a quiet moment).
    #[test]
    fn unchanged_entries_are_reused() {
        let skeleton = json!({"steps": []});
        let items: Vec<_> = (0..50).map(|i| json!({"id": format!("s{i}")})).collect();
        let mut cache = Fragments::default();
        let mut reused = false;
        for _ in 0..200 {
            cache.render(&skeleton, "steps", &items).unwrap().unwrap();
            let stamps: Vec<u64> = cache.entries.iter().map(|e| e.generation).collect();
            let g = redact::generation();
            if stamps.iter().all(|&s| s == g) {
                let before: Vec<*const u8> =
                    cache.entries.iter().map(|e| e.clean.as_ptr()).collect();
                cache.render(&skeleton, "steps", &items).unwrap().unwrap();
                let after: Vec<*const u8> =
                    cache.entries.iter().map(|e| e.clean.as_ptr()).collect();
                if redact::generation() == g {
                    assert_eq!(before, after, "entries cleaned again with the same values");
                    reused = true;
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(reused, "never a quiet moment to check");
    }

    /// An entry the caller vouches for is not serialized again, and the
    /// document is still byte for byte the plain one when the hints are
    /// true: a changed entry, new ones, a shorter list.
    #[test]
    fn entries_said_unchanged_are_not_serialized_again() {
        use std::cell::Cell;
        struct Counted<'a>(serde_json::Value, &'a Cell<usize>);
        impl Serialize for Counted<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.1.set(self.1.get() + 1);
                self.0.serialize(s)
            }
        }
        let skeleton = json!({"a": 1, "steps": []});
        let calls = Cell::new(0);
        let mut values: Vec<serde_json::Value> = (0..20)
            .map(|i| json!({"id": format!("s{i}"), "n": i}))
            .collect();
        let mut cache = Fragments::default();
        let counted = |v: &[serde_json::Value]| -> Vec<Counted<'_>> {
            v.iter().map(|x| Counted(x.clone(), &calls)).collect()
        };
        let got = cache
            .render_changed(&skeleton, "steps", &counted(&values), |_| false)
            .unwrap()
            .unwrap();
        assert_eq!(got, plain(&with(&skeleton, "steps", &values)));
        assert_eq!(calls.get(), 20, "a first write serializes every entry");
        calls.set(0);
        values[5]["n"] = json!("changed");
        values.push(json!({"id": "new"}));
        let got = cache
            .render_changed(&skeleton, "steps", &counted(&values), |i| i == 5)
            .unwrap()
            .unwrap();
        assert_eq!(got, plain(&with(&skeleton, "steps", &values)));
        assert_eq!(calls.get(), 2, "only the changed entry and the new one");
        values.truncate(3);
        let got = cache
            .render_changed(&skeleton, "steps", &counted(&values), |_| false)
            .unwrap()
            .unwrap();
        assert_eq!(got, plain(&with(&skeleton, "steps", &values)));
    }
}
