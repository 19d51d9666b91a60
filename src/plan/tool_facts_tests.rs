//! Every tool's facts, read from a loaded plan (here, above both `plan` and
//! `tools`, so the test adds no edge from `tools` to `plan`).

use crate::tools::spec::Processes;
use std::path::Path;

/// One step of every tool, with what it declares about processes.
const PLAN: &str = r#"version: 1
id: facts
agents:
  cli:
    command: [bash, run-agent.sh]
    network: true
    secrets: [CLI_TOKEN]
  api:
    provider: openai
    base_url: http://127.0.0.1:9/v1
    model: m
    api_key_env: API_KEY_VAR
steps:
  - {id: sh, tool: bash, secrets: [OWN], parameters: {command: "echo a\nb", writable: [target], limits: {file_size_mb: 10}}}
  - {id: vcs, tool: git, parameters: {operation: log}}
  - {id: find, tool: find_in_files, parameters: {query: x}}
  - {id: get, tool: http_request, parameters: {method: GET, url: "https://example.com/"}}
  - {id: zip, tool: archive, parameters: {operation: list, archive_path: a.zip}}
  - {id: scan, tool: secrets_scan, parameters: {path: .}}
  - {id: sys, tool: system_info, parameters: {tools: [git]}}
  - {id: cli, tool: agent, parameters: {agent: cli, prompt: hi}}
  - {id: api, tool: agent, parameters: {agent: api, prompt: hi}}
  - {id: undo, tool: find_in_files, rollback_command: "true", parameters: {query: x}}
"#;

#[test]
fn every_tool_states_its_processes_sandbox_secrets_limits_and_summary() {
    let plan = crate::plan::load_plan_str("facts.yaml", PLAN).unwrap_or_else(|d| panic!("{d:?}"));
    let ws = Path::new("/w");
    let step = |id: &str| {
        plan.steps
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no step {id}"))
    };
    // (id, processes, runs in a sandbox, summary)
    for (id, processes, sandboxed, summary) in [
        ("sh", Processes::Sandboxed, true, Some("bash `echo a b`")),
        ("vcs", Processes::Own, false, None),
        ("find", Processes::None, false, None),
        ("get", Processes::None, false, None),
        ("zip", Processes::None, false, None),
        ("scan", Processes::None, false, None),
        ("sys", Processes::None, false, None),
        ("cli", Processes::Sandboxed, true, Some("agent `cli`")),
        ("api", Processes::None, false, Some("agent `api`")),
        ("undo", Processes::None, true, None),
    ] {
        let s = step(id);
        assert_eq!(s.processes(), processes, "{id}");
        assert_eq!(s.runs_processes(), sandboxed, "{id}");
        assert_eq!(s.sandbox_request(ws, None).is_some(), sandboxed, "{id}");
        assert_eq!(s.action.spec().summary().as_deref(), summary, "{id}");
    }
    let sh = step("sh");
    let req = sh.sandbox_request(ws, None).unwrap_or_default();
    assert_eq!(req.writable, vec![Path::new("/w/target").to_path_buf()]);
    assert!(sh.limits().is_some_and(|l| l.file_size_mb == Some(10)));
    assert!(step("vcs").limits().is_none());
    let names = |id: &str| step(id).secret_names().into_iter().collect::<Vec<_>>();
    assert_eq!(names("sh"), ["OWN"]);
    assert!(names("cli").contains(&"CLI_TOKEN".to_owned()));
    assert!(names("api").contains(&"API_KEY_VAR".to_owned()));
    assert!(
        step("cli")
            .sandbox_request(ws, None)
            .is_some_and(|r| r.network)
    );
}

