//! What the `__sandbox-exec` helper does besides Landlock's filesystem rules
//! (issue 23, "seal the boundary"): drop every capability, refuse metadata
//! changes and sockets with seccomp, scope signals (Landlock ABI 6), and
//! supervise the command so that nothing it starts outlives it.
//!
//! Metadata: seccomp cannot tell one path from another, so
//! - the owner and extended attributes of a file cannot be changed at all
//!   (`chown` family: EPERM; `setxattr`/`removexattr` family: EOPNOTSUPP, which
//!   `cp -a` and `tar` take as "no xattr support here");
//! - mode and times (`chmod`, `utimensat`, …) cannot be changed by a
//!   `read-only` step (EPERM), even in its own TMPDIR; a `workspace-write` or
//!   `declared` step may change them, anywhere its user owns a file: under
//!   this backend the `metadata` property is *not* enforced for those
//!   profiles (see [`super::properties`]).
//!
//! - a file's flags and `fsxattr` (`chattr`: immutable, append-only,
//!   no-dump, project id) cannot be changed by any step, in its writable
//!   set either (the flag `ioctl`s and `file_setattr`: EPERM; see
//!   [`file_flag_programs`]), under bwrap too.
//!
//! `io_uring_setup` fails (EPERM) whatever the profile: its operations
//! (sockets, `setxattr`) would bypass seccomp.
//!
//! Sockets: without network, `socket()` fails (EACCES) for every family,
//! unix included (a path socket such as `/var/run/docker.sock` cannot be told
//! from one in the step's TMPDIR); `socketpair()` still works.

use super::SandboxError;

/// Whether this kernel's Landlock can scope signals (ABI 6, Linux 6.12).
/// Asked once per process (a resident supervisor confines many steps): the
/// running kernel's ABI does not change.
pub(crate) fn signal_scope_supported() -> bool {
    use landlock::{CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .scope(Scope::Signal)
            .is_ok()
    })
}

