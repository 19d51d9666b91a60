use super::*;

#[test]
fn branch_names_are_checked_by_git() {
    let ok =
        branch_name("plangate/{plan}/{run}", "lint", "0193-abc").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok, "plangate/lint/0193-abc");
    for bad in [
        "a..b", "-x", "a b", "x.lock", "a/", "a~1", "a:b", "@{x", "", "a\\b", "/a",
    ] {
        assert!(branch_name(bad, "p", "r").is_err(), "{bad}");
    }
    // A plan id that would make the name illegal is refused too.
    assert!(branch_name("bot/{plan}", "..", "r").is_err());
}

#[test]
fn credentials_go_only_to_https_or_a_loopback_http() {
    for good in [
        "https://github.com/a/b.git",
        "http://127.0.0.1:8080/a/b.git",
        "http://localhost/x",
    ] {
        assert!(url_ok(good), "{good}");
    }
    for bad in [
        "http://github.com/a/b.git",
        "file:///tmp/x",
        "ssh://git@github.com/a",
        "git@github.com:a/b",
        "https://x/?a=b",
        "nonsense",
    ] {
        assert!(!url_ok(bad), "{bad}");
    }
}

#[test]
fn secure_tells_plain_http_from_other_schemes() {
    let of = |u: &str| secure(&u.parse::<http::Uri>().unwrap_or_default());
    for good in [
        "https://api.github.com",
        "https://h/api/v4?x=1",
        "http://127.0.0.1:9/",
        "http://localhost",
        "http://[::1]:80/v4",
    ] {
        assert_eq!(of(good), Ok(()), "{good}");
    }
    for plain in [
        "http://example.com/",
        "http://127.0.0.2/",
        "http://localhost.evil/",
    ] {
        assert_eq!(of(plain), Err(Insecure::PlainHttp), "{plain}");
    }
    for other in ["ftp://h/", "file:///x", "/relative", "https:///nohost"] {
        assert_eq!(of(other), Err(Insecure::NotHttps), "{other}");
    }
}

#[test]
fn the_header_is_basic_auth_of_user_and_token() {
    let h = basic_auth("x-access-token", "tok");
    assert_eq!(h, "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46dG9r");
}

