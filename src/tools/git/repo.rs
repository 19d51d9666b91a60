//! The repository a git step works on must be inside the workspace: its
//! directory after following symlinks, every `files` entry's nearest existing
//! ancestor, and git's own top level and git directories.

use std::path::{Path, PathBuf};

use super::error::{GitError, Halt};
use super::runner::Git;
use super::text::shown;

/// Resolve the repository directory: inside the workspace after following symlinks.
pub(super) fn repo_dir(ws: &Path, rel: &Path) -> Result<PathBuf, GitError> {
    let real = ws
        .join(rel)
        .canonicalize()
        .map_err(|source| GitError::RepoUnusable {
            shown: shown(rel),
            source,
        })?;
    if !real.starts_with(ws) {
        return Err(GitError::RepoOutside {
            shown: shown(rel),
            real: real.display().to_string(),
        });
    }
    if !real.is_dir() {
        return Err(GitError::RepoNotDir { shown: shown(rel) });
    }
    Ok(real)
}

/// A `files` entry must not lead outside the workspace through a symlink.
/// The last component is not followed (git adds a symlink as a link).
pub(super) fn check_file(ws: &Path, repo: &Path, file: &str) -> Result<(), GitError> {
    let joined = repo.join(file);
    // `.` or `..` names a folder, whose own path is judged (`Path::parent`
    // of `REPO/.` would be the repository's parent).
    let names_folder = matches!(
        Path::new(file).components().next_back(),
        Some(std::path::Component::CurDir | std::path::Component::ParentDir)
    );
    let mut probe: Option<&Path> = if names_folder {
        Some(joined.as_path())
    } else {
        joined.parent()
    };
    // The nearest existing ancestor decides (the file itself may be deleted or a pattern).
    while let Some(p) = probe {
        if p.exists() {
            let real = p.canonicalize().map_err(|source| GitError::FileUnusable {
                file: file.to_owned(),
                source,
            })?;
            if !real.starts_with(ws) {
                return Err(GitError::FileOutside {
                    file: file.to_owned(),
                    real: real.display().to_string(),
                });
            }
            return Ok(());
        }
        probe = p.parent();
    }
    Err(GitError::FileMissing {
        file: file.to_owned(),
    })
}

/// The repository is a work tree whose top level and git directories are inside the workspace.
pub(super) async fn check_work_tree(git: &Git<'_>, ws: &Path, rel: &Path) -> Result<(), Halt> {
    let probe = git
        .aux(&[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ])
        .await?;
    if probe.code != 0 {
        return Err(GitError::NotAWorkTree {
            shown: shown(rel),
            why: probe.first_error(),
        }
        .into());
    }
    let text = String::from_utf8_lossy(&probe.stdout).into_owned();
    for (what, path) in ["top level", "git directory", "common git directory"]
        .into_iter()
        .zip(text.lines())
    {
        let real = Path::new(path)
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from(path));
        if !real.starts_with(ws) {
            return Err(GitError::PartOutside {
                what,
                real: real.display().to_string(),
            }
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_names_the_repository_and_dot_dot_its_parent() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        assert!(check_file(&ws, &ws, ".").is_ok());
        assert!(check_file(&ws, &ws, "a.txt").is_ok());
        assert!(check_file(&ws, &ws.join("sub"), "..").is_ok());
        assert!(matches!(
            check_file(&ws, &ws, ".."),
            Err(GitError::FileOutside { .. })
        ));
    }
}
