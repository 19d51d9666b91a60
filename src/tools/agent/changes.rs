//! An agent's change set: the files it created, changed or removed, checked
//! as a whole and only then applied to the workspace.
//!
//! A change set comes from a staged copy ([`super::stage::Stage::changes`])
//! or from an accepted envelope's files ([`ChangeSet::from_files`]). Before
//! anything is applied every change is checked ([`ChangeSet::check`]): a
//! relative path of plain names, nothing under `.git` or the run's output
//! folder, links that stay inside the workspace, the permission rules for
//! writing, the size caps, and (under `fail_on_secrets`) no secret in any
//! content. [`ChangeSet::apply`] then checks every parent folder is a real
//! folder inside the workspace (never a symlink) and writes each file
//! atomically.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::model::{Change as ChangeKind, ChangedPath};
use crate::tools::StepContext;

/// Most files one agent step may change (added, modified and removed).
pub(crate) const MAX_FILES: usize = 1000;
/// Most bytes of content one agent step may write.
pub(crate) const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Where a written file's content comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// A file in the staged copy.
    Staged(PathBuf),
    /// An envelope's content.
    Bytes(Vec<u8>),
}

/// What a change does at its path.
#[derive(Debug, Clone)]
pub(crate) enum What {
    /// Write a regular file with this mode.
    File { source: Source, mode: u32, len: u64 },
    /// Make a symlink to this target.
    Link(PathBuf),
    /// Make a folder.
    Dir(u32),
    /// Remove a file or link.
    Remove,
    /// Remove a folder (when it is empty).
    RemoveDir,
}

impl What {
    /// An envelope's file: its content, mode 0644.
    pub(crate) fn envelope_file(content: &[u8]) -> What {
        What::File {
            source: Source::Bytes(content.to_vec()),
            mode: 0o644,
            len: content.len() as u64,
        }
    }
}

/// One change, at a path relative to the workspace (`/` separators).
#[derive(Debug, Clone)]
pub(crate) struct Change {
    /// Relative path.
    pub path: String,
    /// Added, modified or removed.
    pub kind: ChangeKind,
    /// What to do.
    pub what: What,
}

/// The changes of one agent step.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChangeSet {
    /// In walk order; [`ChangeSet::apply`] orders them itself.
    pub changes: Vec<Change>,
}

impl ChangeSet {
    /// An envelope's files as changes to `root`.
    pub(crate) fn from_files<'a>(
        root: &Path,
        files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> ChangeSet {
        let changes = files
            .into_iter()
            .map(|(path, content)| Change {
                path: path.to_owned(),
                kind: if std::fs::symlink_metadata(root.join(path)).is_ok() {
                    ChangeKind::Modified
                } else {
                    ChangeKind::Added
                },
                what: What::envelope_file(content),
            })
            .collect();
        ChangeSet { changes }
    }

    /// Leave out the changes at `paths` and the folders added only to hold them.
    pub(crate) fn exclude(&mut self, paths: &[String]) {
        if paths.is_empty() {
            return;
        }
        self.changes.retain(|c| !paths.contains(&c.path));
        // Folders added on the way to an excluded path, emptied now: left out too.
        let added_dirs: Vec<String> = self
            .changes
            .iter()
            .filter(|c| matches!(c.what, What::Dir(_)) && c.kind == ChangeKind::Added)
            .filter(|c| {
                paths.iter().any(|p| {
                    p.strip_prefix(c.path.as_str())
                        .is_some_and(|r| r.starts_with('/'))
                })
            })
            .map(|c| c.path.clone())
            .collect();
        // A folder that still holds another change stays.
        let kept: Vec<String> = self
            .changes
            .iter()
            .filter(|c| !added_dirs.contains(&c.path))
            .map(|c| c.path.clone())
            .collect();
        self.changes.retain(|c| {
            !added_dirs.contains(&c.path)
                || kept.iter().any(|k| {
                    k.strip_prefix(c.path.as_str())
                        .is_some_and(|r| r.starts_with('/'))
                })
        });
    }

