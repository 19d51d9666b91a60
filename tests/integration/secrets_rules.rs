//! Fixture-driven tests: every positive file yields exactly its expected findings
//! (`LINE RULE-ID` per line), every negative file yields none. All mismatches are
//! reported together.

use std::path::Path;

use plangate::secrets::{Finding, Ruleset, Scanner};

fn dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/secrets")
        .join(name)
}

fn scanner() -> Scanner {
    Scanner::new(&Ruleset::builtin()).expect("builtin scanner")
}

fn txt_files(d: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(d)
        .expect("fixture dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    v.sort();
    v
}

fn show(f: &Finding, text: &[u8]) -> String {
    let s = String::from_utf8_lossy(&text[f.start..f.end.min(f.start + 40)]);
    format!("{} {} `{}`", f.line, f.rule, s)
}

#[test]
fn positives() {
    let s = scanner();
    let files = txt_files(&dir("positives"));
    assert!(files.len() >= 100);
    let mut errors = Vec::new();
    for p in &files {
        let text = std::fs::read(p).expect("read");
        let exp_path = p.with_extension("expected");
        let exp = std::fs::read_to_string(&exp_path).expect("expected file");
        let mut want: Vec<(usize, String)> = exp
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let (a, b) = l.split_once(' ').expect("LINE RULE");
                (a.parse().expect("line number"), b.trim().to_string())
            })
            .collect();
        want.sort();
        let found = s.scan(&text);
        let mut got: Vec<(usize, String)> =
            found.iter().map(|f| (f.line, f.rule.clone())).collect();
        got.sort();
        if got != want {
            let detail: Vec<String> = found.iter().map(|f| show(f, &text)).collect();
            errors.push(format!(
                "{}: want {:?}, got {:?}",
                p.file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
                want,
                detail
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn negatives() {
    let s = scanner();
    let files = txt_files(&dir("negatives"));
    assert!(files.len() >= 60);
    let mut errors = Vec::new();
    for p in &files {
        let text = std::fs::read(p).expect("read");
        let found = s.scan(&text);
        if !found.is_empty() {
            let detail: Vec<String> = found.iter().map(|f| show(f, &text)).collect();
            errors.push(format!(
                "{}: {:?}",
                p.file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
                detail
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "{} false positives:\n{}",
        errors.len(),
        errors.join("\n")
    );
}
