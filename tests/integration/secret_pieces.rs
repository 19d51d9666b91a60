//! No piece of a declared or CI secret (8 bytes or more) leaves a run, in
//! any form the redaction layer promises to mask (SPEC "Output directory"):
//! halves on two lines or split across stdout and stderr, pieces, the value
//! reversed, in hex (either case), in base64, split by invisible characters,
//! as (part of) a file name in the artifact folder, in an output value, and
//! in a workspace file the diff summary shows. The step's command is the
//! data file `tests/fixtures/secret_pieces/leak.sh`.

use std::path::Path;

use crate::harness::{Env, code, stderr};

/// The declared secret (made up; no built-in rule detects it on its own).
const SECRET: &str = "Rv3Kp8Zq2Wm6Xt9Ly4Nb";
/// A credential of plangate's environment no step declares; the plan quotes a piece of it.
const CI_SECRET: &str = "Hd7Jc2Vx9Tq4Mz8Pw3Gk";

const LEAK: &str = include_str!("../fixtures/secret_pieces/leak.sh");

/// Every text a piece of `secret` may not show in, lowercased: each run of
/// 8 bytes of it and of its reverse, of 16 digits of their hex, and of 11
/// characters of its base64 forms (both alphabets, three alignments).
fn pieces(secret: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let reversed: String = secret.chars().rev().collect();
    let mut out = Vec::new();
    let windows = |text: &str, n: usize| -> Vec<String> {
        text.as_bytes()
            .windows(n)
            .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
            .collect()
    };
    for form in [secret, reversed.as_str()] {
        out.extend(windows(form, 8));
        out.extend(windows(&hex::encode(form), 16));
    }
    for k in 0..3 {
        let shifted = format!("{}{secret}", "\0".repeat(k));
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let text = engine.encode(&shifted);
            // The characters that depend on the secret's bytes alone.
            let (first, last) = ((8 * k).div_ceil(6), 8 * shifted.len() / 6);
            out.extend(windows(&text[first..last], 11));
        }
    }
    out
}

/// `bytes` as a reader sees it: escape sequences, control bytes and the
/// characters nothing shows (zero-width, joiners, BOM, soft hyphen, ...) removed.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = anstream::adapter::strip_str(&text).to_string();
    text.chars()
        .filter(|&c| {
            !(c.is_control() && c != '\n'
                || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
        })
        .collect()
}

/// What `secret` left in `where_`'s `bytes`: the first piece found, if any.
fn leaked(bytes: &[u8], secret: &str) -> Option<String> {
    let texts = [
        String::from_utf8_lossy(bytes).to_ascii_lowercase(),
        shown(bytes).to_ascii_lowercase(),
        // Whitespace dropped: a value spread over lines or spaces.
        shown(bytes)
            .replace(|c: char| c.is_ascii_whitespace(), "")
            .to_ascii_lowercase(),
    ];
    pieces(secret)
        .into_iter()
        .find(|p| texts.iter().any(|t| t.contains(p.as_str())))
}

/// Every file and folder under `dir`: (relative path, contents; empty for a folder).
fn everything_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
                out.push((rel, Vec::new()));
            } else {
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out
}

