//! How a step's [`Profile`] becomes a sandboxed command line: the bwrap bind
//! mounts, or the `__sandbox-exec` helper's writable paths (Landlock).
//!
//! | profile           | writable                                                        |
//! |-------------------|-----------------------------------------------------------------|
//! | `read-only`       | the step's artifact folder, its private TMPDIR                  |
//! | `workspace-write` | + the workspace, except its `.git` (and the git directories it  |
//! |                   |   points to inside) and (bwrap) the run's output folder inside  |
//! | `declared`        | + `.git`, + the paths the step lists under `writable`           |
//!
//! Landlock cannot take back a right granted higher up, so under that backend
//! the whole workspace is writable for `workspace-write`; `.git` is then
//! protected by [`super::git_guard`] alone (its whole-`.git` snapshot, undone
//! after the step).
//!
//! What every profile may read is [`super::reads`]: the system trees, the
//! workspace minus its `hidden` paths, the step's own folders and the paths
//! it declares. Under bwrap a hidden folder is covered by an empty read-only
//! tmpfs and a hidden file by `/dev/null`; under Landlock they are carved out
//! of the grants ([`super::reads::carve`]) and the workspace is then written
//! through write-only rights.

use std::path::{Path, PathBuf};

use super::{BWRAP, HELPER, reads};
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
    /// Further paths readable whatever the profile (the real object store an
    /// agent's staged copy borrows).
    pub extra_readable: Vec<PathBuf>,
    /// Paths inside the workspace the step may not read (the permission
    /// rules' denials, found when the step starts): left out of the sandbox.
    pub hidden: Vec<PathBuf>,
    /// What the approval grants.
    pub profile: Profile,
    /// Where the supervisor writes how many processes the step left behind.
    pub report: PathBuf,
    /// plangate's kill grace, in milliseconds (the supervisor finishes within it).
    pub kill_grace_ms: u64,
    /// Where the step's egress proxy listens (a step that declares `egress`).
    pub egress: Option<EgressAt>,
}

/// Where a step's egress proxy listens (`crate::egress::proxy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EgressAt {
    /// bwrap: plangate's unix sockets (the proxy's, the model API's), each
    /// bound into the sandbox at the same path, with the port on the
    /// sandbox's own 127.0.0.1 where the forwarder (`__egress-forward`)
    /// listens for it.
    Sockets(Vec<(PathBuf, u16)>),
    /// Landlock: the ports on 127.0.0.1 (the only ones the step may connect to).
    Ports(Vec<u16>),
}

/// Flags every bwrap sandbox gets: the system trees read-only (nothing else
/// of the host: see [`reads`]), fresh `/dev` and `/proc`, every namespace
/// new (the network's too unless allowed), killed with its parent. After
/// the binds, [`SEAL`] makes bwrap's own root read-only, so that a write
/// anywhere else fails rather than landing in a throwaway tmpfs.
pub(super) const SEAL: [&str; 2] = ["--remount-ro", "/"];

