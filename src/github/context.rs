//! Where a GitHub Actions run is: repository, pull request, commit, run page.
//! Pure: the caller passes the environment lookup and the event payload.

use serde_json::Value;

use super::GithubError;

/// The repository, pull request and commit a run publishes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Context {
    /// `GITHUB_REPOSITORY`'s owner.
    pub owner: String,
    /// `GITHUB_REPOSITORY`'s name.
    pub repo: String,
    /// The pull request, when the run is for one.
    pub pr: Option<u64>,
    /// The commit the check run goes on.
    pub sha: Option<String>,
    /// The workflow run's page (`GITHUB_SERVER_URL/OWNER/REPO/actions/runs/GITHUB_RUN_ID`).
    pub run_url: Option<String>,
    /// `GITHUB_SERVER_URL` (default `https://github.com`), no trailing `/`: where
    /// the repository is pushed to (`SERVER/OWNER/REPO.git`).
    pub server_url: String,
}

/// Most bytes of `GITHUB_EVENT_PATH` read (GitHub caps webhook payloads at 25 MB).
pub(crate) const EVENT_MAX: u64 = 25 * 1024 * 1024;

fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn sha_ok(s: &str) -> bool {
    (40..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The pull request number of an event payload: `pull_request.number`
/// (`pull_request*` events), else `issue.number` when the issue is a pull
/// request (`issue_comment` on a pull request).
pub(crate) fn pr_of_event(event: &Value) -> Option<u64> {
    if let Some(n) = event["pull_request"]["number"].as_u64() {
        return Some(n);
    }
    let issue = &event["issue"];
    if issue.get("pull_request").is_some_and(|p| !p.is_null()) {
        return issue["number"].as_u64();
    }
    None
}

/// `refs/pull/N/merge` or `refs/pull/N/head` → N.
pub(crate) fn pr_of_ref(git_ref: &str) -> Option<u64> {
    let rest = git_ref.strip_prefix("refs/pull/")?;
    let (n, tail) = rest.split_once('/')?;
    if !matches!(tail, "merge" | "head") {
        return None;
    }
    n.parse().ok().filter(|&n| n > 0)
}

impl Context {
    /// From the Actions variables (`get`) and the event payload, if any.
    pub(crate) fn from_parts(
        get: impl Fn(&str) -> Option<String>,
        event: Option<&Value>,
    ) -> Result<Context, GithubError> {
        let full = get("GITHUB_REPOSITORY")
            .filter(|s| !s.is_empty())
            .ok_or(GithubError::NoRepository)?;
        let (owner, repo) = full
            .split_once('/')
            .filter(|(o, r)| name_ok(o) && name_ok(r))
            .ok_or_else(|| GithubError::BadRepository(full.clone()))?;
        let pr = event
            .and_then(pr_of_event)
            .or_else(|| get("GITHUB_REF").as_deref().and_then(pr_of_ref));
        let sha = event
            .and_then(|e| e["pull_request"]["head"]["sha"].as_str().map(str::to_owned))
            .or_else(|| get("GITHUB_SHA"))
            .filter(|s| sha_ok(s));
        let server = get("GITHUB_SERVER_URL")
            .filter(|s| s.starts_with("https://") || s.starts_with("http://"))
            .unwrap_or_else(|| "https://github.com".to_owned());
        let run_url = get("GITHUB_RUN_ID")
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
            .map(|id| {
                format!(
                    "{}/{owner}/{repo}/actions/runs/{id}",
                    server.trim_end_matches('/')
                )
            });
        Ok(Context {
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            pr,
            sha,
            run_url,
            server_url: server.trim_end_matches('/').to_owned(),
        })
    }

    /// From the process environment; the payload at `GITHUB_EVENT_PATH` is
    /// read if it is there (at most [`EVENT_MAX`] bytes; an unreadable one
    /// is ignored and `GITHUB_REF` decides).
    pub(crate) fn from_env() -> Result<Context, GithubError> {
        let event = crate::environ::var_os("GITHUB_EVENT_PATH").and_then(|p| {
            use std::io::Read;
            let mut text = Vec::new();
            std::fs::File::open(p)
                .and_then(|f| f.take(EVENT_MAX).read_to_end(&mut text))
                .ok()?;
            serde_json::from_slice::<Value>(&text).ok()
        });
        Context::from_parts(crate::environ::var, event.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn a_pull_request_event() {
        let ev = json!({"pull_request": {"number": 7, "head": {"sha": SHA}}});
        let c = Context::from_parts(
            env(&[
                ("GITHUB_REPOSITORY", "acme/widgets"),
                ("GITHUB_SHA", "ffffffffffffffffffffffffffffffffffffffff"),
                ("GITHUB_RUN_ID", "42"),
            ]),
            Some(&ev),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.owner, "acme");
        assert_eq!(c.repo, "widgets");
        assert_eq!(c.pr, Some(7));
        assert_eq!(
            c.sha.as_deref(),
            Some(SHA),
            "the PR head, not the merge commit"
        );
        assert_eq!(
            c.run_url.as_deref(),
            Some("https://github.com/acme/widgets/actions/runs/42")
        );
    }

    #[test]
    fn issue_comments_on_pull_requests_and_pull_refs() {
        let on_pr = json!({"issue": {"number": 9, "pull_request": {"url": "x"}}});
        let on_issue = json!({"issue": {"number": 9}});
        assert_eq!(pr_of_event(&on_pr), Some(9));
        assert_eq!(pr_of_event(&on_issue), None);
        assert_eq!(pr_of_ref("refs/pull/12/merge"), Some(12));
        assert_eq!(pr_of_ref("refs/pull/12/head"), Some(12));
        assert_eq!(pr_of_ref("refs/heads/main"), None);
        assert_eq!(pr_of_ref("refs/pull/x/merge"), None);
        let c = Context::from_parts(
            env(&[
                ("GITHUB_REPOSITORY", "a/b"),
                ("GITHUB_REF", "refs/pull/3/merge"),
                ("GITHUB_SHA", SHA),
            ]),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((c.pr, c.sha.as_deref()), (Some(3), Some(SHA)));
    }

    #[test]
    fn a_push_has_no_pull_request_and_bad_values_are_refused() {
        let push = json!({"ref": "refs/heads/main", "after": SHA});
        let c = Context::from_parts(
            env(&[("GITHUB_REPOSITORY", "a/b"), ("GITHUB_SHA", SHA)]),
            Some(&push),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.pr, None);
        assert_eq!(c.run_url, None);
        for bad in ["", "noslash", "a/b/c", "a/", "../x", "a/b c"] {
            assert!(
                Context::from_parts(env(&[("GITHUB_REPOSITORY", bad)]), None).is_err(),
                "{bad}"
            );
        }
        let c = Context::from_parts(
            env(&[("GITHUB_REPOSITORY", "a/b"), ("GITHUB_SHA", "not-a-sha")]),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.sha, None);
    }
}
