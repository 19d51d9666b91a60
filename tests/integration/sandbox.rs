//! The approved risk level is the sandbox profile: every bash step, rollback
//! and agent CLI runs in the boundary its approval grants (safe: read-only
//! but its artifacts and TMPDIR; moderate: also the workspace, not git's
//! hooks and configuration; dangerous: what it declares), the network only
//! with `network: true`, nothing outlives the step, and a step whose sandbox
//! cannot be had is refused before anything runs (`policy.sandbox:
//! required`) or marked "not enforced" (`optional`).
//!
//! Every behaviour is checked under each backend this machine supports
//! (`--sandbox-backend`). A backend that cannot run here (bubblewrap not
//! installed, Landlock off in the kernel) is skipped with the reason on
//! stderr, so the suite passes on a machine with only Rust; under `CI=true`
//! every backend must work (`.ci/run` installs bubblewrap), so CI proves both.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::harness::{Env, code, stderr};

/// Backends to test (`--sandbox-backend` value, report name).
const BACKENDS: &[(&str, &str)] = &[("bwrap", "bwrap"), ("landlock", "landlock+seccomp")];

/// Whether `CI=true`: there a backend that does not work fails the tests.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Why `flag` cannot run here, or `None` when it can: plangate's own
/// pre-flight on a one-step sandboxed plan, as the report records it.
fn unavailable(flag: &str, backend: &str) -> Option<String> {
    let env = Env::new();
    let o = run(&env, flag, &plan(&[("probe", "true", "")]));
    let r = env.report();
    if code(&o) == 0 && r["sandbox"]["available"] == backend {
        return None;
    }
    Some(match r["sandbox"]["reason"].as_str() {
        Some(reason) => reason.to_owned(),
        None => format!("exit {}: {}", code(&o), stderr(&o)),
    })
}

/// The backends that work on this machine (probed once). Each one that does
/// not is reported on stderr as skipped; under `CI=true` it is a failure.
pub fn backends() -> &'static [(&'static str, &'static str)] {
    static USABLE: OnceLock<Vec<(&str, &str)>> = OnceLock::new();
    USABLE.get_or_init(|| {
        let mut usable = Vec::new();
        for &(flag, backend) in BACKENDS {
            match unavailable(flag, backend) {
                None => usable.push((flag, backend)),
                Some(why) if in_ci() => panic!(
                    "CI=true and the {backend} sandbox backend does not work here: {why} \
                     (.ci/run installs bubblewrap; Landlock needs Linux 6.2+)"
                ),
                Some(why) => skipped(&format!(
                    "sandbox tests under the {backend} backend: it does not work on this machine: {why}"
                )),
            }
        }
        usable
    })
}

/// Say on the real stderr (not the test harness's captured one, so `cargo
/// test` shows it) that something was not tested here, and why.
fn skipped(what: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what}");
}

/// The usable backends among `wanted` (report names); says on stderr when a
/// test therefore checks nothing here.
fn backends_for(test: &str, wanted: &[&str]) -> Vec<(&'static str, &'static str)> {
    let list: Vec<_> = backends()
        .iter()
        .copied()
        .filter(|(_, b)| wanted.contains(b))
        .collect();
    if list.is_empty() {
        skipped(&format!(
            "{test}: needs the {wanted:?} sandbox backend, which does not work on this machine"
        ));
    }
    list
}

fn plan(steps: &[(&str, &str, &str)]) -> String {
    plan_with("{risk_tolerance: high}", steps)
}

/// A plan whose steps are `(id, command, extra step keys)`; `extra` starts
/// with `, ` and may hold step keys (`risk_level: dangerous`) or, after
/// `parameters:`, nothing: parameters go in `command` only.
fn plan_with(policy: &str, steps: &[(&str, &str, &str)]) -> String {
    let mut s = format!("version: 1\nid: sb\npolicy: {policy}\nsteps:\n");
    for (id, cmd, extra) in steps {
        s.push_str(&format!(
            "  - {{id: {id}, tool: bash, continue_on_error: true{extra}, parameters: {{command: {}}}}}\n",
            serde_json::to_string(cmd).unwrap()
        ));
    }
    s
}

