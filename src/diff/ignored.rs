//! The files the main comparison does not see: those `.gitignore`,
//! `.git/info/exclude` or the global excludes leave out (a step may add a
//! self-ignoring `dir/.gitignore` holding `*`), and, in the git method, the
//! files inside a nested repository. Each one the run added, changed or
//! deleted is listed beside the others, `ignored` when the ignore rules
//! leave it out now, with its diff: its content is scanned for secrets like
//! any other changed file.
//!
//! Before the run every file's metadata is recorded (no ignore rule, `.git`
//! and the output folder left out, links not followed), and the content of
//! the files ignored then while [`READ_BUDGET`] lasts ([`KEEP_FILE`] each).
//! After the run a file whose metadata changed is read again and compared by
//! content; a new one is shown whole. Bounded for big ignored trees (a
//! `target/` a build makes): at most [`MAX_FILES`] files walked, [`MAX_ROWS`]
//! rows, [`AFTER_BUDGET`] bytes read after the run; what is left out is said
//! in a note, and a file over [`KEEP_FILE`] is compared by hash, not diffed.

use super::stat::Meta;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Body, Change, Compared, FileChange, KEEP_FILE, path_text, relative};

/// Most files walked; beyond, ignored files are not compared (a note says so).
pub(super) const MAX_FILES: usize = 200_000;
/// Most rows of ignored (or unseen) files listed; the rest are counted in a note.
pub(super) const MAX_ROWS: usize = 1000;
/// Most bytes of ignored files read before the run.
const READ_BUDGET: u64 = 32 * 1024 * 1024;
/// Most bytes of changed ignored files read after the run.
const AFTER_BUDGET: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone)]
struct Entry {
    meta: Meta,
    /// Ignored before the run (the main comparison does not have it).
    ignored: bool,
    /// Its content then, when read.
    bytes: Option<Vec<u8>>,
}

/// Every file of the workspace before the run.
#[derive(Debug, Default)]
pub(super) struct Ignored {
    files: BTreeMap<String, Entry>,
    /// Why ignored files are not compared, if they are not.
    off: Option<String>,
}

/// Every file, link and special file under `root` (no ignore rule; the
/// workspace's own `.git` and `exclude` left out; a nested `.git` is
/// walked: git never shows what is in one), by its report name; None past
/// [`MAX_FILES`].
fn all_files(root: &Path, exclude: &[PathBuf]) -> Option<BTreeMap<String, (PathBuf, Meta)>> {
    let mut out = BTreeMap::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            let own_git = e.depth() == 1 && e.file_name() == ".git";
            !own_git && !exclude.iter().any(|x| e.path() == x)
        });
    for e in walk.flatten() {
        if e.file_type().is_dir() {
            continue;
        }
        let Ok(m) = e.metadata() else {
            continue;
        };
        if out.len() >= MAX_FILES {
            return None;
        }
        let Some(rel) = relative(root, e.path()) else {
            continue;
        };
        let meta = Meta::of(&m);
        out.insert(path_text(&rel), (e.into_path(), meta));
    }
    Some(out)
}

/// The files the ignore rules let through now (the main walker's view).
fn visible(root: &Path, exclude: &[PathBuf], git_global: bool) -> HashSet<String> {
    super::stat::walker(root, exclude, git_global)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| !t.is_dir()))
        .filter_map(|e| relative(root, e.path()))
        .map(|rel| path_text(&rel))
        .collect()
}

/// What a row shows of `path`: a file's bytes, a link's target (never
/// followed: it may lead out of the workspace), nothing of a special file.
fn content(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt as _;
    let t = path.symlink_metadata().ok()?.file_type();
    if t.is_symlink() {
        return std::fs::read_link(path)
            .ok()
            .map(|l| l.as_os_str().as_bytes().to_vec());
    }
    if t.is_file() {
        return crate::regular::read(path).ok();
    }
    None
}

/// A FIFO, socket or device (never read).
fn special(path: &Path) -> bool {
    path.symlink_metadata()
        .is_ok_and(|m| !m.is_file() && !m.is_dir() && !m.file_type().is_symlink())
}

/// The folders and files (relative) `git add` cannot take ([`super::git::unaddable`]).
fn unaddable(root: &Path, exclude: &[PathBuf]) -> Vec<PathBuf> {
    let rel: Vec<PathBuf> = exclude.iter().filter_map(|x| relative(root, x)).collect();
    super::git::unaddable(root, &rel)
}

