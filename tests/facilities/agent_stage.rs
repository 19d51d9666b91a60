//! An agent CLI's writes outside its staged copy of the workspace are
//! refused by the sandbox of its step, under each backend (the staging
//! itself: tests/integration/agent_stage.rs, whose helpers this uses).

use crate::agent_stage_shared::{GOOD, MEDIUM, Staged, changed, differences, tree};
use crate::facility::Backend;
use crate::harness::{code, stderr};

pub fn writes_outside_the_staged_copy_are_refused_by_the_sandbox(b: Backend) {
    let flag = b.flag;
    let s = Staged::new();
    s.call(1, &["write-real", "write-outside", "edit2"], GOOD);
    // Landlock does not auto-approve a step that may write (its `chmod`
    // is not kept inside: seal.rs); approved, it runs in the same profile.
    let approve: &[&str] = if flag == "landlock" {
        &["--approve", "fix"]
    } else {
        &[]
    };
    let o = s.run(
        MEDIUM,
        1,
        &[&["--sandbox-backend", flag][..], approve].concat(),
    );
    assert_eq!(code(&o), 0, "{flag}: {}", stderr(&o));
    assert!(!s.env.ws.join("escaped.txt").exists(), "{flag}");
    assert!(!s.outside.path().join("escaped.txt").exists(), "{flag}");
    assert_eq!(
        changed(&s.env.step("fix")),
        vec![
            ("a.txt".to_owned(), "modified".to_owned()),
            ("d/e.txt".to_owned(), "added".to_owned()),
        ],
        "{flag}"
    );
}

/// A read-only agent CLI (`mode: read-only`) edits its staged copy and
/// tries to write outside it: under each backend the workspace (`.git`
/// included) is byte-identical after the run, and the report lists what it
/// tried in its copy as `attempted_changes`.
pub fn a_read_only_agent_cli_leaves_the_workspace_byte_identical(b: Backend) {
    let flag = b.flag;
    let s = Staged::new();
    s.call(1, &["write-real", "write-outside", "edit", "edit2"], GOOD);
    let before = tree(&s.env.ws);
    let approve: &[&str] = if flag == "landlock" {
        &["--approve", "fix"]
    } else {
        &[]
    };
    let plan = s.plan(MEDIUM, 1, "").replace(
        "    timeout: 60\n",
        "    timeout: 60\n    mode: read-only\n",
    );
    assert!(plan.contains("mode: read-only"), "{plan}");
    let o = s
        .env
        .run(&plan, &[&["--sandbox-backend", flag][..], approve].concat());
    assert_eq!(code(&o), 0, "{flag}: {}", stderr(&o));
    assert_eq!(
        differences(&before, &tree(&s.env.ws)),
        Vec::<String>::new(),
        "{flag}"
    );
    assert!(!s.outside.path().join("escaped.txt").exists(), "{flag}");
    let step = s.env.step("fix");
    assert!(step.get("agent_changes").is_none(), "{flag}: {step:#}");
    let tried: Vec<(String, String)> = step["attempted_changes"]["files"]
        .as_array()
        .unwrap_or_else(|| panic!("{flag}: no attempted_changes in {step:#}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["change"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("a.txt", "modified"),
        ("b.txt", "deleted"),
        ("c.txt", "added"),
        ("d/e.txt", "added"),
        ("new/n.txt", "added"),
    ]
    .iter()
    .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
    .collect();
    assert_eq!(tried, want, "{flag}");
    // The run changed nothing.
    let none = step["changed_files"].as_array().is_none_or(Vec::is_empty);
    assert!(none, "{flag}: {step:#}");
}
