//! Step sandboxes: what this machine supports (the pre-flight probe), and
//! how a sandboxed command is started.
//!
//! A sandboxed step sees the whole filesystem read-only except the
//! workspace (whose `.git` and, when it lies inside, the run's output folder
//! stay read-only), the step's own artifact folder and a private temporary
//! folder (`TMPDIR`); the network is off unless the step allows it.
//!
//! Backends, best first:
//! - `bwrap` (bubblewrap): new mount, pid, network, ipc and uts namespaces;
//!   bind mounts give the layout above; `--die-with-parent` and the pid
//!   namespace make sure nothing the step forks outlives it, even a process
//!   that called `setsid`.
//! - none: a step that asks for a sandbox is blocked before the run starts
//!   (fail-close), never run unsandboxed.
//!
//! The probe runs the backend for real (`bwrap ... -- true`), because bwrap
//! is often installed where it cannot work (Ubuntu 24.04 runners restrict
//! unprivileged user namespaces; unprivileged containers forbid mounts).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The bubblewrap program (looked up in PATH).
pub const BWRAP: &str = "bwrap";

/// Which backend `--sandbox-backend` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Choice {
    /// The best that works here.
    #[default]
    Auto,
    /// bubblewrap only.
    Bwrap,
    /// No sandbox: every step that asks for one is refused.
    None,
}

/// A sandbox backend that works on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backend {
    /// bubblewrap namespaces.
    #[serde(rename = "bwrap")]
    Bwrap,
}

impl Backend {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Bwrap => "bwrap",
        }
    }
}

/// What the pre-flight found: the backend sandboxed steps will use, or none and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Availability {
    /// `bwrap` or `none`.
    pub available: String,
    /// Why this level (what was probed, what failed).
    pub reason: String,
    #[serde(skip)]
    backend: Option<Backend>,
}

impl Availability {
    /// The backend, if any works.
    pub fn backend(&self) -> Option<Backend> {
        self.backend
    }

    fn with(backend: Backend, reason: String) -> Self {
        Availability {
            available: backend.as_str().to_owned(),
            reason,
            backend: Some(backend),
        }
    }

    fn none(reason: String) -> Self {
        Availability {
            available: "none".to_owned(),
            reason,
            backend: None,
        }
    }
}

/// Probe what this machine supports, within what `choice` allows.
pub fn preflight(choice: Choice) -> Availability {
    if choice == Choice::None {
        return Availability::none("--sandbox-backend none: sandboxes are switched off".into());
    }
    match probe_bwrap() {
        Ok(()) => Availability::with(
            Backend::Bwrap,
            "bwrap ran a probe command with new namespaces and read-only binds".into(),
        ),
        Err(why) => Availability::none(format!("bwrap does not work here: {why}")),
    }
}

/// Run `bwrap` with the flags a step gets (minus the binds) on `true`.
fn probe_bwrap() -> Result<(), String> {
    let mut cmd = Command::new(BWRAP);
    cmd.args(base_args(false))
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{BWRAP}`: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.by_ref().take(4096).read_to_string(&mut err);
                }
                let err = err.trim();
                return Err(if err.is_empty() {
                    format!("the probe ended with {status}")
                } else {
                    format!("the probe ended with {status}: {err}")
                });
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the probe did not finish within 10 s".into());
            }
            Err(e) => return Err(format!("cannot wait for the probe: {e}")),
        }
    }
}

/// Flags every bwrap sandbox gets: read-only root, fresh /dev and /proc,
/// every namespace new (the network's too unless allowed), killed with its parent.
fn base_args(network: bool) -> Vec<String> {
    let mut a: Vec<String> = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if network {
        a.push("--share-net".to_owned());
    }
    a
}

/// What a sandboxed command may touch.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The workspace (read-write, but its `.git` read-only).
    pub workspace: PathBuf,
    /// The run's output folder (read-only when inside the workspace).
    pub out_dir: PathBuf,
    /// The step's artifact folder (read-write).
    pub artifacts: PathBuf,
    /// The step's private temporary folder (read-write).
    pub temp: PathBuf,
    /// Where the command starts.
    pub cwd: PathBuf,
    /// Allow the network.
    pub network: bool,
}

/// The program and arguments that run `program args` inside the sandbox.
pub fn wrap(
    backend: Backend,
    layout: &Layout,
    program: &str,
    args: &[String],
) -> (String, Vec<String>) {
    match backend {
        Backend::Bwrap => (BWRAP.to_owned(), bwrap_args(layout, program, args)),
    }
}

fn bwrap_args(l: &Layout, program: &str, args: &[String]) -> Vec<String> {
    let mut a = base_args(l.network);
    let mut bind = |flag: &str, p: &Path| {
        let s = p.display().to_string();
        a.extend([flag.to_owned(), s.clone(), s]);
    };
    bind("--bind", &l.workspace);
    let git = l.workspace.join(".git");
    if git.symlink_metadata().is_ok() {
        bind("--ro-bind", &git);
    }
    if l.out_dir.starts_with(&l.workspace) && l.out_dir.is_dir() {
        bind("--ro-bind", &l.out_dir);
    }
    bind("--bind", &l.artifacts);
    bind("--bind", &l.temp);
    a.push("--chdir".to_owned());
    a.push(l.cwd.display().to_string());
    a.push("--".to_owned());
    a.push(program.to_owned());
    a.extend(args.iter().cloned());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(ws: &str, out: &str) -> Layout {
        Layout {
            workspace: PathBuf::from(ws),
            out_dir: PathBuf::from(out),
            artifacts: PathBuf::from(out).join("artifacts/s"),
            temp: PathBuf::from("/tmp/t"),
            cwd: PathBuf::from(ws),
            network: false,
        }
    }

    #[test]
    fn bwrap_binds_workspace_then_read_only_parts_then_command() {
        let (prog, a) = wrap(
            Backend::Bwrap,
            &layout("/nonexistent/ws", "/nonexistent/out"),
            "bash",
            &["-c".to_owned(), "true".to_owned()],
        );
        assert_eq!(prog, "bwrap");
        let s = a.join(" ");
        assert!(s.starts_with("--ro-bind / / --dev /dev --proc /proc --unshare-all"));
        assert!(!s.contains("--share-net"));
        assert!(s.contains("--bind /nonexistent/ws /nonexistent/ws"));
        assert!(s.contains("--bind /nonexistent/out/artifacts/s /nonexistent/out/artifacts/s"));
        assert!(s.ends_with("--chdir /nonexistent/ws -- bash -c true"));
    }

    #[test]
    fn network_is_shared_only_when_allowed() {
        let mut l = layout("/w", "/o");
        l.network = true;
        let (_, a) = wrap(Backend::Bwrap, &l, "bash", &[]);
        assert!(a.contains(&"--share-net".to_owned()));
    }

    #[test]
    fn none_is_refused_without_probing() {
        let a = preflight(Choice::None);
        assert_eq!(a.available, "none");
        assert!(a.backend().is_none());
    }
}
