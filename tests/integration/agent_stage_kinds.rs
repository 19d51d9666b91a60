//! The two kinds of an agent CLI's stage (`PLANGATE_STAGE=copy`, and
//! `overlay` where this machine allows unprivileged overlay mounts) through
//! the binary: the same change set for every kind of change, a rejected
//! answer leaves the workspace byte-identical, a retry starts clean, and a
//! path the rules deny is unreadable from inside by every route. The stand-in
//! CLI: tests/fixtures/agents/stage_kinds_cli.sh. The rest of the agent
//! tests run under either kind with `PLANGATE_TEST_STAGE=copy|overlay`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent_stage::{GOOD, MEDIUM, Staged, changed, differences, tree};
use crate::harness::{Env, code, stderr};

const BAD: &str = "no envelope here\n";

/// Whether the overlay stage works on this machine (else only the copy is tried).
fn overlay_works() -> bool {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    let (_cfg, plan) = setup(&env, "dirty", GOOD, 1, MEDIUM);
    let o = run_kind(&env, &plan, "overlay", &[]);
    let works = code(&o) == 0;
    if !works {
        eprintln!("overlay stage not available here: {}", stderr(&o));
    }
    works
}

fn kinds() -> Vec<&'static str> {
    if overlay_works() {
        vec!["copy", "overlay"]
    } else {
        vec!["copy"]
    }
}

fn setup(env: &Env, mode: &str, answer: &str, attempts: u32, policy: &str) -> (PathBuf, String) {
    let cfg = env.ws.parent().unwrap().join("stage-cli");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("mode"), mode).unwrap();
    std::fs::write(cfg.join("answer"), answer).unwrap();
    std::fs::write(cfg.join("workspace"), env.ws.display().to_string()).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agents/stage_kinds_cli.sh"
    );
    let plan = format!(
        "version: 1\nid: kinds\npolicy: {policy}\nagents:\n  editor:\n    command: [bash, {script:?}, {:?}]\n    timeout: 60\nsteps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: editor\n      prompt: Fix the files.\n      max_attempts: {attempts}\n",
        cfg.display().to_string()
    );
    (cfg, plan)
}

fn run_kind(env: &Env, plan: &str, kind: &str, args: &[&str]) -> std::process::Output {
    let plan = env.write("plan.yaml", plan);
    let mut c = env.cmd();
    c.env("PLANGATE_STAGE", kind)
        .arg("run")
        .arg(&plan)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .args(args)
        .timeout(std::time::Duration::from_secs(120));
    c.output().expect("run")
}

