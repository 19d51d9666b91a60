//! Issue 23, "seal the boundary": another name for a file the permission
//! rules deny reading (a hard link, the file renamed) never shows its
//! content, and a step that can write an output folder inside the
//! workspace cannot take it from plangate. Payloads touch only markers in
//! the test's temporary folders.

use crate::facility::{Backend, all_text, marker};
use crate::harness::{Env, code, git, stderr};

/// Every spelling of "another name for a denied file": `ln` across
/// folders and in the same folder, `cp --link`, `ln -P`, python's
/// `os.link` (where there is a python), into a new folder, under a name
/// git ignores, `mv` of the file and of a folder above a denied file, and
/// into the step's artifact folder; then the in-process tools read the
/// names. The content never shows in the output folder or on the console.
pub fn another_name_for_a_denied_file_never_shows_its_content(b: Backend) {
    let (flag, label) = b.pair();
    for with_git in [true, false] {
        let env = Env::new();
        let (key, tok, deep) = (marker("KEYPEM"), marker("TOKEN"), marker("DEEP"));
        env.write("config/key.pem", &format!("{key}\n"));
        env.write("config/ok.txt", "readable\n");
        env.write("secrets.txt", &format!("{tok}\n"));
        env.write("vault/inner/deep.txt", &format!("{deep}\n"));
        env.write(".gitignore", "*.log\n");
        if with_git {
            git(&env.ws, &["init", "-q"]);
            git(&env.ws, &["add", "-A"]);
            git(&env.ws, &["commit", "-qm", "init"]);
        }
        let links = "ln config/key.pem leak1.txt || true; \
             ln config/key.pem config/leak2.txt || true; \
             cp --link secrets.txt leak3.txt || true; \
             ln -P secrets.txt leak4.txt || true; \
             (command -v python3 >/dev/null && python3 -c 'import os; os.link(\"config/key.pem\", \"leak5.txt\")') || true; \
             mkdir -p sub/new && (ln config/key.pem sub/new/leak6.txt || true); \
             ln config/key.pem hidden.log || true; \
             ln vault/inner/deep.txt leak7.txt || true; \
             mv vault moved-vault || true; \
             ln secrets.txt \"$PLANGATE_STEP_ARTIFACTS/leak8.txt\" || true; \
             ls -i . config; echo made";
        let yaml = format!(
            "version: 1\nid: t\npolicy:\n  risk_tolerance: high\n  permissions:\n\
             \x20   - {{id: all, resource: '*', level: admin}}\n\
             \x20   - {{id: no-key, resource: 'config/key.pem', level: none, priority: 200}}\n\
             \x20   - {{id: no-secrets, resource: secrets.txt, level: none, priority: 200}}\n\
             \x20   - {{id: no-vault, resource: 'vault/**', level: none, priority: 200}}\n\
             steps:\n\
             \x20 - {{id: link, tool: bash, parameters: {{command: {}}}}}\n\
             \x20 - {{id: read, tool: bash, dependencies: [link], parameters: {{command: {}}}}}\n\
             \x20 - {{id: look, tool: find_in_files, dependencies: [read], continue_on_error: true, parameters: {{query: 'KEYPEM|TOKEN|DEEP', path: .}}}}\n\
             \x20 - {{id: pack, tool: archive, dependencies: [look], continue_on_error: true, parameters: {{operation: create, archive_path: out.tar, compression: none, source_paths: [leak1.txt, leak3.txt, moved-vault]}}}}\n",
            serde_json::to_string(links).unwrap(),
            serde_json::to_string(READ).unwrap()
        );
        let o = env.run(
            &yaml,
            &["--sandbox-backend", flag, "--approve", "link,pack,read"],
        );
        let all = format!(
            "{}\n{}\n{}",
            all_text(&env.out),
            String::from_utf8_lossy(&o.stdout),
            stderr(&o)
        );
        let archive = std::fs::read(env.ws.join("out.tar")).unwrap_or_default();
        let archive = String::from_utf8_lossy(&archive);
        for m in [&key, &tok, &deep] {
            assert!(
                !all.contains(m.as_str()),
                "{label} (git: {with_git}): the content of a denied file shows under another name (exit {}):\n{all}",
                code(&o)
            );
            assert!(
                !archive.contains(m.as_str()),
                "{label} (git: {with_git}): the archive holds a denied file's content"
            );
        }
        let summary = std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap_or_default();
        assert!(
            summary.contains("moved-vault"),
            "{label} (git: {with_git}): the step did not run its links: {summary}\n{}",
            stderr(&o)
        );
    }
}

