//! The tracker on real git repositories and plain folders.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// git for setting up and inspecting test repositories: no user or system
/// config, no optional locks, and the traps below defused.
fn tgit(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "diff.external=",
            "-c",
            "filter.trap.clean=",
            "-c",
            "filter.trap.smudge=",
            "-c",
            "filter.trap.required=false",
        ])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn write(root: &Path, name: impl AsRef<OsStr>, content: &[u8]) {
    let p = root.join(name.as_ref());
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(&p, content).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
}

fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    (dir, root)
}

/// The files every scenario starts with.
fn seed(root: &Path) {
    write(root, "keep.txt", b"a\nb\n");
    write(root, "gone.txt", b"bye\n");
    write(root, "plain.txt", b"plain content\n");
    write(root, "img.bin", b"\x00\x01\x02\x03");
    write(root, "pre.txt", b"pre\n");
    write(root, ".gitignore", b"*.log\n");
}

/// Changes made before the tracker starts: they must not be reported.
fn before_the_run(root: &Path) {
    write(root, "pre.txt", b"pre, changed before the run\n");
    write(root, "untracked.txt", b"already here\n");
    write(root, "staged.txt", b"staged before the run\n");
}

/// What "the steps" do: plain file operations.
fn the_run(root: &Path) {
    write(root, "keep.txt", b"a\nc\nd\n");
    std::fs::remove_file(root.join("gone.txt")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(root.join("plain.txt"), root.join("plain renamed.txt"))
        .unwrap_or_else(|e| panic!("{e}"));
    write(root, "img.bin", b"\x00\x01\x02\x04");
    write(root, "sp ace.txt", b"hello | `world`\n");
    write(root, OsStr::from_bytes(b"caf\xe9.txt"), b"z\n");
    write(root, "we|ird`na\nme.txt", b"x\n");
    write(root, "noise.log", b"ignored\n");
}

type Row = (&'static str, Change, u64, u64, bool, Option<&'static str>);

fn expected() -> Vec<Row> {
    vec![
        ("caf\\xE9.txt", Change::Added, 1, 0, false, None),
        ("gone.txt", Change::Deleted, 0, 1, false, None),
        ("img.bin", Change::Modified, 0, 0, true, None),
        ("keep.txt", Change::Modified, 2, 1, false, None),
        // Ignored (`*.log`): listed all the same, and said to be ignored.
        ("noise.log", Change::Added, 1, 0, false, None),
        (
            "plain renamed.txt",
            Change::Renamed,
            0,
            0,
            false,
            Some("plain.txt"),
        ),
        ("sp ace.txt", Change::Added, 1, 0, false, None),
        ("we|ird`na\nme.txt", Change::Added, 1, 0, false, None),
    ]
}

fn rows(s: &DiffSummary) -> Vec<(String, Change, u64, u64, bool, Option<String>)> {
    s.files
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                f.change,
                f.insertions,
                f.deletions,
                f.binary,
                f.old_path.clone(),
            )
        })
        .collect()
}

fn owned(rows: Vec<Row>) -> Vec<(String, Change, u64, u64, bool, Option<String>)> {
    rows.into_iter()
        .map(|(p, c, i, d, b, o)| (p.to_owned(), c, i, d, b, o.map(str::to_owned)))
        .collect()
}

fn check_markdown(md: &str) {
    assert!(
        md.contains("| `plain.txt` → `plain renamed.txt` | renamed | 0 | 0 |"),
        "{md}"
    );
    assert!(
        md.contains("| `img.bin` | modified (binary) | 0 | 0 |"),
        "{md}"
    );
    assert!(md.contains("| `caf\\xE9.txt` | added | 1 | 0 |"), "{md}");
    assert!(
        // The backtick is kept (a longer fence), the pipe escaped for the table.
        md.contains("| ``we\\|ird`na me.txt`` | added | 1 | 0 |"),
        "{md}"
    );
    assert!(md.contains("\n-b\n+c\n+d\n"), "{md}");
    assert!(md.contains("+hello | `world`"), "{md}");
    assert!(md.contains("\n+x\n"), "{md}");
    assert!(
        md.contains("8 file(s) changed, 6 insertion(s), 2 deletion(s)"),
        "{md}"
    );
    assert!(
        md.contains("| `noise.log` | added (ignored) | 1 | 0 |"),
        "{md}"
    );
    for absent in ["pre.txt", "untracked.txt", "staged.txt", "see the notes"] {
        assert!(!md.contains(absent), "{absent} in\n{md}");
    }
    // Every table row has its five cells.
    for line in md.lines().filter(|l| l.starts_with("| `")) {
        let cells = line.replace("\\|", "").matches('|').count();
        assert_eq!(cells, 6, "{line}");
    }
}

