//! What the sandbox pre-flight found ([`Availability`]), the backend names
//! the report shows ([`Backend`]) and a bash step's resource [`Limits`]. The
//! probing, wrapping and setrlimit calls live in `sandbox`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A sandbox backend that works on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backend {
    /// bubblewrap namespaces.
    #[serde(rename = "bwrap")]
    Bwrap,
    /// Landlock filesystem rules + seccomp network filter, through `__sandbox-exec`.
    #[serde(rename = "landlock+seccomp")]
    Landlock,
}

impl Backend {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Bwrap => "bwrap",
            Backend::Landlock => "landlock+seccomp",
        }
    }
}

/// What the pre-flight found: the backend sandboxed steps will use, or none and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Availability {
    /// `bwrap`, `landlock+seccomp` or `none`.
    pub available: String,
    /// Why this level (what was probed, what failed).
    pub reason: String,
    #[serde(skip)]
    backend: Option<Backend>,
}

impl Availability {
    /// The backend, if any works.
    pub fn backend(&self) -> Option<Backend> {
        self.backend
    }

    /// `backend` works, for `reason`.
    pub fn with(backend: Backend, reason: String) -> Self {
        Availability {
            available: backend.as_str().to_owned(),
            reason,
            backend: Some(backend),
        }
    }

    /// No backend works, for `reason`.
    pub fn none(reason: String) -> Self {
        Availability {
            available: "none".to_owned(),
            reason,
            backend: None,
        }
    }
}

/// Per-step resource limits, applied with setrlimit to the step's command and
/// inherited by what it starts. Exceeding `memory_mb` makes allocations fail;
/// `file_size_mb` makes a larger write fail (the writer is killed by SIGXFSZ
/// unless it ignores it); `processes` caps the processes of the user running
/// plangate (the kernel does not apply it to root).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Most address space per process, in MiB (RLIMIT_AS).
    #[serde(default)]
    #[schemars(range(min = 16))]
    pub memory_mb: Option<u64>,
    /// Most processes of the user (RLIMIT_NPROC).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub processes: Option<u64>,
    /// Largest file the command may write, in MiB (RLIMIT_FSIZE).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub file_size_mb: Option<u64>,
}
