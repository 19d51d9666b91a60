//! The `bash` tool's parameters as written (design 002, 2.1) and its checked action.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::format::timeout::Timeout;
use crate::model::{Limits, Risk};

/// Parameters of the `bash` tool (design 002, 2.1).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BashParams {
    /// The command, run as `bash --noprofile --norc -eo pipefail -c COMMAND` with stdin closed.
    #[schemars(length(min = 1))]
    pub command: String,
    /// Directory to run in, relative to the workspace; it must stay inside it.
    #[serde(default)]
    pub working_directory: Option<String>,
    /// Same as the step's `timeout`; set one or the other.
    #[serde(default)]
    pub timeout: Option<Timeout>,
    /// Extra environment variables (same as the step's `env`; a name may not be set in both).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Run under a pseudo-terminal. Not supported yet: only `false` is accepted.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "`true` is refused at load with its position (bash/spec.rs); kept so the key parses"
    )]
    pub(crate) use_pty: bool,
    /// Run in a sandbox: the filesystem read-only except the workspace (its `.git` stays read-only),
    /// the step's artifact folder and a private `TMPDIR`; no network unless `network: true`. When this
    /// machine has no working sandbox the step is blocked before the run starts, never run unsandboxed.
    #[serde(default)]
    pub sandbox: bool,
    /// With `sandbox: true`: allow network access inside the sandbox. Default false.
    #[serde(default)]
    pub network: bool,
    /// Resource limits for the command and everything it starts (setrlimit; with or without a sandbox).
    #[serde(default)]
    pub limits: Option<Limits>,
    /// Also print the step's captured output on stderr when it ends. Default false.
    #[serde(default)]
    pub show_cli: bool,
    /// Keep the step's output as artifacts. Default true.
    #[serde(default = "default_true")]
    pub capture_output: bool,
    /// The author's view of the command's risk; counts like `risk_level`.
    #[serde(default)]
    pub security_level: Option<Risk>,
}

fn default_true() -> bool {
    true
}

/// A checked bash step.
#[derive(Debug, Clone)]
pub struct BashAction {
    /// The command text.
    pub command: String,
    /// Relative to the workspace (lexically inside it).
    pub working_directory: Option<PathBuf>,
    /// Print captured output on stderr at the end.
    pub show_cli: bool,
    /// Keep output as artifacts.
    pub capture_output: bool,
    /// Run in a sandbox (None: no sandbox).
    pub sandbox: Option<SandboxSpec>,
    /// Resource limits (None: none).
    pub limits: Option<Limits>,
}

/// What a sandboxed step asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Allow network access inside the sandbox.
    pub network: bool,
}
