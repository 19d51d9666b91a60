//! Whether git takes a folder for a git directory, decided as git decides
//! it (`is_git_directory`): a valid `HEAD` (a link whose text starts with
//! `refs/`, or a file starting with `ref:` and `refs/`, or with an object
//! id), and `objects` and `refs` that can be entered (`access(X_OK)`, links
//! followed, a file with an execute bit counts) in the folder, or in the one
//! its `commondir` file names.
//!
//! [`marks`] records what makes a folder one: the identity of the folder,
//! of the common folder, of `objects` and `refs` where they lead, and of a
//! `.git` entry inside it (git takes that first). A step that turns a
//! folder into a git directory (creates `objects`, `refs` or `HEAD`, writes
//! `HEAD` valid, gives `objects` an execute bit, links or moves one in,
//! creates the folder a `commondir` file or a link names, removes the
//! `.git` that git used instead) changes its marks; see
//! [`super::git_nested`].

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// Identity of a file: device, inode, mode.
type Id = (u64, u64, u32);

/// What makes a folder a git directory git would use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marks {
    /// The folder (device, inode, owner: git refuses another user's) and
    /// its parent's owner (the work tree of a `.git` folder).
    dir: (u64, u64, u32, u32),
    /// The real path of the folder a `commondir` file names.
    common: Option<PathBuf>,
    objects: Id,
    refs: Id,
    /// A `.git` entry inside the folder (git uses it before the folder).
    shadow: Option<Id>,
    /// False when plangate cannot tell what git would decide (a `HEAD` that
    /// is a FIFO or device, a `commondir` git cannot read or resolve, on
    /// which git dies): such marks equal only such marks, so a folder that
    /// turns from that (or from nothing) into a git directory is judged whole.
    sure: bool,
}

impl Marks {
    /// Whether plangate could tell what git would decide.
    pub(crate) fn sure(&self) -> bool {
        self.sure
    }

    /// The real path of the common folder a `commondir` file names.
    pub(crate) fn common(&self) -> Option<&Path> {
        self.common.as_deref()
    }

    fn unsure() -> Marks {
        Marks {
            dir: (0, 0, 0, 0),
            common: None,
            objects: (0, 0, 0),
            refs: (0, 0, 0),
            shadow: None,
            sure: false,
        }
    }
}

/// The marks of the folder `dir` when git would take it for a git
/// directory; None when git would not (or `dir` is not a folder itself).
pub(crate) fn marks(dir: &Path) -> Option<Marks> {
    let meta = dir.symlink_metadata().ok()?;
    if !meta.is_dir() {
        return None;
    }
    match head_valid(&dir.join("HEAD")) {
        Some(true) => {}
        Some(false) => return None,
        None => return Some(Marks::unsure()),
    }
    let cd = dir.join("commondir");
    // git's `file_exists`: `stat`, links followed.
    let common = if std::fs::metadata(&cd).is_ok() {
        // git dies when it cannot read or resolve it: unsure.
        let Some(p) = common_dir(dir, &cd) else {
            return Some(Marks::unsure());
        };
        Some(p)
    } else {
        None
    };
    let base = common.clone().unwrap_or_else(|| dir.to_path_buf());
    let objects = enterable(&base.join("objects"))?;
    let refs = enterable(&base.join("refs"))?;
    let parent_uid = dir
        .parent()
        .and_then(|p| p.metadata().ok())
        .map_or(0, |m| m.uid());
    let shadow = dir
        .join(".git")
        .symlink_metadata()
        .ok()
        .map(|m| (m.dev(), m.ino(), m.mode()));
    Some(Marks {
        dir: (meta.dev(), meta.ino(), meta.uid(), parent_uid),
        common,
        objects,
        refs,
        shadow,
        sure: true,
    })
}

/// git's `validate_headref`: Some(true) when `p` is a valid `HEAD`, None
/// when plangate cannot read it as git would (not a file, link or folder).
fn head_valid(p: &Path) -> Option<bool> {
    let Ok(m) = p.symlink_metadata() else {
        return Some(false);
    };
    if m.is_symlink() {
        let t = std::fs::read_link(p).ok()?;
        return Some(t.as_os_str().as_encoded_bytes().starts_with(b"refs/"));
    }
    if m.is_dir() {
        // git's `read` fails on a folder.
        return Some(false);
    }
    if !m.is_file() {
        return None;
    }
    let mut buf = Vec::with_capacity(255);
    let f = crate::regular::open(p).ok()?;
    std::io::Read::read_to_end(&mut std::io::Read::take(f, 255), &mut buf).ok()?;
    if let Some(rest) = buf.strip_prefix(b"ref:") {
        let rest = rest.trim_ascii_start();
        if rest.starts_with(b"refs/") {
            return Some(true);
        }
    }
    // A detached HEAD: an object id (SHA-1's 40 hex digits, or SHA-256's 64).
    Some(buf.len() >= 40 && buf[..40].iter().all(u8::is_ascii_hexdigit))
}

/// The real path of the folder the `commondir` file `cd` (of `dir`) names,
/// as git reads it (trailing line ends dropped, relative to `dir`).
fn common_dir(dir: &Path, cd: &Path) -> Option<PathBuf> {
    let f = crate::regular::open(cd).ok()?;
    let mut buf = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut buf).ok()?;
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    if buf.is_empty() || buf.contains(&0) {
        return None;
    }
    let text = PathBuf::from(std::ffi::OsStr::from_bytes(&buf));
    dir.join(text).canonicalize().ok()
}

/// Where `p` leads when git can enter it (`access(X_OK)`), else None.
fn enterable(p: &Path) -> Option<Id> {
    rustix::fs::access(p, rustix::fs::Access::EXEC_OK).ok()?;
    let m = p.metadata().ok()?;
    Some((m.dev(), m.ino(), m.mode()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_a_git_directory_as_git_decides() {
        let t = tempfile::tempdir().expect("tmp");
        let d = t.path().join("r");
        std::fs::create_dir_all(d.join("refs")).expect("mkdir");
        std::fs::write(d.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        assert!(marks(&d).is_none(), "no objects");
        std::fs::write(d.join("objects"), "").expect("write");
        assert!(marks(&d).is_none(), "objects cannot be entered");
        std::fs::set_permissions(
            d.join("objects"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        let m = marks(&d).expect("a git directory");
        assert!(m.sure());
        std::fs::write(d.join("HEAD"), "x\n").expect("write");
        assert!(marks(&d).is_none(), "an invalid HEAD");
        std::fs::write(d.join("HEAD"), format!("{}\n", "a".repeat(40))).expect("write");
        assert_eq!(marks(&d), Some(m.clone()), "a detached HEAD");
        std::fs::create_dir(d.join(".git")).expect("mkdir");
        assert_ne!(marks(&d), Some(m), "a `.git` inside changes the marks");
        // Through `commondir`: the common folder's `objects` and `refs`.
        let w = t.path().join("w");
        std::fs::create_dir_all(t.path().join("c/objects")).expect("mkdir");
        std::fs::create_dir_all(&w).expect("mkdir");
        std::fs::write(w.join("HEAD"), "ref: refs/heads/x").expect("write");
        std::fs::write(w.join("commondir"), "../c\r\n").expect("write");
        assert!(marks(&w).is_none());
        std::fs::create_dir(t.path().join("c/refs")).expect("mkdir");
        assert!(marks(&w).is_some_and(|m| m.sure()));
        std::fs::write(w.join("commondir"), "../gone\n").expect("write");
        assert!(
            marks(&w).is_some_and(|m| !m.sure()),
            "git would die: unsure"
        );
    }
}
