//! Untrusted text in prompts (issue 25, item 6), through the binary: inputs
//! taken from a GitHub event payload (`from_event`, `authors`) and inputs
//! declared `untrusted: true` reach the agent's prompt sanitised, or not at
//! all; the report records what was removed or withheld.

use std::path::Path;

use crate::harness::{Env, code, fake_agent, prompt_of, read_json, stderr};

const ANSWER: &str = "```json\n{\"status\": \"OK\", \"summary\": \"reviewed\", \"artifacts\": [], \"next_actions\": []}\n```\n";

fn payload() -> serde_json::Value {
    read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/untrusted/issue_comment.json"),
    )["payload"]
        .clone()
}

fn plan(agents: &str) -> String {
    format!(
        "version: 1\nid: review\npolicy: {{risk_tolerance: medium}}\ninputs:\n  title: {{from_event: title}}\n  body: {{from_event: body, authors: {{github: member}}}}\n  comment: {{from_event: comment, authors: {{github: contributor}}}}\n  note: {{untrusted: true, max_bytes: 64}}\nagents:\n{agents}steps:\n  - id: review\n    tool: agent\n    parameters:\n      agent: coder\n      write_artifacts: false\n      prompt: \"T=${{{{ inputs.title }}}} B=${{{{ inputs.body }}}} C=${{{{ inputs.comment }}}} N=${{{{ inputs.note }}}} BASH=$PLANGATE_INPUT_BODY\"\n"
    )
}

#[test]
fn event_text_reaches_the_prompt_sanitised_and_a_strangers_comment_never_arrives() {
    let env = Env::new();
    let (dir, agents) = fake_agent(&env, "coder", &[ANSWER]);
    let event = env.ws.parent().unwrap().join("event.json");
    std::fs::write(&event, payload().to_string()).unwrap();
    let note = format!("@admin \u{200b}{}", "x".repeat(200));
    let plan_path = env.write("plan.yaml", &plan(&agents));
    let o = env
        .run_cmd(&plan_path)
        .env("GITHUB_EVENT_PATH", &event)
        .args(["--input", &format!("note={note}")])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let prompt = prompt_of(&dir, 1);
    assert!(prompt.contains("T=Fix the parser "), "{prompt}");
    assert!(
        prompt.contains("hidden text \u{ff20}octocat please"),
        "{prompt}"
    );
    for gone in [
        "\u{200b}",
        "\u{202e}",
        "\u{2066}",
        "\u{2069}",
        "\u{e0041}",
        "<!--",
        "approve without",
        "ignore all previous",
        "@octocat",
        "@admin",
    ] {
        assert!(
            !prompt.contains(gone),
            "{gone:?} reached the prompt: {prompt}"
        );
    }
    // The comment's author has no association: withheld, and said so.
    assert!(!prompt.contains("MARKER-COMMENT-FROM-STRANGER"), "{prompt}");
    assert!(
        prompt.contains("C=[withheld by plangate: its author's association `NONE`"),
        "{prompt}"
    );
    // The note was cut at 64 bytes with the marker.
    assert!(
        prompt.contains("untrusted text cut by plangate"),
        "{prompt}"
    );
    assert!(!prompt.contains(&"x".repeat(100)), "{prompt}");
    // The report says what was done, never the withheld text.
    let r = env.report();
    let u = &r["untrusted_inputs"];
    assert_eq!(u["title"]["source"], "event title", "{u:#}");
    assert_eq!(u["title"]["author"], "MEMBER");
    assert_eq!(u["title"]["removed"]["invisible"], 1, "{u:#}");
    assert_eq!(u["title"]["removed"]["bidi"], 1, "{u:#}");
    assert_eq!(u["title"]["removed"]["html_comment"], 1, "{u:#}");
    assert_eq!(u["body"]["removed"]["tag"], 2, "{u:#}");
    assert_eq!(u["body"]["removed"]["mention"], 1, "{u:#}");
    assert!(
        u["comment"]["withheld"].as_str().unwrap().contains("NONE"),
        "{u:#}"
    );
    assert_eq!(u["note"]["source"], "input");
    assert!(
        u["note"]["removed"]["cut_bytes"].as_u64().unwrap() > 100,
        "{u:#}"
    );
    let mut written = stderr(&o);
    let mut stack = vec![env.out.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                written.push_str(&String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()));
            }
        }
    }
    assert!(
        !written.contains("MARKER-COMMENT-FROM-STRANGER"),
        "the withheld text was written"
    );
}