/// Drop every capability for good: bounding and ambient sets emptied,
/// securebits locked so that root regains none at exec, then the effective,
/// permitted and inheritable sets cleared. Without capabilities there is
/// nothing to drop (a non-root user): that is not an error.
pub(crate) fn drop_capabilities() -> Result<(), SandboxError> {
    use rustix::thread::{
        CapabilitiesSecureBits as B, CapabilitySet, capabilities, set_capabilities,
        set_capabilities_secure_bits,
    };
    let err = |what: &'static str| move |source| SandboxError::Capabilities { what, source };
    let now = capabilities(None).map_err(err("read"))?;
    if now.permitted.is_empty() && now.effective.is_empty() && now.inheritable.is_empty() {
        return Ok(());
    }
    if now.effective.contains(CapabilitySet::SETPCAP) {
        set_capabilities_secure_bits(
            B::NO_ROOT
                | B::NO_ROOT_LOCKED
                | B::NO_SETUID_FIXUP
                | B::NO_SETUID_FIXUP_LOCKED
                | B::NO_CAP_AMBIENT_RAISE
                | B::NO_CAP_AMBIENT_RAISE_LOCKED,
        )
        .map_err(err("lock the securebits"))?;
        for cap in CapabilitySet::all().iter() {
            // A capability this kernel does not know gives EINVAL: nothing to drop.
            match rustix::thread::remove_capability_from_bounding_set(cap) {
                Ok(()) | Err(rustix::io::Errno::INVAL) => {}
                Err(e) => return Err(err("empty the bounding set")(e)),
            }
        }
    }
    set_capabilities(
        None,
        rustix::thread::CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(err("clear"))?;
    Ok(())
}

/// The seccomp filter of a confined step (see the module comment).
pub(crate) fn apply_seccomp(net: bool, frozen_metadata: bool) -> Result<(), SandboxError> {
    for program in seccomp_programs(net, frozen_metadata)?.iter() {
        seccompiler::apply_filter(program)?;
    }
    Ok(())
}

/// The compiled filters of [`apply_seccomp`], compiled once per process for
/// each of the four variants (a resident supervisor confines many steps;
/// the programs depend on nothing but the two flags and the architecture).
fn seccomp_programs(
    net: bool,
    frozen_metadata: bool,
) -> Result<std::sync::Arc<Vec<seccompiler::BpfProgram>>, SandboxError> {
    use std::sync::{Arc, Mutex, PoisonError};
    type Cache = Mutex<[Option<Arc<Vec<seccompiler::BpfProgram>>>; 4]>;
    static CACHE: Cache = Mutex::new([None, None, None, None]);
    let key = usize::from(net) * 2 + usize::from(frozen_metadata);
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(p) = &cache[key] {
        return Ok(Arc::clone(p));
    }
    let programs = Arc::new(compile_seccomp(net, frozen_metadata)?);
    cache[key] = Some(Arc::clone(&programs));
    Ok(programs)
}

/// The filter of a step for what outlives it or reaches past it.
/// Always: `add_key`, `request_key` and `keyctl` fail (EPERM, as under
/// Docker's default profile), since keyrings outlive the step; and a step
/// may change the scheduling, I/O priority and resource limits of itself
/// only (pid 0), never of another process such as its supervisor (the
/// kernel asks only for the same user, not for a tracing right). CPU
/// affinity is left to the lane's check (`pthread_setaffinity_np` names a
/// thread by its id). With `host_ipc` (a step without an IPC namespace of
/// its own: Landlock), System V IPC and POSIX message queues fail too: the
/// step could read or take another process's objects, or leave its own.
/// One filter either way, compiled once per kind.
pub(crate) fn deny_keyrings(host_ipc: bool) -> Result<(), SandboxError> {
    use seccompiler::BpfProgram;
    static PROGRAMS: [std::sync::OnceLock<BpfProgram>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    let cell = &PROGRAMS[usize::from(host_ipc)];
    let program = match cell.get() {
        Some(p) => p,
        None => {
            let p = compile_keyrings(host_ipc)?;
            cell.get_or_init(|| p)
        }
    };
    seccompiler::apply_filter(program)?;
    Ok(())
}

/// Compile the filter of [`deny_keyrings`].
fn compile_keyrings(host_ipc: bool) -> Result<seccompiler::BpfProgram, SandboxError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(SandboxError::Arch)?;
    // Refused when argument `arg` is not `value`.
    let unless = |arg: u8, value: u64| -> Result<SeccompRule, SandboxError> {
        Ok(SeccompRule::new(vec![Cond::new(
            arg,
            Len::Dword,
            Op::Ne,
            value,
        )?])?)
    };
    let always: &[i64] = &[libc::SYS_add_key, libc::SYS_request_key, libc::SYS_keyctl];
    let ipc: &[i64] = &[
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semtimedop,
        libc::SYS_semctl,
        libc::SYS_mq_open,
        libc::SYS_mq_unlink,
        libc::SYS_mq_timedsend,
        libc::SYS_mq_timedreceive,
        libc::SYS_mq_notify,
        libc::SYS_mq_getsetattr,
    ];
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = always
        .iter()
        .chain(if host_ipc { ipc } else { &[] })
        .map(|&n| (n, Vec::new()))
        .collect();
    for n in [
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
        libc::SYS_prlimit64,
    ] {
        rules.insert(n, vec![unless(0, 0)?]);
    }
    // `which` must be the process itself (PRIO_PROCESS 0 / IOPRIO_WHO_PROCESS 1,
    // `who` 0): a user's or group's processes include the lane.
    rules.insert(libc::SYS_setpriority, vec![unless(0, 0)?, unless(1, 0)?]);
    rules.insert(libc::SYS_ioprio_set, vec![unless(0, 1)?, unless(1, 0)?]);
    Ok(SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1)),
        arch,
    )
    .and_then(TryInto::try_into)?)
}