#[test]
fn no_piece_or_transform_of_a_secret_leaves_a_run() {
    let env = Env::new();
    env.write("leak.sh", LEAK);
    let plan = format!(
        "version: 1\nid: pieces\npolicy: {{risk_tolerance: high, fail_on_secrets: false, max_parallel: 1}}\nsteps:\n\
         \x20 - id: leak\n    tool: bash\n    secrets: [PIECES_TOKEN]\n    parameters: {{sandbox: false, command: 'bash leak.sh', show_cli: true}}\n\
         \x20 - id: quote\n    tool: bash\n    dependencies: [leak]\n    parameters: {{sandbox: false, command: \"echo 'ci piece: {}' && echo '{}' | rev\"}}\n",
        &CI_SECRET[2..14],
        CI_SECRET,
    );
    let plan_path = env.write("plan.yaml", &plan);
    let o = env
        .run_cmd(&plan_path)
        .args(["--approve", "leak,quote", "--sandbox-backend", "none"])
        .env("PIECES_TOKEN", SECRET)
        .env("DEPLOY_TOKEN", CI_SECRET)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let report = env.report();
    assert_eq!(code(&o), 0, "{}\n{report:#}", stderr(&o));
    let mut texts = vec![
        ("stdout".to_owned(), o.stdout.clone()),
        ("stderr".to_owned(), o.stderr.clone()),
    ];
    for (rel, bytes) in everything_under(&env.out) {
        texts.push((format!("the name {rel}"), rel.clone().into_bytes()));
        texts.push((rel, bytes));
    }
    for (name, bytes) in &texts {
        for secret in [SECRET, CI_SECRET] {
            if let Some(p) = leaked(bytes, secret) {
                panic!(
                    "{name} shows {p:?} (a piece of {secret}):\n{}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }
    // The step did print, write and name everything: masked, not missing.
    let out = std::fs::read_to_string(env.out.join("artifacts/leak/stdout.txt")).unwrap();
    for label in [
        "first half: [REDACTED]",
        "reversed: [REDACTED]",
        "hex: [REDACTED]",
        "zero-width: [REDACTED]",
    ] {
        assert!(out.contains(label), "{label}: {out}");
    }
    let err = std::fs::read_to_string(env.out.join("artifacts/leak/stderr.txt")).unwrap();
    assert!(err.contains("half on stderr: [REDACTED]"), "{err}");
    let names: Vec<String> = everything_under(&env.out.join("artifacts/leak"))
        .into_iter()
        .map(|(rel, _)| rel)
        .collect();
    for want in [
        "[REDACTED].txt",
        "name-[REDACTED].log",
        "zw-[REDACTED].log",
        "dir-[REDACTED]/inside.txt",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    let audit = std::fs::read_to_string(env.out.join("audit.jsonl")).unwrap();
    let renamed: Vec<serde_json::Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "renamed")
        .collect();
    // Four in the step's folder (its sweep), one beside it (the final sweep).
    assert_eq!(renamed.len(), 5, "{audit}");
    let paths: Vec<&str> = renamed.iter().filter_map(|e| e["path"].as_str()).collect();
    for want in [
        "artifacts/leak/[REDACTED].txt",
        "artifacts/leak/name-[REDACTED].log",
        "artifacts/leak/zw-[REDACTED].log",
        "artifacts/leak/dir-[REDACTED]",
        "artifacts/late-[REDACTED].txt",
    ] {
        assert!(paths.contains(&want), "{want} not in {paths:?}");
    }
    for e in &renamed {
        let late = e["path"] == "artifacts/late-[REDACTED].txt";
        assert_eq!(e.get("step").is_none(), late, "{e}");
        if !late {
            assert_eq!(e["step"], "leak", "{e}");
        }
    }
    assert!(env.out.join("artifacts/late-[REDACTED].txt").exists());
    let outputs = &env.step("leak")["outputs"];
    for k in ["whole", "half", "hexed", "reversed"] {
        assert_eq!(outputs[k], "[REDACTED]", "{outputs:#}");
    }
    let diff = std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap();
    assert!(diff.contains("leaked-[REDACTED].txt"), "{diff}");
    assert!(diff.contains("token = [REDACTED]"), "{diff}");
    // The workspace file itself is the step's product: left as written.
    assert!(
        env.ws
            .join(format!("leaked-{}.txt", &SECRET[6..16]))
            .exists()
    );
    every_key_is_vocabulary(&env);
}

/// plangate's own words are never masked as pieces (a secret holding
/// `fingerprint` must not make the report unreadable): every key of the JSON
/// files a run writes is in the redaction layer's vocabulary.
fn every_key_is_vocabulary(env: &Env) {
    fn keys(v: &serde_json::Value, into: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    into.push(k.clone());
                    // The outputs' names are the step's, not plangate's.
                    if k != "outputs" {
                        keys(x, into);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, into)),
            _ => {}
        }
    }
    let vocabulary = include_str!("../../src/redact/vocabulary.txt");
    let mut found = Vec::new();
    keys(&env.report(), &mut found);
    keys(
        &crate::harness::read_json(&env.out.join("artifacts/manifest.json")),
        &mut found,
    );
    for line in std::fs::read_to_string(env.out.join("audit.jsonl"))
        .unwrap()
        .lines()
    {
        keys(&serde_json::from_str(line).unwrap(), &mut found);
    }
    for k in found.iter().filter(|k| k.len() >= 8) {
        assert!(
            vocabulary.lines().any(|w| w == k),
            "`{k}` is missing from src/redact/vocabulary.txt"
        );
    }
}

#[test]
fn the_checker_finds_every_family_it_looks_for() {
    // A test that cannot fail is a defect: each family the run above must
    // mask is found by `leaked` when left in the clear.
    use base64::Engine;
    let rev: String = SECRET.chars().rev().collect();
    let split = format!("{}\u{200b}{}", &SECRET[..5], &SECRET[5..]);
    for text in [
        SECRET[..10].to_owned(),
        SECRET[10..].to_owned(),
        rev[3..11].to_owned(),
        hex::encode(&SECRET[2..10]),
        hex::encode_upper(SECRET),
        base64::engine::general_purpose::STANDARD.encode(format!("x{SECRET}")),
        split,
        SECRET[..12].to_ascii_uppercase(),
        format!("{}\n{}\n{}", &SECRET[..3], &SECRET[3..6], &SECRET[6..9]),
        SECRET.bytes().map(|b| format!("{b:02x} ")).collect(),
    ] {
        assert!(leaked(text.as_bytes(), SECRET).is_some(), "{text}");
    }
    assert_eq!(leaked(b"[REDACTED] and other text", SECRET), None);
}

/// A declared secret with the signs a URL escapes (made up).
const SIGNED: &str = "aB3/dE6+gH9/jK2+mN5/pQ8=xY7";
/// A CI credential (made up) the plan quotes escaped.
const JOB_TOKEN: &str = "Hd7Jc2Vx9Tq4Mz8Pw3Gk";

const ENCODED: &str = include_str!("../fixtures/secret_pieces/encoded.sh");

/// The escaped and numbered spellings of `w` a piece may not show in.
fn spellings(w: &[u8]) -> Vec<String> {
    let each = |f: &dyn Fn(u8) -> String, sep: &str| -> String {
        w.iter().map(|&b| f(b)).collect::<Vec<_>>().join(sep)
    };
    let url: String = w
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    vec![
        url,
        each(&|b| format!("%{b:02x}"), ""),
        each(&|b| format!("{b:02x}"), ":"),
        each(&|b| format!("{b:02x}"), "-"),
        each(&|b| format!("\\x{b:02x}"), ""),
        each(&|b| format!("\\u{b:04x}"), ""),
        each(&|b| format!("\\u{{{b:02x}}}"), ""),
        each(&|b| format!("0x{b:02x}"), " "),
        each(&|b| format!("0x{b:02x}"), ", "),
        each(&|b| format!("&#x{b:02x};"), ""),
        each(&|b| format!("&#{b};"), ""),
        each(&|b| format!("{b}"), ", "),
        each(&|b| format!("{b:03o}"), " "),
        each(&|b| format!("\\{b:03o}"), ""),
    ]
}

#[test]
fn no_escaped_numbered_or_chunked_spelling_of_a_secret_leaves_a_run() {
    let env = Env::new();
    env.write("encoded.sh", ENCODED);
    // The CI credential's pieces, percent-encoded and as colon hex, in the plan.
    let pct: String = JOB_TOKEN.bytes().map(|b| format!("%{b:02X}")).collect();
    let colon: Vec<String> = JOB_TOKEN.bytes().map(|b| format!("{b:02x}")).collect();
    let plan = format!(
        "version: 1\nid: encoded\npolicy: {{risk_tolerance: high, fail_on_secrets: false, max_parallel: 1}}\nsteps:\n\
         \x20 - id: leak\n    tool: bash\n    secrets: [ENCODED_TOKEN]\n    parameters: {{sandbox: false, command: 'bash encoded.sh', show_cli: true}}\n\
         \x20 - id: quote\n    tool: bash\n    dependencies: [leak]\n    parameters: {{sandbox: false, command: \"echo 'ci: {pct}' && echo 'ci hex: {}'\", show_cli: true}}\n",
        colon.join(":"),
    );
    let plan_path = env.write("plan.yaml", &plan);
    let junit = env.tmp().join("junit.xml");
    let summary = env.tmp().join("summary.md");
    let o = env
        .run_cmd(&plan_path)
        .args(["--approve", "leak,quote", "--sandbox-backend", "none"])
        .arg("--junit")
        .arg(&junit)
        .env("ENCODED_TOKEN", SIGNED)
        .env("CI_JOB_TOKEN", JOB_TOKEN)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let report = env.report();
    assert_eq!(code(&o), 0, "{}\n{report:#}", stderr(&o));
    let mut texts = vec![
        ("stdout".to_owned(), o.stdout.clone()),
        ("stderr".to_owned(), o.stderr.clone()),
        ("junit".to_owned(), std::fs::read(&junit).unwrap()),
        ("summary".to_owned(), std::fs::read(&summary).unwrap()),
    ];
    for (rel, bytes) in everything_under(&env.out) {
        texts.push((format!("the name {rel}"), rel.clone().into_bytes()));
        texts.push((rel, bytes));
    }
    for secret in [SIGNED, JOB_TOKEN] {
        let mut bad: Vec<String> = pieces(secret);
        for w in secret.as_bytes().windows(8) {
            bad.extend(spellings(w).into_iter().map(|s| s.to_ascii_lowercase()));
        }
        // The 7-byte chunks glued by other text: none is left.
        if secret == SIGNED {
            bad.extend(
                secret
                    .as_bytes()
                    .chunks(7)
                    .map(|c| String::from_utf8_lossy(c).to_ascii_lowercase()),
            );
        }
        for (name, bytes) in &texts {
            let text = String::from_utf8_lossy(bytes).to_ascii_lowercase();
            if let Some(p) = bad.iter().find(|p| text.contains(p.as_str())) {
                panic!("{name} shows {p:?} (of {secret}):\n{text}");
            }
        }
    }
    // Every spelling was printed, and masked (not missing).
    let out = std::fs::read_to_string(env.out.join("artifacts/leak/stdout.txt")).unwrap();
    for label in [
        "url: https://bucket.example.com/obj?sig=[REDACTED]&x=1",
        "percent every byte: [REDACTED]",
        "colon hex: :[REDACTED]:",
        "x escapes: [REDACTED]",
        "u escapes: [REDACTED]",
        "0x list: [REDACTED]",
        "0x commas: {[REDACTED]}",
        "html hex: [REDACTED]",
        "html dec: [REDACTED]",
        "decimal list: [[REDACTED]]",
        "octal escapes: [REDACTED]",
        "chunks json: [\"[REDACTED]\"]",
        "chunks keys: a=[REDACTED]",
        "x: [REDACTED]",
    ] {
        assert!(out.contains(label), "{label}: {out}");
    }
    let err = std::fs::read_to_string(env.out.join("artifacts/leak/stderr.txt")).unwrap();
    for label in [
        "dash hex: [REDACTED]",
        "braced u: [REDACTED]",
        "od -b: [REDACTED]",
        "chunks path: /[REDACTED]",
    ] {
        assert!(err.contains(label), "{label}: {err}");
    }
    let outputs = &env.step("leak")["outputs"];
    for k in ["url", "colon", "xesc", "chunks"] {
        assert_eq!(outputs[k], "[REDACTED]", "{outputs:#}");
    }
    let quoted = std::fs::read_to_string(env.out.join("artifacts/quote/stdout.txt")).unwrap();
    assert!(
        quoted.contains("ci: [REDACTED]") && quoted.contains("ci hex: [REDACTED]"),
        "{quoted}"
    );
}

#[test]
fn the_spellings_checker_finds_each_spelling() {
    // The run above is only as good as its checker: each spelling the
    // fixture prints, of a piece, is found when left in the clear.
    let w = &SIGNED.as_bytes()[3..11];
    let all = spellings(w);
    assert!(all.contains(&"%2FdE6%2BgH9".to_owned()), "{all:?}");
    assert!(
        all.contains(&"2f:64:45:36:2b:67:48:39".to_owned()),
        "{all:?}"
    );
    assert!(all.contains(&"&#47;&#100;&#69;&#54;&#43;&#103;&#72;&#57;".to_owned()));
    assert!(all.contains(&"057 144 105 066 053 147 110 071".to_owned()));
}

/// A declared secret in a real token's shape (made up).
const MY_TOKEN: &str = "ghp_Qx7Hv2pL9wW4mKa8Rt3Zc5Yb1Nd6Fe0Gh2Jk";

const FOLDED: &str = include_str!("../fixtures/secret_pieces/folded.sh");

/// `text` as a reader takes it, for the forms `folded.sh` prints: the
/// combining marks it uses dropped, fullwidth, bold, circled, superscript
/// and small forms and the accented letters it uses read as ASCII.
/// Independent of plangate's own folding.
fn read_plain(text: &str) -> String {
    let shift = |c: char, from: u32, to: char| {
        char::from_u32(u32::from(to) + (u32::from(c) - from)).unwrap_or(c)
    };
    text.chars()
        .filter(|c| !matches!(c, '\u{300}'..='\u{36f}' | '\u{20d0}'..='\u{20ff}' | '\u{93f}'))
        .map(|c| match u32::from(c) {
            0xff01..=0xff5e => shift(c, 0xff01, '!'),
            0x1d400..=0x1d419 => shift(c, 0x1d400, 'A'),
            0x1d41a..=0x1d433 => shift(c, 0x1d41a, 'a'),
            0x1d7ce..=0x1d7d7 => shift(c, 0x1d7ce, '0'),
            0x24b6..=0x24cf => shift(c, 0x24b6, 'A'),
            0x24d0..=0x24e9 => shift(c, 0x24d0, 'a'),
            0x2460..=0x2468 => shift(c, 0x2460, '1'),
            0x24ea => '0',
            0x2070..=0x2079 => shift(c, 0x2070, '0'),
            0xb9 => '1',
            0xb2 => '2',
            0xb3 => '3',
            0xfe4d => '_',
            _ => match c {
                'á' => 'a',
                'ĝ' => 'g',
                'ĥ' => 'h',
                'ṕ' => 'p',
                'ŵ' => 'w',
                'Ḱ' => 'K',
                'Ĺ' => 'L',
                'Ñ' => 'N',
                'Ż' => 'Z',
                _ => c,
            },
        })
        .collect()
}

/// The texts a piece of `secret` may not show in besides [`pieces`]: the
/// base64 (both alphabets, three alignments) of its reverse (11 characters)
/// and of its hex and its reverse's hex, either case (22 characters), and
/// its hex reversed (16 digits).
fn stacked_pieces(secret: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let rev: String = secret.chars().rev().collect();
    let mut out = Vec::new();
    let hexed = hex::encode(secret);
    for w in hexed
        .chars()
        .rev()
        .collect::<String>()
        .as_bytes()
        .windows(16)
    {
        out.push(String::from_utf8_lossy(w).into_owned());
    }
    let sources = [
        (rev.clone(), 11),
        (hexed.clone(), 22),
        (hexed.to_ascii_uppercase(), 22),
        (hex::encode(&rev), 22),
        (hex::encode_upper(&rev), 22),
    ];
    for (source, n) in sources {
        for k in 0..3 {
            let shifted = format!("{}{source}", "\0".repeat(k));
            for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                let text = engine.encode(&shifted);
                let (first, last) = ((8 * k).div_ceil(6), 8 * shifted.len() / 6);
                // Exact case: base64 is case-sensitive.
                out.extend(
                    text.as_bytes()[first..last]
                        .windows(n)
                        .map(|w| String::from_utf8_lossy(w).into_owned()),
                );
            }
        }
    }
    out
}

/// The first piece of `secret` that `bytes` shows read plainly or as stacked transforms.
fn leaked_folded(bytes: &[u8], secret: &str) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let plain = read_plain(&text);
    if let Some(p) = leaked(plain.as_bytes(), secret) {
        return Some(p);
    }
    let lower = text.to_ascii_lowercase();
    stacked_pieces(secret)
        .into_iter()
        .find(|p| text.contains(p.as_str()) || (p.len() == 16 && lower.contains(p.as_str())))
}