fn run(env: &Env, backend: &str, yaml: &str) -> std::process::Output {
    let mut args = vec!["--sandbox-backend".to_owned(), backend.to_owned()];
    // Under Landlock a step that may write is not auto-approved (seccomp
    // cannot keep its `chmod` inside the workspace; seal.rs checks that):
    // these tests approve every step, so that each still runs in the profile
    // of its risk.
    if backend == "landlock" {
        for line in yaml.lines() {
            let l = line.trim_start();
            if let Some(rest) = l.strip_prefix("- {id: ").or(l.strip_prefix("- id: "))
                && let Some(id) = rest.split(',').next()
            {
                args.extend(["--approve".to_owned(), id.trim().to_owned()]);
            }
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.run(yaml, &args)
}

fn check_backend(env: &Env, backend: &str) {
    let r = env.report();
    assert_eq!(
        r["sandbox"]["available"], backend,
        "the {backend} backend does not work on this machine: {}",
        r["sandbox"]
    );
}

fn stderr_of(env: &Env, id: &str) -> String {
    std::fs::read_to_string(env.out.join(format!("artifacts/{id}/stderr.txt"))).unwrap_or_default()
}

/// The step's sandbox as the report records it: (enforcement, filesystem, network).
fn sandbox_of(env: &Env, id: &str) -> (String, String, bool) {
    let s = env.step(id);
    let sb = &s["sandbox"];
    (
        sb["enforcement"].as_str().unwrap_or("?").to_owned(),
        sb["profile"]["filesystem"]
            .as_str()
            .unwrap_or("?")
            .to_owned(),
        sb["profile"]["network"].as_bool().unwrap_or(false),
    )
}

fn git(ws: &std::path::Path, args: &[&str]) {
    let o = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(ws)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A repository whose configuration makes `git diff` run a program (a
/// textconv driver, set up before the run as a user's own configuration
/// would be): the classifier rightly calls `git diff` safe, but what it
/// runs tries to write each target of `$WRITE_TARGETS` (`TMP`: its TMPDIR,
/// `ART`: its artifact folder, or a path) and says on stderr which writes
/// were refused. This is the gap the sandbox exists for.
fn textconv_repo(env: &Env) -> PathBuf {
    git(&env.ws, &["init", "-q"]);
    // Inside `.git`: readable by the steps (nothing outside the workspace is), never tracked.
    let tools = env.ws.join(".git/test-tools");
    std::fs::create_dir_all(&tools).unwrap();
    let conv = tools.join("conv.sh");
    std::fs::write(
        &conv,
        "for t in $WRITE_TARGETS; do\n  case $t in TMP) t=$TMPDIR/t;; ART) t=$PLANGATE_STEP_ARTIFACTS/mine.txt;; esac\n  if { echo x > \"$t\"; } 2>/dev/null; then echo \"wrote $t\" >&2; else echo \"refused $t\" >&2; fi\ndone\ncat \"$1\"\n",
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
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "init"]);
    env.write("a.txt", "two\n");
    let other = env.ws.parent().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    other
}

#[test]
fn the_approved_risk_is_the_sandbox_profile() {
    let all = ["bwrap", "landlock+seccomp"];
    for (flag, backend) in backends_for("the_approved_risk_is_the_sandbox_profile", &all) {
        let env = Env::new();
        let other = textconv_repo(&env);
        let ws = env.ws.display().to_string();
        let o = other.display().to_string();
        let targets = |list: &[&str]| format!(", env: {{WRITE_TARGETS: {:?}}}", list.join(" "));
        let safe = targets(&[
            "TMP",
            "ART",
            &format!("{ws}/by-safe.txt"),
            &format!("{o}/by-safe.txt"),
        ]);
        let moderate = targets(&[
            &format!("{ws}/by-moderate.txt"),
            &format!("{o}/by-moderate.txt"),
        ]);
        let yaml = plan(&[
            ("safe", "git --no-pager diff", &safe),
            ("moderate", "git --no-pager diff > diff.out", &moderate),
            ("hook", "echo x > .git/hooks/pre-commit", ""),
            ("config", "echo '[core]' >> .git/config", ""),
            (
                "out_dir",
                &format!("echo bad >> {}", env.out.join("report.json").display()),
                "",
            ),
            (
                "dangerous",
                &format!("echo ok > .git/hooks/post-commit && echo ok > {o}/granted.txt"),
                &format!(", risk_level: dangerous, parameters_writable: [{o:?}]"),
            ),
        ])
        .replace(", parameters_writable: [", ", parameters: {writable: [")
        .replace("], parameters: {command:", "], command:");
        let out = run(&env, flag, &yaml);
        assert_eq!(code(&out), 0, "{backend}: {}\n{yaml}", stderr(&out));
        check_backend(&env, backend);
        // safe: read-only but its TMPDIR and artifact folder.
        assert_eq!(
            sandbox_of(&env, "safe"),
            (backend.to_owned(), "read-only".to_owned(), false)
        );
        let err = stderr_of(&env, "safe");
        assert!(
            err.contains("wrote ") && err.contains("/t\n"),
            "{backend}: {err}"
        );
        assert!(err.contains("mine.txt"), "{backend}: {err}");
        assert!(
            err.contains(&format!("refused {ws}/by-safe.txt")),
            "{backend}: {err}"
        );
        assert!(
            err.contains(&format!("refused {o}/by-safe.txt")),
            "{backend}: {err}"
        );
        assert!(!env.ws.join("by-safe.txt").exists() && !other.join("by-safe.txt").exists());
        // moderate: the workspace too, nothing outside it.
        assert_eq!(sandbox_of(&env, "moderate").1, "workspace-write");
        let err = stderr_of(&env, "moderate");
        assert!(env.ws.join("by-moderate.txt").exists(), "{backend}: {err}");
        assert!(!other.join("by-moderate.txt").exists(), "{backend}: {err}");
        // git's hooks and configuration: refused or put back, and the step fails.
        for id in ["hook", "config"] {
            let s = env.step(id);
            assert_eq!(s["status"], "failed", "{backend}: {id}: {s}");
            assert_eq!(sandbox_of(&env, id).1, "workspace-write");
        }
        assert!(!env.ws.join(".git/hooks/pre-commit").exists(), "{backend}");
        let config = std::fs::read_to_string(env.ws.join(".git/config")).unwrap();
        assert!(!config.ends_with("[core]\n"), "{backend}: {config}");
        // The run's output folder is not the step's.
        assert_eq!(env.step("out_dir")["status"], "failed", "{backend}");
        let report = std::fs::read_to_string(env.out.join("report.json")).unwrap();
        assert!(!report.contains("\nbad"), "{backend}");
        // dangerous: what it declares, and git's files.
        let s = env.step("dangerous");
        assert_eq!(s["status"], "success", "{backend}: {s}");
        assert_eq!(s["sandbox"]["profile"]["filesystem"], "declared");
        assert_eq!(s["sandbox"]["profile"]["writable"][0], o.as_str());
        assert!(other.join("granted.txt").exists());
        assert!(env.ws.join(".git/hooks/post-commit").exists());
    }
}

/// A local listener counting the connections it accepts.
fn listener() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&hits);
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            h.fetch_add(1, Ordering::SeqCst);
            let mut b = [0u8; 16];
            let _ = c.read(&mut b);
        }
    });
    (port, hits)
}

