//! Issue 23, "seal the boundary": the policy caps the plan (a plan from a pull
//! request asks, it never grants itself more); every write path fails closed
//! (a file no sweep can read or rewrite is withheld and fails the run, a
//! crashed sweep is never "no findings", a panic is redacted and still leaves
//! a valid report); no FIFO, socket or device makes plangate hang.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Env, code, read_json, stderr};

/// A plan that asks for everything the built-in policy forbids.
const GREEDY: &str = "version: 1\nid: greedy\npolicy:\n  risk_tolerance: high\n  sandbox: optional\n  allow_unsandboxed: true\n  fail_on_secrets: false\n  env_passthrough: [DEPLOY_SETTING]\nsteps:\n";

/// `validate --format json` of `plan` with `args`, with no policy file unless given.
fn validate(env: &Env, plan: &str, args: &[&str]) -> (i32, Value) {
    let path = env.write("plan.yaml", plan);
    let o = env
        .cmd()
        .env_remove("PLANGATE_POLICY")
        .arg("validate")
        .arg(&path)
        .args(["--format", "json"])
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(&o)));
    (code(&o), v)
}

fn capped(policy: &Value) -> Vec<String> {
    policy["capped"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// With no `--policy` file (the GitHub action's default) the built-in policy
/// caps every key that loosens safety; each lowering names the key and the cap.
#[test]
fn without_a_policy_file_a_plan_cannot_grant_itself_more_than_the_built_in_policy() {
    let env = Env::new();
    let plan = format!(
        "{GREEDY}  - {{id: write, tool: bash, parameters: {{command: 'touch made-by-step'}}}}\n"
    );
    let (exit, v) = validate(&env, &plan, &[]);
    let p = &v["policy"];
    assert_eq!(p["risk_tolerance"], "low", "{p:#}");
    assert_eq!(p["sandbox"], "required");
    assert_eq!(p["allow_unsandboxed"], false);
    assert_eq!(p["fail_on_secrets"], true);
    assert!(
        p.get("env_passthrough")
            .is_none_or(|e| e == &Value::Array(vec![])),
        "{p:#}"
    );
    assert_eq!(p["cap"], "built-in");
    let lines = capped(p);
    for key in [
        "risk_tolerance",
        "sandbox",
        "allow_unsandboxed",
        "fail_on_secrets",
        "env_passthrough",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(key)
                && l.contains("asked by the plan")
                && l.contains("built-in")),
            "{key}: {lines:?}"
        );
    }
    // The moderate step is denied under the capped tolerance.
    assert_eq!(exit, 3, "{v:#}");
    // And the run does what validate said: nothing ran.
    let o = env.run_without_policy(&plan, &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(!env.ws.join("made-by-step").exists());
    let r = env.report();
    assert_eq!(r["policy"]["cap"], "built-in");
    assert_eq!(r["policy"]["risk_tolerance"], "low");
    assert!(
        stderr(&o).contains("risk_tolerance high asked by the plan lowered to low"),
        "{}",
        stderr(&o)
    );
}

/// `--risk-tolerance` is the operator's: it beats the plan's ask (as every
/// flag beats the plan) within the policy file's `risk_tolerance`; without
/// the flag the plan's ask holds only within the file's value, else low.
#[test]
fn the_operators_flag_decides_within_the_policy_file_the_plan_only_asks() {
    let env = Env::new();
    let body = "steps:\n  - {id: s, tool: bash, parameters: {command: 'true'}}\n";
    let plan = |t: &str| format!("version: 1\nid: t\npolicy: {{risk_tolerance: {t}}}\n{body}");
    let file = env.write("caps/medium.yaml", "risk_tolerance: medium\n");
    let file = file.to_str().unwrap();
    for (asked, args, want, plan_lowered, flag_lowered) in [
        ("high", vec![], "low", true, false),
        (
            "high",
            vec!["--risk-tolerance", "medium"],
            "medium",
            false,
            false,
        ),
        (
            "low",
            vec!["--risk-tolerance", "high"],
            "high",
            false,
            false,
        ),
        ("high", vec!["--policy", file], "medium", true, false),
        ("medium", vec!["--policy", file], "medium", false, false),
        ("low", vec!["--policy", file], "low", false, false),
        (
            "low",
            vec!["--policy", file, "--risk-tolerance", "high"],
            "medium",
            false,
            true,
        ),
        (
            "high",
            vec!["--policy", file, "--risk-tolerance", "low"],
            "low",
            false,
            false,
        ),
    ] {
        let (_, v) = validate(&env, &plan(asked), &args);
        let p = &v["policy"];
        assert_eq!(p["risk_tolerance"], want, "{asked} {args:?}: {p:#}");
        let lines = capped(p);
        assert_eq!(
            lines
                .iter()
                .any(|l| l.starts_with("risk_tolerance") && l.contains("asked by the plan")),
            plan_lowered,
            "{asked} {args:?}: {p:#}"
        );
        assert_eq!(
            lines
                .iter()
                .any(|l| l.starts_with("--risk-tolerance")
                    && l.contains("the cap of the policy file")),
            flag_lowered,
            "{asked} {args:?}: {p:#}"
        );
        let cap = if args.contains(&"--policy") {
            "policy file"
        } else {
            "built-in"
        };
        assert_eq!(p["cap"], cap);
    }
    let none = format!("version: 1\nid: t\n{body}");
    let (_, v) = validate(&env, &none, &["--risk-tolerance", "high", "--policy", file]);
    assert_eq!(v["policy"]["risk_tolerance"], "medium");
    assert_eq!(v["policy"]["cap_file"], file);
}

/// A policy file that allows what the plan asks gives it; one that is silent
/// on a key leaves the built-in cap for it.
#[test]
fn a_policy_file_allows_what_it_sets_and_caps_the_rest_like_the_built_in_policy() {
    let env = Env::new();
    let plan = format!("{GREEDY}  - {{id: s, tool: bash, parameters: {{command: 'true'}}}}\n");
    let open = env.write(
        "caps/open.yaml",
        "risk_tolerance: high\nsandbox: optional\nallow_unsandboxed: true\nfail_on_secrets: false\nenv_passthrough: [DEPLOY_SETTING]\n",
    );
    let (_, v) = validate(&env, &plan, &["--policy", open.to_str().unwrap()]);
    let p = &v["policy"];
    assert_eq!(p["risk_tolerance"], "high");
    assert_eq!(p["sandbox"], "optional");
    assert_eq!(p["allow_unsandboxed"], true);
    assert_eq!(p["fail_on_secrets"], false);
    assert_eq!(p["env_passthrough"][0], "DEPLOY_SETTING");
    assert!(capped(p).is_empty(), "{p:#}");
    assert_eq!(p["cap"], "policy file");
    let silent = env.write("caps/silent.yaml", "max_parallel: 2\n");
    let (_, v) = validate(&env, &plan, &["--policy", silent.to_str().unwrap()]);
    let p = &v["policy"];
    assert_eq!(p["risk_tolerance"], "low");
    assert_eq!(p["sandbox"], "required");
    assert_eq!(p["allow_unsandboxed"], false);
    assert_eq!(p["fail_on_secrets"], true);
    assert!(
        capped(p)
            .iter()
            .all(|l| l.contains("the policy file does not set")),
        "{p:#}"
    );
    assert_eq!(capped(p).len(), 5, "{p:#}");
}

/// `--sandbox-backend none` refuses every step that asks for a sandbox,
/// whatever `sandbox:` the plan or the policy file says; a plan's
/// `sandbox: false` step is refused without a policy file that allows it.
#[test]
fn sandbox_backend_none_refuses_sandboxed_steps_and_the_plan_cannot_opt_out() {
    let env = Env::new();
    let step = "  - {id: s, tool: bash, parameters: {command: 'touch ran-bare'}}\n";
    let optional = format!(
        "version: 1\nid: t\npolicy: {{risk_tolerance: high, sandbox: optional}}\nsteps:\n{step}"
    );
    let required = format!("version: 1\nid: t\npolicy: {{risk_tolerance: high}}\nsteps:\n{step}");
    let file = env.write(
        "caps/optional.yaml",
        "risk_tolerance: high\nsandbox: optional\n",
    );
    let file = file.to_str().unwrap();
    for (plan, args) in [
        (
            &optional,
            vec!["--sandbox-backend", "none", "--risk-tolerance", "high"],
        ),
        (
            &required,
            vec!["--sandbox-backend", "none", "--risk-tolerance", "high"],
        ),
        (
            &optional,
            vec!["--sandbox-backend", "none", "--policy", file],
        ),
        (
            &required,
            vec!["--sandbox-backend", "none", "--policy", file],
        ),
    ] {
        let o = env.run_without_policy(plan, &args);
        assert_eq!(code(&o), 3, "{args:?}: {}", stderr(&o));
        assert!(!env.ws.join("ran-bare").exists(), "{args:?}");
        let s = &env.report()["steps"][0];
        assert_eq!(s["approval"]["decision"], "blocked", "{s:#}");
        assert!(
            s["approval"]["reason"]
                .as_str()
                .unwrap()
                .contains("--sandbox-backend none"),
            "{s:#}"
        );
    }
    // `sandbox: false` in the plan: dangerous, approved, and still refused by the built-in cap.
    let bare = "version: 1\nid: t\npolicy: {risk_tolerance: high, allow_unsandboxed: true}\nsteps:\n  - {id: s, tool: bash, parameters: {sandbox: false, command: 'touch ran-bare'}}\n";
    let o = env.run_without_policy(bare, &["--approve", "s", "--risk-tolerance", "high"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(!env.ws.join("ran-bare").exists());
    assert!(
        env.report()["steps"][0]["approval"]["reason"]
            .as_str()
            .unwrap()
            .contains("allow_unsandboxed: false"),
        "{:#}",
        env.report()["steps"][0]
    );
}

/// The plan's `fail_on_secrets: false` does not hold without a policy file
/// that allows it: a secret found fails the run.
#[test]
fn a_plan_cannot_switch_off_failing_on_secrets() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {fail_on_secrets: false}\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'echo AKIAQ5TX7MZP3LWN2RKD'}}\n";
    let o = env.run_without_policy(plan, &[]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    // The operator's flag still may.
    let o = env.run_without_policy(plan, &["--fail-on-secrets", "false"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// Whether `dir` holds `needle` anywhere (files only).
fn holds(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for e in walk(dir) {
        if let Ok(b) = std::fs::read(&e)
            && String::from_utf8_lossy(&b).contains(needle)
        {
            hits.push(e.display().to_string());
        }
    }
    hits
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(walk(&p)),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
    out
}

fn special_files(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::FileTypeExt;
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(special_files(&p)),
            Ok(t) if t.is_fifo() || t.is_socket() => out.push(p.display().to_string()),
            _ => {}
        }
    }
    out
}

/// A file the sweep cannot read where plangate expects one (the step's
/// `stdout.txt` swapped for a FIFO or a directory): withheld, and the run
/// fails with exit 4 even under `fail_on_secrets: false`; never a hang.
/// In a resident bwrap sandbox the step's folder is the lane's own: plangate's
/// capture is not there to swap, and the step that makes its name fails.
#[test]
fn a_stream_the_sweep_cannot_read_is_withheld_and_fails_the_run() {
    for (swap, lanes) in [
        ("mkfifo", false),
        ("mkdir", false),
        ("mkfifo", true),
        ("mkdir", true),
    ] {
        let env = Env::new();
        let plan = format!(
            "version: 1\nid: t\npolicy: {{risk_tolerance: high, fail_on_secrets: false}}\nsteps:\n  - {{id: s, tool: bash, parameters: {{command: 'echo hello; rm -f \"$PLANGATE_STEP_ARTIFACTS/stdout.txt\"; {swap} \"$PLANGATE_STEP_ARTIFACTS/stdout.txt\"'}}}}\n"
        );
        let t = Instant::now();
        let plan_file = env.write("plan.yaml", &plan);
        let mut c = env.cmd();
        c.arg("run").arg(&plan_file).arg("--out").arg(&env.out);
        if !lanes {
            c.env("PLANGATE_BWRAP_LANES", "0");
        }
        let o = c.timeout(Duration::from_secs(120)).output().expect("run");
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{swap}: {:?}",
            t.elapsed()
        );
        let err = stderr(&o);
        if lanes && env.report()["sandbox"]["available"] == "bwrap" {
            assert_eq!(code(&o), 1, "{swap}: {err}");
            let s = env.step("s");
            assert_eq!(s["status"], "failed", "{swap}: {s}");
            assert!(
                s["error"].as_str().unwrap_or("").contains("stdout.txt"),
                "{swap}: {s}"
            );
            let out = std::fs::read_to_string(env.out.join("artifacts/s/stdout.txt"));
            assert_eq!(out.unwrap_or_default(), "hello\n", "{swap}");
            assert!(special_files(&env.out).is_empty(), "{swap}");
            continue;
        }
        assert_eq!(code(&o), 4, "{swap}: {err}");
        let r = env.report();
        assert_eq!(r["status"], "secrets_found");
        let f = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == "unscannable")
            .unwrap_or_else(|| panic!("{swap}: {r:#}"));
        assert!(
            f["location"].as_str().unwrap().ends_with("s/stdout.txt"),
            "{f:#}"
        );
        assert!(err.contains("could not be scanned"), "{err}");
        assert!(
            special_files(&env.out).is_empty(),
            "{:?}",
            special_files(&env.out)
        );
    }
}

