//! Permission rules through the binary: the case table
//! `tests/fixtures/permissions/cases.json`, each case one `plangate validate
//! --format json` with its policy file; and one run showing that a step the
//! rules deny never runs, even approved.

use serde_json::Value;

use crate::harness::{Env, code, stderr};

fn fixture() -> Value {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/permissions/cases.json"
    );
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn plan_for(case: &Value) -> String {
    let mut policy = serde_json::json!({"risk_tolerance": "high"});
    if let Some(p) = case.get("plan_permissions") {
        policy["permissions"] = p.clone();
    }
    let mut step = case["step"].clone();
    step["id"] = "s".into();
    // JSON is YAML.
    serde_json::json!({"version": 1, "id": "perm", "policy": policy, "steps": [step]}).to_string()
}

#[test]
fn the_permission_case_table() {
    let env = Env::new();
    env.write("src/a.txt", "a\n");
    env.write("src/a/b/c.txt", "c\n");
    env.write("docs/index.md", "d\n");
    env.write("site.zip", "");
    let cases = fixture();
    let cases = cases["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let plan = env.write("plan.yaml", &plan_for(case));
        // The case's rules, and the tolerance the plans ask for (a file that
        // does not set it leaves the built-in cap: low).
        let mut file = case["policy"].clone();
        if let Some(o) = file.as_object_mut() {
            o.entry("risk_tolerance").or_insert("high".into());
        }
        let policy = env.write("policy.yaml", &file.to_string());
        let mut c = env.cmd();
        c.args(["validate", "--format", "json"])
            .arg(&plan)
            .arg("--workspace")
            .arg(&env.ws)
            .arg("--policy")
            .arg(&policy);
        if case["approve"] == true {
            c.args(["--approve", "s"]);
        }
        let o = c.output().unwrap();
        // validate exits as run would: 3 for a blocked or denied step.
        let want = match case["expect"]["decision"].as_str() {
            Some("blocked" | "denied") => 3,
            _ => 0,
        };
        if code(&o) != want {
            failures.push(format!(
                "{name}: exit {}, expected {want}: {}",
                code(&o),
                stderr(&o)
            ));
            continue;
        }
        let out: Value = serde_json::from_slice(&o.stdout).unwrap();
        let approval = &out["steps"][0]["approval"];
        let exp = &case["expect"];
        if approval["decision"] != exp["decision"] {
            failures.push(format!(
                "{name}: decision {approval}, expected {}",
                exp["decision"]
            ));
            continue;
        }
        if exp["no_permission"] == true {
            if approval.get("permission").is_some() {
                failures.push(format!(
                    "{name}: a permission verdict without rules: {approval}"
                ));
            }
            continue;
        }
        let verdict = &approval["permission"];
        if verdict["rules"] != exp["rules"] {
            failures.push(format!(
                "{name}: rules {}, expected {}",
                verdict["rules"], exp["rules"]
            ));
        }
        if verdict["allowed"] != (exp["decision"] != "blocked") {
            failures.push(format!("{name}: allowed {}", verdict["allowed"]));
        }
        if let Some(want) = exp["reason"].as_str() {
            let reason = approval["reason"].as_str().unwrap_or("");
            if !reason.contains(want) {
                failures.push(format!("{name}: reason {reason:?} lacks {want:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_step_the_rules_deny_never_runs_even_approved() {
    let env = Env::new();
    let policy = env.write(
        "policy.yaml",
        "risk_tolerance: high\npermissions:\n  - {id: docs-only, resource: docs, tools: [bash], level: execute}\n",
    );
    env.write("docs/x", "");
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high, on_approval_required: skip}\nsteps:\n  - {id: ok, tool: bash, parameters: {command: 'touch ran-ok', working_directory: docs}}\n  - {id: root, tool: bash, parameters: {command: 'touch ran-root'}}\n";
    let o = env.run(
        plan,
        &["--policy", policy.to_str().unwrap(), "--approve", "root"],
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(!env.ws.join("ran-root").exists());
    assert!(
        !env.ws.join("docs/ran-ok").exists(),
        "nothing runs when a step is blocked"
    );
    let root = env.step("root");
    assert_eq!(root["status"], "blocked");
    assert!(
        root["error"]
            .as_str()
            .unwrap()
            .contains("no policy file rule allows execute on `.`"),
        "{root}"
    );
    assert_eq!(env.report()["policy"]["permissions"][0]["id"], "docs-only");
}

#[test]
fn a_bad_rule_is_a_policy_error_with_its_position() {
    let env = Env::new();
    let policy = env.write(
        "policy.yaml",
        "permissions:\n  - {id: a, resource: '*', level: read}\n  - id: a\n    resource: 'src/['\n    level: read\n  - {id: b, resource: '*', level: maybe}\n",
    );
    let plan = env.write("plan.yaml", &crate::harness::bash_plan(&[("s", "ls")]));
    let o = env
        .cmd()
        .arg("validate")
        .arg(&plan)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("level"), "{err}");

    env.write(
        "policy.yaml",
        "permissions:\n  - {id: a, resource: '*', level: read}\n  - id: a\n    resource: 'src/['\n    level: read\n",
    );
    let o = env
        .cmd()
        .arg("validate")
        .arg(&plan)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("policy.yaml:4:15: error: rule `a`: `src/[` is not a valid glob"),
        "{err}"
    );
    assert!(
        err.contains("policy.yaml:3:9: error: rule id `a` is used twice"),
        "{err}"
    );
    // The plan's own list is checked the same way.
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: t\npolicy:\n  permissions:\n    - {id: x, resource: 'a/[', level: read}\nsteps:\n  - {id: s, tool: bash, parameters: {command: ls}}\n",
    );
    let o = env.cmd().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("plan.yaml:5:"), "{}", stderr(&o));
}

/// The issue-14 policy: everything allowed but the README's own example,
/// `secrets/**` denied.
const NO_SECRETS: &str = "risk_tolerance: high\npermissions:\n  - {id: all, resource: '*', level: admin, priority: 10}\n  - {id: no-secrets, resource: 'secrets/**', level: none, priority: 90}\n";

/// The line that must never come back (the plans only hold a regex that
/// matches it, never the line itself).
const SECRET_LINE: &str = "SECRET-LINE do not read";

fn secret_tree(env: &Env) {
    env.write("secrets/key", &format!("{SECRET_LINE}\n"));
    env.write("src/a.txt", "hello\n");
    std::os::unix::fs::symlink("secrets", env.ws.join("lnk")).unwrap();
    std::os::unix::fs::symlink("secrets/key", env.ws.join("lnkf")).unwrap();
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let t = e.file_type().unwrap();
        if t.is_dir() && e.file_name() != ".git" {
            out.extend(files_holding(&p, needle));
        } else if t.is_file()
            && String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).contains(needle)
        {
            out.push(p.display().to_string());
        }
    }
    out
}

