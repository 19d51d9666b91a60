//! Issue 23, "seal the boundary": what a step can read of plangate, change
//! outside its writable set, reach or signal, and leave running, under each
//! backend this machine supports (and unsandboxed where the property is
//! plangate's own: its environment, descriptors, what a step leaves behind).
//! Payloads touch only marker files in the test's temporary folders.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::facility::{Backend, run_on as run, shell_quote};
use crate::harness::{Env, code, stderr};

/// A plan of bash steps `(id, command)`, tolerance high, sandboxed (the
/// default `sandbox: required`).
fn plan(steps: &[(&str, &str)]) -> String {
    crate::harness::bash_plan(steps)
}

/// [`plan`] for a mode (`facility::MODES`): under `none` each step says
/// `sandbox: false` (the tests' operator policy allows it), since
/// `--sandbox-backend none` refuses every step that asks for a sandbox.
fn plan_for(flag: &str, steps: &[(&str, &str)]) -> String {
    if flag == "none" {
        crate::harness::unsandboxed_plan(steps)
    } else {
        plan(steps)
    }
}

fn stdout_of(env: &Env, id: &str) -> String {
    std::fs::read_to_string(env.out.join(format!("artifacts/{id}/stdout.txt"))).unwrap_or_default()
}

pub fn no_step_reads_a_secret_from_plangates_environment(b: Backend) {
    let secret = format!("life{}marker", std::process::id());
    // Every environ a step can open: its parent's, its grandparent's (plangate
    // itself when the helper supervises), any other process's.
    let read = "for f in /proc/$PPID/environ /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null; done | grep -c \"^LIFE_TEST_SECRET=\" || true";
    let (flag, label) = b.mode();
    let env = Env::new();
    let yaml = plan_for(flag, &[("peek", read)]);
    let plan_path = env.write("plan.yaml", &yaml);
    let o = env
        .cmd()
        .env("LIFE_TEST_SECRET", &secret)
        .arg("run")
        .arg(&plan_path)
        .args(["--workspace"])
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", flag])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{label}: {}", stderr(&o));
    assert_eq!(env.step("peek")["status"], "success", "{label}");
    assert_eq!(stdout_of(&env, "peek").trim(), "0", "{label}");
}

