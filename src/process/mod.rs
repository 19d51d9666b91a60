//! Child processes: own process group, closed stdin, output streamed to
//! capped files, timeout and cancellation that take down the whole group.
//!
//! Nothing a step forks survives it: when the step's main process exits, or
//! its timeout fires, or the run is interrupted, the process group gets
//! SIGTERM, then SIGKILL after a grace period. Output beyond the cap is read
//! and dropped (so the child never blocks on a full pipe) and flagged as
//! truncated: a step printing gigabytes fills neither memory nor disk. The
//! groups alive are listed on disk ([`live`]) so a killed run's steps are
//! stopped by the next run.

pub(crate) mod lane;
pub(crate) mod live;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Where a stream goes.
#[derive(Debug, Clone)]
pub(crate) enum Capture {
    /// Into a file, keeping at most `cap` bytes.
    File {
        /// The file.
        path: PathBuf,
        /// Most bytes kept.
        cap: u64,
    },
    /// Nowhere.
    Discard,
}

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct ProcessSpec {
    /// Program (looked up in PATH).
    pub program: String,
    /// Arguments, passed as an argv array (never through a shell).
    pub args: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// The child's whole environment: nothing is inherited (build it with
    /// `StepContext::child_env`, which applies `policy::env`).
    pub env: Vec<(String, String)>,
    /// stdout destination.
    pub stdout: Capture,
    /// stderr destination.
    pub stderr: Capture,
    /// Kill the group after this long.
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Bytes written to the child's stdin, which is then closed (None: stdin is /dev/null).
    pub stdin: Option<Vec<u8>>,
    /// Kill the group when neither stream has printed anything for this long.
    pub idle_timeout: Option<Duration>,
    /// Run it through a resident supervisor ([`lane`]) rather than as
    /// plangate's own child (set by `tools::sandboxed`, never by a tool).
    pub lane: Option<lane::LaneSpec>,
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Termination {
    /// Exited by itself with this code.
    Exited(i32),
    /// Killed by a signal it did not get from plangate.
    Signaled(i32),
    /// plangate killed it: timeout.
    TimedOut,
    /// plangate killed it: no output for `idle_timeout`.
    IdleTimedOut,
    /// plangate killed it: the run was interrupted.
    Cancelled,
}

/// One captured stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StreamStats {
    /// Bytes the child wrote.
    pub bytes: u64,
    /// Bytes kept in the file.
    pub kept: u64,
    /// Whether bytes were dropped at the cap.
    pub truncated: bool,
    /// Writing the capture file failed (disk full, file too large): what kept
    /// is all that was saved.
    pub write_error: Option<std::io::ErrorKind>,
}

/// The result of running a process.
#[derive(Debug, Clone)]
pub(crate) struct ProcessOutcome {
    /// How it ended.
    pub termination: Termination,
    /// stdout figures.
    pub stdout: StreamStats,
    /// stderr figures.
    pub stderr: StreamStats,
    /// Wall time.
    pub duration: Duration,
    /// Run through a lane: how many processes the step left alive (killed).
    pub lingering: Option<usize>,
}

