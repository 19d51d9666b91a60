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
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | flags)
        .open(path)?;
    let t = f.metadata()?.file_type();
    if !t.is_file() {
        return Err(io::Error::other(NotRegular(kind(t))));
    }
    Ok(f)
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
