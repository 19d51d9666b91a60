//! git indirection (issue 23, item 4), two ways around the guards: a step
//! below dangerous that turns a folder holding a committed hostile git
//! configuration into a git directory (without touching that
//! configuration), and one that changes a configuration file the
//! repository's configuration includes from the workspace. Neither may
//! leave anything the user's later git commands would run.
//!
//! Payloads are data files (tests/fixtures/git_indirection/) run by
//! `sh`; every program they plant would only touch a marker file in the
//! test's temporary folder, and after plangate the test runs the real git
//! in each folder and checks that no marker appeared.

use std::path::Path;

use crate::facility::Backend;
use crate::git_indirection::{markers, marks, run, users_git_commands};
use crate::harness::{Env, code, git, stderr};

const ACTIVATE: &str = include_str!("../fixtures/git_indirection/activate_payload.sh");
const INCLUDE: &str = include_str!("../fixtures/git_indirection/include_payload.sh");

/// A configuration that runs a program (a marker named after `name`) on
/// the user's `git status` or `git st`.
fn hostile(m: &Path, name: &str) -> String {
    let m = m.display();
    format!(
        "[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = \"touch {m}/ran-{name}-fsmonitor; false #\"\n[alias]\n\tst = \"!touch {m}/ran-{name}-alias\"\n"
    )
}

fn plan(m: &Path, payload: &str) -> String {
    let m = m.display().to_string();
    format!(
        "version: 1\nid: act\npolicy: {{risk_tolerance: high}}\nsteps:\n  \
         - {{id: plant, tool: bash, continue_on_error: true, env: {{M: {m:?}}}, parameters: {{command: 'sh {payload}'}}}}\n"
    )
}

/// The user's git in `dir`, the alias `names` included.
fn users_git(dir: &Path, names: &[&str]) {
    users_git_commands(dir);
    for n in names {
        let _ = std::process::Command::new("git")
            .arg(n)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::null())
            .output();
    }
}