#[test]
fn the_network_is_off_unless_the_step_declares_it() {
    let all = ["bwrap", "landlock+seccomp"];
    for (flag, backend) in backends_for("the_network_is_off_unless_the_step_declares_it", &all) {
        let env = Env::new();
        let (port, hits) = listener();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hi >&3");
        let python = format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'"
        );
        let yaml = plan(&[
            ("plain", &connect, ""),
            ("dangerous", &connect, ", risk_level: dangerous"),
            ("python", &python, ""),
            ("declared", &connect, ", network: true"),
        ]);
        // Inline python is unclassifiable: it runs only when approved.
        let o = if flag == "landlock" {
            // run() approves every step there (see it).
            run(&env, flag, &yaml)
        } else {
            env.run(&yaml, &["--sandbox-backend", flag, "--approve", "python"])
        };
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
        check_backend(&env, backend);
        for id in ["plain", "dangerous", "python"] {
            let s = env.step(id);
            assert_eq!(s["status"], "failed", "{backend}: {id}: {s}");
            assert!(!sandbox_of(&env, id).2);
        }
        let s = env.step("declared");
        assert_eq!(s["status"], "success", "{backend}: {s}");
        assert!(sandbox_of(&env, "declared").2);
        // `network: true` floors the risk at moderate.
        assert_ne!(s["risk"]["effective"], "safe");
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "{backend}: only the step that declares the network connects"
        );
    }
}