    /// Whether nothing changed.
    pub(crate) fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Bytes of content written.
    pub(crate) fn bytes(&self) -> u64 {
        self.changes
            .iter()
            .map(|c| match &c.what {
                What::File { len, .. } => *len,
                _ => 0,
            })
            .sum()
    }

    /// The changed paths as the report lists them (folders left out).
    pub(crate) fn listed(&self) -> Vec<ChangedPath> {
        let mut v: Vec<ChangedPath> = self
            .changes
            .iter()
            .filter(|c| !matches!(c.what, What::Dir(_) | What::RemoveDir))
            .map(|c| ChangedPath {
                path: c.path.clone(),
                change: c.kind,
            })
            .collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    /// Check every change before any is applied; `Err` says why the whole
    /// set is refused. Under `fail_on_secrets` the secrets found in its
    /// content are added to `findings` (location `change:PATH`); otherwise
    /// the files are applied and the sweep finds them in the workspace.
    pub(crate) fn check(
        &self,
        ctx: &StepContext,
        findings: &mut Vec<crate::model::Finding>,
    ) -> Result<(), String> {
        let files = self.listed().len();
        if files > MAX_FILES {
            return Err(format!(
                "the agent changed {files} files, more than the {MAX_FILES} one step may change"
            ));
        }
        let bytes = self.bytes();
        if bytes > MAX_BYTES {
            return Err(format!(
                "the agent wrote {bytes} bytes, more than the {MAX_BYTES} one step may write"
            ));
        }
        let workspace = &ctx.env.workspace;
        let out_rel = ctx
            .out_dir
            .strip_prefix(workspace)
            .ok()
            .filter(|r| !r.as_os_str().is_empty());
        for c in &self.changes {
            let rel = Path::new(&c.path);
            if c.path.is_empty()
                || rel.is_absolute()
                || rel.components().any(|p| !matches!(p, Component::Normal(_)))
            {
                return Err(format!("unsafe path `{}`", c.path));
            }
            if rel.components().next() == Some(Component::Normal(".git".as_ref())) {
                return Err(format!(
                    "`{}` is inside `.git`; an agent never changes git's own files",
                    c.path
                ));
            }
            if out_rel.is_some_and(|o| rel.starts_with(o)) {
                return Err(format!(
                    "`{}` is inside the run's output folder; an agent never writes there",
                    c.path
                ));
            }
            if let What::Link(target) = &c.what {
                link_stays_inside(&c.path, target)?;
            }
            if let What::File {
                source: Source::Bytes(_),
                ..
            } = &c.what
                && workspace.join(rel).is_dir()
            {
                return Err(format!(
                    "`{}` is a folder; an envelope's file cannot replace it",
                    c.path
                ));
            }
            ctx.may(&workspace.join(rel), crate::model::Level::Write)?;
        }
        let mut refused = None;
        for c in &self.changes {
            if let What::File { source, .. } = &c.what
                && let Some(why) = holds_secret(ctx, &c.path, source, findings)?
                && ctx.fail_on_secrets
            {
                refused.get_or_insert(why);
            }
        }
        refused.map_or(Ok(()), Err)
    }

    /// Apply the (checked) set to `root`: removals first (files and links,
    /// then folders deepest first, only when empty), then files, links and
    /// folders. Nothing is ever removed recursively: a write onto a folder
    /// that still holds something fails. Every path is checked
    /// before anything is written. Returns the bytes written.
    pub(crate) fn apply(&self, root: &Path) -> Result<u64, String> {
        for c in &self.changes {
            real_parents(root, &c.path)?;
        }
        for c in &self.changes {
            if matches!(c.what, What::Remove) {
                remove(root, &c.path)?;
            }
        }
        let mut dirs: Vec<&Change> = self
            .changes
            .iter()
            .filter(|c| matches!(c.what, What::RemoveDir))
            .collect();
        dirs.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
        for c in dirs {
            // Still holding something (another step's file): kept, and a write there fails.
            let _ = std::fs::remove_dir(root.join(&c.path));
        }
        let mut written = 0;
        for c in &self.changes {
            let path = root.join(&c.path);
            match &c.what {
                What::File { source, mode, .. } => {
                    written += write_file(&path, source, *mode)
                        .map_err(|e| format!("cannot write `{}`: {e}", c.path))?;
                }
                What::Link(target) => {
                    write_link(&path, target)
                        .map_err(|e| format!("cannot make the link `{}`: {e}", c.path))?;
                }
                What::Dir(mode) => make_dir(&path, *mode)
                    .map_err(|e| format!("cannot make the folder `{}`: {e}", c.path))?,
                What::Remove | What::RemoveDir => {}
            }
        }
        Ok(written)
    }
}

/// A link's target, read from the folder the link sits in, must stay inside the workspace.
fn link_stays_inside(path: &str, target: &Path) -> Result<(), String> {
    if target.is_absolute() {
        return Err(format!(
            "`{path}` is a link to the absolute path `{}`; an agent's links must be relative and stay inside the workspace",
            target.display()
        ));
    }
    let mut depth: i64 = Path::new(path).components().count() as i64 - 1;
    for c in target.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return Err(format!(
                "`{path}` is a link to `{}`, outside the workspace",
                target.display()
            ));
        }
    }
    Ok(())
}

