//! Sandboxed bash steps (`sandbox: true`): writes outside the workspace and
//! into `.git` fail, the network is off unless allowed, nothing outlives the
//! step, and a step whose sandbox cannot be had is refused before anything runs.
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
    let o = run(&env, flag, &plan(&[("probe", "true", ", sandbox: true")]));
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
fn backends() -> &'static [(&'static str, &'static str)] {
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
    let mut s = String::from("version: 1\nid: sb\npolicy: {risk_tolerance: high}\nsteps:\n");
    for (id, cmd, extra) in steps {
        s.push_str(&format!(
            "  - id: {id}\n    tool: bash\n    continue_on_error: true\n    parameters: {{command: {}{extra}}}\n",
            serde_json::to_string(cmd).unwrap()
        ));
    }
    s
}

fn run(env: &Env, backend: &str, yaml: &str) -> std::process::Output {
    env.run(yaml, &["--sandbox-backend", backend])
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

#[test]
fn a_sandboxed_step_writes_the_workspace_and_its_tmpdir_only() {
    let all = ["bwrap", "landlock+seccomp"];
    for (flag, backend) in backends_for(
        "a_sandboxed_step_writes_the_workspace_and_its_tmpdir_only",
        &all,
    ) {
        let env = Env::new();
        std::fs::create_dir_all(env.ws.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(env.ws.join("src")).unwrap();
        env.write("existing.txt", "old\n");
        // Landlock cannot grant new entries in the workspace root without
        // granting them in `.git` too: only bwrap creates files there.
        let root_file = if backend == "bwrap" {
            " && echo ok > made.txt"
        } else {
            ""
        };
        let other: PathBuf = env.ws.parent().unwrap().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let outside = other.join("escaped.txt");
        let yaml = plan(&[
            (
                "inside",
                &format!(
                    "echo new >> existing.txt && echo ok > src/deep.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo a > \"$PLANGATE_STEP_ARTIFACTS/mine.txt\"{root_file}"
                ),
                ", sandbox: true",
            ),
            (
                "outside",
                &format!("echo bad > {}", outside.display()),
                ", sandbox: true",
            ),
            ("git", "echo bad > .git/hooks/pre-commit", ", sandbox: true"),
            (
                "tmp",
                "echo bad > /tmp/plangate-sandbox-escape-$$",
                ", sandbox: true",
            ),
            (
                "report",
                &format!("echo bad >> {}", env.out.join("report.json").display()),
                ", sandbox: true",
            ),
        ]);
        let o = run(&env, flag, &yaml);
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
        check_backend(&env, backend);
        let s = env.step("inside");
        assert_eq!(s["status"], "success", "{backend}: {s}");
        assert_eq!(s["sandbox"], backend);
        assert_eq!(
            env.ws.join("made.txt").exists(),
            backend == "bwrap",
            "{backend}"
        );
        assert_eq!(
            std::fs::read_to_string(env.ws.join("existing.txt")).unwrap(),
            "old\nnew\n"
        );
        assert!(env.ws.join("src/deep.txt").exists(), "{backend}");
        assert!(env.out.join("artifacts/inside/mine.txt").exists());
        for id in ["outside", "git", "tmp", "report"] {
            let s = env.step(id);
            assert_eq!(s["status"], "failed", "{backend}: step {id} wrote: {s}");
            let err = stderr_of(&env, id);
            assert!(
                err.contains("Read-only file system") || err.contains("Permission denied"),
                "{backend}: {id}: {err}"
            );
        }
        assert!(!outside.exists(), "{backend}: the write outside landed");
        assert!(!env.ws.join(".git/hooks/pre-commit").exists(), "{backend}");
        let report = std::fs::read_to_string(env.out.join("report.json")).unwrap();
        assert!(!report.contains("\nbad"), "{backend}");
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
fn the_network_is_off_in_a_sandbox_unless_the_step_allows_it() {
    let all = ["bwrap", "landlock+seccomp"];
    for (flag, backend) in backends_for(
        "the_network_is_off_in_a_sandbox_unless_the_step_allows_it",
        &all,
    ) {
        let env = Env::new();
        let (port, hits) = listener();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hi >&3");
        let yaml = plan(&[
            ("plain", &connect, ""),
            ("boxed", &connect, ", sandbox: true"),
            ("allowed", &connect, ", sandbox: true, network: true"),
        ]);
        let o = run(&env, flag, &yaml);
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
        check_backend(&env, backend);
        assert_eq!(env.step("plain")["status"], "success", "{backend}");
        let boxed = env.step("boxed");
        assert_eq!(boxed["status"], "failed", "{backend}: {boxed}");
        assert_eq!(boxed["sandbox"], backend);
        assert_eq!(env.step("allowed")["status"], "success", "{backend}");
        assert_eq!(
            hits.load(Ordering::SeqCst),
            2,
            "{backend}: only the unsandboxed step and the allowed one connect"
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
            ", sandbox: true",
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
    assert!(!env.ws.join("marker").exists(), "the step ran");
    let r = env.report();
    assert_eq!(r["status"], "denied");
    assert_eq!(r["sandbox"]["available"], "none");
    assert!(
        r["sandbox"]["reason"].as_str().unwrap().contains(why),
        "{}",
        r["sandbox"]
    );
    let s = env.step("boxed");
    assert_eq!(s["status"], "blocked");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("never run unsandboxed"),
        "{s}"
    );
    assert_eq!(env.step("plain")["status"], "not_run");
}

#[test]
fn a_step_whose_sandbox_cannot_be_had_is_refused_before_anything_runs() {
    let yaml = plan(&[
        ("plain", "touch marker", ""),
        ("boxed", "touch marker", ", sandbox: true"),
    ]);
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
    // `validate` shows the same refusal.
    let o = env
        .cmd()
        .arg("validate")
        .arg(&plan_path)
        .args(["--sandbox-backend", "none"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned() + &stderr(&o);
    assert!(out.contains("sandbox"), "{out}");
}

#[test]
fn no_probe_and_no_sandbox_block_when_no_step_asks() {
    let env = Env::new();
    let o = run(&env, "none", &plan(&[("plain", "touch marker", "")]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(env.ws.join("marker").exists());
    assert!(env.report().get("sandbox").is_none());
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
