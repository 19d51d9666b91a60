//! What a sandboxed step may read, on both backends.
//!
//! The read set is built from allow-lists, never from "everything but":
//!
//! - the system's programs, libraries and configuration: [`SYSTEM`] (`/usr`,
//!   `/bin`, `/sbin`, `/lib*`, `/etc`, `/opt`, `/nix/store` where they
//!   exist), minus the password hashes and ssh host keys of `/etc`
//!   ([`system_hidden`]), plus the file `/etc/resolv.conf` resolves to when
//!   it lies elsewhere (`/run/systemd/resolve/...` on Ubuntu) and the CPU and
//!   cgroup folders of `/sys` that runtimes read to size their thread pools;
//! - `/dev` (bwrap: a fresh one; Landlock: [`DEVICES`]) and `/proc` (bwrap: a
//!   fresh one for the step's own pid namespace; Landlock: [`proc_grants`],
//!   every entry but the processes' folders, and the step's first process's
//!   own folder; no other process's `/proc/<pid>` can be opened, and the
//!   kernel refuses `environ`, `mem`, `fd/` and the like across Landlock
//!   domains anyway);
//! - the workspace minus the paths the permission rules forbid the step to
//!   read (hidden: computed by the caller when the step starts), its artifact
//!   folder, its private TMPDIR, and the paths the step declares `readable`
//!   or `writable`.
//!
//! Everything else (`$HOME`, `/root`, `/home`, the host's `/tmp`, `/run`,
//! `/var`, the CI runner's folders) is absent (bwrap) or refused (Landlock).
//!
//! Landlock can only grant, never take back beneath a grant: to leave out a
//! path inside a granted tree, [`carve`] grants each folder on the way to it
//! the right to be listed only, and every other entry of those folders in
//! full. Names inside a hidden folder then stay listable under Landlock
//! (not their contents), and an entry the step itself creates later in a
//! folder on the way to a hidden path is not readable by it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// System trees every sandboxed step may read and execute (those that exist).
pub(crate) const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
];

/// Parts of `/sys` runtimes read (CPU count, cgroup limits); read-only.
pub(crate) const SYS: &[&str] = &["/sys/devices/system/cpu", "/sys/fs/cgroup"];

/// Device files a Landlock step may read and write. Not `/dev/shm`: it is
/// the host's, shared by every process, and outlives the run (bwrap gives
/// each step a private one); under Landlock only a step approved as
/// dangerous gets it ([`SHARED_MEMORY`]).
pub(crate) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// POSIX shared memory (`shm_open`, Python's multiprocessing locks): the
/// host's folder, writable under Landlock by dangerous steps only.
pub(crate) const SHARED_MEMORY: &str = "/dev/shm";

/// Most Landlock rules or bwrap hiding mounts one step may need; beyond it
/// the step fails before it starts (fail-close).
pub(crate) const MAX_RULES: usize = 4096;

/// The system trees that exist here.
pub(crate) fn system_roots() -> Vec<PathBuf> {
    SYSTEM
        .iter()
        .chain(SYS)
        .map(PathBuf::from)
        .filter(|p| p.symlink_metadata().is_ok())
        .collect()
}

/// Files under the system trees a step never reads: password hashes and the
/// ssh host keys.
pub(crate) fn system_hidden() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "/etc/shadow",
        "/etc/shadow-",
        "/etc/gshadow",
        "/etc/gshadow-",
    ]
    .iter()
    .map(PathBuf::from)
    .filter(|p| p.symlink_metadata().is_ok())
    .collect();
    if let Ok(dir) = std::fs::read_dir("/etc/ssh") {
        let mut keys: Vec<PathBuf> = dir
            .flatten()
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.starts_with("ssh_host_") && n.ends_with("_key")
            })
            .map(|e| e.path())
            .collect();
        keys.sort();
        out.extend(keys);
    }
    out
}

/// What a Landlock step may read of `/proc`: all of it. Landlock rules are
/// fixed when the helper restricts itself, so they cannot follow the pids of
/// the processes a step starts: granting only the helper's own folder left
/// every child unable to open its `/proc/self` (`ls /proc/self/fd`, `diff
/// <(…)`, runtimes that read `/proc/self/maps`). What stays protected:
/// plangate's own entries (it is non-dumpable and the helper drops every
/// capability, so `environ`, `mem` and the fds are refused) and its wiped
/// environment. Other steps' `/proc/<pid>/cmdline` stays readable under
/// Landlock (bwrap hides it with its pid namespace), so the scheduler never
/// runs a step whose processes hold secrets beside such a step.
pub(crate) fn proc_grants() -> Vec<PathBuf> {
    vec![PathBuf::from("/proc")]
}

/// Files outside the system trees that the system configuration points to
/// and programs need (`/etc/resolv.conf`'s target on systemd-resolved hosts).
pub(crate) fn system_extra() -> Vec<PathBuf> {
    let roots = system_roots();
    ["/etc/resolv.conf"]
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|real| real.is_file() && !roots.iter().any(|r| real.starts_with(r)))
        .collect()
}