/// FIFOs and sockets a step leaves in its artifact folder are removed with
/// a warning (they hold no bytes); the run is not held up.
#[test]
fn special_files_left_in_the_artifact_folder_are_removed_with_a_warning() {
    let env = Env::new();
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'mkfifo \"$PLANGATE_STEP_ARTIFACTS/pipe\"; mkdir -p \"$PLANGATE_STEP_ARTIFACTS/sub\"; mkfifo \"$PLANGATE_STEP_ARTIFACTS/sub/pipe2\"; echo done'}}\n";
    let t = Instant::now();
    let o = env.run(plan, &[]);
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    assert!(err.contains("pipe") && err.contains("removed"), "{err}");
    assert!(
        special_files(&env.out).is_empty(),
        "{:?}",
        special_files(&env.out)
    );
}

/// A FIFO planted in `.git/hooks` (the git guard reads hooks before and after
/// each step), a FIFO in the workspace (the diff reads changed files) and a
/// FIFO as a step's `$PLANGATE_OUTPUT`: the run ends within seconds.
#[test]
fn fifos_in_git_hooks_the_workspace_and_the_outputs_file_never_hang_a_run() {
    let env = Env::new();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&env.ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
    };
    git(&["init", "-q"]);
    env.write("README.md", "hello\n");
    git(&["add", "README.md"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-qm",
        "init",
    ]);
    let fifo = |p: &std::path::Path| {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o755),
            0,
        )
        .unwrap();
    };
    fifo(&env.ws.join(".git/hooks/pre-commit"));
    fifo(&env.ws.join("planted.fifo"));
    let plan = "version: 1\nid: t\npolicy: {risk_tolerance: medium}\nsteps:\n  - {id: edit, tool: bash, parameters: {command: 'echo more >> README.md; mkfifo new.fifo; rm -f \"$PLANGATE_OUTPUT\"; mkfifo \"$PLANGATE_OUTPUT\"'}}\n  - {id: look, tool: find_in_files, dependencies: [edit], parameters: {query: more, path: .}}\n";
    let t = Instant::now();
    let o = env.run(plan, &[]);
    let err = stderr(&o);
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "{:?}: {err}",
        t.elapsed()
    );
    // The outputs file is not a regular file: the step fails, clearly.
    assert_eq!(code(&o), 1, "{err}");
    let edit = env.step("edit");
    assert!(
        env.step_error("edit").contains("not a regular file"),
        "{edit:#}"
    );
    // Without the outputs FIFO, the same run succeeds and its diff sees the README.
    let env2 = Env::new();
    std::fs::create_dir_all(env2.ws.join(".git/hooks")).unwrap();
    fifo(&env2.ws.join(".git/hooks/pre-commit"));
    fifo(&env2.ws.join("planted.fifo"));
    let plan2 = "version: 1\nid: t\npolicy: {risk_tolerance: medium}\nsteps:\n  - {id: edit, tool: bash, parameters: {command: 'echo more >> notes.txt; mkfifo new.fifo'}}\n  - {id: look, tool: find_in_files, dependencies: [edit], parameters: {query: more, path: .}}\n";
    let t = Instant::now();
    let o = env2.run(plan2, &[]);
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = env2.report();
    let files: Vec<&str> = r["diff"]["files"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f["path"].as_str()).collect())
        .unwrap_or_default();
    assert!(files.contains(&"notes.txt"), "{:#}", r["diff"]);
}

