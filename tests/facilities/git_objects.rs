//! A path the permission rules deny reading stays unread through git's
//! object store (issue 23): when git holds such a path (in the index or any
//! commit reachable from a ref or a reflog, a file deleted long ago
//! included), the store is hidden from bash steps and agent CLIs alike, on
//! both backends, and the step is told why. Without such a path steps
//! still read the history.
//!
//! Payloads only read marker files the test committed in its own
//! workspace; every marker is random, and the test looks for it in
//! everything the run left (report, artifacts, diff, console).

use crate::facility::{Backend, all_text, marker, q, shell_quote};
use crate::harness::{Env, code, git, stderr};

/// The repository: `secrets/key.txt` (its first version packed by `git gc`,
/// its second loose), `gone/old.txt` committed then deleted from `HEAD`, and
/// a readable `a.txt`. Returns (key marker, gone marker, readable marker).
fn repository(env: &Env) -> (String, String, String) {
    let (key, gone, ok) = (marker("KEYOBJ"), marker("GONEOBJ"), marker("READOBJ"));
    git(&env.ws, &["init", "-q"]);
    env.write(".gitignore", "plan.yaml\n");
    env.write("secrets/key.txt", &format!("{key}\n"));
    env.write("gone/old.txt", &format!("{gone}\n"));
    env.write("a.txt", &format!("{ok}\n"));
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "one"]);
    git(&env.ws, &["rm", "-rq", "gone"]);
    git(&env.ws, &["commit", "-qm", "two"]);
    git(&env.ws, &["gc", "-q"]);
    env.write("secrets/key.txt", &format!("{key}\nv2\n"));
    git(&env.ws, &["commit", "-qam", "three"]);
    (key, gone, ok)
}