/// A committed repository with the seed files, plus traps in its config
/// and hooks that leave a file in the returned folder if git ever runs them.
fn repo() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let (dir, root) = tempdir();
    tgit(&root, &["init", "-q", "."]);
    seed(&root);
    tgit(&root, &["add", "-A"]);
    tgit(&root, &["commit", "-qm", "seed"]);
    let markers = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let trap = markers.path().join("trap.sh");
    std::fs::write(
        &trap,
        format!(
            "#!/bin/sh\ntouch \"{}/ran-$$\"\nexec cat \"$@\"\n",
            markers.path().display()
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&trap, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    let hooks = root.join(".git/hooks");
    for hook in [
        "pre-commit",
        "post-index-change",
        "post-checkout",
        "reference-transaction",
        "pre-auto-gc",
    ] {
        std::fs::copy(&trap, hooks.join(hook)).unwrap_or_else(|e| panic!("{e}"));
    }
    let t = trap.display();
    let mut config = std::fs::read_to_string(root.join(".git/config")).unwrap_or_default();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = {t}\n[diff]\n\texternal = {t}\n[diff \"trap\"]\n\ttextconv = {t}\n\tcommand = {t}\n[filter \"trap\"]\n\tclean = {t}\n\tsmudge = {t}\n\trequired = true\n"
    ));
    std::fs::write(root.join(".git/config"), config).unwrap_or_else(|e| panic!("{e}"));
    write(&root, ".git/info/attributes", b"* diff=trap filter=trap\n");
    (dir, root, markers)
}

fn markers_left(markers: &Path) -> Vec<String> {
    std::fs::read_dir(markers)
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "trap.sh")
        .collect()
}

/// What the diff must never change in the user's repository.
#[derive(Debug, PartialEq)]
struct RepoState {
    status: String,
    /// sha256 of the index file.
    index: String,
    objects: Vec<PathBuf>,
    config: String,
}

fn repo_state(root: &Path) -> RepoState {
    let mut objects: Vec<PathBuf> = Vec::new();
    let mut stack = vec![root.join(".git/objects")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
        {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                objects.push(e.path());
            }
        }
    }
    objects.sort();
    RepoState {
        status: String::from_utf8_lossy(&tgit(
            root,
            &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
        ))
        .into_owned(),
        index: {
            use sha2::Digest as _;
            let bytes = std::fs::read(root.join(".git/index")).unwrap_or_default();
            hex::encode(sha2::Sha256::digest(&bytes))
        },
        objects,
        config: std::fs::read_to_string(root.join(".git/config")).unwrap_or_default(),
    }
}

fn elsewhere() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = tempdir();
    let out = root.join("out");
    (dir, out)
}