/// A panic anywhere: Rust's raw message never reaches stderr (the hook
/// prints it redacted), the run's exit code is SPEC's for an internal error
/// (1, `failed`) and the report is valid and finished. Debug builds only:
/// `PLANGATE_DEBUG_PANIC` does not exist in release builds.
#[test]
fn a_panic_is_redacted_caught_and_still_leaves_a_valid_report() {
    let secret = "AKIAR2KV9DMW5XQT3HNB";
    for at in ["engine", "step"] {
        let env = Env::new();
        let plan = "version: 1\nid: t\nsteps:\n  - {id: s, tool: bash, parameters: {command: 'echo hi'}}\n";
        let path = env.write("plan.yaml", plan);
        let o = env
            .run_cmd(&path)
            .env("PLANGATE_DEBUG_PANIC", format!("{at}:boom {secret}"))
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{at}: {err}");
        assert!(!err.contains(secret), "{at}: {err}");
        assert!(
            err.contains("internal error") && err.contains("boom"),
            "{at}: {err}"
        );
        assert!(
            !err.contains("panicked at"),
            "{at}: the default hook ran: {err}"
        );
        let r = read_json(&env.out.join("report.json"));
        assert_eq!(r["status"], "failed", "{at}: {r:#}");
        assert_eq!(r["in_progress"], false, "{at}");
        assert!(!r.to_string().contains(secret), "{at}");
        assert!(
            holds(&env.out, secret).is_empty(),
            "{at}: {:?}",
            holds(&env.out, secret)
        );
    }
}

