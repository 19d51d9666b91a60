//! The resident supervisor's side (`plangate __sandbox-lane`, see
//! [`crate::process::lane`]): a child subreaper that runs plangate's steps
//! one at a time, unconfined, under Landlock and seccomp, or inside bwrap
//! (a walled lane, the pid namespace's first process: bwrap's sandbox plus
//! the seccomp filters of `--deny-sockets` and of the keyrings), and kills
//! what each one leaves before it answers. It is not dumpable: a step of
//! the same user can neither trace it nor read its `/proc` entries.
//!
//! Confinement without a second exec: Landlock domains, `no_new_privs`,
//! seccomp filters (installed without TSYNC) and capabilities belong to the
//! calling *thread*, and a process forked from it inherits them. A
//! short-lived thread restricts itself ([`super::exec::restrict`], the very
//! rules the `__sandbox-exec` helper applies) and spawns the step; the lane's
//! main thread stays outside the domain, so that the step can neither signal
//! (Landlock ABI 6) nor ptrace it. Every descriptor the lane holds is
//! close-on-exec: the step gets its stdin, stdout and stderr only.

use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};

use clap::Parser;

use super::{ExecArgs, confine, exec};
use crate::process::lane::{KILL, MAX_MESSAGE, Reply, Request, TERM, recv_message, send_reply};

/// The confinement flags, parsed as the helper parses them.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct Confine {
    #[command(flatten)]
    exec: ExecArgs,
}

/// Serve steps until plangate closes the socket (stdin). Returns only on
/// failure, with the reason; every step process is gone by then.
pub(crate) fn serve() -> String {
    // Nothing plangate inherited reaches a step.
    close_fds::set_fds_cloexec(3, &[]);
    if let Err(e) = confine::lead_own_session() {
        return format!("sandbox: {e}");
    }
    if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        return format!("sandbox: cannot become a child subreaper: {e}");
    }
    // A step runs as the lane's user: not dumpable, the lane can be neither
    // traced by it nor read through its `/proc` entries (without
    // CAP_SYS_PTRACE, which no step has), whatever Yama allows. A step's
    // own exec makes it dumpable again.
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        return format!("sandbox: cannot make the step supervisor undumpable: {e}");
    }
    if rustix::process::getpid().as_raw_nonzero().get() == 1 {
        let _ = BASELINE.set(attributes());
    }
    let stdin = std::io::stdin();
    let sock = stdin.as_fd();
    let mut buf = vec![0u8; MAX_MESSAGE + 1];
    loop {
        let (n, fds) = match recv_message(sock, &mut buf) {
            Ok(Some(m)) => m,
            Ok(None) => std::process::exit(0),
            Err(e) => return format!("sandbox: cannot read a request: {e}"),
        };
        // A control message that came after its step ended: nothing to do.
        if fds.is_empty() && n == 1 && matches!(buf[0], KILL | TERM) {
            continue;
        }
        let fds: [OwnedFd; 3] = match fds.try_into() {
            Ok(f) => f,
            Err(_) => {
                return "sandbox: a request came without the step's stdin, stdout and stderr"
                    .into();
            }
        };
        let request: Request = match serde_json::from_slice(&buf[..n]) {
            Ok(r) => r,
            Err(e) => return format!("sandbox: a malformed request: {e}"),
        };
        if let Err(e) = step(sock, request, fds) {
            confine::kill_descendants();
            return format!("sandbox: {e}");
        }
    }
}

/// Run one step to its end, kill what it left, answer.
fn step(sock: BorrowedFd<'_>, request: Request, fds: [OwnedFd; 3]) -> std::io::Result<()> {
    let [stdin, stdout, stderr] = fds;
    let report = stderr.try_clone()?;
    let mut child = match spawn(request, stdin, stdout, stderr) {
        Ok(c) => c,
        Err(why) => {
            // As the helper does: the reason on the step's stderr, exit 126.
            let mut f = std::fs::File::from(report);
            let _ = writeln!(f, "plangate: {why}");
            return send_reply(
                sock,
                &Reply::Ended {
                    code: Some(126),
                    signal: None,
                    lingering: 0,
                    clean: left_clean(),
                },
            );
        }
    };
    drop(report);
    let pid = i32::try_from(child.id()).unwrap_or(0);
    send_reply(sock, &Reply::Started { pid })?;
    if let Err(e) = wait(sock, &child) {
        let _ = child.kill();
        let _ = child.wait();
        confine::kill_descendants();
        return Err(e);
    }
    let status = child.wait()?;
    let lingering = confine::kill_descendants();
    use std::os::unix::process::ExitStatusExt;
    send_reply(
        sock,
        &Reply::Ended {
            code: status.code(),
            signal: status.signal(),
            lingering,
            clean: left_clean(),
        },
    )
}