#[test]
fn no_marked_compatibility_or_stacked_spelling_of_a_secret_leaves_a_run() {
    let env = Env::new();
    env.write("folded.sh", FOLDED);
    let plan = "version: 1\nid: folded\npolicy: {risk_tolerance: high, max_parallel: 1}\nsteps:\n\
         \x20 - id: leak\n    tool: bash\n    secrets: [MY_TOKEN]\n    parameters: {sandbox: false, command: 'bash folded.sh', show_cli: true}\n";
    let plan_path = env.write("plan.yaml", plan);
    let o = env
        .run_cmd(&plan_path)
        .args(["--approve", "leak", "--sandbox-backend", "none"])
        .env("MY_TOKEN", MY_TOKEN)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let report = env.report();
    // A declared value the layer masks is no finding (SPEC "Secrets"): the
    // run succeeds with none, fail_on_secrets notwithstanding.
    assert_eq!(code(&o), 0, "{}\n{report:#}", stderr(&o));
    assert_eq!(report["status"], "success", "{report:#}");
    assert_eq!(
        report["findings"].as_array().map(Vec::len),
        Some(0),
        "{report:#}"
    );
    let mut texts = vec![
        ("stdout".to_owned(), o.stdout.clone()),
        ("stderr".to_owned(), o.stderr.clone()),
    ];
    for (rel, bytes) in everything_under(&env.out) {
        texts.push((format!("the name {rel}"), rel.clone().into_bytes()));
        texts.push((rel, bytes));
    }
    for (name, bytes) in &texts {
        if let Some(p) = leaked_folded(bytes, MY_TOKEN) {
            panic!(
                "{name} shows {p:?} (a piece of {MY_TOKEN}):\n{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    // Every spelling was printed, and masked whole: nothing of it is left
    // on its line but what base64 holds of the bytes around it, or (escaped
    // marks) the 4 bytes before the `_` that escape decoding takes for a
    // separator (no piece).
    let out = std::fs::read_to_string(env.out.join("artifacts/leak/stdout.txt")).unwrap();
    let err = std::fs::read_to_string(env.out.join("artifacts/leak/stderr.txt")).unwrap();
    for (text, labels) in [
        (
            &out,
            &[
                "strike",
                "acute",
                "underline",
                "slash",
                "several marks",
                "some marked",
                "fullwidth",
                "bold",
                "circled",
                "superscript",
                "accented",
                "json marks",
                "percent fullwidth",
                "base64 reversed",
                "base64 hex",
                "base64 HEX",
                "base64url reversed hex",
                "reversed hex text",
            ][..],
        ),
        (
            &err,
            &[
                "spacing marks",
                "fullwidth struck",
                "base64 shifted reversed",
            ][..],
        ),
    ] {
        for label in labels {
            let want = format!("{label}: ");
            let line = text
                .lines()
                .find(|l| l.starts_with(&want))
                .unwrap_or_else(|| panic!("no {label} line in {text}"));
            assert!(
                line.strip_prefix(&want).is_some_and(|rest| {
                    let left = rest.replace("[REDACTED]", "").replace("\\u0336", "");
                    rest.contains("[REDACTED]") && left.len() <= 4
                }),
                "{line}"
            );
        }
    }
    let notes = std::fs::read_to_string(env.out.join("artifacts/leak/notes.txt")).unwrap();
    assert_eq!(notes, "written: [REDACTED]\n");
    // Ordinary text beyond ASCII is left as it was written.
    let plain = "plain: Crème brûlée, naïve café — 漢字とカタカナ, 한국어, Ωμέγα, 😀🚀, ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ, x² ①\n";
    assert!(out.contains(plain), "{out}");
}