/// A panic while the redaction layer's lock is held (remembering a value
/// found in a step's output): the hook does not deadlock, the crashed sweep
/// fails the run (exit 4) and the value is still masked everywhere after.
#[test]
fn a_panic_inside_the_redaction_layer_never_leaves_a_value_unmasked() {
    let secret = "AKIAT8JC3PLQ6WZN4RVD";
    let env = Env::new();
    let plan = format!(
        "version: 1\nid: t\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: leak, tool: bash, parameters: {{command: 'echo {secret}; echo {secret} > \"$PLANGATE_STEP_ARTIFACTS/copy.txt\"'}}}}\n  - {{id: again, tool: bash, parameters: {{command: 'echo {secret}'}}}}\n"
    );
    let path = env.write("plan.yaml", &plan);
    let t = Instant::now();
    let o = env
        .run_cmd(&path)
        .env("PLANGATE_DEBUG_PANIC", "redact:boom")
        .args(["--no-fail-fast"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(60));
    let err = stderr(&o);
    // The panic fails the step it hit (1) or its sweep (4): never a success.
    assert!(matches!(code(&o), 1 | 4), "{err}");
    assert!(err.contains("internal error"), "{err}");
    assert!(!err.contains(secret), "{err}");
    assert!(
        holds(&env.out, secret).is_empty(),
        "{:?}",
        holds(&env.out, secret)
    );
    let r = env.report();
    assert_eq!(r["in_progress"], false, "{r:#}");
    assert_ne!(r["status"], "success");
}

/// A link at `$PLANGATE_OUTPUT` (to a file outside the step's sandbox, or
/// another process's environment) is not followed: plangate would read,
/// with its own rights, what the step cannot. The step fails; nothing of
/// the target reaches the report.
#[test]
fn a_link_at_the_outputs_file_is_not_followed() {
    let env = Env::new();
    let outside = env.out.with_extension("outside-kv");
    std::fs::write(&outside, "k=OUTSIDE-KV-MARKER\n").unwrap();
    let plan = format!(
        "version: 1\nid: t\nsteps:\n  - {{id: l1, tool: bash, parameters: {{command: 'ln -sf {} \"$PLANGATE_OUTPUT\"'}}}}\n",
        outside.display()
    );
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        env.step_error("l1").contains("symbolic link"),
        "{:#}",
        env.step("l1")
    );
    let report = std::fs::read_to_string(env.out.join("report.json")).unwrap();
    assert!(!report.contains("OUTSIDE-KV-MARKER"), "{report}");
}

