//! The metadata walk behind per-step attribution: for every file (and
//! symlink) the size, mtime and ctime (nanoseconds), inode and mode, nothing
//! read. A file whose metadata changed between two checkpoints was written,
//! created, deleted, replaced or touched in between.
//!
//! It walks like the snapshot (`.gitignore` respected, `.git/` and the
//! output folder pruned, not entered), plus git's global excludes in a git
//! work tree, so the names match the diff's.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::{path_text, relative};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Meta {
    pub(super) len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    mode: u32,
}

impl Meta {
    /// What tells a changed file from an untouched one (size, times, inode, mode).
    pub(super) fn of(m: &std::fs::Metadata) -> Meta {
        Meta {
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            mode: m.mode(),
        }
    }
}

/// Every file's metadata, by absolute path.
#[derive(Debug, Default)]
pub(super) struct StatMap(HashMap<PathBuf, Meta>);

/// What to walk and what to leave out.
#[derive(Debug, Clone)]
pub(super) struct Walk {
    root: PathBuf,
    exclude: Vec<PathBuf>,
    git_global: bool,
    /// Some when git's global excludes were empty at the start: the files
    /// they come from, as they were then. While every one of them is
    /// unchanged, a walk skips building the global matcher (its lookup
    /// reads the passwd database and three config files each time).
    global_empty: Option<GlobalInputs>,
}

/// The files the `ignore` crate reads git's global excludes from, in its
/// own order (`ignore::gitignore::gitconfig_excludes_path`: the
/// `GIT_CONFIG_GLOBAL` file, `~/.gitconfig`, the XDG `git/config`, the
/// system config, then the excludes file found), each with its metadata
/// (None: absent). The environment it looks them up in does not change
/// during a run, so the same files stay the same inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GlobalInputs(Vec<(PathBuf, Option<Meta>)>);

