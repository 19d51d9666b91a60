//! Issue 23, item 4: no FIFO, socket or device planted where git or
//! plangate opens a file by name (`.gitignore`, `.ignore`, `.gitattributes`,
//! `.mailmap`, `.gitmodules`, a `.git`, anything in a git directory, in any
//! folder) makes plangate hang; every git command the diff runs ends when
//! plangate is stopped; and the diff summary lists what git cannot add.
//! Payloads only make special files and marker files in the test's folders.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Env, alive, code, git, outside_only, spawn, stage_kind, stderr, wait_until};

fn repo(env: &Env) {
    git(&env.ws, &["init", "-q"]);
    env.write(".gitignore", "plan.yaml\n");
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
}

fn run_timed(env: &Env, plan: &str, args: &[&str]) -> (std::process::Output, Duration) {
    let path = env.write("plan.yaml", plan);
    let t = Instant::now();
    let o = env
        .run_cmd(&path)
        .args(["--workspace", env.ws.to_str().unwrap()])
        .args(args)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    (o, t.elapsed())
}

fn paths(r: &Value) -> Vec<String> {
    r["diff"]["files"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["path"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Each place a FIFO would block git or the diff's walker, made by a
/// moderate step in a git workspace: the run ends within seconds, the step
/// fails naming the file, the file is gone, and the user's git works.
#[test]
fn a_special_file_where_git_opens_one_by_name_never_hangs_a_run() {
    for (prep, target) in [
        ("mkdir -p b", "b/.gitignore"),
        (":", ".ignore"),
        ("mkdir -p c/d", "c/d/.gitattributes"),
        ("mkdir -p nest/.git", "nest/.git/HEAD"),
        ("mkdir -p x/.GIT/info", "x/.GIT/info/exclude"),
        ("mkdir -p m", "m/.mailmap"),
        ("mkdir -p g", "g/.git"),
    ] {
        let env = Env::new();
        repo(&env);
        let plan = format!(
            "version: 1\nid: t\npolicy: {{risk_tolerance: medium}}\nsteps:\n  - {{id: s, tool: bash, continue_on_error: true, parameters: {{command: '{prep} && mkfifo {target} && echo x > new.txt'}}}}\n"
        );
        let (o, took) = run_timed(&env, &plan, &[]);
        let err = stderr(&o);
        assert!(took < Duration::from_secs(60), "{target}: {took:?}: {err}");
        assert!(matches!(code(&o), 0 | 1), "{target}: {err}");
        let s = env.step("s");
        assert_eq!(s["status"], "failed", "{target}: {s}");
        let e = s["error"].as_str().unwrap_or_default();
        assert!(e.contains(target) && e.contains("FIFO"), "{target}: {e}");
        assert!(
            env.ws.join(target).symlink_metadata().is_err(),
            "{target}: still there"
        );
        assert!(
            paths(&env.report()).contains(&"new.txt".to_owned()),
            "{target}"
        );
        let st = std::process::Command::new("timeout")
            .args(["20", "git", "status", "--short"])
            .current_dir(&env.ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(st.status.success(), "{target}: the user's git");
    }
}

/// A step approved as dangerous (nothing is swept after it) plants them
/// all: the diff removes each before git or its walker opens it, says so,
/// and the run fails (the diff is not whole); it ends within seconds. The
/// same holds outside a git repository (the snapshot method).
#[test]
fn the_diff_removes_special_files_a_dangerous_step_planted_and_fails_the_run() {
    for git_mode in [true, false] {
        let env = Env::new();
        if git_mode {
            repo(&env);
        }
        let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: s, tool: bash, risk_level: dangerous, parameters: {command: 'mkdir -p b nest/.git && mkfifo b/.gitignore .ignore .gitattributes nest/.git/HEAD && echo x > new.txt'}}\n";
        let (o, took) = run_timed(&env, plan, &["--approve", "s"]);
        let err = stderr(&o);
        assert!(
            took < Duration::from_secs(60),
            "{git_mode}: {took:?}: {err}"
        );
        assert_eq!(code(&o), 4, "{git_mode}: {err}");
        assert_eq!(env.step("s")["status"], "success", "{git_mode}");
        for f in [
            "b/.gitignore",
            ".ignore",
            ".gitattributes",
            "nest/.git/HEAD",
        ] {
            assert!(err.contains(&format!("`{f}`")), "{git_mode}: {f}: {err}");
            assert!(env.ws.join(f).symlink_metadata().is_err(), "{f}");
        }
        let r = env.report();
        assert!(paths(&r).contains(&"new.txt".to_owned()), "{git_mode}: {r}");
        let findings = r["findings"].to_string();
        assert!(
            findings.contains("diff-summary.md"),
            "{git_mode}: {findings}"
        );
    }
}

/// The diff's git hangs (a `git` on plangate's `PATH` that sleeps on `add`
/// once the step has run): SIGTERM ends plangate within seconds, the git
/// process group is gone, and the report says the diff is not complete.
#[test]
fn sigterm_ends_the_diffs_git_and_the_run() {
    let env = Env::new();
    repo(&env);
    let bin = env.tmp().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let pidfile = env.tmp().join("git-add.pid");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do if [ \"$a\" = add ] && [ -e {ws}/hang-now ]; then echo $$ > {pid}; exec sleep 300; fi; done\nexec {real} \"$@\"\n",
        ws = env.ws.display(),
        pid = pidfile.display(),
        real = real.trim()
    );
    let fake = bin.join("git");
    std::fs::write(&fake, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: medium}\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'echo x > hang-now'}}\n";
    let plan_path = env.write("plan.yaml", plan);
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("plangate"));
    for (k, _) in std::env::vars() {
        if outside_only(&k) {
            c.env_remove(k);
        }
    }
    stage_kind(&mut c);
    c.env("TMPDIR", env.tmp())
        .env("PLANGATE_POLICY", env.operator_policy())
        .env("PATH", &path)
        .arg("run")
        .arg(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .current_dir(&env.ws)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    assert!(
        wait_until(60, || pidfile.exists()),
        "the diff's `git add` never started"
    );
    let git_pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let t = Instant::now();
    let pid = |n: u32| rustix::process::Pid::from_raw(i32::try_from(n).unwrap()).unwrap();
    rustix::process::kill_process(pid(child.id()), rustix::process::Signal::TERM).unwrap();
    let ended = wait_until(30, || child.try_wait().unwrap().is_some());
    if !ended {
        let _ = child.kill();
        let _ = rustix::process::kill_process(pid(git_pid), rustix::process::Signal::KILL);
    }
    assert!(ended, "plangate did not end after SIGTERM");
    assert!(t.elapsed() < Duration::from_secs(30));
    assert!(
        wait_until(5, || !alive(git_pid)),
        "the diff's git still runs"
    );
    let r = env.report();
    let notes = r["diff"]["notes"].to_string();
    assert!(notes.contains("git could not compare"), "{notes}");
    assert!(paths(&r).contains(&"hang-now".to_owned()), "{r}");
}

/// What git cannot add (a `.git` in another case, files inside a folder
/// named `.git`, a nested repository without a commit) no longer throws
/// the git diff away: every file the run added or changed is listed, a
/// mode change and links (in ignored folders too, never followed) and a
/// FIFO included.
#[test]
fn the_diff_lists_what_git_cannot_add_and_keeps_the_rest() {
    let env = Env::new();
    git(&env.ws, &["init", "-q"]);
    env.write(".gitignore", "plan.yaml\nd/\n");
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: medium}\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'chmod +x a.txt && mkdir -p .Git y/.GIT x/.git d && echo 1 > .Git/f && echo 2 > y/.GIT/f && echo 3 > x/.git/hidden.sh && ln -s /etc/hostname d/link && ln -s a.txt plainlink && mkfifo p.fifo && git init -q sub && echo z > sub/z.txt'}}\n";
    let (o, took) = run_timed(&env, plan, &[]);
    let err = stderr(&o);
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert_eq!(code(&o), 0, "{err}");
    let r = env.report();
    assert_eq!(r["diff"]["method"], "git", "{}", r["diff"]);
    let listed = paths(&r);
    for p in [
        "a.txt",
        ".Git/f",
        "y/.GIT/f",
        "x/.git/hidden.sh",
        "d/link",
        "plainlink",
        "p.fifo",
        "sub/z.txt",
    ] {
        assert!(listed.contains(&p.to_owned()), "{p}: {listed:?}");
    }
    let notes = r["diff"]["notes"].to_string();
    assert!(!notes.contains("no diff"), "{notes}");
    let md = std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap();
    assert!(
        md.contains("+/etc/hostname"),
        "the link's target, not its content"
    );
}

