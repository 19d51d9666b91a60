//! Where a GitLab CI job is: project, merge request, commit, pipeline.
//! Pure: the caller passes the environment lookup.

use super::error::GitlabError;

/// The project, merge request and commit a run publishes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Context {
    /// `CI_PROJECT_ID`, ready for a route (a path has its `/` encoded).
    pub project: String,
    /// `CI_MERGE_REQUEST_IID`, in a merge-request pipeline.
    pub mr: Option<u64>,
    /// `CI_COMMIT_SHA`: the pipeline's commit (a commit status goes on it).
    pub sha: Option<String>,
    /// The merge request's head (`CI_MERGE_REQUEST_SOURCE_BRANCH_SHA` in a
    /// merged-results pipeline, else `CI_COMMIT_SHA`): an approval is for it.
    pub head_sha: Option<String>,
    /// `CI_PIPELINE_ID`: a commit status joins this pipeline.
    pub pipeline: Option<u64>,
    /// `CI_JOB_URL`, else `CI_PIPELINE_URL`: the link in the note and the status.
    pub run_url: Option<String>,
    /// `CI_PROJECT_URL`: the web links of notes.
    pub project_url: Option<String>,
    /// `CI_DEFAULT_BRANCH`: where a merge request plangate opens goes when its declaration names no `base`.
    pub target_branch: Option<String>,
}

fn sha_ok(s: &str) -> bool {
    (40..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A project number, or a `group/sub/project` path with its `/` encoded.
fn project_ok(s: &str) -> Option<String> {
    if !s.is_empty() && s.len() <= 255 && s.bytes().all(|b| b.is_ascii_digit()) {
        return Some(s.to_owned());
    }
    let parts: Vec<&str> = s.split('/').collect();
    let ok = parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && !matches!(*p, "." | "..")
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        });
    ok.then(|| parts.join("%2F"))
}

fn http_url(s: String) -> Option<String> {
    (s.starts_with("https://") || s.starts_with("http://"))
        .then_some(s)
        .filter(|s| !s.contains(char::is_whitespace))
}

impl Context {
    /// From GitLab CI's predefined variables.
    pub(crate) fn from_parts(env: impl Fn(&str) -> Option<String>) -> Result<Context, GitlabError> {
        let get = |k: &str| {
            env(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let raw = get("CI_PROJECT_ID").ok_or(GitlabError::NoProject)?;
        let project = project_ok(&raw).ok_or(GitlabError::BadProject(raw))?;
        let sha = get("CI_COMMIT_SHA").filter(|s| sha_ok(s));
        let head_sha = get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA")
            .filter(|s| sha_ok(s))
            .or_else(|| sha.clone());
        Ok(Context {
            project,
            mr: get("CI_MERGE_REQUEST_IID")
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0),
            sha,
            head_sha,
            pipeline: get("CI_PIPELINE_ID").and_then(|n| n.parse().ok()),
            run_url: get("CI_JOB_URL")
                .and_then(http_url)
                .or_else(|| get("CI_PIPELINE_URL").and_then(http_url)),
            project_url: get("CI_PROJECT_URL")
                .and_then(http_url)
                .map(|u| u.trim_end_matches('/').to_owned()),
            target_branch: get("CI_DEFAULT_BRANCH"),
        })
    }

    pub(crate) fn from_env() -> Result<Context, GitlabError> {
        Context::from_parts(crate::environ::var)
    }

    /// `/projects/ID`.
    pub(crate) fn route(&self) -> String {
        format!("/projects/{}", self.project)
    }

    /// The web link of a merge request (and a note of it).
    pub(crate) fn mr_url(&self, iid: u64, note: Option<u64>) -> Option<String> {
        let base = self.project_url.as_deref()?;
        Some(match note {
            Some(n) => format!("{base}/-/merge_requests/{iid}#note_{n}"),
            None => format!("{base}/-/merge_requests/{iid}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn a_merge_request_pipeline() {
        let c = Context::from_parts(env(&[
            ("CI_PROJECT_ID", "42"),
            ("CI_MERGE_REQUEST_IID", "7"),
            ("CI_COMMIT_SHA", SHA),
            ("CI_PIPELINE_ID", "900"),
            (
                "CI_PIPELINE_URL",
                "https://gitlab.example/p/-/pipelines/900",
            ),
            ("CI_PROJECT_URL", "https://gitlab.example/acme/widgets/"),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.route(), "/projects/42");
        assert_eq!(c.mr, Some(7));
        assert_eq!(c.head_sha.as_deref(), Some(SHA));
        assert_eq!(
            c.run_url.as_deref(),
            Some("https://gitlab.example/p/-/pipelines/900")
        );
        assert_eq!(
            c.mr_url(7, Some(3)).as_deref(),
            Some("https://gitlab.example/acme/widgets/-/merge_requests/7#note_3")
        );
    }

    #[test]
    fn project_ids_are_numbers_or_paths_and_nothing_else() {
        let at = |p: &str| Context::from_parts(env(&[("CI_PROJECT_ID", p)])).map(|c| c.project);
        assert_eq!(
            at("acme/sub/widgets").ok().as_deref(),
            Some("acme%2Fsub%2Fwidgets")
        );
        for bad in ["", "../x", "a/../b", "a b", "42?x=1", "a/", "a%2Fb"] {
            assert!(at(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            Context::from_parts(env(&[])),
            Err(GitlabError::NoProject)
        ));
    }

    #[test]
    fn a_bad_sha_or_iid_is_ignored_not_sent() {
        let c = Context::from_parts(env(&[
            ("CI_PROJECT_ID", "1"),
            ("CI_MERGE_REQUEST_IID", "x"),
            ("CI_COMMIT_SHA", "abc/../x"),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((c.mr, c.sha, c.head_sha), (None, None, None));
    }
}
