//! Removing what the sweep withholds from the output folder, whatever a
//! step made of it. plangate owns the output folder: a folder a step left
//! without read, write or search for plangate's user is given them back
//! (`u+rwx`, as its owner) before it is listed or emptied; a tree deeper
//! than `PATH_MAX` (no path names its files) is removed relative to open
//! folders, one level at a time: any depth, two descriptors at most.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// Give plangate's user read, write and search on the folder `dir` when a
/// step took any of them away (a folder left `0o000`, `0o300` or `0o500`):
/// the sweep must list it, rewrite what it holds and remove what it withholds.
/// A link or a file is left alone.
pub(crate) fn make_owner_rwx(dir: &Path) -> io::Result<()> {
    let m = std::fs::symlink_metadata(dir)?;
    let mode = m.permissions().mode();
    if !m.is_dir() || mode & 0o700 == 0o700 {
        return Ok(());
    }
    std::fs::set_permissions(
        dir,
        std::fs::Permissions::from_mode((mode | 0o700) & 0o7777),
    )
}

/// Remove `path` (a file, a link, a special file, or a folder with all it
/// holds, at any depth) from its folder; a path that is already gone is no
/// error. Its folder must be listable by path (the sweep walked it).
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::other("not a path inside a folder"));
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    // Ignored: when it fails, opening or removing says why.
    let _ = make_owner_rwx(parent);
    let dir = match rustix::fs::open(parent, dir_flags(), Mode::empty()) {
        Ok(d) => d,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    remove_at(&dir, name)
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Open the folder `name` of `at` (never through a link), making it
/// `0o700` first when plangate's user may not open it.
fn open_dir_at(at: impl AsFd, name: &OsStr) -> io::Result<OwnedFd> {
    match rustix::fs::openat(&at, name, dir_flags(), Mode::empty()) {
        Err(Errno::ACCESS) => {
            rustix::fs::chmodat(&at, name, Mode::RWXU, AtFlags::empty())?;
            Ok(rustix::fs::openat(&at, name, dir_flags(), Mode::empty())?)
        }
        r => Ok(r?),
    }
}

/// Unlink `name` from the folder `at`: true when it is gone, false when it
/// is a folder (to empty first).
fn unlink(at: impl AsFd, name: &OsStr) -> io::Result<bool> {
    match rustix::fs::unlinkat(at, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        // Linux says EISDIR for a folder; POSIX allows EPERM.
        Err(Errno::ISDIR | Errno::PERM) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Remove `name` from the open folder `parent`: a file at once; a folder
/// emptied depth first, holding one folder open at a time and going back
/// up through `..` (the names on the way down are kept in memory).
fn remove_at(parent: &OwnedFd, name: &OsStr) -> io::Result<()> {
    if unlink(parent, name)? {
        return Ok(());
    }
    let mut names: Vec<OsString> = vec![name.to_owned()];
    let mut cur = open_dir_at(parent, name)?;
    loop {
        let mut sub = None;
        let mut removed = false;
        let mut list = rustix::fs::Dir::read_from(&cur)?;
        while let Some(entry) = list.read() {
            let entry = entry?;
            let n = OsStr::from_bytes(entry.file_name().to_bytes());
            if n == "." || n == ".." {
                continue;
            }
            if unlink(&cur, n)? {
                removed = true;
            } else {
                sub = Some(n.to_owned());
                break;
            }
        }
        drop(list);
        if let Some(n) = sub {
            cur = open_dir_at(&cur, &n)?;
            names.push(n);
            continue;
        }
        if removed {
            // Entries removed while listing may hide others: list again.
            continue;
        }
        let Some(done) = names.pop() else {
            return Ok(());
        };
        if names.is_empty() {
            drop(cur);
            rustix::fs::unlinkat(parent, &done, AtFlags::REMOVEDIR)?;
            return Ok(());
        }
        let up = rustix::fs::openat(&cur, "..", dir_flags(), Mode::empty())?;
        rustix::fs::unlinkat(&up, &done, AtFlags::REMOVEDIR)?;
        cur = up;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree far deeper than `PATH_MAX`, with a folder no one may list
    /// inside, is removed whole; what is next to it stays.
    #[test]
    fn a_tree_deeper_than_path_max_with_a_closed_folder_is_removed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("keep.txt"), "x").unwrap();
        let top = rustix::fs::open(d.path(), dir_flags(), Mode::empty()).unwrap();
        rustix::fs::mkdirat(&top, "deep", Mode::RWXU).unwrap();
        let mut cur = rustix::fs::openat(&top, "deep", dir_flags(), Mode::empty()).unwrap();
        let long = "d".repeat(200);
        for i in 0..40 {
            rustix::fs::mkdirat(&cur, long.as_str(), Mode::RWXU).unwrap();
            let f = rustix::fs::openat(
                &cur,
                format!("f{i}").as_str(),
                OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::RUSR,
            )
            .unwrap();
            drop(f);
            cur = rustix::fs::openat(&cur, long.as_str(), dir_flags(), Mode::empty()).unwrap();
        }
        rustix::fs::mkdirat(&cur, "closed", Mode::empty()).unwrap();
        drop(cur);
        remove(&d.path().join("deep")).unwrap();
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![OsString::from("keep.txt")]);
        // Gone already: no error.
        remove(&d.path().join("deep")).unwrap();
    }
}
