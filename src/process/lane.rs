//! Resident step supervisors ("lanes"): one `plangate __sandbox-lane`
//! process serves the steps that do not run under bubblewrap, one step at a
//! time, so that a step costs no exec of plangate's own binary.
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
    },
}

/// How to start a lane when none is idle: plangate's own binary and arguments.
#[derive(Debug, Clone)]
pub(crate) struct LaneSpec {
    /// The lane program (plangate's own binary).
    pub program: String,
    /// Its arguments (`__sandbox-lane`).
    pub args: Vec<String>,
    /// The confinement flags of this step (see [`Request::confine`]).
    pub confine: Option<Vec<String>>,
}

/// A lane's connection, held by one step at a time.
pub(crate) struct Lane {
    /// Always Some until dropped.
    sock: Option<AsyncFd<OwnedFd>>,
    process: std::process::Child,
    /// Idle: closing its socket ends it (else it is killed).
    idle: bool,
}

impl Drop for Lane {
    fn drop(&mut self) {
        drop(self.sock.take());
        if !self.idle {
            // It may hold a step's processes: they come back to plangate
            // (a child subreaper), whose end of run kills them.
            let _ = self.process.kill();
        }
        let _ = self.process.wait();
    }
}

static IDLE: Mutex<Vec<Lane>> = Mutex::new(Vec::new());

/// An idle lane, or a new one.
pub(crate) fn take(spec: &LaneSpec) -> std::io::Result<Lane> {
    if let Ok(mut idle) = IDLE.lock()
        && let Some(mut lane) = idle.pop()
    {
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
    let process = std::process::Command::new(&spec.program)
        .args(&spec.args)
        .env_clear()
        .stdin(std::process::Stdio::from(theirs))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own group: a terminal's Ctrl-C reaches plangate, which stops
        // the step through the protocol; the lane ends when plangate does.
        .process_group(0)
        .spawn()
        .map_err(|e| {
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
    })
}

/// Put a lane that answered every message back in the pool.
pub(crate) fn give_back(mut lane: Lane) {
    lane.idle = true;
    if let Ok(mut idle) = IDLE.lock() {
        idle.push(lane);
    }
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
        self.sock()?
            .async_io(Interest::WRITABLE, |s| {
                rustix::net::send(s, &[KILL], rustix::net::SendFlags::empty())
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
        serde_json::from_slice(&buf[..n.min(buf.len())]).map_err(|e| {
            std::io::Error::other(format!("the step's supervisor answered nonsense: {e}"))
        })
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
