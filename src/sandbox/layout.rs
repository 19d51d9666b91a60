//! How a step's [`Profile`] becomes a sandboxed command line: the bwrap bind
//! mounts, or the `__sandbox-exec` helper's writable paths (Landlock).
//!
//! | profile           | writable                                                        |
//! |-------------------|-----------------------------------------------------------------|
//! | `read-only`       | the step's artifact folder, its private TMPDIR                  |
//! | `workspace-write` | + the workspace, except the files that make git run code and    |
//! |                   |   (bwrap) the run's output folder when it lies inside           |
//! | `declared`        | + those git files, + the paths the step lists under `writable`  |
//!
//! Landlock cannot take back a right granted higher up, so under that backend
//! the whole workspace is writable for `workspace-write`; the git files are
//! then protected by [`super::git_guard`] alone (it runs after every step on
//! both backends and undoes such changes).

use std::path::{Path, PathBuf};

use super::{BWRAP, HELPER};
use crate::model::{Backend, Filesystem, Profile};

/// What a sandboxed command may touch.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The workspace.
    pub workspace: PathBuf,
    /// The run's output folder (read-only when inside the workspace, under bwrap).
    pub out_dir: PathBuf,
    /// The step's artifact folder (read-write).
    pub artifacts: PathBuf,
    /// The step's private temporary folder (read-write).
    pub temp: PathBuf,
    /// Where the command starts.
    pub cwd: PathBuf,
    /// Further folders writable whatever the profile (an agent CLI's private home).
    pub extra: Vec<PathBuf>,
    /// What the approval grants.
    pub profile: Profile,
    /// Where the supervisor writes how many processes the step left behind.
    pub report: PathBuf,
    /// plangate's kill grace, in milliseconds (the supervisor finishes within it).
    pub kill_grace_ms: u64,
}

/// Flags every bwrap sandbox gets: read-only root, fresh /dev and /proc,
/// every namespace new (the network's too unless allowed), killed with its parent.
pub(super) fn base_args(network: bool) -> Vec<String> {
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
        // Run as root, bwrap keeps every capability: a step could remount
        // the read-only binds writable.
        "--cap-drop",
        "ALL",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if network {
        a.push("--share-net".to_owned());
    }
    a
}

/// The program and arguments that run `program args` inside the sandbox.
pub(crate) fn wrap(
    backend: Backend,
    layout: &Layout,
    program: &str,
    args: &[String],
) -> (String, Vec<String>) {
    match backend {
        Backend::Bwrap => (BWRAP.to_owned(), bwrap_args(layout, program, args)),
        Backend::Landlock => (own_exe(), helper_args(layout, program, args)),
    }
}

/// The paths a profile makes writable (besides the artifact folder and TMPDIR).
fn writable(l: &Layout) -> Vec<PathBuf> {
    let mut w = Vec::new();
    if l.profile.filesystem >= Filesystem::WorkspaceWrite {
        w.push(l.workspace.clone());
    }
    if l.profile.filesystem == Filesystem::Declared {
        w.extend(l.profile.writable.iter().cloned());
    }
    w.extend(l.extra.iter().cloned());
    w
}

/// The helper arguments that make it supervise the command (see `confine::supervise`).
pub(crate) fn supervisor_args(report: &Path, kill_grace_ms: u64) -> Vec<String> {
    vec![
        "--supervise".to_owned(),
        report.display().to_string(),
        "--kill-grace-ms".to_owned(),
        kill_grace_ms.to_string(),
    ]
}

fn own_exe() -> String {
    std::env::current_exe().map_or_else(|_| "plangate".to_owned(), |p| p.display().to_string())
}

/// The supervisor (outside the step's Landlock domain, so that under ABI 6
/// the step cannot signal it away), then the helper that restricts itself
/// and execs the command.
fn helper_args(l: &Layout, program: &str, args: &[String]) -> Vec<String> {
    let mut a = vec![HELPER.to_owned(), "--limits-only".to_owned()];
    a.extend(supervisor_args(&l.report, l.kill_grace_ms));
    a.extend(["--".to_owned(), own_exe(), HELPER.to_owned()]);
    if l.profile.filesystem == Filesystem::ReadOnly {
        a.push("--frozen-metadata".to_owned());
    }
    for p in writable(l)
        .into_iter()
        .chain([l.artifacts.clone(), l.temp.clone()])
    {
        a.push("--rw".to_owned());
        a.push(p.display().to_string());
    }
    if l.profile.network {
        a.push("--net".to_owned());
    }
    a.push("--".to_owned());
    a.push(program.to_owned());
    a.extend(args.iter().cloned());
    a
}

