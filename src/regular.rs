//! Reading files a step could have made: only regular files are read.
//!
//! A step can leave a FIFO, a socket or a device node where plangate reads
//! afterwards (its artifact folder, the workspace, `.git/hooks`, the file
//! named by `$PLANGATE_OUTPUT`). Opening a FIFO for reading blocks until a
//! writer comes, which would hang plangate for ever; reading a device may
//! never end. Every such read goes through [`open`]: the file is opened with
//! `O_NONBLOCK` (so opening a FIFO returns at once) and `O_NOCTTY`, and its
//! type is checked on the open descriptor (`fstat`, so swapping the path
//! between a check and the open changes nothing). Anything but a regular
//! file is refused with [`NotRegular`] as the error, which callers turn
//! into a warning (and, where the file would reach the output folder, a
//! withheld file).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The error of a refused special file: what it is.
#[derive(Debug, thiserror::Error)]
#[error("not a regular file ({0}): refused, plangate reads only regular files")]
pub(crate) struct NotRegular(pub(crate) &'static str);

/// What kind of special file `t` is.
pub(crate) fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Whether `err` is a refusal of a special file (by [`open`]).
pub(crate) fn is_not_regular(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<NotRegular>())
}

/// Open `path` for reading, following symbolic links, only if it is a
/// regular file; never blocks on a FIFO.
pub(crate) fn open(path: &Path) -> io::Result<File> {
    open_regular(path, false)
}

/// Open `path` for reading only if it is itself a regular file, not a
/// symbolic link to one: a file a step names for plangate to read (a link
/// would have plangate read, with its own rights, what the step cannot).
pub(crate) fn open_no_link(path: &Path) -> io::Result<File> {
    match open_flags(path, false, libc::O_NOFOLLOW) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            Err(io::Error::other(NotRegular("a symbolic link")))
        }
        r => r,
    }
}

/// Open `path` for reading and writing, only if it is a regular file.
pub(crate) fn open_rw(path: &Path) -> io::Result<File> {
    open_regular(path, true)
}

fn open_regular(path: &Path, write: bool) -> io::Result<File> {
    open_flags(path, write, 0)
}

/// Open without blocking (a FIFO never waits for a writer), then refuse
/// anything `fstat` does not call a regular file (no race with a swap).
fn open_flags(path: &Path, write: bool, flags: i32) -> io::Result<File> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | flags)
        .open(path)
    {
        Ok(f) => f,
        // A socket cannot be opened (ENXIO): say what it is.
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(match replaced(path) {
                Some(what) => io::Error::other(NotRegular(what)),
                None => e,
            });
        }
        Err(e) => return Err(e),
    };
    let t = f.metadata()?.file_type();
    if !t.is_file() {
        return Err(io::Error::other(NotRegular(kind(t))));
    }
    Ok(f)
}

/// What stands at `path` when it is not a regular file (a symbolic link
/// is not followed; nothing is opened, so a FIFO never blocks); None for a
/// regular file or nothing at all.
pub(crate) fn replaced(path: &Path) -> Option<&'static str> {
    let t = path.symlink_metadata().ok()?.file_type();
    (!t.is_file()).then(|| kind(t))
}

/// `std::fs::read` of a regular file only.
pub(crate) fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut f = open(path)?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// `std::fs::read_to_string` of a regular file only.
pub(crate) fn read_to_string(path: &Path) -> io::Result<String> {
    let mut f = open(path)?;
    let mut s = String::new();
    f.read_to_string(&mut s)?;
    Ok(s)
}

/// The names git, and the `ignore` walker plangate's diff uses, open by
/// name in any folder of a work tree (`.git` is read when it is a file).
pub(crate) const OPENED_BY_NAME: [&str; 6] = [
    ".gitignore",
    ".ignore",
    ".gitattributes",
    ".gitmodules",
    ".mailmap",
    ".git",
];

