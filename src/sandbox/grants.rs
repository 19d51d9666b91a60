//! The system trees' Landlock grants of a step confined by a resident
//! supervisor (`super::lane`): opened once, and reused for the next step
//! while every folder that decided them is unchanged.
//!
//! What a step may read of the system ([`super::reads`]) is the same for
//! every step: the roots that exist, `/etc` carved around its password
//! hashes and host keys, `/etc/resolv.conf`'s target, `/proc`. Building it
//! (listing `/etc`, opening and checking some 150 paths) was a sixth of a
//! Landlock step's CPU time. The opened paths are kept with a stamp (device,
//! inode, modification and change times) of each folder whose entries
//! decided them: `/`, the folders on the way to a hidden file, the folder of
//! each root and of `resolv.conf`'s target. Adding, removing or renaming an
//! entry there changes the folder's times, and the grants are then built
//! again. A grant holds its inode: a file changed in place stays granted, a
//! file replaced by another (a rename) changes its folder. Stamps younger
//! than two seconds are not trusted (the file clock is coarse): the grants
//! are then built again for each step, as without this cache.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use landlock::{AccessFs, BitFlags, PathFd};

/// A folder's identity and times, as last seen.
type Stamp = (u64, u64, i64, i64, i64, i64);

/// Opened system grants: each path with its rights (already narrowed to a
/// file's rights for a file).
pub(super) struct Grants {
    /// The rules.
    pub rules: Vec<(PathFd, BitFlags<AccessFs>)>,
    /// The folders that decided them, as they were (None: absent).
    seen: Vec<(PathBuf, Option<Stamp>)>,
}

static CACHE: Mutex<Option<std::sync::Arc<Grants>>> = Mutex::new(None);

fn stamp(p: &Path) -> Option<Stamp> {
    let m = std::fs::symlink_metadata(p).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// The grants for `read` (read beneath) and `list` (listing only) paths,
/// decided by the folders `seen`: the cached ones when those folders are
/// unchanged, else opened now (and cached when their stamps are old enough).
pub(super) fn system(
    build: impl FnOnce() -> Result<(Vec<PathBuf>, Vec<PathBuf>), String>,
    read: BitFlags<AccessFs>,
    list: BitFlags<AccessFs>,
) -> Result<std::sync::Arc<Grants>, String> {
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(g) = cache.as_ref()
        && g.seen.iter().all(|(p, s)| stamp(p) == *s)
    {
        return Ok(std::sync::Arc::clone(g));
    }
    *cache = None;
    let before = std::time::SystemTime::now();
    let (ro, ls) = build()?;
    let mut folders: Vec<PathBuf> = vec![PathBuf::from("/")];
    for p in ro.iter().chain(&ls) {
        if let Some(parent) = p.parent() {
            folders.push(parent.to_path_buf());
        }
    }
    folders.extend(ls.iter().cloned());
    // `/etc/resolv.conf` decides which file outside the roots is granted.
    folders.push(PathBuf::from("/etc"));
    folders.sort();
    folders.dedup();
    let seen: Vec<(PathBuf, Option<Stamp>)> = folders
        .into_iter()
        .map(|f| {
            let s = stamp(&f);
            (f, s)
        })
        .collect();
    let mut rules = Vec::new();
    for (paths, access) in [(&ro, read), (&ls, list)] {
        for p in paths {
            // As `landlock::path_beneath_rules`: a path that cannot be opened is left out.
            let Ok(fd) = PathFd::new(p) else { continue };
            let is_dir = rustix::fs::fstat(&fd)
                .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir());
            let access = if is_dir {
                access
            } else {
                access & AccessFs::from_file(landlock::ABI::V3)
            };
            rules.push((fd, access));
        }
    }
    // Rebuilt until every stamp is older than the clock's granularity.
    let old = |secs: i64| {
        let limit = before
            .checked_sub(std::time::Duration::from_secs(2))
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        secs < limit
    };
    let settled = seen
        .iter()
        .all(|(_, s)| s.is_none_or(|(_, _, m, _, c, _)| old(m) && old(c)));
    let grants = std::sync::Arc::new(Grants { rules, seen });
    if settled {
        *cache = Some(std::sync::Arc::clone(&grants));
    }
    Ok(grants)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_change_when_a_folder_gains_an_entry() {
        let t = tempfile::tempdir().expect("tmp");
        let before = stamp(t.path()).expect("stamp");
        std::fs::write(t.path().join("new"), "x").expect("write");
        let after = stamp(t.path()).expect("stamp");
        // Same folder; its times moved (or, within one clock tick, did not:
        // such a young stamp is never cached).
        assert_eq!((before.0, before.1), (after.0, after.1));
        assert!(stamp(&t.path().join("absent")).is_none());
    }
}
