//! Every example plan is valid, and the capability examples under
//! `examples/plans/` run offline with the exit code their header promises
//! (`# expect-exit: N`). Adding an example adds a case, not code.

use std::path::{Path, PathBuf};

use crate::harness::{Env, code, stderr};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

/// Every `*.yaml` plan below `examples/`, sorted.
fn example_plans(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                // CI configurations are not plans.
                if p.file_name().is_some_and(|n| n != "ci") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "yaml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_example_plan_is_valid() {
    let env = Env::new();
    let plans = example_plans(Path::new(EXAMPLES));
    assert!(plans.len() >= 7, "{plans:?}");
    for p in &plans {
        let o = env
            .cmd()
            .args(["validate", "--format", "json"])
            .arg(p)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{}: {e}: {}", p.display(), stderr(&o)));
        assert_eq!(v["valid"], true, "{}", p.display());
        // 0, or 3 for an example whose steps need approvals `run` would refuse.
        let want = crate::harness::validate_exit(&v);
        assert_eq!(code(&o), want, "{}: {}", p.display(), stderr(&o));
    }
}

#[test]
fn each_capability_example_runs_offline_with_the_promised_exit_code() {
    let plans = example_plans(&Path::new(EXAMPLES).join("plans"));
    assert!(plans.len() >= 5, "{plans:?}");
    for p in &plans {
        let text = std::fs::read_to_string(p).unwrap();
        let expect: i32 = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect-exit:"))
            .unwrap_or_else(|| panic!("{} has no `# expect-exit: N` line", p.display()))
            .trim()
            .parse()
            .unwrap();
        let env = Env::new();
        let o = env
            .cmd()
            .arg("run")
            .arg(p)
            .arg("--workspace")
            .arg(&env.ws)
            .arg("--out")
            .arg(&env.out)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        assert_eq!(code(&o), expect, "{}: {}", p.display(), stderr(&o));
        let r = env.report();
        assert_eq!(r["exit_code"], expect, "{}", p.display());
        assert_eq!(r["in_progress"], false);
    }
}

#[test]
fn what_the_capability_examples_show_is_what_happens() {
    let run = |name: &str, args: &[&str]| {
        let env = Env::new();
        let o = env
            .cmd()
            .arg("run")
            .arg(Path::new(EXAMPLES).join("plans").join(name))
            .args(["--workspace", env.ws.to_str().unwrap()])
            .args(["--out", env.out.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        (env, o)
    };
    let (env, _) = run("approvals.yaml", &[]);
    assert_eq!(env.step("publish")["status"], "skipped");
    assert_eq!(env.step("announce")["status"], "skipped");
    assert_eq!(env.step("look")["status"], "success");
    let (env, o) = run("approvals.yaml", &["--approve", "publish"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("announce")["status"], "success");
    let (env, _) = run("rollback.yaml", &[]);
    assert_eq!(env.step("config")["rollback"]["status"], "success");
    assert_eq!(env.step("backup")["rollback"]["status"], "success");
    assert_eq!(env.step("restart")["status"], "not_run");
    assert!(!env.ws.join("state/app.conf").exists());
    let (env, _) = run("secrets.yaml", &[]);
    let findings = env.report()["findings"].as_array().unwrap().len();
    assert!(findings >= 1);
    let (env, _) = run("changes.yaml", &[]);
    let files: Vec<String> = env.report()["diff"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(files, ["notes/final.md", "notes/list.txt"]);
}
