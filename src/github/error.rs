//! Why publishing to GitHub failed. Each failure becomes a `Notice::Failed`
//! (a `::warning::` line and an audit entry); none changes the run's outcome.

/// Why a comment or check run was not published.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GithubError {
    #[error("GITHUB_REPOSITORY is not set")]
    NoRepository,
    #[error("GITHUB_REPOSITORY `{0}` is not OWNER/REPO")]
    BadRepository(String),
    #[error("the GitHub API URL `{url}` is not a URL: {source}")]
    NotAUrl {
        url: String,
        #[source]
        source: http::uri::InvalidUri,
    },
    #[error(
        "the GitHub API URL `{0}` is plain http to another host: the token is only sent over https"
    )]
    PlainHttp(String),
    #[error("the GitHub API URL `{0}` is not an https URL")]
    NotHttps(String),
    #[error("the GitHub API URL `{0}` has a query")]
    Query(String),
    #[error("the GitHub token is empty")]
    EmptyToken,
    #[error(
        "the GitHub token has characters a header cannot carry (spaces, control or non-ASCII characters)"
    )]
    BadToken,
    /// The API refused or could not be reached (status and GitHub's message, one bounded line).
    #[error("{}", super::describe(.0))]
    Api(#[source] octocrab::Error),
    #[error("cannot start the HTTP runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("GitHub did not answer within {0} s")]
    Timeout(u64),
    #[error("the GitHub client crashed")]
    Crashed,
    #[error("cannot start the GitHub client: {0}")]
    Thread(#[source] std::io::Error),
}
