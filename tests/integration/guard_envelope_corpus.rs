//! Issue 27: the labeled envelope corpus, measured. Prints the counts (run
//! `bash bench/envelope_corpus.sh`) and asserts no wrong accept and no fewer
//! exact accepts than before the repair tier counted every well-formed reading.
//!
//! Groups (data in `tests/fixtures/agent_output/`):
//! * `envelope/accept` and `envelope_corpus/unique`: one reading; must be accepted
//!   with exactly the value of `NAME.json`.
//! * `envelope_corpus/two_ways`: strings that close two ways into well-formed JSON;
//!   must be refused (and the refusal should say the answer reads two ways).
//! * `envelope/reject`: must be refused.

use plangate::guard::envelope::{Envelope, parse_envelope};
use std::path::{Path, PathBuf};

/// Exact accepts of main's code before issue 27 (same corpus, same command).
const EXACT_BEFORE: usize = 146;

fn dir(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent_output")
        .join(rel)
}

fn texts(rel: &str) -> Vec<(String, PathBuf)> {
    let d = dir(rel);
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .map(|p| {
            let n = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (n, p)
        })
        .collect();
    out.sort();
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[derive(Default, Debug)]
struct Counts {
    cases: usize,
    exact: usize,
    wrong: usize,
    rejects: usize,
    /// Refusals whose message says the answer reads two ways.
    two_ways_said: usize,
}

fn measure(rel: &str, must_accept: bool, wrong: &mut Vec<String>) -> Counts {
    let mut c = Counts::default();
    for (name, p) in texts(rel) {
        c.cases += 1;
        let text = read(&p);
        match parse_envelope(&text) {
            Ok((got, _)) => {
                let want: Option<Envelope> = must_accept.then(|| {
                    serde_json::from_str(&read(&p.with_extension("json")))
                        .unwrap_or_else(|e| panic!("{rel}/{name}.json: {e}"))
                });
                if want.as_ref() == Some(&got) {
                    c.exact += 1;
                } else {
                    c.wrong += 1;
                    wrong.push(format!("{rel}/{name}: accepted {got:?}"));
                }
            }
            Err(r) => {
                c.rejects += 1;
                // ENVELOPE_CORPUS_VERBOSE=1: why each case was refused.
                if std::env::var_os("ENVELOPE_CORPUS_VERBOSE").is_some() {
                    let first = r.first().map(ToString::to_string).unwrap_or_default();
                    println!("  refused {rel}/{name}: {first}");
                }
                if r.iter().any(|x| x.message.contains("reads two ways")) {
                    c.two_ways_said += 1;
                }
            }
        }
    }
    assert!(c.cases > 0, "{rel}: no cases");
    c
}

#[test]
fn envelope_corpus_counts() {
    let groups = [
        ("envelope/accept", true),
        ("envelope_corpus/unique", true),
        ("envelope_corpus/two_ways", false),
        ("envelope/reject", false),
    ];
    let mut wrong = Vec::new();
    let mut total = Counts::default();
    println!(
        "{:<28} {:>6} {:>6} {:>6} {:>8} {:>10}",
        "group", "cases", "exact", "wrong", "rejects", "two-ways"
    );
    for (rel, must_accept) in groups {
        let c = measure(rel, must_accept, &mut wrong);
        println!(
            "{rel:<28} {:>6} {:>6} {:>6} {:>8} {:>10}",
            c.cases, c.exact, c.wrong, c.rejects, c.two_ways_said
        );
        total.cases += c.cases;
        total.exact += c.exact;
        total.wrong += c.wrong;
        total.rejects += c.rejects;
    }
    println!(
        "{:<28} {:>6} {:>6} {:>6} {:>8}",
        "total", total.cases, total.exact, total.wrong, total.rejects
    );
    for w in &wrong {
        println!("wrong accept: {w}");
    }
    assert!(
        wrong.is_empty(),
        "{} wrong accepts:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        total.exact >= EXACT_BEFORE,
        "exact accepts fell: {} < {EXACT_BEFORE}",
        total.exact
    );
}