/// SIGTERM while a step runs: the step is stopped, and the diff's git,
/// started after the signal, still compares the workspace (it is given
/// a short time, not ended at once).
#[test]
fn after_sigterm_the_diffs_git_still_compares_the_workspace() {
    let env = Env::new();
    repo(&env);
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: medium}\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'echo x > new.txt; sleep 30'}}\n";
    let mut child = spawn(&env, plan, &["--kill-grace", "1"]);
    assert!(wait_until(60, || env.ws.join("new.txt").exists()));
    std::thread::sleep(Duration::from_millis(300));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let ended = wait_until(40, || child.try_wait().unwrap().is_some());
    if !ended {
        let _ = child.kill();
    }
    assert!(ended, "plangate did not end after SIGTERM");
    let r = env.report();
    assert_eq!(r["diff"]["method"], "git", "{}", r["diff"]);
    let notes = r["diff"]["notes"].to_string();
    assert!(!notes.contains("git could not"), "{notes}");
    assert!(paths(&r).contains(&"new.txt".to_owned()), "{}", r["diff"]);
}

/// A step that makes huge files without writing them (`truncate -s 64G`, a
/// sparse file) makes the diff read nothing of them: git records a
/// stand-in line, the snapshot method their size and times. Before, git
/// read every byte (about 8 s per GiB) and the snapshot method read the
/// file into memory whole. A file that grows huge is modified, one that
/// was huge and changes is modified, both in and outside a repository.
#[test]
fn a_huge_sparse_file_is_compared_by_its_size_and_times_not_read() {
    for in_git in [true, false] {
        let env = Env::new();
        if in_git {
            repo(&env);
        } else {
            env.write("a.txt", "one\n");
        }
        env.write("old.bin", "small\n");
        if in_git {
            git(&env.ws, &["add", "old.bin"]);
            git(&env.ws, &["commit", "-qm", "old"]);
        }
        let plan = "version: 1\nid: t\npolicy: {risk_tolerance: medium}\nsteps:\n  - {id: make, tool: bash, parameters: {command: 'truncate -s 64G big.bin && truncate -s 32G old.bin'}}\n  - {id: grow, tool: bash, dependencies: [make], parameters: {command: 'truncate -s 65G big.bin'}}\n";
        let (o, took) = run_timed(&env, plan, &[]);
        let err = stderr(&o);
        assert_eq!(code(&o), 0, "git {in_git}: {err}");
        assert!(took < Duration::from_secs(60), "git {in_git}: {took:?}");
        let r = env.report();
        let files = r["diff"]["files"].as_array().unwrap();
        let change = |p: &str| {
            files
                .iter()
                .find(|f| f["path"] == p)
                .map(|f| f["change"].as_str().unwrap_or_default().to_owned())
        };
        assert_eq!(
            change("big.bin").as_deref(),
            Some("added"),
            "git {in_git}: {files:?}"
        );
        assert_eq!(
            change("old.bin").as_deref(),
            Some("modified"),
            "git {in_git}: {files:?}"
        );
        assert_eq!(
            env.step("grow")["changed_files"],
            serde_json::json!(["big.bin"]),
            "git {in_git}"
        );
    }
}

