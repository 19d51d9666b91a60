//! The `secrets_scan` tool's parameters as written (design 002, 2.4) and its checked action.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

/// What a `secrets_scan` step does with what it finds (design 002, 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScanType {
    /// Report findings.
    Detect,
    /// Report findings and rewrite the files with the secrets replaced.
    Redact,
    /// Same as detect; the result file is the report.
    Report,
}

/// Parameters of the `secrets_scan` tool (design 002, 2.4).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SecretsScanParams {
    /// File or directory to scan, relative to the workspace.
    pub path: String,
    /// Only files matching these globs (comma-separated), e.g. `*.py,*.env`.
    #[serde(default)]
    pub file_pattern: Option<String>,
    /// detect (default) | redact | report.
    #[serde(default)]
    pub scan_type: Option<ScanType>,
    /// Only these rule ids (default: all).
    #[serde(default)]
    pub rules: Option<Vec<String>>,
    /// Globs of paths to leave out.
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Print the findings on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

/// A checked `secrets_scan` step.
#[derive(Debug, Clone)]
pub struct ScanAction {
    /// Relative to the workspace, inside it.
    pub path: PathBuf,
    /// Include globs (empty: everything).
    pub include: Vec<String>,
    /// Exclude globs.
    pub exclude: Vec<String>,
    /// detect | redact | report.
    pub scan_type: ScanType,
    /// Only these rules (None: all).
    pub rules: Option<Vec<String>>,
    /// Print findings at the end.
    pub show_cli: bool,
}
