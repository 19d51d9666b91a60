//! An agent CLI's staged overlay: instead of copying the workspace, the
//! helper (`__sandbox-exec --overlay-at`) enters a new user and mount
//! namespace and mounts there, at the stage's folder, an overlay whose lower
//! layer is the real workspace (never written: every write lands in the
//! upper folder, fresh for each attempt) before it runs the rest of the
//! step's command (bwrap, the Landlock helper, or the CLI itself). The mount
//! exists only in that namespace: plangate reads the changes from the upper
//! folder (whiteouts: deletions; opaque folders: folders replaced).
//!
//! [`available`] probes once per run whether this kernel and its policy
//! allow it (a real mount in a throwaway folder, in a child namespace); when
//! not (unprivileged user namespaces restricted, as on GitHub's Ubuntu 24.04
//! runners), the stage is a copy.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::HELPER;

/// Where an attempt's overlay is mounted, and its layers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OverlayMount {
    /// The real workspace (read-only layer).
    pub lower: PathBuf,
    /// Where the attempt's writes land.
    pub upper: PathBuf,
    /// The overlay's own work folder (same filesystem as `upper`).
    pub work: PathBuf,
    /// The mount point (the stage's workspace path).
    pub at: PathBuf,
}

/// The helper flags that mount `o` before running the rest of the command.
pub(crate) fn flags(o: &OverlayMount) -> Vec<String> {
    let mut a = Vec::new();
    for (flag, p) in [
        ("--overlay-at", &o.at),
        ("--overlay-lower", &o.lower),
        ("--overlay-upper", &o.upper),
        ("--overlay-work", &o.work),
    ] {
        a.push(flag.to_owned());
        a.push(p.display().to_string());
    }
    a
}

/// Wrap `program args` so that it runs with `o` mounted (in its own namespaces).
pub(crate) fn wrap(o: &OverlayMount, program: String, args: Vec<String>) -> (String, Vec<String>) {
    let exe =
        std::env::current_exe().map_or_else(|_| "plangate".to_owned(), |p| p.display().to_string());
    let mut a = vec![HELPER.to_owned(), "--limits-only".to_owned()];
    a.extend(flags(o));
    a.push("--".to_owned());
    a.push(program);
    a.extend(args);
    (exe, a)
}

/// Whether a path can be named in the overlay's mount options (which
/// separate with `,` and `:`).
pub(crate) fn nameable(p: &Path) -> bool {
    p.to_str()
        .is_some_and(|s| !s.contains([',', ':', '\\', '\n']) && p.is_absolute())
}

/// In the helper: enter a new user and mount namespace (same uid and gid
/// inside) and mount the overlay; then the working folder is taken again
/// through the mount.
#[allow(deprecated)] // `unshare_unsafe` needs `unsafe` (forbidden here); it is unsafe only with `FILES`, not passed
pub(super) fn enter(at: &Path, lower: &Path, upper: &Path, work: &Path) -> Result<(), String> {
    use rustix::mount::{MountFlags, MountPropagationFlags};
    use rustix::thread::UnshareFlags;
    for p in [at, lower, upper, work] {
        if !nameable(p) {
            return Err(format!(
                "`{}` cannot be named in an overlay mount",
                p.display()
            ));
        }
    }
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    rustix::thread::unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS)
        .map_err(|e| format!("cannot enter a user and mount namespace: {e}"))?;
    std::fs::write("/proc/self/setgroups", "deny")
        .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
        .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")))
        .map_err(|e| format!("cannot map the user namespace: {e}"))?;
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        lower.display(),
        upper.display(),
        work.display()
    );
    let data = std::ffi::CString::new(data).map_err(|e| e.to_string())?;
    rustix::mount::mount(
        "overlay",
        at,
        "overlay",
        MountFlags::NOSUID | MountFlags::NODEV,
        data.as_c_str(),
    )
    .map_err(|e| format!("cannot mount the overlay: {e}"))?;
    if let Ok(cwd) = std::env::current_dir() {
        std::env::set_current_dir(&cwd)
            .map_err(|e| format!("cannot enter `{}`: {e}", cwd.display()))?;
    }
    Ok(())
}

/// Whether the overlay stage works here: probed once per run.
pub(crate) fn available() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| probe().is_ok())
}

