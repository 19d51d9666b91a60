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
//! - `landlock+seccomp`: when bwrap does not work. The step runs through
//!   plangate's hidden `__sandbox-exec` helper, which restricts itself with
//!   Landlock (read everywhere, write only beneath the allowed paths) and,
//!   without network, a seccomp filter refusing every non-unix socket and
//!   io_uring, then `exec`s the command (same pid and process group). Landlock
//!   cannot take back a right granted higher up, so the workspace's `.git` (and
//!   the output folder inside it) stay read-only by granting write access to
//!   each sibling instead: new entries directly in the workspace root (or in
//!   another parent of those folders) cannot be created under this backend.
//!   There is no pid namespace: a process that calls `setsid` can outlive the
//!   step, as without a sandbox.
//! - none: a step that asks for a sandbox is blocked before the run starts
//!   (fail-close), never run unsandboxed.
//!
//! The probe runs the backend for real (`bwrap ... -- true`), because bwrap
//! is often installed where it cannot work (Ubuntu 24.04 runners restrict
//! unprivileged user namespaces; unprivileged containers forbid mounts).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::model::{Availability, Backend};

/// The bubblewrap program (looked up in PATH).
pub(crate) const BWRAP: &str = "bwrap";

/// Which backend `--sandbox-backend` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Choice {
    /// The best that works here.
    #[default]
    Auto,
    /// bubblewrap only.
    Bwrap,
    /// Landlock + seccomp only.
    Landlock,
    /// No sandbox: every step that asks for one is refused.
    None,
}

/// Probe what this machine supports, within what `choice` allows.
pub(crate) fn preflight(choice: Choice) -> Availability {
    if choice == Choice::None {
        return Availability::none("--sandbox-backend none: sandboxes are switched off".into());
    }
    let mut tried = Vec::new();
    if matches!(choice, Choice::Auto | Choice::Bwrap) {
        match probe(bwrap_probe_command()) {
            Ok(()) => {
                return Availability::with(
                    Backend::Bwrap,
                    "bwrap ran a probe command with new namespaces and read-only binds".into(),
                );
            }
            Err(why) => tried.push(format!("bwrap does not work here: {why}")),
        }
    }
    if matches!(choice, Choice::Auto | Choice::Landlock) {
        match landlock_probe_command().and_then(probe) {
            Ok(()) => {
                let mut why = tried.join("; ");
                if !why.is_empty() {
                    why.push_str("; ");
                }
                why.push_str("a probe child enforced Landlock (ABI v3 rights) and the seccomp network filter");
                return Availability::with(Backend::Landlock, why);
            }
            Err(why) => tried.push(format!("Landlock + seccomp does not work here: {why}")),
        }
    }
    Availability::none(tried.join("; "))
}

