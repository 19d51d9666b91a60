//! What a run changed: the report's `diff` block, `diff-summary.md` and
//! per-step attribution, through real runs in git repositories and plain
//! folders.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Output;

use serde_json::{Value, json};

use crate::harness::{Env, code, git, read_json, stderr};

const AWS_ID_2: &str = "AKIAY3HD8QPW2NZXK7RT";

/// The workspace every scenario starts from (committed when `repo`), plus
/// an uncommitted change made before the run that must not be reported.
fn seed(env: &Env, repo: bool) {
    env.write("keep.txt", "a\nb\n");
    env.write("gone.txt", "bye\n");
    env.write("moved.txt", "moved\n");
    env.write("plain.txt", "plain\n");
    env.write("pre.txt", "pre\n");
    env.write(".gitignore", "*.log\n");
    std::fs::write(env.ws.join("img.bin"), b"\x00\x01").unwrap();
    if repo {
        git(&env.ws, &["init", "-q", "."]);
        git(&env.ws, &["add", "-A"]);
        git(&env.ws, &["commit", "-qm", "seed"]);
    }
    env.write("pre.txt", "pre, changed before the run\n");
}

fn plan(steps: &[(&str, &str)], max_parallel: u32) -> String {
    let mut s = format!(
        "version: 1\nid: d\npolicy: {{risk_tolerance: high, max_parallel: {max_parallel}}}\nsteps:\n"
    );
    for (id, cmd) in steps {
        s.push_str(&format!(
            "  - id: {id}\n    tool: bash\n    parameters: {{command: {}}}\n",
            serde_json::to_string(cmd).unwrap()
        ));
    }
    s
}

/// Path, change, +, -, binary, old_path, steps of each file of the diff block.
fn files(d: &Value) -> Vec<Value> {
    d["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files in {d:#}"))
        .iter()
        .map(|f| {
            json!([
                f["path"],
                f["change"],
                f["insertions"],
                f["deletions"],
                f["binary"],
                f["old_path"],
                f["steps"]
            ])
        })
        .collect()
}

fn changed_files(env: &Env, step: &str) -> Value {
    env.step(step)["changed_files"].clone()
}

fn summary(env: &Env) -> String {
    std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap()
}

