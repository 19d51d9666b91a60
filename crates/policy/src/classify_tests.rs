use super::*;
use std::path::Path;

fn ctx() -> ClassifyContext<'static> {
    ClassifyContext {
        workspace: Path::new("/work/ws"),
        working_dir: Path::new("/work/ws"),
        home: Some(Path::new("/home/ci")),
    }
}

/// Both fixture files: `commands.tsv` (line numbers as is) and
/// `families.tsv` (one group per `# family:` comment; line numbers + 10000).
fn fixture() -> Vec<(usize, &'static str, &'static str)> {
    let files = [
        (
            0,
            include_str!("../../../tests/fixtures/classifier/commands.tsv"),
        ),
        (
            10_000,
            include_str!("../../../tests/fixtures/classifier/families.tsv"),
        ),
    ];
    files
        .into_iter()
        .flat_map(|(base, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
                .filter_map(move |(i, l)| l.split_once('\t').map(|(e, c)| (base + i + 1, e, c)))
        })
        .collect()
}

#[test]
fn fixture_cases_match() {
    let cases = fixture();
    assert!(cases.len() >= 230, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for (line, expected, command) in &cases {
        let got = classify_bash(command, &ctx());
        if got.label() != *expected {
            failures.push(format!(
                "line {line}: `{command}` expected {expected}, got {} ({})",
                got.label(),
                got.reason()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn fixture_labels_are_known() {
    let known = ["safe", "moderate", "dangerous", "blocked", "unclassifiable"];
    for (line, expected, _) in fixture() {
        assert!(
            known.contains(&expected),
            "line {line}: bad label {expected}"
        );
    }
}

#[test]
fn reasons_are_one_line() {
    for (_, _, command) in fixture() {
        let c = classify_bash(command, &ctx());
        let reason = c.reason();
        assert!(!reason.trim().is_empty(), "empty reason for `{command}`");
        assert!(!reason.contains('\n'), "multi-line reason for `{command}`");
    }
}

#[test]
fn garbage_never_panics() {
    let mut inputs: Vec<String> = [
        "",
        " ",
        "\t\n",
        "'",
        "\"",
        "`",
        "$(",
        "${",
        "$((",
        "(((",
        ")))",
        "{",
        "}",
        ";;",
        "&&",
        "||",
        "|",
        "&",
        "<<",
        "<<EOF",
        "cat <<EOF\nno end",
        "cat <<'EOF'\nx\nEOF\n",
        "\0",
        "ls\0-la",
        "rm -rf \0/",
        "$'\\x'",
        "$'\\u{zz}'",
        "echo ${!}",
        "${x:-$(}",
        "`echo",
        "!",
        "! !",
        "[[",
        "[[ ! ]]",
        "case",
        "case x in",
        "if",
        "fi",
        "for",
        "for ((;;",
        "(( 1 +",
        "f() {",
        "function",
        "a=(",
        "<(",
        ">(ls",
        "ls >",
        "ls 2>&",
        "\\",
        "echo \\",
        "x=$'\\377'",
        "🦀 rm -rf /",
        "ls \u{202e}",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    inputs.push("(".repeat(10_000));
    inputs.push(format!("{}ls{}", "(".repeat(10_000), ")".repeat(10_000)));
    inputs.push(format!(
        "echo {}x{}",
        "$(".repeat(10_000),
        ")".repeat(10_000)
    ));
    inputs.push(format!("{}ls;{}", "{ ".repeat(5_000), "} ".repeat(5_000)));
    inputs.push(format!(
        "{}ls;{}",
        "if true; then ".repeat(3_000),
        "fi; ".repeat(3_000)
    ));
    inputs.push(format!("[[ {}x ]]", "! ".repeat(10_000)));
    inputs.push(format!("echo {}", "`echo ".repeat(1_000)));
    inputs.push("ls | ".repeat(5_000) + "ls");
    inputs.push("x".repeat(200_000));
    let nested_bash = (0..6).fold("ls".to_string(), |acc, _| {
        format!("bash -c {}", shell_quote(&acc))
    });
    inputs.push(nested_bash);
    inputs.push("eval ".repeat(1_000) + "ls");
    for input in &inputs {
        let start = std::time::Instant::now();
        let c = classify_bash(input, &ctx());
        assert!(!c.reason().is_empty());
        let took = start.elapsed();
        assert!(
            took.as_secs() < 5,
            "too slow ({took:?}) on {:?}",
            short(input)
        );
    }
}

fn short(s: &str) -> String {
    s.chars().take(40).collect()
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Every program the Rust judges with an option table has one in the
/// rules file (without it the program is unclassifiable).
#[test]
fn programs_judged_in_rust_have_option_tables() {
    let names = [
        "sed",
        "gsed",
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "busybox-awk",
        "date",
        "split",
        "csplit",
        "patch",
        "less",
        "more",
        "most",
        "man",
        "rg",
        "cp",
        "mv",
        "ln",
        "install",
        "scp",
        "rsync",
        "touch",
        "mkdir",
        "truncate",
        "tee",
        "mkfifo",
        "mknod",
        "sponge",
        "tar",
        "unzip",
        "7z",
        "7za",
        "zip",
        "ssh",
        "curl",
        "wget",
        "gzip",
        "shred",
        "chmod",
    ];
    for name in names {
        assert!(rules::raw().program(name).is_some(), "no table for {name}");
    }
    let c = classify_bash("nosuchprogram-x -o /etc/x", &ctx());
    assert_ne!(c.label(), "safe");
}

#[test]
fn home_unknown_makes_tilde_unknown() {
    let c = ClassifyContext {
        home: None,
        ..ctx()
    };
    assert_eq!(classify_bash("rm -rf ~/x", &c).risk(), Risk::Dangerous);
    assert_eq!(classify_bash("ls ~", &c).risk(), Risk::Safe);
}

#[test]
fn a_word_opening_many_brackets_is_refused_not_a_crash() {
    // brush-parser overflowed its stack on this (an abort, some 4,000 deep
    // on a 2 MB thread stack): run it on such a stack.
    for unit in ["a[", "$[ "] {
        let command = format!("echo {}", unit.repeat(4000));
        let run = move || classify_bash(&command, &ctx()).label();
        let thread = std::thread::Builder::new().stack_size(2 << 20).spawn(run);
        assert_eq!(thread.unwrap().join().unwrap(), "unclassifiable");
    }
}

#[test]
fn every_arithmetic_test_operator_evaluates_again() {
    // walk.rs reads `[[ ]]` operators from brush-parser's printed predicates.
    let again = "'a[$(id)]'";
    let mut cases: Vec<String> = ["-v", "-R"]
        .iter()
        .map(|op| format!("[[ {op} {again} ]]"))
        .collect();
    for op in ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"] {
        cases.push(format!("[[ 1 {op} {again} ]]"));
        cases.push(format!("[[ {again} {op} 1 ]]"));
        cases.push(format!("test 1 {op} {again}"));
    }
    for c in &cases {
        assert_eq!(classify_bash(c, &ctx()).label(), "unclassifiable", "{c}");
    }
    for c in [
        "[[ -n 'a[$(id)]' ]]",
        "[[ 'a[$(id)]' == 1 ]]",
        "test 1 -eq $(id)",
    ] {
        assert_eq!(classify_bash(c, &ctx()).label(), "safe", "{c}");
    }
}
