//! What the publishing tests share, whichever forge they stand in for
//! (github.rs, publish.rs, publish_pr.rs, gitlab.rs, gitlab_review.rs,
//! pictures.rs): the runtime that drives the stand-in API (wiremock) and its
//! routes ([`serve`]), plans
//! that declare `publish`, the request line a step writes, `plangate run`
//! with the real CI's variables cleared, and reading back what plangate sent
//! and what the report says it published.

use assert_cmd::Command;
use serde_json::Value;
use wiremock::{MockServer, Request};

use crate::harness::Env;

/// A runtime for the stand-in API (its mocks are mounted and read through it).
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A plan declaring `publish` (YAML flow text) with bash steps `(id, command)`,
/// at `risk_tolerance: medium`.
pub fn plan(publish: &str, steps: &[(&str, &str)]) -> String {
    plan_with(publish, "risk_tolerance: medium", steps)
}

/// [`plan`] with `policy` (the inside of its flow mapping).
pub fn plan_with(publish: &str, policy: &str, steps: &[(&str, &str)]) -> String {
    let mut s = format!("version: 1\nid: pub\npolicy: {{{policy}}}\npublish: {publish}\nsteps:\n");
    for (id, cmd) in steps {
        s.push_str(&format!(
            "  - id: {id}\n    tool: bash\n    parameters:\n      command: |\n"
        ));
        for line in cmd.lines() {
            s.push_str(&format!("        {line}\n"));
        }
    }
    s
}

/// `printf` of one request line into `$PLANGATE_REQUESTS`.
pub fn ask(json: &str) -> String {
    format!("printf '%s\\n' '{json}' >> \"$PLANGATE_REQUESTS\"")
}

/// The report's `publish` rows.
pub fn rows(env: &Env) -> Vec<Value> {
    env.report()["publish"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// plangate's command with every variable of the real CI whose name starts
/// with one of `prefixes` removed (the test sets its own).
pub fn ci_cmd(env: &Env, prefixes: &[&str]) -> Command {
    let mut c = env.cmd();
    for (k, _) in std::env::vars() {
        if prefixes.iter().any(|p| k.starts_with(p)) {
            c.env_remove(k);
        }
    }
    c
}

/// Every request the stand-in API received, in order.
pub fn requests(rt: &tokio::runtime::Runtime, server: &MockServer) -> Vec<Request> {
    rt.block_on(server.received_requests())
        .unwrap_or_else(|| panic!("request recording is on"))
}

/// The JSON body of the first request `verb route` in `reqs`.
pub fn body_of(reqs: &[Request], verb: &str, route: &str) -> Value {
    reqs.iter()
        .find(|r| r.method.as_str() == verb && r.url.path() == route)
        .unwrap_or_else(|| panic!("no {verb} {route}"))
        .body_json()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The JSON body of the first request `verb route` the API received.
pub fn sent(rt: &tokio::runtime::Runtime, api: &MockServer, verb: &str, route: &str) -> Value {
    body_of(&requests(rt, api), verb, route)
}

/// Every request but a GET, as `METHOD path`.
pub fn writes(rt: &tokio::runtime::Runtime, api: &MockServer) -> Vec<String> {
    requests(rt, api)
        .iter()
        .filter(|r| r.method.as_str() != "GET")
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect()
}

/// One route of a stand-in API: verb, path, status, JSON body, and how many
/// requests it must get (`rt.block_on(api.verify())` checks; None: any).
pub type Route = (&'static str, String, u16, Value, Option<u64>);

/// A stand-in API answering `routes` ([`mount`]).
pub fn serve(rt: &tokio::runtime::Runtime, routes: Vec<Route>) -> MockServer {
    let api = rt.block_on(MockServer::start());
    mount(rt, &api, routes);
    api
}

/// Mount `routes` on `api` in order, after what it has (where two match a
/// request, the first mounted answers).
pub fn mount(rt: &tokio::runtime::Runtime, api: &MockServer, routes: Vec<Route>) {
    rt.block_on(async {
        for (verb, route, status, body, calls) in routes {
            let m = crate::harness::mock(verb, route, status, Some(body));
            match calls {
                Some(n) => m.expect(n).mount(api).await,
                None => m.mount(api).await,
            }
        }
    });
}
