//! An agent CLI's writes outside its staged copy of the workspace are
//! refused by the sandbox of its step, under each backend (the staging
//! itself: tests/integration/agent_stage.rs, whose helpers this uses).

use crate::agent_stage_shared::{GOOD, MEDIUM, Staged, changed};
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
