//! `plangate shard`, `run --shard i/N` and `plangate merge`, through the binary.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use serde_json::Value;

use crate::harness::{Env, code, read_json, stderr};

/// `components` chains of `len` steps (the first of each writes a file; one
/// prints a planted key, one fails with `continue_on_error`), plus a matrix
/// template: `components * len + 4` steps. Nothing stops the whole run: a
/// run-wide stop (a failure, a secret under `fail_on_secrets`, the budget)
/// cannot reach the other shards, the one way shards differ from one run.
fn generated_plan(components: usize, len: usize) -> String {
    let mut s = String::from(
        "version: 1\nid: gen\npolicy: {risk_tolerance: high, max_parallel: 8, fail_on_secrets: false}\nsteps:\n",
    );
    for c in 0..components {
        for k in 0..len {
            let cmd = if c == 3 && k == 0 {
                "echo AKIAZ7Q4NX2LMRBT5KPW".to_owned()
            } else if c == 5 && k == len - 1 {
                "exit 3".to_owned()
            } else if k == 0 {
                format!("echo {c} > f{c}.txt")
            } else {
                "true".to_owned()
            };
            s.push_str(&format!(
                "  - id: c{c}s{k}\n    tool: bash\n    parameters: {{command: '{cmd}'}}\n"
            ));
            if k > 0 {
                s.push_str(&format!("    dependencies: [c{c}s{}]\n", k - 1));
            }
            if c == 5 && k == len - 1 {
                s.push_str("    continue_on_error: true\n");
            }
        }
    }
    s.push_str("  - id: mx\n    tool: bash\n    matrix: {pkg: [a, b, c, d]}\n    parameters: {command: 'echo \"$PLANGATE_MATRIX_PKG\" > \"m-$PLANGATE_MATRIX_PKG\"'}\n");
    s
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("plangate")
}

fn plangate(dir: &Path) -> StdCommand {
    let mut c = StdCommand::new(bin());
    for (k, _) in std::env::vars() {
        if crate::harness::outside_only(&k) {
            c.env_remove(k);
        }
    }
    c.current_dir(dir);
    // The tests' operator policy: the plans ask for `risk_tolerance: high`
    // and `fail_on_secrets: false`, which the built-in policy caps.
    let policy = std::env::temp_dir().join(format!(
        "plangate-tests-operator-policy-{}.yaml",
        std::process::id()
    ));
    if !policy.exists() {
        std::fs::write(&policy, crate::harness::OPERATOR_POLICY_YAML).unwrap();
    }
    c.env("PLANGATE_POLICY", policy);
    c
}