#[test]
fn a_rollback_command_is_judged_as_bash() {
    let env = Env::new();
    env.write("src/a.txt", "a\n");
    let policy = env.write(
        "policy.yaml",
        "risk_tolerance: high\npermissions:\n  - {id: read-only, resource: '*', level: read}\n",
    );
    // Before: the find was allowed, the second find failed, and the rollback created a file.
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: s1, tool: find_in_files, parameters: {path: src, query: a}, rollback_command: 'touch created'}\n  - {id: s2, tool: find_in_files, dependencies: [s1], parameters: {path: src, query: nothing-here, fail_if_none: true}}\n";
    let o = env.run(plan, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(!env.ws.join("created").exists());
    let s1 = env.step("s1");
    assert_eq!(s1["status"], "blocked");
    let err = s1["error"].as_str().unwrap();
    assert!(
        err.contains("rule `read-only` (grants read on `.`; the step needs execute)"),
        "{err}"
    );
    // Without the rollback the same step is allowed.
    let plan = "version: 1\nid: t\nsteps:\n  - {id: s1, tool: find_in_files, parameters: {path: src, query: a}}\n";
    let o = env.run(plan, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_denied_subtree_is_refused_before_the_run_whatever_names_it() {
    let env = Env::new();
    secret_tree(&env);
    let (_dir, agents) = crate::harness::fake_agent(&env, "coder", &[]);
    let policy = env.write("policy.yaml", NO_SECRETS);
    let plan = format!(
        "version: 1\nid: t\npolicy: {{risk_tolerance: high}}\nagents:\n{agents}steps:\n  - {{id: find_link, tool: find_in_files, parameters: {{path: lnkf, query: x}}}}\n  - {{id: ctx, tool: agent, parameters: {{agent: coder, prompt: p, context_files: [secrets/key]}}}}\n  - {{id: ctx_link, tool: agent, parameters: {{agent: coder, prompt: p, context_files: [lnkf]}}}}\n  - {{id: git_files, tool: git, parameters: {{operation: add, files: [secrets/key]}}}}\n  - {{id: git_args, tool: git, parameters: {{operation: add, args: ['--', 'secrets/key']}}}}\n  - {{id: git_magic, tool: git, parameters: {{operation: add, files: [':(literal)secrets/key']}}}}\n  - {{id: find_dot, tool: find_in_files, parameters: {{path: ., query: x}}}}\n"
    );
    let plan = env.write("plan.yaml", &plan);
    let o = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    // Blocked steps: validate exits 3, as run would.
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(crate::harness::validate_exit(&out), 3);
    for s in out["steps"].as_array().unwrap() {
        let approval = &s["approval"];
        if s["id"] == "find_dot" {
            assert_eq!(approval["permission"]["allowed"], true, "{s}");
            continue;
        }
        assert_eq!(approval["decision"], "blocked", "{s}");
        assert_eq!(
            approval["permission"]["rules"],
            serde_json::json!(["no-secrets"]),
            "{s}"
        );
        assert!(
            approval["reason"]
                .as_str()
                .unwrap()
                .contains("on `secrets/key`"),
            "{s}"
        );
    }
}

#[test]
fn a_denied_subtree_stays_out_of_searches_links_context_files_and_git_add() {
    let env = Env::new();
    secret_tree(&env);
    let (dir, agents) = crate::harness::fake_agent(&env, "coder", &[]);
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args(args)
            .current_dir(&env.ws)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    git(&["init", "-q"]);
    let policy = env.write("policy.yaml", NO_SECRETS);
    let plan = format!(
        "version: 1\nid: t\npolicy: {{risk_tolerance: high}}\nagents:\n{agents}steps:\n  - {{id: find_dot, tool: find_in_files, continue_on_error: true, parameters: {{path: ., query: 'SECRET-[L]INE', hidden: true}}}}\n  - {{id: find_lnk, tool: find_in_files, continue_on_error: true, parameters: {{path: lnk, query: 'SECRET-[L]INE'}}}}\n  - {{id: mk, tool: bash, parameters: {{command: 'ln -s secrets/key late'}}}}\n  - {{id: ctx_late, tool: agent, dependencies: [mk], continue_on_error: true, parameters: {{agent: coder, prompt: p, context_files: [late]}}}}\n  - {{id: add_all, tool: git, dependencies: [ctx_late], continue_on_error: true, parameters: {{operation: add}}}}\n  - {{id: diff, tool: git, dependencies: [add_all], continue_on_error: true, parameters: {{operation: diff, args: ['--cached']}}}}\n"
    );
    let o = env.run(&plan, &["--policy", policy.to_str().unwrap()]);
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    for id in ["find_dot", "find_lnk"] {
        let s = env.step(id);
        assert_eq!(s["status"], "success", "{s}");
        let r = crate::harness::read_json(&env.out.join(format!("artifacts/{id}/result.json")));
        assert_eq!(r["total_matches"], 0, "{id}: {r}");
        assert!(r["withheld_paths"].as_u64().unwrap() >= 1, "{id}: {r}");
        assert!(r["warnings"].to_string().contains("withheld"), "{id}: {r}");
    }
    // The link made at run time is judged where it resolves.
    let s = env.step("ctx_late");
    assert_ne!(s["status"], "success", "{s}");
    assert!(s["error"].as_str().unwrap().contains("no-secrets"), "{s}");
    assert!(!crate::harness::prompt_of(&dir, 1).contains("SECRET"));
    // `git add` with no path stages everything but the denied subtree.
    assert_eq!(
        env.step("add_all")["status"],
        "success",
        "{}",
        env.step("add_all")
    );
    let staged = git(&["ls-files", "--cached"]);
    assert!(staged.contains("src/a.txt"), "{staged}");
    assert!(!staged.contains("secrets/"), "{staged}");
    let r = crate::harness::read_json(&env.out.join("artifacts/add_all/result.json"));
    assert!(r["warnings"].to_string().contains("left out"), "{r}");
    assert_eq!(env.step("diff")["status"], "success");
    // The secret line reached no output of any kind.
    assert_eq!(files_holding(&env.out, "SECRET-LINE"), Vec::<String>::new());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("SECRET-LINE"));
}

#[test]
fn a_denied_subtree_stays_out_of_git_history() {
    let env = Env::new();
    secret_tree(&env);
    std::fs::remove_file(env.ws.join("lnk")).unwrap();
    std::fs::remove_file(env.ws.join("lnkf")).unwrap();
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(&env.ws)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
    };
    // History: denied files changed, deleted, stashed; at the end none is left in the work tree.
    git(&["init", "-q"]);
    env.write("secrets/gone", "SECRET-LINE deleted since\n");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "one"]);
    std::fs::remove_file(env.ws.join("secrets/gone")).unwrap();
    env.write("src/a.txt", "hello again\n");
    git(&["add", "-A"]);
    git(&["commit", "-qm", "two"]);
    env.write("secrets/key", "SECRET-LINE changed\n");
    env.write("src/a.txt", "hello a third time\n");
    git(&["commit", "-qam", "three"]);
    env.write("secrets/key", "SECRET-LINE stashed\n");
    git(&["stash", "-q"]);
    // The denied folder is then deleted: only the history still holds it.
    git(&["rm", "-rq", "secrets"]);
    git(&["commit", "-qm", "four"]);
    assert!(!env.ws.join("secrets").exists());
    let policy = env.write("policy.yaml", NO_SECRETS);
    let step = |id: &str, params: &str| {
        format!("  - {{id: {id}, tool: git, continue_on_error: true, parameters: {params}}}\n")
    };
    let plan = [
        "version: 1\nid: t\npolicy: {risk_tolerance: high, max_parallel: 1}\nsteps:\n".to_owned(),
        step(
            "log_all",
            "{operation: log, args: ['-p', '--all', '--reflog', '--stat', '-m']}",
        ),
        step(
            "log_sub",
            "{operation: log, repository_path: src, args: ['-p']}",
        ),
        step("diff_revs", "{operation: diff, args: ['HEAD~3', 'HEAD']}"),
        step(
            "pickaxe",
            "{operation: log, args: ['-p', '-G', 'LINE', '--pickaxe-all']}",
        ),
        step("full_diff", "{operation: log, args: ['-p', '--full-diff']}"),
        step(
            "trees",
            "{operation: diff, args: ['HEAD~3:secrets', 'HEAD~1:secrets']}",
        ),
        step(
            "blobs",
            "{operation: diff, args: ['HEAD~3:secrets/gone', 'HEAD:src/a.txt']}",
        ),
        step("stash_show", "{operation: stash, args: [show, '-p']}"),
        step("checkout_back", "{operation: checkout, args: ['HEAD~1']}"),
    ]
    .concat();
    let o = env.run(&plan, &["--policy", policy.to_str().unwrap()]);
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    for id in ["log_all", "log_sub", "diff_revs", "pickaxe"] {
        let s = env.step(id);
        assert_eq!(s["status"], "success", "{s}");
        let r = crate::harness::read_json(&env.out.join(format!("artifacts/{id}/result.json")));
        assert!(r["warnings"].to_string().contains("left out"), "{id}: {r}");
    }
    let out = std::fs::read_to_string(env.out.join("artifacts/log_all/stdout.txt")).unwrap();
    assert!(out.contains("hello a third time"), "{out}");
    for (id, why) in [
        ("full_diff", "--full-diff"),
        ("trees", "HEAD~3:secrets"),
        ("blobs", "HEAD~3:secrets/gone"),
        ("stash_show", "stash"),
        ("checkout_back", "would rewrite"),
    ] {
        let s = env.step(id);
        assert_eq!(s["status"], "failed", "{s}");
        let error = s["error"].as_str().unwrap();
        assert!(
            error.contains("permission rules") && error.contains(why),
            "{id}: {error}"
        );
    }
    // No line of a denied file, present, deleted or stashed, reached any output.
    assert_eq!(files_holding(&env.out, "SECRET-LINE"), Vec::<String>::new());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("SECRET-LINE"));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("SECRET-LINE"));
}