#[test]
fn an_agent_cli_runs_in_the_sandbox_of_its_step() {
    let all = ["bwrap", "landlock+seccomp"];
    for (flag, backend) in backends_for("an_agent_cli_runs_in_the_sandbox_of_its_step", &all) {
        let env = Env::new();
        let other = env.ws.parent().unwrap().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let escaped = other.join("escaped.txt");
        let script = format!(
            "cat > /dev/null; echo x > {} 2>/dev/null; echo ws > in-ws.txt; printf '%s' '{{\"status\": \"OK\", \"summary\": \"done\", \"artifacts\": [], \"next_actions\": []}}'",
            escaped.display()
        );
        let yaml = format!(
            "version: 1\nid: ag\npolicy: {{risk_tolerance: medium}}\nagents:\n  cli:\n    command: [bash, -c, {}]\n    timeout: 30\nsteps:\n  - {{id: ask, tool: agent, parameters: {{agent: cli, prompt: hi}}}}\n",
            serde_json::to_string(&script).unwrap()
        );
        let o = run(&env, flag, &yaml);
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
        assert_eq!(
            sandbox_of(&env, "ask"),
            (backend.to_owned(), "workspace-write".to_owned(), false)
        );
        assert!(env.ws.join("in-ws.txt").exists(), "{backend}");
        assert!(
            !escaped.exists(),
            "{backend}: the agent CLI wrote outside the workspace"
        );
    }
}

#[test]
fn a_rollback_runs_in_the_sandbox_of_its_step() {
    let all = ["bwrap", "landlock+seccomp"];
    for (flag, backend) in backends_for("a_rollback_runs_in_the_sandbox_of_its_step", &all) {
        let env = Env::new();
        let other = env.ws.parent().unwrap().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let escaped = other.join("rolled-back.txt");
        let yaml = format!(
            "version: 1\nid: rb\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: made\n    tool: bash\n    rollback_command: {}\n    parameters: {{command: 'echo made > made.txt'}}\n  - id: boom\n    tool: bash\n    dependencies: [made]\n    parameters: {{command: 'exit 3'}}\n",
            serde_json::to_string(&format!("rm made.txt; echo undone > {}", escaped.display()))
                .unwrap()
        );
        let o = run(&env, flag, &yaml);
        assert_eq!(code(&o), 1, "{backend}: {}", stderr(&o));
        let s = env.step("made");
        assert_eq!(s["rollback"]["status"], "failed", "{backend}: {s}");
        // Whatever the classifier made of the rollback, its step's profile
        // grants nothing outside the workspace.
        assert_ne!(s["sandbox"]["enforcement"], "not enforced", "{s}");
        assert!(
            !env.ws.join("made.txt").exists(),
            "{backend}: rm ran inside"
        );
        assert!(
            !escaped.exists(),
            "{backend}: the rollback wrote outside the workspace"
        );
    }
}

