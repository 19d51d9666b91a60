//! Resident step supervisors ("lanes"): one `plangate __sandbox-lane`
//! process serves steps one at a time, so that a step costs no exec of
//! plangate's own binary. A lane serves unsandboxed and Landlock steps
//! alike; a *walled* lane runs inside a bubblewrap sandbox of its own
//! ([`Walled`]: as the pid namespace's first process, with its own artifact
//! folder and TMPDIR, [`Staging`]) and serves only steps of that sandbox.
//!
//! A lane is a child subreaper: every process a step starts (daemons and
//! `setsid` children included) is its descendant or comes back to it, and
//! since it serves a single step at a time, everything it holds when the
//! step's main process has ended belongs to that step. It kills and reaps
//! them, then answers with their number, before plangate looks at the
//! workspace (the same guarantee as the per-step supervisor it replaces).
//! Idle lanes wait in a pool; a parallel step takes a lane of its own (a new
//! one when none is idle). A lane whose answer is missing or malformed is
//! never reused.
//!
//! The protocol runs over a `SOCK_SEQPACKET` socket pair (the lane's stdin):
//! plangate sends a [`Request`] (JSON) with the step's stdin, stdout and
//! stderr attached (`SCM_RIGHTS`); the lane answers [`Reply::Started`] then
//! [`Reply::Ended`]. A one-byte [`KILL`] message makes it SIGKILL the step
//! at once. When plangate goes away (its end closes), the lane kills the
//! step it serves and exits.

use std::io::IoSlice;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// Largest request sent to a lane (a unix datagram must fit the socket's
/// send buffer, about 200 KiB by default): a step whose command line and
/// environment are larger runs through the per-step supervisor instead.
pub(crate) const MAX_MESSAGE: usize = 128 * 1024;

/// The control message that makes the lane SIGKILL the step now.
pub(crate) const KILL: u8 = b'K';

/// The control message that makes the lane SIGTERM the step's process group
/// (a lane in its own pid namespace: the pid it answers with means nothing
/// on the host, where plangate never signals it).
pub(crate) const TERM: u8 = b'T';

/// One step, as the lane starts it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Request {
    /// The flags of `__sandbox-exec` that confine the step (Landlock and
    /// seccomp, applied in the thread that spawns it); None: unconfined.
    pub confine: Option<Vec<String>>,
    /// The program (an absolute path when found in plangate's PATH).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its whole environment.
    pub env: Vec<(String, String)>,
    /// Where it starts.
    pub cwd: PathBuf,
}

/// What the lane says about a step.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The step's main process runs (pid, also its process group).
    Started {
        /// Its pid.
        pid: i32,
    },
    /// The step is over: its main process ended this way, and every process
    /// it left was killed and reaped (`lingering` of them were alive).
    Ended {
        /// Exit code.
        code: Option<i32>,
        /// Killing signal.
        signal: Option<i32>,
        /// Processes left alive by the step, killed.
        lingering: usize,
        /// A walled lane: nothing of the step is left in its sandbox (its
        /// shared memory, message queues, System V objects); else it must
        /// not serve again. Absent: false.
        #[serde(default)]
        clean: bool,
    },
}

/// How to start a lane when none is idle: plangate's own binary and arguments.
#[derive(Debug, Clone)]
pub(crate) struct LaneSpec {
    /// The lane program (plangate's own binary; bwrap for a [`Walled`] lane).
    pub program: String,
    /// Its arguments (`__sandbox-lane`; for a walled lane, those after the
    /// binds of its staging folders).
    pub args: Vec<String>,
    /// The confinement flags of this step (see [`Request::confine`]).
    pub confine: Option<Vec<String>>,
    /// A lane inside its own bubblewrap sandbox; None: an unconfined or
    /// Landlock lane (any of which serves any such step).
    pub walled: Option<Walled>,
}

/// A lane inside a bubblewrap sandbox, which serves only the steps whose
/// sandbox is the same: [`Walled::key`] equal (the layout's bwrap flags and
/// the identity of every path they bind or cover).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Walled {
    /// bwrap's flags before the binds of the lane's staging folders: the
    /// step's layout with nothing of the step itself in it.
    pub layout: Vec<String>,
    /// (device, inode) of each path the layout binds or covers, as found
    /// when the step was about to start (None: absent). A bind follows the
    /// inode: a path replaced on the host since the lane started is not
    /// the one the lane sees.
    pub stamps: Vec<Option<(u64, u64)>>,
    /// Where the lane's artifact folder is made (the run's output folder).
    pub output: PathBuf,
}

