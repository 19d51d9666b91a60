//! git indirection (issue 23, item 4): a step below dangerous can change
//! nothing of the workspace's `.git` (nor of a git directory its `.git` file
//! points to inside the workspace), cannot leave a nested repository whose
//! configuration or hooks would run later, and cannot hide what it added
//! from the diff summary by ignoring it.
//!
//! Payloads are data files (tests/fixtures/git_indirection/) run by a
//! textconv driver (so the classifier sees only `git diff`): every program
//! they plant would only touch a marker file in the test's temporary folder,
//! and after plangate the test runs the real `git status` (and friends) in
//! the workspace and checks that no marker appeared.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::facility::Backend;
use crate::harness::{Env, code, git, stderr};

const PAYLOAD: &str = include_str!("../fixtures/git_indirection/dotgit_payload.sh");

/// Every entry under `root` (links not followed): kind, mode and content.
fn tree_state(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(meta) = root.symlink_metadata() else {
        return out;
    };
    let mut stack = vec![(root.to_path_buf(), meta)];
    while let Some((p, m)) = stack.pop() {
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        let ft = m.file_type();
        let state = if ft.is_symlink() {
            format!("link {}", std::fs::read_link(&p).unwrap().display())
        } else if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap().flatten() {
                stack.push((e.path(), e.path().symlink_metadata().unwrap()));
            }
            "dir".to_owned()
        } else if ft.is_file() {
            let bytes = std::fs::read(&p).unwrap_or_default();
            format!(
                "file {:o} {}",
                m.permissions().mode() & 0o7777,
                String::from_utf8_lossy(&bytes)
            )
        } else {
            format!("special {:o}", m.mode())
        };
        out.insert(rel, state);
    }
    out
}

/// What differs between two [`tree_state`]s.
fn differences(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("{k}: {:?} -> {:?}", a.get(k), b.get(k)))
        .collect()
}

