//! Issue 27's papercuts of the classifier, through the binary: writing into
//! the step's own folders (`$PLANGATE_STEP_ARTIFACTS`, `$TMPDIR`) is safe,
//! while a path that climbs out or a script that may change those variables
//! is judged as before; a git word only known at run time says how to write
//! it so it is judged, and that way works.

use crate::harness::{Env, bash_plan, code, stderr};
use serde_json::Value;

/// `plangate validate --format json` of `plan`, and each step's classified risk.
fn classified(env: &Env, plan: &str, args: &[&str]) -> (Value, Vec<(String, String)>) {
    let path = env.write("plan.yaml", plan);
    let o = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let risks = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["risk"]["classified"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (v, risks)
}

/// Every write form into the step's own folders, in one step each.
const INTO_OWN_FOLDERS: &[&str] = &[
    r#"echo a > "$PLANGATE_STEP_ARTIFACTS/a.txt""#,
    r#"echo b >> $PLANGATE_STEP_ARTIFACTS/b.txt"#,
    r#"echo c > ${PLANGATE_STEP_ARTIFACTS}/c.txt"#,
    r#"mkdir -p "$PLANGATE_STEP_ARTIFACTS"/sub/deep && echo d > "$PLANGATE_STEP_ARTIFACTS"/sub/deep/d.txt"#,
    r#"ls | tee "${PLANGATE_STEP_ARTIFACTS}/ls.txt""#,
    r#"cp README.md "$PLANGATE_STEP_ARTIFACTS/" && touch "$PLANGATE_STEP_ARTIFACTS/done""#,
    r#"echo x > "$TMPDIR/t" && sed -i s/x/y/ "$TMPDIR/t" && mv "$TMPDIR/t" "$PLANGATE_STEP_ARTIFACTS/moved.txt""#,
    r#"mkdir -p $TMPDIR/cache && echo z > ${TMPDIR}/cache/z && rm -rf "$TMPDIR/cache""#,
];

#[test]
fn writes_into_the_steps_own_folders_are_safe_and_run_at_low_tolerance() {
    let env = Env::new();
    env.write("README.md", "hello\n");
    let steps: Vec<(String, &str)> = INTO_OWN_FOLDERS
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("s{i}"), *c))
        .collect();
    let refs: Vec<(&str, &str)> = steps.iter().map(|(i, c)| (i.as_str(), *c)).collect();
    let plan = bash_plan(&refs).replace("risk_tolerance: high", "risk_tolerance: low");
    let (_, risks) = classified(&env, &plan, &[]);
    for ((id, risk), cmd) in risks.iter().zip(INTO_OWN_FOLDERS) {
        assert_eq!(risk, "safe", "{id}: `{cmd}`");
    }
    // And they run unattended at the lowest tolerance, in the read-only sandbox.
    let o = env.run(&plan, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let art = |s: &str, f: &str| std::fs::read_to_string(env.out.join("artifacts").join(s).join(f));
    assert_eq!(art("s0", "a.txt").unwrap(), "a\n");
    assert_eq!(art("s3", "sub/deep/d.txt").unwrap(), "d\n");
    assert_eq!(art("s5", "README.md").unwrap(), "hello\n");
    assert_eq!(art("s6", "moved.txt").unwrap(), "y\n");
}

