//! Data-driven corpus for `guard::code::parse_code`.
//!
//! `tests/fixtures/agent_output/code/accept/NAME.txt` must parse to exactly the
//! bytes of `NAME.out`; `reject/NAME.txt` must be refused with the category on
//! the first line of `NAME.expected` and, if there is a second line `LINE:COL`,
//! the first rejection at that position. `NAME.lang` (optional) holds the
//! step's language. Each test walks a whole directory and reports every
//! mismatch in one panic.

use std::fs;
use std::path::{Path, PathBuf};

use plangate::guard::code::parse_code;

fn dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent_output/code")
        .join(kind)
}

/// The `.txt` cases of a directory, sorted by name.
fn cases(kind: &str) -> Vec<(String, PathBuf)> {
    let mut cases: Vec<(String, PathBuf)> = fs::read_dir(dir(kind))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .map(|path| {
            (
                path.file_stem().unwrap().to_string_lossy().into_owned(),
                path,
            )
        })
        .collect();
    cases.sort();
    cases
}

fn language(path: &Path) -> Option<String> {
    fs::read_to_string(path.with_extension("lang"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn show(s: &str) -> String {
    let shown: String = s.chars().take(200).collect();
    format!(
        "{shown:?}{}",
        if s.chars().count() > 200 { "..." } else { "" }
    )
}

#[test]
fn accept_corpus() {
    let cases = cases("accept");
    assert!(
        cases.len() >= 30,
        "accept corpus too small: {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for (name, path) in &cases {
        let answer = fs::read_to_string(path).unwrap();
        let expected = fs::read_to_string(path.with_extension("out")).unwrap();
        let lang = language(path);
        match parse_code(&answer, lang.as_deref()) {
            Ok(got) if got == expected => {}
            Ok(got) => failures.push(format!(
                "{name}: expected {}\n    got {}",
                show(&expected),
                show(&got)
            )),
            Err(rejections) => {
                let shown: Vec<String> = rejections.iter().map(ToString::to_string).collect();
                failures.push(format!("{name}: rejected: {}", shown.join(" | ")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} accept cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn reject_corpus() {
    let cases = cases("reject");
    assert!(
        cases.len() >= 30,
        "reject corpus too small: {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for (name, path) in &cases {
        let answer = fs::read_to_string(path).unwrap();
        let expected = fs::read_to_string(path.with_extension("expected")).unwrap();
        let mut expected_lines = expected.lines();
        let category = expected_lines.next().unwrap_or("").trim().to_string();
        let position = expected_lines
            .next()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let lang = language(path);
        match parse_code(&answer, lang.as_deref()) {
            Ok(got) => failures.push(format!(
                "{name}: expected {category}, accepted {}",
                show(&got)
            )),
            Err(rejections) => {
                let Some(first) = rejections.first() else {
                    failures.push(format!("{name}: rejected with an empty list"));
                    continue;
                };
                let got_position = format!("{}:{}", first.line, first.column);
                let shown: Vec<String> = rejections.iter().map(ToString::to_string).collect();
                if first.category.as_str() != category
                    || position.is_some_and(|p| p != got_position)
                {
                    failures.push(format!(
                        "{name}: expected {category} {}, got {}",
                        position.unwrap_or(""),
                        shown.join(" | ")
                    ));
                }
                for r in &rejections {
                    if r.message.trim().is_empty() || r.message.contains('\n') {
                        failures.push(format!("{name}: message must be one non-empty line: {r:?}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} reject cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
