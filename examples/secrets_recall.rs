#![allow(clippy::print_stdout, clippy::print_stderr)]
//! Recall and precision of the built-in secret rules on two corpora:
//!
//! * the project's own fixtures (`tests/fixtures/secrets/{positives,negatives}`, made by
//!   `gen.py`): a label (`LINE RULE` in a `.expected` file) is found when a finding starts on
//!   its line (and "with its rule" when the rule id matches too); every other finding line,
//!   in a positive or a negative file, is a false positive;
//! * the real-world samples (`tests/fixtures/secrets/real_world/{positives,negatives}.tsv`,
//!   copied from the test data of gitleaks, Kingfisher, TruffleHog and detect-secrets): a
//!   positive sample is found when it yields a finding (and "with its rule" when one has the
//!   expected id); a negative sample with any finding is a false positive.
//!
//! `cargo run --release --example secrets_recall [-- [--verbose] [--rules FILE]]`: `--verbose`
//! lists misses and false positives; `--rules FILE` scores that rules file instead of the
//! built-in one (e.g. an older `rules/default.toml`: `git show REV:rules/default.toml`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use plangate::secrets::{Finding, Ruleset, Scanner};

/// Counts for one corpus.
#[derive(Default)]
struct Score {
    labels: usize,
    found: usize,
    found_rule: usize,
    true_pos: usize,
    false_pos: usize,
    notes: Vec<String>,
}

impl Score {
    fn print(&self, name: &str) {
        let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        println!(
            "{name}: recall {:.3} ({}/{}), with the expected rule {:.3}, precision {:.3} ({} true / {} false positives)",
            ratio(self.found, self.labels),
            self.found,
            self.labels,
            ratio(self.found_rule, self.labels),
            ratio(self.true_pos, self.true_pos + self.false_pos),
            self.true_pos,
            self.false_pos,
        );
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/secrets")
}

fn txt_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|x| x == "txt"));
    v.sort();
    v
}

fn show(f: &Finding, text: &[u8]) -> String {
    let end = f.end.min(f.start + 48).min(text.len());
    let s = String::from_utf8_lossy(text.get(f.start..end).unwrap_or_default());
    format!("{}:{} {} `{s}`", f.line, f.column, f.rule)
}

fn own_corpus(scanner: &Scanner) -> Score {
    let mut sc = Score::default();
    for (dir, positive) in [("positives", true), ("negatives", false)] {
        for p in txt_files(&fixtures().join(dir)) {
            let name = p.file_name().map(|n| n.to_string_lossy().to_string());
            let name = name.unwrap_or_default();
            let Ok(text) = std::fs::read(&p) else {
                continue;
            };
            let want: Vec<(usize, String)> = if positive {
                std::fs::read_to_string(p.with_extension("expected"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.split_once(' '))
                    .filter_map(|(a, b)| Some((a.parse().ok()?, b.trim().to_owned())))
                    .collect()
            } else {
                Vec::new()
            };
            let found = scanner.scan(&text);
            for (line, rule) in &want {
                sc.labels += 1;
                if found.iter().any(|f| f.line == *line) {
                    sc.found += 1;
                } else {
                    sc.notes.push(format!("own miss {name}:{line} {rule}"));
                }
                if found.iter().any(|f| f.line == *line && &f.rule == rule) {
                    sc.found_rule += 1;
                }
            }
            let labelled: BTreeSet<usize> = want.iter().map(|(l, _)| *l).collect();
            let mut lines = BTreeSet::new();
            for f in &found {
                if !lines.insert(f.line) {
                    continue;
                }
                if labelled.contains(&f.line) {
                    sc.true_pos += 1;
                } else {
                    sc.false_pos += 1;
                    sc.notes.push(format!("own FP {name} {}", show(f, &text)));
                }
            }
        }
    }
    sc
}

/// `\\`, `\t`, `\n` escapes of the TSV sample column.
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

fn tsv(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(fixtures().join("real_world").join(name));
    text.unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

fn real_world(scanner: &Scanner) -> Score {
    let mut sc = Score::default();
    for row in tsv("positives.tsv") {
        let [rule, sample, source] = row.as_slice() else {
            continue;
        };
        let text = unescape(sample);
        let found = scanner.scan(text.as_bytes());
        sc.labels += 1;
        if found.is_empty() {
            sc.notes
                .push(format!("real miss {rule} ({source}): {text}"));
        } else {
            sc.found += 1;
            sc.true_pos += 1;
        }
        if found.iter().any(|f| &f.rule == rule) {
            sc.found_rule += 1;
        } else if !found.is_empty() {
            let got: Vec<String> = found.iter().map(|f| show(f, text.as_bytes())).collect();
            sc.notes.push(format!("real other rule {rule}: {got:?}"));
        }
    }
    for row in tsv("negatives.tsv") {
        let Some(sample) = row.first() else { continue };
        let text = unescape(sample);
        let found = scanner.scan(text.as_bytes());
        if !found.is_empty() {
            sc.false_pos += 1;
            let got: Vec<String> = found.iter().map(|f| show(f, text.as_bytes())).collect();
            sc.notes.push(format!("real FP {got:?} in: {text}"));
        }
    }
    sc
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let verbose = args.iter().any(|a| a == "--verbose");
    let rules = match args.iter().position(|a| a == "--rules") {
        Some(i) => {
            let path = args.get(i + 1).map(String::as_str).unwrap_or_default();
            let text = std::fs::read_to_string(path).unwrap_or_default();
            match Ruleset::from_toml(&text) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("{path}: {e}");
                    std::process::exit(2);
                }
            }
        }
        None => Ruleset::builtin(),
    };
    let scanner = match Scanner::new(&rules) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let own = own_corpus(&scanner);
    let real = real_world(&scanner);
    own.print("project corpus (tests/fixtures/secrets)");
    real.print("real-world samples (tests/fixtures/secrets/real_world)");
    if verbose {
        for n in own.notes.iter().chain(&real.notes) {
            println!("  {n}");
        }
    }
}
