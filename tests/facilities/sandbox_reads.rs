//! What a sandboxed step may read: the system's programs and libraries, the
//! workspace minus what the permission rules deny (for bash steps, their
//! rollbacks and agent CLIs alike), its own folders and what it declares
//! `readable`; not `$HOME`, not other processes' `/proc` entries (plangate's
//! included), not a credential a checkout left in `.git/config`, which
//! plangate's own git push still uses.
//!
//! Every test is one trial per backend (ignored where the backend does not
//! work here, failed so under `CI=true`). Payloads only read
//! marker files the test made; every marker is random, and the test looks
//! for it in everything the run left (report, artifacts, console).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use crate::facility::{Backend, all_text, marker, q, run_on as run};
use crate::harness::{Env, code, git, stderr};

/// What the run left: the output folder and the console.
fn everything(env: &Env, o: &std::process::Output) -> String {
    format!(
        "{}\n{}\n{}",
        all_text(&env.out),
        String::from_utf8_lossy(&o.stdout),
        stderr(o)
    )
}

/// A bash script in the workspace (`probe/NAME`) that prints `tag:` and then whatever it can read of each path (its
/// errors hidden), so the report shows what got through.
fn reader(env: &Env, name: &str, paths: &[&Path]) -> PathBuf {
    let mut s = String::from("for p in");
    for p in paths {
        s.push_str(&format!(" {}", q(&p.display().to_string())));
    }
    s.push_str("; do echo \"try:$p\"; cat \"$p\" 2>/dev/null; ls \"$p\" 2>/dev/null; done\necho READER-RAN\n");
    env.write(&format!("probe/{name}"), &s)
}

const PERMISSIONS: &str = "  permissions:\n    - {id: all, resource: '*', level: admin}\n    - {id: no-secrets, resource: 'secrets/**', level: none, priority: 200}\n    - {id: no-private, resource: 'private', level: none, priority: 200}\n    - {id: no-token, resource: 'config/token.txt', level: none, priority: 200}\n";

/// The workspace's denied paths and a fake `$HOME`, each holding a marker.
struct Secrets {
    markers: Vec<String>,
    ok: String,
    home: PathBuf,
    paths: Vec<PathBuf>,
}

fn plant(env: &Env) -> Secrets {
    let (s1, s2, s3, h) = (
        marker("DENIEDDIR"),
        marker("DENIEDFILE"),
        marker("DENIEDTOP"),
        marker("HOMEFILE"),
    );
    let ok = marker("READABLE");
    env.write("secrets/key.txt", &s1);
    env.write("secrets/deeper/more.txt", &s1);
    env.write("config/token.txt", &s2);
    env.write("config/settings.txt", &ok);
    env.write("private/notes.txt", &s3);
    let home = env.ws.parent().unwrap().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("creds.txt"), &h).unwrap();
    let paths = vec![
        env.ws.join("secrets/key.txt"),
        env.ws.join("secrets/deeper/more.txt"),
        env.ws.join("config/token.txt"),
        env.ws.join("private/notes.txt"),
        env.ws.join("config/settings.txt"),
        home.join("creds.txt"),
    ];
    Secrets {
        markers: vec![s1, s2, s3, h],
        ok,
        home,
        paths,
    }
}

/// The planted paths, relative to the workspace (where steps start).
fn relative() -> Vec<PathBuf> {
    [
        "secrets/key.txt",
        "secrets",
        "config/token.txt",
        "private/notes.txt",
        "private",
        "config/settings.txt",
    ]
    .iter()
    .map(PathBuf::from)
    .collect()
}

fn assert_none_leaked(backend: &str, what: &str, text: &str, s: &Secrets) {
    for m in &s.markers {
        assert!(
            !text.contains(m.as_str()),
            "{backend}: {what} read {m}:\n{text}"
        );
    }
    assert!(
        text.contains(&s.ok),
        "{backend}: {what} did not read the readable file (the probe did not run?):\n{text}"
    );
}