/// Compile the filters of [`apply_seccomp`].
fn compile_seccomp(
    net: bool,
    frozen_metadata: bool,
) -> Result<Vec<seccompiler::BpfProgram>, SandboxError> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule, TargetArch};
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(SandboxError::Arch)?;
    let errno = |e: i32| SeccompAction::Errno(u32::try_from(e).unwrap_or(1));
    let always = |nrs: &[i64]| -> Vec<(i64, Vec<SeccompRule>)> {
        nrs.iter().map(|n| (*n, Vec::new())).collect()
    };
    // One filter per errno (seccomp runs every filter; the strictest answer wins).
    let mut groups: Vec<(Vec<i64>, i32)> = vec![
        (
            // io_uring too: its operations (socket, setxattr) bypass seccomp.
            [
                libc::SYS_fchown,
                libc::SYS_fchownat,
                libc::SYS_io_uring_setup,
            ]
            .into_iter()
            .chain(LEGACY_CHOWN)
            .collect(),
            libc::EPERM,
        ),
        (
            vec![
                libc::SYS_setxattr,
                libc::SYS_lsetxattr,
                libc::SYS_fsetxattr,
                libc::SYS_removexattr,
                libc::SYS_lremovexattr,
                libc::SYS_fremovexattr,
                SYS_SETXATTRAT,
                SYS_REMOVEXATTRAT,
            ],
            libc::EOPNOTSUPP,
        ),
    ];
    if frozen_metadata {
        groups.push((
            [
                libc::SYS_fchmod,
                libc::SYS_fchmodat,
                SYS_FCHMODAT2,
                libc::SYS_utimensat,
            ]
            .into_iter()
            .chain(LEGACY_CHMOD)
            .collect(),
            libc::EPERM,
        ));
    }
    if !net {
        // Every socket family (unix too).
        groups.push((vec![libc::SYS_socket], libc::EACCES));
    }
    let mut programs = file_flag_programs()?;
    for (nrs, e) in groups {
        let program: BpfProgram = SeccompFilter::new(
            always(&nrs).into_iter().collect(),
            SeccompAction::Allow,
            errno(e),
            arch,
        )
        .and_then(TryInto::try_into)?;
        programs.push(program);
    }
    Ok(programs)
}

/// The filters that keep a file's flags and `fsxattr` (immutable,
/// append-only, no-dump, project id, …: what `chattr` sets) as they are,
/// whatever the profile: a step may write a file's contents, never make it
/// immutable or append-only for the steps, the git guard and the sweep
/// after it. The flag `ioctl`s on any file the step can open (Landlock does
/// not mediate them; a writable bind does not stop them), and
/// `file_setattr` (Linux 6.17), which goes by path and needs no descriptor
/// at all: EPERM.
fn file_flag_programs() -> Result<Vec<seccompiler::BpfProgram>, SandboxError> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(SandboxError::Arch)?;
    let eperm = SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1));
    // The kernel takes the command as an `unsigned int`: the low 32 bits.
    let cmd = |c: u64| -> Result<SeccompRule, SandboxError> {
        Ok(SeccompRule::new(vec![SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            c,
        )?])?)
    };
    let ioctls: Vec<SeccompRule> = FILE_FLAG_IOCTLS
        .into_iter()
        .map(cmd)
        .collect::<Result<_, _>>()?;
    let mut programs = Vec::new();
    for rules in [
        vec![(libc::SYS_ioctl, ioctls)],
        vec![(SYS_FILE_SETATTR, Vec::new())],
    ] {
        let program: BpfProgram = SeccompFilter::new(
            rules.into_iter().collect(),
            SeccompAction::Allow,
            eperm.clone(),
            arch,
        )
        .and_then(TryInto::try_into)?;
        programs.push(program);
    }
    Ok(programs)
}

/// Only the filters of [`file_flag_programs`]: a bwrap step with network,
/// which gets no other filter (`super::exec`).
pub(crate) fn apply_file_flag_filter() -> Result<(), SandboxError> {
    static PROGRAMS: std::sync::OnceLock<Vec<seccompiler::BpfProgram>> = std::sync::OnceLock::new();
    let programs = if let Some(p) = PROGRAMS.get() {
        p
    } else {
        let p = file_flag_programs()?;
        PROGRAMS.get_or_init(|| p)
    };
    for program in programs {
        seccompiler::apply_filter(program)?;
    }
    Ok(())
}

// The path-based forms only x86_64 still has (aarch64 has the `*at` ones alone).
#[cfg(target_arch = "x86_64")]
const LEGACY_CHOWN: [i64; 2] = [libc::SYS_chown, libc::SYS_lchown];
#[cfg(not(target_arch = "x86_64"))]
const LEGACY_CHOWN: [i64; 0] = [];
#[cfg(target_arch = "x86_64")]
const LEGACY_CHMOD: [i64; 4] = [
    libc::SYS_chmod,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
];
#[cfg(not(target_arch = "x86_64"))]
const LEGACY_CHMOD: [i64; 0] = [];