#[test]
fn nothing_a_sandboxed_step_forks_outlives_it_even_after_setsid() {
    // bwrap only: its pid namespace dies with the step. The Landlock backend
    // has no pid namespace (a `setsid` child escapes, as without a sandbox).
    for (flag, backend) in backends_for(
        "nothing_a_sandboxed_step_forks_outlives_it_even_after_setsid",
        &["bwrap"],
    ) {
        let env = Env::new();
        let yaml = plan(&[(
            "bg",
            "setsid bash -c 'sleep 1.5; echo late > late.txt' >/dev/null 2>&1 < /dev/null & echo started",
            "",
        )]);
        let o = run(&env, flag, &yaml);
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
        assert_eq!(env.step("bg")["status"], "success");
        std::thread::sleep(std::time::Duration::from_millis(2500));
        assert!(
            !env.ws.join("late.txt").exists(),
            "{backend}: a detached process survived the step"
        );
    }
}

fn assert_refused(env: &Env, o: &std::process::Output, why: &str) {
    assert_eq!(code(o), 3, "{}", stderr(o));
    assert!(!env.ws.join("marker").exists(), "a step ran");
    let r = env.report();
    assert_eq!(r["status"], "denied");
    assert_eq!(r["sandbox"]["available"], "none");
    assert!(
        r["sandbox"]["reason"].as_str().unwrap().contains(why),
        "{}",
        r["sandbox"]
    );
    // Switched off by the operator: refused whatever `sandbox:` says.
    let off = why == "switched off";
    for id in ["first", "second"] {
        let s = env.step(id);
        assert_eq!(s["status"], "blocked", "{s}");
        let err = s["error"].as_str().unwrap();
        if off {
            assert!(
                err.contains("--sandbox-backend none switched sandboxes off"),
                "{err}"
            );
        } else {
            assert!(
                err.contains("no sandbox backend works here") && err.contains("sandbox: optional"),
                "{err}"
            );
        }
    }
    let fix = if off {
        "choose a backend"
    } else {
        "bubblewrap"
    };
    assert!(stderr(o).contains(fix), "the fix is named: {}", stderr(o));
}

