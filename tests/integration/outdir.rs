//! The output folder and git, through real runs on real repositories: where
//! the run folder goes by default (the CI's temporary folder, else
//! `.plangate/runs/` with a `.gitignore` of its own), the git-based diff
//! whether or not the folder is ignored, and the `git` tool, which never
//! stages or commits plangate's own output.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::harness::{Env, code, git, read_json, stderr};

/// A repository at `root` with `.gitignore` = `ignore`, a committed
/// `a.txt` (and `sub/s.txt`), and an identity for the `git` tool's commits.
fn repo(root: &Path, ignore: &str) {
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join(".gitignore"), ignore).unwrap();
    std::fs::write(root.join("a.txt"), "1\n").unwrap();
    std::fs::write(root.join("sub/s.txt"), "1\n").unwrap();
    git(root, &["init", "-q", "."]);
    git(root, &["config", "user.name", "bot"]);
    git(root, &["config", "user.email", "bot@example.invalid"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "seed"]);
}

/// Where a case puts the run folder.
#[derive(Clone, Copy, Debug)]
enum Out {
    /// No `--out`: `.plangate/runs/<id>` in the workspace.
    Default,
    /// `--out plangate-out` (inside the workspace).
    Inside,
    /// `--out` outside the workspace.
    Outside,
    /// No `--out`, GitHub Actions with `RUNNER_TEMP`.
    RunnerTemp,
    /// No `--out`, GitLab CI with `RUNNER_TEMP_PROJECT_DIR`.
    GitlabTemp,
}

