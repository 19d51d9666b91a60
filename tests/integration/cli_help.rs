//! `--help` of every subcommand: every flag has its own, non-empty help text
//! (a doc comment left above the wrong field glues two texts together and
//! leaves a flag without one).

use std::collections::BTreeMap;

use crate::harness::Env;

const SUBCOMMANDS: [&str; 8] = [
    "run", "validate", "schema", "draft", "scan", "report", "shard", "merge",
];

/// The options of a `--help` page: flag line -> its help text (joined lines).
fn options(help: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_options = false;
    for line in help.lines() {
        if line.starts_with("Options:") {
            in_options = true;
            continue;
        }
        if !in_options {
            continue;
        }
        if !line.is_empty() && !line.starts_with(' ') {
            break;
        }
        let trimmed = line.trim_start();
        // `-q` or `--flag`; `- low: …` is an entry of a flag's possible values.
        let is_flag = trimmed.starts_with("--")
            || (trimmed.starts_with('-')
                && trimmed[1..].starts_with(|c: char| c.is_alphanumeric()));
        if is_flag {
            // `  -q, --quiet  Text` or `      --flag <V>` with the text on the next lines.
            let (flag, text) = match trimmed.find("  ") {
                Some(i) => (&trimmed[..i], trimmed[i..].trim()),
                None => (trimmed, ""),
            };
            out.push((flag.to_owned(), text.to_owned()));
        } else if let Some((_, text)) = out.last_mut()
            && !trimmed.is_empty()
        {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(trimmed);
        }
    }
    out
}

#[test]
fn every_flag_of_every_subcommand_has_its_own_help_text() {
    let env = Env::new();
    for sub in SUBCOMMANDS {
        let o = env.cmd().args([sub, "--help"]).output().expect("help");
        assert!(o.status.success(), "{sub} --help failed");
        let help = String::from_utf8_lossy(&o.stdout).into_owned();
        let opts = options(&help);
        assert!(opts.len() >= 2, "{sub}: no options found in\n{help}");
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (flag, text) in opts {
            // Drop `[env: …]`, `[default: …]` and `[possible values: …]` tails.
            let own = text.split(" [").next().unwrap_or("").trim().to_owned();
            assert!(!own.is_empty(), "{sub}: `{flag}` has no help text\n{help}");
            if let Some(other) = seen.insert(own.clone(), flag.clone()) {
                panic!("{sub}: `{flag}` and `{other}` share the help text `{own}`");
            }
        }
    }
}

#[test]
fn max_parallel_and_shard_each_have_their_own_text() {
    let env = Env::new();
    let o = env.cmd().args(["run", "--help"]).output().expect("help");
    let opts = options(&String::from_utf8_lossy(&o.stdout));
    let text_of = |name: &str| {
        opts.iter()
            .find(|(f, _)| f.contains(name))
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    assert!(text_of("--max-parallel").starts_with("Steps at once"));
    let shard = text_of("--shard");
    assert!(shard.starts_with("Run only shard i of N"), "{shard}");
    assert!(!shard.contains("Steps at once"), "{shard}");
}
