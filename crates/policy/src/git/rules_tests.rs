//! Tests of the rules file's loader and checker.

use super::*;
use crate::git::{check_examples, checked};

/// (entries, option rows written) of the file, for the test.
fn sizes() -> (usize, usize) {
    let Ok(file) = toml::from_str::<Rules>(TEXT) else {
        return (0, 0);
    };
    let rows = |l: &Lists| {
        l.tags.values().map(Vec::len).sum::<usize>()
            + l.refused.values().map(Vec::len).sum::<usize>()
    };
    let n = file.groups.values().map(rows).sum::<usize>()
        + file.subs.iter().map(|s| rows(&s.lists)).sum::<usize>();
    (file.subs.len(), n)
}

/// A fact a condition may name that the classifier does not compute would
/// never hold: each holds for some arguments.
#[test]
fn every_fact_can_hold() {
    let config = crate::git::parse::Opt {
        name: "-c".to_owned(),
        value: None,
        tag: Tag::Config,
        tokens: Vec::new(),
        at: 0,
    };
    let p = crate::git::Parsed {
        positionals: ["alias.x", "+:main", "a*"].map(String::from).to_vec(),
        runtime_positionals: vec![0],
        paths: vec!["p".to_owned()],
        options: vec![config],
        runtime_options: vec!["$X".to_owned()],
        unknown: vec!["--x".to_owned()],
        ..Default::default()
    };
    let x = crate::git::Extra {
        has_files: true,
        ..Default::default()
    };
    for f in FACTS.split_whitespace() {
        let j = crate::git::risk::Judged(&p, x, "push");
        assert!(j.fact(f).is_some(), "{f} does not hold");
    }
}

#[test]
fn the_rules_load_and_every_example_holds() {
    if let Err(e) = checked() {
        panic!("{e}");
    }
    let (subs, rows) = sizes();
    assert!(subs > 100 && rows > 1000, "{subs} entries, {rows} rows");
}

#[test]
fn a_bad_file_is_an_error_naming_the_entry() {
    let cut = TEXT.replace(
        "examples = [\"safe: status\"",
        "examples = [\"dangerous: status\"",
    );
    assert_ne!(cut, TEXT, "the status example moved");
    let r = parse(&cut).expect("still parses");
    let e = check_examples(&r).expect_err("a wrong example");
    assert!(e.contains("subcommand `status`") && e.contains(FILE), "{e}");
    let e = parse(&TEXT.replacen(
        "name = \"clean\"\nrule = \"writes\"",
        "name = \"clean\"\nrule = \"writes\"\nforse = [\"-f\"]",
        1,
    ))
    .expect_err("unknown key");
    assert!(e.starts_with(FILE) && e.contains("forse"), "{e}");
    let e = parse(&TEXT.replacen(
        "\"-p\", \"-u\", \"--patch\"",
        "\"-p\", \"-u\", \"--patch <x>\"",
        1,
    ))
    .expect_err("spelling");
    assert!(
        e.contains("line ") && e.contains("[groups.diff]") && e.contains("--patch <x>"),
        "{e}"
    );
    let e = parse(&TEXT.replacen(
        "options = [\"diff\", \"diff-programs\"]",
        "options = [\"dif\"]",
        1,
    ))
    .expect_err("group");
    assert!(e.contains("subcommand `diff`: no group `dif`"), "{e}");
    let e = parse(&TEXT.replacen(
        "\"--cached\", \"--staged\"",
        "\"--cached\", \"--stat\", \"--staged\"",
        1,
    ))
    .expect_err("two meanings");
    assert!(e.contains("`--stat` is listed twice"), "{e}");
    let e = parse(&TEXT.replacen(
        "if = \"dry-run\", risk = \"safe\", why = \"git add",
        "if = \"dry-rum\", risk = \"safe\", why = \"git add",
        1,
    ))
    .expect_err("condition");
    assert!(e.contains("line ") && e.contains("dry-rum"), "{e}");
    let e = parse(&TEXT.replacen("why = \"git {name} only", "why = \"git {nam} only", 1))
        .expect_err("placeholder");
    assert!(
        e.contains("subcommand `show`") && e.contains("{nam}"),
        "{e}"
    );
    let e = parse(&TEXT.replacen(
        "{ risk = \"moderate\", why = \"git add changes",
        "{ if = \"-N\", risk = \"moderate\", why = \"git add changes",
        1,
    ))
    .expect_err("no last case");
    assert!(e.contains("subcommand `add`: its last case"), "{e}");
    let e = parse(&TEXT.replacen("pager = { why", "# pager = { why", 1)).expect_err("refusal");
    assert!(
        e.contains("subcommand `grep`: no [refusals] row `pager`"),
        "{e}"
    );
    let e = parse(&TEXT.replacen(
        "{ if = \"dry-run\", risk = \"safe\", why = \"git {name} --dry",
        "{ if = \"dry-rum\", risk = \"safe\", why = \"git {name} --dry",
        1,
    ))
    .expect_err("rule condition");
    assert!(e.contains("line ") && e.contains("dry-rum"), "{e}");
    let e = parse(&TEXT.replacen(
        "why = \"changes the current branch and the working tree (recoverable from the reflog)\"\n",
        "",
        1,
    ))
    .expect_err("no why");
    assert!(e.contains("subcommand `merge`: `why` is required"), "{e}");
    let e = parse("not toml [").expect_err("syntax");
    assert!(e.starts_with(FILE), "{e}");
}

#[test]
fn every_case_needs_an_example_it_decides() {
    let cut = TEXT.replacen(
        "\"dangerous: reset --merge\"",
        "\"dangerous: reset --hard\"",
        1,
    );
    assert_ne!(cut, TEXT);
    let e = check_examples(&parse(&cut).expect("parses")).expect_err("case 2 untested");
    assert!(
        e.contains("subcommand `reset`: no example is decided by its case 2"),
        "{e}"
    );
}

#[test]
fn not_examples_are_checked() {
    let cut = TEXT.replacen(
        "not_examples = [\"status --no-such-option\"]",
        "not_examples = [\"status --short\"]",
        1,
    );
    assert_ne!(cut, TEXT);
    let e = check_examples(&parse(&cut).expect("parses")).expect_err("known option");
    assert!(e.contains("status --short"), "{e}");
}

#[test]
fn stored_examples_are_checked() {
    let cut = TEXT.replacen("\"harmless: core.bare\"", "\"runs: core.bare\"", 1);
    assert_ne!(cut, TEXT);
    let e = check_examples(&parse(&cut).expect("parses")).expect_err("wrong label");
    assert!(
        e.contains("runs: core.bare") && e.contains("harmless"),
        "{e}"
    );
}