#[test]
fn deeply_nested_braces_in_a_rule_are_a_policy_error_not_a_panic() {
    let env = Env::new();
    let mut glob = String::new();
    for _ in 0..130 {
        glob.push_str("{a,");
    }
    glob.push('b');
    for _ in 0..130 {
        glob.push('}');
    }
    let policy = env.write(
        "policy.yaml",
        &format!("permissions:\n  - {{id: all, resource: '*', level: read}}\n  - {{id: deep, resource: '{glob}', level: read}}\n"),
    );
    let plan = env.write("plan.yaml", &crate::harness::bash_plan(&[("s", "ls")]));
    for verb in ["validate", "run"] {
        let o = env
            .cmd()
            .arg(verb)
            .arg(&plan)
            .arg("--policy")
            .arg(&policy)
            .output()
            .unwrap();
        assert_eq!(code(&o), 2, "{verb}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("policy.yaml:3:"), "{err}");
        assert!(err.contains("nested 130 deep; at most 32"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A plan's find_in_files globs are bounded the same way, at load.
    let plan = env.write(
        "plan.yaml",
        &format!("version: 1\nid: t\nsteps:\n  - {{id: f, tool: find_in_files, parameters: {{query: x, file_pattern: '{glob}'}}}}\n"),
    );
    let o = env.cmd().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("plan.yaml:4:"), "{}", stderr(&o));
}

#[test]
fn the_diff_summary_never_shows_the_content_of_a_file_the_rules_deny_reading() {
    let env = Env::new();
    secret_tree(&env);
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qm",
            "base",
        ],
    ] {
        let o = std::process::Command::new("git")
            .args(args)
            .current_dir(&env.ws)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
    }
    let policy = env.write(
        "policy.yaml",
        &format!("{NO_SECRETS}allow_unsandboxed: true\n"),
    );
    // A bash step (execute on the workspace) rewrites a denied file and an allowed one
    // (unsandboxed: in a sandbox the denied file is out of its reach).
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: edit, tool: bash, parameters: {sandbox: false, command: 'sed -i s/do/DO/ secrets/key; echo more >> src/a.txt'}}\n";
    let plan_path = env.write("plan.yaml", plan);
    let o = env
        .run_cmd(&plan_path)
        .arg("--policy")
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let diff = std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap();
    assert!(diff.contains("secrets/key"), "the row stays: {diff}");
    assert!(
        diff.contains("content withheld: the permission rules deny reading this file"),
        "{diff}"
    );
    assert!(
        !diff.contains("SECRET-LINE") && !diff.contains("read\n"),
        "{diff}"
    );
    assert!(
        diff.contains("+more"),
        "allowed files keep their diff: {diff}"
    );
}