pub fn a_folder_a_step_turns_into_a_git_directory_is_judged_whole(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let m = marks(&env);
    git(&env.ws, &["init", "-q"]);
    env.write("activate.sh", ACTIVATE);
    env.write(".gitignore", "plan.yaml\n");
    let head = "ref: refs/heads/main\n";
    // What the pull request commits: ordinary files, no git directory yet.
    for (dir, files) in [
        ("c1/e1", &[("HEAD", head), ("refs/heads/.keep", "")][..]),
        ("c2/e2", &[("HEAD", head), ("objects/.keep", "")]),
        ("c3/e3", &[("HEAD", head), ("refs/.keep", "")]),
        (
            "c4/e4",
            &[("HEAD", "x\n"), ("objects/.keep", ""), ("refs/.keep", "")],
        ),
        ("c5/e5", &[("HEAD", head), ("objects", ""), ("refs", "")]),
        ("c6/e6", &[("objects/.keep", ""), ("refs/.keep", "")]),
        ("c8/e8", &[("HEAD", head), ("refs/.keep", "")]),
    ] {
        for (f, text) in files {
            env.write(&format!("{dir}/{f}"), text);
        }
        env.write(&format!("{dir}/config"), &hostile(&m, &dir[3..]));
    }
    env.write("src/o3/.keep", "");
    env.write("src/h6", head);
    // A work tree's git directory whose common folder lacks `refs`.
    env.write("c7/e7/HEAD", head);
    env.write("c7/e7/commondir", "../c\n");
    env.write("c7/c/objects/.keep", "");
    env.write("c7/c/config", &hostile(&m, "e7"));
    std::os::unix::fs::symlink("../../src/o8", env.ws.join("c8/e8/objects")).unwrap();
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "pull request"]);
    // The user's own: a nested repository that hides the hostile bare one
    // around it (git takes `.git` first), and a hostile repository that
    // was one before the run (the user's state: left alone, never run here).
    git(&env.ws, &["init", "-q", "c9/e9"]);
    for (f, text) in [("HEAD", head), ("objects/.keep", ""), ("refs/.keep", "")] {
        env.write(&format!("c9/e9/{f}"), text);
    }
    env.write("c9/e9/config", &hostile(&m, "e9"));
    for (f, text) in [("HEAD", head), ("objects/.keep", ""), ("refs/.keep", "")] {
        env.write(&format!("keep/{f}"), text);
    }
    env.write("keep/config", &hostile(&m, "keep"));
    let o = run(&env, flag, &plan(&m, "activate.sh"), &["plant"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let s = env.step("plant");
    assert_eq!(s["sandbox"]["profile"]["filesystem"], "workspace-write");
    assert_eq!(s["status"], "failed", "{backend}: {s}");
    let e = s["error"].as_str().unwrap();
    assert!(
        e.contains(
            "left git repositories whose configuration or hooks would make git run a program"
        ),
        "{backend}: {e}"
    );
    assert!(!e.contains("keep/"), "{backend}: {e}");
    // The payload did run: each folder is a git directory now.
    assert!(env.ws.join("c1/e1/objects/x").exists(), "{backend}");
    assert!(!env.ws.join("c9/e9/.git").exists(), "{backend}");
    assert!(env.ws.join("keep/config").exists(), "{backend}");
    for n in 1..=9 {
        let dir = env.ws.join(format!("c{n}/e{n}"));
        users_git(&dir, &["st"]);
        assert_eq!(markers(&m), Vec::<String>::new(), "{backend}: c{n}/e{n}");
    }
}

pub fn a_step_changes_no_configuration_file_git_includes(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let m = marks(&env);
    git(&env.ws, &["init", "-q"]);
    env.write("include.sh", INCLUDE);
    env.write(".gitignore", "plan.yaml\n");
    env.write("a.txt", "one\n");
    let shared = "[include]\n\tpath = real/deep.gitconfig\n\tpath = lnk/deep2.gitconfig\n";
    env.write("shared.gitconfig", shared);
    env.write("real/deep.gitconfig", "[user]\n\tname = t\n");
    env.write("real/deep2.gitconfig", "[user]\n\tname = t\n");
    env.write("vshared.gitconfig", "[user]\n\tname = t\n");
    std::os::unix::fs::symlink("real", env.ws.join("lnk")).unwrap();
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
    // The user's configuration: includes of workspace files.
    git(&env.ws, &["config", "include.path", "../shared.gitconfig"]);
    git(
        &env.ws,
        &[
            "config",
            "includeIf.gitdir:/.path",
            "../conf/missing.gitconfig",
        ],
    );
    git(&env.ws, &["init", "-q", "vendor"]);
    git(
        &env.ws.join("vendor"),
        &["config", "include.path", "../../vshared.gitconfig"],
    );
    env.write("a.txt", "two\n");
    let o = run(&env, flag, &plan(&m, "include.sh"), &["plant"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let s = env.step("plant");
    assert_eq!(s["sandbox"]["profile"]["filesystem"], "workspace-write");
    assert_eq!(s["status"], "failed", "{backend}: {s}");
    let e = s["error"].as_str().unwrap();
    assert!(
        e.contains("a configuration file git includes"),
        "{backend}: {e}"
    );
    assert!(e.contains("shared.gitconfig"), "{backend}: {e}");
    // Everything is as it was: the payload's changes were put back.
    assert!(
        env.ws.join("evil/deep2.gitconfig").exists(),
        "{backend}: the payload did not run"
    );
    let read = |p: &str| std::fs::read_to_string(env.ws.join(p)).unwrap_or_default();
    assert_eq!(read("shared.gitconfig"), shared, "{backend}");
    assert_eq!(
        read("real/deep.gitconfig"),
        "[user]\n\tname = t\n",
        "{backend}"
    );
    assert_eq!(
        read("vshared.gitconfig"),
        "[user]\n\tname = t\n",
        "{backend}"
    );
    assert!(!env.ws.join("conf/missing.gitconfig").exists(), "{backend}");
    assert_eq!(
        std::fs::read_link(env.ws.join("lnk")).unwrap(),
        Path::new("real"),
        "{backend}"
    );
    users_git(&env.ws, &["st", "stdeep", "st2", "st3"]);
    let _ = std::process::Command::new("git")
        .args(["add", "-A"])
        .current_dir(&env.ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output();
    users_git(&env.ws.join("vendor"), &["st"]);
    assert_eq!(markers(&m), Vec::<String>::new(), "{backend}");
}
