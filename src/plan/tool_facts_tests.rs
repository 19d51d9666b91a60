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