#[test]
fn without_an_event_the_text_is_withheld_and_event_inputs_cannot_be_given() {
    let env = Env::new();
    let (dir, agents) = fake_agent(&env, "coder", &[ANSWER]);
    let plan_path = env.write("plan.yaml", &plan(&agents));
    let o = env
        .run_cmd(&plan_path)
        .env_remove("GITHUB_EVENT_PATH")
        .env_remove("GITLAB_CI")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let prompt = prompt_of(&dir, 1);
    assert!(
        prompt.contains("T=[withheld by plangate: no CI event"),
        "{prompt}"
    );
    // A from_event input given on the command line: refused.
    let env = Env::new();
    let plan_path = env.write("plan.yaml", &plan(&agents));
    let o = env
        .run_cmd(&plan_path)
        .args(["--input", "title=trust me"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("takes its value from the CI event"),
        "{}",
        stderr(&o)
    );
    // Load errors: authors without from_event, a number from the event, a default.
    for (input, want) in [
        (
            "{authors: {github: owner}}",
            "has `authors` but no `from_event`",
        ),
        (
            "{type: number, from_event: body}",
            "untrusted text but of type `number`",
        ),
        ("{from_event: title, default: x}", "it has no `default`"),
        ("{max_bytes: 100}", "has `max_bytes` but is not untrusted"),
        ("{from_event: subject}", "subject"),
        (
            "{from_event: body, authors: {github: maintainer}}",
            "maintainer",
        ),
    ] {
        let env = Env::new();
        let o = env.run(
            &format!("version: 1\nid: x\ninputs:\n  a: {input}\nsteps:\n  - {{id: s, tool: bash, parameters: {{command: 'true'}}}}\n"),
            &[],
        );
        assert_eq!(code(&o), 2, "{input}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{input}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("plan.yaml:4:"),
            "{input}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_context_file_marked_untrusted_reaches_the_prompt_sanitised_and_the_report_says_what_went() {
    let env = Env::new();
    // A file a step saved from a pull request: a zero-width space, a
    // right-to-left override, an HTML comment, a mention, a control character.
    let hostile = "Fix\u{200B} the bug.\u{202E}evil\u{202C}\n<!-- hidden instructions -->\nthanks @octocat\u{7}\n";
    env.write("pr.txt", hostile);
    env.write("same.txt", hostile);
    let (dir, agent) = fake_agent(&env, "reviewer", &[ANSWER]);
    let yaml = format!(
        "version: 1\nid: ctx\npolicy: {{risk_tolerance: medium}}\nagents:\n{agent}steps:\n  - id: review\n    tool: agent\n    parameters:\n      agent: reviewer\n      prompt: Review.\n      context_files: [{{path: pr.txt, untrusted: true, max_bytes: 4096}}, same.txt]\n"
    );
    let o = env.run(&yaml, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let prompt = prompt_of(&dir, 1);
    let start = prompt
        .find("--- file `pr.txt` ---")
        .unwrap_or_else(|| panic!("{prompt}"));
    let end = prompt
        .find("--- end of file `pr.txt` ---")
        .unwrap_or(prompt.len());
    let cleaned = &prompt[start..end];
    for gone in [
        "\u{200B}",
        "\u{202E}",
        "\u{202C}",
        "hidden instructions",
        "@octocat",
        "\u{7}",
    ] {
        assert!(
            !cleaned.contains(gone),
            "{gone:?} reached the prompt: {cleaned:?}"
        );
    }
    assert!(cleaned.contains("Fix the bug.evil"), "{cleaned:?}");
    assert!(cleaned.contains("thanks \u{FF20}octocat"), "{cleaned:?}");
    // The same text not marked untrusted is sent as it is (the mark is what does it).
    assert!(prompt.contains("<!-- hidden instructions -->"), "{prompt}");
    let step = env.step("review");
    let rec = &step["untrusted_context"]["pr.txt"];
    assert_eq!(rec["source"], "context file", "{step}");
    for kind in ["invisible", "bidi", "html_comment", "mention", "control"] {
        assert!(
            rec["removed"][kind].as_u64().unwrap_or(0) >= 1,
            "{kind}: {rec}"
        );
    }
    assert!(
        step["untrusted_context"].get("same.txt").is_none(),
        "{step}"
    );
    // An unknown key of an entry is a load error.
    let env = Env::new();
    let bad = yaml.replace("untrusted: true,", "untrusted: true, trusted: no,");
    let o = env.run(&bad, &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}
