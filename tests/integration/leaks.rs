//! No leak path (issue 14): secrets planted through every way out a step or
//! an agent has (split by control bytes, behind a NUL, in files of the
//! artifact folder, through a link, in a large file, in a reason that is
//! cut, in an envelope's files) reach no byte plangate writes: the output
//! folder, stdout, stderr, the step summary, `$GITHUB_OUTPUT`, `--junit`,
//! every `report` format, `validate`. Neither the value nor a 12-byte
//! prefix of it, in the bytes or in the text as a terminal or a JSON reader
//! shows it.
//!
//! The payloads are data: plan text run by the plangate binary inside the
//! test's temp directories.

use std::path::Path;

use crate::harness::{Env, code, fake_agent, stderr};

/// Made-up AWS key ids (the `aws-access-key-id` rule's shape), one per path.
const ANSI: &str = "AKIAQ5TX7MZP3LWN2RKD";
const BEL: &str = "AKIAW4NB6YHQ2TZL7XPC";
const NUL: &str = "AKIAR2KV9DMW5XQT3HNB";
const CR: &str = "AKIAT8JC3PLQ6WZN4RVD";
const OVERSTRIKE: &str = "AKIAH6XQ2NTW9PBL5KMZ";
const BEHIND_NUL: &str = "AKIAJ3MV8QXT2LPW6NRC";
const BINARY_FILE: &str = "AKIAB7NW4KXQ9TMP2LZD";
const LARGE_FILE: &str = "AKIAC5PL8RWN3XKT7QMV";
const LINKED: &str = "AKIAD9KX2MPW6TNQ4RZB";
const LATE: &str = "AKIAE4QT7NWX2LKP9MRC";
const REASON: &str = "AKIAF8MZ3KQW5NTX2PLD";
/// A made-up GitHub token (checksum-valid) for the envelope path.
const ENVELOPE: &str = "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";

/// The text as shown: escape sequences and control bytes (raw or
/// JSON-escaped) removed; with `overstrike`, a backspace erases the
/// character before it.
fn shown(bytes: &[u8], overstrike: bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes)
        .replace("\\u001b", "\u{1b}")
        .replace("\\u0007", "\u{7}")
        .replace("\\u0000", "\u{0}")
        .replace("\\u0008", "\u{8}")
        .replace("\\b", "\u{8}")
        .replace("\\r", "\r");
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == 0x1b && b.get(i + 1) == Some(&b'[') {
            i += 2;
            while i < b.len() && !(0x40..=0x7e).contains(&b[i]) {
                i += 1;
            }
        } else if c == 8 && overstrike {
            out.pop();
        } else if c >= 0x20 && c != 0x7f || c == b'\n' || c == b'\t' {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// Neither any of `secrets` nor its first 12 bytes in any of `outputs`, as bytes or as shown.
fn assert_no_trace(outputs: &[(String, Vec<u8>)], secrets: &[&str]) {
    for (name, bytes) in outputs {
        let forms = [bytes.clone(), shown(bytes, false), shown(bytes, true)];
        for secret in secrets {
            for needle in [*secret, &secret[..12]] {
                let hit = forms
                    .iter()
                    .any(|f| memchr::memmem::find(f, needle.as_bytes()).is_some());
                assert!(!hit, "{name} holds {needle} (of {secret})");
            }
        }
    }
}

/// Every file under `dir` (links followed, as an uploader would).
fn files_under(dir: &Path, into: &mut Vec<(String, Vec<u8>)>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                into.push((p.display().to_string(), bytes));
            }
        }
    }
}

