//! Step sandboxes: what this machine supports (the pre-flight probe), and
//! how a sandboxed command is started.
//!
//! A sandboxed step reads only what [`reads`] lists (the system trees, the
//! workspace minus what the permission rules deny, its own folders, what it
//! declares), and writes only the workspace per its profile (whose `.git`
//! and, when it lies inside, the run's output folder stay read-only), the
//! step's own artifact folder and a private temporary folder (`TMPDIR`); the
//! network is off unless the step allows it. [`git_creds`] keeps the
//! credentials a checkout left in `.git/config` away from every step.
//!
//! Backends, best first:
//! - `bwrap` (bubblewrap): new mount, pid, network, ipc and uts namespaces;
//!   bind mounts give the layout above; `--die-with-parent` and the pid
//!   namespace make sure nothing the step forks outlives it, even a process
//!   that called `setsid`. A step without limits or egress runs in a
//!   resident sandbox of its layout (a walled [`lane`], made by
//!   [`layout::walled_lane`]: the lane is the namespace's first process and
//!   kills what each step leaves; `tools::sandboxed` moves the step's
//!   artifacts out of the lane's own folders), else in a bwrap of its own
//!   with `__sandbox-exec --supervise` inside.
//! - `landlock+seccomp`: when bwrap does not work. The step runs through
//!   plangate's hidden `__sandbox-exec` helper, which restricts itself with
//!   Landlock (read and write only beneath the allowed paths) and,
//!   without network, a seccomp filter refusing every non-unix socket and
//!   io_uring, then `exec`s the command (same pid and process group). Landlock
//!   cannot take back a right granted higher up: the whole workspace is
//!   writable for `workspace-write`, and its `.git` is kept by
//!   [`git_guard`] (recorded before the step, undone after it).
//!   There is no pid namespace: the supervisor (a resident [`lane`], or
//!   [`confine::supervise`] for a step with resource limits; a child
//!   subreaper outside the step's domain) kills what the step leaves. A lane
//!   confines the thread that spawns the step instead of exec'ing the helper.
//! - none: a step that asks for a sandbox is blocked before the run starts
//!   (fail-close), never run unsandboxed.
//!
//! The pre-flight runs the backend for real ([`selftest`]), because bwrap
//! is often installed where it cannot work (Ubuntu 24.04 runners restrict
//! unprivileged user namespaces; unprivileged containers forbid mounts), and
//! records which properties of the boundary hold here.

mod confine;
mod exec;
mod git_config;
pub(crate) mod git_creds;
pub(crate) mod git_guard;
mod git_includes;
mod git_marks;
pub(crate) mod git_nested;
mod grants;
mod lane;
mod layout;
pub(crate) mod netfilter;
pub(crate) mod overlay;
mod profile;
pub(crate) mod reads;
mod selftest;

pub(crate) use confine::kill_descendants_named;
pub(crate) use exec::ExecArgs;
pub(crate) use exec::{exec, with_limits};
pub(crate) use lane::serve as serve_lane;
pub(crate) use layout::{EgressAt, Layout, confine_flags, supervisor_args, walled_lane, wrap};
pub(crate) use profile::{Request, plan_for};
pub(crate) use selftest::ProbeArgs;
pub(crate) use selftest::probe_main;
pub(crate) use selftest::walled_usable;

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

/// Probe what this machine supports, within what `choice` allows: the
/// self-test ([`selftest`]) runs each backend for real, best first, and the
/// first that starts is used, with what it enforces here.
pub(crate) fn preflight(choice: Choice) -> Availability {
    if choice == Choice::None {
        return Availability::switched_off(
            "--sandbox-backend none: sandboxes are switched off".into(),
        );
    }
    let mut tried = Vec::new();
    if matches!(choice, Choice::Auto | Choice::Bwrap) {
        match with_properties(
            Backend::Bwrap,
            "bwrap ran a probe command with new namespaces and read-only binds".into(),
        ) {
            Ok(a) => return a,
            Err(why) => tried.push(format!("bwrap does not work here: {why}")),
        }
    }
    if matches!(choice, Choice::Auto | Choice::Landlock) {
        let mut why = tried.join("; ");
        if !why.is_empty() {
            why.push_str("; ");
        }
        why.push_str(
            "a probe child enforced Landlock (ABI v3 rights) and the seccomp network filter",
        );
        match with_properties(Backend::Landlock, why) {
            Ok(a) => return a,
            Err(why) => tried.push(format!("Landlock + seccomp does not work here: {why}")),
        }
    }
    Availability::none(tried.join("; "))
}

/// Run the self-test through `backend`: Err when it does not start; else
/// what it enforces here.
fn with_properties(backend: Backend, mut why: String) -> Result<Availability, SandboxError> {
    use crate::model::sandbox::{ENFORCED, READ_ONLY_ONLY, UNENFORCED};
    let (held, took) = selftest::timed(|| selftest::self_test(backend));
    let mut held = held?;
    for name in selftest::PROPERTIES {
        held.entry((*name).to_owned()).or_insert(false);
    }
    let mut properties = std::collections::BTreeMap::new();
    for (name, ok) in held {
        let v = match (ok, backend, name.as_str()) {
            (true, Backend::Landlock, "metadata") => READ_ONLY_ONLY,
            (true, ..) => ENFORCED,
            (false, ..) => UNENFORCED,
        };
        properties.insert(name, v.to_owned());
    }
    // Not probed: what the backend gives a step that declares `egress`
    // (bwrap: its own network namespace; Landlock: the proxy's port, ABI 4).
    let egress = match backend {
        Backend::Bwrap => ENFORCED,
        Backend::Landlock if netfilter::landlock_net_supported() => {
            crate::model::sandbox::PORT_ONLY
        }
        Backend::Landlock => UNENFORCED,
    };
    properties.insert(crate::model::sandbox::EGRESS.to_owned(), egress.to_owned());
    if took > std::time::Duration::from_secs(1) {
        why.push_str(&format!("; the self-test took {} ms", took.as_millis()));
    }
    let unenforced: Vec<String> = properties
        .iter()
        .filter(|(_, v)| v.as_str() != ENFORCED)
        .map(|(k, v)| format!("{k} ({v})"))
        .collect();
    if !unenforced.is_empty() {
        why.push_str(&format!(
            "; not enforced here: {}; steps that depend on them are not auto-approved",
            unenforced.join(", ")
        ));
    }
    let mut a = Availability::with(backend, why);
    a.properties = properties;
    Ok(a)
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
    /// The capabilities could not be dropped.
    #[error("cannot {what} the capabilities: {source}")]
    Capabilities {
        /// What failed.
        what: &'static str,
        /// Why.
        source: rustix::io::Errno,
    },
    /// Landlock refused the ruleset.
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The paths to grant could not be worked out.
    #[error("{0}")]
    Paths(String),
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

/// The hidden helper subcommand (defined where processes start: a helper
/// leads its own session rather than a group plangate makes).
pub(crate) use crate::process::HELPER;

/// The hidden resident supervisor subcommand ([`lane`]).
pub(crate) const LANE: &str = "__sandbox-lane";

/// bwrap, found in plangate's PATH (its environment is sealed: a bare name
/// would be looked up in a default PATH instead).
fn bwrap_path() -> Result<std::path::PathBuf, SandboxError> {
    let p = crate::process::program_path(BWRAP);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(SandboxError::Start {
            name: BWRAP.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not found in PATH"),
        })
    }
}

/// Run a probe command; Ok when it exits 0.
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
