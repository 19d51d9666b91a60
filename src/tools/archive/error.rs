//! Why an `archive` step did not complete: the kinds the tool tells apart.
//! The text of each is what the step's `error` and `result.json` say.

use std::error::Error;

/// An archive step's failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArchiveError {
    /// An entry (or the archive) breaks an extraction rule: refused, the destination untouched.
    #[error("{0}")]
    Refused(String),
    /// A limit (`max_total_bytes`, `max_entries`, `max_ratio`) or the stop signal ended the work.
    #[error("{0}")]
    Limit(String),
    /// The parameters cannot be carried out on this workspace or archive.
    #[error("{0}")]
    Params(String),
    /// `exclude_patterns` do not compile.
    #[error(transparent)]
    Excludes(#[from] super::names::ExcludeError),
    /// A workspace path cannot be used.
    #[error(transparent)]
    Path(#[from] crate::tools::WorkspacePathError),
    /// A file operation failed (the error says on what).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// An operation on a file, the archive or a decoder failed.
    #[error("{what}: {source}")]
    Failed {
        /// What was being done, on what.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<dyn Error + Send + Sync>,
    },
}

impl ArchiveError {
    /// `what` failed because of `source`.
    pub(crate) fn failed(
        what: impl Into<String>,
        source: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        ArchiveError::Failed {
            what: what.into(),
            source: source.into(),
        }
    }
}
