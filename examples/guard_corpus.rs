#![allow(clippy::print_stdout, clippy::print_stderr)]
//! Counts the guard's verdicts on the envelope and code corpora
//! (`tests/fixtures/agent_output/{envelope,code}/{accept,reject}`).
//!
//! `cargo run --release --example guard_corpus [-- [--list] [CORPUS_DIR]]`
//! (`CORPUS_DIR` defaults to `tests/fixtures/agent_output`)
//!
//! For each corpus: *exact* = an accept case accepted with exactly the expected
//! value (envelope: the JSON written to `parsed.json` equals `NAME.json`, absent
//! keys included; code: the bytes of `NAME.out`); *wrong* = an accept case
//! accepted with another value, or a reject case accepted; *false rejects* = an
//! accept case refused; *rejected* = a reject case refused. The `omit_*` line is
//! the subset of envelope answers without `artifacts` and/or `next_actions`
//! (issue 15 item 6). `--list` names every wrong and falsely rejected case.

use plangate::guard::code::parse_code;
use plangate::guard::envelope::parse_envelope;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Default)]
struct Counts {
    accept_cases: usize,
    exact: usize,
    wrong: usize,
    false_rejects: usize,
    reject_cases: usize,
    rejected: usize,
    notes: Vec<String>,
}

impl Counts {
    fn line(&self, what: &str) -> String {
        format!(
            "{what:<28} accept cases {:>3}: exact {:>3}, wrong {:>2}, false rejects {:>3} | reject cases {:>3}: rejected {:>3}, wrong {:>2}",
            self.accept_cases,
            self.exact,
            self.wrong - self.reject_wrong(),
            self.false_rejects,
            self.reject_cases,
            self.rejected,
            self.reject_wrong(),
        )
    }

    fn reject_wrong(&self) -> usize {
        self.reject_cases - self.rejected
    }
}

/// The `NAME.txt` cases of a corpus directory, sorted.
fn cases(dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .map(|p| {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, p)
        })
        .collect();
    out.sort();
    Ok(out)
}

fn read(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// What the guard made of one accept case: `Some(true)` exact, `Some(false)` wrong, `None` refused.
type Verdict = Option<bool>;

fn envelope_accept(p: &Path) -> Result<Verdict, String> {
    let text = read(p)?;
    let want: serde_json::Value = serde_json::from_str(&read(&p.with_extension("json"))?)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(parse_envelope(&text)
        .ok()
        .map(|(env, _)| serde_json::to_value(&env).is_ok_and(|got| got == want)))
}

/// The step's language of a code case (`NAME.lang`), if any.
fn language(p: &Path) -> Option<String> {
    std::fs::read_to_string(p.with_extension("lang"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn code_accept(p: &Path) -> Result<Verdict, String> {
    let text = read(p)?;
    let want = read(&p.with_extension("out"))?;
    Ok(parse_code(&text, language(p).as_deref())
        .ok()
        .map(|got| got == want))
}

fn envelope_refuses(p: &Path) -> Result<bool, String> {
    Ok(parse_envelope(&read(p)?).is_err())
}

fn code_refuses(p: &Path) -> Result<bool, String> {
    Ok(parse_code(&read(p)?, language(p).as_deref()).is_err())
}

fn tally(
    c: &mut Counts,
    root: &Path,
    accept: &dyn Fn(&Path) -> Result<Verdict, String>,
    refuses: &dyn Fn(&Path) -> Result<bool, String>,
    keep: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    for (name, p) in cases(&root.join("accept"))? {
        if !keep(&name) {
            continue;
        }
        c.accept_cases += 1;
        match accept(&p)? {
            Some(true) => c.exact += 1,
            Some(false) => {
                c.wrong += 1;
                c.notes
                    .push(format!("wrong (accepted another value): {name}"));
            }
            None => {
                c.false_rejects += 1;
                c.notes.push(format!("false reject: {name}"));
            }
        }
    }
    for (name, p) in cases(&root.join("reject"))? {
        if !keep(&name) {
            continue;
        }
        c.reject_cases += 1;
        if refuses(&p)? {
            c.rejected += 1;
        } else {
            c.wrong += 1;
            c.notes
                .push(format!("wrong (accepted a reject case): {name}"));
        }
    }
    Ok(())
}

fn run(list: bool, base: &Path) -> Result<bool, String> {
    let env_root = base.join("envelope");
    let mut all = Counts::default();
    tally(
        &mut all,
        &env_root,
        &envelope_accept,
        &envelope_refuses,
        &|_| true,
    )?;
    let mut omit = Counts::default();
    let is_omit = |n: &str| n.starts_with("omit_") || n.starts_with("tier2_omit_");
    tally(
        &mut omit,
        &env_root,
        &envelope_accept,
        &envelope_refuses,
        &is_omit,
    )?;
    let mut code = Counts::default();
    let code_root = base.join("code");
    tally(&mut code, &code_root, &code_accept, &code_refuses, &|_| {
        true
    })?;
    println!("{}", all.line("envelope"));
    println!("{}", omit.line("  of which omit_* answers"));
    println!("{}", code.line("code"));
    if list {
        for n in all.notes.iter().chain(&code.notes) {
            println!("  {n}");
        }
    }
    Ok(all.wrong == 0 && code.wrong == 0)
}

fn main() -> ExitCode {
    let list = std::env::args().any(|a| a == "--list");
    let base = std::env::args()
        .skip(1)
        .find(|a| a != "--list")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent_output"),
            PathBuf::from,
        );
    match run(list, &base) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("guard_corpus: {e}");
            ExitCode::from(2)
        }
    }
}