impl GlobalInputs {
    fn now() -> GlobalInputs {
        // The ignore crate reads the process environment itself (std::env).
        let env_path = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| !p.as_os_str().is_empty())
        };
        #[allow(deprecated)] // the very lookup the ignore crate makes
        let home = std::env::home_dir();
        let mut paths: Vec<PathBuf> = Vec::new();
        paths.extend(env_path("GIT_CONFIG_GLOBAL"));
        paths.extend(home.as_ref().map(|h| h.join(".gitconfig")));
        let xdg = env_path("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
        paths.extend(xdg.as_ref().map(|x| x.join("git/config")));
        paths
            .push(env_path("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
        paths.extend(xdg.as_ref().map(|x| x.join("git/ignore")));
        paths.extend(ignore::gitignore::gitconfig_excludes_path());
        GlobalInputs::of(paths)
    }

    /// `paths` as they are now.
    fn of(paths: Vec<PathBuf>) -> GlobalInputs {
        GlobalInputs(
            paths
                .into_iter()
                .map(|p| {
                    let meta = std::fs::metadata(&p).ok().map(|m| Meta::of(&m));
                    (p, meta)
                })
                .collect(),
        )
    }

    /// Whether every input file is as it was.
    fn unchanged(&self) -> bool {
        self.0
            .iter()
            .all(|(p, was)| std::fs::metadata(p).ok().map(|m| Meta::of(&m)) == *was)
    }
}

impl Walk {
    pub(super) fn new(root: &Path, exclude: Vec<PathBuf>, git_global: bool) -> Walk {
        // The inputs before the matcher: a change in between shows next time.
        let global_empty = git_global
            .then(GlobalInputs::now)
            .filter(|_| ignore::gitignore::Gitignore::global().0.is_empty());
        Walk {
            root: root.to_path_buf(),
            exclude,
            git_global,
            global_empty,
        }
    }

    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    pub(super) fn exclude(&self) -> &[PathBuf] {
        &self.exclude
    }

    /// The workspace's metadata now; None past `limit` files.
    pub(super) fn take(&self, limit: usize) -> Option<StatMap> {
        let mut map = HashMap::new();
        // Empty global excludes whose files did not change match nothing.
        let git_global = self.git_global
            && !self
                .global_empty
                .as_ref()
                .is_some_and(GlobalInputs::unchanged);
        for entry in walker(&self.root, &self.exclude, git_global)
            .into_iter()
            .flatten()
            .flatten()
        {
            let Some(t) = entry.file_type() else {
                continue;
            };
            if !(t.is_file() || t.is_symlink()) {
                continue;
            }
            let Ok(m) = entry.metadata() else {
                continue;
            };
            if map.len() >= limit {
                return None;
            }
            map.insert(entry.into_path(), Meta::of(&m));
        }
        Some(StatMap(map))
    }

    /// Files added, removed or changed from `old` to `new`, as the report names them, sorted.
    pub(super) fn changed(&self, old: &StatMap, new: &StatMap) -> Vec<String> {
        let mut out: Vec<String> = new
            .0
            .iter()
            .filter(|(p, m)| old.0.get(*p) != Some(m))
            .map(|(p, _)| p)
            .chain(old.0.keys().filter(|p| !new.0.contains_key(*p)))
            .filter_map(|p| relative(&self.root, p))
            .map(|rel| path_text(&rel))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// Files the walker found that would block it (see [`walker`]), until the
/// tracker takes them ([`take_trapped`]).
static TRAPPED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// The files the walks since the last call did not open because they
/// would block (FIFOs, sockets, devices where an ignore file is read).
pub(super) fn take_trapped() -> Vec<PathBuf> {
    let mut t = TRAPPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut out = std::mem::take(&mut *t);
    out.sort();
    out.dedup();
    out
}

fn trapped(p: PathBuf) {
    TRAPPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(p);
}

/// The workspace walker shared with the snapshot: hidden files in, `.git/`
/// and `exclude` pruned, `.gitignore` (and `.git/info/exclude`) respected.
/// The walker opens a folder's ignore files by name when it enters it: a
/// folder where one would block ([`crate::regular::walk_trap`]) is not
/// entered, and the file is noted ([`take_trapped`]); None when the root
/// itself is such a folder (nothing is walked).
pub(super) fn walker(root: &Path, exclude: &[PathBuf], git_global: bool) -> Option<ignore::Walk> {
    if let Some(t) = crate::regular::walk_trap(root) {
        trapped(t);
        return None;
    }
    let exclude = exclude.to_vec();
    Some(
        ignore::WalkBuilder::new(root)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(git_global)
            .require_git(false)
            .follow_links(false)
            // Sorted, so a snapshot's read budget always goes to the same files.
            .sort_by_file_name(|a, b| a.cmp(b))
            .filter_entry(move |e| {
                if e.file_name() == ".git" || exclude.iter().any(|x| e.path().starts_with(x)) {
                    return false;
                }
                if e.file_type().is_some_and(|t| t.is_dir())
                    && let Some(t) = crate::regular::walk_trap(e.path())
                {
                    trapped(t);
                    return false;
                }
                true
            })
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A global excludes input that appears, grows, is replaced or goes
    /// away is a change (the global matcher is then built again).
    #[test]
    fn global_inputs_see_every_change_of_their_files() {
        let d = tempfile::tempdir().expect("temp");
        let (config, excludes) = (d.path().join("gitconfig"), d.path().join("ignore"));
        std::fs::write(&config, "[user]\n").expect("write");
        let inputs = || GlobalInputs::of(vec![config.clone(), excludes.clone()]);
        assert!(inputs().unchanged(), "nothing changed");
        let before = inputs();
        std::fs::write(&excludes, "*.log\n").expect("create");
        assert!(!before.unchanged(), "a new excludes file");
        let before = inputs();
        std::fs::write(&config, "[core]\n\texcludesFile = x\n").expect("grow");
        assert!(!before.unchanged(), "a config that grew");
        let before = inputs();
        let other = d.path().join("other");
        std::fs::write(&other, "[core]\n\texcludesFile = y\n").expect("write");
        std::fs::rename(&other, &config).expect("replace");
        assert!(
            !before.unchanged(),
            "a config replaced by one of the same size"
        );
        let before = inputs();
        std::fs::remove_file(&excludes).expect("remove");
        assert!(!before.unchanged(), "an excludes file removed");
        assert!(inputs().unchanged());
    }

    /// The walk leaves out what git's ignore rules leave out, whether or
    /// not it skips the global matcher.
    #[test]
    fn the_walk_still_follows_the_workspace_ignore_rules() {
        let d = tempfile::tempdir().expect("temp");
        std::fs::write(d.path().join(".gitignore"), "*.log\n").expect("write");
        std::fs::write(d.path().join("a.txt"), "a").expect("write");
        std::fs::write(d.path().join("b.log"), "b").expect("write");
        for global in [false, true] {
            let walk = Walk::new(d.path(), Vec::new(), global);
            let map = walk.take(100).expect("under the limit");
            let mut names: Vec<String> = map
                .0
                .keys()
                .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
                .collect();
            names.sort();
            assert_eq!(names, [".gitignore", "a.txt"], "git_global {global}");
        }
    }
}