#[test]
fn git_reports_only_what_the_run_changed_and_leaves_the_repository_alone() {
    let (_dir, root, markers) = repo();
    before_the_run(&root);
    tgit(&root, &["add", "staged.txt"]);
    let (_o, out) = elsewhere();
    let at_start = repo_state(&root);
    assert!(
        at_start.status.contains("A  staged.txt"),
        "{}",
        at_start.status
    );
    let mut t = Tracker::start(&root, &out);
    assert_eq!(t.method(), Method::Git);
    assert_eq!(
        repo_state(&root),
        at_start,
        "recording the start wrote to the repository"
    );
    the_run(&root);
    let before_finish = repo_state(&root);
    let (s, md) = t.finish();
    drop(t);
    assert_eq!(
        repo_state(&root),
        before_finish,
        "the comparison wrote to the repository"
    );
    assert_eq!(before_finish.objects, at_start.objects);
    assert_eq!(before_finish.index, at_start.index);
    assert_eq!(
        markers_left(markers.path()),
        Vec::<String>::new(),
        "git ran a hook, filter or driver"
    );
    assert_eq!(s.method, Method::Git);
    assert_eq!(s.notes, Vec::<String>::new());
    assert_eq!(rows(&s), owned(expected()));
    assert_eq!((s.files_changed, s.insertions, s.deletions), (8, 6, 2));
    assert!(md.contains("(compared with git)"), "{md}");
    check_markdown(&md);
    let json = serde_json::to_value(&s).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json["method"], "git");
    assert_eq!(json["files"][5]["old_path"], "plain.txt");
    assert_eq!(json["files"][5]["change"], "renamed");
    assert_eq!(json["files"][4]["ignored"], true);
    assert!(json["files"][0].get("old_path").is_none());
    assert!(json.get("notes").is_none());
}

#[test]
fn a_snapshot_reports_the_same_outside_git() {
    let (_dir, root) = tempdir();
    seed(&root);
    before_the_run(&root);
    let out = root.join(".plangate/runs/r1");
    write(&out, "report.json", b"{}");
    let mut t = Tracker::start(&root, &out);
    assert_eq!(t.method(), Method::Snapshot);
    the_run(&root);
    write(&out, "artifacts/s/stdout.txt", b"out\n");
    let (s, md) = t.finish();
    assert_eq!(s.notes, Vec::<String>::new());
    assert_eq!(rows(&s), owned(expected()));
    assert!(md.contains("(compared by content snapshot)"), "{md}");
    check_markdown(&md);
    assert!(!md.contains(".plangate"), "{md}");
}

#[test]
fn git_mv_by_a_step_is_a_rename_and_a_modified_rename_keeps_its_line_counts() {
    let (_dir, root, markers) = repo();
    let (_o, out) = elsewhere();
    let mut t = Tracker::start(&root, &out);
    tgit(&root, &["mv", "keep.txt", "kept.txt"]);
    write(&root, "kept.txt", b"a\nb\nc\n");
    let (s, _md) = t.finish();
    assert_eq!(
        rows(&s),
        owned(vec![(
            "kept.txt",
            Change::Renamed,
            1,
            0,
            false,
            Some("keep.txt")
        )])
    );
    assert_eq!(markers_left(markers.path()), Vec::<String>::new());
}

#[test]
fn a_subfolder_of_a_repository_with_the_output_inside_it() {
    let (_dir, root) = tempdir();
    tgit(&root, &["init", "-q", "."]);
    write(&root, "outside.txt", b"1\n");
    write(&root, "sub/in.txt", b"1\n");
    tgit(&root, &["add", "-A"]);
    tgit(&root, &["commit", "-qm", "seed"]);
    let ws = root.join("sub");
    let out = ws.join(".plangate/runs/r1");
    write(&out, "report.json", b"{}");
    let mut t = Tracker::start(&ws, &out);
    assert_eq!(t.method(), Method::Git);
    write(&root, "outside.txt", b"2\n");
    write(&ws, "in.txt", b"2\n");
    write(&ws, "new.txt", b"new\n");
    write(&out, "artifacts/s/stdout.txt", b"out\n");
    write(&out, "report.json", b"{\"more\": 1}");
    let step = t.checkpoint(Some("s"));
    assert_eq!(
        step,
        Some(StepFiles {
            files: vec!["in.txt".into(), "new.txt".into()],
            omitted: 0
        })
    );
    let (s, md) = t.finish();
    assert_eq!(
        rows(&s),
        owned(vec![
            ("in.txt", Change::Modified, 1, 1, false, None),
            ("new.txt", Change::Added, 1, 0, false, None),
        ])
    );
    assert!(!md.contains("outside") && !md.contains(".plangate"), "{md}");
    assert!(md.contains("--- a/in.txt"), "{md}");
}