/// The `ioctl`s that change a file's attributes rather than its contents:
/// `FS_IOC_SETFLAGS` (`_IOW('f', 2, long)`, and its 32-bit form),
/// `FS_IOC_FSSETXATTR` (`_IOW('X', 32, struct fsxattr)`: flags, project
/// id), `FS_IOC_SETVERSION` (`_IOW('v', 2, long)`, 32-bit form) and ext4's
/// `EXT4_IOC_SETVERSION` (`_IOW('f', 4, long)`, 32-bit form): the inode
/// generation, `FS_IOC_ENABLE_VERITY` (`_IOW('f', 133, struct
/// fsverity_enable_arg)`: a file read-only for good, asked on a read-only
/// descriptor), `FS_IOC_SET_ENCRYPTION_POLICY` (`_IOR('f', 19, struct
/// fscrypt_policy_v1)`: an empty folder whose files later steps could not
/// read), and btrfs' `BTRFS_IOC_SUBVOL_SETFLAGS` (`_IOW(0x94, 26, u64)`: a
/// subvolume read-only). The kernel matches each number exactly.
const FILE_FLAG_IOCTLS: [u64; 10] = [
    0x4008_6602,
    0x4004_6602,
    0x401c_5820,
    0x4008_7602,
    0x4004_7602,
    0x4008_6604,
    0x4004_6604,
    0x4080_6685,
    0x800c_6613,
    0x4008_941a,
];
/// `file_setattr(2)` (Linux 6.17; the generic table: x86_64 and aarch64 alike).
const SYS_FILE_SETATTR: i64 = 469;

// Newer than the libc crate's tables (x86_64 and aarch64 share these numbers).
const SYS_FCHMODAT2: i64 = 452;
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

/// Run `command` as a child and wait for it; then kill (SIGKILL) and reap
/// every process it left behind (this process is a child subreaper, so
/// daemons and `setsid` children come back to it), write their number to
/// `report`, and end as the command ended. Returns only on failure.
///
/// SIGTERM, SIGINT and SIGHUP (plangate stopping the step's process group)
/// do not end the supervisor: the command got them too; if it has not ended
/// `grace` × 3/4 later, every child is killed, so that the supervisor is done
/// before plangate's own SIGKILL.
///
/// Single-threaded on purpose: the signals arrive through a socket and the
/// command's end through a pidfd, both polled here. A second thread that is
/// still exiting when plangate reaps the supervisor makes the kernel spin in
/// `/proc`'s dentry flush (milliseconds of CPU per step).
pub(crate) fn supervise(
    command: &[std::ffi::OsString],
    report: &std::path::Path,
    grace: std::time::Duration,
) -> String {
    use std::os::unix::process::ExitStatusExt;
    let Some((program, rest)) = command.split_first() else {
        return "sandbox: no command given".into();
    };
    if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        return format!("sandbox: cannot become a child subreaper: {e}; the command was not run");
    }
    let signals = match signal_socket() {
        Ok(s) => s,
        Err(e) => return format!("sandbox: cannot handle signals: {e}; the command was not run"),
    };
    let mut child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => return format!("sandbox: cannot run `{}`: {e}", program.to_string_lossy()),
    };
    if let Err(e) = wait_or_stop(&child, &signals, grace * 3 / 4) {
        // Cannot watch it: kill what it started rather than leave it unsupervised.
        let _ = child.kill();
        let _ = child.wait();
        let _ = kill_descendants();
        return format!("sandbox: cannot wait for the command: {e}");
    }
    let status = child.wait();
    let lingering = kill_descendants();
    // The step's processes are all gone: nothing can race this write.
    let _ = std::fs::remove_file(report);
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(report)
        .and_then(|mut f| std::io::Write::write_all(&mut f, lingering.to_string().as_bytes()));
    let status = match status {
        Ok(s) => s,
        Err(e) => return format!("sandbox: cannot wait for the command: {e}"),
    };
    if let Some(sig) = status.signal() {
        // End the way the command ended (default action, whatever was handled here).
        let _ = signal_hook::low_level::emulate_default_handler(sig);
    }
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    std::process::exit(code)
}