/// Run `plan` as under GitHub Actions with `--junit`; everything plangate wrote.
fn run_everywhere(env: &Env, plan: &str, args: &[&str]) -> (i32, Vec<(String, Vec<u8>)>) {
    let plan = env.write("plan.yaml", plan);
    let dir = tempfile::tempdir().unwrap();
    let (summary, output, junit) = (
        dir.path().join("summary.md"),
        dir.path().join("output.txt"),
        dir.path().join("junit.xml"),
    );
    let o = env
        .run_cmd(&plan)
        .args(args)
        .arg("--junit")
        .arg(&junit)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &output)
        .timeout(std::time::Duration::from_secs(180))
        .output()
        .unwrap();
    let status = code(&o);
    let mut all = vec![
        ("stdout".to_owned(), o.stdout.clone()),
        ("stderr".to_owned(), o.stderr.clone()),
    ];
    for f in [&summary, &output, &junit] {
        all.push((
            f.display().to_string(),
            std::fs::read(f).unwrap_or_default(),
        ));
    }
    for format in [
        "markdown",
        "junit",
        "sarif",
        "json",
        "gitlab-secret-detection",
    ] {
        let o = env
            .cmd()
            .args(["report", "--format", format])
            .arg(env.out.join("report.json"))
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{format}: {}", stderr(&o));
        all.push((format!("report --format {format}"), o.stdout));
        all.push((format!("report --format {format} (stderr)"), o.stderr));
    }
    for format in ["text", "json"] {
        let o = env
            .cmd()
            .args(["validate", "--format", format])
            .arg(&plan)
            .output()
            .unwrap();
        all.push((format!("validate --format {format}"), o.stdout));
        all.push((format!("validate --format {format} (stderr)"), o.stderr));
    }
    files_under(&env.out, &mut all);
    (status, all)
}

#[test]
fn secrets_planted_through_every_path_reach_no_byte_plangate_writes() {
    let env = Env::new();
    env.write("secret.env", &format!("AWS_ACCESS_KEY_ID={LINKED}\n"));
    let split = |k: &str, at: usize, sep: &str| format!("{}{sep}{}", &k[..at], &k[at..]);
    // printf escapes: the plan holds `\033`, `\a`, `\000`, `\r`, `\b` as text.
    let printed = [
        split(ANSI, 9, "\\033[31m") + "\\033[0m",
        split(BEL, 9, "\\a"),
        split(NUL, 9, "\\000"),
        split(CR, 14, "\\r"),
        split(OVERSTRIKE, 9, "X\\b"),
    ]
    .map(|s| format!("key={s}\\n"))
    .concat();
    let pad = "a".repeat(58);
    let steps = [
        ("split", format!("printf '{printed}'"), true),
        (
            "nul",
            format!("printf '\\000binary head\\n'; echo key {BEHIND_NUL}"),
            true,
        ),
        (
            "files",
            format!(
                "A=\"$PLANGATE_STEP_ARTIFACTS\"; mkdir -p \"$A/deep\"; \
                 printf '\\000\\001\\002 {BINARY_FILE} \\377\\n' > \"$A/deep/blob.bin\"; \
                 seq 1 3000000 > \"$A/big.log\"; \
                 echo 'key {LARGE_FILE}' >> \"$A/big.log\"; \
                 ln -s \"$PWD/secret.env\" \"$A/link.env\"; \
                 echo 'key {LATE}' > \"$A/../split/late.txt\""
            ),
            false,
        ),
        ("reason", format!("$X {pad} {REASON}"), false),
    ];
    let mut plan = String::from(
        "version: 1\nid: leaks\npolicy: {risk_tolerance: high, fail_on_secrets: false, max_parallel: 1}\nsteps:\n",
    );
    let mut after: Option<&str> = None;
    for (id, command, show) in &steps {
        plan.push_str(&format!(
            "  - id: {id}\n    tool: bash\n    continue_on_error: true\n    parameters: {{sandbox: false, command: {}, show_cli: {show}}}\n",
            serde_json::to_string(command).unwrap()
        ));
        if let Some(a) = after {
            plan.push_str(&format!("    dependencies: [{a}]\n"));
        }
        after = Some(id);
    }
    let (status, outputs) = run_everywhere(
        &env,
        &plan,
        &["--approve", "reason", "--sandbox-backend", "none"],
    );
    let report = env.report();
    assert_eq!(
        status, 0,
        "continue_on_error, fail_on_secrets false: {report:#}"
    );
    let findings: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["location"].as_str().unwrap().to_owned())
        .collect();
    for at in [
        "artifacts/split/stdout.txt",
        "artifacts/nul/stdout.txt",
        "artifacts/files/deep/blob.bin",
        "artifacts/files/big.log",
        "artifacts/split/late.txt",
    ] {
        assert!(
            findings.iter().any(|f| f == at),
            "{at} not in {findings:?}: {report:#}"
        );
    }
    assert!(
        !env.out.join("artifacts/files/link.env").exists(),
        "links in the output folder are removed"
    );
    let big = std::fs::metadata(env.out.join("artifacts/files/big.log")).unwrap();
    assert!(
        big.len() > 20_000_000,
        "the large artifact is kept, redacted"
    );
    assert_no_trace(
        &outputs,
        &[
            ANSI,
            BEL,
            NUL,
            CR,
            OVERSTRIKE,
            BEHIND_NUL,
            BINARY_FILE,
            LARGE_FILE,
            LINKED,
            LATE,
            REASON,
        ],
    );
}