/// Run a process to completion, timeout or cancellation.
pub(crate) async fn run(
    spec: ProcessSpec,
    mut cancel: watch::Receiver<bool>,
) -> std::io::Result<ProcessOutcome> {
    text_only(&spec)?;
    if let Some(l) = spec.lane.clone() {
        return run_lane(spec, l, cancel).await;
    }
    let started = Instant::now();
    let mut cmd = Command::new(program_path(&spec.program));
    // The child gets exactly `spec.env`: no token, key or workflow-command file
    // of plangate's environment, and none of plangate's control variables (a
    // nested plangate must not inherit the outer run's approvals).
    cmd.env_clear()
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(stdio_for(&spec.stdout))
        .stderr(stdio_for(&spec.stderr))
        .kill_on_drop(true);
    // Its own group, signalled as one. plangate's sandbox helper makes its
    // own session instead (no controlling terminal for the step).
    if spec.args.first().map(String::as_str) != Some(HELPER) {
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(|e| {
        std::io::Error::new(e.kind(), format!("failed to start `{}`: {e}", spec.program))
    })?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw);
    if let Some(pg) = pgid {
        live::add(pg);
    }
    if let (Some(bytes), Some(mut pipe)) = (spec.stdin.clone(), child.stdin.take()) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // A child that exits without reading gives EPIPE: that is its business.
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        });
    }
    let activity = Arc::new(AtomicU64::new(0));
    let out_task = spawn_reader(
        child.stdout.take(),
        spec.stdout.clone(),
        Arc::clone(&activity),
        started,
    );
    let err_task = spawn_reader(
        child.stderr.take(),
        spec.stderr.clone(),
        Arc::clone(&activity),
        started,
    );
    let idle = idle_watch(spec.idle_timeout, Arc::clone(&activity), started);

    let already_cancelled = *cancel.borrow();
    let waited = if already_cancelled {
        None
    } else {
        tokio::select! {
            status = child.wait() => Some(Ok(status)),
            () = tokio::time::sleep(spec.timeout) => Some(Err(Termination::TimedOut)),
            () = idle => Some(Err(Termination::IdleTimedOut)),
            _ = cancel.wait_for(|c| *c) => None,
        }
    };
    let (status, killed_by_us) = match waited {
        Some(Ok(status)) => (status?, None),
        Some(Err(t)) => (
            stop_group(pgid, &mut child, spec.kill_grace).await?,
            Some(t),
        ),
        None => (
            stop_group(pgid, &mut child, spec.kill_grace).await?,
            Some(Termination::Cancelled),
        ),
    };
    // The leader is gone; whatever it left in its group goes too.
    let (stdout, stderr) = wind_down(pgid, Signal::TERM, out_task, err_task, spec.kill_grace).await;
    let termination = termination_of(
        killed_by_us,
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    );
    Ok(ProcessOutcome {
        termination,
        stdout,
        stderr,
        duration: started.elapsed(),
        lingering: None,
    })
}

/// A NUL byte cannot reach a process (its argv and environment are C
/// strings): refused before anything starts, naming the variable or
/// argument and where the byte is (an input, a plan's `env`, an output).
fn text_only(spec: &ProcessSpec) -> std::io::Result<()> {
    let refuse = |what: String, at: usize| {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{what} holds a NUL byte at offset {at}: a process's environment and arguments are text; nothing was run"
            ),
        ))
    };
    for (k, v) in &spec.env {
        if let Some(at) = k.find('\0') {
            return refuse(
                format!("the name of a variable (`{}`)", k.replace('\0', "\\0")),
                at,
            );
        }
        if let Some(at) = v.find('\0') {
            return refuse(format!("the variable `{k}`"), at);
        }
    }
    for (i, a) in spec.args.iter().enumerate() {
        if let Some(at) = a.find('\0') {
            return refuse(format!("argument {i} of `{}`", spec.program), at);
        }
    }
    Ok(())
}

/// [`run`] through a resident supervisor ([`lane`]): the same timeouts,
/// cancellation, capture and process-group handling; the lane kills what the
/// step leaves and says how many.
async fn run_lane(
    spec: ProcessSpec,
    l: lane::LaneSpec,
    cancel: watch::Receiver<bool>,
) -> std::io::Result<ProcessOutcome> {
    let ln = lane::take(&l)?;
    // A lane that did not answer in turn is dropped (and killed), never reused.
    let outcome = run_on(spec, l.confine, &ln, cancel).await?;
    lane::give_back(ln);
    Ok(outcome)
}

