//! Transactional agent steps through the binary: an agent CLI edits a staged
//! copy of the workspace; a rejected attempt leaves the workspace
//! byte-identical and the retry starts clean; an accepted answer's change
//! set is checked, applied and reported exactly. The stand-in CLI
//! (`tests/fixtures/agents/editing_cli.sh`) edits in place as Claude Code
//! and Codex do, and checks its start-up (private, fresh, writable `HOME`;
//! not started in the real workspace). That the sandbox keeps the CLI's
//! writes inside the staged copy is a facility trial, under each backend:
//! tests/facilities/agent_stage.rs.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{Env, code, git, stderr};

pub const GOOD: &str = "{\"status\": \"OK\", \"summary\": \"edited the files\"}\n";
const BAD: &str = "I edited a.txt and removed b.txt. All done!\n";

/// A workspace under git with `a.txt`, `b.txt`, `shared.txt`, and the stand-in's config folder.
pub struct Staged {
    pub env: Env,
    cfg: PathBuf,
    #[allow(dead_code)] // read by tests/facilities/agent_stage.rs
    pub outside: tempfile::TempDir,
}

impl Staged {
    pub fn new() -> Staged {
        let env = Env::new();
        env.write("a.txt", "alpha\n");
        env.write("b.txt", "beta\n");
        env.write("shared.txt", "original\n");
        git(&env.ws, &["init", "-q"]);
        git(&env.ws, &["add", "-A"]);
        git(
            &env.ws,
            &[
                "-c",
                "user.email=t@example.com",
                "-c",
                "user.name=t",
                "commit",
                "-qm",
                "base",
            ],
        );
        let cfg = env.ws.parent().unwrap().join("cli");
        std::fs::create_dir_all(&cfg).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(cfg.join("workspace"), env.ws.display().to_string()).unwrap();
        std::fs::write(cfg.join("outside"), outside.path().display().to_string()).unwrap();
        std::fs::write(
            cfg.join("real_home"),
            std::env::var("HOME").unwrap_or_default(),
        )
        .unwrap();
        Staged { env, cfg, outside }
    }

    /// Call `n` does `actions` (one per line) and answers `answer`.
    pub fn call(&self, n: u32, actions: &[&str], answer: &str) -> &Staged {
        std::fs::write(
            self.cfg.join(format!("{n}.mode")),
            actions.join("\n") + "\n",
        )
        .unwrap();
        std::fs::write(self.cfg.join(format!("{n}.answer")), answer).unwrap();
        self
    }

    pub fn plan(&self, policy: &str, attempts: u32, extra_steps: &str) -> String {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/agents/editing_cli.sh"
        );
        format!(
            "version: 1\nid: staged\npolicy: {policy}\nagents:\n  editor:\n    command: [bash, {script:?}, {:?}]\n    timeout: 60\nsteps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: editor\n      prompt: Fix the files.\n      max_attempts: {attempts}\n{extra_steps}",
            self.cfg.display().to_string()
        )
    }

    pub fn run(&self, policy: &str, attempts: u32, args: &[&str]) -> std::process::Output {
        self.env.run(&self.plan(policy, attempts, ""), args)
    }

    fn prompt(&self, n: u32) -> String {
        std::fs::read_to_string(
            self.env
                .out
                .join(format!("artifacts/fix/editing-cli/prompt.{n}")),
        )
        .unwrap_or_default()
    }
}

/// Every entry under `root` (`.git` included, the test's `plan.yaml` left
/// out): kind, mode, content or link target.
pub fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1).follow_links(false) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(root).unwrap().display().to_string();
        if rel == "plan.yaml" {
            continue;
        }
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        let mode = m.permissions().mode() & 0o7777;
        let what = if m.file_type().is_symlink() {
            format!("link {}", std::fs::read_link(e.path()).unwrap().display())
        } else if m.is_dir() {
            format!("dir {mode:o}")
        } else {
            format!(
                "file {mode:o} {}",
                String::from_utf8_lossy(&std::fs::read(e.path()).unwrap())
            )
        };
        out.insert(rel, what);
    }
    out
}

