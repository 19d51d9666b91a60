//! The workspace paths a step names, resolved at run time: its working
//! directory and the files it reads, refused when they leave the workspace.

use std::path::{Path, PathBuf};

/// Why a workspace path a step names cannot be used at run time.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkspacePathError {
    /// The workspace itself is gone.
    #[error("the workspace `{}` is no longer a directory (did an earlier step remove it?)", .0.display())]
    WorkspaceGone(PathBuf),
    /// The working directory cannot be resolved.
    #[error("working directory `{}` is not usable: {source}", .rel.display())]
    DirUnusable {
        /// As written.
        rel: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The working directory resolves outside the workspace.
    #[error("working directory `{}` resolves to `{}`, outside the workspace", .rel.display(), .real.display())]
    DirOutside {
        /// As written.
        rel: PathBuf,
        /// Where it resolves.
        real: PathBuf,
    },
    /// The working directory is not a directory.
    #[error("working directory `{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The file cannot be resolved.
    #[error("`{}` is not readable: {source}", .rel.display())]
    Unreadable {
        /// As written.
        rel: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file resolves outside the workspace.
    #[error("`{}` resolves outside the workspace", .0.display())]
    FileOutside(PathBuf),
    /// Not a regular file.
    #[error("`{}` is not a regular file", .0.display())]
    NotAFile(PathBuf),
}

/// Resolve a step's working directory inside the workspace, following symlinks;
/// refuses a directory that resolves outside.
pub(crate) fn working_dir(
    workspace: &Path,
    rel: Option<&Path>,
) -> Result<PathBuf, WorkspacePathError> {
    if !workspace.is_dir() {
        return Err(WorkspacePathError::WorkspaceGone(workspace.to_path_buf()));
    }
    let Some(rel) = rel else {
        return Ok(workspace.to_path_buf());
    };
    let real =
        workspace
            .join(rel)
            .canonicalize()
            .map_err(|source| WorkspacePathError::DirUnusable {
                rel: rel.to_path_buf(),
                source,
            })?;
    if !real.starts_with(workspace) {
        return Err(WorkspacePathError::DirOutside {
            rel: rel.to_path_buf(),
            real,
        });
    }
    if !real.is_dir() {
        return Err(WorkspacePathError::NotADirectory(rel.to_path_buf()));
    }
    Ok(real)
}

/// Resolve a workspace file for reading: relative, inside after following symlinks, a regular file.
pub(crate) fn workspace_file(workspace: &Path, rel: &Path) -> Result<PathBuf, WorkspacePathError> {
    let real =
        workspace
            .join(rel)
            .canonicalize()
            .map_err(|source| WorkspacePathError::Unreadable {
                rel: rel.to_path_buf(),
                source,
            })?;
    if !real.starts_with(workspace) {
        return Err(WorkspacePathError::FileOutside(rel.to_path_buf()));
    }
    if !real.is_file() {
        return Err(WorkspacePathError::NotAFile(rel.to_path_buf()));
    }
    Ok(real)
}
