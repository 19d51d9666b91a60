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
    /// Every bash step runs in a sandbox whose profile is the risk it was approved at (safe:
    /// read-only but its artifact folder and a private `TMPDIR`; moderate: also the workspace;
    /// dangerous: also the `writable` paths). `false` asks to run without one: the step's risk
    /// becomes dangerous, and the policy may forbid it (`allow_unsandboxed: false`).
    #[serde(default = "default_true")]
    pub sandbox: bool,
    /// Same as the step's `network`: let the command reach the network (risk at least moderate).
    #[serde(default)]
    pub network: bool,
    /// The only hosts the command may reach (`HOST`, `HOST:PORT`, `*.domain`; without a port, 80
    /// and 443), through plangate's egress proxy, which its environment names (`HTTPS_PROXY`,
    /// `HTTP_PROXY`, `https_proxy`, `http_proxy`): every other host, port, raw IP, direct
    /// connection and unix socket is refused. Risk at least moderate. Not with `network: true`.
    #[serde(default)]
    pub egress: Option<Vec<String>>,
    /// Extra paths the command may write (absolute, `~/`, or relative to the workspace), granted
    /// when the step is approved as dangerous; a path outside the workspace makes its risk dangerous.
    #[serde(default)]
    pub writable: Vec<String>,
    /// Extra paths outside the workspace the command may read (absolute, `~/`, or relative to
    /// the workspace), at any risk: besides the workspace (minus what the permission rules deny),
    /// its artifact folder, its `TMPDIR` and the system's programs and libraries, a sandboxed
    /// command reads nothing (not `$HOME`). Each path raises the risk to at least moderate, and
    /// to dangerous for `$HOME` itself or above it, `~/.ssh`, `~/.aws`, `~/.gnupg`, `~/.docker`,
    /// `~/.kube`, `~/.config`, `/run` and `/var/run`.
    #[serde(default)]
    pub readable: Vec<String>,
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
    /// `sandbox: false`: asks to run without a sandbox.
    pub unsandboxed: bool,
    /// `network: true` in the parameters.
    pub network: bool,
    /// `egress:` hosts, as written (checked at load).
    pub egress: Option<Vec<String>>,
    /// Extra writable paths as written.
    pub writable: Vec<String>,
    /// Extra readable paths as written.
    pub readable: Vec<String>,
    /// Resource limits (None: none).
    pub limits: Option<Limits>,
}
