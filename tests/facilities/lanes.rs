//! Resident bwrap sandboxes ("walled lanes"): the bwrap steps of a run whose
//! sandbox is the same run in one sandbox, in turn, and each still gets its
//! own artifact folder, an empty TMPDIR and shared-memory folder, nothing
//! left running by the step before, the workspace its profile grants, and
//! no path the permission rules hide, even one replaced or added on the
//! host between two steps.
//!
//! Which sandbox a step ran in is its pid namespace
//! and the start time of its first process (a namespace's number is reused
//! once it is gone): the same pair means the same sandbox.
//! Payloads touch marker files in the test's own workspace only.

use crate::harness::{Env, code, stderr};

fn run(env: &Env, yaml: &str) -> std::process::Output {
    env.run(yaml, &["--sandbox-backend", "bwrap"])
}

/// The step's own file of its artifact folder.
fn artifact(env: &Env, step: &str, name: &str) -> String {
    std::fs::read_to_string(env.out.join(format!("artifacts/{step}/{name}"))).unwrap_or_default()
}

/// The sandbox the step ran in (written by the step to `ns`): its pid
/// namespace and the start time of the namespace's first process.
fn ns(env: &Env, step: &str) -> String {
    let n = artifact(env, step, "ns");
    assert!(
        n.starts_with("pid:[")
            && n.split_whitespace()
                .nth(1)
                .is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit())),
        "step {step} wrote no namespace: {n:?}"
    );
    n
}

/// A chain of `(id, command)` steps, each depending on the one before.
fn chain(policy: &str, steps: &[(&str, &str)]) -> String {
    let mut s = format!("version: 1\nid: lanes\npolicy:\n{policy}steps:\n");
    let mut prev: Option<&str> = None;
    for (id, cmd) in steps {
        let deps = prev.map_or(String::new(), |p| format!("dependencies: [{p}], "));
        s.push_str(&format!(
            "  - {{id: {id}, tool: bash, {deps}parameters: {{command: {}}}}}\n",
            serde_json::to_string(cmd).unwrap()
        ));
        prev = Some(id);
    }
    s
}

const HIGH: &str = "  risk_tolerance: high\n";

pub fn a_chain_of_bwrap_steps_shares_one_sandbox_and_each_step_starts_clean() {
    let env = Env::new();
    env.write(
        "probe/first.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\n\
         echo one > \"$PLANGATE_STEP_ARTIFACTS/mine.txt\"\n\
         mkdir \"$PLANGATE_STEP_ARTIFACTS/sub\" && echo deep > \"$PLANGATE_STEP_ARTIFACTS/sub/d.txt\"\n\
         ln -s /etc/hostname \"$PLANGATE_STEP_ARTIFACTS/link\"\n\
         echo k=v >> \"$PLANGATE_OUTPUT\"\n\
         echo left > \"$TMPDIR/left\"\n\
         echo left > /dev/shm/left\n\
         setsid sleep 31.5 >/dev/null 2>&1 < /dev/null &\n\
         echo started\n",
    );
    env.write(
        "probe/next.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\n\
         test -d \"$TMPDIR\" && test -z \"$(ls -A \"$TMPDIR\")\" && echo TMP-EMPTY\n\
         test ! -e /dev/shm/left && echo SHM-EMPTY\n\
         if pgrep -f 'sleep 31.5' >/dev/null; then echo SLEEPER-ALIVE; else echo SLEEPER-GONE; fi\n\
         echo \"got:$PLANGATE_OUTPUT_FIRST_K\"\n\
         echo \"own:$(ls -A \"$PLANGATE_STEP_ARTIFACTS\" | tr '\\n' ' ')\"\n",
    );
    let yaml = chain(
        HIGH,
        &[
            ("first", "bash probe/first.sh"),
            ("next", "bash probe/next.sh"),
            ("third", "bash probe/next.sh"),
        ],
    );
    let o = run(&env, &yaml);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.report()["sandbox"]["available"], "bwrap");
    // One sandbox for the three.
    assert_eq!(ns(&env, "first"), ns(&env, "next"));
    assert_eq!(ns(&env, "next"), ns(&env, "third"));
    // What the first wrote is in its own artifact folder (and swept: the link is gone).
    assert_eq!(artifact(&env, "first", "mine.txt"), "one\n");
    assert_eq!(artifact(&env, "first", "sub/d.txt"), "deep\n");
    assert!(
        env.out
            .join("artifacts/first/link")
            .symlink_metadata()
            .is_err(),
        "a link in the artifact folder survived the sweep"
    );
    // `$PLANGATE_OUTPUT` reached the dependent step.
    assert!(artifact(&env, "next", "stdout.txt").contains("got:v"));
    // Its sleeper was killed, counted, and gone before the next step started.
    let first = env.step("first");
    assert_eq!(first["lingering_processes"], 1, "{first}");
    for step in ["next", "third"] {
        let out = artifact(&env, step, "stdout.txt");
        for want in ["TMP-EMPTY", "SHM-EMPTY", "SLEEPER-GONE"] {
            assert!(out.contains(want), "{step}: {want}: {out}");
        }
        assert!(
            !out.contains("mine.txt") && !out.contains("sub"),
            "{step}: {out}"
        );
        assert_eq!(env.step(step)["status"], "success");
    }
    // The sandbox's own folders are gone with the run.
    let left: Vec<String> = std::fs::read_dir(&env.out)
        .unwrap()
        .chain(std::fs::read_dir(env.tmp()).unwrap())
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("plangate-lane-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Again into the same output folder: the earlier run's files in each
    // artifact folder are not taken for files the step wrote.
    let o = run(&env, &yaml);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(ns(&env, "first"), ns(&env, "third"));
}