fn shard_json(dir: &Path, plan: &Path, jobs: u32, extra: &[&str]) -> Value {
    let o = plangate(dir)
        .arg("shard")
        .arg(plan)
        .args(["--jobs", &jobs.to_string(), "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Statuses, findings and diff of a report, without timings and run ids.
fn essence(r: &Value) -> Value {
    let steps: Vec<Value> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            serde_json::json!([
                s["id"],
                s["status"],
                s["exit_code"],
                s["dependencies"],
                s["error"]
            ])
        })
        .collect();
    let mut diff = r["diff"].clone();
    if let Some(files) = diff["files"].as_array_mut() {
        for f in files {
            f.as_object_mut().unwrap().remove("steps");
        }
    }
    serde_json::json!({
        "status": r["status"], "exit_code": r["exit_code"], "steps": steps,
        "findings": r["findings"], "usage": r["usage"],
        "diff": [diff["files_changed"], diff["insertions"], diff["deletions"], diff["files"]],
    })
}

#[test]
fn sharded_runs_merge_into_the_report_of_a_single_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let plan = root.join("plan.yaml");
    std::fs::write(&plan, generated_plan(200, 10)).unwrap();
    let jobs = 8;
    let part = shard_json(root, &plan, jobs, &[]);
    assert_eq!(part["steps"], 2004);
    assert_eq!(part["components"], 204);
    assert_eq!(part["count"], jobs);
    // Balanced by step count: no shard more than one chain above another.
    let sizes: Vec<u64> = part["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["steps"].as_u64().unwrap())
        .collect();
    assert!(
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 10,
        "{sizes:?}"
    );
    // Every shard at once, each in its own copy of the workspace (the matrix's machines).
    let children: Vec<_> = (1..=jobs)
        .map(|i| {
            let ws = root.join(format!("ws{i}"));
            std::fs::create_dir_all(&ws).unwrap();
            plangate(&ws)
                .arg("run")
                .arg(&plan)
                .args(["--quiet", "--shard", &format!("{i}/{jobs}"), "--out"])
                .arg(root.join(format!("out{i}")))
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        c.wait().unwrap();
    }
    let ws = root.join("ws0");
    std::fs::create_dir_all(&ws).unwrap();
    let o = plangate(&ws)
        .arg("run")
        .arg(&plan)
        .args(["--quiet", "--out"])
        .arg(root.join("single"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let reports: Vec<PathBuf> = (1..=jobs)
        .map(|i| root.join(format!("out{i}/report.json")))
        .collect();
    for (i, r) in reports.iter().enumerate() {
        let r = read_json(r);
        assert_eq!(r["shard"]["index"], i + 1);
        assert_eq!(r["shard"]["plan_sha256"], part["plan"]["sha256"]);
        assert_eq!(r["shard"]["partition_sha256"], part["partition_sha256"]);
        assert_eq!(r["steps"].as_array().unwrap().len(), sizes[i] as usize);
    }
    let o = plangate(root)
        .arg("merge")
        .args(&reports)
        .arg("--out")
        .arg(root.join("merged"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let merged = essence(&read_json(&root.join("merged/report.json")));
    let single = essence(&read_json(&root.join("single/report.json")));
    for key in ["status", "exit_code", "findings", "usage", "diff"] {
        assert!(
            merged[key] == single[key],
            "{key}: {} vs {}",
            merged[key],
            single[key]
        );
    }
    let (m, s) = (
        merged["steps"].as_array().unwrap(),
        single["steps"].as_array().unwrap(),
    );
    assert_eq!(m.len(), s.len());
    for (a, b) in m.iter().zip(s) {
        assert_eq!(a, b);
    }
    let merged = read_json(&root.join("merged/report.json"));
    assert_eq!(merged["steps"][5 * 10 + 9]["status"], "failed");
    assert_eq!(merged["findings"].as_array().unwrap().len(), 1);
    assert_eq!(merged["diff"]["files_changed"], 203);
    assert!(root.join("merged/diff-summary.md").is_file());
    assert!(
        root.join("merged/gl-secret-detection-report.json")
            .is_file()
    );
    // The merged report renders like any other.
    let o = plangate(root)
        .args(["report", "--format", "markdown"])
        .arg(root.join("merged/report.json"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("mx[pkg=d]"));
}

const SMALL: &str = "version: 1\nid: small\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'true'}}\n  - {id: b, tool: bash, dependencies: [a], parameters: {command: 'true'}}\n  - {id: c, tool: bash, parameters: {command: 'exit 1'}}\n  - {id: d, tool: bash, matrix: {k: [x, y]}, parameters: {command: 'true'}}\n";

fn run_shards(env: &Env, plan: &Path, n: usize, extra: &[&str]) -> Vec<PathBuf> {
    (1..=n)
        .map(|i| {
            let out = env.out.join(format!("s{i}"));
            let o = env
                .cmd()
                .arg("run")
                .arg(plan)
                .args(["--quiet", "--shard", &format!("{i}/{n}"), "--out"])
                .arg(&out)
                .args(extra)
                .output()
                .unwrap();
            assert!(code(&o) == 0 || code(&o) == 1, "{}", stderr(&o));
            out.join("report.json")
        })
        .collect()
}

fn merge(env: &Env, reports: &[PathBuf]) -> std::process::Output {
    env.cmd()
        .arg("merge")
        .args(reports)
        .arg("--out")
        .arg(env.out.join("merged"))
        .output()
        .unwrap()
}

#[test]
fn shard_formats_and_a_plan_that_cannot_split() {
    let env = Env::new();
    let plan = env.write("plan.yaml", SMALL);
    let o = env
        .cmd()
        .arg("shard")
        .arg(&plan)
        .args(["--jobs", "3", "--format", "github"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let shards: Vec<&str> = v["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["shard"].as_str().unwrap())
        .collect();
    assert_eq!(shards, ["1/3", "2/3", "3/3"]);
    let o = env
        .cmd()
        .arg("shard")
        .arg(&plan)
        .args(["--jobs", "200", "--format", "gitlab"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("PLANGATE_SHARD: [\"1/4\", \"2/4\", \"3/4\", \"4/4\"]"),
        "{text}"
    );
    assert!(text.contains("extends: .plangate-shard"), "{text}");
    let chain = env.write(
        "chain.yaml",
        "version: 1\nid: chain\nsteps:\n  - {id: a, tool: bash, parameters: {command: 'true'}}\n  - {id: b, tool: bash, dependencies: [a], matrix: {k: [x, y]}, parameters: {command: 'true'}}\n",
    );
    let o = env
        .cmd()
        .arg("shard")
        .arg(&chain)
        .args(["--jobs", "4", "--format", "github"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    assert!(
        stderr(&o).contains("one connected component"),
        "{}",
        stderr(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["include"].as_array().unwrap().len(), 1);
    // A shard count the plan cannot have is refused, not silently re-cut.
    let o = env
        .cmd()
        .arg("run")
        .arg(&chain)
        .args(["--shard", "1/4", "--out"])
        .arg(env.out.join("x"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("splits into 1 shard(s), not 4"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn merge_takes_the_worst_status_and_refuses_what_does_not_fit() {
    let env = Env::new();
    let plan = env.write("plan.yaml", SMALL);
    let reports = run_shards(&env, &plan, 3, &[]);
    let o = merge(&env, &reports);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let m = read_json(&env.out.join("merged/report.json"));
    assert_eq!(m["status"], "failed");
    let ids: Vec<&str> = m["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c", "d[k=x]", "d[k=y]"]);
    assert_eq!(m["shard"]["merged"].as_array().unwrap().len(), 3);

    // Missing, duplicate.
    let o = merge(&env, &reports[..2]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("missing shard(s) 3 of 3"),
        "{}",
        stderr(&o)
    );
    let o = merge(
        &env,
        &[reports[0].clone(), reports[0].clone(), reports[1].clone()],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("given twice"), "{}", stderr(&o));
    // A report of a plain run.
    let plain = env.out.join("plain");
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan)
        .args(["--quiet", "--out"])
        .arg(&plain)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1);
    let o = merge(&env, &[plain.join("report.json")]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("is not a shard report"),
        "{}",
        stderr(&o)
    );
    // Another plan (same shape, other bytes).
    let other = env.write("other.yaml", &SMALL.replace("id: small", "id: other"));
    let env2 = Env::new();
    let others = run_shards(&env2, &other, 3, &[]);
    let o = merge(
        &env,
        &[reports[0].clone(), reports[1].clone(), others[2].clone()],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("another plan"), "{}", stderr(&o));
    // Cut differently: weighted by timings where `c` dominates.
    let mut t = read_json(&plain.join("report.json"));
    for st in t["steps"].as_array_mut().unwrap() {
        st["duration_ms"] = if st["id"] == "c" { 1000 } else { 5 }.into();
    }
    let timings = env.write("timings.json", &t.to_string());
    let part = shard_json(&env.ws, &plan, 3, &["--timings", timings.to_str().unwrap()]);
    assert_eq!(part["weighted_by"], "timings");
    assert_eq!(part["shards"][0]["ids"], serde_json::json!(["c"]));
    let env3 = Env::new();
    let timed = run_shards(&env3, &plan, 3, &["--timings", timings.to_str().unwrap()]);
    let t0 = read_json(&timed[0]);
    // `run --shard --timings` cuts exactly as `shard --timings` printed.
    assert_eq!(t0["shard"]["partition_sha256"], part["partition_sha256"]);
    assert_ne!(
        t0["shard"]["partition_sha256"],
        read_json(&reports[0])["shard"]["partition_sha256"]
    );
    let o = merge(
        &env,
        &[timed[0].clone(), reports[1].clone(), reports[2].clone()],
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cut differently"), "{}", stderr(&o));
    // The timed shards merge among themselves.
    let o = merge(&env, &timed);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
}

#[test]
fn merge_publishes_one_step_summary_and_outputs_under_github_actions() {
    let env = Env::new();
    let plan = env.write("plan.yaml", SMALL);
    let reports = run_shards(&env, &plan, 2, &[]);
    let summary = env.out.join("summary.md");
    let outputs = env.out.join("outputs.txt");
    let o = env
        .cmd()
        .arg("merge")
        .args(&reports)
        .arg("--out")
        .arg(env.out.join("merged"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &outputs)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(text.matches("plangate: `small`").count(), 1, "{text}");
    assert!(text.contains("d[k=y]"), "{text}");
    let out = std::fs::read_to_string(&outputs).unwrap();
    assert!(out.contains("\nfailed\n"), "{out}");
}