/// Sequential steps that edit, add, rename (with `git mv` in a repository
/// and with `mv`), delete and rewrite a binary, and one that does nothing.
fn scenario(repo: bool) {
    let env = Env::new();
    seed(&env, repo);
    let mover = if repo {
        "git mv moved.txt 'moved to.txt'"
    } else {
        "mv moved.txt 'moved to.txt'"
    };
    let p = plan(
        &[
            (
                "edit",
                "printf 'a\\nc\\n' > keep.txt; printf 'new\\n' > 'new file.txt'",
            ),
            ("gitmv", mover),
            (
                "rm",
                "rm gone.txt; printf '\\0\\1\\2' > img.bin; echo noise > x.log",
            ),
            ("mv", "mv plain.txt plain2.txt"),
            ("nothing", "true"),
        ],
        1,
    );
    let o = env.run(&p, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = env.report();
    let d = &r["diff"];
    assert_eq!(d["method"], if repo { "git" } else { "snapshot" }, "{d:#}");
    assert!(d.get("notes").is_none(), "{d:#}");
    assert_eq!(
        (&d["files_changed"], &d["insertions"], &d["deletions"]),
        (&json!(7), &json!(3), &json!(2)),
        "{d:#}"
    );
    let n = Value::Null;
    assert_eq!(
        files(d),
        vec![
            json!(["gone.txt", "deleted", 0, 1, false, n, ["rm"]]),
            json!(["img.bin", "modified", 0, 0, true, n, ["rm"]]),
            json!(["keep.txt", "modified", 1, 1, false, n, ["edit"]]),
            json!([
                "moved to.txt",
                "renamed",
                0,
                0,
                false,
                "moved.txt",
                ["gitmv"]
            ]),
            json!(["new file.txt", "added", 1, 0, false, n, ["edit"]]),
            json!(["plain2.txt", "renamed", 0, 0, false, "plain.txt", ["mv"]]),
            // Ignored (`*.log`), listed all the same; per-step attribution
            // walks what the ignore rules let through, so no step is named.
            json!(["x.log", "added", 1, 0, false, n, n]),
        ]
    );
    assert_eq!(
        changed_files(&env, "edit"),
        json!(["keep.txt", "new file.txt"])
    );
    assert_eq!(
        changed_files(&env, "gitmv"),
        json!(["moved to.txt", "moved.txt"])
    );
    assert_eq!(changed_files(&env, "rm"), json!(["gone.txt", "img.bin"]));
    assert_eq!(
        changed_files(&env, "mv"),
        json!(["plain.txt", "plain2.txt"])
    );
    assert_eq!(changed_files(&env, "nothing"), json!([]));
    let md = summary(&env);
    let method = if repo {
        "(compared with git)"
    } else {
        "(compared by content snapshot)"
    };
    assert!(
        md.contains(&format!(
            "7 file(s) changed, 3 insertion(s), 2 deletion(s) {method}."
        )),
        "{md}"
    );
    for row in [
        "| file | change | + | - | steps |",
        "| `moved.txt` → `moved to.txt` | renamed | 0 | 0 | gitmv |",
        "| `img.bin` | modified (binary) | 0 | 0 | rm |",
        "| `keep.txt` | modified | 1 | 1 | edit |",
        "### `keep.txt`",
        "\n-b\n+c\n",
        "+new\n",
        "| `x.log` | added (ignored) | 1 | 0 |  |",
        "### `x.log` (ignored)",
    ] {
        assert!(md.contains(row), "{row:?} not in\n{md}");
    }
    for absent in ["pre.txt", "plan.yaml"] {
        assert!(!md.contains(absent), "{absent} in\n{md}");
    }
}

#[test]
fn a_git_workspace_reports_kinds_renames_binaries_and_the_step_behind_each_file() {
    scenario(true);
}

#[test]
fn a_plain_folder_reports_the_same_by_snapshot() {
    scenario(false);
}

#[test]
fn steps_that_overlap_are_not_credited_and_the_next_one_alone_is() {
    let env = Env::new();
    let p = format!(
        "{}  - id: after\n    tool: bash\n    dependencies: [p1, p2]\n    parameters: {{command: 'echo 3 > after.txt'}}\n",
        plan(
            &[
                ("p1", "echo 1 > p1.txt; sleep 1"),
                ("p2", "echo 2 > p2.txt; sleep 1"),
            ],
            2,
        )
    );
    let o = env.run(&p, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let d = &env.report()["diff"];
    let n = Value::Null;
    assert_eq!(
        files(d),
        vec![
            json!(["after.txt", "added", 1, 0, false, n, ["after"]]),
            json!(["p1.txt", "added", 1, 0, false, n, n]),
            json!(["p2.txt", "added", 1, 0, false, n, n]),
        ]
    );
    assert_eq!(changed_files(&env, "p1"), Value::Null);
    assert_eq!(changed_files(&env, "p2"), Value::Null);
    assert_eq!(changed_files(&env, "after"), json!(["after.txt"]));
    assert!(summary(&env).contains("| `p1.txt` | added | 1 | 0 |  |"));
}

#[test]
fn a_rollback_is_credited_with_what_it_changed() {
    let env = Env::new();
    let p = "version: 1\nid: d\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: one, tool: bash, parameters: {command: 'echo 1 > one.txt'}, rollback_command: 'rm one.txt; echo undone > undone.txt'}\n  - {id: boom, tool: bash, dependencies: [one], parameters: {command: 'exit 1'}}\n";
    let o = env.run(p, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let r = env.report();
    let n = Value::Null;
    assert_eq!(
        files(&r["diff"]),
        vec![json!([
            "undone.txt",
            "added",
            1,
            0,
            false,
            n,
            ["one (rollback)"]
        ])]
    );
    assert_eq!(changed_files(&env, "one"), json!(["one.txt"]));
    assert_eq!(changed_files(&env, "boom"), json!([]));
    assert_eq!(
        env.step("one")["rollback"]["changed_files"],
        json!(["one.txt", "undone.txt"])
    );
}

#[test]
fn the_default_output_folder_inside_a_repository_stays_out_of_the_diff() {
    let env = Env::new();
    seed(&env, true);
    let plan_file = env.write("plan.yaml", &plan(&[("a", "echo a > a.txt")], 1));
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan_file)
        .arg("--workspace")
        .arg(&env.ws)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The run folder, beside plangate's `.gitignore`.
    let runs: Vec<_> = std::fs::read_dir(env.ws.join(".plangate/runs"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert_eq!(runs.len(), 1);
    let r = read_json(&runs[0].path().join("report.json"));
    let n = Value::Null;
    assert_eq!(r["diff"]["method"], "git");
    assert_eq!(
        files(&r["diff"]),
        vec![json!(["a.txt", "added", 1, 0, false, n, ["a"]])]
    );
    assert_eq!(r["steps"][0]["changed_files"], json!(["a.txt"]));
}

#[test]
fn a_secret_a_step_writes_is_found_in_the_git_diff_and_written_nowhere() {
    let env = Env::new();
    seed(&env, true);
    let p = plan(
        &[(
            "leak",
            &format!("printf 'a\\nc\\n' > keep.txt; printf '[ci]\\nkey = {AWS_ID_2}\\n' > ci.ini"),
        )],
        1,
    );
    let o = env.run(&p, &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let r = env.report();
    assert_eq!(r["diff"]["method"], "git");
    let locations: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["location"].as_str())
        .collect();
    assert_eq!(locations, vec!["diff-summary.md"]);
    let md = summary(&env);
    assert!(md.contains("+key = [REDACTED"), "{md}");
    crate::secrets::assert_nowhere(&env.out, &[&o.stdout, &o.stderr], AWS_ID_2);
}

/// `plangate run` with a `git` that refuses every repository first on `PATH`.
fn run_with_broken_git(env: &Env, plan_yaml: &str) -> Output {
    let bin = env.ws.parent().unwrap().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("git");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"fatal: detected dubious ownership in repository at '$PWD'\" >&2\nexit 128\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let plan_file = env.write("plan.yaml", plan_yaml);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.cmd()
        .env("PATH", path)
        .arg("run")
        .arg(&plan_file)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
}

#[test]
fn when_git_refuses_the_repository_the_snapshot_takes_over_and_says_why() {
    let env = Env::new();
    seed(&env, true);
    let o = run_with_broken_git(&env, &plan(&[("edit", "printf 'a\\nc\\n' > keep.txt")], 1));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let d = &env.report()["diff"];
    assert_eq!(d["method"], "snapshot");
    let notes = d["notes"].to_string();
    assert!(notes.contains("dubious ownership"), "{d:#}");
    let n = Value::Null;
    assert_eq!(
        files(d),
        vec![json!(["keep.txt", "modified", 1, 1, false, n, ["edit"]])]
    );
    let md = summary(&env);
    assert!(md.contains("> **Note:** git could not be used"), "{md}");
}