/// The output folder inside the workspace, listed in the user's
/// `.gitignore` or not, ignored by a `.gitignore` of its own, or only made
/// ignored by a step: git is used every time and the folder never shows.
#[test]
fn the_output_folder_ignored_or_not_stays_out_and_git_keeps_working() {
    for case in [
        "user ignores it",
        "not ignored",
        "own gitignore",
        "ignored by a step",
    ] {
        let (_dir, root) = tempdir();
        tgit(&root, &["init", "-q", "."]);
        let ignore: &[u8] = if case == "user ignores it" {
            b".plangate/\n"
        } else {
            b"*.log\n"
        };
        write(&root, ".gitignore", ignore);
        write(&root, "a.txt", b"1\n");
        tgit(&root, &["add", "-A"]);
        tgit(&root, &["commit", "-qm", "seed"]);
        let out = root.join(".plangate/runs/r1");
        if case == "own gitignore" {
            write(&root, ".plangate/runs/.gitignore", b"*\n");
        }
        write(&out, "report.json", b"{}");
        let mut t = Tracker::start(&root, &out);
        assert_eq!(t.method(), Method::Git, "{case}");
        write(&root, "a.txt", b"2\n");
        write(&out, "report.json", b"{\"more\": 1}");
        write(&out, "artifacts/s/stdout.txt", b"out\n");
        if case == "ignored by a step" {
            write(&root, ".gitignore", b".plangate/\n");
        }
        let (s, md) = t.finish();
        assert_eq!(s.method, Method::Git, "{case}: {:?}", s.notes);
        assert_eq!(s.notes, Vec::<String>::new(), "{case}");
        let mut want = vec![("a.txt", Change::Modified, 1, 1, false, None)];
        if case == "ignored by a step" {
            want.insert(0, (".gitignore", Change::Modified, 1, 1, false, None));
        }
        assert_eq!(rows(&s), owned(want), "{case}");
        assert!(
            !md.contains("report.json") && !md.contains("stdout.txt"),
            "{case}: {md}"
        );
    }
}

/// Steps credited with the files they changed, in both methods.
fn attribution(root: &Path, method: Method) {
    write(root, "c.txt", b"c\n");
    write(root, "x.txt", b"moving\n");
    let (_o, out) = elsewhere();
    let mut t = Tracker::start(root, &out);
    assert_eq!(t.method(), method);
    write(root, "a.txt", b"a\n");
    let one = t.checkpoint(Some("one")).map(|f| f.files);
    assert_eq!(one, Some(vec!["a.txt".to_owned()]));
    write(root, "b.txt", b"b\n");
    assert_eq!(t.checkpoint(None), None);
    write(root, "a.txt", b"a\nmore\n");
    std::fs::remove_file(root.join("c.txt")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(root.join("x.txt"), root.join("y.txt")).unwrap_or_else(|e| panic!("{e}"));
    let two = t.checkpoint(Some("two (rollback)")).map(|f| f.files);
    assert_eq!(
        two,
        Some(vec![
            "a.txt".into(),
            "c.txt".into(),
            "x.txt".into(),
            "y.txt".into()
        ])
    );
    assert_eq!(
        t.checkpoint(Some("three")).map(|f| f.files),
        Some(Vec::new())
    );
    let (s, md) = t.finish();
    let steps: Vec<(&str, Vec<&str>)> = s
        .files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                f.steps.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("a.txt", vec!["one", "two (rollback)"]),
            ("b.txt", vec![]),
            ("c.txt", vec!["two (rollback)"]),
            ("y.txt", vec!["two (rollback)"]),
        ]
    );
    assert!(
        md.contains("| `a.txt` | added | 2 | 0 | one, two (rollback) |"),
        "{md}"
    );
    assert!(md.contains("| `b.txt` | added | 1 | 0 |  |"), "{md}");
}