/// How Landlock grants `root` minus `hidden` (absolute paths beneath it):
/// `full` trees (read beneath), and `list_only` folders (the folders on the
/// way to a hidden path, granted listing only).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Carved {
    /// Granted with everything beneath.
    pub full: Vec<PathBuf>,
    /// Granted the right to be listed (and, through inheritance, so are their
    /// subfolders); their entries are granted one by one in `full`.
    pub list_only: Vec<PathBuf>,
}

/// Split `root` minus `hidden` into Landlock grants (see [`Carved`]). Walks
/// only the folders on the way to a hidden path; the links among their
/// entries are left out. An error (fail-close) when one cannot be listed.
pub(crate) fn carve(root: &Path, hidden: &[PathBuf]) -> Result<Carved, String> {
    let hidden: BTreeSet<&Path> = hidden
        .iter()
        .map(PathBuf::as_path)
        .filter(|h| h.starts_with(root) && *h != root)
        .collect();
    if hidden.is_empty() {
        return Ok(Carved {
            full: vec![root.to_path_buf()],
            list_only: Vec::new(),
        });
    }
    // Every folder on the way from root to a hidden path.
    let mut on_way: BTreeSet<PathBuf> = BTreeSet::new();
    for h in &hidden {
        let mut p = h.parent();
        while let Some(d) = p {
            if !d.starts_with(root) {
                break;
            }
            on_way.insert(d.to_path_buf());
            if d == root {
                break;
            }
            p = d.parent();
        }
    }
    let mut out = Carved::default();
    for dir in &on_way {
        out.list_only.push(dir.clone());
        let entries = std::fs::read_dir(dir).map_err(|e| {
            format!(
                "cannot list `{}` to hide what the step may not read: {e}",
                dir.display()
            )
        })?;
        let mut names: Vec<PathBuf> = Vec::new();
        for e in entries {
            let e = e.map_err(|e| {
                format!(
                    "cannot list `{}` to hide what the step may not read: {e}",
                    dir.display()
                )
            })?;
            // A link is never granted: Landlock would open it and grant
            // what it points to (a denied file, `/`). Reading through a
            // link needs no right on the link itself, only on its target,
            // which is granted (or not) as itself.
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                continue;
            }
            names.push(e.path());
        }
        names.sort();
        for p in names {
            if hidden.contains(p.as_path()) || on_way.contains(&p) {
                continue;
            }
            out.full.push(p);
        }
        if out.full.len() + out.list_only.len() > MAX_RULES {
            return Err(too_many());
        }
    }
    Ok(out)
}

/// The fail-close message when hiding needs too many rules.
pub(crate) fn too_many() -> String {
    format!(
        "hiding what the permission rules forbid this step to read would need more than {MAX_RULES} sandbox rules; \
         the step was not run: deny whole folders (`secrets/**`) rather than many scattered files"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carve_grants_siblings_and_lists_the_way() {
        let t = tempfile::tempdir().expect("tmp");
        let r = t.path();
        for d in ["a/b", "a/c", "d"] {
            std::fs::create_dir_all(r.join(d)).expect("mkdir");
        }
        for f in ["a/b/secret", "a/b/ok", "a/x", "top"] {
            std::fs::write(r.join(f), "x").expect("write");
        }
        // Links beside a hidden path: granting one would grant its target.
        std::os::unix::fs::symlink("/", r.join("root")).expect("link");
        std::os::unix::fs::symlink("secret", r.join("a/b/alias")).expect("link");
        let c = carve(r, &[r.join("a/b/secret")]).expect("carve");
        assert_eq!(
            c.list_only,
            vec![r.to_path_buf(), r.join("a"), r.join("a/b")]
        );
        let mut full = c.full.clone();
        full.sort();
        assert_eq!(
            full,
            vec![
                r.join("a/b/ok"),
                r.join("a/c"),
                r.join("a/x"),
                r.join("d"),
                r.join("top")
            ]
        );
        assert!(!c.full.iter().any(|p| p.ends_with("secret")));
        // Nothing hidden: the root in full.
        let c = carve(r, &[]).expect("carve");
        assert_eq!(c.full, vec![r.to_path_buf()]);
        assert!(c.list_only.is_empty());
        // A hidden folder: none of it granted.
        let c = carve(r, &[r.join("a")]).expect("carve");
        assert_eq!(c.list_only, vec![r.to_path_buf()]);
        assert!(!c.full.iter().any(|p| p.starts_with(r.join("a"))));
    }

    #[test]
    fn system_sets_exist_and_leave_out_home_and_tmp() {
        let roots = system_roots();
        assert!(roots.iter().any(|p| p == Path::new("/usr")));
        for p in &roots {
            for bad in ["/home", "/root", "/tmp", "/run", "/var"] {
                assert!(!p.starts_with(bad), "{}", p.display());
            }
        }
        for h in system_hidden() {
            assert!(h.starts_with("/etc"));
        }
    }
}