/// Why the content must not be applied when it holds a secret (scanned as
/// the redaction layer scans what plangate writes; values found are
/// remembered, so they are masked wherever else they show up).
fn holds_secret(
    ctx: &StepContext,
    path: &str,
    source: &Source,
    findings: &mut Vec<crate::model::Finding>,
) -> Result<Option<String>, String> {
    let bytes = match source {
        Source::Bytes(b) => std::borrow::Cow::Borrowed(b.as_slice()),
        Source::Staged(p) => {
            let mut buf = Vec::new();
            crate::regular::open(p)
                .and_then(|mut f| f.read_to_end(&mut buf))
                .map_err(|e| format!("cannot read `{path}` to scan it: {e}"))?;
            std::borrow::Cow::Owned(buf)
        }
    };
    let (cleaned, found) = crate::redact::scrub(&bytes, true);
    findings.extend(
        found
            .iter()
            .filter(|_| ctx.fail_on_secrets)
            .map(|f| crate::model::Finding {
                rule: f.rule.clone(),
                step: ctx.run_vars.get("PLANGATE_STEP_ID").cloned(),
                location: format!("change:{path}"),
                line: f.line as u64,
                fingerprint: f.fingerprint.clone(),
            }),
    );
    Ok(match (found.first(), cleaned) {
        (Some(f), _) => Some(format!(
            "`{path}` holds a secret ({}); nothing was applied (fail_on_secrets)",
            f.rule
        )),
        (None, std::borrow::Cow::Owned(_)) => Some(format!(
            "`{path}` holds a secret value; nothing was applied (fail_on_secrets)"
        )),
        (None, std::borrow::Cow::Borrowed(_)) => None,
    })
}

/// Every existing parent of `rel` under `root` is a real folder (no symlink, no file).
fn real_parents(root: &Path, rel: &str) -> Result<(), String> {
    let parts: Vec<Component<'_>> = Path::new(rel).components().collect();
    let mut cur = root.to_path_buf();
    for (i, c) in parts.iter().enumerate() {
        cur.push(c);
        let last = i + 1 == parts.len();
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if !last && m.file_type().is_symlink() => {
                return Err(format!(
                    "`{rel}` goes through the symlink `{}`",
                    cur.display()
                ));
            }
            Ok(m) if !last && !m.is_dir() => {
                return Err(format!("`{rel}`: `{}` is not a folder", cur.display()));
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

fn remove(root: &Path, rel: &str) -> Result<(), String> {
    let path = root.join(rel);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir(&path),
        Ok(_) => std::fs::remove_file(&path),
        Err(_) => Ok(()),
    }
    .map_err(|e| format!("cannot remove `{rel}`: {e}"))
}

fn write_file(path: &Path, source: &Source, mode: u32) -> std::io::Result<u64> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent folder"))?;
    std::fs::create_dir_all(dir)?;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir(path)?;
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".plangate-")
        .tempfile_in(dir)?;
    let n = match source {
        Source::Bytes(b) => {
            std::io::Write::write_all(&mut tmp, b)?;
            b.len() as u64
        }
        Source::Staged(p) => std::io::copy(&mut crate::regular::open(p)?, &mut tmp)?,
    };
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(n)
}

