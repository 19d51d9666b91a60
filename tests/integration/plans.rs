//! The plan corpus: every file under `tests/fixtures/plans/` runs through the real binary.
//!
//! `invalid/NAME.yaml` must be refused by `validate` and by `run` (exit 2, nothing
//! executed) with exactly the diagnostics listed in `invalid/NAME.expected`, one per
//! line: `LINE:COL: MESSAGE_SUBSTRING`, optionally followed by
//! ` | help: HELP_SUBSTRING`. `0:0` is a whole-file diagnostic (printed as
//! `FILE: error: ...`). Blank lines and lines starting with `#` are ignored.
//!
//! `valid/NAME.yaml` must pass `validate --format json`.
//!
//! Adding a case is adding data files; each test collects every failing fixture
//! into one panic message. Inputs that cannot be committed (over 1 MiB, not UTF-8)
//! are generated below and go through the same checks.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Env, code};

/// Where the corpus lives.
fn corpus(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plans")
        .join(dir)
}

/// No single invocation may take longer than this (a hang is a failure, not a stuck test).
const INVOCATION_LIMIT: Duration = Duration::from_secs(60);

/// The largest plan plangate accepts (`load::MAX_FILE_BYTES`).
const MAX_PLAN_BYTES: usize = 1024 * 1024;

/// One line of an `.expected` file.
#[derive(Debug)]
struct Expected {
    line: u64,
    column: u64,
    message: String,
    help: Option<String>,
    text: String,
}

/// One diagnostic as plangate printed it (stderr) or emitted it (JSON).
#[derive(Debug)]
struct Printed {
    line: u64,
    column: u64,
    message: String,
    help: Option<String>,
}

impl std::fmt::Display for Printed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)?;
        if let Some(h) = &self.help {
            write!(f, " (help: {h})")?;
        }
        Ok(())
    }
}

fn parse_expected(text: &str) -> Result<Vec<Expected>, String> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let l = raw.trim_end();
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let bad = || format!("line {}: `{l}` is not `LINE:COL: MESSAGE`", n + 1);
        let mut parts = l.splitn(3, ':');
        let line = parts.next().and_then(|s| s.trim().parse().ok());
        let column = parts.next().and_then(|s| s.trim().parse().ok());
        let (Some(line), Some(column), Some(rest)) = (line, column, parts.next()) else {
            return Err(bad());
        };
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        let (message, help) = match rest.split_once(" | help: ") {
            Some((m, h)) => (m.to_owned(), Some(h.to_owned())),
            None => (rest.to_owned(), None),
        };
        if message.trim().is_empty() {
            return Err(bad());
        }
        out.push(Expected {
            line,
            column,
            message,
            help,
            text: l.to_owned(),
        });
    }
    Ok(out)
}

/// Diagnostics on stderr for `file` (`FILE:L:C: error: MSG` or `FILE: error: MSG`,
/// each maybe followed by `  help: ...`). Any other `error:` line is an error itself.
fn parse_stderr(stderr: &str, file: &str) -> Result<Vec<Printed>, String> {
    let mut out: Vec<Printed> = Vec::new();
    let prefix = format!("{file}:");
    for l in stderr.lines() {
        if let Some(h) = l.strip_prefix("  help: ") {
            match out.last_mut() {
                Some(d) if d.help.is_none() => d.help = Some(h.to_owned()),
                _ => return Err(format!("stray help line: `{l}`")),
            }
            continue;
        }
        let Some(rest) = l.strip_prefix(&prefix) else {
            if l.contains(" error: ") {
                return Err(format!(
                    "a diagnostic that does not name the plan file: `{l}`"
                ));
            }
            continue;
        };
        if let Some(message) = rest.strip_prefix(" error: ") {
            out.push(Printed {
                line: 0,
                column: 0,
                message: message.to_owned(),
                help: None,
            });
            continue;
        }
        let mut parts = rest.splitn(3, ':');
        let line = parts.next().and_then(|s| s.parse().ok());
        let column = parts.next().and_then(|s| s.parse().ok());
        let message = parts.next().and_then(|s| s.strip_prefix(" error: "));
        match (line, column, message) {
            (Some(line), Some(column), Some(message)) => out.push(Printed {
                line,
                column,
                message: message.to_owned(),
                help: None,
            }),
            _ => return Err(format!("unparsable diagnostic line: `{l}`")),
        }
    }
    Ok(out)
}

