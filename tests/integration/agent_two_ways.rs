//! Issue 27 through the binary: an envelope answer whose strings can be closed
//! two ways into well-formed JSON fails the step (exit 5), nothing reaches the
//! workspace, and the retry prompt says where the readings part and to escape
//! the quotes; the escaped answer is then accepted.

use crate::harness::{Env, code, fake_agent, prompt_of, read_json, stderr};
use std::path::{Path, PathBuf};

fn corpus(group: &str) -> Vec<(String, String)> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent_output/envelope_corpus")
        .join(group);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

fn one_step(agents: &str, max_attempts: u32) -> String {
    format!(
        "version: 1\nid: two\npolicy: {{risk_tolerance: medium}}\nagents:\n{agents}steps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: coder\n      prompt: Write the file.\n      max_attempts: {max_attempts}\n"
    )
}

const TWO_WAYS: &str = "{\"status\": \"OK\", \"summary\": \"say \"hi\", \"note\": \"y\", \"artifacts\": [{\"path\": \"a.txt\", \"content\": \"x\"}]}";
const ESCAPED: &str = "{\"status\": \"OK\", \"summary\": \"say \\\"hi\\\", \\\"note\\\": \\\"y\", \"artifacts\": [{\"path\": \"a.txt\", \"content\": \"x\"}]}";

#[test]
fn an_answer_that_reads_two_ways_fails_the_step_and_the_retry_says_where() {
    let env = Env::new();
    let (dir, agents) = fake_agent(&env, "coder", &[TWO_WAYS, TWO_WAYS]);
    let o = env.run(&one_step(&agents, 2), &[]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let s = env.step("fix");
    assert_eq!(s["status"], "rejected");
    for attempt in 0..2 {
        let r = &s["agent_attempts"][attempt]["rejections"][0];
        assert_eq!(r["category"], "ambiguous", "{r}");
        let msg = r["message"].as_str().unwrap();
        // The summary's quote after `hi` (column 37) can close it, then "note" is a key.
        assert!(msg.contains("reads two ways"), "{msg}");
        assert!(msg.contains("the value of \"summary\""), "{msg}");
        assert!(msg.contains("line 1 column 37"), "{msg}");
        assert!(msg.contains("the key \"note\""), "{msg}");
        assert_eq!(
            (r["line"].as_u64(), r["column"].as_u64()),
            (Some(1), Some(37))
        );
    }
    let retry = prompt_of(&dir, 2);
    assert!(retry.contains("reads two ways"), "{retry}");
    assert!(
        retry.contains("escape every \" inside a string as \\\""),
        "{retry}"
    );
    assert!(
        !env.ws.join("a.txt").exists(),
        "nothing of a refused answer is written"
    );
    assert!(!env.out.join("artifacts/fix/parsed.json").exists());
    let failure = read_json(&env.out.join("artifacts/fix/rejected.json"));
    assert_eq!(failure["status"], "FAIL");
    assert!(
        failure["summary"]
            .as_str()
            .unwrap()
            .contains("reads two ways")
    );
}

#[test]
fn the_escaped_answer_is_accepted_on_retry() {
    let env = Env::new();
    let (_, agents) = fake_agent(&env, "coder", &[TWO_WAYS, ESCAPED]);
    let o = env.run(&one_step(&agents, 2), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let parsed = read_json(&env.out.join("artifacts/fix/parsed.json"));
    assert_eq!(parsed["summary"], "say \"hi\", \"note\": \"y");
    assert_eq!(std::fs::read_to_string(env.ws.join("a.txt")).unwrap(), "x");
}

#[test]
fn every_two_way_answer_of_the_corpus_is_refused_through_the_binary() {
    let env = Env::new();
    let cases = corpus("two_ways");
    let mut agents = String::new();
    let mut steps = String::new();
    for (i, (_, text)) in cases.iter().enumerate() {
        let (_, yaml) = fake_agent(&env, &format!("c{i}"), &[text]);
        agents.push_str(&yaml);
        steps.push_str(&format!(
            "  - id: s{i}\n    tool: agent\n    parameters: {{agent: c{i}, prompt: Answer., max_attempts: 1}}\n"
        ));
    }
    let plan = format!(
        "version: 1\nid: two\npolicy: {{risk_tolerance: medium, fail_fast: false}}\nagents:\n{agents}steps:\n{steps}"
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let mut said = 0;
    for (i, (name, _)) in cases.iter().enumerate() {
        let s = env.step(&format!("s{i}"));
        assert_eq!(s["status"], "rejected", "{name}: {s}");
        let all = s["agent_attempts"][0]["rejections"].to_string();
        assert!(
            all.contains("ambiguous") || all.contains("escaping"),
            "{name}: {all}"
        );
        if all.contains("reads two ways") {
            said += 1;
        }
    }
    // Two cases are refused as two boundaries / a swallowed key instead (see the corpus).
    assert!(said + 2 >= cases.len(), "{said} of {} say it", cases.len());
    for f in [
        "a.txt",
        "a.py",
        "a.sh",
        "b.sh",
        "package.json",
        "e.json",
        "p.txt",
    ] {
        assert!(
            !env.ws.join(f).exists(),
            "{f} written from a refused answer"
        );
    }
}

#[test]
fn every_one_reading_answer_of_the_corpus_is_parsed_exactly_through_the_binary() {
    let env = Env::new();
    let cases = corpus("unique");
    let mut agents = String::new();
    let mut steps = String::new();
    for (i, (_, text)) in cases.iter().enumerate() {
        let (_, yaml) = fake_agent(&env, &format!("u{i}"), &[text]);
        agents.push_str(&yaml);
        steps.push_str(&format!(
            "  - id: s{i}\n    tool: agent\n    parameters: {{agent: u{i}, prompt: Answer., max_attempts: 1}}\n"
        ));
    }
    let plan = format!(
        "version: 1\nid: one\npolicy: {{risk_tolerance: medium, fail_fast: false}}\nagents:\n{agents}steps:\n{steps}"
    );
    let o = env.run(&plan, &[]);
    // Some answers report FAIL (the agent's own verdict): the run is not green, but every
    // answer is accepted and parsed exactly.
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent_output/envelope_corpus/unique");
    for (i, (name, _)) in cases.iter().enumerate() {
        let want = read_json(&dir.join(format!("{name}.json")));
        let got = read_json(&env.out.join(format!("artifacts/s{i}/parsed.json")));
        assert_eq!(got, want, "{name}");
    }
}
