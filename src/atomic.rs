//! Atomic file writes, and the temporary files plangate has in flight.
//!
//! A write goes to a new file in the target's folder, which is renamed over
//! the target once complete: a reader sees the old file or the new one,
//! never half of one.
//!
//! plangate rewrites its report and manifest in the output folder while the
//! sweeps scan that folder. Every temporary file of a write here is in
//! [`in_flight`] from its creation (made under the registry's lock) until it
//! is renamed or removed, and the sweeps skip those: they hold plangate's own text,
//! already redacted, and reading one would race its rename (a file gone
//! between listing and reading would be "unscannable", exit 4) or withhold
//! a file plangate is about to rename into place. The name cannot be
//! claimed by a step: the temporary file is created with `O_EXCL`.

use std::collections::HashSet;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

/// The permissions of the written file.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    /// The target's current permissions (the target must exist).
    Keep,
    /// These bits.
    Set(u32),
    /// The target's current permissions and, where plangate may set them,
    /// its owner and group (the target must exist): a file rewritten for
    /// someone else stays theirs.
    Like,
}

/// The registry lives with the output folder's guard, which skips them too.
fn registry() -> MutexGuard<'static, HashSet<PathBuf>> {
    crate::outdir::in_flight()
}

/// Whether `path` is the temporary file of a write in progress.
pub(crate) fn in_flight(path: &Path) -> bool {
    registry().contains(path)
}

/// A temporary file's entry in the registry, removed when dropped.
struct Entry(PathBuf);

impl Drop for Entry {
    fn drop(&mut self) {
        registry().remove(&self.0);
    }
}

/// Write `path` atomically: `fill` writes the content, then the file gets
/// `mode`, is fsynced when `sync`, and is renamed over `path`.
pub(crate) fn write(
    path: &Path,
    mode: Mode,
    sync: bool,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let (perms, owner) = match mode {
        Mode::Keep => (std::fs::metadata(path)?.permissions(), None),
        Mode::Like => {
            let m = std::fs::metadata(path)?;
            (m.permissions(), Some((m.uid(), m.gid())))
        }
        Mode::Set(bits) => (std::fs::Permissions::from_mode(bits), None),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    // In the output folder: through its pinned descriptor, no link followed
    // (`crate::outdir`); `target` is where the rename goes.
    let pinned = crate::outdir::Pinned::open(dir).transpose()?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("not a file name"))?;
    let (at, target) = match &pinned {
        Some(p) => {
            p.clear_for_file(name, path);
            (p.join(std::ffi::OsStr::new("")), p.join(name))
        }
        None => (dir.to_path_buf(), path.to_path_buf()),
    };
    // Created and registered under the registry's lock: a sweep that lists
    // the folder in between waits in `in_flight` until the entry is there.
    let (mut tmp, entry) = {
        let mut reg = registry();
        let tmp = tempfile::Builder::new()
            .prefix(".plangate-tmp-")
            .tempfile_in(&at)?;
        // Registered under the name the sweeps list it by.
        let listed = dir.join(tmp.path().file_name().unwrap_or_default());
        reg.insert(listed.clone());
        (tmp, Entry(listed))
    };
    {
        let mut w = io::BufWriter::new(tmp.as_file_mut());
        fill(&mut w)?;
        w.flush()?;
    }
    if let Some((uid, gid)) = owner {
        let m = tmp.as_file().metadata()?;
        if (m.uid(), m.gid()) != (uid, gid) {
            // Only root may give a file away: otherwise it stays plangate's.
            let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(uid), Some(gid));
        }
    }
    tmp.as_file().set_permissions(perms)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    // Still in flight until renamed: dropped after the rename (or the
    // removal of the temporary file when it fails).
    let done = tmp.persist(&target).map(drop).map_err(|e| e.error);
    drop(entry);
    done
}

/// [`write`] of bytes.
pub(crate) fn write_bytes(path: &Path, mode: Mode, bytes: &[u8]) -> io::Result<()> {
    write(path, mode, false, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_file_is_in_flight_only_while_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report.json");
        let mut seen = None;
        write(&target, Mode::Set(0o644), true, |w| {
            let tmp = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p != &target)
                .unwrap();
            assert!(in_flight(&tmp), "{tmp:?}");
            seen = Some(tmp);
            w.write_all(b"{}\n")
        })
        .unwrap();
        let tmp = seen.unwrap();
        assert!(!in_flight(&tmp));
        assert!(!tmp.exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"{}\n");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn a_failed_write_leaves_the_target_and_nothing_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = write(&target, Mode::Keep, false, |_| Err(io::Error::other("no"))).unwrap_err();
        assert_eq!(e.to_string(), "no");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(registry().iter().all(|p| !p.starts_with(dir.path())));
        write_bytes(&target, Mode::Keep, b"new").unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(
            (std::fs::read(&target).unwrap(), mode & 0o777),
            (b"new".to_vec(), 0o600)
        );
    }
}