#[test]
fn paths_that_climb_out_or_name_git_are_refused() {
    for good in [
        "a.txt",
        "src/main.rs",
        "we\"ird name.txt",
        ".github/workflows/x.yml",
    ] {
        assert!(path_ok(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        "a//b",
        "./a",
        ".git/config",
        "sub/.GIT/hooks/x",
        "bad\\xFF",
        "a\nb",
    ] {
        assert!(path_ok(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn fast_import_paths_are_quoted() {
    assert_eq!(quoted("a b/\"c\""), "\"a b/\\\"c\\\"\"");
}

#[test]
fn the_stream_lays_files_on_the_base() {
    let s = stream(
        "abc",
        "msg",
        IDENTITY,
        &[
            Entry::Remove("old.txt".into()),
            Entry::Put {
                path: "new.txt".into(),
                mode: "100644",
                bytes: b"hi\n".to_vec(),
            },
        ],
    );
    let s = String::from_utf8_lossy(&s);
    assert!(
        s.starts_with(
            "commit refs/plangate/new\nauthor plangate <plangate@users.noreply.invalid> "
        ),
        "{s}"
    );
    assert!(
        s.contains(
            "data 3\nmsg\nfrom abc\nD \"old.txt\"\nM 100644 inline \"new.txt\"\ndata 3\nhi\n\n"
        ),
        "{s}"
    );
}

#[test]
fn a_secret_in_a_file_refuses_the_whole_push() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("ok.txt"), "fine\n").unwrap_or_else(|e| panic!("{e}"));
    // Built at run time so this file holds no key.
    let key = format!("AKIA{}", "Z7Q4NX2LMRBT5KPW");
    std::fs::write(
        dir.path().join("cfg.txt"),
        format!("x\n{}\nkey = {key}\n", "a".repeat(100_000)),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let file = |p: &str| FileChange {
        oid: std::fs::read(dir.path().join(p))
            .ok()
            .map(|b| blob_id(&b, "")),
        binary: false,
        change: Change::Added,
        deletions: 0,
        ignored: false,
        insertions: 1,
        old_path: None,
        path: p.to_owned(),
        steps: Vec::new(),
    };
    assert!(entries(dir.path(), &[file("ok.txt")], "", &[]).is_ok());
    match entries(dir.path(), &[file("ok.txt"), file("cfg.txt")], "", &[]) {
        Err(PushError::Secret(p)) => assert_eq!(p, "cfg.txt"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a secret was let through"),
    }
}

#[test]
fn paths_the_rules_deny_or_git_ignores_refuse_the_push_at_either_name() {
    use crate::model::PermissionRule;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("moved.txt"), "x\n").unwrap_or_else(|e| panic!("{e}"));
    let rules: Vec<PermissionRule> = serde_json::from_value(serde_json::json!([
        {"id": "all", "resource": "*", "level": "admin", "priority": 10},
        {"id": "hide", "resource": "secret/**", "level": "none", "priority": 90},
        {"id": "no-agent", "resource": "notes/**", "tools": ["agent"], "level": "none", "priority": 90},
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let list = crate::model::RuleList {
        source: "plan",
        rules: &rules,
    };
    let lists = [Compiled::new(&list)];
    let change = |change, path: &str, old: Option<&str>, ignored| FileChange {
        oid: Some(blob_id(b"x\n", "")),
        binary: false,
        change,
        deletions: 0,
        ignored,
        insertions: 1,
        old_path: old.map(str::to_owned),
        path: path.to_owned(),
        steps: Vec::new(),
    };
    let refused = |f: FileChange| match entries(dir.path(), &[f], "", &lists) {
        Err(e) => e.to_string(),
        Ok(_) => "pushed".to_owned(),
    };
    for f in [
        change(Change::Renamed, "moved.txt", Some("secret/old.txt"), false),
        change(Change::Deleted, "secret/old.txt", None, false),
        change(Change::Deleted, "secret/old.txt", None, true),
        change(Change::Added, "secret/new.txt", None, false),
    ] {
        let why = refused(f);
        assert!(
            why.contains("`secret/old.txt`") || why.contains("`secret/new.txt`"),
            "{why}"
        );
        assert!(why.contains("the permission rules deny it"), "{why}");
    }
    // One tool may not read it: denied.
    let why = refused(change(Change::Added, "notes/x", None, false));
    assert!(
        why.contains("permission rules deny") && why.contains("no-agent"),
        "{why}"
    );
    // Ignored: refused, unless deleted (left out: git never had it).
    let why = refused(change(Change::Added, "moved.txt", None, true));
    assert!(why.contains("git ignores it"), "{why}");
    match entries(
        dir.path(),
        &[change(Change::Deleted, "gone.log", None, true)],
        "",
        &lists,
    ) {
        Ok(e) => assert!(e.is_empty(), "a deleted ignored file is left out"),
        Err(e) => panic!("{e}"),
    }
    // No list in force: nothing denied.
    assert!(
        entries(
            dir.path(),
            &[change(Change::Added, "moved.txt", None, false)],
            "",
            &[]
        )
        .is_ok()
    );
}

#[test]
fn blob_ids_are_gits() {
    // `printf 'hello\n' | git hash-object --stdin` (and with --object-format=sha256).
    assert_eq!(
        blob_id(b"hello\n", ""),
        "ce013625030ba8dba906f756967f9e9ca394464a"
    );
    assert_eq!(
        blob_id(b"hello\n", &"0".repeat(64)),
        "2cf8d83d9ee29543b34a87727421fdecb7e3f3a183d337639025de576db9ebb4"
    );
}

#[test]
fn links_must_stay_inside_the_workspace() {
    assert!(target_ok("a", b"b").is_ok());
    assert!(target_ok("d/a", b"../b").is_ok());
    assert!(target_ok("d/e/a", b"./../../x/./y").is_ok());
    assert!(target_ok("a", b"../b").is_err());
    assert!(target_ok("d/a", b"../../b").is_err());
    assert!(target_ok("d/a", b"x/../../../b").is_err());
    assert!(target_ok("a", b"/etc/passwd").is_err());
    assert!(target_ok("a", b"").is_err());
}

#[test]
fn a_file_is_read_with_no_link_followed_and_must_be_what_git_recorded() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    for d in [ws.join("real"), outside.clone()] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(ws.join("real/f.txt"), "same\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(outside.join("f.txt"), "same\n").unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&outside, ws.join("via")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("real", ws.join("inner")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("real/f.txt", ws.join("ok-link")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("../outside/f.txt", ws.join("out-link"))
        .unwrap_or_else(|e| panic!("{e}"));
    let same = blob_id(b"same\n", "");
    let file = |p: &str, oid: &str| FileChange {
        oid: Some(oid.to_owned()),
        binary: false,
        change: Change::Added,
        deletions: 0,
        ignored: false,
        insertions: 1,
        old_path: None,
        path: p.to_owned(),
        steps: Vec::new(),
    };
    let run = |f: FileChange| entries(&ws, &[f], "sub/", &[]);
    match run(file("real/f.txt", &same)) {
        Ok(e) => assert!(
            matches!(&e[..], [Entry::Put { path, mode: "100644", bytes }] if path == "sub/real/f.txt" && bytes == b"same\n")
        ),
        Err(e) => panic!("{e}"),
    }
    // The same bytes, through a linked folder (outside or inside): refused.
    for p in ["via/f.txt", "inner/f.txt"] {
        let why = run(file(p, &same))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(why.contains("symbolic link"), "{p}: {why}");
    }
    // Other bytes than git recorded: refused.
    let why = run(file("real/f.txt", &blob_id(b"other\n", "")))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(why.contains("not those git recorded"), "{why}");
    // No recorded id: refused.
    let mut none = file("real/f.txt", &same);
    none.oid = None;
    assert!(run(none).is_err());
    // A link stays a link, inside only.
    match run(file("ok-link", &blob_id(b"real/f.txt", ""))) {
        Ok(e) => assert!(matches!(&e[..], [Entry::Put { mode: "120000", .. }])),
        Err(e) => panic!("{e}"),
    }
    let why = run(file("out-link", &blob_id(b"../outside/f.txt", "")))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(why.contains("climbs out"), "{why}");
}

#[test]
fn the_folder_by_folder_walk_follows_no_link_either() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(dir.path().join("a/b")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("a", dir.path().join("l")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("b", dir.path().join("a/lb")).unwrap_or_else(|e| panic!("{e}"));
    let root = Beneath::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert!(walk_folders(&root.root, "a/b").is_ok());
    for linked in ["l", "l/b", "a/lb"] {
        let e = walk_folders(&root.root, linked).err();
        assert!(
            e == Some(rustix::io::Errno::LOOP) || e == Some(rustix::io::Errno::NOTDIR),
            "{linked}: {e:?}"
        );
    }
}