pub fn no_descriptor_plangate_inherited_reaches_a_step(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    let marker = env.out.with_extension("fd9");
    std::fs::write(&marker, "").unwrap();
    let yaml = plan_for(
        flag,
        &[(
            "leak",
            "ls /proc/self/fd | tr '\\n' ' '; (echo leaked >&9) 2>/dev/null && echo wrote-fd9; true",
        )],
    );
    let plan_path = env.write("plan.yaml", &yaml);
    let bin = assert_cmd::cargo::cargo_bin("plangate");
    // bash opens fd 9 (no unsafe code in the tests either) and execs plangate.
    let tmp = tempfile::tempdir().unwrap();
    // The tests' operator policy (it allows the unsandboxed mode's `sandbox: false`).
    let policy = tmp.path().join("policy.yaml");
    std::fs::write(&policy, crate::harness::OPERATOR_POLICY_YAML).unwrap();
    let mut c = std::process::Command::new("bash");
    for (k, _) in std::env::vars() {
        if crate::harness::outside_only(&k) {
            c.env_remove(k);
        }
    }
    let o = c
        .arg("-c")
        .arg("exec \"$LIFE_BIN\" run \"$LIFE_PLAN\" --workspace \"$LIFE_WS\" --out \"$LIFE_OUT\" --sandbox-backend \"$LIFE_FLAG\" --policy \"$LIFE_POLICY\" --approve leak 9>>\"$LIFE_MARKER\"")
        .env("TMPDIR", tmp.path())
        .env("LIFE_POLICY", &policy)
        .env("LIFE_BIN", &bin)
        .env("LIFE_PLAN", &plan_path)
        .env("LIFE_WS", &env.ws)
        .env("LIFE_OUT", &env.out)
        .env("LIFE_FLAG", flag)
        .env("LIFE_MARKER", &marker)
        .current_dir(&env.ws)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{label}: {}", stderr(&o));
    let out = stdout_of(&env, "leak");
    assert!(!out.contains("wrote-fd9"), "{label}: {out}");
    assert!(!out.contains(" 9 "), "{label}: {out}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "", "{label}");
}

fn mode_and_mtime(p: &Path) -> (u32, std::time::SystemTime) {
    let m = std::fs::metadata(p).unwrap();
    (m.permissions().mode() & 0o7777, m.modified().unwrap())
}

/// A repository whose `git diff` runs `bash -c "$META_TRIES"` (a textconv
/// driver, as in sandbox.rs): the classifier rightly calls `git diff` safe,
/// so the tries run in a read-only step; what they print goes to stderr.
fn metadata_repo(env: &Env) {
    // The tool lives in `.git/` (readable to the step, never in the diff):
    // a sandboxed step reads nothing outside the workspace.
    let tools = env.ws.join(".git/tools");
    let conv = tools.join("conv.sh");
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&env.ws)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(&conv, "bash -c \"$META_TRIES\" >&2\ncat \"$1\"\n").unwrap();
    git(&[
        "config",
        "diff.probe.textconv",
        &format!("sh {}", conv.display()),
    ]);
    env.write(".gitattributes", "*.txt diff=probe\n");
    env.write("a.txt", "one\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    env.write("a.txt", "two\n");
}

fn stderr_of(env: &Env, id: &str) -> String {
    std::fs::read_to_string(env.out.join(format!("artifacts/{id}/stderr.txt"))).unwrap_or_default()
}

pub fn a_sandboxed_step_changes_no_metadata_outside_its_writable_set(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    metadata_repo(&env);
    // One file outside for each step (a writing step under Landlock may
    // change mode and times: that is the documented gap).
    let outside = env.out.with_extension("target");
    let outside_rw = env.out.with_extension("target-rw");
    for f in [&outside, &outside_rw] {
        std::fs::write(f, "x").unwrap();
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let before = mode_and_mtime(&outside);
    let before_rw = mode_and_mtime(&outside_rw);
    // Each try says whether it worked; none may.
    let tries_on = |t: &std::path::Path| {
        let t = t.display();
        format!(
            "chmod 600 {t} 2>/dev/null && echo did-chmod; touch -d 2001-01-01 {t} 2>/dev/null && echo did-touch; \
             chown \"$(id -u):$(id -g)\" {t} 2>/dev/null && echo did-chown; \
             /usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], \"user.life\", b\"1\")' {t} 2>/dev/null && echo did-xattr; echo tried"
        )
    };
    // The control: unsandboxed, every try works on such a file here (so
    // that none working in a step means the sandbox refused it).
    let control = env.out.with_extension("control");
    std::fs::write(&control, "x").unwrap();
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(tries_on(&control))
        .output()
        .unwrap();
    let did = String::from_utf8_lossy(&o.stdout);
    for what in ["did-chmod", "did-touch", "did-chown", "did-xattr"] {
        assert!(
            did.contains(what),
            "{backend}: unsandboxed, {what} does not work here: {did}{}",
            stderr(&o)
        );
    }
    let tries = tries_on(&outside);
    let tries_rw = tries_on(&outside_rw);
    let yaml = format!(
        "version: 1\nid: m\npolicy: {{risk_tolerance: high, sandbox: optional}}\nsteps:\n\
         \x20 - {{id: ro, tool: bash, env: {{META_TRIES: {q}}}, parameters: {{command: 'git --no-pager diff'}}}}\n\
         \x20 - {{id: rw, tool: bash, env: {{META_TRIES: {q_rw}}}, parameters: {{command: 'git --no-pager diff > in-ws.txt'}}}}\n",
        q = serde_json::to_string(&tries).unwrap(),
        q_rw = serde_json::to_string(&tries_rw).unwrap(),
    );
    // The writing step is approved: Landlock does not auto-approve it.
    let o = run(&env, flag, &yaml, &["--approve", "rw"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let ro = env.step("ro");
    assert_eq!(
        ro["sandbox"]["profile"]["filesystem"], "read-only",
        "{backend}: {ro}"
    );
    let err = stderr_of(&env, "ro");
    assert!(
        err.contains("tried"),
        "{backend}: the tries did not run: {err}"
    );
    assert!(
        !err.contains("did-"),
        "{backend}: a read-only step changed metadata: {err}"
    );
    assert_eq!(mode_and_mtime(&outside), before, "{backend}");
    // The writing step (moderate: the workspace too) runs its tries the same way.
    let rw_step = env.step("rw");
    assert_eq!(
        rw_step["sandbox"]["profile"]["filesystem"], "workspace-write",
        "{backend}: {rw_step}"
    );
    assert!(env.ws.join("in-ws.txt").exists(), "{backend}");
    let rw = stderr_of(&env, "rw");
    assert!(rw.contains("tried"), "{backend}: {rw}");
    for what in ["did-chown", "did-xattr"] {
        assert!(!rw.contains(what), "{backend}: {what}: {rw}");
    }
    if backend == "bwrap" {
        assert!(!rw.contains("did-"), "{backend}: {rw}");
        assert_eq!(mode_and_mtime(&outside_rw), before_rw, "{backend}");
    }
}

/// Each way to set a file's flags or its `fsxattr` (immutable, append-only,
/// no-dump, extents, project id: what `chattr` does): `chattr`, the
/// `FS_IOC_SETFLAGS` and `FS_IOC_FSSETXATTR` ioctls, and `file_setattr`
/// (Linux 6.17+, by path: no descriptor needed). Prints `did-WHAT` for each
/// that worked, then `tried`.
const FLAG_TRIES_PY: &str = r#"import ctypes, fcntl, os, struct, sys
t = sys.argv[1]
def attempt(name, f):
    try:
        f()
        print("did-" + name)
    except OSError as e:
        print("no-%s %d" % (name, e.errno))
def setflags():
    fd = os.open(t, os.O_RDONLY | os.O_NONBLOCK)
    try:
        b = bytearray(8)
        fcntl.ioctl(fd, 0x80086601, b)  # FS_IOC_GETFLAGS
        flags = struct.unpack("i4x", bytes(b))[0] | 0x40  # FS_NODUMP_FL
        fcntl.ioctl(fd, 0x40086602, struct.pack("i4x", flags))  # FS_IOC_SETFLAGS
    finally:
        os.close(fd)
def fsxattr(change):
    def go():
        fd = os.open(t, os.O_RDONLY | os.O_NONBLOCK)
        try:
            b = bytearray(28)
            fcntl.ioctl(fd, 0x801C581F, b)  # FS_IOC_FSGETXATTR
            x = list(struct.unpack("5I8x", bytes(b)))
            change(x)
            fcntl.ioctl(fd, 0x401C5820, struct.pack("5I8x", *x))  # FS_IOC_FSSETXATTR
        finally:
            os.close(fd)
    return go
def nodump(x):
    x[0] |= 0x80  # FS_XFLAG_NODUMP
def project(x):
    x[3] += 4242
def file_setattr():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    b = ctypes.create_string_buffer(24)
    path = os.fsencode(t)
    if libc.syscall(468, -100, path, b, 24, 0) != 0:  # file_getattr
        raise OSError(ctypes.get_errno(), "file_getattr")
    x = list(struct.unpack("Q4I", b.raw))
    x[0] |= 0x80
    b = ctypes.create_string_buffer(struct.pack("Q4I", *x), 24)
    if libc.syscall(469, -100, path, b, 24, 0) != 0:  # file_setattr
        raise OSError(ctypes.get_errno(), "file_setattr")
attempt("ioctl-setflags", setflags)
attempt("ioctl-fsxattr", fsxattr(nodump))
attempt("ioctl-projid", fsxattr(project))
attempt("file-setattr", file_setattr)
"#;

/// The tries on each target in `$@`: `chattr` (`+i`, `+a`, `+d`, `-e`, a
/// project id), then [`FLAG_TRIES_PY`].
fn flag_tries(py: &Path) -> String {
    format!(
        "for t in \"$@\"; do for f in i a; do chattr +$f \"$t\" 2>/dev/null && echo \"did-chattr+$f\" && chattr -$f \"$t\"; done; \
         for f in +d -e; do chattr $f \"$t\" 2>/dev/null && echo \"did-chattr$f\"; done; \
         chattr -p 4242 \"$t\" 2>/dev/null && echo did-chattr-p; /usr/bin/python3 {} \"$t\"; done; echo tried",
        py.display()
    )
}

/// `lsattr -p` of `p`: its project id and flags.
fn flags_of(p: &Path) -> String {
    let o = std::process::Command::new("lsattr")
        .arg("-p")
        .arg(p)
        .output()
        .unwrap();
    assert!(o.status.success(), "lsattr {}: {}", p.display(), stderr(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

pub fn no_sandboxed_step_changes_a_files_flags_not_even_in_the_workspace(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    metadata_repo(&env);
    let py = env.ws.join(".git/tools/flags.py");
    std::fs::write(&py, FLAG_TRIES_PY).unwrap();
    let tries = env.ws.join(".git/tools/flags.sh");
    std::fs::write(&tries, flag_tries(&py)).unwrap();
    // The control: unsandboxed (root here, as in CI's container), each
    // try that needs no filesystem feature works on such a file.
    let control = env.out.with_extension("control");
    std::fs::write(&control, "x").unwrap();
    let o = std::process::Command::new("bash")
        .arg(&tries)
        .arg(&control)
        .output()
        .unwrap();
    let did = String::from_utf8_lossy(&o.stdout).into_owned();
    let _ = std::process::Command::new("chattr")
        .args(["-i", "-a", "-d"])
        .arg(&control)
        .output();
    let mut expected = vec!["did-chattr+d", "did-ioctl-setflags", "did-ioctl-fsxattr"];
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        expected.extend(["did-chattr+i", "did-chattr+a"]);
    }
    // `file_setattr` is Linux 6.17+ (ENOSYS, 38, before).
    if !did.contains("no-file-setattr 38") {
        expected.push("did-file-setattr");
    }
    for what in &expected {
        assert!(
            did.contains(what),
            "{backend}: unsandboxed, {what} does not work here: {did}{}",
            stderr(&o)
        );
    }
    // The targets: a workspace file, a file outside in a folder the writing
    // step may read (`readable:`: it can open it; the read-only step could
    // not be safe with it), one it cannot read (`file_setattr` goes by path
    // alone).
    let in_ws = env.write("flagged.bin", "x");
    let readable = env.out.with_extension("readable");
    std::fs::create_dir_all(&readable).unwrap();
    let outside = readable.join("target");
    std::fs::write(&outside, "x").unwrap();
    let hidden = env.out.with_extension("hidden");
    std::fs::write(&hidden, "x").unwrap();
    let targets = [&in_ws, &outside, &hidden];
    let before: Vec<String> = targets.iter().map(|t| flags_of(t)).collect();
    let call = |ts: &[&std::path::PathBuf]| {
        let mut s = format!("bash {}", tries.display());
        for t in ts {
            s.push_str(&format!(" {}", t.display()));
        }
        s
    };
    let yaml = format!(
        "version: 1\nid: f\npolicy: {{risk_tolerance: high, sandbox: optional}}\nsteps:\n\
         \x20 - {{id: ro, tool: bash, env: {{META_TRIES: {q}}}, parameters: {{command: 'git --no-pager diff'}}}}\n\
         \x20 - {{id: rw, tool: bash, dependencies: [ro], env: {{META_TRIES: {q}}}, parameters: {{command: 'git --no-pager diff > in-ws.txt', readable: [{r}]}}}}\n\
         \x20 - {{id: net, tool: bash, dependencies: [rw], network: true, env: {{META_TRIES: {q}}}, parameters: {{command: 'git --no-pager diff > in-ws2.txt'}}}}\n",
        q = serde_json::to_string(&call(&targets)).unwrap(),
        r = serde_json::to_string(&readable.display().to_string()).unwrap(),
    );
    // The writing steps are approved: Landlock does not auto-approve them.
    let o = run(&env, flag, &yaml, &["--approve", "rw,net"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    // The third with network (under bwrap, no socket filter).
    for (id, profile) in [
        ("ro", "read-only"),
        ("rw", "workspace-write"),
        ("net", "workspace-write"),
    ] {
        let step = env.step(id);
        assert_eq!(
            step["sandbox"]["profile"]["filesystem"], profile,
            "{backend}: {step}"
        );
        assert_eq!(
            step["sandbox"]["profile"]["network"],
            id == "net",
            "{backend}: {step}"
        );
        let err = stderr_of(&env, id);
        assert!(
            err.contains("tried"),
            "{backend}: {id}: the tries did not run: {err}"
        );
        assert!(
            !err.contains("did-"),
            "{backend}: a {profile} step changed a file's flags: {err}"
        );
    }
    assert!(env.ws.join("in-ws.txt").exists(), "{backend}");
    let after: Vec<String> = targets.iter().map(|t| flags_of(t)).collect();
    assert_eq!(after, before, "{backend}");
}

pub fn without_network_no_unix_or_abstract_socket_is_reachable(b: Backend) {
    use std::os::linux::net::SocketAddrExt;
    let (flag, backend) = b.pair();
    let env = Env::new();
    let path = env.out.with_extension("sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let name = format!("plangate-life-{}", std::process::id());
    let abs = std::os::unix::net::UnixListener::bind_addr(
        &std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap(),
    )
    .unwrap();
    abs.set_nonblocking(true).unwrap();
    let script = format!(
        "import socket\nfor a in [{:?}, '\\0{name}']:\n    try:\n        s = socket.socket(socket.AF_UNIX); s.connect(a); print('connected', a)\n    except OSError as e:\n        print('refused', e.errno)\n",
        path.display().to_string()
    );
    // The system's python3 (`Facility::SystemPython`): one under `$HOME`
    // (pyenv) is out of a sandboxed step's reach.
    let yaml = plan(&[(
        "sock",
        &format!("/usr/bin/python3 -c {}", shell_quote(&script)),
    )]);
    let o = run(&env, flag, &yaml, &["--approve", "sock"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let out = stdout_of(&env, "sock");
    // Both tries ran (and were refused): an empty output checks nothing.
    assert_eq!(
        out.matches("refused").count(),
        2,
        "{backend}: {out}{}",
        std::fs::read_to_string(env.out.join("artifacts/sock/stderr.txt")).unwrap_or_default()
    );
    assert!(!out.contains("connected"), "{backend}: {out}");
    assert!(
        listener.accept().is_err(),
        "{backend}: the path socket was reached"
    );
    assert!(
        abs.accept().is_err(),
        "{backend}: the abstract socket was reached"
    );
}

pub fn a_sandboxed_step_cannot_signal_a_process_outside_it(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = sleeper.id();
    let yaml = plan(&[(
        "sig",
        &format!("kill -TERM {pid} 2>/dev/null && echo signalled; true"),
    )]);
    let o = run(&env, flag, &yaml, &["--approve", "sig"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let alive = sleeper.try_wait().unwrap().is_none();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    // `Facility::SignalScoping` said this backend scopes signals here.
    let props = &env.report()["sandbox"]["properties"];
    assert_eq!(props["signals"], "enforced", "{backend}: {props}");
    assert!(alive, "{backend}: the step killed a process outside it");
    assert!(!stdout_of(&env, "sig").contains("signalled"), "{backend}");
}

pub fn what_a_step_leaves_running_is_killed_and_reported_before_anything_looks(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    let late = env.ws.join("late.txt");
    let yaml = plan_for(flag, &[
        (
            "daemon",
            "setsid bash -c 'sleep 1.5; echo late > late.txt' >/dev/null 2>&1 < /dev/null & echo started",
        ),
        ("after", "test ! -e late.txt && echo clean"),
    ])
    .replace("  - id: after\n", "  - id: after\n    dependencies: [daemon]\n");
    let o = run(&env, flag, &yaml, &["--approve", "daemon"]);
    assert_eq!(code(&o), 0, "{label}: {}", stderr(&o));
    let s = env.step("daemon");
    assert_eq!(s["status"], "success", "{label}: {s}");
    // The detached bash, and its `sleep` if it had started it.
    let n = s["lingering_processes"].as_u64().unwrap_or(0);
    assert!((1..=2).contains(&n), "{label}: {s}");
    assert!(
        stderr(&o).contains(&format!("left {n} process(es) running")),
        "{label}: {}",
        stderr(&o)
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !late.exists(),
        "{label}: a detached process survived the step"
    );
    // A step that leaves nothing has no such field.
    assert!(
        env.step("after")["lingering_processes"].is_null(),
        "{label}"
    );
}

pub fn a_step_that_times_out_leaves_nothing_running_either(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    let late = env.ws.join("late.txt");
    let yaml = plan_for(
        flag,
        &[(
            "slow",
            "setsid bash -c 'sleep 2; echo late > late.txt' >/dev/null 2>&1 < /dev/null & sleep 30",
        )],
    )
    .replace("    tool: bash\n", "    tool: bash\n    timeout: 1\n");
    let o = run(
        &env,
        flag,
        &yaml,
        &["--approve", "slow", "--kill-grace", "1"],
    );
    assert_ne!(code(&o), 0, "{label}");
    assert_eq!(
        env.step("slow")["status"],
        "timed_out",
        "{label}: {}",
        stderr(&o)
    );
    std::thread::sleep(Duration::from_millis(3000));
    assert!(
        !late.exists(),
        "{label}: a detached process survived the timeout"
    );
}

pub fn the_self_test_names_every_property_and_unenforced_ones_stop_auto_approval(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let yaml = plan(&[("moderate", "echo x > file.txt")]);
    let o = run(&env, flag, &yaml, &[]);
    let r = env.report();
    let props = r["sandbox"]["properties"].as_object().unwrap().clone();
    for name in [
        "descriptors",
        "egress",
        "environment",
        "filesystem",
        "lifetime",
        "metadata",
        "signals",
        "sockets",
    ] {
        assert!(
            props.contains_key(name),
            "{backend}: {name} missing: {props:?}"
        );
    }
    // `egress` concerns only the steps that declare an egress list (egress.rs).
    let unenforced: Vec<&String> = props
        .iter()
        .filter(|(k, v)| *v != "enforced" && k.as_str() != "egress")
        .map(|(k, _)| k)
        .collect();
    if backend == "landlock+seccomp" {
        // seccomp cannot tell paths apart: mode and times are free for a writing step.
        assert_eq!(props["metadata"], "read-only steps only", "{props:?}");
    }
    let s = env.step("moderate");
    if unenforced.is_empty() {
        assert_eq!(s["status"], "success", "{backend}: {s}");
    } else {
        assert_eq!(code(&o), 3, "{backend}: {}", stderr(&o));
        assert_eq!(s["approval"]["decision"], "denied", "{backend}: {s}");
        let why = s["approval"]["reason"].as_str().unwrap();
        assert!(why.contains("not auto-approved"), "{why}");
        assert!(why.contains(unenforced[0].as_str()), "{why}");
        assert!(stderr(&o).contains("does not enforce"), "{}", stderr(&o));
        // An explicit approval still runs it.
        let o = run(&env, flag, &yaml, &["--approve", "moderate"]);
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    }
}

pub fn the_self_test_probe_reads_nothing_it_should_not() {
    // The hidden probe subcommand, run unconfined, reports what it could do:
    // everything (it is not in a sandbox) but plangate's wiped environment.
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("f"), "f").unwrap();
    let result = dir.path().join("r.json");
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let o = assert_cmd::Command::cargo_bin("plangate")
        .unwrap()
        .args(["__sandbox-probe", "--outside"])
        .arg(&outside)
        .args(["--pid", &sleeper.id().to_string()])
        .args(["--pid-start", &start_time(sleeper.id())])
        .args(["--pid-arg", "30"])
        .args(["--abstract-name", "plangate-life-none"])
        .args(["--parent", &std::process::id().to_string()])
        .args(["--parent-start", &start_time(std::process::id())])
        .arg("--result")
        .arg(&result)
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut text = String::new();
    std::fs::File::open(&result)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Unconfined, nothing holds but what needs no sandbox: the probe cannot
    // read the environment of the test (its own is not wiped) — so "false".
    assert_eq!(v["filesystem"], false, "{v}");
    assert_eq!(v["signals"], false, "{v}");
    assert_eq!(v["environment"], false, "{v}");
    assert_eq!(v["sockets"], true, "nothing listens on that name: {v}");
}

pub fn a_step_that_kills_its_supervisor_still_leaves_nothing_running(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    let late = env.ws.join("late.txt");
    let yaml = plan_for(
        flag,
        &[(
            "rogue",
            "setsid bash -c 'sleep 1.5; echo late > late.txt' >/dev/null 2>&1 < /dev/null & (kill -KILL $PPID || true); sleep 0.2; echo started",
        )],
    );
    let o = run(&env, flag, &yaml, &["--approve", "rogue"]);
    let s = env.step("rogue");
    if label == "bwrap"
        || (label == "landlock" && env.report()["sandbox"]["properties"]["signals"] == "enforced")
    {
        // Landlock: the supervisor is outside the step's domain, the signal
        // is refused. bwrap: the resident supervisor is its pid namespace's
        // first process, which no signal from inside the namespace reaches.
        assert_eq!(s["status"], "success", "{label}: {s} {}", stderr(&o));
        assert!(
            s["lingering_processes"].as_u64().unwrap_or(0) >= 1,
            "{label}: {s}"
        );
    } else {
        // Its supervisor is gone (bwrap: the whole pid namespace with it):
        // nothing says all is gone, so the step fails.
        assert_eq!(s["status"], "failed", "{label}: {s}");
    }
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !late.exists(),
        "{label}: a detached process survived the step"
    );
}

/// Field 22 of `/proc/<pid>/stat`, as text.
fn start_time(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().to_owned()
}

/// The host's `/dev/shm` is shared by every process and outlives the run: a
/// step below dangerous cannot leave a file there (bwrap: a private one;
/// Landlock: no access). Read-only steps get less than this workspace-write one.
pub fn a_step_leaves_nothing_in_the_hosts_shared_memory(b: Backend) {
    let (flag, label) = b.mode();
    let marker = std::path::PathBuf::from(format!(
        "/dev/shm/plangate-test-{}-{label}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&marker);
    let env = Env::new();
    // A script of the workspace: moderate, so workspace-write.
    std::fs::write(
        env.ws.join("w.sh"),
        format!("touch {} 2>/dev/null; echo done\n", marker.display()),
    )
    .unwrap();
    let o = run(
        &env,
        flag,
        &plan(&[("moderate", "sh ./w.sh")]),
        &["--approve", "moderate"],
    );
    assert_eq!(code(&o), 0, "{label}: {}", stderr(&o));
    let step = env.step("moderate");
    assert_eq!(
        step["sandbox"]["profile"]["filesystem"], "workspace-write",
        "{label}"
    );
    assert_eq!(
        stdout_of(&env, "moderate").trim(),
        "done",
        "{label}: the script did not run"
    );
    let leaked = marker.exists();
    let _ = std::fs::remove_file(&marker);
    assert!(
        !leaked,
        "{label}: a step wrote {} on the host",
        marker.display()
    );
}

/// What a step shares with the host without a namespace of its own, tried
/// from a moderate (workspace-write) step: the kernel's settings and
/// `/proc/sysrq-trigger` (writable by uid 0 without a capability), the
/// user's keyring, System V shared memory. Nothing is written: a setting is
/// only opened for writing, a segment made is removed at once.
pub fn a_step_reaches_no_kernel_setting_keyring_or_host_ipc_object(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    std::fs::write(
        env.ws.join("probe.py"),
        "import ctypes, os, platform\n\
         for p in ('/proc/sys/kernel/core_pattern', '/proc/sys/kernel/hostname', '/proc/sysrq-trigger'):\n\
         \x20   try:\n\
         \x20       os.close(os.open(p, os.O_WRONLY)); print('OPENED', p)\n\
         \x20   except OSError as e:\n\
         \x20       print('refused', p, e.errno)\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         keyctl = {'x86_64': 250, 'aarch64': 219}.get(platform.machine())\n\
         if keyctl is not None:\n\
         \x20   k = libc.syscall(keyctl, 0, ctypes.c_long(-4), 0)\n\
         \x20   print('KEYRING', k) if k > 0 else print('refused keyring', ctypes.get_errno())\n\
         s = libc.shmget(0, 4096, 0o1600)\n\
         if s >= 0:\n\
         \x20   libc.shmctl(s, 0, None); print('SHM-MADE')\n\
         else:\n\
         \x20   print('refused shm', ctypes.get_errno())\n\
         print('tried')\n",
    )
    .unwrap();
    let o = run(
        &env,
        flag,
        &plan(&[("probe", "/usr/bin/python3 ./probe.py")]),
        &["--approve", "probe"],
    );
    assert_eq!(code(&o), 0, "{label}: {}", stderr(&o));
    let out = stdout_of(&env, "probe");
    assert!(
        out.contains("tried"),
        "{label}: the probe did not run: {out}"
    );
    assert!(!out.contains("OPENED"), "{label}: {out}");
    assert!(!out.contains("KEYRING"), "{label}: {out}");
    // bwrap gives the step an IPC namespace of its own; Landlock refuses.
    if label == "landlock" {
        assert!(!out.contains("SHM-MADE"), "{label}: {out}");
    }
}

/// With plangate on a terminal (run under `script`), a step has no
/// controlling terminal: it cannot write to `/dev/tty` past plangate's
/// redaction, nor push input into it.
pub fn a_step_cannot_reach_plangates_terminal(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    let yaml = plan_for(
        flag,
        &[("tty", "echo TTY-MARK-$((6*7)) > /dev/tty && echo WROTE")],
    );
    let plan_path = env.write("plan.yaml", &yaml);
    let o = std::process::Command::new("script")
        .args(["-qec", "exec \"$PG_BIN\" run \"$PG_PLAN\" --workspace \"$PG_WS\" --out \"$PG_OUT\" --sandbox-backend \"$PG_FLAG\"", "/dev/null"])
        .env("PG_BIN", assert_cmd::cargo::cargo_bin("plangate"))
        .env("PG_PLAN", &plan_path)
        .env("PG_WS", &env.ws)
        .env("PG_OUT", &env.out)
        .env("PG_FLAG", flag)
        .env("TMPDIR", env.tmp())
        .env("PLANGATE_POLICY", env.operator_policy())
        .current_dir(&env.ws)
        .output()
        .expect("script (util-linux) runs plangate on a terminal");
    let console = String::from_utf8_lossy(&o.stdout);
    assert!(
        console.contains("tty"),
        "{label}: plangate did not run on the terminal: {console}{}",
        stderr(&o)
    );
    assert!(!console.contains("TTY-MARK-42"), "{label}: {console}");
    assert!(!stdout_of(&env, "tty").contains("WROTE"), "{label}");
}

/// As a container runs it (plangate's session leader outside its PID
/// namespace, where `getsid` answers 0), every step still runs, in a
/// session of its own: the step supervisors once died there at start-up.
pub fn steps_run_in_a_container_whose_session_leader_is_outside_it(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    let yaml = plan_for(
        flag,
        &[("one", "echo RAN-$((6*7))"), ("two", "echo RAN-$((6*8))")],
    );
    let plan_path = env.write("plan.yaml", &yaml);
    let o = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(assert_cmd::cargo::cargo_bin("plangate"))
        .arg("run")
        .arg(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", flag])
        .env("TMPDIR", env.tmp())
        .env("PLANGATE_POLICY", env.operator_policy())
        .current_dir(&env.ws)
        .output()
        .expect("unshare runs plangate");
    assert_eq!(code(&o), 0, "{label}: {}", stderr(&o));
    assert!(stdout_of(&env, "one").contains("RAN-42"), "{label}");
    assert!(stdout_of(&env, "two").contains("RAN-48"), "{label}");
}

/// With the output folder inside the workspace (GitLab's layout), a writing
/// step that puts a secret into an earlier step's artifact and sets its
/// modification time back does not get it past the last sweep (it looks at
/// the inode and the status-change time, which a step cannot set back).
pub fn an_artifact_changed_behind_the_sweeps_back_is_swept_again(b: Backend) {
    let (flag, label) = b.mode();
    let env = Env::new();
    // As long as the first step's output (20 bytes and a newline): the size holds too.
    let secret = "Qx7Hv2pL9wW4mK8rT3nB".to_owned();
    let change = "f=plangate-out/artifacts/first/stdout.txt; t=$(stat -c %y \"$f\"); \
                  printf '%s\\n' \"$MYSEC\" > \"$f\" 2>/dev/null && touch -d \"$t\" \"$f\"; true";
    let yaml = format!(
        "version: 1\nid: o\npolicy: {{risk_tolerance: high}}\nsteps:\n\
         \x20 - {{id: first, tool: bash, parameters: {{command: 'echo AAAAAAAAAAAAAAAAAAAA'}}}}\n\
         \x20 - {{id: w, tool: bash, dependencies: [first], secrets: [MYSEC], parameters: {{command: {}}}}}\n",
        serde_json::to_string(change).unwrap()
    );
    let plan_path = env.write("plan.yaml", &yaml);
    let out = env.ws.join("plangate-out");
    let o = env
        .cmd()
        .env("MYSEC", &secret)
        .arg("run")
        .arg(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&out)
        .args(["--sandbox-backend", flag, "--approve", "w"])
        .output()
        .unwrap();
    let first = std::fs::read_to_string(out.join("artifacts/first/stdout.txt")).unwrap_or_default();
    assert!(
        !first.contains(&secret),
        "{label}: the raw secret is left in an artifact (exit {}): {}",
        code(&o),
        stderr(&o)
    );
}

/// A step approved to write the workspace changes nothing the permission
/// rules deny: it appends to a denied file, renames one, removes one and
/// adds an entry to a denied folder. bwrap binds denied paths read-only;
/// Landlock cannot keep a writing step out of the names beneath the
/// workspace, so plangate compares them after the step and fails it.
pub fn a_writing_step_changes_nothing_the_rules_deny_or_fails(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    for (f, text) in [
        ("secrets/key.txt", "KEEPKEY"),
        ("secrets/other.txt", "KEEPOTHER"),
        ("vault/inner/deep.txt", "KEEPDEEP"),
        ("ok.txt", "fine"),
    ] {
        env.write(f, text);
    }
    let policy = "  risk_tolerance: high\n  permissions:\n    - {id: all, resource: '*', level: admin}\n    - {id: no-secrets, resource: 'secrets/**', level: none, priority: 200}\n    - {id: no-vault, resource: 'vault', level: none, priority: 200}\n    - {id: no-vault-in, resource: 'vault/**', level: none, priority: 200}\n";
    let cases = [
        ("append", "f=secrets/key.txt; printf X >> $f || true"),
        ("rename", "f=secrets/other.txt; mv $f $f.moved || true"),
        ("remove", "d=vault/inner; rm -f $d/deep.txt || true"),
        ("add", "d=vault/inner; printf N > $d/new.txt || true"),
    ];
    for (id, cmd) in cases {
        let yaml = format!(
            "version: 1\nid: w\npolicy:\n{policy}steps:\n  - {{id: {id}, tool: bash, parameters: {{command: {}}}}}\n  - {{id: ok, tool: bash, parameters: {{command: 'printf more >> ok.txt'}}}}\n",
            shell_quote(cmd)
        );
        let o = run(
            &env,
            flag,
            &yaml,
            &["--approve", id, "--approve", "ok", "--no-fail-fast"],
        );
        let read = |p: &str| std::fs::read_to_string(env.ws.join(p)).ok();
        let intact = read("secrets/key.txt").as_deref() == Some("KEEPKEY")
            && read("secrets/other.txt").as_deref() == Some("KEEPOTHER")
            && read("vault/inner/deep.txt").as_deref() == Some("KEEPDEEP")
            && !env.ws.join("vault/inner/new.txt").exists()
            && !env.ws.join("secrets/other.txt.moved").exists();
        let step = env.step(id);
        if intact {
            assert_eq!(step["status"], "success", "{backend} {id}: {}", stderr(&o));
        } else {
            assert_eq!(
                step["status"],
                "failed",
                "{backend} {id}: changed a denied path and passed: {}",
                stderr(&o)
            );
            let err = step["error"].as_str().unwrap_or_default();
            assert!(
                err.contains("permission rules deny"),
                "{backend} {id}: {err}"
            );
        }
        if flag == "landlock" {
            // Landlock cannot stop these: the test is not vacuous there.
            assert!(!intact, "{backend} {id}: expected the change to go through");
        }
        // A writing step that touches nothing denied still passes.
        assert_eq!(env.step("ok")["status"], "success", "{backend} {id}");
        // Put the workspace back for the next case.
        let _ = std::fs::remove_file(env.ws.join("vault/inner/new.txt"));
        let _ = std::fs::remove_file(env.ws.join("secrets/other.txt.moved"));
        for (f, text) in [
            ("secrets/key.txt", "KEEPKEY"),
            ("secrets/other.txt", "KEEPOTHER"),
            ("vault/inner/deep.txt", "KEEPDEEP"),
        ] {
            env.write(f, text);
        }
    }
}