#[test]
fn a_path_that_leaves_the_folder_or_a_script_that_moves_it_is_judged_by_where_it_lands() {
    let env = Env::new();
    let cases: &[(&str, &str)] = &[
        (r#"echo x > "$PLANGATE_STEP_ARTIFACTS/../x""#, "moderate"),
        (r#"cp a "$TMPDIR/../../usr/lib/x""#, "dangerous"),
        (
            r#"echo x > "$PLANGATE_STEP_ARTIFACTS${SUFFIX}/x""#,
            "moderate",
        ),
        (r#"echo x > "${PLANGATE_STEP_ARTIFACTS}x""#, "moderate"),
        (r#"echo x > "${TMPDIR:-/var}/x""#, "moderate"),
        (r#"TMPDIR=/var; echo x > "$TMPDIR/x""#, "moderate"),
        (r#"unset TMPDIR; echo x > $TMPDIR/x"#, "moderate"),
        (r#"read -r "TMP""DIR"; echo x > "$TMPDIR/x""#, "moderate"),
        (
            r#"f() { local TMPDIR; echo x > "$TMPDIR/x"; }; f"#,
            "moderate",
        ),
        (
            r#"bash -c 'PLANGATE_STEP_ARTIFACTS=/var; echo x > "$PLANGATE_STEP_ARTIFACTS/x"'"#,
            "moderate",
        ),
        (r#"cd "$TMPDIR" && echo x > x"#, "moderate"),
    ];
    let refs: Vec<(String, &str)> = cases
        .iter()
        .enumerate()
        .map(|(i, (c, _))| (format!("s{i}"), *c))
        .collect();
    let refs: Vec<(&str, &str)> = refs.iter().map(|(i, c)| (i.as_str(), *c)).collect();
    let (_, risks) = classified(&env, &bash_plan(&refs), &[]);
    for ((id, got), (cmd, want)) in risks.iter().zip(cases) {
        assert_eq!(got, want, "{id}: `{cmd}`");
    }
    // A climb to a protected place is blocked, whatever the approvals.
    let blocked = bash_plan(&[("up", r#"echo x > "$TMPDIR/../../etc/x""#)]);
    let (v, _) = classified(&env, &blocked, &["--approve", "up"]);
    assert_eq!(v["steps"][0]["approval"]["decision"], "blocked", "{v:#}");
}

#[test]
fn a_git_word_known_only_at_run_time_says_how_to_write_it_and_that_way_runs() {
    let env = Env::new();
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&env.ws)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    };
    git(&["init", "-q", "-b", "main"]);
    env.write("a.txt", "one\n");
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "one"]);
    git(&["checkout", "-q", "-b", "feature"]);
    env.write("a.txt", "two\n");
    git(&["commit", "-q", "-am", "two"]);
    let plan = |cmd: &str| {
        format!(
            "version: 1\nid: t\ninputs:\n  base: {{default: main}}\npolicy: {{risk_tolerance: low}}\nsteps:\n  - id: d\n    tool: bash\n    parameters: {{command: {}}}\n",
            serde_json::to_string(cmd).unwrap()
        )
    };
    let (v, risks) = classified(
        &env,
        &plan(r#"git diff "$PLANGATE_INPUT_BASE...HEAD""#),
        &[],
    );
    assert_eq!(risks[0].1, "dangerous");
    let reason = v["steps"][0]["approval"]["reason"].as_str().unwrap();
    let hint = reason
        .split("write `")
        .nth(1)
        .and_then(|r| r.split("` so git").next())
        .unwrap_or_else(|| panic!("no hint in: {reason}"));
    assert_eq!(
        hint,
        r#"git diff --end-of-options "$PLANGATE_INPUT_BASE...HEAD""#
    );
    assert!(reason.contains("`git` tool"), "{reason}");
    // The suggested form is judged a read, and runs unattended.
    let (_, risks) = classified(&env, &plan(hint), &[]);
    assert_eq!(risks[0].1, "safe", "`{hint}`");
    let o = env.run(&plan(hint), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = std::fs::read_to_string(env.out.join("artifacts/d/stdout.txt")).unwrap();
    assert!(out.contains("+two"), "the diff ran: {out}");
}

/// Each step gets a `TMPDIR` of its own, empty, whatever the step before it
/// left in its own; none is left behind. A folder a step leaves as it got it
/// is reused under a new name (`tools::temp`): the next step sees a new,
/// empty folder with the same mode; one it left something in is removed.
#[test]
fn each_step_gets_an_empty_tmpdir_of_its_own_and_none_is_left() {
    // Record the folder, its mode and that it is empty; then what each step leaves.
    let record = r#"ls -A "$TMPDIR" > "$PLANGATE_STEP_ARTIFACTS/entries.txt" && test ! -s "$PLANGATE_STEP_ARTIFACTS/entries.txt" && printf '%s %s' "$TMPDIR" "$(stat -c %a "$TMPDIR")" > "$PLANGATE_STEP_ARTIFACTS/tmp.txt""#;
    let leaves = [
        "true",
        r#"echo left > "$TMPDIR/left""#,
        "true",
        r#"mkdir "$TMPDIR/d""#,
        "true",
        r#"touch "$TMPDIR/x" && rm "$TMPDIR/x""#,
        "true",
        "true",
    ];
    // A resident bwrap sandbox (`lanes`) hands its steps its own TMPDIR in
    // turn, emptied: the same name, each time empty (the record fails the
    // step otherwise). A step of its own gets a name no step has seen.
    for (sandboxed, lanes) in [(true, true), (true, false), (false, false)] {
        let env = Env::new();
        let mut yaml = String::from("version: 1\nid: t\npolicy: {risk_tolerance: high}\nsteps:\n");
        for (i, leave) in leaves.iter().enumerate() {
            let cmd = format!("{record} && {leave}");
            let deps = if i == 0 {
                String::new()
            } else {
                format!("    dependencies: [s{}]\n", i - 1)
            };
            let bare = if sandboxed { "" } else { "sandbox: false, " };
            yaml.push_str(&format!(
                "  - id: s{i}\n    tool: bash\n{deps}    parameters: {{{bare}command: {}}}\n",
                serde_json::to_string(&cmd).expect("json")
            ));
        }
        let plan = env.write("plan.yaml", &yaml);
        let mut c = env.cmd();
        c.arg("run").arg(&plan).arg("--out").arg(&env.out);
        if !lanes {
            c.env("PLANGATE_BWRAP_LANES", "0");
        }
        let o = c
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .expect("run");
        assert_eq!(code(&o), 0, "sandboxed {sandboxed}: {}", stderr(&o));
        let walled = lanes && env.report()["sandbox"]["available"] == "bwrap";
        let mut seen = std::collections::BTreeSet::new();
        let mut modes = std::collections::BTreeSet::new();
        for i in 0..leaves.len() {
            let rec = std::fs::read_to_string(env.out.join(format!("artifacts/s{i}/tmp.txt")))
                .expect("tmp.txt");
            let (dir, mode) = rec.rsplit_once(' ').expect("path and mode");
            assert!(
                seen.insert(dir.to_owned()) || walled,
                "s{i} got {dir} again"
            );
            assert!(!std::path::Path::new(dir).exists(), "s{i}'s {dir} is left");
            modes.insert(mode.to_owned());
        }
        assert_eq!(
            modes.iter().map(String::as_str).collect::<Vec<_>>(),
            ["700"],
            "every step's TMPDIR is private to plangate's user"
        );
        let left: Vec<_> = std::fs::read_dir(env.tmp())
            .expect("tmp")
            .flatten()
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("plangate-step-") || n.starts_with("plangate-lane-")
            })
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
