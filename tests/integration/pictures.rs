//! What each example job publishes, as it looks: every job under
//! `examples/jobs/` run by the real binary under GitHub Actions against a
//! stand-in GitHub API (wiremock), and the bodies plangate sent written as
//! Markdown to `docs/guide/publish-examples.md`. The file must match; after a
//! change, `PLANGATE_WRITE_DOCS=1 cargo test --test integration pictures`
//! rewrites it. Only the run id and the durations are normalised.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::forge::rt;
use crate::harness::{Env, code, stderr};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const DOC: &str = "docs/guide/publish-examples.md";
const TOKEN: &str = "plangate-pictures-token-3e9b1c7a5d2f";
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// The stand-in GitHub API: every list is empty, every write succeeds.
async fn stand_in() -> MockServer {
    let server = MockServer::start().await;
    let ok = |v: Value| ResponseTemplate::new(201).set_body_json(v);
    for (verb, route, reply) in [
        (
            "GET",
            r".*",
            ResponseTemplate::new(200).set_body_json(json!([])),
        ),
        (
            "POST",
            r"/pulls/\d+/reviews$",
            ok(
                json!({"id": 80, "html_url": "https://github.example/acme/widgets/pull/7#pullrequestreview-80"}),
            ),
        ),
        ("POST", r"/issues/\d+/labels$", ok(json!([]))),
        (
            "POST",
            r"/pulls$",
            ok(json!({"number": 13, "html_url": "https://github.example/acme/widgets/pull/13"})),
        ),
        ("POST", r"/pulls/\d+/requested_reviewers$", ok(json!({}))),
        (
            "POST",
            r"/issues/\d+/comments$",
            ok(
                json!({"id": 555, "html_url": "https://github.example/acme/widgets/pull/7#issuecomment-555"}),
            ),
        ),
        (
            "POST",
            r"/issues$",
            ok(
                json!({"id": 900, "number": 12, "html_url": "https://github.example/acme/widgets/issues/12"}),
            ),
        ),
        (
            "POST",
            r"/check-runs$",
            ok(json!({"id": 99, "html_url": "https://github.example/acme/widgets/runs/99"})),
        ),
    ] {
        Mock::given(method(verb))
            .and(path_regex(route))
            .respond_with(reply)
            .mount(&server)
            .await;
    }
    server
}

/// Run job `name` (its setup.sh first) under GitHub Actions on `event`.
fn run_job(name: &str, event: &Value) -> (Env, Vec<Request>) {
    let rt = rt();
    let server = rt.block_on(stand_in());
    let env = Env::new();
    let dir = Path::new(ROOT).join("examples/jobs").join(name);
    let setup = std::process::Command::new("bash")
        .arg(dir.join("setup.sh"))
        .arg(&env.ws)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(setup.status.success(), "{}", stderr(&setup));
    // The repository's remote: the workspace's first commit is its `main`,
    // served over smart HTTP requiring the token (plangate pushes there).
    let remote = crate::git_remote::Remote::new(TOKEN);
    if env.ws.join(".git").exists() {
        crate::git_remote::git(
            &env.ws,
            &[
                "push",
                "-q",
                "-f",
                remote.bare.to_str().unwrap_or(""),
                "HEAD:main",
            ],
        );
    }
    let event_path = env.ws.parent().unwrap_or(&env.ws).join("github-event.json");
    std::fs::write(&event_path, event.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let mut c = env.cmd();
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") {
            c.env_remove(k);
        }
    }
    c.arg("run")
        .arg(dir.join("plan.yaml"))
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(&env.out)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_SHA", SHA)
        .env("GITHUB_SERVER_URL", &remote.url)
        .env("GITHUB_RUN_ID", "4242")
        .env("GITHUB_API_URL", "https://api.github.invalid")
        .env("PLANGATE_GITHUB_TOKEN", TOKEN)
        .env("PLANGATE_GITHUB_API_URL", server.uri())
        .timeout(std::time::Duration::from_secs(120));
    let o = c.output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
    let all = rt.block_on(server.received_requests()).unwrap_or_default();
    for r in &all {
        assert!(
            !String::from_utf8_lossy(&r.body).contains(TOKEN),
            "{name}: token sent in a body"
        );
    }
    // No step saw the token: it is in no artifact, report or log.
    let mut stack = vec![env.out.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read(&p) {
                assert!(
                    !String::from_utf8_lossy(&text).contains(TOKEN),
                    "{name}: token in {}",
                    p.display()
                );
            }
        }
    }
    let reqs = all
        .into_iter()
        .filter(|r| r.method.as_str() != "GET")
        .collect();
    (env, reqs)
}

