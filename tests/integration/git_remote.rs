//! A stand-in git remote for publish tests: a bare repository `acme/widgets`
//! served over git's smart HTTP by tests/fixtures/git_remote/server.py,
//! which requires one token and logs every request (what the publish tests
//! read back from the stand-in API and the run: `forge`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

pub use crate::harness::git;
use crate::harness::{Env, wait_until};

/// A bare repository `acme/widgets` (branch `main`: `lint.txt`, `README.md`)
/// served over smart HTTP, requiring `token`.
pub struct Remote {
    _dir: tempfile::TempDir,
    pub bare: PathBuf,
    log: PathBuf,
    pub url: String,
    server: Child,
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl Remote {
    pub fn new(token: &str) -> Remote {
        Remote::for_user(token, "x-access-token")
    }

    /// The same, requiring `Basic base64(user:token)` (GitLab: `oauth2`).
    pub fn for_user(token: &str, user: &str) -> Remote {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("root");
        let bare = root.join("acme/widgets.git");
        std::fs::create_dir_all(&bare).unwrap_or_else(|e| panic!("{e}"));
        git(&bare, &["init", "-q", "--bare", "-b", "main"]);
        let seed = dir.path().join("seed");
        std::fs::create_dir_all(&seed).unwrap_or_else(|e| panic!("{e}"));
        git(&seed, &["init", "-q", "-b", "main"]);
        std::fs::write(seed.join("lint.txt"), "a  =  1\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(seed.join("README.md"), "# widgets\n").unwrap_or_else(|e| panic!("{e}"));
        git(&seed, &["add", "."]);
        git(&seed, &["commit", "-qm", "init"]);
        git(&seed, &["push", "-q", bare.to_str().unwrap_or(""), "main"]);
        let (port, log) = (dir.path().join("port"), dir.path().join("log"));
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/git_remote/server.py");
        let server = Command::new("python3")
            .arg(script)
            .arg(&root)
            .arg(token)
            .arg(&port)
            .arg(&log)
            .arg(user)
            .spawn()
            .unwrap_or_else(|e| panic!("python3: {e}"));
        assert!(
            wait_until(20, || port.exists()),
            "the git server did not start"
        );
        let port = std::fs::read_to_string(&port).unwrap_or_default();
        Remote {
            _dir: dir,
            bare,
            log,
            url: format!("http://127.0.0.1:{}", port.trim()),
            server,
        }
    }

    /// The requests the server saw (`METHOD PATH auth=…`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// What the server's scans of every process found (`leak PID COMM FILE`,
    /// `seen COMM`; see server.py).
    pub fn scans(&self) -> String {
        std::fs::read_to_string(self.log.with_extension("scan")).unwrap_or_default()
    }

    pub fn pushes(&self) -> usize {
        self.log()
            .lines()
            .filter(|l| l.starts_with("POST") && l.contains("git-receive-pack"))
            .count()
    }

    /// `git show REV` in the bare repository.
    pub fn show(&self, rev: &str) -> String {
        git(&self.bare, &["show", "--format=%P %an <%ae>", rev])
    }

    /// The workspace: a clone of the remote's main.
    pub fn clone_into(&self, env: &Env) {
        git(
            &env.ws,
            &["clone", "-q", self.bare.to_str().unwrap_or(""), "."],
        );
    }
}

/// Every file under `dir` (the temporary folders plangate used) holding `needle`.
pub fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files_holding(&p, needle));
        } else if std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)) {
            out.push(p);
        }
    }
    out
}
