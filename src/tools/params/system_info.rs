//! The `system_info` tool's parameters as written (read-only; design 002's system tool).

use schemars::JsonSchema;
use serde::Deserialize;

/// Parameters of `system_info` (read-only; design 002's system tool).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemInfoParams {
    /// Programs whose version is reported (each run as `NAME --version`, no shell, 5 s each).
    /// Default: git, bash, python3, node, cargo, rustc, go, java, docker.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Print the summary on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}