impl Ignored {
    /// Record the workspace before the run.
    pub(super) fn take(root: &Path, exclude: &[PathBuf], git_global: bool) -> Ignored {
        let Some(all) = all_files(root, exclude) else {
            return Ignored {
                files: BTreeMap::new(),
                off: Some(format!(
                    "ignored files are not listed: the workspace holds more than {MAX_FILES} files"
                )),
            };
        };
        let seen = visible(root, exclude, git_global);
        // In the git method, what git cannot add is compared here too.
        let unseen = if git_global {
            unaddable(root, exclude)
        } else {
            Vec::new()
        };
        let mut budget = READ_BUDGET;
        let mut files = BTreeMap::new();
        for (key, (path, meta)) in all {
            let ignored = !seen.contains(&key)
                || relative(root, &path).is_some_and(|r| unseen.iter().any(|u| r.starts_with(u)));
            let mut bytes = None;
            if ignored && meta.len <= KEEP_FILE && meta.len <= budget {
                bytes = content(&path);
                budget -= bytes.as_ref().map_or(0, |b| b.len() as u64).min(budget);
            }
            files.insert(
                key,
                Entry {
                    meta,
                    ignored,
                    bytes,
                },
            );
        }
        Ignored { files, off: None }
    }

    /// Every file recorded before the run, by its report name.
    pub(super) fn keys(&self) -> impl Iterator<Item = String> + '_ {
        self.files.keys().cloned()
    }

    /// The files the run added, changed or deleted that are not in `listed`
    /// (the main comparison's paths), with their bodies and notes; `hidden`:
    /// files seen before the run that the comparison lost since (they are
    /// ignored now), judged like ignored ones.
    pub(super) fn compare(
        &self,
        root: &Path,
        exclude: &[PathBuf],
        git_global: bool,
        listed: &HashSet<String>,
        hidden: &HashSet<String>,
    ) -> Compared {
        let mut out = Compared::default();
        if let Some(why) = &self.off {
            out.notes.push(why.clone());
            return out;
        }
        let Some(now) = all_files(root, exclude) else {
            out.notes.push(format!(
                "ignored files are not listed: the workspace grew past {MAX_FILES} files"
            ));
            return out;
        };
        let seen = visible(root, exclude, git_global);
        let mut rows: Vec<(String, Change)> = Vec::new();
        for (key, (_, meta)) in &now {
            if listed.contains(key) {
                continue;
            }
            match self.files.get(key) {
                None => rows.push((key.clone(), Change::Added)),
                Some(old) if (old.ignored || hidden.contains(key)) && old.meta != *meta => {
                    rows.push((key.clone(), Change::Modified));
                }
                Some(_) => {}
            }
        }
        for (key, old) in &self.files {
            if (old.ignored || hidden.contains(key))
                && !now.contains_key(key)
                && !listed.contains(key)
            {
                rows.push((key.clone(), Change::Deleted));
            }
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let mut budget = AFTER_BUDGET;
        let (mut unread, mut more, mut unknown) = (0usize, 0usize, 0usize);
        for (key, change) in rows {
            let old = self.files.get(&key);
            let is_special = now.get(&key).is_some_and(|(p, _)| special(p));
            let new_bytes = match (change, now.get(&key)) {
                (Change::Deleted, _) | (_, None) => None,
                _ if is_special => None,
                (_, Some((path, meta))) if meta.len <= KEEP_FILE && meta.len <= budget => {
                    let b = content(path);
                    budget -= b.as_ref().map_or(0, |b| b.len() as u64).min(budget);
                    b
                }
                _ => {
                    unread += 1;
                    None
                }
            };
            // Touched, same content: not a change.
            if change == Change::Modified
                && let (Some(a), Some(b)) = (old.and_then(|o| o.bytes.as_ref()), &new_bytes)
                && Sha256::digest(a) == Sha256::digest(b)
            {
                continue;
            }
            if out.files.len() >= MAX_ROWS {
                more += 1;
                continue;
            }
            let old_side = match change {
                Change::Added => None,
                // The earlier content was not kept: the whole file is shown.
                _ => Some(old.and_then(|o| o.bytes.as_deref()).or_else(|| {
                    if change == Change::Modified && new_bytes.is_some() {
                        unknown += 1;
                        Some(&[][..])
                    } else {
                        None
                    }
                })),
            };
            let new_side = match change {
                Change::Deleted => None,
                _ => Some(new_bytes.as_deref()),
            };
            let (mut f, body) = if is_special {
                (
                    row(&key, change),
                    Body::NotShown("a FIFO, socket or device: plangate never reads one"),
                )
            } else if change == Change::Added && new_bytes.is_none() {
                (row(&key, change), Body::TooLarge)
            } else {
                super::snapshot::diff_bytes(&key, change, old_side, new_side)
            };
            f.ignored = if change == Change::Deleted {
                old.is_some_and(|o| o.ignored)
            } else {
                !seen.contains(&key)
            };
            out.files.push((f, body));
        }
        label_by_git(root, git_global, &mut out);
        if more > 0 {
            out.notes.push(format!(
                "{more} more changed file(s) that git's ignore rules leave out are not listed (at most {MAX_ROWS})"
            ));
        }
        if unread > 0 {
            out.notes.push(format!(
                "{unread} changed ignored file(s) were too large (or past the read budget) to show or scan; they are listed by name"
            ));
        }
        if unknown > 0 {
            out.notes.push(format!(
                "the earlier content of {unknown} changed ignored file(s) was not recorded; their whole content is shown"
            ));
        }
        out
    }
}