/// See [`SEAL`].
pub(super) fn base_args(network: bool) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    for p in reads::system_roots() {
        let s = p.display().to_string();
        match std::fs::read_link(&p) {
            // `/bin -> usr/bin` on merged-/usr systems: the same link inside.
            Ok(target) => a.extend(["--symlink".to_owned(), target.display().to_string(), s]),
            Err(_) => a.extend(["--ro-bind".to_owned(), s.clone(), s]),
        }
    }
    for p in reads::system_hidden() {
        a.extend([
            "--ro-bind".to_owned(),
            "/dev/null".to_owned(),
            p.display().to_string(),
        ]);
    }
    for p in reads::system_extra() {
        let s = p.display().to_string();
        a.extend(["--ro-bind".to_owned(), s.clone(), s]);
    }
    a.extend(
        [
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
            // As root (uid 0 maps to the host's), the kernel's settings are
            // writable without a capability (`core_pattern` runs a program as
            // root): bwrap covers them only when it cannot tell.
            "--ro-bind-try",
            "/proc/sys",
            "/proc/sys",
            "--ro-bind-try",
            "/proc/sysrq-trigger",
            "/proc/sysrq-trigger",
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    if network {
        a.push("--share-net".to_owned());
    }
    a
}

/// The program and arguments that run `program args` inside the sandbox; an
/// error (the step is not run) when the paths to hide need too many rules or
/// cannot be listed.
pub(crate) fn wrap(
    backend: Backend,
    layout: &Layout,
    program: &str,
    args: &[String],
) -> Result<(String, Vec<String>), String> {
    if layout.hidden.len() > reads::MAX_RULES {
        return Err(reads::too_many());
    }
    match backend {
        Backend::Bwrap => Ok((BWRAP.to_owned(), bwrap_args(layout, program, args))),
        Backend::Landlock => Ok((own_exe(), helper_args(layout, program, args)?)),
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

/// The paths readable besides the system, the workspace and the step's own folders.
fn readable(l: &Layout) -> Vec<PathBuf> {
    readable_links(l)
        .into_iter()
        .map(|(real, _)| real)
        .collect()
}

/// The declared readable paths as the kernel grants them: where they lead
/// (a link to a hidden folder of the workspace is that folder, so what is
/// hidden is carved from where it really is), each with its spelling when
/// that differs. One inside the workspace adds nothing (the workspace is
/// granted with its hidden paths taken out); one that does not exist
/// grants nothing.
fn readable_links(l: &Layout) -> Vec<(PathBuf, Option<PathBuf>)> {
    let workspace = std::fs::canonicalize(&l.workspace).unwrap_or_else(|_| l.workspace.clone());
    let mut out: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
    for p in l.profile.readable.iter().chain(&l.extra_readable) {
        let Ok(real) = std::fs::canonicalize(p) else {
            continue;
        };
        if real.starts_with(&workspace) || out.iter().any(|(r, _)| *r == real) {
            continue;
        }
        let spelled = (real != *p).then(|| p.clone());
        out.push((real, spelled));
    }
    out
}

/// The supervisor (outside the step's Landlock domain, so that under ABI 6
/// the step cannot signal it away), then the helper that restricts itself
/// and execs the command.
fn helper_args(l: &Layout, program: &str, args: &[String]) -> Result<Vec<String>, String> {
    let mut a = vec![HELPER.to_owned(), "--limits-only".to_owned()];
    a.extend(supervisor_args(&l.report, l.kill_grace_ms));
    a.extend(["--".to_owned(), own_exe(), HELPER.to_owned()]);
    a.extend(confine_flags(l)?);
    a.push("--".to_owned());
    a.push(program.to_owned());
    a.extend(args.iter().cloned());
    Ok(a)
}

/// The helper flags that confine a step under Landlock and seccomp (what
/// `__sandbox-exec` takes before `--`): the same for the helper and for a
/// resident supervisor's confining thread.
pub(crate) fn confine_flags(l: &Layout) -> Result<Vec<String>, String> {
    if l.hidden.len() > reads::MAX_RULES {
        return Err(reads::too_many());
    }
    let mut a: Vec<String> = Vec::new();
    if l.profile.filesystem == Filesystem::ReadOnly {
        a.push("--frozen-metadata".to_owned());
    }
    let mut push = |flag: &str, p: &Path| {
        a.push(flag.to_owned());
        a.push(p.display().to_string());
    };
    // Every tree granted for reading, minus what is hidden in it (the
    // workspace; a declared path above it); a tree written is written
    // through write-only rights when something in it is hidden (a read right
    // beneath would undo the hiding).
    let write = writable(l);
    let mut trees: Vec<PathBuf> = vec![l.workspace.clone()];
    for p in readable(l).into_iter().chain(write.iter().cloned()) {
        if !trees.contains(&p) {
            trees.push(p);
        }
    }
    let mut rules = 0usize;
    for p in &trees {
        let carved = reads::carve(p, &l.hidden)?;
        rules += carved.full.len() + carved.list_only.len();
        if rules > reads::MAX_RULES {
            return Err(reads::too_many());
        }
        let hides = !carved.list_only.is_empty();
        for d in &carved.list_only {
            push("--ls", d);
        }
        let written = write.contains(p);
        if written {
            push(if hides { "--wo" } else { "--rw" }, p);
        }
        if hides || !written {
            for f in &carved.full {
                push("--ro", f);
            }
        }
    }
    push("--rw", &l.artifacts);
    push("--rw", &l.temp);
    let shm = Path::new(reads::SHARED_MEMORY);
    if l.profile.filesystem == Filesystem::Declared && shm.is_dir() {
        push("--rw", shm);
    }
    if l.profile.network {
        a.push("--net".to_owned());
    }
    if let Some(EgressAt::Ports(ports)) = &l.egress {
        for p in ports {
            a.extend(["--egress-port".to_owned(), p.to_string()]);
        }
    }
    Ok(a)
}

fn bwrap_args(l: &Layout, program: &str, args: &[String]) -> Vec<String> {
    let mut a = bwrap_layout(l);
    let mut bind = |flag: &str, p: &Path| {
        let s = p.display().to_string();
        a.extend([flag.to_owned(), s.clone(), s]);
    };
    bind("--bind", &l.artifacts);
    bind("--bind", &l.temp);
    // The supervisor (plangate's own binary, read-only) runs inside, so that
    // what the step leaves behind is counted before the namespace dies.
    let exe = own_exe();
    a.extend(["--ro-bind".to_owned(), exe.clone(), exe.clone()]);
    if let Some(EgressAt::Sockets(routes)) = &l.egress {
        for (sock, _) in routes {
            let s = sock.display().to_string();
            a.extend(["--ro-bind".to_owned(), s.clone(), s]);
        }
    }
    a.extend(SEAL.iter().map(|s| (*s).to_owned()));
    a.push("--chdir".to_owned());
    a.push(l.cwd.display().to_string());
    a.push("--".to_owned());
    if let Some(EgressAt::Sockets(routes)) = &l.egress {
        // The forwarder first (outside the supervisor's count), then the supervisor.
        a.extend([exe.clone(), crate::egress::forward::FORWARD.to_owned()]);
        for (sock, port) in routes {
            a.extend(["--route".to_owned(), format!("{port}={}", sock.display())]);
        }
        a.push("--".to_owned());
    }
    a.push(exe);
    a.push(HELPER.to_owned());
    a.extend(in_sandbox_flags(l));
    a.extend(supervisor_args(&l.report, l.kill_grace_ms));
    a.push("--".to_owned());
    a.push(program.to_owned());
    a.extend(args.iter().cloned());
    a
}

/// What the helper applies inside bwrap (before the supervisor's flags).
fn in_sandbox_flags(l: &Layout) -> Vec<String> {
    let mut a = vec!["--limits-only".to_owned()];
    if l.egress.is_some() && !l.profile.network {
        a.push("--egress-sockets".to_owned());
    } else if !l.profile.network {
        // A unix socket bound in the visible filesystem (docker.sock) is
        // reachable through the read-only binds: no socket at all.
        a.push("--deny-sockets".to_owned());
    } else {
        // Network on: no socket filter, but file flags stay as they are.
        a.push("--frozen-file-flags".to_owned());
    }
    a
}

/// A resident bwrap lane for a step of layout `l` (`process::lane`, walled):
/// its spec, whose key is the layout's bwrap flags without anything of the
/// step (its artifact folder, TMPDIR, start folder, command, report) and
/// the identity of every path they bind or cover. None when the step
/// cannot run through one: it declares `egress` (per-step sockets), or it
/// starts inside its own folders.
pub(crate) fn walled_lane(l: &Layout, exe: &str) -> Option<crate::process::lane::LaneSpec> {
    if l.egress.is_some() || l.cwd.starts_with(&l.artifacts) || l.cwd.starts_with(&l.temp) {
        return None;
    }
    let layout = bwrap_layout(l);
    let stamps = stamps(&layout);
    let mut args: Vec<String> = WALLED.iter().map(|s| (*s).to_owned()).collect();
    args.extend(["--ro-bind".to_owned(), exe.to_owned(), exe.to_owned()]);
    args.extend(SEAL.iter().map(|s| (*s).to_owned()));
    args.extend([
        "--chdir".to_owned(),
        "/".to_owned(),
        "--".to_owned(),
        exe.to_owned(),
        super::LANE.to_owned(),
    ]);
    Some(crate::process::lane::LaneSpec {
        program: crate::process::program_path(BWRAP).display().to_string(),
        args,
        confine: Some(in_sandbox_flags(l)),
        walled: Some(crate::process::lane::Walled {
            layout,
            stamps,
            output: l.out_dir.clone(),
        }),
    })
}

/// What a resident sandbox adds to the layout, so that no step leaves
/// anything there for the next one but in the folders its lane empties and
/// checks (`super::lane`): the lane is the namespace's first process (every
/// orphan comes back to it; a step cannot signal it, and the namespace ends
/// with it), `/dev` is read-only but for a shared-memory folder of its own,
/// and POSIX message queues are listed where the lane sees them.
pub(super) const WALLED: [&str; 9] = [
    "--as-pid-1",
    "--mqueue",
    "/dev/mqueue",
    "--perms",
    "1777",
    "--tmpfs",
    "/dev/shm",
    "--remount-ro",
    "/dev",
];

/// (device, inode) of every path bwrap's flags `a` bind or cover (None: absent).
fn stamps(a: &[String]) -> Vec<Option<(u64, u64)>> {
    use std::os::unix::fs::MetadataExt as _;
    let id = |m: std::fs::Metadata| (m.dev(), m.ino());
    let mut out = Vec::new();
    let mut i = 0;
    while i < a.len() {
        match a[i].as_str() {
            "--bind" | "--ro-bind" | "--ro-bind-try" | "--dev-bind" if i + 2 < a.len() => {
                // bwrap follows a source that is a link; the destination
                // (a path inside, the same one here but for `/dev/null`
                // over a hidden file) is what the mount covers.
                out.push(std::fs::metadata(&a[i + 1]).ok().map(id));
                out.push(std::fs::symlink_metadata(&a[i + 2]).ok().map(id));
                i += 3;
            }
            "--tmpfs" | "--remount-ro" if i + 1 < a.len() => {
                out.push(std::fs::symlink_metadata(&a[i + 1]).ok().map(id));
                i += 2;
            }
            _ => i += 1,
        }
    }
    out
}

/// bwrap's flags for the layout, before the step's own folders are bound.
fn bwrap_layout(l: &Layout) -> Vec<String> {
    let mut a = base_args(l.profile.network);
    for (real, spelled) in readable_links(l) {
        // Seen where it was declared, unless the tree holds the workspace
        // (its hidden paths are covered where they really are).
        let dest = match spelled {
            Some(s) if !l.workspace.starts_with(&real) => s,
            _ => real.clone(),
        };
        a.extend([
            "--ro-bind-try".to_owned(),
            real.display().to_string(),
            dest.display().to_string(),
        ]);
    }
    let mut bind = |flag: &str, p: &Path| {
        let s = p.display().to_string();
        a.extend([flag.to_owned(), s.clone(), s]);
    };
    if l.profile.filesystem < Filesystem::WorkspaceWrite {
        bind("--ro-bind", &l.workspace);
    }
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
    // What the step may not read: an empty read-only folder over a folder,
    // the empty device over a file (links are left: what they point to is
    // judged on its own).
    for p in &l.hidden {
        let Ok(m) = p.symlink_metadata() else {
            continue;
        };
        let s = p.display().to_string();
        if m.is_dir() {
            a.extend([
                "--tmpfs".to_owned(),
                s.clone(),
                "--remount-ro".to_owned(),
                s,
            ]);
        } else if !m.file_type().is_symlink() {
            a.extend(["--ro-bind".to_owned(), "/dev/null".to_owned(), s]);
        }
    }
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
            extra_readable: Vec::new(),
            hidden: Vec::new(),
            profile: Profile {
                filesystem,
                network: false,
                writable: vec![PathBuf::from("/opt/cache")],
                readable: Vec::new(),
                egress: None,
            },
            report: PathBuf::from("/tmp/t/.plangate-supervisor"),
            kill_grace_ms: 5000,
            egress: None,
        }
    }

    fn bwrap(l: &Layout) -> String {
        let (prog, a) =
            wrap(Backend::Bwrap, l, "bash", &["-c".into(), "true".into()]).expect("wrap");
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
        assert!(!s.contains("--ro-bind / /"), "{s}");
        assert!(s.contains("--ro-bind /usr /usr"), "{s}");
        assert!(s.contains("--dev /dev --proc /proc --unshare-all"));
        assert!(s.contains("--remount-ro / --chdir"), "{s}");
        assert!(!s.contains("--share-net"));
        assert!(s.contains("--ro-bind /nonexistent/ws /nonexistent/ws"));
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
        let (_, a) = wrap(Backend::Landlock, &l, "bash", &[]).expect("wrap");
        assert_eq!(a.iter().filter(|x| *x == "--rw").count(), 2);
        let pos = a.iter().position(|x| x == "/w").expect("workspace read");
        assert_eq!(a[pos - 1], "--ro");
        let l = layout("/w", "/o", Filesystem::WorkspaceWrite);
        let (_, a) = wrap(Backend::Landlock, &l, "bash", &[]).expect("wrap");
        assert_eq!(a.iter().filter(|x| *x == "--rw").count(), 3);
        assert!(a.windows(2).any(|p| p[0] == "--rw" && p[1] == "/w"));
        assert!(!a.contains(&"--net".to_owned()));
    }

    #[test]
    fn hidden_paths_are_covered_under_bwrap_and_carved_out_under_landlock() {
        let t = tempfile::tempdir().expect("tmp");
        let ws = t.path();
        std::fs::create_dir_all(ws.join("secrets")).expect("mkdir");
        std::fs::write(ws.join("secrets/key"), "k").expect("write");
        std::fs::write(ws.join(".env"), "k").expect("write");
        std::fs::write(ws.join("ok"), "k").expect("write");
        let w = ws.display().to_string();
        let mut l = layout(&w, "/nonexistent/out", Filesystem::WorkspaceWrite);
        l.hidden = vec![ws.join("secrets"), ws.join(".env")];
        let s = bwrap(&l);
        let d = format!("{w}/secrets");
        assert!(s.contains(&format!("--tmpfs {d} --remount-ro {d}")), "{s}");
        assert!(s.contains(&format!("--ro-bind /dev/null {w}/.env")), "{s}");
        // The covers come after the workspace bind.
        let bind_at = s.find(&format!("--bind {w} {w}")).expect("workspace bind");
        let cover_at = s.find(&format!("--tmpfs {d}")).expect("cover");
        assert!(bind_at < cover_at, "{s}");
        let (_, a) = wrap(Backend::Landlock, &l, "bash", &[]).expect("wrap");
        let flag_of = |p: &str| a.iter().position(|x| x == p).map(|i| a[i - 1].clone());
        assert_eq!(flag_of(&w).as_deref(), Some("--ls"));
        assert_eq!(flag_of(&format!("{w}/ok")).as_deref(), Some("--ro"));
        assert_eq!(flag_of(&format!("{w}/secrets")), None);
        assert_eq!(flag_of(&format!("{w}/.env")), None);
        // The workspace itself is written through write-only rights.
        assert!(a.windows(2).any(|p| p[0] == "--wo" && p[1] == w));
        // Too many paths to hide: refused.
        l.hidden = (0..=reads::MAX_RULES)
            .map(|i| ws.join(format!("f{i}")))
            .collect();
        assert!(wrap(Backend::Bwrap, &l, "bash", &[]).is_err());
    }

    #[test]
    fn network_is_shared_only_when_allowed() {
        let mut l = layout("/w", "/o", Filesystem::ReadOnly);
        l.profile.network = true;
        let (_, a) = wrap(Backend::Bwrap, &l, "bash", &[]).expect("wrap");
        assert!(a.contains(&"--share-net".to_owned()));
        let (_, a) = wrap(Backend::Landlock, &l, "bash", &[]).expect("wrap");
        assert!(a.contains(&"--net".to_owned()));
    }

    #[test]
    fn a_walled_lane_is_keyed_by_the_layout_without_the_steps_own_parts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
        std::fs::write(ws.join(".env"), "x").expect("write");
        let w = ws.display().to_string();
        let key = |l: &Layout| walled_lane(l, "/bin/plangate").expect("walled").walled;
        let mut a = layout(&w, "/nonexistent/out", Filesystem::ReadOnly);
        a.hidden = vec![ws.join(".env")];
        // Another step: its own folders, start folder, report and grace.
        let mut b = a.clone();
        b.artifacts = PathBuf::from("/nonexistent/out/artifacts/other");
        b.temp = PathBuf::from("/tmp/other");
        b.cwd = ws.join("sub");
        b.report = PathBuf::from("/tmp/other/.r");
        b.kill_grace_ms = 1;
        assert_eq!(key(&a), key(&b));
        let spec = walled_lane(&a, "/bin/plangate").expect("walled");
        let all =
            spec.walled.as_ref().expect("walled").layout.join(" ") + " " + &spec.args.join(" ");
        for own in ["/artifacts/s", "/tmp/t", ".plangate-supervisor"] {
            assert!(!all.contains(own), "{own}: {all}");
        }
        assert!(spec.args.starts_with(&WALLED.map(str::to_owned)), "{all}");
        assert!(
            all.ends_with("--chdir / -- /bin/plangate __sandbox-lane"),
            "{all}"
        );
        assert_eq!(
            spec.confine,
            Some(vec![
                "--limits-only".to_owned(),
                "--deny-sockets".to_owned()
            ])
        );
        // What changes the sandbox changes the key: a profile, a hidden path
        // more, the network.
        let mut c = a.clone();
        c.profile.filesystem = Filesystem::WorkspaceWrite;
        assert_ne!(key(&a), key(&c));
        let mut c = a.clone();
        c.hidden.push(ws.join("sub"));
        assert_ne!(key(&a), key(&c));
        let mut c = a.clone();
        c.profile.network = true;
        assert_ne!(key(&a), key(&c));
        // A hidden file replaced on the host (a new inode at its path).
        let before = key(&a);
        std::fs::write(ws.join("new"), "y").expect("write");
        std::fs::rename(ws.join("new"), ws.join(".env")).expect("rename");
        assert_ne!(before, key(&a));
        // No lane for an egress step, or one that starts in its own folder.
        let mut c = a.clone();
        c.egress = Some(EgressAt::Sockets(Vec::new()));
        assert!(walled_lane(&c, "/bin/plangate").is_none());
        let mut c = a.clone();
        c.cwd = c.temp.join("x");
        assert!(walled_lane(&c, "/bin/plangate").is_none());
    }
}