fn bwrap_args(l: &Layout, program: &str, args: &[String]) -> Vec<String> {
    let mut a = base_args(l.profile.network);
    let mut bind = |flag: &str, p: &Path| {
        let s = p.display().to_string();
        a.extend([flag.to_owned(), s.clone(), s]);
    };
    for p in writable(l) {
        bind("--bind", &p);
    }
    if l.profile.filesystem == Filesystem::WorkspaceWrite {
        for p in super::git_guard::existing_roots(&l.workspace) {
            bind("--ro-bind", &p);
        }
    }
    if l.profile.filesystem >= Filesystem::WorkspaceWrite
        && l.out_dir.starts_with(&l.workspace)
        && l.out_dir.is_dir()
    {
        bind("--ro-bind", &l.out_dir);
    }
    bind("--bind", &l.artifacts);
    bind("--bind", &l.temp);
    // The supervisor (plangate's own binary, read-only) runs inside, so that
    // what the step leaves behind is counted before the namespace dies.
    let exe = own_exe();
    a.extend(["--ro-bind".to_owned(), exe.clone(), exe.clone()]);
    a.push("--chdir".to_owned());
    a.push(l.cwd.display().to_string());
    a.push("--".to_owned());
    a.push(exe);
    a.push(HELPER.to_owned());
    a.push("--limits-only".to_owned());
    if !l.profile.network {
        // A unix socket bound in the visible filesystem (docker.sock) is
        // reachable through the read-only binds: no socket at all.
        a.push("--deny-sockets".to_owned());
    }
    a.extend(supervisor_args(&l.report, l.kill_grace_ms));
    a.push("--".to_owned());
    a.push(program.to_owned());
    a.extend(args.iter().cloned());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(ws: &str, out: &str, filesystem: Filesystem) -> Layout {
        Layout {
            workspace: PathBuf::from(ws),
            out_dir: PathBuf::from(out),
            artifacts: PathBuf::from(out).join("artifacts/s"),
            temp: PathBuf::from("/tmp/t"),
            cwd: PathBuf::from(ws),
            extra: Vec::new(),
            profile: Profile {
                filesystem,
                network: false,
                writable: vec![PathBuf::from("/opt/cache")],
            },
            report: PathBuf::from("/tmp/t/.plangate-supervisor"),
            kill_grace_ms: 5000,
        }
    }

    fn bwrap(l: &Layout) -> String {
        let (prog, a) = wrap(Backend::Bwrap, l, "bash", &["-c".into(), "true".into()]);
        assert_eq!(prog, "bwrap");
        a.join(" ")
    }

    #[test]
    fn read_only_binds_only_artifacts_and_temp() {
        let s = bwrap(&layout(
            "/nonexistent/ws",
            "/nonexistent/out",
            Filesystem::ReadOnly,
        ));
        assert!(s.starts_with("--ro-bind / / --dev /dev --proc /proc --unshare-all"));
        assert!(!s.contains("--share-net"));
        assert!(!s.contains("--bind /nonexistent/ws "));
        assert!(!s.contains("/opt/cache"));
        assert!(s.contains("--bind /nonexistent/out/artifacts/s /nonexistent/out/artifacts/s"));
        assert!(s.contains("--bind /tmp/t /tmp/t"));
        assert!(s.contains("--chdir /nonexistent/ws -- "));
        assert!(s.ends_with("__sandbox-exec --limits-only --deny-sockets --supervise /tmp/t/.plangate-supervisor --kill-grace-ms 5000 -- bash -c true"));
    }

    #[test]
    fn workspace_write_binds_the_workspace_and_declared_adds_paths() {
        let s = bwrap(&layout(
            "/nonexistent/ws",
            "/nonexistent/out",
            Filesystem::WorkspaceWrite,
        ));
        assert!(s.contains("--bind /nonexistent/ws /nonexistent/ws"));
        assert!(!s.contains("/opt/cache"));
        let s = bwrap(&layout(
            "/nonexistent/ws",
            "/nonexistent/out",
            Filesystem::Declared,
        ));
        assert!(s.contains("--bind /nonexistent/ws /nonexistent/ws"));
        assert!(s.contains("--bind /opt/cache /opt/cache"));
    }

    #[test]
    fn landlock_grants_follow_the_profile() {
        let l = layout("/w", "/o", Filesystem::ReadOnly);
        let (_, a) = wrap(Backend::Landlock, &l, "bash", &[]);
        assert_eq!(a.iter().filter(|x| *x == "--rw").count(), 2);
        assert!(!a.contains(&"/w".to_owned()));
        let l = layout("/w", "/o", Filesystem::WorkspaceWrite);
        let (_, a) = wrap(Backend::Landlock, &l, "bash", &[]);
        assert!(a.contains(&"/w".to_owned()));
        assert!(!a.contains(&"--net".to_owned()));
    }

    #[test]
    fn network_is_shared_only_when_allowed() {
        let mut l = layout("/w", "/o", Filesystem::ReadOnly);
        l.profile.network = true;
        let (_, a) = wrap(Backend::Bwrap, &l, "bash", &[]);
        assert!(a.contains(&"--share-net".to_owned()));
        let (_, a) = wrap(Backend::Landlock, &l, "bash", &[]);
        assert!(a.contains(&"--net".to_owned()));
    }
}
