//! Why a command failed, as one typed enum, and the one function that maps a
//! failure to SPEC's exit code ([`Error::process_exit_code`]).
//!
//! Command handlers return `Result<RunStatus, Error>`: an outcome the run
//! itself reached (success, failed steps, denials, secrets found) is a
//! [`RunStatus`]; a command that could not do its job is an [`Error`]. No
//! handler writes a literal exit code: [`crate::run`] turns both into one
//! through [`RunStatus::code`] (SPEC's table) and this file.

use std::path::PathBuf;

use crate::model::Diagnostic;
use crate::model::RunStatus;

/// A command that could not do its job.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Plan or usage problems, located; nothing was executed.
    #[error("{} problem(s) found; nothing was executed", .0.len())]
    Invalid(Vec<Diagnostic>),
    /// A saved report could not be read or parsed.
    #[error(transparent)]
    Report(#[from] crate::integrations::ReadReportError),
    /// `scan`: rules, baseline or paths refused.
    #[error(transparent)]
    Scan(#[from] crate::scan::ScanError),
    /// `shard`: the plan cannot be cut as asked.
    #[error(transparent)]
    Shard(#[from] crate::shard::ShardError),
    /// `merge`: the shard reports do not fit together.
    #[error("merge: {0}")]
    Merge(#[from] crate::merge::MergeError),
    /// An output file or folder of `merge` could not be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteOutput {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The drafted plan could not be written.
    #[error("cannot write {}: {source}", path.display())]
    WriteDraft {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// stdout is closed or full.
    #[error("cannot write to stdout: {0}")]
    Stdout(#[source] std::io::Error),
    /// The async runtime did not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// `draft`: every answer was refused.
    #[error("no plan written: {why}; evidence in {}", evidence.display())]
    DraftRejected { why: String, evidence: PathBuf },
    /// `draft`: the agent could not be asked.
    #[error("no plan written: {0}")]
    DraftFailed(String),
    /// `report --publish-github` without a token.
    #[error("--publish-github needs a token (PLANGATE_GITHUB_TOKEN or --github-token)")]
    NoToken,
    /// `report --publish-github`: a publication failed (already printed as a warning).
    #[error("publishing the report to GitHub failed")]
    PublishFailed,
    /// `__sandbox-exec`: the command was not run (its reason).
    #[error("{0}")]
    SandboxExec(String),
    /// plangate itself is broken: the built-in secret rules do not compile.
    #[error("internal error: {0}")]
    Internal(#[from] crate::redact::BrokenRules),
}

impl Error {
    /// The process exit code: SPEC's table through [`RunStatus::code`]; the
    /// only code outside it is 126 for `__sandbox-exec` (the shell's "cannot
    /// execute", what a wrapped command's caller expects).
    pub(crate) fn process_exit_code(&self) -> u8 {
        match self {
            Error::SandboxExec(_) => 126,
            other => other.status().code(),
        }
    }

    /// The run outcome this failure counts as.
    pub(crate) fn status(&self) -> RunStatus {
        match self {
            Error::Invalid(_)
            | Error::Report(_)
            | Error::Scan(_)
            | Error::Shard(_)
            | Error::Merge(_)
            | Error::WriteOutput { .. }
            | Error::NoToken => RunStatus::Invalid,
            Error::DraftRejected { .. } => RunStatus::Rejected,
            Error::WriteDraft { .. }
            | Error::Stdout(_)
            | Error::Runtime(_)
            | Error::DraftFailed(_)
            | Error::PublishFailed
            | Error::SandboxExec(_)
            | Error::Internal(_) => RunStatus::Failed,
        }
    }

    /// Say it on stderr (through [`crate::output`], so redacted).
    pub(crate) fn display_to_stderr(&self) {
        match self {
            Error::Invalid(diags) => crate::output::diagnostics(diags),
            // Each failed publication was already a `::warning::` line.
            Error::PublishFailed => {}
            Error::Internal(_) => crate::output::line(format_args!("plangate: {self}")),
            other => crate::output::error(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_map_to_spec_codes() {
        assert_eq!(Error::Invalid(Vec::new()).process_exit_code(), 2);
        assert_eq!(Error::NoToken.process_exit_code(), 2);
        let rejected = Error::DraftRejected {
            why: "x".into(),
            evidence: PathBuf::new(),
        };
        assert_eq!(rejected.process_exit_code(), 5);
        assert_eq!(Error::DraftFailed("x".into()).process_exit_code(), 1);
        assert_eq!(Error::SandboxExec("x".into()).process_exit_code(), 126);
        let internal = Error::Internal(crate::redact::BrokenRules::Scanner("x".into()));
        assert_eq!(internal.process_exit_code(), 1);
    }
}
