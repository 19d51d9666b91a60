//! Both routes agree: a git command judged as a bash step (the classifier)
//! and the same argv run by the `git` tool (the git analysis) get the same risk.

use crate::classify::{ClassifyContext, classify_bash};
use crate::git::{Op, Request, classify};
use serde_json::Value;
use std::path::Path;

fn bash_label(argv: &[String]) -> String {
    let line: Vec<String> = std::iter::once("git".to_owned())
        .chain(
            argv.iter()
                .map(|a| format!("'{}'", a.replace('\'', "'\\''"))),
        )
        .collect();
    let ctx = ClassifyContext {
        workspace: Path::new("/work/ws"),
        working_dir: Path::new("/work/ws"),
        home: Some(Path::new("/home/ci")),
    };
    classify_bash(&line.join(" "), &ctx).label().to_owned()
}

fn tool_label(op: Op, args: &[String]) -> String {
    let v = classify(&Request {
        op,
        args,
        has_files: false,
        force: false,
        dry_run: false,
        has_message: false,
    });
    if v.blocked.is_some() {
        "blocked".to_owned()
    } else if v.unclassifiable.is_some() {
        "unclassifiable".to_owned()
    } else {
        v.risk.as_str().to_owned()
    }
}

fn op_of(name: &str) -> Option<Op> {
    serde_json::from_value(Value::String(name.to_owned())).ok()
}

/// The disputed cases of issue 12, as `git` argv's (after `git`), with the
/// risk both routes must give.
const DISPUTED: &[(&str, &[&str])] = &[
    ("dangerous", &["push"]),
    ("dangerous", &["push", "origin"]),
    ("dangerous", &["push", "origin", "main"]),
    ("dangerous", &["push", "origin", "master"]),
    ("dangerous", &["push", "origin", "HEAD"]),
    ("dangerous", &["push", "origin", "HEAD:main"]),
    ("dangerous", &["push", "origin", "+feature:feature"]),
    ("dangerous", &["push", "--all", "origin"]),
    ("dangerous", &["push", "--mirror", "origin"]),
    ("dangerous", &["push", "--force", "origin", "feature"]),
    ("dangerous", &["push", "-f", "origin", "feature"]),
    (
        "dangerous",
        &["push", "--force-with-lease", "origin", "feature"],
    ),
    (
        "dangerous",
        &["push", "--force-if-includes", "origin", "feature"],
    ),
    ("dangerous", &["push", "--delete", "origin", "feature"]),
    ("dangerous", &["push", "-d", "origin", "feature"]),
    ("dangerous", &["push", "origin", ":feature"]),
    ("dangerous", &["push", "--force-w", "origin", "feature"]),
    ("dangerous", &["push", "--delet", "origin", "feature"]),
    ("unclassifiable", &["push", "--forc", "origin", "feature"]),
    ("moderate", &["push", "origin", "feature"]),
    ("moderate", &["push", "origin", "HEAD:feature"]),
    ("moderate", &["push", "--dry-run", "origin", "main"]),
    ("dangerous", &["reset", "--hard"]),
    ("dangerous", &["reset", "--har", "origin/main"]),
    ("dangerous", &["reset", "--merge"]),
    ("moderate", &["reset", "--keep", "HEAD~1"]),
    ("moderate", &["reset", "HEAD~1"]),
    ("dangerous", &["checkout", "--", "a.txt"]),
    ("dangerous", &["checkout", "--", "."]),
    ("dangerous", &["checkout", "HEAD", "a.txt"]),
    ("dangerous", &["checkout", "-f", "main"]),
    ("moderate", &["checkout", "feature"]),
    ("dangerous", &["branch", "-D", "old"]),
    ("dangerous", &["branch", "--delete", "--force", "old"]),
    ("dangerous", &["branch", "-d", "-f", "old"]),
    ("moderate", &["branch", "-d", "old"]),
    ("moderate", &["branch", "--delet", "old"]),
    ("dangerous", &["stash", "drop"]),
    ("dangerous", &["stash", "clear"]),
    ("moderate", &["stash", "pop"]),
    ("dangerous", &["add", "--force", "."]),
    ("dangerous", &["pull", "--force"]),
    ("safe", &["log", "--oneline", "-5"]),
    ("unclassifiable", &["log", "--onel"]),
];

/// The risk of a git command in a bash step, from the tool's: one that
/// writes the repository is at least dangerous there (below, the sandbox
/// keeps `.git` read-only), the same otherwise.
fn in_bash(tool: &str) -> &str {
    if tool == "moderate" {
        "dangerous"
    } else {
        tool
    }
}

#[test]
fn disputed_cases_agree() {
    let mut failures = Vec::new();
    for (want, argv) in DISPUTED {
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        let Some(op) = op_of(&argv[0]) else {
            failures.push(format!("{argv:?}: not a tool operation"));
            continue;
        };
        let (bash, tool) = (bash_label(&argv), tool_label(op, &argv[1..]));
        if bash != in_bash(want) || tool != *want {
            failures.push(format!(
                "git {argv:?}: bash {bash}, tool {tool}, want {want}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every case of the tool's own table that a bash step can write the same
/// way (only `operation` and `args`, no option the tool refuses) gets the
/// same risk as a bash step.
#[test]
fn tool_table_agrees_with_bash() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/tools/git_rules.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let table: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cases = table["classify"].as_array().cloned().unwrap_or_default();
    let mut compared = 0;
    let mut failures = Vec::new();
    for c in &cases {
        let params = &c[1];
        let only_args = params
            .as_object()
            .is_some_and(|o| o.keys().all(|k| k == "operation" || k == "args"));
        let Some(op) = params["operation"].as_str().and_then(op_of) else {
            continue;
        };
        let args: Vec<String> = serde_json::from_value(params["args"].clone()).unwrap_or_default();
        let tool = tool_label(op, &args);
        if !only_args || tool == "blocked" || args.iter().any(|a| a.contains('\0')) {
            continue;
        }
        compared += 1;
        let argv: Vec<String> = std::iter::once(op.as_str().to_owned())
            .chain(args)
            .collect();
        let bash = bash_label(&argv);
        if bash != in_bash(&tool) {
            failures.push(format!("git {argv:?}: bash {bash}, tool {tool}"));
        }
    }
    assert!(compared >= 80, "only {compared} cases compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
