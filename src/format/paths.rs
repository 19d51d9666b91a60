//! Workspace-relative paths as a plan writes them: relative, and lexically
//! inside the workspace. (Symlinks are resolved at run time by the tools.)

use std::path::{Component, Path, PathBuf};

/// Why a path written in a plan is refused. The text follows "`key` of step `x`".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PathError {
    /// The empty string.
    #[error("is empty")]
    Empty,
    /// A NUL byte.
    #[error("contains a NUL byte")]
    Nul,
    /// Absolute, `~`, or a drive prefix.
    #[error("`{0}` is not relative to the workspace")]
    NotRelative(String),
    /// Climbs above the workspace.
    #[error("`{0}` leaves the workspace")]
    Leaves(String),
}

/// A path must be relative and must not climb out of the workspace; returns
/// it cleaned (`.` parts dropped, `..` applied).
pub(crate) fn relative_inside(s: &str) -> Result<PathBuf, PathError> {
    let p = Path::new(s);
    if s.is_empty() {
        return Err(PathError::Empty);
    }
    if s.contains('\0') {
        return Err(PathError::Nul);
    }
    if p.is_absolute() || s.starts_with('~') {
        return Err(PathError::NotRelative(s.to_owned()));
    }
    let mut depth: i64 = 0;
    let mut clean = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(part) => {
                depth += 1;
                clean.push(part);
            }
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return Err(PathError::Leaves(s.to_owned()));
                }
                clean.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::NotRelative(s.to_owned()));
            }
        }
    }
    Ok(clean)
}

/// `WORKSPACE/.plangate/runs`: where run folders go outside CI when `--out`
/// is not given. plangate owns it whole: its `.gitignore` says `*`.
pub(crate) fn runs_folder(workspace: &Path) -> PathBuf {
    workspace.join(".plangate").join("runs")
}

/// `WORKSPACE/.plangate/drafts`: where `plangate draft` keeps its evidence
/// (owned whole, like [`runs_folder`]).
pub(crate) fn drafts_folder(workspace: &Path) -> PathBuf {
    workspace.join(".plangate").join("drafts")
}

/// The folder plangate owns around the run folder `out_dir`: [`runs_folder`]
/// for a run folder there (earlier runs' folders are plangate's too), else
/// the run folder itself. This is what git must never see or stage.
pub(crate) fn own_folder(out_dir: &Path, workspace: &Path) -> PathBuf {
    let runs = runs_folder(workspace);
    if out_dir.parent() == Some(runs.as_path()) {
        runs
    } else {
        out_dir.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::{PathError, own_folder, relative_inside, runs_folder};

    #[test]
    fn working_directories() {
        assert!(relative_inside("src").is_ok());
        assert!(relative_inside("a/../b").is_ok());
        assert!(relative_inside("./x/./y").is_ok());
        assert!(relative_inside("..").is_err());
        assert!(relative_inside("a/../../b").is_err());
        assert!(relative_inside("/etc").is_err());
        assert!(relative_inside("~/x").is_err());
        assert!(relative_inside("").is_err());
    }

    #[test]
    fn errors_say_why() {
        assert_eq!(relative_inside(""), Err(PathError::Empty));
        assert_eq!(
            relative_inside("../x").map_err(|e| e.to_string()),
            Err("`../x` leaves the workspace".to_owned())
        );
        assert_eq!(
            relative_inside("/etc").map_err(|e| e.to_string()),
            Err("`/etc` is not relative to the workspace".to_owned())
        );
    }

    #[test]
    fn the_own_folder_of_a_default_run_is_the_runs_folder() {
        let ws = std::path::Path::new("/w");
        let run = runs_folder(ws).join("r1");
        assert_eq!(
            own_folder(&run, ws),
            std::path::PathBuf::from("/w/.plangate/runs")
        );
        let out = std::path::Path::new("/w/out");
        assert_eq!(own_folder(out, ws), out);
        let tmp = std::path::Path::new("/tmp/plangate/runs/r1");
        assert_eq!(own_folder(tmp, ws), tmp);
    }
}
