//! Special files planted where a reader opens a file by name: a FIFO,
//! socket or device (or a link to one) named `.gitignore`, `.ignore`,
//! `.gitattributes`, `.gitmodules`, `.mailmap` or `.git` in any folder, or
//! anywhere below a folder named `.git` (any case; its object store aside).
//! The diff's walker and git open those files by name and would block on
//! them for ever (a FIFO) or read without end (a device), and so would the
//! user's own git afterwards.
//!
//! [`defuse`] runs before every walk and every git command of the diff (at
//! the start, at each checkpoint, at the end): it removes each such file
//! from the workspace and says so; the tracker turns that into a failed
//! diff (an error in the report), never a quiet one. A file one of them
//! points to outside the workspace (a `.git` file's `gitdir:`) cannot be
//! removed: the folder is not walked and the diff is incomplete, an error
//! too. The walker itself checks each folder before it enters it
//! ([`super::stat::walker`]), for what appears in between.

use std::path::{Path, PathBuf};

use super::{path_text, relative};

/// Most entries looked at; beyond, the rest is not looked at (a note says so).
const MAX_ENTRIES: usize = 2_000_000;

/// What [`defuse`] did.
#[derive(Debug, Default)]
pub(super) struct Defused {
    /// Each file removed, with what it was (relative, as the report names it).
    pub(super) removed: Vec<String>,
    /// What could not be removed or looked at, and why.
    pub(super) stuck: Vec<String>,
}

impl Defused {
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.stuck.is_empty()
    }
}

/// Remove from `root` (links not followed, `exclude` left out) every
/// special file where git or the diff's walker opens a file by name.
pub(super) fn defuse(root: &Path, exclude: &[PathBuf]) -> Defused {
    let mut out = Defused::default();
    let mut seen = 0usize;
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .follow_root_links(false)
        .into_iter()
        .filter_entry(|e| {
            !exclude.iter().any(|x| e.path() == x)
                && relative(root, e.path()).is_none_or(|r| !pruned(&r))
        });
    for e in walk {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                if err
                    .io_error()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
                {
                    continue;
                }
                out.stuck
                    .push(format!("a folder could not be looked at ({err})"));
                continue;
            }
        };
        seen += 1;
        if seen > MAX_ENTRIES {
            out.stuck.push(format!(
                "the workspace holds more than {MAX_ENTRIES} entries: the rest was not looked at for special files"
            ));
            break;
        }
        let Some(rel) = relative(root, e.path()) else {
            continue;
        };
        let t = e.file_type();
        if t.is_dir() {
            // A `.git` file's pointers, followed the way the walker follows them.
            if let Some(trap) = crate::regular::walk_trap(e.path()) {
                if trap.starts_with(root) {
                    remove(root, &trap, &mut out);
                } else {
                    out.stuck.push(format!(
                        "`{}` points the walker at `{}`, {}; that folder was not compared",
                        path_text(&rel),
                        trap.display(),
                        crate::regular::blocking(&trap).unwrap_or("a special file")
                    ));
                }
            }
            continue;
        }
        if t.is_file() {
            continue;
        }
        if crate::regular::opened_by_name(e.file_name(), crate::regular::in_git_dir(&rel)) {
            remove(root, e.path(), &mut out);
        }
    }
    out
}

/// A folder of a git directory git does not open files of by name (its
/// hooks, its objects): not looked into.
fn pruned(rel: &Path) -> bool {
    let mut child = rel.to_path_buf();
    child.push("x");
    rel.iter().any(crate::regular::is_dot_git) && !crate::regular::in_git_dir(&child)
}

fn remove(root: &Path, path: &Path, out: &mut Defused) {
    let rel = relative(root, path).map_or_else(|| path.display().to_string(), |r| path_text(&r));
    let Some(what) = crate::regular::blocking(path) else {
        return;
    };
    match std::fs::remove_file(path) {
        Ok(()) => out.removed.push(format!("`{rel}` ({what})")),
        Err(e) => out
            .stuck
            .push(format!("`{rel}` ({what}) could not be removed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(p: &Path) {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .expect("mkfifo");
    }

    #[test]
    fn special_files_opened_by_name_go_others_stay() {
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path();
        for rel in [
            "b/.gitignore",
            ".ignore",
            "c/d/.gitattributes",
            "nest/.git/HEAD",
            "x/.GIT/info/exclude",
            ".git/info/exclude",
            "m/.mailmap",
            "g/.git",
            "keep.fifo",
            ".git/objects/ab/cd",
            ".git/hooks/pre-commit",
        ] {
            fifo(&root.join(rel));
        }
        std::fs::create_dir_all(root.join("l")).expect("mkdir");
        std::os::unix::fs::symlink("/dev/zero", root.join("l/.gitignore")).expect("link");
        std::os::unix::fs::symlink("/etc/hostname", root.join("l/.ignore")).expect("link");
        let d = defuse(root, &[]);
        let mut removed = d.removed.clone();
        removed.sort();
        assert_eq!(
            removed,
            [
                "`.git/info/exclude` (a FIFO)",
                "`.ignore` (a FIFO)",
                "`b/.gitignore` (a FIFO)",
                "`c/d/.gitattributes` (a FIFO)",
                "`g/.git` (a FIFO)",
                "`l/.gitignore` (a symbolic link to a special file)",
                "`m/.mailmap` (a FIFO)",
                "`nest/.git/HEAD` (a FIFO)",
                "`x/.GIT/info/exclude` (a FIFO)",
            ]
        );
        assert!(d.stuck.is_empty(), "{:?}", d.stuck);
        assert!(root.join("keep.fifo").symlink_metadata().is_ok());
        assert!(
            root.join(".git/hooks/pre-commit")
                .symlink_metadata()
                .is_ok()
        );
        assert!(root.join("l/.ignore").symlink_metadata().is_ok());
        assert!(defuse(root, &[]).is_empty());
        // A `.git` file whose `gitdir:` leads outside to a FIFO: not removable.
        let outside = tempfile::tempdir().expect("tmp");
        fifo(&outside.path().join("commondir"));
        std::fs::create_dir_all(root.join("w")).expect("mkdir");
        std::fs::write(
            root.join("w/.git"),
            format!("gitdir: {}\n", outside.path().display()),
        )
        .expect("write");
        let d = defuse(root, &[]);
        assert!(d.removed.is_empty() && d.stuck.len() == 1, "{d:?}");
    }
}