/// `plangate run` under `flag`, every step approved under Landlock (where a
/// writing step is not auto-approved), so that each runs in its risk's profile.
pub fn run(env: &Env, flag: &str, yaml: &str, ids: &[&str]) -> std::process::Output {
    let mut args = vec!["--sandbox-backend".to_owned(), flag.to_owned()];
    if flag == "landlock" {
        for id in ids {
            args.extend(["--approve".to_owned(), (*id).to_owned()]);
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.run(yaml, &args)
}

/// A folder outside the workspace where planted programs would leave markers.
pub fn marks(env: &Env) -> PathBuf {
    let m = env.ws.parent().unwrap().join("marks");
    std::fs::create_dir_all(&m).unwrap();
    m
}

pub fn markers(m: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(m)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("ran"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The user's later git commands in `dir`, with their own config and hooks live.
pub fn users_git_commands(dir: &Path) {
    for args in [
        &["status"][..],
        &["diff"],
        &["log", "-1"],
        &["checkout", "-q", "-B", "after"],
        &["commit", "-q", "--allow-empty", "-m", "after"],
    ] {
        let _ = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(std::process::Stdio::null())
            .output();
    }
}

/// A repository in the workspace whose `git diff` runs the payload (a
/// textconv driver, the user's own configuration set before the run), with
/// its git directory at `gitdir` (relative; `.git`, or elsewhere in the
/// workspace behind a `.git` file). Returns the absolute git directory.
fn payload_repo(env: &Env, gitdir: &str) -> PathBuf {
    if gitdir == "worktree" {
        // The workspace is a linked work tree of a repository outside it.
        let main = env.ws.parent().unwrap().join("main");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q"]);
        std::fs::write(main.join("seed"), "x\n").unwrap();
        git(&main, &["add", "."]);
        git(&main, &["commit", "-qm", "seed"]);
        std::fs::remove_dir(&env.ws).unwrap();
        git(&main, &["worktree", "add", "-q", env.ws.to_str().unwrap()]);
        let g = main.join(".git/worktrees/ws");
        return finish_payload_repo(env, &g);
    }
    if gitdir == ".git" {
        git(&env.ws, &["init", "-q"]);
    } else {
        let sep = format!("--separate-git-dir={}", env.ws.join(gitdir).display());
        git(&env.ws, &["init", "-q", &sep]);
    }
    let g = env.ws.join(gitdir);
    finish_payload_repo(env, &g)
}

fn finish_payload_repo(env: &Env, g: &Path) -> PathBuf {
    let g = g.to_path_buf();
    let tools = g.join("test-tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("payload.sh"), PAYLOAD).unwrap();
    let conv = tools.join("conv.sh");
    std::fs::write(
        &conv,
        format!("sh {} ; cat \"$1\"\n", tools.join("payload.sh").display()),
    )
    .unwrap();
    git(
        &env.ws,
        &[
            "config",
            "diff.probe.textconv",
            &format!("sh {}", conv.display()),
        ],
    );
    env.write(".gitattributes", "*.txt diff=probe\n");
    env.write(".gitignore", "plan.yaml\n");
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
    env.write("a.txt", "two\n");
    g
}

fn payload_plan(g: &Path, m: &Path, w: &Path, readable: &str) -> String {
    let vars = format!(
        "env: {{G: {:?}, M: {:?}, W: {:?}}}",
        g.display().to_string(),
        m.display().to_string(),
        w.display().to_string()
    );
    format!(
        "version: 1\nid: gi\npolicy: {{risk_tolerance: high}}\nsteps:\n  \
         - {{id: safe, tool: bash, continue_on_error: true, {vars}, parameters: {{{readable}command: 'git --no-pager diff'}}}}\n  \
         - {{id: moderate, tool: bash, continue_on_error: true, dependencies: [safe], {vars}, parameters: {{{readable}command: 'git --no-pager diff > diff.out'}}}}\n"
    )
}

pub fn safe_and_moderate_steps_change_nothing_in_the_git_directory(b: Backend) {
    let (flag, backend) = b.pair();
    for gitdir in [".git", ".repo", "worktree"] {
        let case = format!("{backend} / {gitdir}");
        let env = Env::new();
        let m = marks(&env);
        let g = payload_repo(&env, gitdir);
        let before = tree_state(&g);
        let dot_before = tree_state(&env.ws.join(".git"));
        // A work tree's repository lies outside: the steps may read it.
        let readable = if gitdir == "worktree" {
            let main = env.ws.parent().unwrap().join("main");
            format!("readable: [{:?}], ", main.display().to_string())
        } else {
            String::new()
        };
        let o = run(
            &env,
            flag,
            &payload_plan(&g, &m, &env.ws, &readable),
            &["safe", "moderate"],
        );
        assert!(matches!(code(&o), 0 | 1), "{case}: {}", stderr(&o));
        let r = env.report();
        assert_eq!(r["sandbox"]["available"], backend, "{case}");
        let profile = |id: &str| env.step(id)["sandbox"]["profile"]["filesystem"].clone();
        // (A readable path outside the workspace floors the risk at moderate.)
        let first = if gitdir == "worktree" {
            "workspace-write"
        } else {
            "read-only"
        };
        assert_eq!(profile("safe"), first, "{case}");
        assert_eq!(profile("moderate"), "workspace-write", "{case}");
        // The payload did run (the moderate step's own output is there).
        assert!(env.ws.join("diff.out").exists(), "{case}");
        let diff = differences(&before, &tree_state(&g));
        assert!(diff.is_empty(), "{case}: changed under {gitdir}: {diff:#?}");
        let diff = differences(&dot_before, &tree_state(&env.ws.join(".git")));
        assert!(diff.is_empty(), "{case}: changed .git: {diff:#?}");
        // A step whose change had to be undone fails and says why:
        // under Landlock the moderate step's writes landed, then were undone.
        for id in ["safe", "moderate"] {
            let ran = env.out.join(format!("artifacts/{id}/payload-ran"));
            assert!(ran.exists(), "{case}: {id}: the payload did not run");
            let s = env.step(id);
            if backend != "bwrap" && id == "moderate" && gitdir != "worktree" {
                assert_eq!(s["status"], "failed", "{case}: {s}");
                let e = s["error"].as_str().unwrap_or_default();
                assert!(e.contains(&format!("{gitdir}/config")), "{case}: {e}");
            }
            if s["status"] != "success" {
                let e = s["error"].as_str().unwrap_or_default();
                assert!(e.contains("`.git`"), "{case}: {id}: {s}");
            }
        }
        users_git_commands(&env.ws);
        assert_eq!(markers(&m), Vec::<String>::new(), "{case}");
    }
}

const NESTED: &str = include_str!("../fixtures/git_indirection/nested_payload.sh");

/// The folders the nested payload plants (or changes) a repository in.
fn planted(ws: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = (1..=28).map(|n| ws.join(format!("k{n}"))).collect();
    for d in [
        "oneline",
        "hooked",
        "renamed",
        "linkhooks",
        "gfdir",
        "gf",
        "lk",
        "bare",
        "cd1",
        "cdtarget",
        "sl",
        "bad",
        "cont",
        "old",
    ] {
        dirs.push(ws.join(d));
    }
    dirs
}

/// A workspace (a repository of its own) with the payload, a benign nested
/// repository the payload changes, and a vendored one with its own hooks
/// configuration that nothing touches.
fn nested_workspace(env: &Env) {
    git(&env.ws, &["init", "-q"]);
    env.write("payload.sh", NESTED);
    env.write(".gitignore", "plan.yaml\n");
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
    std::fs::create_dir_all(env.ws.join("old")).unwrap();
    git(&env.ws.join("old"), &["init", "-q"]);
    std::fs::create_dir_all(env.ws.join("vendor")).unwrap();
    git(&env.ws.join("vendor"), &["init", "-q"]);
    git(
        &env.ws.join("vendor"),
        &["config", "core.hooksPath", "vendor-hooks"],
    );
}

fn nested_plan(m: &Path, risk: &str) -> String {
    let m = m.display().to_string();
    format!(
        "version: 1\nid: nested\npolicy: {{risk_tolerance: high}}\nsteps:\n  \
         - {{id: plant, tool: bash, continue_on_error: true{risk}, env: {{M: {m:?}}}, parameters: {{command: 'sh payload.sh'}}}}\n  \
         - {{id: benign, tool: bash, continue_on_error: true, parameters: {{command: 'git init -q benign && git init -q --bare benign-bare.git'}}}}\n"
    )
}

pub fn a_step_below_dangerous_leaves_no_nested_repository_that_runs_programs(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let m = marks(&env);
    nested_workspace(&env);
    let vendor = std::fs::read_to_string(env.ws.join("vendor/.git/config")).unwrap();
    let o = run(&env, flag, &nested_plan(&m, ""), &["plant", "benign"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    assert_eq!(env.report()["sandbox"]["available"], backend);
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
    // Every planted part is named (4 shown, the rest counted): a part in
    // each folder, two hooks in `hooked`, nothing in `cdtarget` (not a
    // git directory without the `commondir` that pointed at it).
    let more: usize = e
        .split(" and ")
        .filter_map(|p| {
            p.strip_suffix(
                " more); they were removed: only a step approved as dangerous may leave them",
            )
        })
        .find_map(|n| n.parse().ok())
        .unwrap_or(0);
    assert_eq!(more + 4, planted(&env.ws).len(), "{backend}: {e}");
    // A plain `git init` (and a bare one) stays as git made it.
    let b = env.step("benign");
    assert_eq!(b["status"], "success", "{backend}: {b}");
    assert_eq!(b["sandbox"]["profile"]["filesystem"], "workspace-write");
    assert!(env.ws.join("benign/.git/config").is_file());
    assert!(env.ws.join("benign/.git/hooks/pre-commit.sample").is_file());
    assert!(env.ws.join("benign-bare.git/config").is_file());
    // The user's own nested repository, untouched, keeps its configuration.
    let now = std::fs::read_to_string(env.ws.join("vendor/.git/config")).unwrap();
    assert_eq!(now, vendor, "{backend}");
    // The user's git commands in every planted folder run nothing planted.
    for dir in planted(&env.ws) {
        users_git_commands(&dir);
        let _ = std::process::Command::new("git")
            .args(["st"])
            .current_dir(&dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output();
    }
    users_git_commands(&env.ws);
    assert_eq!(markers(&m), Vec::<String>::new(), "{backend}");
}

pub fn a_step_approved_as_dangerous_keeps_the_repositories_it_makes(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let m = marks(&env);
    nested_workspace(&env);
    let o = run(
        &env,
        flag,
        &nested_plan(&m, ", risk_level: dangerous"),
        &["plant", "benign"],
    );
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let s = env.step("plant");
    assert_eq!(s["sandbox"]["profile"]["filesystem"], "declared");
    assert_eq!(s["status"], "success", "{backend}: {s}");
    // What the moderate step lost is still there (git is not run in it).
    for f in [
        "k1/.git/config",
        "hooked/.git/hooks/post-checkout",
        "gf/.git",
        "bare/config",
    ] {
        assert!(env.ws.join(f).symlink_metadata().is_ok(), "{backend}: {f}");
    }
}

/// What a build-and-hide step does: a big ignored tree, a self-ignoring
/// folder holding a secret (made at run time), an ignored file changed, a
/// file `.git/info/exclude` hides, one the global excludes hide, one plain.
const HIDING_STEP: &str = "mkdir -p target/debug hide && i=0 && while [ $i -lt 1100 ]; do i=$((i + 1)); echo $i > target/debug/f$i; done\n\
printf '*\\n' > hide/.gitignore\n\
printf 'aws_access_key_id = AKIA%s\\n' Z7Q4NX2LMRBT5KPW > hide/secret.txt\n\
echo new >> keep.log\n\
echo x > excluded.txt\n\
echo y > global.txt\n\
echo visible > visible.txt\n\
echo changed >> conf/app.txt\n\
printf '*\\n' > conf/.gitignore\n";

pub fn the_diff_summary_lists_what_the_run_hid_from_git() {
    for git_mode in [true, false] {
        let case = if git_mode { "git" } else { "snapshot" };
        let env = Env::new();
        env.write(".gitignore", "target/\n*.log\nplan.yaml\n");
        env.write("keep.log", "old\n");
        env.write("conf/app.txt", "seen before\n");
        let excludes = env.ws.parent().unwrap().join("global-excludes");
        std::fs::write(&excludes, "global.txt\n").unwrap();
        let config = env.ws.parent().unwrap().join("gitconfig");
        std::fs::write(
            &config,
            format!("[core]\n\texcludesFile = {}\n", excludes.display()),
        )
        .unwrap();
        if git_mode {
            git(&env.ws, &["init", "-q"]);
            std::fs::write(env.ws.join(".git/info/exclude"), "excluded.txt\n").unwrap();
            git(&env.ws, &["add", "."]);
            git(&env.ws, &["commit", "-qm", "init"]);
        }
        let plan = env.write(
            "plan.yaml",
            &format!(
                "version: 1\nid: hide\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: w\n    tool: bash\n    parameters: {{command: {}}}\n",
                serde_json::to_string(HIDING_STEP).unwrap()
            ),
        );
        let o = env
            .run_cmd(&plan)
            .args(["--workspace", env.ws.to_str().unwrap(), "--approve", "w"])
            .env("GIT_CONFIG_GLOBAL", &config)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        // The secret is a finding (exit 4), found in the diff summary.
        assert_eq!(code(&o), 4, "{case}: {}", stderr(&o));
        let r = env.report();
        assert_eq!(env.step("w")["status"], "success", "{case}");
        assert_eq!(
            r["diff"]["method"],
            if git_mode { "git" } else { "snapshot" }
        );
        let findings = r["findings"].as_array().unwrap();
        assert!(
            findings.iter().any(|f| f["location"] == "diff-summary.md"
                && f["rule"].as_str().unwrap().contains("aws")),
            "{case}: {findings:?}"
        );
        let files = r["diff"]["files"].as_array().unwrap();
        let row = |p: &str| files.iter().find(|f| f["path"] == p).cloned();
        let mut hidden = vec![
            ("hide/.gitignore", "added"),
            ("hide/secret.txt", "added"),
            ("keep.log", "modified"),
            ("target/debug/f1", "added"),
        ];
        if git_mode {
            hidden.extend([("excluded.txt", "added"), ("global.txt", "added")]);
        }
        for (p, change) in hidden {
            let f = row(p).unwrap_or_else(|| panic!("{case}: no row for {p}: {files:?}"));
            assert_eq!(f["change"], change, "{case}: {f}");
            assert_eq!(f["ignored"], true, "{case}: {f}");
        }
        // A file seen before the run that a step then hid: changed, not
        // deleted (git keeps tracking it; the snapshot now calls it ignored).
        let c = row("conf/app.txt").unwrap_or_else(|| panic!("{case}: no row for conf/app.txt"));
        assert_eq!(c["change"], "modified", "{case}: {c}");
        assert_eq!(c.get("ignored").is_some(), !git_mode, "{case}: {c}");
        let v = row("visible.txt").unwrap();
        assert!(v.get("ignored").is_none(), "{case}: {v}");
        // Bounded: at most 1000 rows of what git leaves out, the rest counted.
        let unseen = files.iter().filter(|f| f["ignored"] == true).count();
        assert_eq!(unseen, 1000, "{case}");
        let notes = r["diff"]["notes"].to_string();
        assert!(
            notes.contains("more changed file(s) that git's ignore rules leave out"),
            "{case}: {notes}"
        );
        let md = std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap();
        assert!(
            md.contains("| `hide/secret.txt` | added (ignored) |"),
            "{case}"
        );
        assert!(md.contains("### `keep.log` (ignored)"), "{case}");
        assert!(md.contains("+new"), "{case}");
        assert!(
            !md.contains("Z7Q4NX2LMRBT5KPW"),
            "{case}: the secret is redacted"
        );
    }
}

pub fn reading_git_commands_in_a_moderate_step_change_nothing_and_pass(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    git(&env.ws, &["init", "-q"]);
    env.write(".gitignore", "plan.yaml\n");
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
    let before = tree_state(&env.ws.join(".git"));
    // The index is stale after `touch`: git would refresh it if it could.
    let yaml = "version: 1\nid: r\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: look, tool: bash, parameters: {command: 'sleep 1; touch a.txt; echo two > b.txt; git status --short; git diff --stat; git log --oneline -1'}}\n";
    let o = run(&env, flag, yaml, &["look"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let s = env.step("look");
    assert_eq!(s["sandbox"]["profile"]["filesystem"], "workspace-write");
    assert_eq!(s["status"], "success", "{backend}: {s}");
    let diff = differences(&before, &tree_state(&env.ws.join(".git")));
    assert!(diff.is_empty(), "{backend}: {diff:#?}");
}

/// The workspace's `.git` is a link to `dotgit/` inside it: the repository's
/// own git directory, guarded through the link. A moderate step that appends
/// a program-running key to `dotgit/config` fails, and the configuration is
/// put back as it was (never deleted as if it were a planted nested one).
pub fn a_linked_git_directory_is_the_workspaces_own_and_is_put_back(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    git(&env.ws, &["init", "-q"]);
    env.write(".gitignore", "plan.yaml\n");
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
    std::fs::rename(env.ws.join(".git"), env.ws.join("dotgit")).unwrap();
    std::os::unix::fs::symlink("dotgit", env.ws.join(".git")).unwrap();
    let config = std::fs::read_to_string(env.ws.join("dotgit/config")).unwrap();
    let yaml = "version: 1\nid: l\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: edit, tool: bash, continue_on_error: true, parameters: {command: 'printf \"[core]\\n\\tfsmonitor = echo X\\n\" >> dotgit/config'}}\n";
    let o = run(&env, flag, yaml, &["edit"]);
    assert!(matches!(code(&o), 0 | 1), "{backend}: {}", stderr(&o));
    let s = env.step("edit");
    assert_eq!(s["sandbox"]["profile"]["filesystem"], "workspace-write");
    assert_eq!(s["status"], "failed", "{backend}: {s}");
    let now = std::fs::read_to_string(env.ws.join("dotgit/config"));
    assert_eq!(now.ok().as_deref(), Some(config.as_str()), "{backend}: {s}");
    assert!(
        env.ws.join(".git").symlink_metadata().unwrap().is_symlink(),
        "{backend}"
    );
    git(&env.ws, &["status", "--short"]);
}
