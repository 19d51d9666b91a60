//! A step's private temporary folder (`TMPDIR`): empty, under a name no
//! step has seen, removed when the step is over.
//!
//! On ext4 without a journal, every inode created scans past each inode of
//! its block group deleted in the last minutes (`recently_deleted`): a run
//! of a thousand short steps that made and removed a folder each paid for
//! it quadratically (a third of its CPU time). So a folder the step left
//! exactly as it got it (empty, plangate's owner, its first mode, no extended
//! attribute, no inode flag, not a mount point), after every process of the
//! step is gone, is renamed to a new random name and handed to a later step
//! instead of being removed; anything else is removed as before. What a
//! later step sees is the same as a new folder but for its inode number
//! and times.

use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

const PREFIX: &str = "plangate-step-";

/// Emptied folders, renamed, waiting for a step (with the mode each was made with).
static POOL: Mutex<Vec<(PathBuf, u32)>> = Mutex::new(Vec::new());

/// A step's private temporary folder.
#[derive(Debug)]
pub(crate) struct StepTemp {
    path: PathBuf,
    /// The permission bits it was made with.
    mode: u32,
}

impl StepTemp {
    /// A folder from the pool, else a new one.
    pub(crate) fn new() -> std::io::Result<StepTemp> {
        let pooled = POOL.lock().unwrap_or_else(PoisonError::into_inner).pop();
        if let Some((path, mode)) = pooled {
            return Ok(StepTemp { path, mode });
        }
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()?;
        let mode = std::fs::symlink_metadata(dir.path())?.mode() & 0o7777;
        Ok(StepTemp {
            path: dir.keep(),
            mode,
        })
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The step is over: `settled` when every process it started is known
    /// to be gone (its supervisor said so). Then a folder left untouched goes
    /// back to the pool under a new name; else it is removed.
    pub(crate) fn finish(self, settled: bool) {
        let (path, mode) = (self.path.clone(), self.mode);
        std::mem::forget(self);
        if settled && let Some(renamed) = untouched_renamed(&path, mode) {
            POOL.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((renamed, mode));
            return;
        }
        let _ = std::fs::remove_dir_all(&path);
    }
}

impl Drop for StepTemp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Remove the pooled folders (the run is over).
pub(crate) fn close_all() {
    let pooled = std::mem::take(&mut *POOL.lock().unwrap_or_else(PoisonError::into_inner));
    for (p, _) in pooled {
        let _ = std::fs::remove_dir(&p);
    }
}

/// If `path` is a folder exactly as [`StepTemp::new`] made it (`mode`), its
/// new name (renamed, never over an existing entry); None otherwise.
fn untouched_renamed(path: &Path, mode: u32) -> Option<PathBuf> {
    use rustix::fs::{AtFlags, Mode, OFlags, StatxAttributes, StatxFlags, open, statx};
    let fd = open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = statx(&fd, "", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS).ok()?;
    let flags = StatxAttributes::IMMUTABLE | StatxAttributes::APPEND | StatxAttributes::MOUNT_ROOT;
    let known = st.stx_attributes_mask.contains(flags);
    let as_made = known
        && !st.stx_attributes.intersects(flags)
        && st.stx_uid == rustix::process::geteuid().as_raw()
        && st.stx_gid == rustix::process::getegid().as_raw()
        && u32::from(st.stx_mode) & 0o7777 == mode
        && st.stx_nlink == 2;
    if !as_made || !no_xattrs(fd.as_fd()) || !is_empty(path) {
        return None;
    }
    let parent = path.parent()?;
    let fresh = parent.join(format!("{PREFIX}{}", random_name()));
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        path,
        rustix::fs::CWD,
        &fresh,
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .ok()?;
    // The very folder that was checked (nothing swapped it meanwhile).
    let same = std::fs::symlink_metadata(&fresh).is_ok_and(|m| {
        m.is_dir()
            && m.ino() == st.stx_ino
            && rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor) == m.dev()
    });
    if same {
        Some(fresh)
    } else {
        let _ = std::fs::remove_dir_all(&fresh);
        None
    }
}

fn no_xattrs(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    let mut none: [u8; 0] = [];
    rustix::fs::flistxattr(fd, &mut none[..]).is_ok_and(|n| n == 0)
}

fn is_empty(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

fn random_name() -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..12)
        .map(|_| char::from(CHARS[fastrand::usize(..CHARS.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> StepTemp {
        StepTemp::new().expect("temp")
    }

    #[test]
    fn an_untouched_folder_comes_back_renamed_and_anything_else_is_removed() {
        // Alone in the pool for this test's thread: take what it gives.
        let t = fresh();
        let first = t.path().to_path_buf();
        let first_ino = std::fs::metadata(&first).expect("meta").ino();
        t.finish(true);
        assert!(!first.exists(), "renamed away");
        let t = fresh();
        let second = t.path().to_path_buf();
        assert!(second.is_dir());
        assert_ne!(first, second);
        let mode = std::fs::metadata(&second).expect("meta").mode() & 0o7777;
        assert_eq!(mode, t.mode);
        // The very folder, renamed (this test alone uses the pool).
        let ino = |p: &Path| std::fs::metadata(p).expect("meta").ino();
        assert_eq!(ino(&second), first_ino);
        // A file left inside: removed, not pooled.
        std::fs::write(second.join("left"), "x").expect("write");
        t.finish(true);
        assert!(!second.exists());
        // A changed mode: removed.
        let t = fresh();
        let p = t.path().to_path_buf();
        let other = if t.mode == 0o700 { 0o755 } else { 0o700 };
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(other))
            .expect("chmod");
        t.finish(true);
        assert!(!p.exists());
        // A subfolder: removed.
        let t = fresh();
        let p = t.path().to_path_buf();
        std::fs::create_dir(p.join("d")).expect("mkdir");
        t.finish(true);
        assert!(!p.exists());
        // Not settled (processes may remain): removed even when untouched.
        let t = fresh();
        let p = t.path().to_path_buf();
        t.finish(false);
        assert!(!p.exists());
        // Replaced by a link: the link is removed, its target left alone.
        let outside = tempfile::tempdir().expect("outside");
        let t = fresh();
        let p = t.path().to_path_buf();
        std::fs::remove_dir(&p).expect("rmdir");
        std::os::unix::fs::symlink(outside.path(), &p).expect("link");
        t.finish(true);
        assert!(p.symlink_metadata().is_err());
        assert!(outside.path().is_dir());
        close_all();
    }
}