/// A workspace with an entry for every kind of change the stand-in makes.
fn every_kind_workspace(env: &Env) {
    use std::os::unix::fs::PermissionsExt;
    for (p, c) in [
        ("a.txt", "alpha\n"),
        ("b.txt", "beta\n"),
        ("dir/x.txt", "x\n"),
        ("dir/y.txt", "y\n"),
        ("run.sh", "echo run\n"),
        ("keep.txt", "keep\n"),
        ("same.txt", "same\n"),
        ("gone/g1.txt", "g1\n"),
        ("gone/sub/g2.txt", "g2\n"),
        ("moved/m.txt", "m\n"),
        ("redo/old.txt", "old\n"),
        ("todir/t.txt", "t\n"),
        ("target.txt", "target\n"),
    ] {
        env.write(p, c);
    }
    for p in ["run.sh", "same.txt"] {
        std::fs::set_permissions(env.ws.join(p), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    std::os::unix::fs::symlink("target.txt", env.ws.join("link.txt")).unwrap();
}

fn sorted(step: &Value) -> Vec<(String, String)> {
    let mut c = changed(step);
    c.sort();
    c
}

/// A run's change list and the workspace after it.
type Seen = (Vec<(String, String)>, BTreeMap<String, String>);

#[test]
fn every_kind_of_change_is_seen_the_same_under_each_stage() {
    let mut seen: BTreeMap<&str, Seen> = BTreeMap::new();
    for kind in kinds() {
        let env = Env::new();
        every_kind_workspace(&env);
        let (_cfg, plan) = setup(&env, "every-kind", GOOD, 1, MEDIUM);
        let o = run_kind(&env, &plan, kind, &[]);
        assert_eq!(code(&o), 0, "{kind}: {}", stderr(&o));
        let step = env.step("fix");
        assert_eq!(step["agent_changes"]["stage"], kind, "{kind}: {step:#}");
        let files = sorted(&step);
        let expected: Vec<(String, String)> = [
            ("a.txt", "modified"),
            ("b.txt", "deleted"),
            ("dir/x.txt", "deleted"),
            ("dir/z.txt", "added"),
            ("gone/g1.txt", "deleted"),
            ("gone/sub/g2.txt", "deleted"),
            ("link.txt", "modified"),
            ("moved/m.txt", "deleted"),
            ("new/n.txt", "added"),
            ("redo/new.txt", "added"),
            ("redo/old.txt", "deleted"),
            ("renamed/m.txt", "added"),
            ("run.sh", "modified"),
            ("todir", "modified"),
            ("todir/t.txt", "deleted"),
        ]
        .iter()
        .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
        .collect();
        assert_eq!(files, expected, "{kind}");
        let t = tree(&env.ws);
        assert_eq!(t["a.txt"], "file 644 alpha edited\n", "{kind}");
        assert_eq!(t["run.sh"], "file 755 echo run\n", "{kind}");
        assert_eq!(t["link.txt"], "link a.txt", "{kind}");
        assert_eq!(t["todir"], "file 644 f\n", "{kind}");
        assert!(
            !t.contains_key("b.txt") && !t.contains_key("gone"),
            "{kind}"
        );
        seen.insert(kind, (files, t));
    }
    if let (Some(copy), Some(overlay)) = (seen.get("copy"), seen.get("overlay")) {
        assert_eq!(copy.0, overlay.0);
        assert_eq!(differences(&copy.1, &overlay.1), Vec::<String>::new());
    }
}

#[test]
fn a_rejected_answer_leaves_the_workspace_byte_identical_under_each_stage() {
    for kind in kinds() {
        let env = Env::new();
        every_kind_workspace(&env);
        let (_cfg, plan) = setup(&env, "every-kind", BAD, 2, MEDIUM);
        let before = tree(&env.ws);
        let o = run_kind(&env, &plan, kind, &[]);
        assert_eq!(code(&o), 5, "{kind}: {}", stderr(&o));
        assert_eq!(
            differences(&before, &tree(&env.ws)),
            Vec::<String>::new(),
            "{kind}"
        );
        let step = env.step("fix");
        assert_eq!(step["status"], "rejected", "{kind}");
        for a in step["agent_attempts"].as_array().unwrap() {
            // Every attempt made (and had discarded) the same 15 file changes: each started clean.
            assert_eq!(a["discarded_changes"], 15, "{kind}: {a}");
        }
    }
}

#[test]
fn a_retry_starts_clean_under_each_stage() {
    for kind in kinds() {
        let s = Staged::new();
        s.call(1, &["expect-clean", "edit"], "not an answer\n")
            .call(2, &["expect-clean", "edit2"], GOOD);
        let plan = s.plan(MEDIUM, 2, "");
        let o = run_kind(&s.env, &plan, kind, &[]);
        assert_eq!(code(&o), 0, "{kind}: {}", stderr(&o));
        let step = s.env.step("fix");
        assert_eq!(
            changed(&step),
            vec![
                ("a.txt".to_owned(), "modified".to_owned()),
                ("d/e.txt".to_owned(), "added".to_owned()),
            ],
            "{kind}"
        );
        assert_eq!(step["agent_changes"]["stage"], kind, "{kind}");
        assert_eq!(step["agent_attempts"][0]["discarded_changes"], 4, "{kind}");
        let ws = &s.env.ws;
        assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "beta\n");
        assert!(
            !ws.join("c.txt").exists() && !ws.join("new").exists(),
            "{kind}"
        );
    }
}

fn peek(kind: &str, backend: &str) -> Option<String> {
    let env = Env::new();
    env.write("a.txt", "alpha\n");
    env.write("secret/key", "TOPSECRET-7f3a key\n");
    env.write(".env", "TOPSECRET-7f3a env\n");
    let policy = "{risk_tolerance: medium, permissions: [{id: all, resource: '**', level: admin, priority: 10}, {id: hide, resource: 'secret/**', level: none, priority: 90}, {id: hide-env, resource: '.env', level: none, priority: 90}]}";
    let (_cfg, plan) = setup(&env, "peek", GOOD, 1, policy);
    let approve: &[&str] = if backend == "landlock" {
        &["--approve", "fix"]
    } else {
        &[]
    };
    let o = run_kind(
        &env,
        &plan,
        kind,
        &[&["--sandbox-backend", backend][..], approve].concat(),
    );
    if code(&o) != 0 && stderr(&o).contains("backend") {
        eprintln!("{backend} not usable here: {}", stderr(&o));
        return None;
    }
    assert_eq!(code(&o), 0, "{kind} {backend}: {}", stderr(&o));
    assert_eq!(env.step("fix")["agent_changes"]["stage"], kind);
    Some(std::fs::read_to_string(Path::new(&env.ws).join("peek.txt")).unwrap())
}

#[test]
fn a_denied_path_is_unreadable_from_inside_under_each_stage_and_backend() {
    let mut tried = 0;
    for kind in kinds() {
        for backend in ["bwrap", "landlock"] {
            let Some(peeked) = peek(kind, backend) else {
                continue;
            };
            tried += 1;
            assert!(
                peeked.contains("control: alpha"),
                "{kind} {backend}: {peeked}"
            );
            assert!(
                !peeked.contains("TOPSECRET"),
                "{kind} {backend}: a denied file was read: {peeked}"
            );
            assert!(!peeked.contains("key "), "{kind} {backend}: {peeked}");
        }
    }
    assert!(tried > 0, "no sandbox backend works here");
}