/// The entries of `after` that differ from `before` (none when identical).
pub fn differences(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| {
            let cut = |v: Option<&String>| v.map(|v| v.chars().take(80).collect::<String>());
            format!("{k}: {:?} -> {:?}", cut(before.get(k)), cut(after.get(k)))
        })
        .collect()
}

pub fn changed(step: &Value) -> Vec<(String, String)> {
    step["agent_changes"]["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no agent_changes in {step:#}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["change"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

pub const MEDIUM: &str = "{risk_tolerance: medium}";

#[test]
fn a_rejected_attempt_is_discarded_and_the_retry_starts_from_the_clean_workspace() {
    let s = Staged::new();
    s.call(1, &["expect-clean", "edit"], BAD)
        .call(2, &["expect-clean", "edit2"], GOOD);
    let o = s.run(MEDIUM, 2, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ws = &s.env.ws;
    // Exactly the accepted attempt's changes, nothing of the rejected one.
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "alpha v2\n"
    );
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "beta\n");
    assert!(!ws.join("c.txt").exists() && !ws.join("new").exists());
    assert_eq!(std::fs::read_to_string(ws.join("d/e.txt")).unwrap(), "e\n");
    let mode = std::fs::metadata(ws.join("d/e.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "the executable bit is applied too");
    let step = s.env.step("fix");
    assert_eq!(
        changed(&step),
        vec![
            ("a.txt".to_owned(), "modified".to_owned()),
            ("d/e.txt".to_owned(), "added".to_owned()),
        ]
    );
    assert_eq!(step["agent_changes"]["via"], "staged copy");
    assert_eq!(
        step["changed_files"],
        serde_json::json!(["a.txt", "d/e.txt"])
    );
    assert_eq!(step["agent_attempts"][0]["verdict"], "rejected");
    assert_eq!(step["agent_attempts"][0]["discarded_changes"], 4);
    assert!(s.prompt(2).contains("was discarded too"), "{}", s.prompt(2));
    // The diff summary credits the agent step.
    let diff = &s.env.report()["diff"]["files"];
    for f in diff.as_array().unwrap() {
        assert_eq!(f["steps"], serde_json::json!(["fix"]), "{f}");
    }
    // The CLI was not started in the workspace, and its home was not plangate's.
    let cwd = std::fs::read_to_string(s.env.out.join("artifacts/fix/editing-cli/cwd.1")).unwrap();
    assert!(!cwd.trim().starts_with(ws.to_str().unwrap()), "{cwd}");
}

#[test]
fn when_every_attempt_is_rejected_the_workspace_is_byte_identical() {
    let s = Staged::new();
    s.call(1, &["expect-clean", "edit", "git-commit"], BAD);
    let before = tree(&s.env.ws);
    let o = s.run(MEDIUM, 3, &[]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    assert_eq!(differences(&before, &tree(&s.env.ws)), Vec::<String>::new());
    let step = s.env.step("fix");
    assert_eq!(step["status"], "rejected");
    assert!(step.get("agent_changes").is_none(), "{step:#}");
    for a in step["agent_attempts"].as_array().unwrap() {
        assert_eq!(a["discarded_changes"], 4, "{a}");
    }
}

#[test]
fn an_accepted_answer_applies_nothing_when_the_change_set_fails_a_check() {
    // (actions, policy, what the error names)
    // A made-up GitHub token (checksum-valid), as in leaks.rs.
    let secret = "token = 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\n";
    // (actions, policy, what the error names, exit code)
    let cases: &[(&[&str], &str, &str, i32)] = &[
        (&["edit2", "link-out"], MEDIUM, "outside the workspace", 1),
        (
            &["edit2", "touch-locked"],
            "{risk_tolerance: medium, permissions: [{id: all, resource: '**', level: admin, priority: 10}, {id: locked, resource: 'locked/**', level: read, priority: 90}]}",
            "locked/x.txt",
            1,
        ),
        // Secrets found: exit 4, and the finding names the change.
        (&["edit2", "secret"], MEDIUM, "creds.txt", 4),
    ];
    for (actions, policy, named, exit) in cases {
        let s = Staged::new();
        std::fs::write(s.cfg.join("secret.txt"), secret).unwrap();
        s.call(1, actions, GOOD);
        let before = tree(&s.env.ws);
        let o = s.run(policy, 1, &[]);
        assert_eq!(code(&o), *exit, "{actions:?}: {}", stderr(&o));
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains("ghp_ycv23zfZjWTIq"),
            "{actions:?}: the secret never reaches the console"
        );
        assert_eq!(
            differences(&before, &tree(&s.env.ws)),
            Vec::<String>::new(),
            "{actions:?}: nothing applied"
        );
        let step = s.env.step("fix");
        let err = step["error"].as_str().unwrap();
        assert!(
            err.contains("the agent's changes were not applied") && err.contains(named),
            "{actions:?}: {err}"
        );
        // Said once, not chained onto itself.
        assert_eq!(
            err.matches("the answer was accepted but").count(),
            1,
            "{actions:?}: {err}"
        );
        assert_eq!(crate::harness::repeated_clause(err), None, "{err}");
    }
}

#[test]
fn a_change_to_a_file_another_step_changed_meanwhile_is_refused() {
    let s = Staged::new();
    s.call(1, &["wait-for-change"], GOOD);
    let other = "  - id: other\n    tool: bash\n    parameters: {command: 'sleep 0.5; echo other > shared.txt'}\n";
    let o = s.env.run(
        &s.plan("{risk_tolerance: medium, max_parallel: 2}", 1, other),
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(s.env.ws.join("shared.txt")).unwrap(),
        "other\n",
        "the other step's change stands"
    );
    let err = s.env.step("fix")["error"].as_str().unwrap().to_owned();
    assert!(
        err.contains("shared.txt") && err.contains("while the agent worked"),
        "{err}"
    );
}

#[test]
fn an_envelope_without_a_cli_is_a_change_set_too_and_never_touches_git() {
    let env = Env::new();
    let answers = env.ws.parent().unwrap().join("answers.jsonl");
    let good = serde_json::json!({"status": "OK", "summary": "notes", "artifacts": [{"path": "docs/notes.md", "content": "n\n"}]});
    let git_hook = serde_json::json!({"status": "OK", "summary": "hook", "artifacts": [{"path": ".git/hooks/pre-commit", "content": "echo hi\n"}]});
    for (answer, ok) in [(good, true), (git_hook, false)] {
        let entry = serde_json::json!({"step": "fix", "attempt": 1, "answer": answer.to_string()});
        std::fs::write(&answers, format!("{entry}\n")).unwrap();
        let plan = format!(
            "version: 1\nid: e\npolicy: {{risk_tolerance: medium}}\nagents:\n  r:\n    provider: replay\n    file: {:?}\nsteps:\n  - id: fix\n    tool: agent\n    parameters: {{agent: r, prompt: p, max_attempts: 1}}\n",
            answers.display().to_string()
        );
        let o = env.run(&plan, &[]);
        let step = env.step("fix");
        if ok {
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            assert_eq!(step["agent_changes"]["via"], "envelope");
            assert_eq!(
                changed(&step),
                vec![("docs/notes.md".to_owned(), "added".to_owned())]
            );
        } else {
            // The guard already refuses a `.git/` path; the change set would too.
            assert_eq!(code(&o), 5, "{}", stderr(&o));
            assert!(step.to_string().contains(".git"), "{step:#}");
            assert!(!env.ws.join(".git").exists());
        }
    }
}

#[test]
fn what_an_agent_cli_leaves_running_is_killed_and_reported() {
    let s = Staged::new();
    s.call(1, &["daemon", "edit2"], GOOD);
    let o = s.run(MEDIUM, 1, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let step = s.env.step("fix");
    assert_eq!(step["status"], "success", "{step:#}");
    let n = step["lingering_processes"].as_u64().unwrap_or(0);
    assert!((1..=2).contains(&n), "{step:#}");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(
        !s.env.out.join("artifacts/fix/late.txt").exists(),
        "a detached process of the agent CLI survived its step"
    );
}
