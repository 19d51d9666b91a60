//! The approved risk level is the sandbox profile: every bash step, rollback
//! and agent CLI runs in the boundary its approval grants (safe: read-only
//! but its artifacts and TMPDIR; moderate: also the workspace, not git's
//! hooks and configuration; dangerous: what it declares), the network only
//! with `network: true`, and nothing outlives the step.
//!
//! One trial per backend (`--sandbox-backend`): a backend that cannot run
//! here (bubblewrap not installed, Landlock off in the kernel) is reported as
//! ignored with the reason, and under `CI=true` as failed (`.ci/run`
//! installs bubblewrap), so CI proves both. What needs no backend (a refused
//! or optional sandbox, limits) is in tests/integration/sandbox.rs.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::facility::Backend;
use crate::harness::{Env, code, git, stderr};

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

pub fn the_approved_risk_is_the_sandbox_profile(b: Backend) {
    let (flag, backend) = b.pair();
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

pub fn the_network_is_off_unless_the_step_declares_it(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (port, hits) = listener();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hi >&3");
    // The system's python3 (`Facility::SystemPython`): one under `$HOME`
    // (pyenv) is out of a sandboxed step's reach, which would fail the
    // `python` step for another reason than the network.
    let python = format!(
        "/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port})); print(\"connected\")'"
    );
    let yaml = plan(&[
        ("plain", &connect, ""),
        ("dangerous", &connect, ", risk_level: dangerous"),
        ("python", &python, ""),
        ("declared", &connect, ", network: true"),
        ("declared_python", &python, ", network: true"),
    ]);
    // Inline python is unclassifiable: it runs only when approved.
    let o = if flag == "landlock" {
        // run() approves every step there (see it).
        run(&env, flag, &yaml)
    } else {
        env.run(
            &yaml,
            &[
                "--sandbox-backend",
                flag,
                "--approve",
                "python,declared_python",
            ],
        )
    };
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    check_backend(&env, backend);
    for id in ["plain", "dangerous", "python"] {
        let s = env.step(id);
        assert_eq!(s["status"], "failed", "{backend}: {id}: {s}");
        assert!(!sandbox_of(&env, id).2);
    }
    // Refused by the sandbox, not for want of python: the same command
    // connects once the step declares the network.
    let err = stderr_of(&env, "python");
    assert!(
        err.contains("Error") && !err.contains("No such file"),
        "{backend}: {err}"
    );
    for id in ["declared", "declared_python"] {
        let s = env.step(id);
        assert_eq!(s["status"], "success", "{backend}: {id}: {s}");
        assert!(sandbox_of(&env, id).2);
    }
    let s = env.step("declared");
    // `network: true` floors the risk at moderate.
    assert_ne!(s["risk"]["effective"], "safe");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        2,
        "{backend}: only the steps that declare the network connect"
    );
}

pub fn an_agent_cli_runs_in_the_sandbox_of_its_step(b: Backend) {
    let (flag, backend) = b.pair();
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

pub fn a_rollback_runs_in_the_sandbox_of_its_step(b: Backend) {
    let (flag, backend) = b.pair();
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

pub fn nothing_a_sandboxed_step_forks_outlives_it_even_after_setsid(b: Backend) {
    // bwrap only: its pid namespace dies with the step. The Landlock backend
    // has no pid namespace (a `setsid` child escapes, as without a sandbox).
    let (flag, backend) = b.pair();
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