/// Whether opening `path` by name (following links, as git and the
/// `ignore` crate do) would reach a FIFO, socket or device: a reader would
/// block for ever (a FIFO) or read without end (a device). Says what it is;
/// None for a regular file, a folder, a link to one, or nothing at all.
pub(crate) fn blocking(path: &Path) -> Option<&'static str> {
    let lm = path.symlink_metadata().ok()?;
    let t = lm.file_type();
    if t.is_symlink() {
        // A link that leads nowhere (or in a loop) opens nothing.
        let m = path.metadata().ok()?;
        let t = m.file_type();
        return (!t.is_file() && !t.is_dir()).then_some("a symbolic link to a special file");
    }
    (!t.is_file() && !t.is_dir()).then(|| kind(t))
}

/// Whether the entry `name` of a folder, `in_git` (below a folder named
/// `.git` in any case: a git directory, whose every file git may open by
/// name), is one git or plangate opens by name.
pub(crate) fn opened_by_name(name: &std::ffi::OsStr, in_git: bool) -> bool {
    in_git || OPENED_BY_NAME.iter().any(|n| name == *n)
}

/// Whether a path component is `.git` in any case (git refuses such paths
/// everywhere: `.Git` is as much a git directory to it as `.git`).
pub(crate) fn is_dot_git(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

/// Whether the entry `rel` (a relative path) lies in a git directory
/// (below a folder named `.git` in any case) where git opens files by
/// name: not in its `hooks/` (git runs a hook, it does not read it; running
/// a FIFO fails at once) nor in its object store's loose and packed objects
/// (`objects/` but `objects/info/`).
pub(crate) fn in_git_dir(rel: &Path) -> bool {
    let names: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let Some(at) = names
        .iter()
        .take(names.len().saturating_sub(1))
        .position(|n| is_dot_git(n))
    else {
        return false;
    };
    match &names[at + 1..] {
        [first, ..] if *first == "hooks" => false,
        [first, second, ..] if *first == "objects" => *second == "info",
        _ => true,
    }
}

/// The first file the `ignore` walker would open when it enters the
/// folder `dir` that would block it ([`blocking`]): its `.gitignore` and
/// `.ignore`, its `.git`, and the `info/exclude` of the git directory the
/// `.git` names, found the way the walker finds it (a `.git` file's
/// `gitdir:` line, taken as it is, then that folder's `commondir`). None
/// when entering is safe.
pub(crate) fn walk_trap(dir: &Path) -> Option<std::path::PathBuf> {
    for name in [".gitignore", ".ignore", ".git"] {
        let p = dir.join(name);
        if blocking(&p).is_some() {
            return Some(p);
        }
    }
    let dot = dir.join(".git");
    let m = dot.metadata().ok()?;
    let common = if m.is_dir() {
        dot
    } else {
        let text = first_line(&dot)?;
        let real = std::path::PathBuf::from(text.strip_prefix("gitdir: ")?);
        let commondir = real.join("commondir");
        if blocking(&commondir).is_some() {
            return Some(commondir);
        }
        let line = first_line(&commondir)?;
        if line.starts_with('.') {
            real.join(line)
        } else {
            std::path::PathBuf::from(line)
        }
    };
    let exclude = common.join("info/exclude");
    blocking(&exclude).is_some().then_some(exclude)
}

/// The first line of a small regular file (never blocks).
fn first_line(path: &Path) -> Option<String> {
    let mut f = open(path).ok()?;
    let mut buf = Vec::new();
    f.by_ref().take(64 * 1024).read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    text.lines().next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_socket_and_a_device_are_refused_at_once_a_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let started = std::time::Instant::now();
        for (p, what) in [
            (&fifo, "FIFO"),
            (&link, "FIFO"),
            (&Path::new("/dev/zero").to_path_buf(), "character device"),
        ] {
            let e = read(p).expect_err("refused");
            assert!(is_not_regular(&e), "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
        // A socket cannot be opened at all (ENXIO): an error all the same.
        assert!(read(&sock).is_err());
        assert!(read(dir.path()).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(read(&file).unwrap(), b"x");
        assert_eq!(read_to_string(&file).unwrap(), "x");
        assert!(open_rw(&fifo).is_err());
    }
}