fn probe() -> Result<(), String> {
    let t = tempfile::Builder::new()
        .prefix("plangate-overlay-probe-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let o = OverlayMount {
        lower: t.path().join("l"),
        upper: t.path().join("u"),
        work: t.path().join("w"),
        at: t.path().join("m"),
    };
    for d in [&o.lower, &o.upper, &o.work, &o.at] {
        std::fs::create_dir(d).map_err(|e| e.to_string())?;
    }
    std::fs::write(o.lower.join("f"), "x").map_err(|e| e.to_string())?;
    let (exe, args) = wrap(
        &o,
        "sh".to_owned(),
        vec![
            "-c".to_owned(),
            r#"test "$(cat "$1/f")" = x && : > "$1/g""#.to_owned(),
            "sh".to_owned(),
            o.at.display().to_string(),
        ],
    );
    let status = std::process::Command::new(exe)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    let landed = o.upper.join("g").is_file() && !o.lower.join("g").exists();
    let _ = clear(t.path());
    if status.success() && landed {
        Ok(())
    } else {
        Err("the overlay probe failed".into())
    }
}

/// Whether `m` is an overlay whiteout (a character device 0:0): a deletion.
pub(crate) fn is_whiteout(m: &std::fs::Metadata) -> bool {
    m.file_type().is_char_device() && m.rdev() == 0
}

/// Whether the upper folder `dir` is opaque (it replaced the lower one).
pub(crate) fn is_opaque(dir: &Path) -> bool {
    ["user.overlay.opaque", "trusted.overlay.opaque"]
        .iter()
        .any(|name| {
            let mut buf = [0u8; 4];
            rustix::fs::lgetxattr(dir, *name, &mut buf[..])
                .is_ok_and(|n| buf.get(..n) == Some(b"y".as_slice()))
        })
}

/// Hide the lower `rel` in the upper layer `upper` with a whiteout, its
/// folders made in the upper (writable for now: the caller gives them the
/// lower's modes, returned, once every whiteout is in).
pub(crate) fn plant_whiteout(
    upper: &Path,
    lower: &Path,
    rel: &str,
    made: &mut Vec<(PathBuf, u32)>,
) -> std::io::Result<()> {
    let rel_path = Path::new(rel);
    let mut at = PathBuf::new();
    if let Some(parent) = rel_path.parent() {
        for c in parent.components() {
            at.push(c);
            let dest = upper.join(&at);
            if std::fs::symlink_metadata(&dest).is_ok() {
                continue;
            }
            let mode = std::fs::symlink_metadata(lower.join(&at))?.mode() & 0o7777;
            std::fs::create_dir(&dest)?;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(mode | 0o700))?;
            made.push((dest, mode));
        }
    }
    let dest = upper.join(rel_path);
    if let Ok(m) = std::fs::symlink_metadata(&dest) {
        if is_whiteout(&m) {
            return Ok(());
        }
        if m.is_dir() {
            std::fs::remove_dir_all(&dest)?;
        } else {
            std::fs::remove_file(&dest)?;
        }
    }
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &dest,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::empty(),
        0,
    )
    .map_err(std::io::Error::from)
}

/// Remove `dir` and everything in it (the overlay leaves a mode-0 folder in its work folder).
pub(crate) fn clear(dir: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    for e in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        if e.file_type().is_dir() {
            let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o700));
        }
    }
    std::fs::remove_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_absolute_paths_are_named_in_mount_options() {
        assert!(nameable(Path::new("/tmp/a b/c")));
        for bad in ["/tmp/a,b", "/tmp/a:b", "/tmp/a\\b", "rel/x", "/tmp/a\nb"] {
            assert!(!nameable(Path::new(bad)), "{bad}");
        }
    }

    #[test]
    fn the_wrapper_names_every_layer_before_the_command() {
        let o = OverlayMount {
            lower: "/w".into(),
            upper: "/s/u".into(),
            work: "/s/k".into(),
            at: "/s/m".into(),
        };
        let (_, a) = wrap(&o, "bwrap".into(), vec!["x".into()]);
        let s = a.join(" ");
        assert!(s.starts_with(&format!("{HELPER} --limits-only --overlay-at /s/m --overlay-lower /w --overlay-upper /s/u --overlay-work /s/k -- bwrap x")), "{s}");
    }
}
