//! Placeholder until the parser-based classifier lands: everything is moderate.
use super::Risk;
use std::path::Path;
/// Context.
pub struct ClassifyContext<'a> {
    /// Workspace.
    pub workspace: &'a Path,
    /// Working dir.
    pub working_dir: &'a Path,
    /// Home.
    pub home: Option<&'a Path>,
}
/// Result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// Risk.
    pub risk: Risk,
    /// Blocked.
    pub blocked: Option<String>,
    /// Unclassifiable.
    pub unclassifiable: Option<String>,
    /// Reason.
    pub reason: String,
}
/// Classify.
pub fn classify_bash(command: &str, _ctx: &ClassifyContext<'_>) -> Classification {
    Classification {
        risk: Risk::Moderate,
        blocked: None,
        unclassifiable: None,
        reason: format!("unknown command `{command}`"),
    }
}
