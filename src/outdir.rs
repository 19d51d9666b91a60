//! The output folder kept as plangate made it.
//!
//! A step that may write the workspace can reach the output folder when it
//! lies inside (GitLab's `--out plangate-out`): bwrap binds it read-only
//! but for the step's own artifact folder, Landlock cannot carve it out of
//! the workspace's grant. So plangate opens the folder when the run starts
//! ([`pin`]) and writes its own files (the atomic writes of `atomic.rs`, the audit
//! log) through that descriptor: each folder on the way is opened with
//! `O_NOFOLLOW` ([`Pinned::open`]), a link or a file where a folder belongs is
//! removed and the folder made again, a folder where plangate's file belongs
//! is removed before the rename. After each step and before the run ends,
//! when the folder lies inside the workspace, [`check`] compares its top two levels (the folder itself, its
//! entries, `artifacts/` and its entries) with what plangate recorded: what
//! a step planted, replaced or turned into a link there is removed and
//! named; the run then fails as for a file it cannot scan (exit 4).
//! Inside a step's artifact folder the sweeps judge what is there.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// Files plangate writes itself at the top of the output folder or in
/// `artifacts/` (rewritten at any time: their identity changes).
const OWN: &[&str] = &[
    "report.json",
    "audit.jsonl",
    "diff-summary.md",
    "artifacts/manifest.json",
    "gl-secret-detection-report.json",
];

/// The prefix of the atomic writes' temporary files.
const TMP_PREFIX: &str = ".plangate-tmp-";

/// An entry's kind and identity.
type Id = (bool, u64, u64);

struct State {
    /// The folder as given and as resolved when pinned.
    path: PathBuf,
    real: PathBuf,
    root: OwnedFd,
    /// Its identity.
    id: (u64, u64),
    /// The entries of the top two levels plangate knows, by relative path.
    known: HashMap<String, Id>,
    /// What was found changed and put right, not yet reported.
    tampered: Vec<String>,
    /// The folder lies inside the workspace (steps that write it can reach
    /// it): [`check`] compares its entries.
    guarded: bool,
}

/// The temporary files of the atomic writes in progress, by the
/// path the sweeps list them by.
pub(crate) fn in_flight() -> MutexGuard<'static, HashSet<PathBuf>> {
    static IN_FLIGHT: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    IN_FLIGHT
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn state() -> MutexGuard<'static, Option<State>> {
    static S: OnceLock<Mutex<Option<State>>> = OnceLock::new();
    S.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn id_of(m: &std::fs::Metadata) -> Id {
    (m.is_dir(), m.dev(), m.ino())
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The path of `fd` that the kernel resolves through the descriptor, never
/// through the names on the way to it.
fn via(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Pin the output folder `out` (it exists) before any step runs, and
/// record what its top two levels hold.
pub(crate) fn pin(out: &Path, workspace: &Path) -> std::io::Result<()> {
    let real = out.canonicalize()?;
    let guarded = workspace
        .canonicalize()
        .is_ok_and(|ws| real.starts_with(ws));
    let root = rustix::fs::open(&real, dir_flags(), Mode::empty())?;
    let st = rustix::fs::fstat(&root)?;
    let mut s = State {
        path: out.to_path_buf(),
        real,
        root,
        id: (st.st_dev, st.st_ino),
        known: HashMap::new(),
        tampered: Vec::new(),
        guarded,
    };
    for (rel, m) in entries(&via(&s.root)) {
        s.known.insert(rel, id_of(&m));
    }
    *state() = Some(s);
    Ok(())
}

/// The entries of the top level and of `artifacts/` under `base`.
fn entries(base: &Path) -> Vec<(String, std::fs::Metadata)> {
    let mut out = Vec::new();
    for (prefix, dir) in [
        ("", base.to_path_buf()),
        ("artifacts/", base.join("artifacts")),
    ] {
        if prefix == "artifacts/" && !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            if let Ok(m) = e.metadata() {
                out.push((format!("{prefix}{}", e.file_name().to_string_lossy()), m));
            }
        }
    }
    out
}

/// `path` relative to the pinned folder, when it lies inside it (by name).
fn inside(s: &State, path: &Path) -> Option<Vec<String>> {
    let rel = path
        .strip_prefix(&s.path)
        .or_else(|_| path.strip_prefix(&s.real))
        .ok()?;
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str()?.to_owned()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts)
}

