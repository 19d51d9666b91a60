//! Strict JSON for agent answers, and `parse_json` for `output: json` steps.
//!
//! - [`regions`]: the string-aware scanner that finds top-level `{…}`/`[…]`
//!   regions in prose, and the small helpers around it (BOM, single fence,
//!   junk after a value).
//! - [`checker`]: a strict diagnosing checker (every known JSON extension is
//!   named, never repaired). It is iterative (explicit stack, depth limit 128
//!   like serde_json) and linear in the size of its input. The value itself is
//!   always built by `serde_json` from the exact slice the checker accepted, so
//!   the two must agree.
//! - [`rejections`]: rejections placed at byte offsets and resolved to
//!   line/column once per answer.
//! - this file: the `output: json` mode (find the one value, parse strictly,
//!   validate against the step's schema through [`SchemaCheck`], which the
//!   binary crate implements with the `jsonschema` crate).

mod checker;
mod regions;
mod rejections;

pub(crate) use checker::{Checked, MAX_DEPTH, build_value, check, ptr_escape, whole_value};
pub(crate) use regions::{
    Region, after_bom, is_ws, json_looking, junk_after, scan_regions, single_fence, skip_plain,
    trimmed_range,
};
pub(crate) use rejections::{
    MAX_REPORTED, finish, pending, pending_offset, pos, remap, scrub, shown,
};

use super::{Category, Rejection};
use serde_json::Value;
use std::collections::HashMap;

/// One way an answer's value breaks the step's JSON Schema, as a validator
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The JSON pointer of the value (`""`: the whole value).
    pub instance_path: String,
    /// When the error is properties the schema does not allow: the first of
    /// them (the rejection is then placed at its key).
    pub unexpected: Option<String>,
    /// The validator's message.
    pub message: String,
}

/// A JSON Schema validator for `output: json` (the binary crate's is the
/// `jsonschema` crate, kept out of this one so that it stays pure).
pub trait SchemaCheck {
    /// The ways `value` breaks the schema, in the validator's order. `Err`
    /// (why): the schema itself is invalid.
    fn errors(&self, value: &Value) -> Result<Vec<SchemaError>, String>;
}

/// `output: json`: the answer's single JSON value (found like the envelope, strict parse, no repair),
/// validated against `schema` when given. Parse errors and schema errors are returned together.
pub fn parse_json(answer: &str, schema: Option<&dyn SchemaCheck>) -> Result<Value, Vec<Rejection>> {
    parse_json_inner(answer, schema).map_err(|r| finish(answer, r))
}

fn parse_json_inner(
    answer: &str,
    schema: Option<&dyn SchemaCheck>,
) -> Result<Value, Vec<Rejection>> {
    // Value positions are only needed to place schema errors.
    let depth = if schema.is_some() { MAX_DEPTH } else { 0 };
    let (value, (index, keys), mut rejections) = extract_json(answer, depth)?;
    if let Some(schema) = schema {
        match schema.errors(&value) {
            Err(e) => rejections.push(Rejection::whole(
                Category::Schema,
                format!(
                    "the step's JSON Schema is invalid ({}): this is a plan error, not the agent's; fix the plan",
                    scrub(&e)
                ),
            )),
            Ok(errors) => {
                for err in errors {
                    let mut ptr = err.instance_path;
                    let mut use_keys = false;
                    if let Some(first) = &err.unexpected {
                        ptr = format!("{ptr}/{}", ptr_escape(first));
                        use_keys = true;
                    }
                    let shown = if ptr.is_empty() { "/".to_string() } else { ptr.clone() };
                    let msg = format!(
                        "value at {shown} does not match the schema: {}; change it to satisfy the schema",
                        err.message
                    );
                    let msg = scrub(&msg);
                    let found = if use_keys { keys.get(&ptr) } else { index.get(&ptr) };
                    match found {
                        Some(&off) => rejections.push(pending(off, Category::Schema, msg)),
                        None => rejections.push(Rejection::whole(Category::Schema, msg)),
                    }
                }
            }
        }
    }
    if rejections.is_empty() {
        Ok(value)
    } else {
        Err(rejections)
    }
}

type Extracted = (
    Value,
    (HashMap<String, usize>, HashMap<String, usize>),
    Vec<Rejection>,
);

