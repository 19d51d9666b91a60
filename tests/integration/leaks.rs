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

/// A made-up classic GitHub token (`ghp_`, 30 characters, then the CRC32 of
/// those in base62, 6 characters: the checksum the `github-pat` rule checks)
/// drawn from `seed`.
fn github_token(seed: u64) -> String {
    const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let body: String = (0..30)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            char::from(B62[(s % 62) as usize])
        })
        .collect();
    let mut crc: u32 = !0;
    for &b in body.as_bytes() {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    let (mut n, mut sum) = (u64::from(!crc), Vec::new());
    while n > 0 {
        sum.push(B62[(n % 62) as usize]);
        n /= 62;
    }
    while sum.len() < 6 {
        sum.push(b'0');
    }
    sum.reverse();
    format!("ghp_{body}{}", String::from_utf8_lossy(&sum))
}

/// plangate's fingerprint of a secret: the first 32 hex digits of its SHA-256.
fn fingerprint(secret: &str) -> String {
    use sha2::Digest;
    let mut h = hex::encode(sha2::Sha256::digest(secret.as_bytes()));
    h.truncate(32);
    h
}

/// What splits a token on a console line, as `printf` escapes: ANSI (SGR
/// reset and colour, a two-byte escape, an OSC title ended by BEL), BEL, C0
/// controls (NUL, CR, VT, FF, ESC alone), DEL, C1 controls (CSI and NEL in
/// UTF-8), and a backspace overstrike.
const SPLITTERS: [(&str, &str); 14] = [
    ("ansi-reset", "\\033[0m"),
    ("ansi-colour", "\\033[1;31m"),
    ("ansi-two-byte", "\\033(B"),
    ("osc-title", "\\033]0;title\\a"),
    ("bel", "\\a"),
    ("nul", "\\000"),
    ("cr", "\\r"),
    ("vt", "\\v"),
    ("ff", "\\f"),
    ("del", "\\177"),
    ("c1-csi", "\\302\\2330m"),
    ("c1-nel", "\\302\\205"),
    ("two-resets", "\\033[0m\\033[0m"),
    ("overstrike", "Q\\b"),
];

/// Issue 27: a token printed in two halves around control bytes is a
/// finding, with its rule, counted once: one planted token per splitter, on
/// stdout and on stderr, each is in the report's findings exactly once (by
/// its fingerprint, at the line it was printed on), no other finding is
/// there, and no byte of any token reaches any output.
#[test]
fn every_token_split_by_control_bytes_is_counted_once() {
    let env = Env::new();
    let mut planted: Vec<(String, &str, usize)> = Vec::new(); // token, stream, line
    let mut commands = Vec::new();
    for (k, stream) in ["stdout", "stderr"].into_iter().enumerate() {
        let mut printed = String::new();
        for (i, (_, sep)) in SPLITTERS.iter().enumerate() {
            let token = github_token((k * 100 + i) as u64);
            // (the plan's text holds the first half: shorter than the 12 bytes checked)
            let at = 5 + i % 7;
            printed.push_str(&format!(
                "line {i}: {}{sep}{}\\n",
                &token[..at],
                &token[at..]
            ));
            planted.push((token, stream, i + 1));
        }
        let redirect = if stream == "stderr" { " >&2" } else { "" };
        commands.push(format!("printf '{printed}'{redirect}"));
    }
    let plan = format!(
        "version: 1\nid: split\npolicy: {{risk_tolerance: high, fail_on_secrets: false}}\nsteps:\n  - id: split\n    tool: bash\n    parameters: {{sandbox: false, command: {}, show_cli: true}}\n",
        serde_json::to_string(&commands.join("; ")).unwrap()
    );
    let (status, outputs) = run_everywhere(&env, &plan, &["--sandbox-backend", "none"]);
    let report = env.report();
    assert_eq!(status, 0, "fail_on_secrets false: {report:#}");
    let findings = report["findings"].as_array().unwrap();
    for (token, stream, line) in &planted {
        let fp = fingerprint(token);
        let hits: Vec<&serde_json::Value> =
            findings.iter().filter(|f| f["fingerprint"] == fp).collect();
        assert_eq!(
            hits.len(),
            1,
            "{stream} line {line}: {} finding(s) of its token in {findings:#?}",
            hits.len()
        );
        let f = hits[0];
        assert_eq!(f["rule"], "github-pat", "{f}");
        assert_eq!(
            f["location"],
            format!("artifacts/split/{stream}.txt"),
            "{f}"
        );
        assert_eq!(f["line"], *line as u64, "{f}");
    }
    assert_eq!(
        findings.len(),
        planted.len(),
        "every planted token and nothing else: {findings:#?}"
    );
    let tokens: Vec<&str> = planted.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_no_trace(&outputs, &tokens);
    // The console says how many.
    let console = String::from_utf8_lossy(&outputs[1].1).into_owned();
    assert!(
        console.contains(&format!("secrets: {} found", planted.len())),
        "{console}"
    );
}

