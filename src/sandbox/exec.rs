//! The hidden `__sandbox-exec` helper: set resource limits, restrict itself
//! with Landlock and seccomp (the `landlock+seccomp` backend), then `exec` the
//! step's command. It never runs the command unrestricted.

use std::path::PathBuf;
use std::process::Command;

use super::{HELPER, SandboxError, confine};

/// Arguments of the hidden `__sandbox-exec` helper.
#[derive(Debug, Clone, clap::Args)]
pub struct ExecArgs {
    /// Paths (and everything beneath) the command may read and write.
    #[arg(long = "rw", value_name = "PATH")]
    pub rw: Vec<PathBuf>,
    /// Paths (and everything beneath) the command may read and execute,
    /// besides the system trees the helper always grants.
    #[arg(long = "ro", value_name = "PATH")]
    pub ro: Vec<PathBuf>,
    /// Folders the command may list (not read the files of): the way to a
    /// hidden path.
    #[arg(long = "ls", value_name = "PATH")]
    pub ls: Vec<PathBuf>,
    /// Paths (and everything beneath) the command may change but not read
    /// (read rights come from `--ro`/`--ls`).
    #[arg(long = "wo", value_name = "PATH")]
    pub wo: Vec<PathBuf>,
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
    /// With --limits-only (inside bwrap): the seccomp filter that refuses
    /// every socket, owner and extended-attribute change.
    #[arg(long)]
    pub deny_sockets: bool,
    /// With --limits-only (inside bwrap): the seccomp filter that leaves TCP
    /// sockets only (an `egress` step, whose network namespace reaches the
    /// proxy's forwarder alone).
    #[arg(long)]
    pub egress_sockets: bool,
    /// Landlock: TCP connects to these ports only, TCP sockets only (an
    /// `egress` step; the proxy, and the model API endpoint, listen there).
    /// Needs Landlock ABI 4.
    #[arg(long, value_name = "PORT")]
    pub egress_port: Vec<u16>,
    /// Refuse mode and time changes (`chmod`, `utimensat`, …): the read-only profile.
    #[arg(long)]
    pub frozen_metadata: bool,
    /// With --limits-only (inside bwrap, a step with network, which gets no
    /// socket filter): the seccomp filter that refuses file flag changes
    /// (`chattr`; every other filter holds it too).
    #[arg(long)]
    pub frozen_file_flags: bool,
    /// Run the command as a child, then kill what it left and write their number here.
    #[arg(long, value_name = "FILE")]
    pub supervise: Option<PathBuf>,
    /// With --supervise: after a SIGTERM, kill what is left after this long.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub kill_grace_ms: u64,
    /// An agent's staged overlay: first enter a new user and mount
    /// namespace and mount there, at this folder, the overlay of
    /// `--overlay-lower` (read-only) with `--overlay-upper`/`--overlay-work`.
    #[arg(long, value_name = "DIR", requires_all = ["overlay_lower", "overlay_upper", "overlay_work"])]
    pub overlay_at: Option<PathBuf>,
    /// With --overlay-at: the overlay's read-only layer (the workspace).
    #[arg(long, value_name = "DIR", requires = "overlay_at")]
    pub overlay_lower: Option<PathBuf>,
    /// With --overlay-at: where the writes land.
    #[arg(long, value_name = "DIR", requires = "overlay_at")]
    pub overlay_upper: Option<PathBuf>,
    /// With --overlay-at: the overlay's work folder.
    #[arg(long, value_name = "DIR", requires = "overlay_at")]
    pub overlay_work: Option<PathBuf>,
    /// The command.
    #[arg(last = true, required = true)]
    pub command: Vec<std::ffi::OsString>,
}