/// A step's `env:` reaches every process it starts: it is judged as the
/// same assignments in its command would be. `BASH_ENV` runs a workspace
/// script before the command (moderate), `LD_PRELOAD` loads code, a `PATH`
/// from outside the workspace is dangerous, `LESSOPEN` runs a program;
/// a plain variable changes nothing.
#[test]
fn a_steps_env_is_judged_like_assignments_in_its_command() {
    let env = Env::new();
    let plan = "version: 1\nid: e\nsteps:\n\
                \x20 - {id: bashenv, tool: bash, env: {BASH_ENV: tools/x.sh}, parameters: {command: 'true'}}\n\
                \x20 - {id: preload, tool: bash, env: {LD_PRELOAD: ./x.so}, parameters: {command: 'true'}}\n\
                \x20 - {id: path, tool: bash, env: {PATH: '/tmp/evil:/usr/bin:/bin'}, parameters: {command: 'true'}}\n\
                \x20 - {id: lessopen, tool: bash, env: {LESSOPEN: '|tools/x %s'}, parameters: {command: 'less README.md'}}\n\
                \x20 - {id: quoted, tool: bash, env: {X: \"it's\"}, parameters: {command: 'true'}}\n";
    let (_, v) = validate(&env, plan, &[]);
    let risk = |id: &str| {
        let s = v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {v:#}"));
        s["risk"]["classified"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(risk("bashenv"), "moderate", "{v:#}");
    assert_eq!(risk("preload"), "moderate", "{v:#}");
    assert_eq!(risk("path"), "dangerous", "{v:#}");
    assert_ne!(risk("lessopen"), "safe", "{v:#}");
    assert_eq!(risk("quoted"), "safe", "{v:#}");
}

/// What no approval gives is blocked before any approval is looked at:
/// `validate` says `blocked` for a `sandbox: false` step the policy forbids,
/// as `run` does, with or without `--approve`.
#[test]
fn validate_and_run_agree_that_a_forbidden_unsandboxed_step_is_blocked() {
    let env = Env::new();
    let plan = "version: 1\nid: u\nsteps:\n  - {id: a, tool: bash, parameters: {sandbox: false, command: 'true'}}\n";
    for args in [&[][..], &["--approve", "a"][..]] {
        let (_, v) = validate(&env, plan, args);
        let a = &v["steps"][0];
        assert_eq!(a["approval"]["decision"], "blocked", "{args:?}: {a:#}");
    }
    let o = env.run_without_policy(plan, &["--approve", "a"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("a")["status"], "blocked");
}