/// A later step reads every name the first one made.
const READ: &str = "for f in leak1.txt config/leak2.txt leak3.txt leak4.txt leak5.txt sub/new/leak6.txt \
     hidden.log leak7.txt moved-vault/inner/deep.txt; do cat \"$f\" 2>/dev/null; done; true";

/// GitLab's layout: the output folder inside the workspace. A step
/// approved to write the workspace replaces `report.json` by a folder,
/// swaps an earlier step's artifact folder for a link to a folder outside,
/// and plants files; the run still leaves a valid report, nothing is
/// written through the link, what was planted is gone, and the run fails
/// (exit 4) when the step got anything done.
pub fn a_step_cannot_take_an_output_folder_inside_the_workspace(b: Backend) {
    let (flag, label) = b.pair();
    let env = Env::new();
    let elsewhere = env.tmp().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let tamper = format!(
        "echo x > f; o=plangate-out; \
         (rm -f $o/report.json && mkdir $o/report.json && echo TAMPERED) || true; \
         (mv $o/artifacts/first $o/first-moved && ln -s {e} $o/artifacts/first && echo TAMPERED) || true; \
         (echo planted > $o/planted.txt && echo TAMPERED) || true; \
         (mkdir -p $o/artifacts/third && echo planted > $o/artifacts/third/stdout.txt && echo TAMPERED) || true; \
         (ln -s {e} $o/artifacts/manifest.json.tmp && echo TAMPERED) || true; true",
        e = elsewhere.display()
    );
    let yaml = format!(
        "version: 1\nid: o\npolicy: {{risk_tolerance: high, fail_on_secrets: false}}\nsteps:\n\
         \x20 - {{id: first, tool: bash, parameters: {{command: 'echo first-output'}}}}\n\
         \x20 - {{id: w, tool: bash, dependencies: [first], parameters: {{command: {}}}}}\n\
         \x20 - {{id: third, tool: bash, dependencies: [w], parameters: {{command: 'echo third-output'}}}}\n",
        serde_json::to_string(&tamper).unwrap()
    );
    let plan_path = env.write("plan.yaml", &yaml);
    let out = env.ws.join("plangate-out");
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan_path)
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&out)
        .args(["--sandbox-backend", flag, "--approve", "w"])
        .output()
        .unwrap();
    let report = std::fs::read_to_string(out.join("report.json")).unwrap_or_default();
    let parsed: serde_json::Value = serde_json::from_str(&report).unwrap_or_else(|e| {
        panic!(
            "{label}: no valid report.json ({e}, exit {}): {}",
            code(&o),
            stderr(&o)
        )
    });
    assert_eq!(parsed["in_progress"], false, "{label}: {report}");
    assert!(
        std::fs::read_dir(&elsewhere).unwrap().next().is_none(),
        "{label}: plangate wrote through a link a step planted"
    );
    for planted in ["planted.txt", "first-moved", "artifacts/manifest.json.tmp"] {
        assert!(
            out.join(planted).symlink_metadata().is_err(),
            "{label}: `{planted}` a step planted is still in the output folder"
        );
    }
    assert!(
        !out.join("artifacts/first")
            .symlink_metadata()
            .is_ok_and(|m| m.is_symlink()),
        "{label}: the swapped link is still there"
    );
    let first = std::fs::read_to_string(out.join("artifacts/first/stdout.txt")).unwrap_or_default();
    assert!(
        first.contains("first-output"),
        "{label}: the earlier step's artifact folder was not put back: {}",
        stderr(&o)
    );
    let third = std::fs::read_to_string(out.join("artifacts/third/stdout.txt")).unwrap_or_default();
    assert!(
        !third.contains("planted"),
        "{label}: a planted artifact passes as a step's"
    );
    let w = std::fs::read_to_string(out.join("artifacts/w/stdout.txt")).unwrap_or_default();
    if w.contains("TAMPERED") {
        assert_eq!(code(&o), 4, "{label}: {}", stderr(&o));
        assert_eq!(parsed["status"], "secrets_found", "{label}");
    }
}