/// A walled lane's private folders, bound into its sandbox at their own
/// paths: each step's artifact folder and TMPDIR in turn (see
/// `tools::sandboxed`, which moves what a step wrote to its real folder).
#[derive(Debug)]
pub(crate) struct Staging {
    /// The artifact folder, in the run's output folder (the same file
    /// system as the real ones: what a step wrote there is renamed into them).
    art: tempfile::TempDir,
    /// The TMPDIR, beside the steps' own (`tools::temp`).
    tmp: tempfile::TempDir,
    /// (device, inode, mode) of both folders as made.
    made: [(u64, u64, u32); 2],
    /// Their extended attributes' names as made (a security label, say).
    xattrs: [Option<Vec<u8>>; 2],
}

impl Staging {
    fn new(output: &std::path::Path) -> std::io::Result<Staging> {
        use std::os::unix::fs::MetadataExt as _;
        let make = |prefix: &str, parent: &std::path::Path| {
            tempfile::Builder::new()
                .prefix(prefix)
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir_in(parent)
        };
        let art = crate::outdir::made(|| make(".plangate-lane-", output), |d| d.path())?;
        let tmp = make("plangate-lane-", &crate::environ::temp_dir())?;
        let mut made = [(0, 0, 0); 2];
        for (i, d) in [art.path(), tmp.path()].into_iter().enumerate() {
            let m = std::fs::symlink_metadata(d)?;
            made[i] = (m.dev(), m.ino(), m.mode());
        }
        let xattrs = [xattr_names(art.path()), xattr_names(tmp.path())];
        Ok(Staging {
            art,
            tmp,
            made,
            xattrs,
        })
    }

    /// The step's artifact folder, as the step sees it.
    pub(crate) fn artifacts(&self) -> &std::path::Path {
        self.art.path()
    }

    /// The step's TMPDIR.
    pub(crate) fn temp(&self) -> &std::path::Path {
        self.tmp.path()
    }

    /// Whether both folders are still the ones made, with their first mode
    /// (a step may `chmod` them: the next one would inherit that).
    pub(crate) fn intact(&self) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        [self.art.path(), self.tmp.path()]
            .into_iter()
            .zip(self.made)
            .zip(&self.xattrs)
            .all(|((d, (dev, ino, mode)), xattrs)| {
                std::fs::symlink_metadata(d).is_ok_and(|m| {
                    m.is_dir() && m.dev() == dev && m.ino() == ino && m.mode() == mode
                }) && xattrs.is_some()
                    && xattr_names(d) == *xattrs
            })
    }
}

/// The names of `d`'s extended attributes (a step may set one on its folder).
fn xattr_names(d: &std::path::Path) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(d, &mut buf[..]).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// A lane's connection, held by one step at a time.
pub(crate) struct Lane {
    /// Always Some until dropped.
    sock: Option<AsyncFd<OwnedFd>>,
    process: std::process::Child,
    /// Idle: closing its socket ends it (else it is killed).
    idle: bool,
    /// A walled lane's key.
    walled: Option<Walled>,
    /// A walled lane's folders.
    staging: Option<Staging>,
    /// It answered that a step left something in its sandbox.
    dirty: std::sync::atomic::AtomicBool,
    /// It was sent a control message ([`KILL`], [`TERM`]): one may still
    /// be on its way after the step ended, so it never serves again.
    signalled: std::sync::atomic::AtomicBool,
}

impl Drop for Lane {
    fn drop(&mut self) {
        drop(self.sock.take());
        if self.idle {
            let _ = self.process.wait();
        } else {
            let _ = self.end_now();
        }
    }
}

/// Most idle walled lanes kept (each holds a sandbox): the oldest goes first.
const MAX_IDLE_WALLED: usize = 8;

static IDLE: Mutex<Vec<Lane>> = Mutex::new(Vec::new());