/// Restrict this process (Landlock, then seccomp), then exec the command.
/// Returns only on failure, with the reason: the command never runs unrestricted.
pub(crate) fn exec(args: &ExecArgs) -> String {
    // A session of its own (plangate starts it outside its group).
    if let Err(e) = confine::lead_own_session() {
        return format!("sandbox: {e}; the command was not run");
    }
    if let (Some(at), Some(lower), Some(upper), Some(work)) = (
        &args.overlay_at,
        &args.overlay_lower,
        &args.overlay_upper,
        &args.overlay_work,
    ) && let Err(e) = super::overlay::enter(at, lower, upper, work)
    {
        return format!("sandbox: staged overlay: {e}; the command was not run");
    }
    if let Err(e) = set_limits(args) {
        return format!("sandbox: {e}; the command was not run");
    }
    // Only stdin, stdout and stderr reach the command.
    close_fds::set_fds_cloexec(3, &[]);
    if !args.limits_only
        && let Err(e) = restrict(args, false)
    {
        return format!("sandbox: {e}; the command was not run");
    }
    if args.limits_only
        && args.deny_sockets
        && let Err(e) = confine::apply_seccomp(false, args.frozen_metadata)
    {
        return format!("sandbox: {e}; the command was not run");
    }
    if args.limits_only
        && args.egress_sockets
        && let Err(e) = confine::apply_seccomp(true, args.frozen_metadata)
            .and_then(|()| super::netfilter::apply_tcp_only())
    {
        return format!("sandbox: {e}; the command was not run");
    }
    // Inside bwrap with network: no socket filter, the file flags' all the same.
    if args.limits_only
        && args.frozen_file_flags
        && !args.deny_sockets
        && !args.egress_sockets
        && let Err(e) = confine::apply_file_flag_filter()
    {
        return format!("sandbox: {e}; the command was not run");
    }
    if let Some(report) = &args.supervise {
        return confine::supervise(
            &args.command,
            report,
            std::time::Duration::from_millis(args.kill_grace_ms),
        );
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
/// `extra`: more helper arguments (an unsandboxed step's supervisor).
pub(crate) fn with_limits(
    limits: &crate::model::Limits,
    extra: Vec<String>,
    program: String,
    args: Vec<String>,
) -> (String, Vec<String>) {
    const MIB: u64 = 1024 * 1024;
    let exe =
        std::env::current_exe().map_or_else(|_| "plangate".to_owned(), |p| p.display().to_string());
    let mut a = vec![HELPER.to_owned(), "--limits-only".to_owned()];
    a.extend(extra);
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

/// Confine the calling thread as the helper confines itself (capabilities,
/// Landlock, seccomp: all per thread, none with TSYNC), for a resident
/// supervisor whose thread then spawns the step. Resource limits are per
/// process: a request that sets them is refused (such steps go through the
/// helper).
pub(super) fn restrict_thread(args: &ExecArgs) -> Result<(), SandboxError> {
    if args.overlay_at.is_some()
        || args.supervise.is_some()
        || args.rlimit_as.is_some()
        || args.rlimit_nproc.is_some()
        || args.rlimit_fsize.is_some()
    {
        return Err(SandboxError::Paths(
            "resource limits and nested supervisors are not applied in a thread".into(),
        ));
    }
    if args.limits_only {
        // Inside bwrap (a walled lane): the sandbox is bwrap's; what the
        // helper adds there is the seccomp filter (`exec`).
        if args.egress_sockets || !args.egress_port.is_empty() {
            return Err(SandboxError::Paths(
                "an egress step is not run by a resident supervisor".into(),
            ));
        }
        if args.deny_sockets {
            confine::apply_seccomp(false, args.frozen_metadata)?;
        } else if args.frozen_file_flags {
            confine::apply_file_flag_filter()?;
        }
        // The kernel's keyrings of the sandbox's user namespace outlive a
        // step: the next step of the lane would find what it stored there.
        confine::deny_keyrings(false)?;
        return Ok(());
    }
    restrict(args, true)
}

/// The system trees' grants (read beneath, listing only): see [`super::reads`].
fn system_paths() -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
    let mut system_ro: Vec<PathBuf> = Vec::new();
    let mut system_ls: Vec<PathBuf> = Vec::new();
    let hidden = super::reads::system_hidden();
    for root in super::reads::system_roots() {
        let carved = super::reads::carve(&root, &hidden)?;
        system_ro.extend(carved.full);
        system_ls.extend(carved.list_only);
    }
    system_ro.extend(super::reads::system_extra());
    system_ro.extend(super::reads::proc_grants());
    Ok((system_ro, system_ls))
}

/// `resident`: a resident supervisor's thread, which reuses the system
/// grants it opened for an earlier step while they hold ([`super::grants`]).
fn restrict(args: &ExecArgs, resident: bool) -> Result<(), SandboxError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    confine::drop_capabilities()?;
    // v3 (Linux 6.2) is the first ABI that also controls truncation: below it a
    // write outside the allowed paths would remain possible, so it is required.
    let abi = ABI::V3;
    let scoped = confine::signal_scope_supported();
    let read = AccessFs::from_read(abi);
    let write = AccessFs::from_write(abi);
    let all = AccessFs::from_all(abi);
    // The system trees, `/etc` without its password hashes and host keys.
    let (system_ro, system_ls, opened) = if resident {
        let g = super::grants::system(system_paths, read, AccessFs::ReadDir.into())
            .map_err(SandboxError::Paths)?;
        (Vec::new(), Vec::new(), Some(g))
    } else {
        let (ro, ls) = system_paths().map_err(SandboxError::Paths)?;
        (ro, ls, None)
    };
    let opened_rules = opened.iter().flat_map(|g| {
        g.rules
            .iter()
            .map(|(fd, access)| Ok::<_, landlock::RulesetError>(PathBeneath::new(fd, *access)))
    });
    // `path_beneath_rules` leaves out a path it cannot open (one that does
    // not exist): no `exists()` check first, one path lookup instead of two.
    let devices: Vec<PathBuf> = super::reads::DEVICES.iter().map(PathBuf::from).collect();
    let status =
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(all)
            .and_then(|r| {
                if args.egress_port.is_empty() {
                    Ok(r)
                } else {
                    // ABI 4 (Linux 6.7), required: TCP connects to the proxy's port only, no bind.
                    r.handle_access(AccessNet::from_all(ABI::V4))
                }
            })
            .and_then(|r| {
                // ABI 6 (Linux 6.12): no signal to a process outside the step. Below it
                // the `signals` property is reported unenforced (`super::properties`).
                if scoped {
                    r.scope(Scope::Signal)
                } else {
                    Ok(r)
                }
            })
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(opened_rules))
            .and_then(|r| r.add_rules(path_beneath_rules(&system_ro, read)))
            .and_then(|r| r.add_rules(path_beneath_rules(&system_ls, AccessFs::ReadDir)))
            .and_then(|r| r.add_rules(path_beneath_rules(&args.ls, AccessFs::ReadDir)))
            .and_then(|r| r.add_rules(path_beneath_rules(&args.ro, read)))
            .and_then(|r| r.add_rules(path_beneath_rules(&args.wo, write)))
            .and_then(|r| r.add_rules(path_beneath_rules(&args.rw, all)))
            .and_then(|r| r.add_rules(path_beneath_rules(&devices, all)))
            .and_then(|r| {
                r.add_rules(args.egress_port.iter().map(|p| {
                    Ok::<_, landlock::RulesetError>(NetPort::new(*p, AccessNet::ConnectTcp))
                }))
            })
            .and_then(|r| r.restrict_self())?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(SandboxError::NotEnforced(status.ruleset));
    }
    let egress = !args.egress_port.is_empty();
    confine::apply_seccomp(args.net || egress, args.frozen_metadata)?;
    // No namespace of its own: the host's keyrings and IPC objects.
    confine::deny_keyrings(true)?;
    if egress {
        super::netfilter::apply_tcp_only()?;
    }
    Ok(())
}