/// A step that puts a FIFO, socket, symbolic link (to a file, to a device)
/// or folder where `$PLANGATE_REQUESTS` or `$PLANGATE_OUTPUT` was fails,
/// naming the file and what it found there (never a silent "nothing
/// asked"), and plangate never blocks on the FIFO. Payloads only make
/// special files in the step's own artifact folder.
#[test]
fn a_requests_or_output_file_replaced_by_something_else_fails_its_step() {
    let sock =
        "python3 -c 'import os,socket; socket.socket(socket.AF_UNIX).bind(os.environ[\"V\"])'";
    let cases = [
        ("fifo", "mkfifo \"$V\"", "a FIFO", false),
        ("link", "ln -s MARKER \"$V\"", "a symbolic link", false),
        ("dev", "ln -s /dev/zero \"$V\"", "a symbolic link", false),
        ("dir", "mkdir \"$V\"", "a directory", false),
        ("sock", sock, "a socket", true),
    ];
    for (var, file) in [
        ("PLANGATE_REQUESTS", "requests.jsonl"),
        ("PLANGATE_OUTPUT", "outputs.txt"),
    ] {
        let env = Env::new();
        let marker = env.ws.parent().unwrap().join("marker.txt");
        std::fs::write(&marker, "{\"type\":\"comment\",\"body\":\"hi\"}\n").unwrap();
        let mut plan = String::from(
            "version: 1\nid: t\npolicy: {risk_tolerance: high}\npublish: {comment: {max: 5}}\nsteps:\n",
        );
        for (id, make, _, bare) in cases {
            let cmd = format!("export V=\"${var}\"; rm -f \"$V\"; {make}")
                .replace("MARKER", marker.to_str().unwrap());
            // A unix socket is made outside the sandbox (its seccomp filter refuses them).
            plan.push_str(&format!(
                "  - id: {id}\n    tool: bash\n    continue_on_error: true\n    parameters: {{sandbox: {}, command: {}}}\n",
                !bare,
                serde_json::to_string(&cmd).unwrap()
            ));
        }
        let (o, took) = run_timed(&env, &plan, &["--approve", "sock"]);
        assert!(took < Duration::from_secs(60), "{var}: took {took:?}");
        assert!(matches!(code(&o), 0 | 1), "{var}: {}", stderr(&o));
        for (id, _, what, _) in cases {
            let step = env.step(id);
            assert_eq!(step["status"], "failed", "{var} {id}: {step:#}");
            let err = step["error"].as_str().unwrap_or_default();
            let want = format!("${var} (`artifacts/{id}/{file}`) was replaced by {what}");
            assert!(err.contains(&want), "{var} {id}: {err}");
        }
        let r = env.report();
        assert!(
            r["publish"]["requests"]
                .as_array()
                .is_none_or(|a| a.is_empty()),
            "{var}: nothing was asked: {:#}",
            r["publish"]
        );
    }
}

/// An agent step's CLI that replaces its `$PLANGATE_REQUESTS` by a FIFO
/// fails the same way (its answer is accepted, its requests are not).
#[test]
fn an_agent_cli_that_replaces_its_requests_file_is_rejected() {
    let env = Env::new();
    let cli = "rm -f \"$PLANGATE_REQUESTS\"; mkfifo \"$PLANGATE_REQUESTS\"; cat >/dev/null; echo '{\"count\": 3}'";
    let plan = format!(
        "version: 1\nid: a\npolicy: {{risk_tolerance: medium}}\nagents:\n  coder:\n    command: [bash, -c, {}]\n    timeout: 30\nsteps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: coder\n      prompt: p\n      output: json\n      schema: {{type: object}}\n      max_attempts: 1\n",
        serde_json::to_string(cli).unwrap()
    );
    let (o, took) = run_timed(&env, &plan, &[]);
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    let err = env.step_error("fix");
    assert!(
        err.contains("$PLANGATE_REQUESTS (`artifacts/fix/requests.jsonl`) was replaced by a FIFO"),
        "{err}"
    );
}
