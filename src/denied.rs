//! The files the permission rules deny reading, by identity.
//!
//! A rule denies a path, but the content lives in an inode: a step that may
//! write the workspace can give a denied file another name without reading
//! it (`ln`, `cp --link`, `os.link`, `mv` of the file or of a folder above
//! it; under Landlock the new name stays unreadable to the step, since the
//! kernel refuses a link that would gain rights). plangate itself reads
//! every name. So every file hidden from a step (and every file the diff
//! withholds) is recorded here by `(device, inode)` when the run and each
//! step start ([`record`]); a later step's sandbox hides such a file under
//! its new name too (`hidden_by` of the sandboxed tools); every place plangate shows, copies or
//! pushes content asks [`is_denied`] of the file it opened: the diff
//! summary (content withheld, row kept), the permission judge of the
//! in-process tools (`find_in_files`, `archive`, an agent's stage), the
//! sweeps of the output folder (such a file is withheld) and the push of a
//! pull or merge request (refused). Each recorded file is held open
//! (`O_PATH`) for the rest of the run, so its inode number cannot be given to
//! a new file when a step deletes or replaces the denied one: an identity
//! means one file. Past [`max_pins`] open files a further one is recorded
//! unpinned, and a new file that reuses its number is withheld too
//! (fail-close).

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Each recorded identity, with the descriptor that keeps its inode
/// allocated (`None`: past the budget, or the file could not be opened).
type Pins = HashMap<(u64, u64), Option<OwnedFd>>;

fn set() -> MutexGuard<'static, Pins> {
    static S: OnceLock<Mutex<Pins>> = OnceLock::new();
    S.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// How many recorded files are held open: a quarter of the soft limit on
/// open files, so the steps' pipes and the walks keep their room.
fn max_pins() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    usize::try_from(soft / 4).unwrap_or(usize::MAX)
}

/// A descriptor for the file at `path` if it is still the file `(dev, ino)`
/// (it may have been replaced since the walk looked).
fn pin(path: &Path, id: (u64, u64)) -> Option<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    (st.st_dev == id.0 && st.st_ino == id.1).then_some(fd)
}

/// Record `path` (a file or a folder, links not followed) and every file
/// beneath it as denied. What cannot be looked at is skipped: nobody can
/// read it through another name either.
///
/// With `stamps`, every entry beneath `path` is also added to them as it is
/// now (see [`stamps`]): one walk for both. Past [`MAX_STAMPS`]
/// entries in all, stamping stops (the recording goes on) and the result
/// is false.
pub(crate) fn record_stamped(path: &Path, mut stamps: Option<&mut Stamps>) -> bool {
    let mut found = Vec::new();
    let mut within = true;
    for e in walkdir::WalkDir::new(path)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        let Ok(m) = e.metadata() else { continue };
        if let Some(out) = stamps.as_deref_mut().filter(|_| within) {
            within = out.len() < MAX_STAMPS;
            if within {
                out.insert(e.path().to_path_buf(), stamp_of(&m));
            }
        }
        if m.file_type().is_file() {
            found.push(((m.dev(), m.ino()), e.into_path()));
        }
    }
    let mut s = set();
    let budget = max_pins();
    let mut pinned = s.values().filter(|p| p.is_some()).count();
    for (id, path) in found {
        if matches!(s.get(&id), Some(Some(_))) {
            continue;
        }
        let fd = (pinned < budget).then(|| pin(&path, id)).flatten();
        pinned += usize::from(fd.is_some());
        s.insert(id, fd);
    }
    within
}

/// Whether any file is recorded.
pub(crate) fn any() -> bool {
    !set().is_empty()
}

/// Whether `meta` is a regular file recorded as denied (under any name).
pub(crate) fn is_denied(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_file() && is_denied_id(meta.dev(), meta.ino())
}

/// Whether the file `(dev, ino)` is recorded as denied.
pub(crate) fn is_denied_id(dev: u64, ino: u64) -> bool {
    let s = set();
    !s.is_empty() && s.contains_key(&(dev, ino))
}