/// An idle lane of the same kind (for a walled lane, the same key), or a new one.
pub(crate) fn take(spec: &LaneSpec) -> std::io::Result<Lane> {
    let found = IDLE.lock().ok().and_then(|mut idle| {
        if let Some(w) = &spec.walled {
            // A lane of the same layout whose paths were replaced since it
            // started never serves again.
            let (stale, keep): (Vec<Lane>, Vec<Lane>) =
                std::mem::take(&mut *idle).into_iter().partition(|l| {
                    l.walled
                        .as_ref()
                        .is_some_and(|k| k.layout == w.layout && k.stamps != w.stamps)
                });
            *idle = keep;
            drop(stale);
        }
        let at = idle.iter().rposition(|l| l.walled == spec.walled)?;
        Some(idle.remove(at))
    });
    if let Some(mut lane) = found {
        lane.idle = false;
        return Ok(lane);
    }
    use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )?;
    // The lane's end blocks (it waits for one request at a time).
    rustix::io::ioctl_fionbio(&theirs, false)?;
    use std::os::unix::process::CommandExt as _;
    let staging = spec
        .walled
        .as_ref()
        .map(|w| Staging::new(&w.output))
        .transpose()?;
    let mut args: Vec<String> = Vec::new();
    if let (Some(w), Some(st)) = (&spec.walled, &staging) {
        args.extend(w.layout.iter().cloned());
        for d in [st.artifacts(), st.temp()] {
            let s = d.display().to_string();
            args.extend(["--bind".to_owned(), s.clone(), s]);
        }
    }
    args.extend(spec.args.iter().cloned());
    let mut command = std::process::Command::new(&spec.program);
    command
        .args(&args)
        .env_clear()
        .stdin(std::process::Stdio::from(theirs))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Its own group: a terminal's Ctrl-C reaches plangate, which stops the
    // step through the protocol; the lane ends when plangate does. A lane
    // on the host makes its own session (no controlling terminal for a
    // step to write to or push input into); bwrap does (`--new-session`).
    if spec.walled.is_some() {
        command.process_group(0);
    }
    let process = command.spawn().map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot start a step supervisor: {e}"))
    })?;
    // Deprecated for types that may not own their descriptor; an `OwnedFd`
    // does (the safe alternative, `register`, is `unsafe`).
    #[allow(deprecated)]
    let sock = AsyncFd::new(ours)?;
    Ok(Lane {
        sock: Some(sock),
        process,
        idle: false,
        walled: spec.walled.clone(),
        staging,
        dirty: std::sync::atomic::AtomicBool::new(false),
        signalled: std::sync::atomic::AtomicBool::new(false),
    })
}

/// Put a lane that answered every message back in the pool.
pub(crate) fn give_back(mut lane: Lane) {
    if lane.signalled.load(std::sync::atomic::Ordering::Relaxed) {
        // Ended (and killed) on drop, never reused.
        return;
    }
    lane.idle = true;
    let mut evicted = None;
    if let Ok(mut idle) = IDLE.lock() {
        if lane.walled.is_some()
            && idle.iter().filter(|l| l.walled.is_some()).count() >= MAX_IDLE_WALLED
            && let Some(oldest) = idle.iter().position(|l| l.walled.is_some())
        {
            evicted = Some(idle.remove(oldest));
        }
        idle.push(lane);
    }
    drop(evicted);
}

/// End every idle lane (the run is over): each exits when its socket closes.
pub(crate) fn close_all() {
    let lanes = IDLE
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    drop(lanes);
}

impl Lane {
    /// A walled lane's staging folders.
    pub(crate) fn staging(&self) -> Option<&Staging> {
        self.staging.as_ref()
    }