/// Why a probe failed, or why the helper could not restrict itself.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    /// `current_exe` failed.
    #[error("cannot find plangate's own binary: {0}")]
    OwnBinary(std::io::Error),
    /// The probe could not be started.
    #[error("cannot start `{name}`: {source}")]
    Start {
        /// The program.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// The probe ended unsuccessfully (with what it wrote on stderr).
    #[error("the probe ended with {status}{}", stderr_suffix(.stderr))]
    ProbeFailed {
        /// How it ended.
        status: std::process::ExitStatus,
        /// Its stderr, trimmed (at most 4 KiB).
        stderr: String,
    },
    /// The probe hung.
    #[error("the probe did not finish within 10 s")]
    ProbeTimedOut,
    /// Waiting for the probe failed.
    #[error("cannot wait for the probe: {0}")]
    Wait(std::io::Error),
    /// A resource limit could not be set.
    #[error("cannot set the {what} limit: {source}")]
    Limit {
        /// memory, processes or file size.
        what: &'static str,
        /// Why.
        source: rustix::io::Errno,
    },
    /// Landlock refused the ruleset.
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The kernel enforces Landlock only partly.
    #[error("Landlock is not fully enforced by this kernel ({0:?})")]
    NotEnforced(landlock::RulesetStatus),
    /// This architecture has no seccomp filter.
    #[error("seccomp: unsupported architecture: {0}")]
    Arch(seccompiler::BackendError),
    /// The seccomp filter could not be built.
    #[error("seccomp: {0}")]
    SeccompBuild(#[from] seccompiler::BackendError),
    /// The seccomp filter could not be applied.
    #[error("seccomp: {0}")]
    Seccomp(#[from] seccompiler::Error),
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

fn bwrap_probe_command() -> Command {
    let mut cmd = Command::new(BWRAP);
    cmd.args(base_args(false)).args(["--", "true"]);
    cmd
}

fn landlock_probe_command() -> Result<Command, SandboxError> {
    let exe = std::env::current_exe().map_err(SandboxError::OwnBinary)?;
    let mut cmd = Command::new(exe);
    cmd.args([HELPER, "--", "true"]);
    Ok(cmd)
}

/// Run a probe command (the sandbox around `true`); Ok when it exits 0.
fn probe(mut cmd: Command) -> Result<(), SandboxError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let name = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .spawn()
        .map_err(|source| SandboxError::Start { name, source })?;
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
                return Err(SandboxError::ProbeFailed {
                    status,
                    stderr: err.trim().to_owned(),
                });
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SandboxError::ProbeTimedOut);
            }
            Err(e) => return Err(SandboxError::Wait(e)),
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
pub(crate) struct Layout {
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
pub(crate) fn wrap(
    backend: Backend,
    layout: &Layout,
    program: &str,
    args: &[String],
) -> (String, Vec<String>) {
    match backend {
        Backend::Bwrap => (BWRAP.to_owned(), bwrap_args(layout, program, args)),
        Backend::Landlock => {
            let exe = std::env::current_exe()
                .map_or_else(|_| "plangate".to_owned(), |p| p.display().to_string());
            (exe, helper_args(layout, program, args))
        }
    }
}

/// The hidden helper subcommand.
pub(crate) const HELPER: &str = "__sandbox-exec";

fn helper_args(l: &Layout, program: &str, args: &[String]) -> Vec<String> {
    let mut a = vec![HELPER.to_owned()];
    let mut ro = vec![l.workspace.join(".git")];
    if l.out_dir.starts_with(&l.workspace) {
        ro.push(l.out_dir.clone());
    }
    for p in writable_beneath(&l.workspace, &ro)
        .into_iter()
        .chain([l.artifacts.clone(), l.temp.clone()])
    {
        a.push("--rw".to_owned());
        a.push(p.display().to_string());
    }
    if l.network {
        a.push("--net".to_owned());
    }
    a.push("--".to_owned());
    a.push(program.to_owned());
    a.extend(args.iter().cloned());
    a
}

/// The paths to grant write access to so that everything beneath `root` is
/// writable except the `read_only` paths: `root` itself when none of them is
/// beneath it, else each child of `root` that is not one of them (recursing
/// into their parents). Symbolic links are never granted (Landlock would
/// follow them out of the workspace).
pub(crate) fn writable_beneath(root: &Path, read_only: &[PathBuf]) -> Vec<PathBuf> {
    let inside: Vec<&PathBuf> = read_only
        .iter()
        .filter(|p| p.starts_with(root) && p.as_path() != root && p.symlink_metadata().is_ok())
        .collect();
    if inside.is_empty() {
        return vec![root.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names {
        let Ok(meta) = p.symlink_metadata() else {
            continue;
        };
        if meta.file_type().is_symlink() || inside.iter().any(|r| **r == p) {
            continue;
        }
        if meta.is_dir() && inside.iter().any(|r| r.starts_with(&p)) {
            out.extend(writable_beneath(&p, read_only));
        } else {
            out.push(p);
        }
    }
    out
}

/// Arguments of the hidden `__sandbox-exec` helper.
#[derive(Debug, Clone, clap::Args)]
pub struct ExecArgs {
    /// Paths (and everything beneath) the command may write.
    #[arg(long = "rw", value_name = "PATH")]
    pub rw: Vec<PathBuf>,
    /// Leave the network on.
    #[arg(long)]
    pub net: bool,
    /// Only apply the resource limits; no Landlock, no seccomp (the sandbox, if
    /// any, is the bwrap this helper then runs).
    #[arg(long)]
    pub limits_only: bool,
    /// RLIMIT_AS, bytes.
    #[arg(long, value_name = "BYTES")]
    pub rlimit_as: Option<u64>,
    /// RLIMIT_NPROC.
    #[arg(long, value_name = "N")]
    pub rlimit_nproc: Option<u64>,
    /// RLIMIT_FSIZE, bytes.
    #[arg(long, value_name = "BYTES")]
    pub rlimit_fsize: Option<u64>,
    /// The command.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// Restrict this process (Landlock, then seccomp), then exec the command.
/// Returns only on failure, with the reason: the command never runs unrestricted.
pub(crate) fn exec(args: &ExecArgs) -> String {
    if let Err(e) = set_limits(args) {
        return format!("sandbox: {e}; the command was not run");
    }
    if !args.limits_only
        && let Err(e) = restrict(args)
    {
        return format!("sandbox: {e}; the command was not run");
    }
    let Some((program, rest)) = args.command.split_first() else {
        return "sandbox: no command given".into();
    };
    let err = std::os::unix::process::CommandExt::exec(Command::new(program).args(rest));
    format!("sandbox: cannot run `{}`: {err}", program.to_string_lossy())
}

/// Apply the resource limits (soft and hard), which the command inherits.
fn set_limits(args: &ExecArgs) -> Result<(), SandboxError> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    for (what, resource, value) in [
        ("memory", Resource::As, args.rlimit_as),
        ("processes", Resource::Nproc, args.rlimit_nproc),
        ("file size", Resource::Fsize, args.rlimit_fsize),
    ] {
        if let Some(v) = value {
            setrlimit(
                resource,
                Rlimit {
                    current: Some(v),
                    maximum: Some(v),
                },
            )
            .map_err(|source| SandboxError::Limit { what, source })?;
        }
    }
    Ok(())
}

/// Wrap `program args` so that it runs under `limits` (through the helper,
/// which sets them and then execs it).
pub(crate) fn with_limits(
    limits: &crate::model::Limits,
    program: String,
    args: Vec<String>,
) -> (String, Vec<String>) {
    const MIB: u64 = 1024 * 1024;
    let exe =
        std::env::current_exe().map_or_else(|_| "plangate".to_owned(), |p| p.display().to_string());
    let mut a = vec![HELPER.to_owned(), "--limits-only".to_owned()];
    for (flag, v) in [
        (
            "--rlimit-as",
            limits.memory_mb.map(|m| m.saturating_mul(MIB)),
        ),
        ("--rlimit-nproc", limits.processes),
        (
            "--rlimit-fsize",
            limits.file_size_mb.map(|m| m.saturating_mul(MIB)),
        ),
    ] {
        if let Some(v) = v {
            a.push(flag.to_owned());
            a.push(v.to_string());
        }
    }
    a.push("--".to_owned());
    a.push(program);
    a.extend(args);
    (exe, a)
}

fn restrict(args: &ExecArgs) -> Result<(), SandboxError> {
    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, path_beneath_rules,
    };
    // v3 (Linux 6.2) is the first ABI that also controls truncation: below it a
    // write outside the allowed paths would remain possible, so it is required.
    let abi = ABI::V3;
    let devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules(&args.rw, AccessFs::from_all(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules(devices, AccessFs::from_all(abi))))
        .and_then(|r| r.restrict_self())?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(SandboxError::NotEnforced(status.ruleset));
    }
    if !args.net {
        deny_network()?;
    }
    Ok(())
}

/// A seccomp filter: `socket` for any family but AF_UNIX, and `io_uring_setup`
/// (whose socket operations bypass seccomp), fail with EACCES.
fn deny_network() -> Result<(), SandboxError> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(SandboxError::Arch)?;
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        u64::try_from(libc::AF_UNIX).unwrap_or(1),
    )
    .and_then(|c| SeccompRule::new(vec![c]))?;
    let rules = [
        (libc::SYS_socket, vec![not_unix]),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]
    .into_iter()
    .collect();
    let errno = u32::try_from(libc::EACCES).unwrap_or(13);
    let program: BpfProgram = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno),
        arch,
    )
    .and_then(TryInto::try_into)?;
    seccompiler::apply_filter(&program)?;
    Ok(())
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
    fn writable_beneath_spares_read_only_paths_and_symlinks() {
        let d = tempfile::tempdir().expect("tempdir");
        let ws = d.path();
        for dir in [".git/hooks", "src", ".plangate/runs/r1", ".plangate/cache"] {
            std::fs::create_dir_all(ws.join(dir)).expect("mkdir");
        }
        std::fs::write(ws.join("a.txt"), "").expect("write");
        std::os::unix::fs::symlink("/etc", ws.join("link")).expect("symlink");
        let got = writable_beneath(ws, &[ws.join(".git"), ws.join(".plangate/runs/r1")]);
        let rel: Vec<String> = got
            .iter()
            .map(|p| p.strip_prefix(ws).expect("inside").display().to_string())
            .collect();
        assert_eq!(rel, [".plangate/cache", "a.txt", "src"]);
        assert_eq!(
            writable_beneath(ws, &[ws.join("nope")]),
            vec![ws.to_path_buf()]
        );
    }

    #[test]
    fn none_is_refused_without_probing() {
        let a = preflight(Choice::None);
        assert_eq!(a.available, "none");
        assert!(a.backend().is_none());
    }
}