/// Finds and strictly parses the single JSON value. Duplicate keys come back as
/// rejections next to the value (so schema errors can be reported with them).
fn extract_json(answer: &str, depth: usize) -> Result<Extracted, Vec<Rejection>> {
    let base = after_bom(answer);
    if answer.get(base..).is_none_or(|s| s.trim().is_empty()) {
        return Err(vec![Rejection::whole(
            Category::Empty,
            "the answer is empty: answer with one JSON value",
        )]);
    }
    // 1. The whole answer is one value (scalars allowed).
    if let Some(Ok((v, c))) = whole_value(answer, base, answer.len(), depth) {
        return Ok((v, (c.index, c.keys), Vec::new()));
    }
    // 2. The whole answer is one fenced block holding one value (scalars allowed).
    if let Some((s, e)) = single_fence(answer) {
        match whole_value(answer, s, e, depth) {
            Some(Ok((v, c))) => return Ok((v, (c.index, c.keys), Vec::new())),
            Some(Err(c)) => {
                let (ts, _) = trimmed_range(answer, s, e);
                let first = answer.as_bytes().get(ts).copied();
                if !matches!(first, Some(b'{' | b'[')) && !c.syntax_ok() {
                    return Err(c.problems);
                }
            }
            None => {
                return Err(vec![pending(
                    s,
                    Category::Empty,
                    "the fenced block is empty: put the JSON value inside it",
                )]);
            }
        }
    }
    // 3. Regions in prose.
    let regions = scan_regions(answer, base, b"{[");
    let mut good: Vec<(Region, Value, Checked)> = Vec::new();
    let mut bad: Vec<(Region, Checked)> = Vec::new();
    for r in regions {
        let c = check(answer, r.start, r.end, !r.closed, depth);
        if c.syntax_ok() {
            match build_value(answer, r.start, c.value_end.max(r.start)) {
                Ok(v) => good.push((r, v, c)),
                Err(e) => {
                    let mut c = c;
                    c.problems.push(e);
                    c.fatal = true;
                    bad.push((r, c));
                }
            }
        } else if !r.closed || json_looking(answer, &r) {
            bad.push((r, c));
        }
    }
    let total = good.len() + bad.len();
    if total == 0 {
        return Err(vec![Rejection::whole(
            Category::NotFound,
            "no JSON value found: answer with exactly one JSON object or array (a ```json fenced block is fine)",
        )]);
    }
    if total > 1 {
        let mut starts: Vec<usize> = good
            .iter()
            .map(|g| g.0.start)
            .chain(bad.iter().map(|b| b.0.start))
            .collect();
        starts.sort_unstable();
        let first = starts.first().copied().unwrap_or(0);
        let lc = pos(first);
        let mut out: Vec<Rejection> = starts
            .iter()
            .skip(1)
            .map(|&s| {
                pending(
                    s,
                    Category::Ambiguous,
                    format!("another JSON value starts here (the first at {lc}): answer with exactly one JSON value"),
                )
            })
            .collect();
        for (_, c) in bad {
            out.extend(c.problems);
        }
        return Err(out);
    }
    if let Some((_, v, c)) = good.pop() {
        if let Some(r) = junk_after(answer, c.value_end) {
            let mut all = c.problems;
            all.insert(0, r);
            return Err(all);
        }
        let dups: Vec<Rejection> = c.problems;
        return Ok((v, (c.index, c.keys), dups));
    }
    match bad.pop() {
        Some((r, c)) => {
            let mut p = c.problems;
            if !r.closed {
                truncated_first(answer, r.start, &mut p);
            }
            Err(p)
        }
        None => Err(vec![Rejection::whole(
            Category::NotFound,
            "no JSON value found",
        )]),
    }
}

/// Puts a Truncated rejection first (adding one for the region opened at `start` if needed).
pub(crate) fn truncated_first(answer: &str, start: usize, problems: &mut Vec<Rejection>) {
    if let Some(i) = problems
        .iter()
        .position(|r| r.category == Category::Truncated)
    {
        let t = problems.remove(i);
        problems.insert(0, t);
    } else {
        let lc = pos(start);
        problems.insert(
            0,
            pending(answer.len(),
                Category::Truncated,
                format!("the answer ends before the '{{' at {lc} is closed: send the complete answer, nothing is completed for you"),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_plain_finds_every_special_byte() {
        for special in [b'"', b'\\', b'\n', 0u8, 0x1f] {
            for pos in 0..20 {
                let mut v = vec![b'a'; 20];
                v[pos] = special;
                v.extend_from_slice("é€😀".as_bytes());
                assert_eq!(skip_plain(&v, 0, v.len()), pos);
            }
        }
        let v = "plain ascii and ünïcödé text, no specials".as_bytes();
        assert_eq!(skip_plain(v, 0, v.len()), v.len());
        assert_eq!(skip_plain(v, 3, 10), 10);
    }

    #[test]
    fn scanner_ignores_braces_in_strings() {
        let t = r#"x {"a": "}{\"}"} y {"b": 1}"#;
        let r = scan_regions(t, 0, b"{");
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|r| r.closed));
    }

    #[test]
    fn duplicate_keys_found() {
        let t = r#"{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}"#;
        let c = check(t, 0, t.len(), false, 3);
        let dups = c
            .problems
            .iter()
            .filter(|p| p.category == Category::DuplicateKey)
            .count();
        assert_eq!(dups, 2);
        assert!(!c.fatal);
    }

    #[test]
    fn escaped_keys_are_the_same_key() {
        let t = r#"{"a": 1, "\u0061": 2}"#;
        let c = check(t, 0, t.len(), false, 3);
        assert_eq!(c.problems.len(), 1);
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed() {
        let t = "[".repeat(100_000);
        let c = check(&t, 0, t.len(), true, 3);
        assert!(c.fatal);
    }

    #[test]
    fn scalar_whole_answer() {
        assert_eq!(parse_json(" 42 \n", None), Ok(serde_json::json!(42)));
        assert_eq!(
            parse_json("```\n\"hi\"\n```", None),
            Ok(serde_json::json!("hi"))
        );
        assert!(parse_json("the answer is 42", None).is_err());
    }
}