/// A row without line counts.
fn row(key: &str, change: Change) -> FileChange {
    FileChange {
        oid: None,
        path: key.to_owned(),
        change,
        insertions: 0,
        deletions: 0,
        binary: false,
        old_path: None,
        steps: Vec::new(),
        ignored: false,
    }
}

/// In a git work tree git itself says which rows are ignored (the global
/// excludes included, which the walker may not find).
fn label_by_git(root: &Path, git_global: bool, out: &mut Compared) {
    if !git_global {
        return;
    }
    let names: Vec<String> = out
        .files
        .iter()
        .filter(|(f, _)| f.change != Change::Deleted)
        .map(|(f, _)| f.path.clone())
        .collect();
    if let Some(by_git) = super::git::ignored_among(root, &names) {
        for (f, _) in &mut out.files {
            if f.change != Change::Deleted {
                f.ignored = f.ignored || by_git.contains(&f.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    fn rows(c: &Compared) -> Vec<(String, Change, bool)> {
        c.files
            .iter()
            .map(|(f, _)| (f.path.clone(), f.change, f.ignored))
            .collect()
    }

    #[test]
    fn touched_is_nothing_changed_added_and_deleted_are_listed_and_rows_are_bounded() {
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path();
        write(root, ".gitignore", "*.log\nbig/\n");
        write(root, "same.log", "same\n");
        write(root, "edit.log", "one\n");
        write(root, "gone.log", "bye\n");
        write(root, "plain.txt", "x\n");
        let before = Ignored::take(root, &[], false);
        // Rewritten with the same bytes: metadata changed, content did not.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write(root, "same.log", "same\n");
        write(root, "edit.log", "two\n");
        std::fs::remove_file(root.join("gone.log")).expect("rm");
        write(root, "dir/.gitignore", "*\n");
        write(root, "dir/new.txt", "hidden\n");
        write(root, "plain.txt", "y\n");
        let listed: HashSet<String> = ["plain.txt".to_owned()].into();
        let c = before.compare(root, &[], false, &listed, &HashSet::new());
        assert_eq!(
            rows(&c),
            [
                ("dir/.gitignore".to_owned(), Change::Added, true),
                ("dir/new.txt".to_owned(), Change::Added, true),
                ("edit.log".to_owned(), Change::Modified, true),
                ("gone.log".to_owned(), Change::Deleted, true),
            ]
        );
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        match &c.files[2].1 {
            Body::Text { lines, .. } => assert!(lines.contains(&"+two".to_owned()), "{lines:?}"),
            b => panic!("{b:?}"),
        }
        // A big ignored tree: MAX_ROWS rows, the rest counted.
        for i in 0..MAX_ROWS + 5 {
            write(root, &format!("big/f{i}"), "x\n");
        }
        let c = before.compare(root, &[], false, &listed, &HashSet::new());
        assert_eq!(c.files.len(), MAX_ROWS);
        assert!(
            c.notes[0].starts_with("9 more changed file(s)"),
            "{:?}",
            c.notes
        );
    }
}