/// The `errors` array of a JSON document (validate --format json, report.json).
fn parse_json_errors(v: &Value) -> Result<Vec<Printed>, String> {
    let arr = v["errors"]
        .as_array()
        .ok_or_else(|| format!("no `errors` array in {v}"))?;
    arr.iter()
        .map(|e| {
            Ok(Printed {
                line: e["line"]
                    .as_u64()
                    .ok_or_else(|| format!("no line in {e}"))?,
                column: e["column"]
                    .as_u64()
                    .ok_or_else(|| format!("no column in {e}"))?,
                message: e["message"]
                    .as_str()
                    .ok_or_else(|| format!("no message in {e}"))?
                    .to_owned(),
                help: e["help"].as_str().map(str::to_owned),
            })
        })
        .collect()
}

/// Every expected line matches its own printed diagnostic, and nothing else was printed.
fn compare(expected: &[Expected], printed: &[Printed]) -> Result<(), String> {
    let mut used = vec![false; printed.len()];
    let mut problems = Vec::new();
    for e in expected {
        let hit = printed.iter().enumerate().position(|(i, p)| {
            !used[i]
                && p.line == e.line
                && p.column == e.column
                && p.message.contains(&e.message)
                && e.help
                    .as_ref()
                    .is_none_or(|h| p.help.as_ref().is_some_and(|ph| ph.contains(h.as_str())))
        });
        match hit {
            Some(i) => used[i] = true,
            None => problems.push(format!("missing: {}", e.text)),
        }
    }
    for (p, u) in printed.iter().zip(&used) {
        if !u {
            problems.push(format!("unexpected: {p}"));
        }
    }
    if expected.len() != printed.len() {
        problems.push(format!(
            "{} diagnostic(s) expected, {} printed",
            expected.len(),
            printed.len()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn describe_exit(o: &Output) -> String {
    match o.status.code() {
        Some(c) => format!("exit code {c}"),
        None => format!(
            "no exit code (killed: a hang past {}s, or a signal)",
            INVOCATION_LIMIT.as_secs()
        ),
    }
}

fn invoke(env: &Env, args: &[&std::ffi::OsStr]) -> Result<Output, String> {
    let mut c = env.cmd();
    c.args(args).timeout(INVOCATION_LIMIT);
    c.output()
        .map_err(|e| format!("cannot start plangate: {e}"))
}

/// Stdout/stderr, for failure messages.
fn dump(o: &Output) -> String {
    let cut = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        let s = s.trim_end();
        if s.chars().count() > 1500 {
            let head: String = s.chars().take(1500).collect();
            format!("{head}...")
        } else {
            s.to_owned()
        }
    };
    format!(
        "\n      stderr: {}\n      stdout: {}",
        cut(&o.stderr).replace('\n', "\n              "),
        cut(&o.stdout).replace('\n', "\n              ")
    )
}

/// Exit code 2, no panic, and exactly the expected diagnostics on stderr.
fn check_refused(o: &Output, expected: &[Expected], file: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if code(o) != 2 {
        errs.push(format!("{}, expected 2", describe_exit(o)));
    }
    if stderr.contains("panicked at") {
        errs.push("panicked".to_owned());
    }
    match parse_stderr(&stderr, file) {
        Ok(printed) => {
            if let Err(e) = compare(expected, &printed) {
                errs.push(format!("stderr: {e}"));
            }
            let summary = format!(
                "plangate: {} problem(s) found; nothing was executed",
                printed.len()
            );
            if !stderr.lines().any(|l| l == summary) {
                errs.push(format!("no `{summary}` line"));
            }
        }
        Err(e) => errs.push(e),
    }
    errs
}

/// `validate --format json`: exit 2, `"valid": false` and the expected `errors`.
fn check_refused_json(o: &Output, expected: &[Expected]) -> Vec<String> {
    let mut errs = Vec::new();
    if code(o) != 2 {
        errs.push(format!("{}, expected 2", describe_exit(o)));
    }
    match serde_json::from_slice::<Value>(&o.stdout) {
        Ok(v) => {
            if v["valid"] != Value::Bool(false) {
                errs.push(format!("`valid` is {}, expected false", v["valid"]));
            }
            if let Err(e) = parse_json_errors(&v).and_then(|p| compare(expected, &p)) {
                errs.push(format!("errors: {e}"));
            }
        }
        Err(e) => errs.push(format!("stdout is not JSON: {e}")),
    }
    errs
}

/// `run`'s report: status `invalid`, exit code 2, the expected `errors`.
fn check_invalid_report(out: &Path, expected: &[Expected]) -> Vec<String> {
    let report = out.join("report.json");
    let r = match std::fs::read_to_string(&report)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
    {
        Ok(r) => r,
        Err(e) => return vec![format!("no readable {}: {e}", report.display())],
    };
    let mut errs = Vec::new();
    if r["status"] != "invalid" {
        errs.push(format!(
            "report status is {}, expected \"invalid\"",
            r["status"]
        ));
    }
    if r["exit_code"] != 2 {
        errs.push(format!(
            "report exit_code is {}, expected 2",
            r["exit_code"]
        ));
    }
    match r["errors"].as_array() {
        Some(a) if a.len() == expected.len() => {
            if let Err(e) = parse_json_errors(&r).and_then(|p| compare(expected, &p)) {
                errs.push(format!("report errors: {e}"));
            }
        }
        Some(a) => errs.push(format!(
            "report has {} error(s), expected {}",
            a.len(),
            expected.len()
        )),
        None => errs.push("report has no `errors` array".into()),
    }
    errs
}

/// Run plangate with `args`; label each problem `check` finds with `what`, plus the output once.
fn invocation(
    env: &Env,
    what: &str,
    args: &[&std::ffi::OsStr],
    check: impl FnOnce(&Output) -> Vec<String>,
) -> Vec<String> {
    match invoke(env, args) {
        Ok(o) => {
            let mut errs: Vec<String> = check(&o)
                .into_iter()
                .map(|e| format!("{what}: {e}"))
                .collect();
            if let Some(last) = errs.last_mut() {
                last.push_str(&dump(&o));
            }
            errs
        }
        Err(e) => vec![format!("{what}: {e}")],
    }
}

/// Run one invalid plan through `validate`, `validate --format json` and `run`.
fn check_invalid(plan: &Path, expected_text: &str) -> Vec<String> {
    let expected = match parse_expected(expected_text) {
        Ok(e) if e.is_empty() => return vec!["the .expected file lists no diagnostic".into()],
        Ok(e) => e,
        Err(e) => return vec![format!("bad .expected file: {e}")],
    };
    let file = plan.display().to_string();
    let env = Env::new();
    let mut errs = Vec::new();
    errs.extend(invocation(
        &env,
        "validate",
        &["validate".as_ref(), plan.as_os_str()],
        |o| check_refused(o, &expected, &file),
    ));
    errs.extend(invocation(
        &env,
        "validate --format json",
        &[
            "validate".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            plan.as_os_str(),
        ],
        |o| check_refused_json(o, &expected),
    ));
    // `--risk-tolerance high`: were the plan wrongly accepted, its `touch executed-marker`
    // would really run instead of being denied for its risk.
    errs.extend(invocation(
        &env,
        "run",
        &[
            "run".as_ref(),
            plan.as_os_str(),
            "--workspace".as_ref(),
            env.ws.as_os_str(),
            "--out".as_ref(),
            env.out.as_os_str(),
            "--risk-tolerance".as_ref(),
            "high".as_ref(),
        ],
        |o| {
            let mut e = check_refused(o, &expected, &file);
            e.extend(check_invalid_report(&env.out, &expected));
            e
        },
    ));
    if env.ws.join("executed-marker").exists() {
        errs.push("a step was executed: `executed-marker` exists in the workspace".into());
    }
    match std::fs::read_dir(&env.ws) {
        Ok(entries) => {
            let left: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !left.is_empty() {
                errs.push(format!("the workspace is not untouched: {left:?}"));
            }
        }
        Err(e) => errs.push(format!("cannot list the workspace: {e}")),
    }
    errs
}

/// `NAME.yaml` files of a corpus directory, sorted, and the names of stray `.expected` files.
fn yaml_cases(dir: &Path) -> (Vec<PathBuf>, Vec<String>) {
    let mut yaml = Vec::new();
    let mut orphans = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let p = entry.expect("dir entry").path();
        match p.extension().and_then(|e| e.to_str()) {
            Some("yaml") => yaml.push(p),
            Some("expected") if !p.with_extension("yaml").exists() => {
                orphans.push(p.display().to_string());
            }
            _ => {}
        }
    }
    yaml.sort();
    (yaml, orphans)
}

/// Cases that cannot be committed as files: (name, bytes, expected).
fn generated_invalid() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let header = "version: 1\nid: generated\nsteps:\n  - id: a\n    tool: bash\n    parameters: {command: touch executed-marker}\n";
    let mut one_byte_over = padded(header, MAX_PLAN_BYTES);
    one_byte_over.push(b'\n');
    let mut latin1 =
        b"version: 1\nid: latin1\nsteps:\n  - id: a\n    tool: bash\n    description: caf".to_vec();
    latin1.extend_from_slice(b"\xe9 cr\xe8me\n    parameters: {command: touch executed-marker}\n");
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(header.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    vec![
        (
            "generated: 1 MiB + 1 byte",
            one_byte_over,
            "0:0: bytes a plan may have",
        ),
        (
            "generated: 3 MiB",
            padded(header, 3 * MAX_PLAN_BYTES),
            "0:0: bytes a plan may have",
        ),
        (
            "generated: Latin-1 byte in a description",
            latin1,
            "0:0: file is not valid UTF-8",
        ),
        (
            "generated: UTF-16LE with BOM",
            utf16,
            "0:0: file is not valid UTF-8",
        ),
    ]
}

/// `text` followed by comment lines, exactly `len` bytes long.
fn padded(text: &str, len: usize) -> Vec<u8> {
    let mut out = text.as_bytes().to_vec();
    let line = format!("# {}\n", "padding ".repeat(12));
    while out.len() + line.len() <= len {
        out.extend_from_slice(line.as_bytes());
    }
    let rest = len - out.len();
    if rest > 0 {
        out.push(b'#');
        out.extend(std::iter::repeat_n(b'x', rest.saturating_sub(2)));
        if rest >= 2 {
            out.push(b'\n');
        }
    }
    assert_eq!(out.len(), len, "padding");
    out
}

fn report(kind: &str, total: usize, failures: &[(String, Vec<String>)]) -> Option<String> {
    if failures.is_empty() {
        return None;
    }
    let mut msg = format!("{} of {total} {kind} plan(s) failed:\n", failures.len());
    for (name, why) in failures {
        let _ = writeln!(msg, "- {name}:");
        for w in why {
            let _ = writeln!(msg, "    {w}");
        }
    }
    Some(msg)
}

#[test]
fn invalid_plans_are_refused_with_exactly_the_expected_diagnostics() {
    let dir = corpus("invalid");
    let (cases, orphans) = yaml_cases(&dir);
    let mut failures: Vec<(String, Vec<String>)> = orphans
        .into_iter()
        .map(|o| (o, vec!["an .expected file without its .yaml".to_owned()]))
        .collect();
    for plan in &cases {
        let name = plan
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let errs = match std::fs::read_to_string(plan.with_extension("expected")) {
            Ok(text) => check_invalid(plan, &text),
            Err(e) => vec![format!("no readable .expected file: {e}")],
        };
        if !errs.is_empty() {
            failures.push((name, errs));
        }
    }
    let generated = generated_invalid();
    let scratch = tempfile::tempdir().expect("tempdir");
    for (i, (name, bytes, expected)) in generated.iter().enumerate() {
        let plan = scratch.path().join(format!("generated-{i}.yaml"));
        std::fs::write(&plan, bytes).expect("write generated plan");
        let errs = check_invalid(&plan, expected);
        if !errs.is_empty() {
            failures.push(((*name).to_owned(), errs));
        }
    }
    assert!(
        cases.len() >= 60,
        "only {} invalid plans found in {}",
        cases.len(),
        dir.display()
    );
    if let Some(msg) = report("invalid", cases.len() + generated.len(), &failures) {
        panic!("{msg}");
    }
}

/// `validate --format json` accepts the plan and says so.
fn check_valid(plan: &Path) -> Vec<String> {
    let env = Env::new();
    let args = [
        "validate".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
        plan.as_os_str(),
    ];
    invocation(&env, "validate --format json", &args, |o| {
        let mut errs = Vec::new();
        match serde_json::from_slice::<Value>(&o.stdout) {
            Ok(v) if v["valid"] == Value::Bool(true) => {
                // 0, or 3 when `run` would stop at its gate for these decisions.
                let want = crate::harness::validate_exit(&v);
                if code(o) != want {
                    errs.push(format!("{}, expected {want}", describe_exit(o)));
                }
            }
            Ok(v) => errs.push(format!("`valid` is {}, expected true", v["valid"])),
            Err(e) => errs.push(format!("stdout is not JSON: {e}")),
        }
        errs
    })
}

#[test]
fn valid_plans_pass_validation() {
    let dir = corpus("valid");
    let (cases, _) = yaml_cases(&dir);
    let mut failures = Vec::new();
    for plan in &cases {
        let errs = check_valid(plan);
        if !errs.is_empty() {
            let name = plan
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            failures.push((name, errs));
        }
    }
    // The size limit is inclusive: a plan of exactly 1 MiB is accepted.
    let scratch = tempfile::tempdir().expect("tempdir");
    let exact = scratch.path().join("exactly-1-MiB.yaml");
    let header = "version: 1\nid: exactly-one-mib\nsteps:\n  - id: a\n    tool: bash\n    parameters: {command: \"true\"}\n";
    std::fs::write(&exact, padded(header, MAX_PLAN_BYTES)).expect("write generated plan");
    let errs = check_valid(&exact);
    if !errs.is_empty() {
        failures.push(("generated: exactly 1 MiB".to_owned(), errs));
    }
    assert!(
        cases.len() >= 10,
        "only {} valid plans found in {}",
        cases.len(),
        dir.display()
    );
    if let Some(msg) = report("valid", cases.len() + 1, &failures) {
        panic!("{msg}");
    }
}

#[test]
fn expected_file_parser() {
    let e = parse_expected("# comment\n\n9:19: unknown key `comand` | help: did you mean `command`?\n0:0: file is empty\n")
        .expect("parses");
    assert_eq!(e.len(), 2);
    assert_eq!((e[0].line, e[0].column), (9, 19));
    assert_eq!(e[0].message, "unknown key `comand`");
    assert_eq!(e[0].help.as_deref(), Some("did you mean `command`?"));
    assert_eq!(
        (e[1].line, e[1].column, e[1].message.as_str()),
        (0, 0, "file is empty")
    );
    assert!(parse_expected("unknown key\n").is_err());
    let printed = parse_stderr(
        "/x/p.yaml:9:19: error: unknown key `comand` in step `a`\n  help: did you mean `command`? allowed keys: ...\n/x/p.yaml: error: file is empty\nplangate: 2 problem(s) found; nothing was executed\n",
        "/x/p.yaml",
    )
    .expect("parses");
    assert_eq!(printed.len(), 2);
    assert!(compare(&e, &printed).is_ok());
    assert!(
        compare(&e[..1], &printed).is_err(),
        "an extra diagnostic must fail"
    );
    assert!(
        compare(&e, &printed[..1]).is_err(),
        "a missing diagnostic must fail"
    );
}