#[test]
fn steps_that_ran_alone_are_credited_with_their_files_with_git() {
    let (_dir, root) = tempdir();
    tgit(&root, &["init", "-q", "."]);
    attribution(&root, Method::Git);
}

#[test]
fn steps_that_ran_alone_are_credited_with_their_files_in_a_snapshot() {
    let (_dir, root) = tempdir();
    attribution(&root, Method::Snapshot);
}

#[test]
fn when_git_cannot_be_used_the_snapshot_takes_over_with_a_note() {
    let (_dir, root, _markers) = repo();
    let (_o, out) = elsewhere();
    let missing = Options {
        git: "/nonexistent/git".into(),
        ..Options::default()
    };
    let mut t = Tracker::start_with(&root, &out, &missing);
    assert_eq!(t.method(), Method::Snapshot);
    write(&root, "keep.txt", b"changed\n");
    let (s, md) = t.finish();
    assert_eq!(s.files.len(), 1);
    assert!(s.notes[0].contains("could not start git"), "{:?}", s.notes);
    assert!(md.contains("> **Note:** git could not be used"), "{md}");

    let (_b, bin) = tempdir();
    let fake = bin.join("git");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"fatal: detected dubious ownership in repository at '/r'\" >&2\nexit 128\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    let dubious = Options {
        git: fake.into_os_string(),
        ..Options::default()
    };
    let mut t = Tracker::start_with(&root, &out, &dubious);
    write(&root, "keep.txt", b"changed again\n");
    let (s, _) = t.finish();
    assert_eq!(s.method, Method::Snapshot);
    assert_eq!(s.files.len(), 1);
    assert!(s.notes[0].contains("dubious ownership"), "{:?}", s.notes);
}

#[test]
fn a_workspace_the_repository_ignores_is_compared_by_snapshot() {
    let (_dir, root) = tempdir();
    tgit(&root, &["init", "-q", "."]);
    write(&root, ".gitignore", b"build/\n");
    let ws = root.join("build/ws");
    write(&ws, "a.txt", b"a\n");
    let (_o, out) = elsewhere();
    let mut t = Tracker::start(&ws, &out);
    write(&ws, "a.txt", b"b\n");
    let (s, _) = t.finish();
    assert_eq!(s.method, Method::Snapshot);
    assert!(
        s.notes[0].contains("ignored by the repository"),
        "{:?}",
        s.notes
    );
    assert_eq!(
        rows(&s),
        owned(vec![("a.txt", Change::Modified, 1, 1, false, None)])
    );
}

#[test]
fn long_diffs_are_cut_with_a_note_in_both_methods() {
    for git in [true, false] {
        let (_dir, root) = tempdir();
        if git {
            tgit(&root, &["init", "-q", "."]);
        }
        let (_o, out) = elsewhere();
        let mut t = Tracker::start(&root, &out);
        let big: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        write(&root, "big.txt", big.as_bytes());
        let (s, md) = t.finish();
        assert_eq!(s.files[0].insertions, 1000);
        assert!(md.contains("more lines not shown)"), "{md}");
        assert!(
            md.contains("+line 390\n") && !md.contains("+line 999\n"),
            "{md}"
        );
    }
    // Past KEEP_FILE a snapshot compares by hash only, and says so.
    let (_dir, root) = tempdir();
    write(&root, "huge.txt", b"x\n");
    let (_o, out) = elsewhere();
    let mut t = Tracker::start(&root, &out);
    write(
        &root,
        "huge.txt",
        "y\n".repeat(KEEP_FILE as usize).as_bytes(),
    );
    let (s, md) = t.finish();
    assert_eq!(
        rows(&s),
        owned(vec![("huge.txt", Change::Modified, 0, 0, false, None)])
    );
    assert!(md.contains("(too large to compare line by line"), "{md}");
}