/// A probe (`probe/git-read.sh`, committed nowhere: written after) that
/// tries every way through git's object store, errors kept out.
fn probe(env: &Env) {
    let py = r#"
import os, sys, zlib
for root, dirs, files in os.walk('.git'):
    for f in files:
        p = os.path.join(root, f)
        try:
            data = open(p, 'rb').read()
        except OSError:
            continue
        if '/objects/' in p and not p.endswith(('.pack', '.idx')):
            try:
                sys.stdout.write(zlib.decompress(data).decode('latin1') + '\n')
            except Exception:
                pass
        if p.endswith('.pack'):
            for i in range(len(data)):
                try:
                    d = zlib.decompressobj().decompress(data[i:i + 4096])
                except Exception:
                    continue
                if d:
                    sys.stdout.write(d.decode('latin1') + '\n')
"#;
    let script = format!(
        r#"exec 2>/dev/null
cat a.txt
echo READER-RAN
git show HEAD:secrets/key.txt
git show HEAD~2:gone/old.txt
git cat-file --batch-all-objects --batch
git rev-list --all --objects | cut -d' ' -f1 | git cat-file --batch
git log -p --all
git grep -h . HEAD HEAD~2
git archive HEAD~2 | tar -xO
git clone -q --no-local . "$TMPDIR/c" && cat "$TMPDIR/c/secrets/key.txt"
for p in .git/objects/pack/*.pack; do
  git verify-pack -v "${{p%.pack}}.idx"
  rm -rf "$TMPDIR/u"; git init -q "$TMPDIR/u" && git -C "$TMPDIR/u" unpack-objects -q < "$p" && git -C "$TMPDIR/u" cat-file --batch-all-objects --batch
done
python3 -c {py}
true
"#,
        py = shell_quote(py)
    );
    env.write("probe/git-read.sh", &script);
}

const DENY: &str = "  permissions:\n    - {id: all, resource: '*', level: admin}\n    - {id: no-secrets, resource: 'secrets/**', level: none, priority: 200}\n    - {id: no-gone, resource: 'gone/**', level: none, priority: 200}\n";

fn run_plan(
    env: &Env,
    flag: &str,
    yaml: &str,
    ids: &str,
    stage: Option<&str>,
) -> std::process::Output {
    let plan = env.write("plan.yaml", yaml);
    let mut c = env.cmd();
    if let Some(kind) = stage {
        c.env("PLANGATE_STAGE", kind);
    }
    c.arg("run")
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(["--sandbox-backend", flag, "--approve", ids])
        .timeout(std::time::Duration::from_secs(180))
        .output()
        .unwrap()
}

fn assert_unread(backend: &str, what: &str, text: &str, markers: &[&str]) {
    for m in markers {
        assert!(
            !text.contains(m),
            "{backend}: {what} read {m} through git:\n{text}"
        );
    }
}

fn assert_told(backend: &str, step: &serde_json::Value, console: &str) {
    let warnings = step["warnings"].to_string();
    assert!(
        warnings.contains("object store of `.git` is hidden"),
        "{backend}: {step}"
    );
    assert!(warnings.contains("`gone/old.txt`"), "{backend}: {warnings}");
    assert!(
        console.contains("object store of `.git` is hidden"),
        "{backend}: {console}"
    );
}

/// A bash step whose rules deny `secrets/**` and `gone/**` (both held by
/// git, `gone/` only in an older commit) tries the whole family: `git show`,
/// `cat-file --batch-all-objects`, `log -p --all`, `grep`, `archive`, a
/// clone, the packs through `verify-pack` and `unpack-objects`, zlib over
/// every loose object and every offset of every pack. No marker reaches the
/// report, the artifacts, the diff or the console; the step is told why.
/// A rollback runs in the same sandbox. Then the control ([`control`]).
pub fn a_bash_step_reads_no_denied_path_through_the_object_store(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (key, gone, ok) = repository(&env);
    probe(&env);
    let rollback = "bash probe/git-read.sh > \"$PLANGATE_STEP_ARTIFACTS/rb.txt\"";
    let yaml = format!(
        "version: 1\nid: go\npolicy:\n  risk_tolerance: high\n{DENY}steps:\n  - id: look\n    tool: bash\n    rollback_command: {}\n    parameters: {{command: 'bash probe/git-read.sh'}}\n  - id: boom\n    tool: bash\n    dependencies: [look]\n    parameters: {{command: 'exit 3'}}\n",
        q(rollback)
    );
    let o = run_plan(&env, flag, &yaml, "look,boom", None);
    assert_eq!(code(&o), 1, "{backend}: {}", stderr(&o));
    let look = env.step("look");
    assert_eq!(look["status"], "success", "{backend}: {look}");
    assert_eq!(look["sandbox"]["enforcement"], backend, "{look}");
    assert_eq!(look["rollback"]["status"], "success", "{backend}: {look}");
    let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    let text = format!("{}\n{console}", all_text(&env.out));
    assert!(text.contains("READER-RAN"), "{backend}: {text}");
    assert!(
        text.contains(&ok),
        "{backend}: the probe read a.txt:\n{text}"
    );
    assert_unread(
        backend,
        "a bash step or its rollback",
        &text,
        &[&key, &gone],
    );
    assert_told(backend, &look, &console);
    control(flag, backend);
}

/// Control: the same repository with rules that deny a path git does not
/// hold (`private/`, untracked and ignored) leaves the object store
/// readable: `git show` prints the committed files, and no warning.
fn control(flag: &str, backend: &str) {
    let env = Env::new();
    let (key, gone, _) = repository(&env);
    env.write("private/notes.txt", "untracked\n");
    env.write(".gitignore", "plan.yaml\nprivate/\n");
    let deny = "  permissions:\n    - {id: all, resource: '*', level: admin}\n    - {id: no-private, resource: 'private/**', level: none, priority: 200}\n";
    let yaml = format!(
        "version: 1\nid: go\npolicy:\n  risk_tolerance: high\n{deny}steps:\n  - id: look\n    tool: bash\n    parameters: {{command: 'git show HEAD:secrets/key.txt; git show HEAD~2:gone/old.txt; git status --short'}}\n"
    );
    let o = run_plan(&env, flag, &yaml, "look", None);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let look = env.step("look");
    assert_eq!(look["status"], "success", "{backend}: {look}");
    assert!(look.get("warnings").is_none(), "{backend}: {look}");
    let out = std::fs::read_to_string(env.out.join("artifacts/look/stdout.txt")).unwrap();
    assert!(
        out.contains(&key) && out.contains(&gone),
        "{backend}: {out}"
    );
}

/// A stand-in agent CLI runs the same probe in its staged copy (a copy and,
/// where the kernel allows it, an overlay), and writes what it read into
/// the copy, which plangate applies to the workspace: no marker.
pub fn an_agent_cli_reads_no_denied_path_through_the_object_store(b: Backend) {
    let (flag, backend) = b.pair();
    for stage in ["copy", "auto"] {
        let env = Env::new();
        let (key, gone, ok) = repository(&env);
        probe(&env);
        let cli = "cat > /dev/null; bash probe/git-read.sh > got.txt 2>&1; printf '%s' '{\"status\": \"OK\", \"summary\": \"done\", \"artifacts\": [], \"next_actions\": []}'";
        let yaml = format!(
            "version: 1\nid: ag\npolicy:\n  risk_tolerance: high\n{DENY}agents:\n  cli:\n    command: [bash, -c, {}]\n    timeout: 60\nsteps:\n  - {{id: ask, tool: agent, parameters: {{agent: cli, prompt: hi}}}}\n",
            q(cli)
        );
        let o = run_plan(&env, flag, &yaml, "ask", Some(stage));
        assert_eq!(code(&o), 0, "{backend} {stage}: {}", stderr(&o));
        let got =
            String::from_utf8_lossy(&std::fs::read(env.ws.join("got.txt")).unwrap()).into_owned();
        assert!(
            got.contains("READER-RAN") && got.contains(&ok),
            "{backend} {stage}: {got}"
        );
        let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        let text = format!("{got}\n{}\n{console}", all_text(&env.out));
        assert_unread(
            backend,
            &format!("an agent CLI ({stage})"),
            &text,
            &[&key, &gone],
        );
        assert_told(backend, &env.step("ask"), &console);
    }
}

/// The same through other git directories of the workspace: its `.git` is a
/// file leading to `store/real.git` (`--separate-git-dir`), and a nested
/// repository `vendor/lib` holds `vendor/lib/secrets/lib.txt`. Both stores
/// are hidden (zlib over every file of the workspace finds no marker), and
/// the step is told of each.
pub fn nested_and_separate_git_directories_hide_their_stores_too(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (top, lib) = (marker("SEPOBJ"), marker("LIBOBJ"));
    std::fs::create_dir_all(env.ws.join("store")).unwrap();
    git(
        &env.ws,
        &["init", "-q", "--separate-git-dir=store/real.git"],
    );
    env.write(".gitignore", "plan.yaml\nprobe/\nvendor/\n");
    env.write("secrets/key.txt", &format!("{top}\n"));
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-qm", "one"]);
    let nested = env.ws.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    env.write("vendor/lib/secrets/lib.txt", &format!("{lib}\n"));
    git(&nested, &["add", "."]);
    git(&nested, &["commit", "-qm", "one"]);
    let py = r"
import os, sys, zlib
for root, dirs, files in os.walk('.'):
    for f in files:
        try:
            sys.stdout.write(zlib.decompress(open(os.path.join(root, f), 'rb').read()).decode('latin1') + '\n')
        except Exception:
            pass
";
    env.write(
        "probe/walk.sh",
        &format!(
            "exec 2>/dev/null\necho READER-RAN\ngit show HEAD:secrets/key.txt\ngit -C vendor/lib show HEAD:secrets/lib.txt\ngit -C vendor/lib log -p\ngit --git-dir=store/real.git cat-file --batch-all-objects --batch\npython3 -c {}\ntrue\n",
            shell_quote(py)
        ),
    );
    let deny = "  permissions:\n    - {id: all, resource: '*', level: admin}\n    - {id: no-secrets, resource: 'secrets/**', level: none, priority: 200}\n    - {id: no-lib, resource: 'vendor/lib/secrets/**', level: none, priority: 200}\n";
    let yaml = format!(
        "version: 1\nid: go\npolicy:\n  risk_tolerance: high\n{deny}steps:\n  - {{id: look, tool: bash, parameters: {{command: 'bash probe/walk.sh'}}}}\n"
    );
    let o = run_plan(&env, flag, &yaml, "look", None);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let look = env.step("look");
    assert_eq!(look["status"], "success", "{backend}: {look}");
    let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    let text = format!("{}\n{console}", all_text(&env.out));
    assert!(text.contains("READER-RAN"), "{backend}: {text}");
    assert_unread(backend, "a bash step", &text, &[&top, &lib]);
    let warnings = look["warnings"].to_string();
    for store in ["store/real.git", "vendor/lib/.git"] {
        assert!(
            warnings.contains(&format!("object store of `{store}` is hidden")),
            "{backend}: {warnings}"
        );
    }
}