fn body(r: &Request) -> Value {
    r.body_json().unwrap_or_else(|e| panic!("{}: {e}", r.url))
}

fn sent<'a>(reqs: &'a [Request], tail: &str) -> Vec<&'a Request> {
    reqs.iter()
        .filter(|r| r.url.path().ends_with(tail))
        .collect()
}

/// `text` as a Markdown block quote (GitHub renders headings and tables in it).
fn quote(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                ">\n".to_owned()
            } else {
                format!("> {l}\n")
            }
        })
        .collect()
}

/// The run id and durations, which change from run to run, made stable.
fn normalise(text: &str, env: &Env) -> String {
    let run = env.report()["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let text = text.replace(&run, "RUN");
    let secs = regex::Regex::new(r"\b\d+\.\d+ s\b").unwrap_or_else(|e| panic!("{e}"));
    let text = secs.replace_all(&text, "0.1 s");
    // Whether the sandbox is enforced depends on the machine that renders.
    let sandbox = regex::Regex::new(r"sandbox [^|;]*").unwrap_or_else(|e| panic!("{e}"));
    let text = sandbox.replace_all(&text, "");
    // The stand-in git server's address is GitHub's.
    let server = regex::Regex::new(r"http://127\.0\.0\.1:\d+").unwrap_or_else(|e| panic!("{e}"));
    server
        .replace_all(&text, "https://github.example")
        .into_owned()
}

/// The accepted pull-request request of the run and its row.
fn pull_request_picture(env: &Env, reqs: &[Request], job: &str) -> String {
    let report = env.report();
    let row = report["publish"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["kind"] == "pull_request")
        .unwrap_or_else(|| panic!("{job}: no pull_request row: {}", report["publish"]))
        .clone();
    let check = sent(reqs, "/check-runs");
    let summary = check
        .first()
        .map(|c| {
            body(c)["output"]["summary"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_default();
    let labels: Vec<String> = row["labels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|l| format!("`{l}`"))
        .collect();
    let mut out = format!(
        "### The pull request\n\nState in the report: `{}`{}. Labels: {}.\n\n",
        row["state"].as_str().unwrap_or_default(),
        if row["draft"] == true {
            ", opened as a **draft**"
        } else {
            ""
        },
        labels.join(", ")
    );
    out.push_str(&format!(
        "Why: {}\n\n",
        row["reason"].as_str().unwrap_or_default()
    ));
    let text = match sent(reqs, "/pulls").first() {
        Some(p) => {
            let b = body(p);
            format!(
                "**{}** (`{}` into `{}`{})\n\n{}",
                b["title"].as_str().unwrap_or_default(),
                b["head"].as_str().unwrap_or_default(),
                b["base"].as_str().unwrap_or_default(),
                if b["draft"] == true { ", draft" } else { "" },
                b["body"].as_str().unwrap_or_default(),
            )
        }
        None => {
            let req = &row["request"];
            format!(
                "**{}**\n\n{}\n\n{}",
                req["title"].as_str().unwrap_or_default(),
                req["body"].as_str().unwrap_or_default(),
                summary
            )
        }
    };
    out.push_str(&quote(&text));
    out.push('\n');
    out
}

fn check_run_picture(reqs: &[Request]) -> String {
    let mut out = String::new();
    for c in sent(reqs, "/check-runs") {
        let b = body(c);
        out.push_str(&format!(
            "### The check run `{}`: {}\n\nTitle: {}\n\n",
            b["name"].as_str().unwrap_or_default(),
            b["conclusion"].as_str().unwrap_or_default(),
            b["output"]["title"].as_str().unwrap_or_default()
        ));
    }
    out
}

fn render() -> String {
    let mut doc = String::from(
        "# What the example jobs publish\n\n\
         <!-- Generated by tests/integration/pictures.rs: do not edit. After a change, \
         PLANGATE_WRITE_DOCS=1 cargo test --test integration pictures -->\n\n\
         Each job of [examples/jobs](../../examples/jobs/) was run by `plangate run` under \
         GitHub Actions against a stand-in GitHub API, with its agents replayed from the \
         job's `answers.jsonl`; below is what plangate sent, as GitHub renders it (only the \
         run id and the durations are normalised). How it works: [publish.md](publish.md).\n\n",
    );
    // pr-review: on pull request 7.
    let event = json!({"number": 7, "pull_request": {"number": 7, "head": {"sha": SHA}}});
    let (env, reqs) = run_job("pr-review", &event);
    doc.push_str("## pr-review: an agent reviews pull request #7\n\n");
    let review = sent(&reqs, "/reviews");
    assert_eq!(review.len(), 1, "{reqs:?}");
    let r = body(review[0]);
    doc.push_str(&format!(
        "### The review: `{}`\n\n{}\n",
        r["event"].as_str().unwrap_or_default(),
        quote(r["body"].as_str().unwrap_or_default())
    ));
    for c in r["comments"].as_array().into_iter().flatten() {
        doc.push_str(&format!(
            "Inline, on `{}` line {}:\n\n{}\n",
            c["path"].as_str().unwrap_or_default(),
            c["line"],
            quote(c["body"].as_str().unwrap_or_default())
        ));
    }
    for l in sent(&reqs, "/labels") {
        let names: Vec<String> = body(l)["labels"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|n| format!("`{n}`"))
            .collect();
        doc.push_str(&format!("### The label: {}\n\n", names.join(", ")));
    }
    for c in sent(&reqs, "/comments") {
        doc.push_str("### The run-summary comment\n\n");
        doc.push_str(&quote(&normalise(
            body(c)["body"].as_str().unwrap_or_default(),
            &env,
        )));
        doc.push('\n');
    }
    doc.push_str(&normalise(&check_run_picture(&reqs), &env));
    // The nightly jobs: a push to main (no pull request to comment on).
    let event = json!({"ref": "refs/heads/main", "after": SHA});
    for (job, what) in [
        ("lint-fix", "the nightly lint fix"),
        ("dependency-batch", "the monthly dependency batch"),
    ] {
        let (env, reqs) = run_job(job, &event);
        doc.push_str(&format!("## {job}: {what}\n\n"));
        doc.push_str(
            "plangate committed the run's changes, pushed the branch to the repository \
             (a stand-in git server that requires the token) and opened the pull request; \
             its body is the plan's marker, the request's text and the run summary, as \
             composed before publishing (so its own Publish table still says \
             `would_publish`).\n\n",
        );
        doc.push_str(&normalise(&pull_request_picture(&env, &reqs, job), &env));
        for i in sent(&reqs, "/issues") {
            let b = body(i);
            let labels: Vec<String> = b["labels"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|n| format!("`{n}`"))
                .collect();
            doc.push_str(&format!(
                "### An issue (labels {})\n\n{}\n",
                labels.join(", "),
                quote(&format!(
                    "**{}**\n\n{}",
                    b["title"].as_str().unwrap_or_default(),
                    b["body"].as_str().unwrap_or_default()
                ))
            ));
        }
        doc.push_str(&normalise(&check_run_picture(&reqs), &env));
    }
    doc.trim_end().to_owned() + "\n"
}

#[test]
fn the_published_pictures_in_the_guide_are_what_the_jobs_send() {
    let doc = render();
    let file = Path::new(ROOT).join(DOC);
    if std::env::var("PLANGATE_WRITE_DOCS").as_deref() == Ok("1") {
        std::fs::write(&file, &doc).unwrap_or_else(|e| panic!("{e}"));
    }
    let have = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        have == doc,
        "{DOC} is stale: run `PLANGATE_WRITE_DOCS=1 cargo test --test integration pictures`\n--- generated ---\n{doc}"
    );
    // Not vacuous: each kind is there.
    for want in [
        "### The review: `REQUEST_CHANGES`",
        "Inline, on `lib/math.sh` line 4",
        "### The label: `needs-changes`",
        "### The run-summary comment",
        "**[lint] Fix the linter warnings in docs/**",
        "**[deps] Update dependencies**",
        "opened as a **draft**",
        "**[deps] web: the dependency update fails its tests**",
    ] {
        assert!(doc.contains(want), "`{want}` missing:\n{doc}");
    }
}