#[test]
fn past_the_read_budget_a_snapshot_compares_by_metadata_and_reads_only_what_changed() {
    let (_dir, root) = tempdir();
    for i in 0..20 {
        write(
            &root,
            format!("f{i:02}.txt"),
            format!("file {i}\n").as_bytes(),
        );
    }
    let (_o, out) = elsewhere();
    let options = Options {
        git: "/nonexistent/git".into(),
        read_budget: 40, // the first few files only
    };
    let mut t = Tracker::start_with(&root, &out, &options);
    // f00 was read before the run: a line diff. f19 was not: modified, no lines.
    write(&root, "f00.txt", b"file 0 changed\n");
    write(&root, "f19.txt", b"file 19 changed\n");
    // Touched with the same content: read after the run, equal hash, not a change
    // when the old hash is known.
    std::thread::sleep(std::time::Duration::from_millis(10));
    write(&root, "f01.txt", b"file 1\n");
    let (s, md) = t.finish();
    assert_eq!(
        rows(&s),
        owned(vec![
            ("f00.txt", Change::Modified, 1, 1, false, None),
            ("f19.txt", Change::Modified, 0, 0, false, None),
        ]),
        "{md}"
    );
}

#[test]
fn nothing_changed() {
    let (_dir, root, _markers) = repo();
    let (_o, out) = elsewhere();
    let mut t = Tracker::start(&root, &out);
    let (s, md) = t.finish();
    assert_eq!(s.files_changed, 0);
    assert!(
        md.contains("No file in the workspace changed (compared with git)."),
        "{md}"
    );
}

#[test]
fn escaping_and_fences() {
    assert_eq!(escape_bytes(b"caf\xc3\xa9"), "café");
    assert_eq!(
        escape_bytes(b"caf\xe9 \xff\xfe.txt"),
        "caf\\xE9 \\xFF\\xFE.txt"
    );
    assert_eq!(fence(&["a ``` b".to_owned()]), "````");
    assert_eq!(fence(&["plain".to_owned()]), "```");
    // A name keeps its backtick (a longer fence) and its pipe (escaped in a cell only).
    assert_eq!(md_cell("a|b`c\nd"), "``a\\|b`c d``");
    assert_eq!(md_code("a|b`c"), "``a|b`c``");
}

#[test]
fn a_line_of_the_summary_is_located_in_its_workspace_file() {
    let file = |path: &str, change| crate::model::FileChange {
        oid: None,
        binary: false,
        change,
        deletions: 0,
        insertions: 0,
        old_path: None,
        path: path.to_owned(),
        steps: Vec::new(),
        ignored: false,
    };
    let files = [
        file("gen/result.txt", Change::Added),
        file("gone.txt", Change::Deleted),
        file("notes.md", Change::Modified),
    ];
    let md = "# What the run changed\n\n| file |\n| --- |\n| `notes.md` |\n\n## Diffs\n\n\
              ### `gen/result.txt`\n\n```diff\n--- /dev/null\n+++ b/gen/result.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n```\n\n\
              ### `gone.txt`\n\n```diff\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n```\n\n\
              ### `notes.md`\n\n```diff\n--- a/notes.md\n+++ b/notes.md\n@@ -3,3 +3,3 @@\n first\n-old\n+new\n last\n```\n";
    let at = |needle: &str| {
        let n = md
            .lines()
            .position(|l| l == needle)
            .unwrap_or_else(|| panic!("{needle}")) as u64
            + 1;
        locate(&files, md, n)
    };
    assert_eq!(at("+a"), Some(("gen/result.txt".to_owned(), 1)));
    assert_eq!(at("+b"), Some(("gen/result.txt".to_owned(), 2)));
    assert_eq!(at("-x"), None, "a deleted file");
    assert_eq!(at(" first"), Some(("notes.md".to_owned(), 3)));
    assert_eq!(at("-old"), Some(("notes.md".to_owned(), 3)));
    assert_eq!(at("+new"), Some(("notes.md".to_owned(), 4)));
    assert_eq!(at(" last"), Some(("notes.md".to_owned(), 5)));
    assert_eq!(at("| `notes.md` |"), None, "the table is no file's line");
    assert_eq!(at("+++ b/notes.md"), None);
}