/// Whether `path` (links not followed) is a regular file recorded as denied.
pub(crate) fn path_is_denied(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| is_denied(&m))
}

/// Most entries beneath the hidden paths [`stamps`] compares.
const MAX_STAMPS: usize = 100_000;

/// An entry's kind, identity, size and times.
type Stamp = (u32, u64, u64, u64, i64, i64, i64, i64);

/// Entries by path, as [`stamps`] saw them.
pub(crate) type Stamps = BTreeMap<std::path::PathBuf, Stamp>;

/// Every entry beneath `hidden` (links not followed), by path, as it is
/// now: what a writing step must leave as it found it. An error past
/// [`MAX_STAMPS`] entries (the step is then not run).
pub(crate) fn stamps(hidden: &[std::path::PathBuf]) -> Result<Stamps, String> {
    let mut out = BTreeMap::new();
    for h in hidden {
        for e in walkdir::WalkDir::new(h).follow_links(false) {
            let Ok(e) = e else { continue };
            let Ok(m) = e.metadata() else { continue };
            if out.len() >= MAX_STAMPS {
                return Err(too_many());
            }
            out.insert(e.into_path(), stamp_of(&m));
        }
    }
    Ok(out)
}

/// Why a writing step is not run when [`stamps`] cannot take them all.
pub(crate) fn too_many() -> String {
    format!(
        "the paths the permission rules deny hold more than {MAX_STAMPS} entries: too many to check that a step that may write the workspace leaves them as they are; the step was not run"
    )
}

fn stamp_of(m: &std::fs::Metadata) -> Stamp {
    (
        m.mode(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    )
}

/// The entries (relative to `root`) that changed, went or came beneath
/// `hidden` since `before` was taken.
pub(crate) fn changed(root: &Path, hidden: &[std::path::PathBuf], before: &Stamps) -> Vec<String> {
    let now = stamps(hidden).unwrap_or_default();
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut out: Vec<String> = before
        .iter()
        .filter(|(p, s)| now.get(*p) != Some(*s))
        .map(|(p, _)| rel(p))
        .chain(
            now.keys()
                .filter(|p| !before.contains_key(*p))
                .map(|p| rel(p)),
        )
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The reason given where the content of such a file is withheld.
pub(crate) const WHY: &str = "it is the same file (a hard link, or the file renamed) as one the permission rules deny reading";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_to_a_recorded_file_is_denied_and_a_copy_is_not() {
        let t = tempfile::tempdir().expect("tmp");
        let r = t.path();
        std::fs::create_dir_all(r.join("d/e")).expect("mkdir");
        std::fs::write(r.join("d/e/key"), "k").expect("write");
        std::fs::write(r.join("other"), "o").expect("write");
        std::fs::hard_link(r.join("d/e/key"), r.join("alias")).expect("link");
        std::fs::copy(r.join("d/e/key"), r.join("copy")).expect("copy");
        record_stamped(&r.join("d"), None);
        assert!(path_is_denied(&r.join("alias")));
        assert!(path_is_denied(&r.join("d/e/key")));
        assert!(!path_is_denied(&r.join("copy")));
        assert!(!path_is_denied(&r.join("other")));
        assert!(!path_is_denied(&r.join("d")));
    }

    #[test]
    fn a_new_file_never_takes_the_identity_of_a_deleted_denied_one() {
        // ext4 and others hand a freed inode number to the next new file:
        // a step that replaced a denied file must not make plangate withhold
        // an unrelated artifact written after it.
        let t = tempfile::tempdir().expect("tmp");
        let r = t.path();
        std::fs::write(r.join("gone.env"), "k").expect("write");
        record_stamped(&r.join("gone.env"), None);
        std::fs::remove_file(r.join("gone.env")).expect("rm");
        for i in 0..64 {
            let p = r.join(format!("new{i}"));
            std::fs::write(&p, "n").expect("write");
            assert!(!path_is_denied(&p), "{}", p.display());
        }
    }
}