/// Run `spec` through the lane `ln` (taken by the caller, who gives it back
/// only when this succeeded: an error means the lane did not answer in
/// turn, or is gone), with `confine` (see [`lane::Request::confine`]).
pub(crate) async fn run_on(
    spec: ProcessSpec,
    confine: Option<Vec<String>>,
    ln: &lane::Lane,
    mut cancel: watch::Receiver<bool>,
) -> std::io::Result<ProcessOutcome> {
    use std::os::fd::{AsFd, OwnedFd};
    text_only(&spec)?;
    let started = Instant::now();
    let (stdin_child, stdout_child, stderr_child, stdin_ours, stdout_ours, stderr_ours) =
        lane_stdio(&spec)?;
    let request = lane::Request {
        confine,
        program: program_path(&spec.program).display().to_string(),
        args: spec.args.clone(),
        env: spec.env.clone(),
        cwd: spec.cwd.clone(),
    };
    ln.send(
        &request,
        [
            stdin_child.as_fd(),
            stdout_child.as_fd(),
            stderr_child.as_fd(),
        ],
    )
    .await?;
    drop((stdin_child, stdout_child, stderr_child));
    let first = ln.recv().await?;
    let pgid = match first {
        // A walled lane's pid is its namespace's: nothing on the host to
        // signal or record (its sandbox dies with plangate, `--die-with-parent`).
        lane::Reply::Started { .. } if ln.walled() => None,
        lane::Reply::Started { pid } => Pid::from_raw(pid),
        lane::Reply::Ended { .. } => None,
    };
    if let Some(pg) = pgid {
        live::add(pg);
    }
    if let (Some(bytes), Some(fd)) = (spec.stdin.clone(), stdin_ours) {
        let mut pipe = tokio::net::unix::pipe::Sender::from_owned_fd(fd)?;
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // A child that exits without reading gives EPIPE: that is its business.
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        });
    }
    let reader =
        |fd: Option<OwnedFd>| -> std::io::Result<Option<tokio::net::unix::pipe::Receiver>> {
            fd.map(tokio::net::unix::pipe::Receiver::from_owned_fd)
                .transpose()
        };
    let activity = Arc::new(AtomicU64::new(0));
    let out_task = spawn_reader(
        reader(stdout_ours)?,
        spec.stdout.clone(),
        Arc::clone(&activity),
        started,
    );
    let err_task = spawn_reader(
        reader(stderr_ours)?,
        spec.stderr.clone(),
        Arc::clone(&activity),
        started,
    );
    let idle = idle_watch(spec.idle_timeout, Arc::clone(&activity), started);
    let ended = |r: lane::Reply| match r {
        lane::Reply::Ended {
            code,
            signal,
            lingering,
            ..
        } => Ok((code, signal, lingering)),
        lane::Reply::Started { .. } => Err(std::io::Error::other(
            "the step's supervisor answered out of turn",
        )),
    };
    let waited = if let lane::Reply::Ended { .. } = first {
        Some(Ok(ended(first)))
    } else if *cancel.borrow() {
        None
    } else {
        tokio::select! {
            r = ln.recv() => Some(Ok(r.and_then(ended))),
            () = tokio::time::sleep(spec.timeout) => Some(Err(Termination::TimedOut)),
            () = idle => Some(Err(Termination::IdleTimedOut)),
            _ = cancel.wait_for(|c| *c) => None,
        }
    };
    let (result, killed_by_us) = match waited {
        Some(Ok(r)) => (r, None),
        Some(Err(t)) => (stop_lane(pgid, ln, spec.kill_grace).await, Some(t)),
        None => (
            stop_lane(pgid, ln, spec.kill_grace).await,
            Some(Termination::Cancelled),
        ),
    };
    // The lane has killed whatever the step left; its group goes too (belt and braces).
    let (stdout, stderr) = wind_down(pgid, Signal::KILL, out_task, err_task, spec.kill_grace).await;
    let (code, signal, lingering) = result?;
    let termination = termination_of(killed_by_us, code, signal);
    Ok(ProcessOutcome {
        termination,
        stdout,
        stderr,
        duration: started.elapsed(),
        lingering: Some(lingering),
    })
}

/// The step's stdin, stdout and stderr for a lane, and plangate's ends.
#[allow(clippy::type_complexity)]
fn lane_stdio(
    spec: &ProcessSpec,
) -> std::io::Result<(
    std::os::fd::OwnedFd,
    std::os::fd::OwnedFd,
    std::os::fd::OwnedFd,
    Option<std::os::fd::OwnedFd>,
    Option<std::os::fd::OwnedFd>,
    Option<std::os::fd::OwnedFd>,
)> {
    use std::os::fd::OwnedFd;
    let null = |write: bool| -> std::io::Result<OwnedFd> {
        Ok(std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .open("/dev/null")?
            .into())
    };
    let (stdin_child, stdin_ours): (OwnedFd, Option<OwnedFd>) = if spec.stdin.is_some() {
        let (r, w) = std::io::pipe()?;
        (r.into(), Some(w.into()))
    } else {
        (null(false)?, None)
    };
    let out = |c: &Capture| -> std::io::Result<(OwnedFd, Option<OwnedFd>)> {
        match c {
            Capture::File { .. } => {
                let (r, w) = std::io::pipe()?;
                Ok((w.into(), Some(r.into())))
            }
            Capture::Discard => Ok((null(true)?, None)),
        }
    };
    let (stdout_child, stdout_ours) = out(&spec.stdout)?;
    let (stderr_child, stderr_ours) = out(&spec.stderr)?;
    Ok((
        stdin_child,
        stdout_child,
        stderr_child,
        stdin_ours,
        stdout_ours,
        stderr_ours,
    ))
}