/// A script that `git diff` runs (a textconv driver the user configured):
/// the classifier rightly calls `git diff` safe; the script says which
/// sandbox it ran in and tries to write each path of `$WRITE_TARGETS`.
fn textconv_repo(env: &Env) {
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
    let tools = env.ws.join(".git/test-tools");
    std::fs::create_dir_all(&tools).unwrap();
    let conv = tools.join("conv.sh");
    std::fs::write(
        &conv,
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" >&2\nfor t in $WRITE_TARGETS; do\n  if { echo x > \"$t\"; } 2>/dev/null; then echo \"wrote $t\" >&2; else echo \"refused $t\" >&2; fi\ndone\ncat \"$1\"\n",
    )
    .unwrap();
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

pub fn a_safe_step_keeps_a_read_only_workspace_after_a_moderate_step_in_another_sandbox() {
    let env = Env::new();
    textconv_repo(&env);
    let ws = env.ws.display().to_string();
    let step = |id: &str, dep: Option<&str>, cmd: &str| {
        let deps = dep.map_or(String::new(), |d| format!("dependencies: [{d}], "));
        format!(
            "  - {{id: {id}, tool: bash, {deps}env: {{WRITE_TARGETS: {:?}}}, parameters: {{command: {cmd:?}}}}}\n",
            format!("{ws}/by-{id}.txt")
        )
    };
    let yaml = format!(
        "version: 1\nid: lanes\npolicy:\n{HIGH}steps:\n{}{}{}",
        step("look1", None, "git --no-pager diff"),
        step("change", Some("look1"), "git --no-pager diff > diff.out"),
        step("look2", Some("change"), "git --no-pager diff"),
    );
    let o = run(&env, &yaml);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = |id: &str| artifact(&env, id, "stderr.txt");
    let pidns = |id: &str| {
        err(id)
            .lines()
            .find(|l| l.starts_with("pid:["))
            .unwrap_or_else(|| panic!("{id}: {}", err(id)))
            .to_owned()
    };
    assert_eq!(
        env.step("look1")["sandbox"]["profile"]["filesystem"],
        "read-only"
    );
    assert_eq!(
        env.step("change")["sandbox"]["profile"]["filesystem"],
        "workspace-write"
    );
    // The moderate step wrote the workspace, in a sandbox of its own.
    assert!(env.ws.join("by-change.txt").exists(), "{}", err("change"));
    assert_ne!(pidns("look1"), pidns("change"));
    // The safe steps shared theirs, read-only both times.
    assert_eq!(pidns("look1"), pidns("look2"));
    for id in ["look1", "look2"] {
        assert!(
            err(id).contains(&format!("refused {ws}/by-{id}.txt")),
            "{id}: {}",
            err(id)
        );
        assert!(!env.ws.join(format!("by-{id}.txt")).exists());
    }
}

pub fn a_hidden_path_replaced_or_added_between_steps_stays_hidden() {
    let env = Env::new();
    env.write("secret.env", "MARKONE");
    env.write(
        "probe/read.sh",
        "cat secret.env other.env 2>/dev/null\necho \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\n",
    );
    let policy = "  risk_tolerance: high\n  permissions:\n    - {id: all, resource: '*', level: admin}\n    - {id: no-env, resource: '*.env', level: none, priority: 200}\n";
    // `swap` replaces the hidden file on the host (no sandbox); `add`
    // makes a new file the rules hide.
    let yaml = chain(
        policy,
        &[
            ("r1", "bash probe/read.sh"),
            ("swap", "printf MARKTWO > new.tmp && mv new.tmp secret.env"),
            ("r2", "bash probe/read.sh"),
            ("r3", "bash probe/read.sh"),
            ("add", "printf MARKTHREE > other.env"),
            ("r4", "bash probe/read.sh"),
        ],
    )
    .replace(
        "parameters: {command: \"printf MARKTWO",
        "parameters: {sandbox: false, command: \"printf MARKTWO",
    );
    let o = run(&env, &yaml);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(env.ws.join("secret.env")).unwrap(),
        "MARKTWO"
    );
    assert!(env.ws.join("other.env").exists());
    for id in ["r1", "r2", "r3", "r4"] {
        let out = artifact(&env, id, "stdout.txt");
        assert!(!out.contains("MARK"), "{id} read a hidden file: {out}");
        assert_eq!(env.step(id)["status"], "success");
    }
    // A bind follows the inode it was made on: the sandbox that hid the
    // replaced file does not serve again, nor one made before the new file.
    assert_ne!(ns(&env, "r1"), ns(&env, "r2"));
    assert_eq!(ns(&env, "r2"), ns(&env, "r3"));
    assert_ne!(ns(&env, "r3"), ns(&env, "r4"));
}