#[test]
fn an_envelope_holding_a_secret_writes_nothing_into_the_workspace() {
    let env = Env::new();
    let answer = format!(
        "{{\"status\": \"OK\", \"summary\": \"configured\", \"artifacts\": [{{\"path\": \"config/token.txt\", \"content\": \"token = {ENVELOPE}\\n\"}}, {{\"path\": \"config/clean.txt\", \"content\": \"nothing\\n\"}}], \"next_actions\": []}}"
    );
    let (_, agents) = fake_agent(&env, "coder", &[&answer]);
    let plan = format!(
        "version: 1\nid: a\npolicy: {{risk_tolerance: medium}}\nagents:\n{agents}steps:\n  - id: fix\n    tool: agent\n    parameters: {{agent: coder, prompt: configure}}\n"
    );
    let (status, outputs) = run_everywhere(&env, &plan, &[]);
    assert_eq!(status, 4, "secrets found");
    let step = env.step("fix");
    assert_eq!(step["status"], "failed");
    let error = step["error"].as_str().unwrap();
    assert!(
        error.contains("were not written") && error.contains("config/token.txt"),
        "{error}"
    );
    assert!(
        !env.ws.join("config").exists(),
        "nothing of the envelope is written"
    );
    assert_no_trace(&outputs, &[ENVELOPE]);
}

/// Made-up AWS key ids (the `aws-access-key-id` rule's shape) in archive entry names.
const NAME_CUT: &str = "AKIAG2WQ7NXT4KMP9LRB";
const NAME_ESCAPED: &str = "AKIAK7RZ3NWQ8TLP2XMD";

#[test]
fn archive_entry_names_are_redacted_before_they_are_cut_or_escaped() {
    use crate::tool_archive::{pax_path, tar_end, tar_raw};
    use tar::EntryType as T;
    let env = Env::new();
    let mut b = Vec::new();
    // 188 characters, then the key: the 200-character cut falls 12 characters into it.
    let long = format!("{}/{}-{NAME_CUT}.txt", "d".repeat(120), "n".repeat(66));
    assert_eq!(long.find(NAME_CUT), Some(188));
    pax_path(&mut b, &long);
    tar_raw(&mut b, b"placeholder", T::Regular, b"", b"one\n");
    // A colour code after 13 characters: escaped as `\u{1b}`, it would split the key.
    let escaped = format!(
        "e-{}\x1b[31m{}.txt",
        &NAME_ESCAPED[..13],
        &NAME_ESCAPED[13..]
    );
    tar_raw(&mut b, escaped.as_bytes(), T::Regular, b"", b"two\n");
    std::fs::write(env.ws.join("names.tar"), tar_end(b)).unwrap();
    let plan = [
        "version: 1\nid: names\npolicy: {risk_tolerance: high}\nsteps:",
        "  - {id: ls, tool: archive, parameters: {operation: list, archive_path: names.tar, show_cli: true}}",
        "  - id: x\n    tool: archive\n    dependencies: [ls]",
        "    parameters: {operation: extract, archive_path: names.tar, destination: out, show_cli: true}\n",
    ]
    .join("\n");
    let (status, outputs) = run_everywhere(&env, &plan, &[]);
    // The extracted files' names hold the keys: the diff summary finds them (fail_on_secrets).
    assert_eq!(status, 4, "{:#}", env.report());
    let step = env.step("ls");
    assert_eq!(step["status"], "success", "{step:#}");
    assert_no_trace(&outputs, &[NAME_CUT, NAME_ESCAPED]);
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.out.join("artifacts/ls/result.json")).unwrap())
            .unwrap();
    let files = result["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{result:#}");
    assert!(
        files
            .iter()
            .all(|f| f.as_str().unwrap().contains("[REDACTED")),
        "{result:#}"
    );
}