/// Stop a step run through a lane: SIGTERM its group, after `grace` SIGKILL
/// it and have the lane SIGKILL every process it holds; its answer.
async fn stop_lane(
    pgid: Option<Pid>,
    ln: &lane::Lane,
    grace: Duration,
) -> std::io::Result<(Option<i32>, Option<i32>, usize)> {
    if let Some(pg) = pgid {
        let _ = kill_process_group(pg, Signal::TERM);
    } else if ln.walled() {
        ln.term().await?;
    }
    let reply = match tokio::time::timeout(grace, ln.recv()).await {
        Ok(r) => r,
        Err(_) => {
            if let Some(pg) = pgid {
                let _ = kill_process_group(pg, Signal::KILL);
            }
            ln.kill().await?;
            // A lane that does not answer even then is ended by the caller.
            tokio::time::timeout(grace, ln.recv())
                .await
                .map_err(|_| std::io::Error::other("the step's supervisor does not answer"))?
        }
    }?;
    match reply {
        lane::Reply::Ended {
            code,
            signal,
            lingering,
            ..
        } => Ok((code, signal, lingering)),
        lane::Reply::Started { .. } => Err(std::io::Error::other(
            "the step's supervisor answered out of turn",
        )),
    }
}

/// The hidden sandbox helper subcommand (`plangate __sandbox-exec`).
pub(crate) const HELPER: &str = "__sandbox-exec";

/// plangate's own environment, captured once per run (`policy::env::Scope`
/// picks what a child gets from it). Variables whose name or value is not
/// UTF-8 are left out: no child gets them.
pub(crate) fn own_env() -> std::collections::BTreeMap<String, String> {
    crate::environ::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// Where `program` is: looked up in plangate's `PATH` (not the child's, which a
/// step's `env` may change), so wrappers such as `bwrap` are the ones plangate
/// probed. A name not found there is left for the spawn to report.
///
/// A name found is remembered for the rest of the run (with the `PATH` it
/// was found in): every step of a run gets the same `bash`, and a program a
/// step puts earlier in plangate's `PATH` never replaces it for later steps.
/// Once a step, its path is checked to still be an executable file; when it
/// is not, the name is looked up again.
pub(crate) fn program_path(program: &str) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};
    type Found = HashMap<(String, Option<std::ffi::OsString>), PathBuf>;
    static FOUND: Mutex<Option<Found>> = Mutex::new(None);
    if program.contains('/') {
        return PathBuf::from(program);
    }
    let key = (program.to_owned(), crate::environ::var_os("PATH"));
    let known = FOUND
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|m| m.get(&key).cloned());
    if let Some(p) = known.filter(|p| is_executable(p)) {
        return p;
    }
    let found = look_up(program, key.1.as_deref());
    if let Some(p) = &found {
        FOUND
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .insert(key, p.clone());
    }
    found.unwrap_or_else(|| PathBuf::from(program))
}

/// An executable file (links followed).
fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `program` in the absolute folders of `path`, the first executable file.
fn look_up(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    path.and_then(|path| {
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(program))
            .find(|p| is_executable(p))
    })
}

fn stdio_for(c: &Capture) -> Stdio {
    match c {
        Capture::File { .. } => Stdio::piped(),
        Capture::Discard => Stdio::null(),
    }
}

/// SIGTERM the group, wait up to `grace`, then SIGKILL it, and reap the leader.
async fn stop_group(
    pgid: Option<Pid>,
    child: &mut tokio::process::Child,
    grace: Duration,
) -> std::io::Result<std::process::ExitStatus> {
    if let Some(pg) = pgid {
        let _ = kill_process_group(pg, Signal::TERM);
    }
    match tokio::time::timeout(grace, child.wait()).await {
        Ok(status) => {
            if let Some(pg) = pgid {
                let _ = kill_process_group(pg, Signal::KILL);
            }
            status
        }
        Err(_) => {
            if let Some(pg) = pgid {
                let _ = kill_process_group(pg, Signal::KILL);
            }
            let _ = child.start_kill();
            child.wait().await
        }
    }
}