/// A folder inside the pinned output folder, opened without following a link.
pub(crate) struct Pinned {
    fd: OwnedFd,
}

impl Pinned {
    /// The folder `dir` when it lies inside the pinned output folder, each
    /// folder on the way opened with `O_NOFOLLOW` and made when missing; a
    /// link or anything else where a folder belongs is removed (and said).
    /// None: not inside (or nothing pinned).
    pub(crate) fn open(dir: &Path) -> Option<std::io::Result<Pinned>> {
        let mut guard = state();
        let s = guard.as_mut()?;
        let parts = inside(s, dir)?;
        Some(walk(s, &parts).map(|fd| Pinned { fd }))
    }

    /// The path of `name` in this folder, resolved through its descriptor.
    pub(crate) fn join(&self, name: &std::ffi::OsStr) -> PathBuf {
        via(&self.fd).join(name)
    }

    /// Remove a folder (or anything but a file) that sits where plangate
    /// writes its file `name`, and say so.
    pub(crate) fn clear_for_file(&self, name: &std::ffi::OsStr, shown: &Path) {
        let p = self.join(name);
        if let Ok(m) = std::fs::symlink_metadata(&p)
            && m.is_dir()
        {
            let _ = std::fs::remove_dir_all(&p);
            note(format!(
                "`{}` was a folder where plangate writes its file: removed",
                shown.display()
            ));
        }
    }
}

fn walk(s: &mut State, parts: &[String]) -> std::io::Result<OwnedFd> {
    let mut fd = rustix::fs::openat(&s.root, ".", dir_flags(), Mode::empty())?;
    let mut rel = String::new();
    for seg in parts {
        if !rel.is_empty() {
            rel.push('/');
        }
        rel.push_str(seg);
        let next = match rustix::fs::openat(&fd, seg.as_str(), dir_flags(), Mode::empty()) {
            Ok(f) => f,
            Err(e) => {
                if e == Errno::LOOP || e == Errno::NOTDIR {
                    let _ = rustix::fs::unlinkat(&fd, seg.as_str(), AtFlags::empty());
                    s.tampered.push(format!(
                        "`{rel}` in the output folder was not a folder (a link or a file): removed"
                    ));
                } else if e != Errno::NOENT {
                    return Err(e.into());
                }
                match rustix::fs::mkdirat(&fd, seg.as_str(), Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&fd, seg.as_str(), dir_flags(), Mode::empty())?
            }
        };
        if let Ok(st) = rustix::fs::fstat(&next) {
            s.known.insert(rel.clone(), (true, st.st_dev, st.st_ino));
        }
        fd = next;
    }
    Ok(fd)
}

fn note(why: String) {
    if let Some(s) = state().as_mut() {
        s.tampered.push(why);
    }
}

/// Make the folder `dir` inside the pinned output folder (a step's artifact
/// folder) without following a link, and record it; elsewhere, as usual.
pub(crate) fn ensure_dir(dir: &Path) -> std::io::Result<()> {
    match Pinned::open(dir) {
        Some(r) => r.map(drop),
        None => std::fs::create_dir_all(dir),
    }
}

/// Make something in the output folder with `make` (a walled lane's
/// staging folder) and record it, at `path` of what was made, as
/// plangate's own: [`check`] cannot look in between.
pub(crate) fn made<T>(
    make: impl FnOnce() -> std::io::Result<T>,
    path: impl Fn(&T) -> &Path,
) -> std::io::Result<T> {
    let mut guard = state();
    let t = make()?;
    if let Some(s) = guard.as_mut() {
        let p = path(&t);
        if let (Some(parts), Ok(m)) = (inside(s, p), std::fs::symlink_metadata(p)) {
            s.known.insert(parts.join("/"), id_of(&m));
        }
    }
    Ok(t)
}

