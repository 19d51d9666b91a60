//! The merge-request half of a `pull_request` (`merge_request`) row: given a
//! branch plangate has already pushed, open the merge request from it, or
//! update the open one from that branch (idempotent by source branch). The
//! push itself is `publish::push`'s, called by `change`.

use serde_json::{Value, json};

use super::client::Client;
use super::{Context, GitlabError};

/// GitLab marks a draft by this title prefix.
const DRAFT: &str = "Draft: ";

/// What to open.
pub(crate) struct MergeRequest<'a> {
    /// The branch already pushed.
    pub source_branch: &'a str,
    /// The hidden marker its description starts with (an open one is taken over only with it).
    pub mark: &'a str,
    /// The target (the declaration's `base`, else the context's target branch).
    pub target_branch: Option<&'a str>,
    pub title: &'a str,
    /// The request's body followed by the run summary.
    pub description: &'a str,
    pub labels: &'a [String],
    pub draft: bool,
}

/// The open merge request from `branch`, if any.
pub(crate) fn find_open(
    client: &Client,
    ctx: &Context,
    branch: &str,
    mark: &str,
) -> Result<Option<Value>, String> {
    let list = format!("{}/merge_requests", ctx.route());
    client
        .find(
            &format!("{list}?state=opened&source_branch={}", url_query(branch)),
            |v| {
                // Only this project's own branch (a fork's merge request can
                // use the same branch name) and one plangate opened (its marker).
                v["source_branch"].as_str() == Some(branch)
                    && v["source_project_id"].is_u64()
                    && v["source_project_id"] == v["target_project_id"]
                    && v["description"]
                        .as_str()
                        .is_some_and(|d| d.starts_with(mark))
            },
        )
        .map_err(|e: GitlabError| e.to_string())
}

/// Open or update the merge request from `m.source_branch`. Ok: its web URL and iid.
pub(crate) fn upsert(
    client: &Client,
    ctx: &Context,
    m: &MergeRequest<'_>,
) -> Result<(Option<String>, Option<u64>), String> {
    let err = |e: GitlabError| e.to_string();
    let target = m
        .target_branch
        .or(ctx.target_branch.as_deref())
        .ok_or("no target branch: declare `base`, or run where CI_DEFAULT_BRANCH is set")?;
    if m.labels.iter().any(|l| l.contains(',')) {
        return Err("a label holds a comma, which GitLab reads as two labels".into());
    }
    let title = match (m.draft, m.title.starts_with(DRAFT)) {
        (true, false) => format!("{DRAFT}{}", m.title),
        _ => m.title.to_owned(),
    };
    let list = format!("{}/merge_requests", ctx.route());
    let open = find_open(client, ctx, m.source_branch, m.mark)?;
    let labels = m.labels.join(",");
    let v: Value = match open.and_then(|v| v["iid"].as_u64()) {
        Some(iid) => client
            .put(
                &format!("{list}/{iid}"),
                &json!({"title": title, "description": m.description, "add_labels": labels}),
            )
            .map_err(err)?,
        None => client
            .post(
                &list,
                &json!({
                    "source_branch": m.source_branch,
                    "target_branch": target,
                    "title": title,
                    "description": m.description,
                    "labels": labels,
                    "remove_source_branch": true,
                }),
            )
            .map_err(err)?,
    };
    Ok((v["web_url"].as_str().map(str::to_owned), v["iid"].as_u64()))
}

/// A query value, percent-encoded (a branch name may hold `/`, `#`, `&`).
fn url_query(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gitlab::TokenKind;
    use wiremock::matchers::{method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    #[test]
    fn branch_names_are_encoded_in_the_query() {
        assert_eq!(url_query("plangate/p/r#1&x"), "plangate%2Fp%2Fr%231%26x");
    }

    /// Opened once, then found by its source branch and updated, never opened twice.
    #[test]
    fn a_merge_request_is_opened_then_updated_by_its_source_branch() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx = Context::from_parts(|k| {
            [("CI_PROJECT_ID", "5"), ("CI_DEFAULT_BRANCH", "main")]
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let labels = vec!["bot".to_owned()];
        let m = MergeRequest {
            source_branch: "plangate/p/r1",
            mark: "<!-- m -->",
            target_branch: None,
            title: "[bot] fix",
            description: "<!-- m -->\nbody",
            labels: &labels,
            draft: true,
        };
        let mr = |source: u64, description: &str| {
            json!([{"iid": 9, "source_branch": "plangate/p/r1", "source_project_id": source,
                    "target_project_id": 5, "description": description}])
        };
        for (open, verb, route) in [
            (json!([]), "POST", "/api/v4/projects/5/merge_requests"),
            (
                mr(5, "<!-- m -->\nbody"),
                "PUT",
                "/api/v4/projects/5/merge_requests/9",
            ),
            // A fork's merge request from a branch of the same name, or one
            // plangate did not open: never taken over.
            (
                mr(6, "<!-- m -->\nbody"),
                "POST",
                "/api/v4/projects/5/merge_requests",
            ),
            (
                mr(5, "a person's"),
                "POST",
                "/api/v4/projects/5/merge_requests",
            ),
        ] {
            let server = rt.block_on(MockServer::start());
            rt.block_on(async {
                Mock::given(method("GET"))
                    .and(path("/api/v4/projects/5/merge_requests"))
                    .and(query_param("source_branch", "plangate/p/r1"))
                    .respond_with(ResponseTemplate::new(200).set_body_json(open))
                    .mount(&server)
                    .await;
                Mock::given(method(verb))
                    .and(path(route))
                    .respond_with(
                        ResponseTemplate::new(200)
                            .set_body_json(json!({"iid": 9, "web_url": "https://gl.example/mr/9"})),
                    )
                    .expect(1)
                    .mount(&server)
                    .await;
            });
            let client = Client::new(
                format!("{}/api/v4", server.uri()),
                "glpat-test".into(),
                TokenKind::Private,
                std::time::Duration::from_secs(20),
            );
            let got = upsert(&client, &ctx, &m).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(got, (Some("https://gl.example/mr/9".into()), Some(9)));
            let reqs = rt.block_on(server.received_requests()).unwrap_or_default();
            let sent = reqs
                .iter()
                .find(|r| r.method.as_str() == verb)
                .unwrap_or_else(|| panic!("no {verb}"));
            let body: Value = sent.body_json().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(body["title"], "Draft: [bot] fix");
            if verb == "POST" {
                assert_eq!(body["target_branch"], "main");
                assert_eq!(body["source_branch"], "plangate/p/r1");
            }
            rt.block_on(server.verify());
        }
    }
}
