//! What the sandbox pre-flight found ([`Availability`]) and the backend names
//! the report shows ([`Backend`]). The probing and wrapping live in `sandbox`.

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