/// `plangate run plan.yaml --workspace WS` (from WS) with the case's output
/// folder; returns the output and the run folder.
fn run(env: &Env, ws: &Path, plan: &str, out: Out) -> (Output, PathBuf) {
    let plan_path = env.ws.parent().unwrap().join("plan.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let temp = env.ws.parent().unwrap().join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let outputs = temp.join("github-output.txt");
    let mut c = env.cmd();
    c.current_dir(ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .arg("run")
        .arg(&plan_path)
        .arg("--workspace")
        .arg(ws)
        .timeout(std::time::Duration::from_secs(120));
    match out {
        Out::Default => {}
        Out::Inside => {
            c.args(["--out", "plangate-out"]);
        }
        Out::Outside => {
            c.arg("--out").arg(&env.out);
        }
        Out::RunnerTemp => {
            c.env("GITHUB_ACTIONS", "true")
                .env("RUNNER_TEMP", &temp)
                .env("GITHUB_OUTPUT", &outputs);
        }
        Out::GitlabTemp => {
            c.env("GITLAB_CI", "true")
                .env("RUNNER_TEMP_PROJECT_DIR", &temp);
        }
    }
    let o = c.output().unwrap();
    let folder = match out {
        Out::Default => only_run(&ws.join(".plangate/runs")),
        Out::Inside => ws.join("plangate-out"),
        Out::Outside => env.out.clone(),
        Out::RunnerTemp | Out::GitlabTemp => only_run(&temp.join("plangate/runs")),
    };
    (o, folder)
}

/// The one run folder in `runs` (its `.gitignore` aside).
fn only_run(runs: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .unwrap_or_else(|e| panic!("{}: {e}", runs.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// Paths `git status` shows (untracked files listed one by one).
fn status(root: &Path) -> Vec<String> {
    git(root, &["status", "--porcelain", "--untracked-files=all"])
        .lines()
        .map(|l| l[3..].to_owned())
        .collect()
}

const EDIT: &str = "version: 1\nid: edit\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'echo 2 > a.txt'}}\n";

#[test]
fn the_git_diff_works_whether_or_not_the_output_folder_is_ignored() {
    // (case, the user's .gitignore, where the run folder goes, workspace = `sub` of the repository)
    let cases: &[(&str, &str, Out, bool)] = &[
        (
            "default, ignored by the user",
            ".plangate/\n",
            Out::Default,
            false,
        ),
        (
            "default, not ignored by the user",
            "*.log\n",
            Out::Default,
            false,
        ),
        (
            "--out inside, ignored",
            "plangate-out/\n",
            Out::Inside,
            false,
        ),
        ("--out inside, not ignored", "", Out::Inside, false),
        ("--out outside the workspace", "", Out::Outside, false),
        (
            "nested workspace, ignored",
            ".plangate/\n",
            Out::Default,
            true,
        ),
        ("nested workspace, not ignored", "", Out::Default, true),
        ("nested workspace, --out inside", "", Out::Inside, true),
        ("GitHub Actions", "", Out::RunnerTemp, false),
        ("GitLab CI", "", Out::GitlabTemp, false),
    ];
    for &(case, ignore, out, nested) in cases {
        let env = Env::new();
        repo(&env.ws, ignore);
        let ws = if nested {
            env.ws.join("sub")
        } else {
            env.ws.clone()
        };
        let plan = if nested {
            EDIT.replace("a.txt", "s.txt")
        } else {
            EDIT.to_owned()
        };
        let (o, folder) = run(&env, &ws, &plan, out);
        assert_eq!(code(&o), 0, "{case}: {}", stderr(&o));
        let r = read_json(&folder.join("report.json"));
        let d = &r["diff"];
        assert_eq!(d["method"], "git", "{case}: {d:#}");
        assert!(d.get("notes").is_none(), "{case}: {d:#}");
        let file = if nested { "s.txt" } else { "a.txt" };
        let paths: Vec<&Value> = d["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| &f["path"])
            .collect();
        assert_eq!(paths, vec![&json!(file)], "{case}: {d:#}");
        assert_eq!(r["steps"][0]["changed_files"], json!([file]), "{case}");
        let md = std::fs::read_to_string(folder.join("diff-summary.md")).unwrap();
        assert!(
            !md.contains("report.json") && !md.contains("plangate-out"),
            "{case}: {md}"
        );
        // git sees only the step's change: the run folder is ignored, by the
        // user or by plangate's own `.gitignore`.
        let seen = status(&env.ws);
        let want = if nested { "sub/s.txt" } else { "a.txt" };
        assert_eq!(seen, vec![want.to_owned()], "{case}");
        match out {
            Out::Default => {
                let ignore = std::fs::read_to_string(ws.join(".plangate/runs/.gitignore")).unwrap();
                assert!(ignore.lines().any(|l| l == "*"), "{case}: {ignore}");
                assert!(!ws.join(".plangate/.gitignore").exists(), "{case}");
            }
            Out::Inside => {
                let ignore = std::fs::read_to_string(ws.join("plangate-out/.gitignore")).unwrap();
                assert!(ignore.lines().any(|l| l == "*"), "{case}: {ignore}");
            }
            Out::Outside | Out::RunnerTemp | Out::GitlabTemp => {
                assert!(!ws.join(".plangate").exists(), "{case}");
                assert!(!folder.join(".gitignore").exists(), "{case}");
            }
        }
    }
}

#[test]
fn on_github_actions_the_run_folder_is_in_runner_temp_and_is_an_output() {
    let env = Env::new();
    repo(&env.ws, "");
    let (o, folder) = run(&env, &env.ws.clone(), EDIT, Out::RunnerTemp);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let temp = env.ws.parent().unwrap().join("runner-temp");
    assert!(
        folder.starts_with(temp.join("plangate/runs")),
        "{}",
        folder.display()
    );
    let outputs = std::fs::read_to_string(temp.join("github-output.txt")).unwrap();
    let report = folder.join("report.json");
    assert!(
        outputs.contains(&format!("\n{}\n", report.display())),
        "{outputs}"
    );
    assert!(outputs.contains("out-dir<<"), "{outputs}");
    assert!(
        outputs.contains(&format!("\n{}\n", folder.display())),
        "{outputs}"
    );
    assert!(
        stderr(&o).contains(&report.display().to_string()),
        "{}",
        stderr(&o)
    );
}

/// A bot's plan: a fix, then `git add` (as `add`), then `git commit`.
fn bot_plan(add: &str, pre: &str) -> String {
    format!(
        "version: 1\nid: bot\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: fix, tool: bash, parameters: {{command: '{pre}echo fixed > a.txt; echo new > b.txt'}}}}\n  - {{id: add, tool: git, dependencies: [fix], parameters: {add}}}\n  - {{id: commit, tool: git, dependencies: [add], parameters: {{operation: commit, commit_message: bot}}}}\n"
    )
}

#[test]
fn a_git_step_never_stages_or_commits_plangates_output() {
    let adds = [
        "{operation: add}",
        "{operation: add, args: ['-A']}",
        "{operation: add, files: ['.']}",
        "{operation: add, args: ['-A'], force: true}",
    ];
    // The user's .gitignore; whether the fix step deletes plangate's own `.gitignore` first.
    let worlds: &[(&str, Out, &str)] = &[
        (".plangate/\n", Out::Default, ""),
        ("", Out::Default, ""),
        ("", Out::Default, "rm .plangate/runs/.gitignore; "),
        ("plangate-out/\n", Out::Inside, ""),
        ("", Out::Inside, ""),
    ];
    for add in adds {
        for &(ignore, out, pre) in worlds {
            let case = format!("{add} / ignore {ignore:?} / {out:?} / {pre:?}");
            let env = Env::new();
            repo(&env.ws, ignore);
            let (o, folder) = run(&env, &env.ws.clone(), &bot_plan(add, pre), out);
            assert_eq!(code(&o), 0, "{case}: {}", stderr(&o));
            let r = read_json(&folder.join("report.json"));
            assert_eq!(r["status"], "success", "{case}");
            let committed = git(
                &env.ws,
                &["show", "--stat", "--name-only", "--format=", "HEAD"],
            );
            let files: Vec<&str> = committed.lines().filter(|l| !l.is_empty()).collect();
            assert_eq!(files, vec!["a.txt", "b.txt"], "{case}: {committed}");
            assert!(!committed.contains("plangate"), "{case}: {committed}");
            let staged = git(&env.ws, &["diff", "--cached", "--name-only"]);
            assert!(staged.is_empty(), "{case}: {staged}");
            assert!(folder.join("report.json").is_file(), "{case}");
        }
    }
}

#[test]
fn commit_all_leaves_the_run_folder_out_and_a_tracked_one_is_refused() {
    // `commit -a` after a fix: the run folder is untracked, so only a.txt.
    let plan = "version: 1\nid: bot\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: fix, tool: bash, parameters: {command: 'echo fixed > a.txt'}}\n  - {id: commit, tool: git, dependencies: [fix], parameters: {operation: commit, commit_message: bot, args: ['-a']}}\n";
    for out in [Out::Default, Out::Inside] {
        let env = Env::new();
        repo(&env.ws, "");
        let (o, _) = run(&env, &env.ws.clone(), plan, out);
        assert_eq!(code(&o), 0, "{out:?}: {}", stderr(&o));
        let committed = git(&env.ws, &["show", "--name-only", "--format=", "HEAD"]);
        assert_eq!(committed.trim(), "a.txt", "{out:?}");
    }
    // An `--out` folder an earlier commit took in (what older versions let
    // through): committing is refused, never done.
    let env = Env::new();
    repo(&env.ws, "");
    std::fs::create_dir_all(env.ws.join("plangate-out")).unwrap();
    std::fs::write(env.ws.join("plangate-out/report.json"), "{}\n").unwrap();
    git(&env.ws, &["add", "plangate-out/report.json"]);
    git(&env.ws, &["commit", "-qm", "old bot"]);
    let head = git(&env.ws, &["rev-parse", "HEAD"]);
    let (o, folder) = run(&env, &env.ws.clone(), plan, Out::Inside);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let step = read_json(&folder.join("report.json"))["steps"][1].clone();
    assert_eq!(step["status"], "failed", "{step:#}");
    let error = step["error"].as_str().unwrap();
    assert!(
        error.contains("plangate's output folder `plangate-out`")
            && error.contains("git rm -r --cached"),
        "{error}"
    );
    assert_eq!(git(&env.ws, &["rev-parse", "HEAD"]), head);
}
