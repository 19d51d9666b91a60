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

/// `\\`, `\t`, `\n` escapes of the real-world TSV sample column.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

/// Rows of `real_world/NAME` (tab-separated, `#` comments), the sample unescaped.
fn real_world(name: &str) -> Vec<Vec<String>> {
    tsv("real_world", name)
}

/// Rows of `DIR/NAME` (tab-separated, `#` comments).
fn tsv(dir_name: &str, name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir(dir_name).join(name)).expect("tsv fixture");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// Samples copied from the test data of other scanners (gitleaks, Kingfisher, TruffleHog,
/// detect-secrets): each is found by its rule. A rule that filters on a checksum or a structure
/// is proven here on samples nobody generated to fit it.
#[test]
fn real_world_positives_are_found_by_their_rule() {
    let s = scanner();
    let rows = real_world("positives.tsv");
    assert!(rows.len() >= 60, "{} real-world positives", rows.len());
    let mut errors = Vec::new();
    for row in &rows {
        let [rule, sample, source] = row.as_slice() else {
            panic!("positives.tsv: want RULE<TAB>SAMPLE<TAB>SOURCE, got {row:?}");
        };
        let text = unescape(sample);
        let found = s.scan(text.as_bytes());
        if !found.iter().any(|f| &f.rule == rule) {
            let got: Vec<String> = found.iter().map(|f| show(f, text.as_bytes())).collect();
            errors.push(format!("{rule} ({source}): got {got:?} in {text:?}"));
        }
    }
    assert!(
        errors.is_empty(),
        "{} misses:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// The same tools' false-positive sets (and their samples that fail a documented checksum)
/// yield nothing.
#[test]
fn real_world_negatives_yield_nothing() {
    let s = scanner();
    let rows = real_world("negatives.tsv");
    assert!(rows.len() >= 80, "{} real-world negatives", rows.len());
    let mut errors = Vec::new();
    for row in &rows {
        let [sample, source, _why] = row.as_slice() else {
            panic!("negatives.tsv: want SAMPLE<TAB>SOURCE<TAB>WHY, got {row:?}");
        };
        let text = unescape(sample);
        let found = s.scan(text.as_bytes());
        if !found.is_empty() {
            let got: Vec<String> = found.iter().map(|f| show(f, text.as_bytes())).collect();
            errors.push(format!("({source}): {got:?} in {text:?}"));
        }
    }
    assert!(
        errors.is_empty(),
        "{} false positives:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// Issue 27's corpus (`precision/`, written by its `gen.py`): each secret is
/// found by its rule, and nothing else is reported beside it (the plain
/// settings of a Kubernetes Secret next to its password stay silent).
#[test]
fn precision_corpus_secrets_are_found_by_their_rule_alone() {
    let s = scanner();
    let rows = tsv("precision", "positives.tsv");
    assert!(rows.len() >= 40, "{} positives", rows.len());
    let mut errors = Vec::new();
    for row in &rows {
        let [rule, sample, family] = row.as_slice() else {
            panic!("positives.tsv: want RULE<TAB>SAMPLE<TAB>FAMILY, got {row:?}");
        };
        let text = unescape(sample);
        let found = s.scan(text.as_bytes());
        if !found.iter().any(|f| &f.rule == rule) || found.iter().any(|f| &f.rule != rule) {
            let got: Vec<String> = found.iter().map(|f| show(f, text.as_bytes())).collect();
            errors.push(format!("{rule} ({family}): got {got:?} in {text:?}"));
        }
    }
    assert!(
        errors.is_empty(),
        "{} errors:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// Issue 27's corpus: names after a secret-like key (identifiers in every
/// casing, the key echoed, secret names, paths and ARNs, references),
/// placeholders, publishable keys and a Kubernetes Secret's plain settings
/// yield nothing.
#[test]
fn precision_corpus_names_and_public_keys_yield_nothing() {
    let s = scanner();
    let rows = tsv("precision", "negatives.tsv");
    assert!(rows.len() >= 90, "{} negatives", rows.len());
    let mut errors = Vec::new();
    for row in &rows {
        let [sample, family, _why] = row.as_slice() else {
            panic!("negatives.tsv: want SAMPLE<TAB>FAMILY<TAB>WHY, got {row:?}");
        };
        let text = unescape(sample);
        let found = s.scan(text.as_bytes());
        if !found.is_empty() {
            let got: Vec<String> = found.iter().map(|f| show(f, text.as_bytes())).collect();
            errors.push(format!("({family}): {got:?} in {text:?}"));
        }
    }
    assert!(
        errors.is_empty(),
        "{} false positives:\n{}",
        errors.len(),
        errors.join("\n")
    );
}