pub fn a_step_that_leaves_ipc_objects_or_changes_its_supervisor_does_not_hand_its_sandbox_on() {
    let env = Env::new();
    env.write(
        "probe/make.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\nipcmk -M 4096 && echo MADE\n",
    );
    env.write(
        "probe/list.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\necho \"objects:$(tail -n +2 /proc/sysvipc/shm | wc -l)\"\n",
    );
    // Tries to lower the lane's own open-file limit, which later steps would
    // inherit: refused (a step changes its own limits only).
    env.write(
        "probe/limit.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\nprlimit --pid 1 --nofile=64:64 && echo LIMITED\nulimit -n 100 && echo OWN\n",
    );
    env.write(
        "probe/files.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\necho \"nofile:$(ulimit -Hn)\"\n",
    );
    let yaml = chain(
        HIGH,
        &[
            ("list1", "bash probe/list.sh"),
            ("make", "bash probe/make.sh"),
            ("list2", "bash probe/list.sh"),
            ("limit", "bash probe/limit.sh"),
            ("files", "bash probe/files.sh"),
        ],
    );
    let o = run(&env, &yaml);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(artifact(&env, "make", "stdout.txt").contains("MADE"));
    // Clean steps hand the sandbox on; one that leaves a System V segment does not.
    assert_eq!(ns(&env, "list1"), ns(&env, "make"));
    assert_ne!(ns(&env, "make"), ns(&env, "list2"));
    assert!(artifact(&env, "list2", "stdout.txt").contains("objects:0"));
    // The lane's limits cannot be changed from a step; its own can.
    let limit = artifact(&env, "limit", "stdout.txt");
    assert!(
        !limit.contains("LIMITED") && limit.contains("OWN"),
        "{limit}"
    );
    assert_eq!(ns(&env, "list2"), ns(&env, "limit"));
    assert_eq!(ns(&env, "limit"), ns(&env, "files"));
    let files = artifact(&env, "files", "stdout.txt");
    assert!(
        files.contains("nofile:") && !files.contains("nofile:64\n"),
        "{files}"
    );
}

