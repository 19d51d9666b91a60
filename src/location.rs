//! Where a finding is, in the form code-scanning tools can place it: a path
//! relative to the repository root (the git work tree holding the current
//! directory, else the current directory), `/`-separated, and for SARIF a
//! percent-encoded URI reference with `uriBaseId: %SRCROOT%`. A file outside
//! the repository gets an absolute `file://` URI instead. SARIF, the GitHub
//! annotations and the GitLab report all take their locations from here.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

/// The SARIF base id every repository-relative URI is written against.
pub(crate) const SRCROOT: &str = "%SRCROOT%";

/// The repository findings are located in.
#[derive(Debug, Clone)]
pub(crate) struct Repo {
    /// Absolute, symlinks resolved where the directory exists.
    root: PathBuf,
    /// The directory relative paths are read from.
    cwd: PathBuf,
}

impl Repo {
    /// The git work tree holding the current directory (its top: the nearest
    /// directory upwards with a `.git` entry), or the current directory itself.
    pub(crate) fn current() -> Repo {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        Repo::around(&cwd)
    }

    /// As [`Repo::current`], with `cwd` as the current directory.
    pub(crate) fn around(cwd: &Path) -> Repo {
        let cwd = absolute(cwd, Path::new("/"));
        let root = cwd
            .ancestors()
            .find(|d| d.join(".git").exists())
            .unwrap_or(&cwd)
            .to_path_buf();
        Repo { root, cwd }
    }

    /// `path` (absolute, or relative to the current directory) relative to the
    /// repository, `/`-separated; `None` when it lies outside.
    pub(crate) fn relative(&self, path: &Path) -> Option<String> {
        let abs = absolute(path, &self.cwd);
        let rel = abs.strip_prefix(&self.root).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        (!parts.is_empty()).then(|| parts.join("/"))
    }

    /// Where GitHub annotations and the GitLab report place a file:
    /// repository-relative, else `as_found` (the name plangate found it by;
    /// also when `path` is empty, i.e. unknown).
    pub(crate) fn relative_or(&self, path: &Path, as_found: &str) -> String {
        if path.as_os_str().is_empty() {
            return as_found.to_owned();
        }
        self.relative(path).unwrap_or_else(|| as_found.to_owned())
    }

    /// A SARIF `artifactLocation`: `{uri, uriBaseId: %SRCROOT%}` inside the
    /// repository, an absolute `file://` URI outside.
    pub(crate) fn sarif_location(&self, path: &Path) -> Value {
        match self.relative(path) {
            Some(rel) => json!({"uri": encode_path(&rel), "uriBaseId": SRCROOT}),
            None => json!({"uri": file_uri(&absolute(path, &self.cwd))}),
        }
    }

    /// SARIF `originalUriBaseIds`: where `%SRCROOT%` was on this machine.
    pub(crate) fn sarif_base(&self) -> Value {
        let mut uri = file_uri(&self.root);
        if !uri.ends_with('/') {
            uri.push('/');
        }
        json!({ SRCROOT: {"uri": uri} })
    }
}

/// The file a report finding names: `workspace:PATH` under the workspace,
/// anything else under the run's output directory.
pub(crate) fn finding_path(location: &str, workspace: &Path, out_dir: &Path) -> PathBuf {
    match location.strip_prefix("workspace:") {
        Some(rel) => workspace.join(rel),
        None => out_dir.join(location),
    }
}

/// `path` made absolute against `base`, with `.` and `..` resolved; symlinks
/// resolved too when the path exists (so a `/tmp` link and its target agree).
fn absolute(path: &Path, base: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    if let Ok(real) = joined.canonicalize() {
        return real;
    }
    // A file that is gone (a report rendered later): resolve the longest
    // existing ancestor, then append the rest lexically.
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    for anc in out.ancestors().skip(1) {
        if let (Ok(real), Ok(rest)) = (anc.canonicalize(), out.strip_prefix(anc)) {
            return real.join(rest);
        }
    }
    out
}

/// RFC 3986 percent-encoding of a `/`-separated relative path: every byte
/// but the unreserved characters and `/` is written `%XX` (so spaces, `#`,
/// `?`, `%`, `:` and non-ASCII names make valid URI references).
pub(crate) fn encode_path(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `file:///abs/path` with the path percent-encoded.
fn file_uri(abs: &Path) -> String {
    let s = abs.to_string_lossy().replace('\\', "/");
    let s = if s.starts_with('/') {
        s
    } else {
        format!("/{s}")
    };
    format!("file://{}", encode_path(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_encoded_as_uri_references() {
        assert_eq!(
            encode_path("sub dir/é/x y.env"),
            "sub%20dir/%C3%A9/x%20y.env"
        );
        assert_eq!(encode_path("a#b?c%d:e"), "a%23b%3Fc%25d%3Ae");
        assert_eq!(encode_path("plain/file-1_2.txt~"), "plain/file-1_2.txt~");
    }

    #[test]
    fn locations_are_relative_to_the_repository_wherever_they_were_given() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = tmp.path().join("repo");
        let sub = root.join("sub");
        std::fs::create_dir_all(root.join(".git")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(&sub).unwrap_or_else(|e| panic!("{e}"));
        let repo = Repo::around(&sub);
        assert_eq!(
            repo.relative(Path::new("x y.env")).as_deref(),
            Some("sub/x y.env")
        );
        assert_eq!(
            repo.relative(Path::new("../top.env")).as_deref(),
            Some("top.env")
        );
        assert_eq!(repo.relative(&root.join("a/b")).as_deref(), Some("a/b"));
        assert_eq!(repo.relative(&tmp.path().join("elsewhere")), None);
        let loc = repo.sarif_location(Path::new("x y.env"));
        assert_eq!(loc["uri"], "sub/x%20y.env");
        assert_eq!(loc["uriBaseId"], SRCROOT);
        let outside = repo.sarif_location(&tmp.path().join("o t"));
        assert!(
            outside["uri"]
                .as_str()
                .is_some_and(|u| u.starts_with("file:///") && u.ends_with("/o%20t"))
        );
        assert!(outside.get("uriBaseId").is_none());
    }

    #[test]
    fn run_findings_are_found_in_the_workspace_or_the_output_folder() {
        let (ws, out) = (Path::new("/w"), Path::new("/o"));
        assert_eq!(
            finding_path("workspace:conf/a.env", ws, out),
            Path::new("/w/conf/a.env")
        );
        assert_eq!(
            finding_path("artifacts/s/stdout.txt", ws, out),
            Path::new("/o/artifacts/s/stdout.txt")
        );
    }
}
