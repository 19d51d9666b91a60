//! Data-driven fixture tests: one test per verdict directory. Adding a case is
//! adding files; every mismatch of a directory is reported in one panic.
//!
//! * `agent_output/envelope/accept/NAME.txt` + `NAME.json` (the exact Envelope,
//!   which is also exactly what `parsed.json` holds: an absent `artifacts` or
//!   `next_actions` stays absent); names starting with `tier2_` must be
//!   accepted by tier 2 (`Tier::Recovered`), others by tier 1.
//! * `agent_output/envelope/reject/NAME.txt` + `NAME.expected` (category of the
//!   first rejection; optional `LINE:COL` on line 2: a rejection of that category there).
//! * `agent_output/json/{accept,reject}/` the same for `parse_json`, with an
//!   optional `NAME.schema.json`.

use plangate::guard::Rejection;
use plangate::guard::envelope::{Envelope, Tier, parse_envelope, tier3_failure};
use plangate::guard::json::parse_json;
use std::path::{Path, PathBuf};

fn dir(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent_output")
        .join(rel)
}

/// The `NAME.txt` files of a directory, sorted.
fn cases(rel: &str) -> Vec<(String, PathBuf)> {
    let d = dir(rel);
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .map(|p| {
            (
                p.file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                p,
            )
        })
        .collect();
    out.sort();
    out
}

fn read(p: &Path) -> String {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{}: not UTF-8: {e}", p.display()))
}

fn sibling(p: &Path, ext: &str) -> PathBuf {
    p.with_extension(ext)
}

fn show(r: &[Rejection]) -> String {
    r.iter()
        .map(|x| format!("    {x}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks a refusal against `NAME.expected`; returns a mismatch description.
fn check_expected(name: &str, expected_file: &Path, got: &[Rejection]) -> Option<String> {
    let exp = read(expected_file);
    let mut lines = exp.lines();
    let cat = lines.next().unwrap_or("").trim().to_string();
    let pos = lines
        .next()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string);
    let Some(first) = got.first() else {
        return Some(format!("{name}: refused with no rejection"));
    };
    for r in got {
        if r.message.contains('\n') || r.message.trim().is_empty() {
            return Some(format!(
                "{name}: message not one non-empty line: {:?}",
                r.message
            ));
        }
    }
    if first.category.as_str() != cat {
        return Some(format!(
            "{name}: expected first category {cat}, got:\n{}",
            show(got)
        ));
    }
    if let Some(pos) = pos {
        let hit = got
            .iter()
            .any(|r| r.category.as_str() == cat && format!("{}:{}", r.line, r.column) == pos);
        if !hit {
            return Some(format!(
                "{name}: expected a {cat} rejection at {pos}, got:\n{}",
                show(got)
            ));
        }
    }
    None
}

fn finish(what: &str, total: usize, failures: Vec<String>) {
    assert!(total > 0, "{what}: no cases found");
    assert!(
        failures.is_empty(),
        "{what}: {} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{what}: {total} cases ok");
}

#[test]
fn envelope_accept() {
    let list = cases("envelope/accept");
    let mut failures = Vec::new();
    for (name, p) in &list {
        let text = read(p);
        let expected_json = read(&sibling(p, "json"));
        let (expected, expected_value): (Envelope, serde_json::Value) = match (
            serde_json::from_str(&expected_json),
            serde_json::from_str(&expected_json),
        ) {
            (Ok(e), Ok(v)) => (e, v),
            (Err(e), _) | (_, Err(e)) => {
                failures.push(format!("{name}: bad NAME.json: {e}"));
                continue;
            }
        };
        let want_tier = if name.starts_with("tier2_") {
            Tier::Recovered
        } else {
            Tier::Strict
        };
        match parse_envelope(&text) {
            Ok((env, tier)) => {
                let written = serde_json::to_value(&env).unwrap_or_default();
                if env != expected {
                    failures.push(format!(
                        "{name}: envelope differs:\n    got  {env:?}\n    want {expected:?}"
                    ));
                } else if written != expected_value {
                    failures.push(format!(
                        "{name}: parsed.json differs:\n    got  {written}\n    want {expected_value}"
                    ));
                } else if tier != want_tier {
                    failures.push(format!(
                        "{name}: accepted by {tier:?}, expected {want_tier:?}"
                    ));
                }
            }
            Err(r) => failures.push(format!("{name}: refused:\n{}", show(&r))),
        }
    }
    finish("envelope/accept", list.len(), failures);
}

#[test]
fn envelope_reject() {
    let list = cases("envelope/reject");
    let mut failures = Vec::new();
    for (name, p) in &list {
        let text = read(p);
        match parse_envelope(&text) {
            Ok((env, tier)) => failures.push(format!("{name}: accepted ({tier:?}): {env:?}")),
            Err(r) => {
                if let Some(f) = check_expected(name, &sibling(p, "expected"), &r) {
                    failures.push(f);
                }
                let t3 = tier3_failure(&r);
                if t3
                    .actions()
                    .iter()
                    .chain(std::iter::once(&t3.summary))
                    .any(|s| s.contains('\n'))
                {
                    failures.push(format!("{name}: tier3 envelope has a multi-line string"));
                }
            }
        }
    }
    finish("envelope/reject", list.len(), failures);
}

fn schema_of(p: &Path) -> Option<serde_json::Value> {
    let s = p.with_extension("schema.json");
    s.exists()
        .then(|| serde_json::from_str(&read(&s)).unwrap_or_else(|e| panic!("{}: {e}", s.display())))
}

#[test]
fn json_accept() {
    let list = cases("json/accept");
    let mut failures = Vec::new();
    for (name, p) in &list {
        let text = read(p);
        let expected: serde_json::Value = match serde_json::from_str(&read(&sibling(p, "json"))) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: bad NAME.json: {e}"));
                continue;
            }
        };
        match parse_json(&text, schema_of(p).as_ref()) {
            Ok(v) if v == expected => {}
            Ok(v) => failures.push(format!(
                "{name}: value differs:\n    got  {v}\n    want {expected}"
            )),
            Err(r) => failures.push(format!("{name}: refused:\n{}", show(&r))),
        }
    }
    finish("json/accept", list.len(), failures);
}

#[test]
fn json_reject() {
    let list = cases("json/reject");
    let mut failures = Vec::new();
    for (name, p) in &list {
        let text = read(p);
        match parse_json(&text, schema_of(p).as_ref()) {
            Ok(v) => failures.push(format!("{name}: accepted: {v}")),
            Err(r) => {
                if let Some(f) = check_expected(name, &sibling(p, "expected"), &r) {
                    failures.push(f);
                }
            }
        }
    }
    finish("json/reject", list.len(), failures);
}