pub fn bash_steps_and_rollbacks_read_neither_denied_paths_nor_home(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let s = plant(&env);
    let mut paths: Vec<&Path> = s.paths.iter().map(PathBuf::as_path).collect();
    // Relative paths too, as the issue's `cat secrets/key.txt`.
    let rel = relative();
    paths.extend(rel.iter().map(PathBuf::as_path));
    let script = reader(&env, "read.sh", &paths);
    let cmd = format!("bash {}", script.display());
    let rollback = format!(
        "bash {} > \"$PLANGATE_STEP_ARTIFACTS/rb.txt\"",
        script.display()
    );
    let yaml = format!(
        "version: 1\nid: rd\npolicy:\n  risk_tolerance: high\n{PERMISSIONS}steps:\n  - id: look\n    tool: bash\n    rollback_command: {}\n    parameters: {{command: {}}}\n  - id: boom\n    tool: bash\n    dependencies: [look]\n    parameters: {{command: 'exit 3'}}\n",
        q(&rollback),
        q(&cmd)
    );
    let home = s.home.display().to_string();
    let mut c = env.cmd();
    c.env("HOME", &home);
    let plan = env.write("plan.yaml", &yaml);
    let o = c
        .arg("run")
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", flag, "--approve", "look,boom"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{backend}: {}", stderr(&o));
    let look = env.step("look");
    assert_eq!(look["status"], "success", "{backend}: {look}");
    assert_eq!(look["sandbox"]["enforcement"], backend, "{look}");
    assert_eq!(look["rollback"]["status"], "success", "{backend}: {look}");
    let text = everything(&env, &o);
    assert!(text.contains("READER-RAN"), "{backend}: {text}");
    assert_none_leaked(backend, "a bash step or its rollback", &text, &s);
    // The rollback's own output holds the readable file: it ran the probe.
    let rb = std::fs::read_to_string(env.out.join("artifacts/look/rb.txt")).unwrap();
    assert!(rb.contains(&s.ok), "{backend}: {rb}");
}