type ReaderTask = Option<JoinHandle<StreamStats>>;

/// Read a pipe asynchronously (epoll, no thread hand-off) and append what is
/// kept to the artifact file with plain writes: local page-cache writes of at
/// most 64 KiB are short, and this keeps plans of many tiny steps cheap.
fn spawn_reader<R>(
    pipe: Option<R>,
    capture: Capture,
    activity: Arc<AtomicU64>,
    started: Instant,
) -> ReaderTask
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let pipe = pipe?;
    let Capture::File { path, cap } = capture else {
        return None;
    };
    Some(tokio::spawn(copy_capped(
        pipe, path, cap, activity, started,
    )))
}

/// Resolves when nothing was printed for `idle` (never, when `idle` is None).
async fn idle_watch(idle: Option<Duration>, activity: Arc<AtomicU64>, started: Instant) {
    let Some(idle) = idle else {
        return std::future::pending().await;
    };
    let tick = (idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        let last = Duration::from_millis(activity.load(Ordering::Relaxed));
        if started.elapsed().saturating_sub(last) >= idle {
            return;
        }
    }
}

async fn copy_capped<R: AsyncRead + Unpin>(
    mut pipe: R,
    path: PathBuf,
    cap: u64,
    activity: Arc<AtomicU64>,
    started: Instant,
) -> StreamStats {
    use std::io::Write;
    let mut stats = StreamStats::default();
    let mut file = std::fs::File::create(&path).ok();
    // Read into spare capacity: a zeroed 64 KiB per stream per step showed in profiles.
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        let n = match pipe.read_buf(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        stats.bytes += n as u64;
        activity.store(
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let room = cap.saturating_sub(stats.kept);
        let keep = usize::try_from(room).unwrap_or(usize::MAX).min(n);
        if keep < n {
            stats.truncated = true;
        }
        if keep > 0
            && let Some(f) = file.as_mut()
        {
            if let Err(e) = f.write_all(&buf[..keep]) {
                // Disk full or similar: keep draining, stop writing, flag it.
                file = None;
                stats.truncated = true;
                stats.write_error = Some(e.kind());
            } else {
                stats.kept += keep as u64;
            }
        }
    }
    stats
}

/// How a step ended: as plangate stopped it, else by its exit code or signal.
fn termination_of(
    killed_by_us: Option<Termination>,
    code: Option<i32>,
    signal: Option<i32>,
) -> Termination {
    match (killed_by_us, code, signal) {
        (Some(t), _, _) => t,
        (None, Some(c), _) => Termination::Exited(c),
        (None, None, Some(s)) => Termination::Signaled(s),
        (None, None, None) => Termination::Signaled(0),
    }
}

/// After the leader: signal what is left of its group, drain both output
/// readers, and forget the group.
async fn wind_down(
    pgid: Option<Pid>,
    signal: Signal,
    out: ReaderTask,
    err: ReaderTask,
    grace: Duration,
) -> (StreamStats, StreamStats) {
    if let Some(pg) = pgid {
        let _ = kill_process_group(pg, signal);
    }
    let stdout = finish_reader(out, pgid, grace).await;
    let stderr = finish_reader(err, pgid, grace).await;
    if let Some(pg) = pgid {
        live::remove(pg);
    }
    (stdout, stderr)
}

/// Wait for a reader; if something still holds the pipe after the grace period, kill the group and stop reading.
async fn finish_reader(task: ReaderTask, pgid: Option<Pid>, grace: Duration) -> StreamStats {
    let Some(mut task) = task else {
        return StreamStats::default();
    };
    match tokio::time::timeout(grace, &mut task).await {
        Ok(r) => r.unwrap_or_default(),
        Err(_) => {
            if let Some(pg) = pgid {
                let _ = kill_process_group(pg, Signal::KILL);
            }
            match tokio::time::timeout(Duration::from_secs(2), &mut task).await {
                Ok(r) => r.unwrap_or_default(),
                Err(_) => {
                    // A process outside our group holds the pipe: give up on it.
                    task.abort();
                    StreamStats {
                        truncated: true,
                        ..StreamStats::default()
                    }
                }
            }
        }
    }
}