#[test]
fn under_required_no_backend_means_no_step_runs() {
    let yaml = plan(&[("first", "ls", ""), ("second", "touch marker", "")]);
    // Sandboxes switched off.
    let env = Env::new();
    let o = run(&env, "none", &yaml);
    assert_refused(&env, &o, "switched off");
    // bwrap asked for but not installed (not in PATH).
    let env = Env::new();
    let plan_path = env.write("plan.yaml", &yaml);
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", "bwrap"])
        .env("PATH", env.ws.join("no-such-bin"))
        .output()
        .unwrap();
    assert_refused(&env, &o, "cannot start `bwrap`");
    // `validate` shows the same refusal, with run's exit code.
    let o = env
        .cmd()
        .arg("validate")
        .arg(&plan_path)
        .args(["--sandbox-backend", "none"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned() + &stderr(&o);
    assert!(
        out.contains("--sandbox-backend none switched sandboxes off"),
        "{out}"
    );
    // The maintainers' policy file pins `required` over a plan's `optional`.
    let env = Env::new();
    let yaml = plan_with(
        "{risk_tolerance: high, sandbox: optional}",
        &[("first", "ls", ""), ("second", "touch marker", "")],
    );
    let policy = env.write("policy.yaml", "risk_tolerance: high\nsandbox: required\n");
    let o = env.run(
        &yaml,
        &[
            "--sandbox-backend",
            "none",
            "--policy",
            policy.to_str().unwrap(),
        ],
    );
    assert_refused(&env, &o, "switched off");
}

#[test]
fn under_optional_steps_run_and_say_not_enforced_everywhere() {
    let env = Env::new();
    let yaml = plan(&[("first", "touch marker", "")]);
    let policy = env.write("policy.yaml", "risk_tolerance: high\nsandbox: optional\n");
    // No backend works here: bwrap is asked for and not in PATH (under
    // `--sandbox-backend none` the step would be refused, optional or not).
    let plan_path = env.write("plan.yaml", &yaml);
    let o = env
        .run_cmd(&plan_path)
        .args(["--sandbox-backend", "bwrap", "--policy"])
        .arg(&policy)
        .env("PATH", crate::harness::path_without_bwrap(&env))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(env.ws.join("marker").exists());
    let s = env.step("first");
    assert_eq!(s["sandbox"]["enforcement"], "not enforced", "{s}");
    assert!(
        s["sandbox"]["reason"]
            .as_str()
            .unwrap()
            .contains("optional")
    );
    assert!(stderr(&o).contains("not enforced"), "{}", stderr(&o));
    // The step summary (the Markdown a CI job publishes).
    let md = env
        .cmd()
        .arg("report")
        .arg(env.out.join("report.json"))
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&md.stdout);
    assert!(summary.contains("not enforced"), "{summary}");
}

#[test]
fn a_step_may_ask_for_no_sandbox_only_as_dangerous_and_if_the_policy_allows() {
    let env = Env::new();
    let step = [("free", "touch marker", ", parameters_sandbox: false")];
    let fix = |y: String| {
        y.replace(
            ", parameters_sandbox: false, parameters: {command:",
            ", parameters: {sandbox: false, command:",
        )
    };
    // Dangerous: denied at medium...
    let o = env.run(&fix(plan_with("{risk_tolerance: medium}", &step)), &[]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let s = env.step("free");
    assert_eq!(s["risk"]["effective"], "dangerous", "{s}");
    assert!(
        s["approval"]["reason"]
            .as_str()
            .unwrap()
            .contains("sandbox: false")
    );
    assert!(!env.ws.join("marker").exists());
    // ...run unsandboxed, and said so, once approved...
    let o = env.run(&fix(plan(&step)), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(env.ws.join("marker").exists());
    assert_eq!(env.step("free")["sandbox"]["enforcement"], "not enforced");
    std::fs::remove_file(env.ws.join("marker")).unwrap();
    // ...unless the policy file forbids it.
    let policy = env.write(
        "policy.yaml",
        "risk_tolerance: high\nallow_unsandboxed: false\n",
    );
    let o = env.run(&fix(plan(&step)), &["--policy", policy.to_str().unwrap()]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(env.step("free")["status"], "blocked");
    assert!(!env.ws.join("marker").exists());
}

#[test]
fn no_probe_when_no_step_runs_a_process() {
    let env = Env::new();
    let o = env.run(
        "version: 1\nid: p\nsteps:\n  - {id: info, tool: system_info, parameters: {tools: []}}\n",
        &["--sandbox-backend", "none"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(env.report().get("sandbox").is_none());
    assert!(env.step("info").get("sandbox").is_none());
}

#[test]
fn resource_limits_stop_a_step_that_exceeds_them() {
    let env = Env::new();
    // Memory: a 400 MiB allocation fails under a 100 MiB address-space limit,
    // and succeeds without it.
    let alloc = "python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'";
    let plan = format!(
        "version: 1\nid: l\npolicy: {{risk_tolerance: medium}}\nsteps:\n  - {{id: capped, tool: bash, continue_on_error: true, parameters: {{command: \"{alloc}\", limits: {{memory_mb: 100}}}}}}\n  - {{id: free, tool: bash, parameters: {{command: \"{alloc}\"}}}}\n  - {{id: big-file, tool: bash, continue_on_error: true, parameters: {{command: 'head -c 5000000 /dev/zero > big.bin', limits: {{file_size_mb: 1}}}}}}\n  - {{id: small-file, tool: bash, parameters: {{command: 'head -c 500000 /dev/zero > small.bin', limits: {{file_size_mb: 1}}}}}}\n"
    );
    // Inline python is unclassifiable (the classifier reads only bash): approved.
    let o = env.run(&plan, &["--approve", "capped", "--approve", "free"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        env.step("capped")["status"],
        "failed",
        "{:#}",
        env.step("capped")
    );
    assert_eq!(env.step("free")["status"], "success");
    let big = env.step("big-file");
    assert_eq!(big["status"], "failed", "{big:#}");
    let size = std::fs::metadata(env.ws.join("big.bin"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(size <= 1024 * 1024, "wrote {size} bytes past the limit");
    assert_eq!(env.step("small-file")["status"], "success");
}