fn write_link(path: &Path, target: &Path) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent folder"))?;
    std::fs::create_dir_all(dir)?;
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.is_dir() {
            std::fs::remove_dir(path)?;
        } else {
            std::fs::remove_file(path)?;
        }
    }
    std::os::unix::fs::symlink(target, path)
}

fn make_dir(path: &Path, mode: u32) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => {
            std::fs::remove_file(path)?;
            std::fs::create_dir_all(path)
        }
        Err(_) => std::fs::create_dir_all(path),
    }?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o7777))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn links_must_stay_inside() {
        assert!(link_stays_inside("a/l", Path::new("../b")).is_ok());
        assert!(link_stays_inside("a/l", Path::new("../../b")).is_err());
        assert!(link_stays_inside("l", Path::new("x/../../y")).is_err());
        assert!(link_stays_inside("l", Path::new("/etc/passwd")).is_err());
    }

    #[test]
    fn apply_refuses_a_parent_that_is_a_symlink_before_writing_anything() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("sub")).unwrap();
        let set = ChangeSet::from_files(
            dir.path(),
            [("ok.txt", b"1".as_slice()), ("sub/x.txt", b"2".as_slice())],
        );
        let err = set.apply(dir.path()).unwrap_err();
        assert!(err.contains("symlink"), "{err}");
        assert!(!dir.path().join("ok.txt").exists());
        assert!(!outside.path().join("x.txt").exists());
    }

    #[test]
    fn apply_never_removes_a_folder_that_still_holds_something() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("keep/inner")).unwrap();
        std::fs::write(dir.path().join("keep/inner/f.txt"), "f").unwrap();
        let set = ChangeSet {
            changes: vec![Change {
                path: "keep".to_owned(),
                kind: ChangeKind::Modified,
                what: What::File {
                    source: Source::Bytes(b"x".to_vec()),
                    mode: 0o644,
                    len: 1,
                },
            }],
        };
        assert!(set.apply(dir.path()).is_err());
        assert!(dir.path().join("keep/inner/f.txt").exists());
    }

    #[test]
    fn exclude_leaves_out_a_path_and_the_folders_added_only_for_it() {
        let change = |path: &str, kind: ChangeKind, what: What| Change {
            path: path.to_owned(),
            kind,
            what,
        };
        let file = || What::File {
            source: Source::Bytes(b"x".to_vec()),
            mode: 0o644,
            len: 1,
        };
        let set = || ChangeSet {
            changes: vec![
                change("out", ChangeKind::Added, What::Dir(0o755)),
                change("out/deep", ChangeKind::Added, What::Dir(0o755)),
                change("out/deep/last.txt", ChangeKind::Added, file()),
                change("src", ChangeKind::Added, What::Dir(0o755)),
                change("src/a.rs", ChangeKind::Added, file()),
                change("src/b.rs", ChangeKind::Deleted, What::Remove),
            ],
        };
        let paths = |s: &ChangeSet| s.changes.iter().map(|c| c.path.clone()).collect::<Vec<_>>();
        let mut s = set();
        s.exclude(&["out/deep/last.txt".to_owned()]);
        assert_eq!(paths(&s), ["src", "src/a.rs", "src/b.rs"]);
        // A folder that still holds another change stays.
        let mut s = set();
        s.exclude(&["src/a.rs".to_owned()]);
        assert_eq!(
            paths(&s),
            ["out", "out/deep", "out/deep/last.txt", "src", "src/b.rs"]
        );
        let mut s = set();
        s.exclude(&[]);
        assert_eq!(s.changes.len(), 6);
    }
}