#[test]
fn every_tool_states_its_outputs_templates_and_retry() {
    use crate::model::ToolName;
    use crate::tools::registry::ToolSpecOf;
    use crate::tools::spec::{Outputs, Templates};
    let plan = crate::plan::load_plan_str("facts.yaml", PLAN).unwrap_or_else(|d| panic!("{d:?}"));
    let spec = |id: &str| {
        plan.steps
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no step {id}"))
            .action
            .spec()
    };
    let none: &[(&str, Templates)] = &[];
    for (id, outputs, templates) in [
        (
            "sh",
            Outputs::File,
            &[("command", Templates::Refused("the command"))][..],
        ),
        ("vcs", Outputs::None, none),
        ("find", Outputs::None, none),
        ("get", Outputs::None, none),
        ("zip", Outputs::None, none),
        ("scan", Outputs::None, none),
        ("sys", Outputs::None, none),
        (
            "cli",
            Outputs::Answer(&["status", "summary"]),
            &[("prompt", Templates::Rendered("the prompt"))][..],
        ),
    ] {
        assert_eq!(spec(id).outputs(), outputs, "{id}");
        assert_eq!(spec(id).templates(), templates, "{id}");
    }
    for tool in ToolName::ALL {
        let takes = tool.spec().retry();
        assert_eq!(takes.is_ok(), tool == ToolName::Bash, "{tool:?}");
        assert!(
            takes
                .err()
                .is_none_or(|help| help.starts_with("remove `retry`"))
        );
    }
    assert!(
        ToolName::ALL
            .iter()
            .all(|t| t.spec().params_required() == (*t != ToolName::SystemInfo))
    );
}

#[test]
fn retry_on_a_tool_without_it_is_refused_with_that_tools_help() {
    let plan = |tool: &str, params: &str| {
        format!(
            "version: 1\nid: r\nagents:\n  a:\n    command: [bash, run-agent.sh]\nsteps:\n  - id: s\n    tool: {tool}\n    retry: {{max_attempts: 2}}\n    parameters: {params}\n"
        )
    };
    let help = |tool: &str, params: &str| {
        let diags = crate::plan::load_plan_str("r.yaml", &plan(tool, params))
            .err()
            .unwrap_or_default();
        diags
            .iter()
            .find(|d| d.message.contains("only bash steps retry"))
            .map(|d| (d.line, d.help.clone().unwrap_or_default()))
    };
    assert_eq!(help("bash", "{command: \"true\"}"), None);
    let (line, agent) = help("agent", "{agent: a, prompt: hi}").unwrap_or_default();
    assert_eq!(line, 9);
    assert!(agent.contains("parameters.max_attempts"), "{agent}");
    for (tool, params) in [("find_in_files", "{query: x}"), ("nonesuch", "{}")] {
        let (_, other) = help(tool, params).unwrap_or_default();
        assert_eq!(other, crate::format::retry::NO_RETRY_HELP, "{tool}");
    }
}

#[test]
fn an_agents_context_steps_follow_matrix_expansions_and_renumbering() {
    let text = r#"version: 1
id: links
agents:
  cli:
    command: [bash, run-agent.sh]
steps:
  - {id: first, tool: bash, parameters: {command: "true"}}
  - {id: lint, tool: bash, matrix: {os: [a, b]}, parameters: {command: "true"}}
  - {id: fix, tool: agent, matrix: {os: [a, b]}, dependencies: [lint], parameters: {agent: cli, prompt: hi, context_steps: [lint]}}
"#;
    let plan = crate::plan::load_plan_str("links.yaml", text).unwrap_or_else(|d| panic!("{d:?}"));
    let index = |plan: &crate::plan::Plan, id: &str| {
        plan.steps
            .iter()
            .position(|s| s.id.starts_with(id))
            .unwrap_or_else(|| panic!("no step {id}"))
    };
    let linked =
        |plan: &crate::plan::Plan, i: usize| plan.steps[i].action.spec().linked_steps().to_vec();
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), 5, "{ids:?}");
    let (lint, fix) = (index(&plan, "lint"), index(&plan, "fix"));
    // Each expansion of `fix` reads the expansion of `lint` with its own `os`.
    assert_eq!(linked(&plan, fix), vec![lint]);
    assert_eq!(linked(&plan, fix + 1), vec![lint + 1]);
    assert!(linked(&plan, 0).is_empty() && linked(&plan, lint).is_empty());
    // Without `first`, every index moves down by one.
    let keep: Vec<bool> = (0..plan.steps.len()).map(|i| i != 0).collect();
    let smaller = plan.restricted(&keep);
    assert_eq!(linked(&smaller, fix - 1), vec![lint - 1]);
    assert_eq!(linked(&smaller, fix), vec![lint]);
}
