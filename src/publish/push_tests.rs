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
        binary: false,
        change: Change::Added,
        deletions: 0,
        ignored: false,
        insertions: 1,
        old_path: None,
        path: p.to_owned(),
        steps: Vec::new(),
    };
    assert!(entries(dir.path(), &[file("ok.txt")], "").is_ok());
    match entries(dir.path(), &[file("ok.txt"), file("cfg.txt")], "") {
        Err(PushError::Secret(p)) => assert_eq!(p, "cfg.txt"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a secret was let through"),
    }
}