    /// Whether every step's end it answered said its sandbox was left clean.
    pub(crate) fn clean(&self) -> bool {
        !self.dirty.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the lane runs in its own pid namespace (a walled lane): the
    /// pids it answers with are not the host's.
    pub(crate) fn walled(&self) -> bool {
        self.walled.is_some()
    }

    /// End a lane that may hold a step's processes, now. Returns whether
    /// every one of them is known to be gone: a walled lane's sandbox is
    /// gone once bwrap (plangate's child) has been reaped after its
    /// pid namespace's first process was killed, which takes every process
    /// of the namespace with it. A lane that is not walled: its step's
    /// processes come back to plangate (a child subreaper), whose end of
    /// run kills them; not known gone.
    pub(crate) fn end(&mut self) -> bool {
        drop(self.sock.take());
        // Dropped as idle: ended here.
        self.idle = true;
        self.end_now()
    }

    fn end_now(&mut self) -> bool {
        if self.walled.is_none() {
            let _ = self.process.kill();
            let _ = self.process.wait();
            return false;
        }
        // bwrap's first process in the namespace (its init) is the only child
        // of the bwrap plangate started: killing it ends the namespace, and
        // bwrap exits only after it has reaped it, when nothing is left.
        let pid = self.process.id();
        let init: Vec<i32> = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        for k in &init {
            if let Some(p) = rustix::process::Pid::from_raw(*k) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match self.process.try_wait() {
                Ok(Some(_)) => return true,
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                _ => break,
            }
        }
        // bwrap did not end: kill it (`--die-with-parent` ends its namespace,
        // but not before this returns).
        let _ = self.process.kill();
        let _ = self.process.wait();
        false
    }

    fn sock(&self) -> std::io::Result<&AsyncFd<OwnedFd>> {
        self.sock
            .as_ref()
            .ok_or_else(|| std::io::Error::other("the step's supervisor is closed"))
    }

    /// Send the request with the step's stdin, stdout and stderr.
    pub(crate) async fn send(
        &self,
        request: &Request,
        stdio: [BorrowedFd<'_>; 3],
    ) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(request)?;
        if bytes.len() > MAX_MESSAGE {
            return Err(std::io::Error::other(
                "the step's command line and environment are too large for its supervisor",
            ));
        }
        self.sock()?
            .async_io(Interest::WRITABLE, |s| {
                use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
                let mut space =
                    [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                if !control.push(SendAncillaryMessage::ScmRights(&stdio)) {
                    return Err(std::io::Error::other(
                        "cannot attach the step's descriptors",
                    ));
                }
                let n = sendmsg(s, &[IoSlice::new(&bytes)], &mut control, SendFlags::empty())?;
                if n == bytes.len() {
                    Ok(())
                } else {
                    Err(std::io::Error::other("the request was cut short"))
                }
            })
            .await
    }

    /// Ask the lane to SIGKILL the step now.
    pub(crate) async fn kill(&self) -> std::io::Result<()> {
        self.control(KILL).await
    }

    /// Ask the lane to SIGTERM the step's process group.
    pub(crate) async fn term(&self) -> std::io::Result<()> {
        self.control(TERM).await
    }

    async fn control(&self, byte: u8) -> std::io::Result<()> {
        self.signalled
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.sock()?
            .async_io(Interest::WRITABLE, |s| {
                rustix::net::send(s, &[byte], rustix::net::SendFlags::empty())
                    .map(|_| ())
                    .map_err(Into::into)
            })
            .await
    }

    /// The lane's next answer; an error when it is gone or talks nonsense.
    pub(crate) async fn recv(&self) -> std::io::Result<Reply> {
        let mut buf = vec![0u8; 4096];
        let n = self
            .sock()?
            .async_io(Interest::READABLE, |s| {
                rustix::net::recv(s, &mut buf[..], rustix::net::RecvFlags::empty())
                    .map(|(n, _)| n)
                    .map_err(Into::into)
            })
            .await?;
        if n == 0 {
            return Err(std::io::Error::other(
                "the step's supervisor ended unexpectedly",
            ));
        }
        let reply: Reply = serde_json::from_slice(&buf[..n.min(buf.len())]).map_err(|e| {
            std::io::Error::other(format!("the step's supervisor answered nonsense: {e}"))
        })?;
        if let Reply::Ended { clean: false, .. } = reply {
            self.dirty.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(reply)
    }
}

/// Send `reply` on the lane's (blocking) socket.
pub(crate) fn send_reply(sock: BorrowedFd<'_>, reply: &Reply) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(reply)?;
    rustix::net::send(sock, &bytes, rustix::net::SendFlags::empty())?;
    Ok(())
}

/// Receive the next message on the lane's (blocking) socket: Ok(None) when
/// plangate closed its end; a request with its three descriptors, or a
/// control byte (no descriptors).
pub(crate) fn recv_message(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
) -> std::io::Result<Option<(usize, Vec<OwnedFd>)>> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        match recvmsg(
            sock,
            &mut [std::io::IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => {}
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = m {
            fds.extend(it);
        }
    }
    if got.bytes == 0 && fds.is_empty() {
        return Ok(None);
    }
    if got.flags.contains(rustix::net::ReturnFlags::TRUNC)
        || got.flags.contains(rustix::net::ReturnFlags::CTRUNC)
    {
        return Err(std::io::Error::other(
            "a message to the supervisor was cut short",
        ));
    }
    Ok(Some((got.bytes, fds)))
}