/// Once every process of the step is gone: whether it left nothing for the
/// next step in the lane's sandbox besides the folders plangate empties.
/// A lane outside bwrap (not its namespace's first process) has no such
/// place. Inside: the shared-memory folder is emptied; it and the message
/// queues' folder must be empty with their first mode, and no System V
/// object may be left (the IPC namespace is the lane's).
fn left_clean() -> bool {
    if rustix::process::getpid().as_raw_nonzero().get() != 1 {
        return true;
    }
    use std::os::unix::fs::PermissionsExt as _;
    const SHM: &str = "/dev/shm";
    const MQUEUE: &str = "/dev/mqueue";
    if let Ok(entries) = std::fs::read_dir(SHM) {
        for e in entries.flatten() {
            let p = e.path();
            let _ = if e.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
    let as_made = |d: &str| {
        std::fs::symlink_metadata(d)
            .is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o7777 == 0o1777)
            && std::fs::read_dir(d).is_ok_and(|mut it| it.next().is_none())
    };
    let no_objects = |f: &str| {
        // A header line, then one line per object.
        std::fs::read_to_string(format!("/proc/sysvipc/{f}"))
            .is_ok_and(|t| t.lines().filter(|l| !l.trim().is_empty()).count() <= 1)
    };
    as_made(SHM)
        && as_made(MQUEUE)
        && ["shm", "msg", "sem"].into_iter().all(no_objects)
        && BASELINE.get().is_some_and(|b| *b == attributes())
}

/// A walled lane's [`attributes`] when it started.
static BASELINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// What a process of the lane's user may change in the lane without
/// tracing it, and every later step would inherit: its resource limits
/// (`prlimit`), priority (`setpriority`) and CPU affinity (a step's filter
/// refuses those calls on another process: see `confine::deny_keyrings`),
/// and what `/proc` lets it write: the nice value of the session's
/// autogroup (the lane's, shared by its steps), and, as root, the lane's
/// out-of-memory score and core-dump filter; the scheduling policy and
/// real-time priority too (`/proc/self/stat`).
fn attributes() -> String {
    use rustix::process::{Resource as R, getpriority_process, getrlimit};
    let mut s = String::new();
    for r in [
        R::Cpu,
        R::Fsize,
        R::Data,
        R::Stack,
        R::Core,
        R::Rss,
        R::Nproc,
        R::Nofile,
        R::Memlock,
        R::As,
        R::Locks,
        R::Sigpending,
        R::Msgqueue,
        R::Nice,
        R::Rtprio,
        R::Rttime,
    ] {
        s.push_str(&format!("{:?};", getrlimit(r)));
    }
    s.push_str(&format!("{:?};", getpriority_process(None)));
    s.push_str(&format!("{:?};", rustix::thread::sched_getaffinity(None)));
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name: state is field 3; nice 19, rt_priority 40, policy 41.
    let fields: Vec<&str> = stat
        .rfind(')')
        .map(|i| stat[i + 1..].split_whitespace().collect())
        .unwrap_or_default();
    for n in [19, 40, 41] {
        s.push_str(fields.get(n - 3).copied().unwrap_or("?"));
        s.push(';');
    }
    for f in ["oom_score_adj", "coredump_filter", "autogroup"] {
        s.push_str(&std::fs::read_to_string(format!("/proc/self/{f}")).unwrap_or_default());
        s.push(';');
    }
    s
}

/// Start the step: from a thread that confines itself first when asked.
fn spawn(
    request: Request,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
) -> Result<Child, String> {
    let mut cmd = Command::new(&request.program);
    cmd.args(&request.args)
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(&request.cwd)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    let program = request.program.clone();
    let spawn = move |mut cmd: Command| {
        cmd.spawn()
            .map_err(|e| format!("sandbox: cannot run `{program}`: {e}"))
    };
    let Some(flags) = request.confine else {
        return spawn(cmd);
    };
    let mut argv = flags;
    argv.push("--".into());
    argv.push(request.program.clone());
    let args = Confine::try_parse_from(argv)
        .map_err(|e| format!("sandbox: bad confinement flags: {e}; the command was not run"))?
        .exec;
    // The thread dies with its restrictions; the child it spawned keeps them.
    std::thread::spawn(move || {
        exec::restrict_thread(&args)
            .map_err(|e| format!("sandbox: {e}; the command was not run"))?;
        spawn(cmd)
    })
    .join()
    .unwrap_or_else(|_| Err("sandbox: the confining thread failed; the command was not run".into()))
}

/// Return when the step's main process has ended (not reaped yet); a
/// [`KILL`] message SIGKILLs every child of the lane; plangate gone: an error.
fn wait(sock: BorrowedFd<'_>, child: &Child) -> std::io::Result<()> {
    use rustix::event::{PollFd, PollFlags, poll};
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::other("the command has no pid"))?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
    loop {
        let mut fds = [
            PollFd::new(&pidfd, PollFlags::IN),
            PollFd::new(&sock, PollFlags::IN),
        ];
        match poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        if !fds[0].revents().is_empty() {
            return Ok(());
        }
        if !fds[1].revents().is_empty() {
            let mut buf = [0u8; 16];
            let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
            let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
            let got = rustix::net::recvmsg(
                sock,
                &mut [std::io::IoSliceMut::new(&mut buf)],
                &mut control,
                rustix::net::RecvFlags::CMSG_CLOEXEC,
            )?;
            drop(control);
            if got.bytes == 0 {
                return Err(std::io::Error::other("plangate went away"));
            }
            let got = &buf[..got.bytes.min(buf.len())];
            if got.contains(&KILL) {
                confine::kill_children();
            } else if got.contains(&TERM) {
                // The step's group (its pid: `process_group(0)`).
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
            }
        }
    }
}
