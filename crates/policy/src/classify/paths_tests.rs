use super::*;

fn places() -> Places {
    Places {
        workspace: PathBuf::from("/work/ws"),
        home: Some(PathBuf::from("/home/ci")),
        scratch: true,
    }
}

#[test]
fn locates() {
    let p = places();
    let l = |s: &str| p.locate(&normalize(Path::new(s)));
    assert_eq!(l("/work/ws/a/.."), Loc::WsRoot);
    assert_eq!(l("/work/ws/a"), Loc::Inside);
    assert_eq!(l("/work"), Loc::WsAncestor);
    assert_eq!(l("/etc/passwd"), Loc::Protected);
    assert_eq!(l("/dev/sda1"), Loc::DevDisk);
    assert_eq!(l("/dev/null"), Loc::DevSink);
    assert_eq!(l("/../.."), Loc::FsRoot);
}