pub fn a_declared_readable_path_is_readable_and_nothing_else_outside(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let outside = env.ws.parent().unwrap();
    let granted = outside.join("tools");
    let other = outside.join("other");
    std::fs::create_dir_all(&granted).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let (yes, no) = (marker("GRANTED"), marker("NOTGRANTED"));
    std::fs::write(granted.join("t.txt"), &yes).unwrap();
    std::fs::write(other.join("o.txt"), &no).unwrap();
    let cmd = format!(
        "cat {} 2>/dev/null || true; cat {} 2>/dev/null || true",
        granted.join("t.txt").display(),
        other.join("o.txt").display()
    );
    let yaml = format!(
        "version: 1\nid: rd\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: look\n    tool: bash\n    parameters: {{command: {}, readable: [{}]}}\n",
        q(&cmd),
        q(&granted.display().to_string())
    );
    let o = run(&env, flag, &yaml, &["--approve", "look"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let look = env.step("look");
    // A path outside the workspace raises the risk to moderate.
    assert_ne!(look["risk"]["effective"], "safe", "{backend}: {look}");
    let out = std::fs::read_to_string(env.out.join("artifacts/look/stdout.txt")).unwrap();
    assert!(out.contains(&yes), "{backend}: {out}");
    assert!(!out.contains(&no), "{backend}: {out}");
}

/// A stand-in agent CLI reads the denied paths of its staged copy, of the
/// real workspace (by absolute path) and `$HOME`; it writes what it read
/// into its copy, which plangate applies to the workspace.
pub fn an_agent_cli_reads_no_denied_path_of_the_real_workspace(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let s = plant(&env);
    let mut paths: Vec<&Path> = s.paths.iter().map(PathBuf::as_path).collect();
    let rel = relative();
    paths.extend(rel.iter().map(PathBuf::as_path));
    reader(&env, "agent-read.sh", &paths);
    // Run from the staged copy (the real workspace is not readable).
    let cli = "cat > /dev/null; bash probe/agent-read.sh > got.txt 2>&1; printf '%s' '{\"status\": \"OK\", \"summary\": \"done\", \"artifacts\": [], \"next_actions\": []}'";
    let yaml = format!(
        "version: 1\nid: ag\npolicy:\n  risk_tolerance: high\n{PERMISSIONS}agents:\n  cli:\n    command: [bash, -c, {}]\n    timeout: 30\nsteps:\n  - {{id: ask, tool: agent, parameters: {{agent: cli, prompt: hi}}}}\n",
        q(cli)
    );
    let mut c = env.cmd();
    c.env("HOME", &s.home);
    let plan = env.write("plan.yaml", &yaml);
    let o = c
        .arg("run")
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        // Approved: Landlock does not auto-approve a workspace-write step.
        .args(["--sandbox-backend", flag, "--approve", "ask"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let got = std::fs::read_to_string(env.ws.join("got.txt")).unwrap();
    assert!(got.contains("READER-RAN"), "{backend}: {got}");
    assert_none_leaked(backend, "an agent CLI", &got, &s);
    assert_none_leaked(
        backend,
        "an agent CLI",
        &format!("{}{got}", everything(&env, &o)),
        &s,
    );
}

/// Two steps at once: one sleeps with a marker in its command line, the
/// other reads every `/proc/*/cmdline` it can and plangate's environment
/// (`/proc/$PPID/environ`: plangate under Landlock, bwrap's init under
/// bwrap). Without a sandbox the same probe finds both markers, so the
/// probe works.
pub fn a_step_reads_no_other_process_in_proc(b: Backend) {
    let argv_mark = marker("ARGVMARK");
    let env_mark = marker("ENVMARK");
    // Bash stays (not exec'ing sleep) while a command follows.
    let sleeper = format!("sleep 8; : {argv_mark}");
    let probe = "bash probe/proc.sh";
    let script = "sleep 3\nfor f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\" 2>/dev/null; echo; done\ntr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null\nfor f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null; done\necho PROBE-RAN\n";
    let yaml = |policy: &str, params: &str| {
        format!(
            "version: 1\nid: pr\npolicy: {policy}\nsteps:\n  - {{id: sleeper, tool: bash, parameters: {{{params}command: {}}}}}\n  - {{id: probe, tool: bash, parameters: {{{params}command: {}}}}}\n",
            q(&sleeper),
            q(probe)
        )
    };
    let found = |env: &Env, o: &std::process::Output| {
        let out =
            std::fs::read_to_string(env.out.join("artifacts/probe/stdout.txt")).unwrap_or_default();
        assert!(out.contains("PROBE-RAN"), "{out}\n{}", stderr(o));
        (out.contains(&argv_mark), out.contains(&env_mark))
    };
    // The control: unsandboxed, the probe sees the other step's command line
    // (plangate's own environment is wiped at start-up whatever the backend).
    let env = Env::new();
    env.write("probe/proc.sh", script);
    let mut c = env.cmd();
    c.env("PLANGATE_TEST_ENV_MARK", &env_mark);
    let plan = env.write(
        "plan.yaml",
        &yaml(
            "{risk_tolerance: high, max_parallel: 2}",
            "sandbox: false, ",
        ),
    );
    let o = c
        .arg("run")
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", "none", "--approve", "sleeper,probe"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        found(&env, &o),
        (true, false),
        "the probe cannot see through /proc here, or plangate's environment is readable"
    );
    let (flag, backend) = b.pair();
    let env = Env::new();
    env.write("probe/proc.sh", script);
    let mut c = env.cmd();
    c.env("PLANGATE_TEST_ENV_MARK", &env_mark);
    let plan = env.write(
        "plan.yaml",
        &yaml("{risk_tolerance: high, max_parallel: 2}", ""),
    );
    let o = c
        .arg("run")
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", flag, "--approve", "sleeper,probe"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    assert_eq!(
        env.step("probe")["sandbox"]["enforcement"],
        backend,
        "{backend}"
    );
    // Landlock cannot follow the pids a step starts, so other processes'
    // command lines stay readable there (README); their environments and
    // plangate's do not.
    let argv_hidden = backend != "landlock+seccomp";
    let (argv, environ) = found(&env, &o);
    assert!(!environ, "{backend}: an environment was read");
    if argv_hidden {
        assert!(!argv, "{backend}: another step's command line was read");
    }
}

/// A server on 127.0.0.1 that records the request head of each connection
/// (a git smart-HTTP client's first request) and answers 404.
fn recording_server() -> (String, std::sync::Arc<std::sync::Mutex<String>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let keep = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for s in listener.incoming().take(8).flatten() {
            let mut s = s;
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            keep.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf));
            let _ = s.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (url, seen)
}

pub fn a_checkout_credential_in_git_config_is_withheld_from_steps_and_given_to_the_git_push(
    b: Backend,
) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let token = marker("FAKETOKEN");
    let (url, seen) = recording_server();
    git(&env.ws, &["init", "-q", "-b", "main"]);
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "a.txt"]);
    git(&env.ws, &["commit", "-qm", "init"]);
    git(
        &env.ws,
        &["remote", "add", "origin", &format!("{url}/o/r.git")],
    );
    git(
        &env.ws,
        &[
            "config",
            &format!("http.{url}/.extraheader"),
            &format!("AUTHORIZATION: basic {token}"),
        ],
    );
    let before = std::fs::read(env.ws.join(".git/config")).unwrap();
    let cli = "cat > /dev/null; cp .git/config stage-config.txt; printf '%s' '{\"status\": \"OK\", \"summary\": \"done\", \"artifacts\": [], \"next_actions\": []}'";
    let yaml = format!(
        "version: 1\nid: cr\npolicy: {{risk_tolerance: high}}\nagents:\n  cli:\n    command: [bash, -c, {}]\n    timeout: 30\nsteps:\n  - {{id: look, tool: bash, parameters: {{command: 'cat .git/config; git config --list; true'}}}}\n  - {{id: ask, tool: agent, dependencies: [look], parameters: {{agent: cli, prompt: hi}}}}\n  - {{id: up, tool: git, continue_on_error: true, dependencies: [ask], parameters: {{operation: push, args: [origin, 'HEAD:refs/heads/topic']}}}}\n",
        q(cli)
    );
    let o = run(&env, flag, &yaml, &["--approve", "look,ask,up"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    // The step saw the configuration, without the credential.
    let look = std::fs::read_to_string(env.out.join("artifacts/look/stdout.txt")).unwrap();
    assert!(look.contains("[core]"), "{backend}: {look}");
    assert!(look.contains("remote.origin.url"), "{backend}: {look}");
    assert!(!look.contains(&token), "{backend}: {look}");
    // The agent's staged copy held none.
    let staged = std::fs::read_to_string(env.ws.join("stage-config.txt")).unwrap();
    assert!(staged.contains("[core]"), "{backend}: {staged}");
    assert!(!staged.contains(&token), "{backend}: {staged}");
    // plangate's own push sent it.
    let heads = seen.lock().unwrap().clone();
    assert!(
        heads.contains(&format!("basic {token}")),
        "{backend}: the push did not send the credential: {heads}"
    );
    // The report and the console say so, without the token.
    let r = env.report();
    let withheld = r["git_credentials_withheld"].to_string();
    assert!(withheld.contains(".extraheader"), "{backend}: {r}");
    let text = String::from_utf8_lossy(&o.stdout).into_owned() + &stderr(&o);
    assert!(
        text.contains("withheld 1 git credential"),
        "{backend}: {text}"
    );
    assert!(!text.contains(&token), "{backend}: {text}");
    // Put back as it was; no backup left behind.
    assert_eq!(
        std::fs::read(env.ws.join(".git/config")).unwrap(),
        before,
        "{backend}"
    );
}

/// A `readable:` path that leads into a denied folder of the workspace (a
/// link outside to it, `/proc/self/root/…`, `…/./…`) grants nothing of it:
/// paths are granted where they lead, and what the rules deny is taken out
/// there. A linked folder outside stays readable by the name declared.
pub fn a_readable_path_that_leads_to_a_denied_folder_grants_nothing_of_it(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let no = marker("DENIEDVIALINK");
    std::fs::create_dir_all(env.ws.join("secrets")).unwrap();
    std::fs::write(env.ws.join("secrets/key.txt"), &no).unwrap();
    let outside = env.ws.parent().unwrap().join("outside");
    let tools = env.ws.parent().unwrap().join("tools-1.2");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(&tools).unwrap();
    let yes = marker("LINKEDTOOL");
    std::fs::write(tools.join("t.txt"), &yes).unwrap();
    std::os::unix::fs::symlink(env.ws.join("secrets"), outside.join("lnk")).unwrap();
    std::os::unix::fs::symlink(&tools, outside.join("tools")).unwrap();
    let via_proc = format!("/proc/self/root{}", env.ws.join("secrets").display());
    let cmd = format!(
        "cat {o}/lnk/key.txt {p}/key.txt secrets/key.txt 2>/dev/null || true; cat {o}/tools/t.txt || true",
        o = outside.display(),
        p = via_proc
    );
    let yaml = format!(
        "version: 1\nid: rl\npolicy:\n  risk_tolerance: high\n{PERMISSIONS}steps:\n  - id: look\n    tool: bash\n    parameters: {{command: {}, readable: [{}, {}, {}]}}\n",
        q(&cmd),
        q(&outside.join("lnk").display().to_string()),
        q(&via_proc),
        q(&outside.join("tools").display().to_string()),
    );
    let o = run(&env, flag, &yaml, &["--approve", "look"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let out = std::fs::read_to_string(env.out.join("artifacts/look/stdout.txt")).unwrap();
    assert!(
        !out.contains(&no),
        "{backend}: a denied file was read: {out}"
    );
    assert!(
        out.contains(&yes),
        "{backend}: the linked tool folder: {out}"
    );
}

/// Links the workspace holds before the run (a pull request can commit
/// them) next to a denied path: to the denied file and folder, in a folder
/// the rules split, to a folder outside, and to `/`. A safe step reads
/// through none of them, and a writing step writes through none of them.
pub fn a_link_in_the_workspace_grants_nothing_of_what_it_points_to(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let denied = marker("DENIEDBYLINK");
    let token = marker("TOKENBYLINK");
    let away = marker("OUTSIDEBYLINK");
    std::fs::create_dir_all(env.ws.join("secrets")).unwrap();
    std::fs::create_dir_all(env.ws.join("config")).unwrap();
    std::fs::write(env.ws.join("secrets/key.txt"), &denied).unwrap();
    std::fs::write(env.ws.join("config/token.txt"), &token).unwrap();
    std::fs::write(env.ws.join("config/ok.txt"), "fine").unwrap();
    let outside = env.ws.parent().unwrap().join("outside-linked");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("m.txt"), &away).unwrap();
    let link = |to: &Path, name: &str| std::os::unix::fs::symlink(to, env.ws.join(name)).unwrap();
    link(Path::new("secrets/key.txt"), "sl.txt");
    link(Path::new("secrets"), "d");
    link(&outside, "o");
    link(Path::new("/"), "r");
    link(Path::new("token.txt"), "config/t");
    link(&outside, "config/o");
    let via_root = format!("r{}", outside.join("m.txt").display());
    let reads = format!(
        "for f in sl.txt d/key.txt o/m.txt {via_root} config/t config/o/m.txt secrets/key.txt {abs}; do cat \"$f\" 2>/dev/null || true; echo; done",
        abs = outside.join("m.txt").display()
    );
    let writes = format!(
        "for d in o config/o r{}; do printf WROTE > \"$d/planted-$RANDOM.txt\" 2>/dev/null || true; done",
        outside.display()
    );
    let yaml = format!(
        "version: 1\nid: ln\npolicy:\n  risk_tolerance: high\n{PERMISSIONS}steps:\n  - {{id: look, tool: bash, parameters: {{command: {}}}}}\n  - {{id: put, tool: bash, dependencies: [look], parameters: {{command: {}}}}}\n",
        q(&reads),
        q(&writes),
    );
    let o = run(&env, flag, &yaml, &["--approve", "put"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    assert_eq!(env.step("look")["risk"]["effective"], "safe", "{backend}");
    let text = format!("{}\n{}", all_text(&env.out), stderr(&o));
    for (what, m) in [
        ("the denied file", &denied),
        ("the denied token", &token),
        ("the outside folder", &away),
    ] {
        assert!(
            !text.contains(m.as_str()),
            "{backend}: {what} was read through a link: {text}"
        );
    }
    {
        let dir = &outside;
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            !names
                .iter()
                .any(|n| n.to_string_lossy().starts_with("planted")),
            "{backend}: written through a link into {}: {names:?}",
            dir.display()
        );
    }
}

/// `text` reversed (a step prints a token so, past any mask).
fn reversed(text: &str) -> String {
    text.chars().rev().collect()
}

/// Neither `token` nor its reverse anywhere in `text`.
fn assert_absent(text: &str, tokens: &[String], what: &str) {
    for t in tokens {
        assert!(
            !text.contains(t.as_str()) && !text.contains(&reversed(t)),
            "{what}: {t} got through:\n{text}"
        );
    }
}

/// A workspace repository whose credentials sit in every configuration
/// file git reads for it: `.git/config` (an extra header, and users and
/// passwords in `http.proxy`, `lfs.url`, a `pushInsteadOf` value, a
/// `sendemail.smtpPass`), `.git/config.worktree`, an absorbed submodule's
/// `.git/modules/sub/config`, a linked worktree's `config.worktree`, and
/// files included relatively, through `~/` (`$HOME` above the workspace)
/// and by an `includeIf`; and a credential store's file in the workspace
/// (`credential.helper = store --file conf/creds.cfg`). Returns the tokens and the files with their bytes.
fn credentials_everywhere(env: &Env) -> (Vec<String>, Vec<(PathBuf, Vec<u8>)>) {
    let t: Vec<String> = (0..11).map(|i| marker(&format!("TOK{i}X"))).collect();
    let above = env.ws.parent().unwrap();
    let src = above.join("subsrc");
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q", "-b", "main"]);
    std::fs::write(src.join("s.txt"), "s\n").unwrap();
    git(&src, &["add", "s.txt"]);
    git(&src, &["commit", "-qm", "s"]);
    git(&env.ws, &["init", "-q", "-b", "main"]);
    env.write("a.txt", "one\n");
    git(&env.ws, &["add", "a.txt"]);
    git(&env.ws, &["commit", "-qm", "init"]);
    git(
        &env.ws,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &src.display().to_string(),
            "sub",
        ],
    );
    git(&env.ws, &["commit", "-qm", "sub"]);
    git(
        &env.ws,
        &[
            "worktree",
            "add",
            "-q",
            &above.join("wt").display().to_string(),
        ],
    );
    let header = |tok: &str| format!("AUTHORIZATION: basic {tok}");
    let set = |dir: &Path, k: &str, v: &str| git(dir, &["config", k, v]);
    set(
        &env.ws,
        "http.https://github.com/.extraheader",
        &header(&t[0]),
    );
    set(
        &env.ws.join("sub"),
        "http.https://github.com/.extraheader",
        &header(&t[1]),
    );
    let cfgs = env.ws.join(".git");
    let hdr = |tok: &str| {
        format!("[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic {tok}\n")
    };
    std::fs::write(cfgs.join("config.worktree"), hdr(&t[2])).unwrap();
    std::fs::write(cfgs.join("worktrees/wt/config.worktree"), hdr(&t[3])).unwrap();
    env.write("conf/inc.cfg", &hdr(&t[4]));
    env.write("conf/home.cfg", &hdr(&t[5]));
    env.write("conf/if.cfg", &hdr(&t[6]));
    set(&env.ws, "include.path", "../conf/inc.cfg");
    set(&env.ws, "includeIf.gitdir:/.path", "../conf/if.cfg");
    git(
        &env.ws,
        &["config", "--add", "include.path", "~/ws/conf/home.cfg"],
    );
    set(
        &env.ws,
        "http.proxy",
        &format!("http://u:{}@127.0.0.1:9", t[7]),
    );
    set(
        &env.ws,
        "lfs.url",
        &format!("https://u:{}@h.example/o/r", t[8]),
    );
    set(
        &env.ws,
        "url.https://h.example/.pushInsteadOf",
        &format!("https://x:{}@h.example/", t[9]),
    );
    git(
        &env.ws,
        &["config", "sendemail.smtpPass", &format!("{}Z", t[9])],
    );
    // A credential store's file in the workspace.
    env.write(
        "conf/creds.cfg",
        &format!("https://u:{}@h.example\n", t[10]),
    );
    set(&env.ws, "credential.helper", "store --file conf/creds.cfg");
    let files: Vec<(PathBuf, Vec<u8>)> = [
        cfgs.join("config"),
        cfgs.join("config.worktree"),
        cfgs.join("modules/sub/config"),
        cfgs.join("worktrees/wt/config.worktree"),
        env.ws.join("conf/inc.cfg"),
        env.ws.join("conf/home.cfg"),
        env.ws.join("conf/if.cfg"),
        env.ws.join("conf/creds.cfg"),
    ]
    .into_iter()
    .map(|p| {
        let b = std::fs::read(&p).unwrap();
        (p, b)
    })
    .collect();
    (t, files)
}

/// Every configuration file git reads for the workspace, its submodules
/// and its worktrees, and every key whose value carries a credential: none
/// readable by a safe step (printed as is and reversed), every file put
/// back byte for byte at the end, the report naming each.
pub fn git_credentials_in_every_configuration_file_are_withheld(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (tokens, files) = credentials_everywhere(&env);
    let cmd = "set +e; { for f in $(find .git conf -type f \\( -name 'config*' -o -name '*.cfg' \\)); do echo \"== $f\"; cat \"$f\"; done; git config --list --show-origin; git -C sub config --list; git -C sub config --get-all http.https://github.com/.extraheader; } 2>&1 | tee /dev/stderr | rev; true";
    let yaml = format!(
        "version: 1\nid: cr\npolicy: {{risk_tolerance: high}}\nsteps:\n  - {{id: look, tool: bash, parameters: {{command: {}}}}}\n",
        q(cmd)
    );
    let plan = env.write("plan.yaml", &yaml);
    let o = env
        .cmd()
        .env("HOME", env.ws.parent().unwrap())
        .args([
            "run",
            "--sandbox-backend",
            flag,
            "--approve",
            "look",
            "--workspace",
        ])
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .arg(&plan)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let look = std::fs::read_to_string(env.out.join("artifacts/look/stdout.txt")).unwrap();
    // The step ran and read the files.
    assert!(look.contains(&reversed("[core]")), "{backend}: {look}");
    assert!(
        look.contains(&reversed("== .git/modules/sub/config")),
        "{backend}: {look}"
    );
    assert_absent(&everything(&env, &o), &tokens, backend);
    // Put back as they were.
    for (p, bytes) in &files {
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{backend}: {}",
            p.display()
        );
    }
    // The report names each file.
    let r = env.report()["git_credentials_withheld"].to_string();
    for f in [
        "(.git/config)",
        "(.git/config.worktree)",
        "(.git/modules/sub/config)",
        "(.git/worktrees/wt/config.worktree)",
        "(conf/inc.cfg)",
        "(conf/home.cfg)",
        "(conf/if.cfg)",
        "credential.helper (conf/creds.cfg)",
        "http.proxy",
        "lfs.url",
        "pushinsteadof",
        "sendemail.smtppass",
    ] {
        assert!(r.contains(f), "{backend}: {f} not in {r}");
    }
}

/// The backup of the withheld credentials lies where no step may be
/// granted: a step declaring plangate's temporary folder (or a folder
/// above it) readable is refused, saying why, and reads nothing of it.
pub fn a_step_cannot_be_granted_the_backup_of_the_withheld_credentials(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let token = marker("BACKUPTOK");
    git(&env.ws, &["init", "-q", "-b", "main"]);
    git(
        &env.ws,
        &[
            "config",
            "http.https://github.com/.extraheader",
            &format!("AUTHORIZATION: basic {token}"),
        ],
    );
    let tmp = env.tmp().display().to_string();
    let cmd = format!(
        "set +e; for f in {t}/plangate-* {t}/plangate-*/*; do cat \"$f\"; done 2>/dev/null | rev; true",
        t = tmp
    );
    for (i, granted) in [
        tmp.clone(),
        env.tmp().parent().unwrap().display().to_string(),
    ]
    .iter()
    .enumerate()
    {
        let yaml = format!(
            "version: 1\nid: bk\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: look\n    tool: bash\n    parameters: {{command: {}, readable: [{}]}}\n",
            q(&cmd),
            q(granted)
        );
        let o = run(&env, flag, &yaml, &["--approve", "look"]);
        assert_absent(&everything(&env, &o), std::slice::from_ref(&token), backend);
        let look = env.step("look").to_string();
        assert!(
            look.contains("plangate's private folder"),
            "{backend} ({i}): {look}"
        );
        assert_ne!(code(&o), 0, "{backend} ({i})");
    }
    // A narrower path outside is still granted.
    let mine = env.ws.parent().unwrap().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    let yaml = format!(
        "version: 1\nid: bk\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: look\n    tool: bash\n    parameters: {{command: 'true', readable: [{}]}}\n",
        q(&mine.display().to_string())
    );
    let o = run(&env, flag, &yaml, &["--approve", "look"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
}

/// A hard link a moderate step makes to `.git/config` holds no credential
/// after the run (they are put back as a new file), and a `.git/config`
/// that already has another name is refused before any step runs.
pub fn a_hard_link_to_the_git_config_never_gets_the_credential(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let token = marker("LINKTOK");
    git(&env.ws, &["init", "-q", "-b", "main"]);
    git(
        &env.ws,
        &[
            "config",
            "http.https://github.com/.extraheader",
            &format!("AUTHORIZATION: basic {token}"),
        ],
    );
    let before = std::fs::read(env.ws.join(".git/config")).unwrap();
    let yaml = "version: 1\nid: ln\npolicy: {risk_tolerance: high}\nsteps:\n  - {id: link, tool: bash, parameters: {command: 'ln .git/config cfglink || true', security_level: moderate}}\n";
    let o = run(&env, flag, yaml, &["--approve", "link"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    assert_eq!(
        std::fs::read(env.ws.join(".git/config")).unwrap(),
        before,
        "{backend}"
    );
    if let Ok(linked) = std::fs::read_to_string(env.ws.join("cfglink")) {
        assert!(!linked.contains(&token), "{backend}: {linked}");
    }
    let _ = std::fs::remove_file(env.ws.join("cfglink"));
    // A second name made before the run: refused, nothing rewritten.
    let other = env.ws.parent().unwrap().join("other-name");
    std::fs::hard_link(env.ws.join(".git/config"), &other).unwrap();
    let o = run(&env, flag, yaml, &["--approve", "link"]);
    assert_eq!(code(&o), 2, "{backend}: {}", stderr(&o));
    assert!(
        stderr(&o).contains("hard links"),
        "{backend}: {}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(env.ws.join(".git/config")).unwrap(),
        before,
        "{backend}"
    );
    assert!(!env.ws.join("cfglink").exists(), "{backend}: the step ran");
}
