//! The workspace tools, driven through `plangate run`: each tool's case table
//! is a data file under `tests/fixtures/tools/`; adding a case adds no code.

use serde_json::{Value, json};

use crate::harness::{Env, code, read_json, stderr};

/// Write a fixture's `tree` into the workspace.
fn write_tree(env: &Env, tree: &Value) {
    for (path, content) in tree.as_object().unwrap() {
        env.write(path, content.as_str().unwrap());
    }
}

/// Run every case of a table as one step of one plan; returns (report, out dir).
fn run_table(env: &Env, tool: &str, cases: &[Value], extra_args: &[&str]) -> Value {
    let steps: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({"id": c["id"], "tool": tool, "parameters": c["params"], "continue_on_error": true})
        })
        .collect();
    // YAML is a superset of JSON: the plan is written as JSON, outside the
    // workspace so that searches do not find it.
    let plan = json!({"version": 1, "id": format!("{tool}-table"), "steps": steps});
    let plan_path = env.ws.parent().unwrap().join(format!("{tool}-plan.yaml"));
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan_path)
        .args([
            "--workspace",
            env.ws.to_str().unwrap(),
            "--out",
            env.out.to_str().unwrap(),
        ])
        .args(extra_args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        matches!(code(&o), 0 | 1),
        "exit {}: {}",
        code(&o),
        stderr(&o)
    );
    env.report()
}

/// `expect` keys checked against a find_in_files result.
fn check_find_case(env: &Env, report: &Value, case: &Value) {
    let id = case["id"].as_str().unwrap();
    let step = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap();
    let expect = &case["expect"];
    let status = expect["status"].as_str().unwrap_or("success");
    assert_eq!(step["status"], status, "{id}: {step:#}");
    if let Some(e) = expect["error"].as_str() {
        assert!(
            step["error"].as_str().unwrap_or("").contains(e),
            "{id}: error {} should contain {e}",
            step["error"]
        );
    }
    let path = env.out.join(format!("artifacts/{id}/result.json"));
    if !path.exists() {
        assert_ne!(status, "success", "{id}: no result.json");
        return;
    }
    let r = read_json(&path);
    for key in ["total_matches", "truncated", "binary_files_skipped"] {
        if let Some(v) = expect.get(key) {
            assert_eq!(&r[key], v, "{id}: {key} in {r:#}");
        }
    }
    if let Some(lines) = expect.get("lines") {
        let got: Vec<String> = r["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| format!("{}:{}", m["file"].as_str().unwrap(), m["line_number"]))
            .collect();
        let want: Vec<String> = lines
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, want, "{id}");
    }
    if let Some(first) = expect.get("first") {
        for (k, v) in first.as_object().unwrap() {
            assert_eq!(&r["matches"][0][k], v, "{id}: matches[0].{k} in {r:#}");
        }
    }
    for key in [
        "matches",
        "total_files_searched",
        "total_matches",
        "search_time",
        "truncated",
    ] {
        assert!(
            r.get(key).is_some(),
            "{id}: the design's `{key}` is missing"
        );
    }
}

#[test]
fn find_in_files_case_table() {
    let table = read_json(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tools/find_in_files.json"),
    );
    let env = Env::new();
    write_tree(&env, &table["tree"]);
    let cases = table["cases"].as_array().unwrap();
    let report = run_table(&env, "find_in_files", cases, &[]);
    for case in cases {
        check_find_case(&env, &report, case);
    }
    // Every case was classified safe: searching only reads.
    for s in report["steps"].as_array().unwrap() {
        assert_eq!(s["risk"]["effective"], "safe", "{s:#}");
    }
}

#[test]
fn find_in_files_results_are_redacted_and_validate_shows_the_risk() {
    let env = Env::new();
    env.write("conf/app.env", "AWS_ACCESS_KEY_ID=AKIAZ7Q4NX2LMRBT5KPW\n");
    let plan = "version: 1\nid: f\nsteps:\n  - {id: look, tool: find_in_files, parameters: {query: AWS_ACCESS, show_cli: true}}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 4, "the match holds a secret: {}", stderr(&o));
    let text = std::fs::read_to_string(env.out.join("artifacts/look/result.json")).unwrap();
    assert!(!text.contains("AKIAZ7Q4NX2LMRBT5KPW"), "{text}");
    assert!(!stderr(&o).contains("AKIAZ7Q4NX2LMRBT5KPW"));
    let p = env.write("plan.yaml", plan);
    let o = env.cmd().args(["validate"]).arg(&p).output().unwrap();
    assert_eq!(code(&o), 0);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("find_in_files only reads"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn system_info_reports_the_machine_and_tool_versions() {
    let env = Env::new();
    let plan = "version: 1\nid: s\nsteps:\n  - {id: sys, tool: system_info, parameters: {tools: [git, no-such-tool-xyz, bash]}}\n";
    let o = env.run(plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = read_json(&env.out.join("artifacts/sys/result.json"));
    assert!(
        r["os"]["kernel"].as_str().unwrap().starts_with("Linux"),
        "{r:#}"
    );
    assert!(r["cpu"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(r["memory"]["total_bytes"].as_u64().unwrap() > 1 << 20);
    assert!(r["disk"]["free_bytes"].as_u64().is_some(), "{r:#}");
    assert!(
        r["tools"]["git"]
            .as_str()
            .unwrap()
            .starts_with("git version"),
        "{r:#}"
    );
    assert!(r["tools"]["bash"].as_str().unwrap().contains("bash"));
    assert_eq!(r["tools"]["no-such-tool-xyz"], Value::Null);
    assert_eq!(env.step("sys")["risk"]["effective"], "safe");
}

#[test]
fn an_in_process_tool_is_stopped_at_its_timeout() {
    let env = Env::new();
    let bin = env.ws.parent().unwrap().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let slow = bin.join("slowtool");
    std::fs::write(&slow, "#!/bin/sh\nsleep 30\n").unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: t\nsteps:\n  - {id: slow, tool: system_info, timeout: 0.5, parameters: {tools: [slowtool, git]}}\n",
    );
    let started = std::time::Instant::now();
    let o = env
        .cmd()
        .env("PATH", path)
        .arg("run")
        .arg(&plan)
        .args(["--out", env.out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let s = env.step("slow");
    assert_eq!(s["status"], "timed_out", "{s:#}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "stopped at its timeout, not after the tool's 30 s"
    );
}

#[test]
fn a_run_of_read_only_tools_does_not_snapshot_the_workspace() {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    let o = env.run(
        "version: 1\nid: r\nsteps:\n  - {id: f, tool: find_in_files, parameters: {query: hello}}\n  - {id: s, tool: system_info, parameters: {tools: [git]}}\n",
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["diff"]["method"], "none", "{:#}", r["diff"]);
    // A bash step (or a rollback command) may write: the workspace is compared.
    let o = env.run(
        "version: 1\nid: r\nsteps:\n  - {id: f, tool: find_in_files, parameters: {query: hello}}\n  - {id: b, tool: bash, parameters: {command: 'echo hi'}}\n",
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.report()["diff"]["method"], "snapshot");
}
