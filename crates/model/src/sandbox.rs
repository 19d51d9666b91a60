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
    /// What the start-up self-test found, property by property: `enforced`,
    /// `unenforced`, or `read-only steps only` (see `sandbox::selftest`).
    /// A step whose profile depends on a property not enforced here is not
    /// auto-approved (fail-close): it needs an explicit approval.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub properties: std::collections::BTreeMap<String, String>,
    #[serde(skip)]
    backend: Option<Backend>,
    /// `--sandbox-backend none`: every step that asks for a sandbox is
    /// refused, whatever `policy.sandbox` says.
    #[serde(skip)]
    switched_off: bool,
}

/// A property the self-test saw hold.
pub const ENFORCED: &str = "enforced";
/// A property the self-test saw fail.
pub const UNENFORCED: &str = "unenforced";
/// `egress` under Landlock (ABI 4): TCP connects to the proxy's port only,
/// whatever the address (a host listening on that port is reachable directly).
pub const PORT_ONLY: &str = "proxy port only";
/// The property a step that declares `egress` depends on (not the others).
pub const EGRESS: &str = "egress";
/// `metadata` under Landlock: held for read-only steps only.
pub const READ_ONLY_ONLY: &str = "read-only steps only";

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
            properties: std::collections::BTreeMap::new(),
            backend: Some(backend),
            switched_off: false,
        }
    }

    /// No backend works, for `reason`.
    pub fn none(reason: String) -> Self {
        Availability {
            available: "none".to_owned(),
            reason,
            properties: std::collections::BTreeMap::new(),
            backend: None,
            switched_off: false,
        }
    }

    /// Sandboxes switched off by the operator (`--sandbox-backend none`).
    pub fn switched_off(reason: String) -> Self {
        Availability {
            switched_off: true,
            ..Availability::none(reason)
        }
    }

    /// Whether the operator switched sandboxes off.
    pub fn is_switched_off(&self) -> bool {
        self.switched_off
    }

    /// The properties a step of `profile` would depend on that are not enforced here.
    pub fn unenforced_for(&self, filesystem: Filesystem) -> Vec<String> {
        self.properties
            .iter()
            .filter(|(k, _)| k.as_str() != EGRESS)
            .filter(|(_, v)| {
                v.as_str() == UNENFORCED
                    || (v.as_str() == READ_ONLY_ONLY && filesystem != Filesystem::ReadOnly)
            })
            .map(|(k, _)| k.clone())
            .collect()
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

/// `policy.sandbox`: what happens when no sandbox backend works here.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Steps run unsandboxed, and every report line says "not enforced".
    Optional,
    /// (default) No step that runs a process can be approved; each is blocked before anything runs.
    Required,
}

impl SandboxMode {
    /// The name used in plans and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Optional => "optional",
            SandboxMode::Required => "required",
        }
    }
}

/// What a sandboxed step may write.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Filesystem {
    /// Everything read-only but the step's artifact folder and its private TMPDIR (safe).
    ReadOnly,
    /// Also the workspace, except its `.git` (moderate).
    WorkspaceWrite,
    /// Also the workspace's git hooks and configuration, and the paths the step
    /// declares under `writable` (dangerous, approved).
    Declared,
}

impl Filesystem {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Filesystem::ReadOnly => "read-only",
            Filesystem::WorkspaceWrite => "workspace-write",
            Filesystem::Declared => "declared",
        }
    }
}

/// The boundary a step's processes run in, derived from the risk it was
/// approved at (`sandbox::profile_for`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Profile {
    /// What it may write.
    pub filesystem: Filesystem,
    /// Whether it may reach the network (only when the step or its agent declares `network: true`).
    pub network: bool,
    /// Extra writable paths (absolute), declared by a step approved as dangerous.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<std::path::PathBuf>,
    /// Extra readable paths (absolute) outside the workspace, declared by the
    /// step under `readable` (granted at any risk; a path outside the
    /// workspace makes the step at least moderate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readable: Vec<std::path::PathBuf>,
    /// The hosts it may reach, through plangate's egress proxy only (the
    /// step's or its agent's `egress` list, as declared); absent: no egress list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<String>>,
}

/// How a step's profile is enforced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepSandbox {
    /// The backend (`bwrap`, `landlock+seccomp`) or `not enforced`.
    pub enforcement: String,
    /// What the step may do.
    pub profile: Profile,
    /// Why it is not enforced (absent when it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip)]
    backend: Option<Backend>,
}

/// The report's word for a step whose profile no sandbox enforces.
pub const NOT_ENFORCED: &str = "not enforced";

impl StepSandbox {
    /// `profile`, enforced by `backend`.
    pub fn enforced(backend: Backend, profile: Profile) -> Self {
        StepSandbox {
            enforcement: backend.as_str().to_owned(),
            profile,
            reason: None,
            backend: Some(backend),
        }
    }

    /// `profile`, not enforced, because of `reason`.
    pub fn not_enforced(profile: Profile, reason: String) -> Self {
        StepSandbox {
            enforcement: NOT_ENFORCED.to_owned(),
            profile,
            reason: Some(reason),
            backend: None,
        }
    }

    /// The backend that enforces it (None: runs unsandboxed).
    pub fn backend(&self) -> Option<Backend> {
        self.backend
    }

    /// Whether a backend enforces it (read from `enforcement`, so it holds for a report read back).
    pub fn is_enforced(&self) -> bool {
        self.enforcement != NOT_ENFORCED
    }

    /// One line for people: `bwrap: read-only`, `landlock+seccomp: workspace-write + network`,
    /// `not enforced (why)`.
    pub fn summary(&self) -> String {
        let mut s = format!("{}: {}", self.enforcement, self.profile.filesystem.as_str());
        if self.profile.network {
            s.push_str(" + network");
        }
        if let Some(hosts) = &self.profile.egress {
            s.push_str(&format!(" + egress [{}]", hosts.join(", ")));
        }
        if let Some(why) = &self.reason {
            s.push_str(&format!(" ({why})"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(props: &[(&str, &str)]) -> Availability {
        let mut a = Availability::with(Backend::Landlock, "probe".into());
        a.properties = props
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        a
    }

    #[test]
    fn an_unenforced_property_concerns_every_profile() {
        let a = with(&[("signals", UNENFORCED), ("sockets", ENFORCED)]);
        for fs in [
            Filesystem::ReadOnly,
            Filesystem::WorkspaceWrite,
            Filesystem::Declared,
        ] {
            assert_eq!(a.unenforced_for(fs), vec!["signals".to_owned()]);
        }
    }

    #[test]
    fn read_only_only_concerns_the_profiles_that_write() {
        let a = with(&[("metadata", READ_ONLY_ONLY), ("sockets", ENFORCED)]);
        assert!(a.unenforced_for(Filesystem::ReadOnly).is_empty());
        assert_eq!(
            a.unenforced_for(Filesystem::WorkspaceWrite),
            vec!["metadata".to_owned()]
        );
        assert_eq!(
            a.unenforced_for(Filesystem::Declared),
            vec!["metadata".to_owned()]
        );
    }

    #[test]
    fn nothing_measured_means_nothing_lowered() {
        // `none` has no properties: its steps are "not enforced" already.
        let a = Availability::none("switched off".into());
        assert!(a.unenforced_for(Filesystem::Declared).is_empty());
    }
}
