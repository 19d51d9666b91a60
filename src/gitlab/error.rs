//! Why publishing to GitLab failed. A failure withholds the row it was for
//! (or is a warning for the run-summary note); none changes the run's outcome.

/// What a CI job token cannot do, said where a job token was refused.
pub(crate) const JOB_TOKEN_HELP: &str = "a CI job token (CI_JOB_TOKEN) cannot call GitLab's notes, discussions, approvals, merge requests, issues, labels or commit statuses endpoints; give a project or personal access token with the `api` scope as GITLAB_TOKEN (or PLANGATE_GITLAB_TOKEN)";

/// Why a note, a status or a row was not published.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitlabError {
    #[error("CI_PROJECT_ID is not set")]
    NoProject,
    #[error("CI_PROJECT_ID `{0}` is neither a project number nor a path")]
    BadProject(String),
    #[error(
        "no GitLab API URL: neither --gitlab-api-url (PLANGATE_GITLAB_API_URL) nor CI_API_V4_URL is set"
    )]
    NoApiUrl,
    #[error("the GitLab API URL `{0}` is not a URL")]
    NotAUrl(String),
    #[error(
        "the GitLab API URL `{0}` is plain http to another host: the token is only sent over https"
    )]
    PlainHttp(String),
    #[error("the GitLab API URL `{0}` is not an https URL")]
    NotHttps(String),
    #[error("the GitLab API URL `{0}` has a query")]
    Query(String),
    #[error(
        "the GitLab token has characters a header cannot carry (spaces, control or non-ASCII characters)"
    )]
    BadToken,
    /// GitLab answered with an error status (its message, one bounded line).
    #[error("HTTP {status}: {message}{}", job_help(*status, *job_token))]
    Http {
        status: u16,
        message: String,
        job_token: bool,
    },
    #[error("connection: {0}")]
    Network(String),
    #[error("unexpected answer: {0}")]
    BadJson(String),
    #[error("GitLab did not answer within {0} s")]
    Timeout(u64),
    #[error("the GitLab client crashed")]
    Crashed,
    #[error("cannot start the GitLab client: {0}")]
    Thread(#[source] std::io::Error),
}

fn job_help(status: u16, job_token: bool) -> String {
    if job_token && matches!(status, 401 | 403 | 404) {
        format!(" ({JOB_TOKEN_HELP})")
    } else {
        String::new()
    }
}

impl GitlabError {
    /// The HTTP status GitLab answered, if it answered.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            GitlabError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}