/// What the kernel lets a process of the same user change in another one
/// without a tracing right (scheduling policy, I/O priority, nice value) is
/// refused against the lane; what a step can still change that later steps
/// would inherit (CPU affinity, its session's autogroup nice value; as root,
/// the lane's out-of-memory score) ends the lane instead. The next
/// step starts as a fresh sandbox's would.
pub fn a_step_cannot_slow_or_mark_the_steps_after_it_in_its_sandbox() {
    let env = Env::new();
    env.write(
        "probe/tune.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\n\
         chrt -i -p 0 1 && echo DID-chrt\n\
         ionice -c 3 -p 1 && echo DID-ionice\n\
         renice -n 10 -p 1 && echo DID-renice\n\
         renice -n 10 -u \"$(id -u)\" && echo DID-renice-user\n\
         ionice -c 3 true && echo SELF-ionice\n",
    );
    env.write(
        "probe/group.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\n\
         echo 19 > /proc/self/autogroup\n\
         taskset -p 1 1 >/dev/null\n\
         (echo 900 > /proc/1/oom_score_adj) 2>/dev/null\n\
         true\n",
    );
    env.write(
        "probe/look.sh",
        "echo \"$(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)\" > \"$PLANGATE_STEP_ARTIFACTS/ns\"\n\
         chrt -p $$\nionice -p $$\ncat /proc/self/autogroup\ncat /proc/self/oom_score_adj\n",
    );
    let yaml = chain(
        HIGH,
        &[
            ("tune", "bash probe/tune.sh"),
            ("look1", "bash probe/look.sh"),
            ("group", "bash probe/group.sh"),
            ("look2", "bash probe/look.sh"),
        ],
    );
    let o = run(&env, &yaml);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let tune = artifact(&env, "tune", "stdout.txt");
    assert!(
        !tune.contains("DID-"),
        "a change of the lane was allowed: {tune}"
    );
    assert!(tune.contains("SELF-ionice"), "{tune}");
    // Nothing changed: the sandbox is handed on, and starts as it was.
    assert_eq!(ns(&env, "tune"), ns(&env, "look1"));
    assert_ne!(ns(&env, "group"), ns(&env, "look2"));
    for step in ["look1", "look2"] {
        let look = artifact(&env, step, "stdout.txt");
        assert!(look.contains("SCHED_OTHER"), "{step}: {look}");
        assert!(!look.contains("idle"), "{step}: {look}");
        assert!(!look.contains("nice 19"), "{step}: {look}");
        assert!(!look.contains("900"), "{step}: {look}");
    }
}

/// A process whose first thread exited while another runs shows as a
/// zombie: it is still killed and counted when its step ends.
pub fn a_process_whose_first_thread_exited_does_not_outlive_its_step() {
    let env = Env::new();
    // python3 is on every runner the tests support; the survivor's thread
    // writes a marker in the workspace every 100 ms.
    env.write(
        "probe/zl.py",
        "import ctypes, os, threading, time\n\
         def tick():\n\
         \x20   for _ in range(100):\n\
         \x20       with open('alive', 'a') as f: f.write('x')\n\
         \x20       time.sleep(0.1)\n\
         if os.fork() == 0:\n\
         \x20   threading.Thread(target=tick).start()\n\
         \x20   ctypes.CDLL(None).pthread_exit(None)\n",
    );
    let yaml = chain(HIGH, &[("zl", "python3 probe/zl.py; sleep 0.5")]);
    let o = run(&env, &yaml);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let alive = env.ws.join("alive");
    let before = size(&alive);
    assert!(before > 0, "the survivor never ran");
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(size(&alive), before, "a process outlived its step");
    // Killed at the step's end (not when its thread gave up ten seconds later).
    let step = env.step("zl");
    assert!(
        step["duration_ms"].as_u64().unwrap_or(u64::MAX) < 8000,
        "{step}"
    );
    assert!(
        step["lingering_processes"].as_u64().unwrap_or(0) >= 1,
        "{step}"
    );
}