/// Issue 27: `plangate scan` of a saved console log reads it as shown: a
/// token split by control bytes is one finding with its rule (JSON and
/// SARIF), at its line, and `--redact` leaves nothing of it.
#[test]
fn scan_counts_a_token_split_by_control_bytes_once() {
    let env = Env::new();
    let mut log = Vec::new();
    let mut tokens = Vec::new();
    for (i, (name, sep)) in SPLITTERS.iter().enumerate() {
        if *name == "nul" {
            continue; // a NUL makes the file binary for `plangate scan`: skipped, and said so
        }
        let token = github_token(500 + i as u64);
        // the printf escapes as bytes
        let sep = sep
            .replace("\\033", "\x1b")
            .replace("\\a", "\x07")
            .replace("\\r", "\r")
            .replace("\\v", "\x0b")
            .replace("\\f", "\x0c")
            .replace("\\177", "\x7f")
            .replace("\\302\\233", "\u{9b}")
            .replace("\\302\\205", "\u{85}")
            .replace("\\b", "\x08");
        let at = 9 + i % 15;
        log.extend_from_slice(
            format!("{name}: {}{sep}{}\n", &token[..at], &token[at..]).as_bytes(),
        );
        tokens.push(token);
    }
    // The same token whole and split on one line: one finding at that line.
    let twice = github_token(999);
    log.extend_from_slice(
        format!("twice: {twice} {}\x1b[0m{}\n", &twice[..10], &twice[10..]).as_bytes(),
    );
    let path = env.ws.join("console.log");
    std::fs::write(&path, &log).unwrap();
    let o = env
        .cmd()
        .args(["scan", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    for (i, token) in tokens.iter().enumerate() {
        let fp = fingerprint(token);
        let hits: Vec<_> = findings.iter().filter(|f| f["fingerprint"] == fp).collect();
        assert_eq!(hits.len(), 1, "token {i}: {findings:#?}");
        assert_eq!(hits[0]["type"], "github-pat");
        assert_eq!(hits[0]["line"], (i + 1) as u64);
    }
    let fp = fingerprint(&twice);
    assert_eq!(
        findings.iter().filter(|f| f["fingerprint"] == fp).count(),
        2,
        "whole and split on one line: two places, {findings:#?}"
    );
    assert_eq!(v["secrets_found"], tokens.len() + 2, "{v:#}");
    let o = env
        .cmd()
        .args(["scan", "--format", "sarif"])
        .arg(&path)
        .output()
        .unwrap();
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        sarif["runs"][0]["results"].as_array().unwrap().len(),
        tokens.len() + 2
    );
    let o = env
        .cmd()
        .args(["scan", "--redact"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let left = std::fs::read(&path).unwrap();
    tokens.push(twice);
    let all: Vec<&str> = tokens.iter().map(String::as_str).collect();
    assert_no_trace(&[("console.log".to_owned(), left)], &all);
}