/// A socket that receives a byte for each SIGTERM, SIGINT and SIGHUP (which
/// then no longer end this process).
fn signal_socket() -> std::io::Result<std::os::unix::net::UnixStream> {
    let (read, write) = std::os::unix::net::UnixStream::pair()?;
    read.set_nonblocking(true)?;
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::low_level::pipe::register(sig, write.try_clone()?)?;
    }
    Ok(read)
}

/// Return when `child` has ended (not reaped yet). After the first signal
/// on `signals`, wait at most `grace` more, then SIGKILL every child of this
/// process (the command among them) and wait for the command to end.
fn wait_or_stop(
    child: &std::process::Child,
    signals: &std::os::unix::net::UnixStream,
    grace: std::time::Duration,
) -> std::io::Result<()> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::other("the command has no pid"))?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
    let mut deadline: Option<std::time::Instant> = None;
    loop {
        let timeout = deadline.map(|d| {
            let left = d.saturating_duration_since(std::time::Instant::now());
            Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            }
        });
        let mut fds = [
            PollFd::new(&pidfd, PollFlags::IN),
            PollFd::new(signals, PollFlags::IN),
        ];
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        if !fds[0].revents().is_empty() {
            return Ok(());
        }
        if !fds[1].revents().is_empty() {
            let mut buf = [0_u8; 64];
            while std::io::Read::read(&mut &*signals, &mut buf).is_ok_and(|n| n > 0) {}
            deadline.get_or_insert_with(|| std::time::Instant::now() + grace);
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            kill_children();
            // The command is killed too: its pidfd becomes readable.
            deadline = None;
        }
    }
}

/// Lead a session of its own: no controlling terminal, so a step cannot
/// open `/dev/tty` (write past plangate's redaction, push input with
/// TIOCSTI). Already leading one (bwrap's `--new-session`) is fine. The
/// session is read from `/proc/self/stat`, not `getsid`: in a container
/// whose session leader is outside its PID namespace `getsid` answers 0.
pub(crate) fn lead_own_session() -> Result<(), String> {
    let leads = || {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // After the command name: state is field 3, the session field 6.
        let session = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(3));
        session
            == Some(
                rustix::process::getpid()
                    .as_raw_nonzero()
                    .to_string()
                    .as_str(),
            )
    };
    match rustix::process::setsid() {
        Ok(_) => Ok(()),
        Err(rustix::io::Errno::PERM) if leads() => Ok(()),
        Err(e) => Err(format!("cannot leave plangate's terminal session: {e}")),
    }
}

/// SIGKILL every child of this process (not reaped).
pub(crate) fn kill_children() {
    for k in children() {
        if let Some(p) = rustix::process::Pid::from_raw(k) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
    }
}

/// SIGKILL and reap every child of this process, again until none is left
/// (a killed process's children are reparented here). Returns how many were
/// alive (zombies, which had ended on their own, are reaped, not counted).
pub(crate) fn kill_descendants() -> usize {
    kill_descendants_named().len()
}

/// [`kill_descendants`], with the name (`/proc/PID/comm`) of each process
/// that was alive, by pid.
pub(crate) fn kill_descendants_named() -> std::collections::BTreeMap<i32, String> {
    use rustix::process::{Pid, Signal, WaitOptions, kill_process, waitpid};
    let mut killed = std::collections::BTreeMap::new();
    for _ in 0..10_000 {
        let kids = children();
        if kids.is_empty() {
            break;
        }
        for &k in &kids {
            if !ended(k)
                && let Some(p) = Pid::from_raw(k)
            {
                let name = std::fs::read_to_string(format!("/proc/{k}/comm")).unwrap_or_default();
                if kill_process(p, Signal::KILL).is_ok() {
                    killed.insert(k, name.trim_end().to_owned());
                }
            }
        }
        for &k in &kids {
            if let Some(p) = Pid::from_raw(k) {
                let _ = waitpid(Some(p), WaitOptions::empty());
            }
        }
    }
    killed
}

/// The children of every thread of this process.
fn children() -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `pid` has ended on its own: a zombie with no thread left (a
/// process whose first thread exited while others run shows `Z` too).
fn ended(pid: i32) -> bool {
    is_zombie(pid)
        && std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| tasks.count() <= 1)
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next())
            .is_some_and(|state| state == "Z")
    })
}