/// Open `path` inside the pinned folder for appending (no link followed).
pub(crate) fn append(path: &Path) -> std::io::Result<std::fs::File> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::Error::other("not a file in a folder"));
    };
    // Kept open while the path through it is opened.
    let pinned = Pinned::open(parent).transpose()?;
    let target = match &pinned {
        Some(p) => p.join(name),
        None => path.to_path_buf(),
    };
    let fd = rustix::fs::open(
        &target,
        OFlags::WRONLY | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(std::fs::File::from(fd))
}

/// Compare the output folder's top two levels with what plangate knows:
/// what changed is put right (removed; a folder plangate needs is made
/// again) and each is returned as `(location, why)`, with what was found
/// on the way since the last check.
pub(crate) fn check() -> Vec<(String, String)> {
    let mut guard = state();
    let Some(s) = guard.as_mut() else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> =
        s.tampered.drain(..).map(|w| (String::new(), w)).collect();
    if !s.guarded {
        // Outside the workspace: a step writes there only unsandboxed (the
        // sweeps judge what it wrote) or in its own folder.
        return found;
    }
    match std::fs::metadata(&s.path) {
        Ok(m) if (m.dev(), m.ino()) == s.id => {}
        _ => found.push((
            String::new(),
            format!(
                "the output folder `{}` was moved or replaced during the run; plangate kept writing into the folder it made",
                s.path.display()
            ),
        )),
    }
    let base = via(&s.root);
    let mut repair_artifacts = false;
    let now = entries(&base);
    // What plangate made that a step moved elsewhere in the folder: put back
    // once what sits in its place is removed.
    let mut back: Vec<(String, String)> = Vec::new();
    for (rel, id) in &s.known {
        let here = now.iter().find(|(r, _)| r == rel).map(|(_, m)| id_of(m));
        // Folders only: plangate rewrites its files through new inodes, and
        // the inode of one it replaced (a previous run's `report.json`) is
        // soon another file's.
        if here == Some(*id) || !id.0 {
            continue;
        }
        if let Some((from, _)) = now
            .iter()
            .find(|(r, m)| r != rel && id_of(m) == *id && s.known.get(r) != Some(id))
            && !rel.starts_with(&format!("{from}/"))
        {
            back.push((from.clone(), rel.clone()));
        }
    }
    for (rel, m) in now {
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        if name.starts_with(TMP_PREFIX) && in_flight().contains(&s.path.join(&rel)) {
            continue;
        }
        if back.iter().any(|(from, _)| *from == rel) {
            continue;
        }
        if std::fs::symlink_metadata(base.join(&rel)).is_err() {
            // Gone since listed (a write of plangate's renamed into place).
            continue;
        }
        let ok = if OWN.contains(&rel.as_str()) {
            m.file_type().is_file()
        } else {
            // Every folder plangate makes here is recorded as it makes it.
            s.known.get(&rel) == Some(&id_of(&m))
        };
        if ok {
            continue;
        }
        let path = base.join(&rel);
        let gone = if m.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if rel == "artifacts" {
            repair_artifacts = !back.iter().any(|(_, to)| to == "artifacts");
        }
        if !back.iter().any(|(_, to)| *to == rel) {
            s.known.remove(&rel);
        }
        found.push((
            rel.clone(),
            match gone {
                Ok(()) => "a step put it in the output folder or changed it there (plangate did not write it): removed".to_owned(),
                Err(e) => format!(
                    "a step put it in the output folder or changed it there (plangate did not write it), and it could not be removed: {e}"
                ),
            },
        ));
    }
    for (from, to) in back {
        let put = std::fs::rename(base.join(&from), base.join(&to));
        found.push((
            from.clone(),
            match put {
                Ok(()) => format!("a step moved `{to}` of the output folder here: put back"),
                Err(e) => {
                    s.known.remove(&to);
                    format!("a step moved `{to}` of the output folder here, and it could not be put back: {e}")
                }
            },
        ));
    }
    if repair_artifacts {
        let _ = walk(s, &["artifacts".to_owned()]);
    }
    found
}
