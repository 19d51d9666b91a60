//! `http_request` against real local HTTP servers the test starts: the case
//! table `tests/fixtures/tools/http_request.json` (server scripts, parameters,
//! expectations on the step, its `result.json` and what each server received),
//! then the allow-list, the risk gate and the secrets sweep.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Env, code, read_json, stderr};

/// One request as a server received it.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    /// Path and query as sent.
    target: String,
    /// Lowercase names.
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// A scripted HTTP/1.1 server on 127.0.0.1: routes by path (query ignored),
/// one thread per connection, `Connection: close`, every request recorded.
struct Server {
    received: Arc<Mutex<Vec<Received>>>,
}

impl Server {
    /// Start with a route table; `{a}`/`{b}` in routes are filled by `fill` once all servers are bound.
    fn start(listener: TcpListener, routes: Value) -> Server {
        let received = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&received);
        let routes = Arc::new(routes);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (seen, routes) = (Arc::clone(&seen), Arc::clone(&routes));
                std::thread::spawn(move || serve(stream, &routes, &seen));
            }
        });
        Server { received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, routes: &Value, seen: &Mutex<Vec<Received>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    let _ = reader.read_exact(&mut body);
    seen.lock().unwrap().push(Received {
        method,
        target: target.clone(),
        headers,
        body,
    });
    let path = target.split('?').next().unwrap_or("");
    let route = routes
        .get(path)
        .cloned()
        .unwrap_or_else(|| json!({"status": 404, "body": format!("no route for {path}")}));
    if let Some(ms) = route["delay_ms"].as_u64() {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let payload: Vec<u8> = if let Some(r) = route.get("repeat") {
        r["text"]
            .as_str()
            .unwrap()
            .repeat(r["times"].as_u64().unwrap() as usize)
            .into_bytes()
    } else if let Some(bytes) = route["bytes"].as_array() {
        bytes.iter().map(|b| b.as_u64().unwrap() as u8).collect()
    } else {
        route["body"].as_str().unwrap_or("").as_bytes().to_vec()
    };
    let status = route["status"].as_u64().unwrap_or(200);
    let mut head = format!(
        "HTTP/1.1 {status} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n",
        payload.len()
    );
    if let Some(h) = route["headers"].as_object() {
        for (k, v) in h {
            match v {
                Value::Array(items) => {
                    for i in items {
                        head.push_str(&format!("{k}: {}\r\n", i.as_str().unwrap()));
                    }
                }
                _ => head.push_str(&format!("{k}: {}\r\n", v.as_str().unwrap())),
            }
        }
    }
    head.push_str("\r\n");
    let mut stream = reader.into_inner();
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&payload);
    let _ = stream.flush();
}

/// Both servers of the table: `a` is reached as 127.0.0.1, `b` as `localhost`
/// on another port (another origin).
struct Servers {
    a: Server,
    b: Server,
    base_a: String,
    base_b: String,
}

impl Servers {
    fn start(routes: &Value) -> Servers {
        let la = TcpListener::bind("127.0.0.1:0").unwrap();
        let lb = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_a = format!("http://127.0.0.1:{}", la.local_addr().unwrap().port());
        let base_b = format!("http://localhost:{}", lb.local_addr().unwrap().port());
        let fill = |v: &Value| fill(v, &base_a, &base_b);
        let a = Server::start(la, fill(&routes["a"]));
        let b = Server::start(lb, fill(&routes["b"]));
        Servers {
            a,
            b,
            base_a,
            base_b,
        }
    }

    fn fill(&self, v: &Value) -> Value {
        fill(v, &self.base_a, &self.base_b)
    }

    fn server(&self, name: &str) -> &Server {
        match name {
            "a" => &self.a,
            "b" => &self.b,
            other => panic!("no server {other}"),
        }
    }
}

/// Replace `{a}`, `{b}` (base URLs), `{port_a}` and `{port_b}` in every string of a JSON value.
fn fill(v: &Value, a: &str, b: &str) -> Value {
    let port_a = a.rsplit(':').next().unwrap_or("");
    let port_b = b.rsplit(':').next().unwrap_or("");
    match v {
        Value::String(s) => Value::String(
            s.replace("{a}", a)
                .replace("{b}", b)
                .replace("{port_a}", port_a)
                .replace("{port_b}", port_b),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| fill(i, a, b)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.replace("{a}", a).replace("{b}", b), fill(v, a, b)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn table() -> Value {
    read_json(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tools/http_request.json"),
    )
}

/// Run a plan (JSON is YAML) written next to the workspace.
fn run_plan(env: &Env, plan: &Value, args: &[&str]) -> std::process::Output {
    let path = env.ws.parent().unwrap().join("http-plan.yaml");
    std::fs::write(&path, plan.to_string()).unwrap();
    env.cmd()
        .arg("run")
        .arg(&path)
        .args([
            "--workspace",
            env.ws.to_str().unwrap(),
            "--out",
            env.out.to_str().unwrap(),
        ])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

/// The tests' operator policy with `allowed_hosts` naming the local servers:
/// an address that is not public (loopback here) is reached only where the
/// operator's policy names it. `--policy PATH`, for [`run_plan`].
fn local_policy(env: &Env) -> Vec<&'static str> {
    let p = env.tmp().join("operator-policy-loopback.yaml");
    std::fs::write(
        &p,
        format!(
            "{}allowed_hosts: [127.0.0.1, localhost, no-such-host.invalid]\n",
            crate::harness::OPERATOR_POLICY_YAML
        ),
    )
    .unwrap();
    // Leaked: one short string per test, for the `&[&str]` of `run_plan`.
    vec![
        "--policy",
        Box::leak(p.display().to_string().into_boxed_str()),
    ]
}

fn check_case(env: &Env, servers: &Servers, report: &Value, case: &Value) {
    let id = case["id"].as_str().unwrap();
    let expect = servers.fill(&case["expect"]);
    let step = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}"));
    let status = expect["status"].as_str().unwrap_or("success");
    assert_eq!(step["status"], status, "{id}: {step:#}");
    if let Some(e) = expect["error"].as_str() {
        assert!(
            step["error"].as_str().unwrap_or("").contains(e),
            "{id}: error {} should contain {e:?}",
            step["error"]
        );
    }
    let r = read_json(&env.out.join(format!("artifacts/{id}/result.json")));
    for key in [
        "status_code",
        "headers",
        "body",
        "response_time",
        "redirects",
        "error",
        "truncated",
        "url",
        "method",
        "size",
    ] {
        assert!(r.get(key).is_some(), "{id}: `{key}` missing from {r:#}");
    }
    assert!(r["response_time"].as_f64().unwrap() >= 0.0);
    if status != "success" {
        assert!(
            r["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{id}: result.json has the error: {r:#}"
        );
    }
    for key in [
        "status_code",
        "truncated",
        "size",
        "redirects",
        "body",
        "body_encoding",
        "method",
        "url",
        "dropped_headers",
    ] {
        if let Some(v) = expect.get(key) {
            assert_eq!(&r[key], v, "{id}: {key} in {r:#}");
        }
    }
    if let Some(s) = expect["body_contains"].as_str() {
        assert!(r["body"].as_str().unwrap().contains(s), "{id}: {r:#}");
    }
    if let Some(h) = expect["headers"].as_object() {
        for (k, v) in h {
            assert_eq!(&r["headers"][k], v, "{id}: header {k} in {r:#}");
        }
    }
    for want in expect["requests"].as_array().into_iter().flatten() {
        let got = servers.server(want["server"].as_str().unwrap()).received();
        let path = want["target"].as_str().unwrap();
        let hit = got.iter().find(|g| g.target == path);
        if want["absent"] == true {
            assert!(
                hit.is_none(),
                "{id}: {path} must not be requested: {got:#?}"
            );
            continue;
        }
        let hit = hit.unwrap_or_else(|| panic!("{id}: no request for {path} in {got:#?}"));
        if let Some(m) = want["method"].as_str() {
            assert_eq!(hit.method, m, "{id}: {hit:#?}");
        }
        if let Some(b) = want["body"].as_str() {
            assert_eq!(String::from_utf8_lossy(&hit.body), b, "{id}: {hit:#?}");
        }
        for (k, v) in want["headers"].as_object().into_iter().flatten() {
            assert_eq!(
                hit.headers.get(k).map(String::as_str),
                Some(v.as_str().unwrap()),
                "{id}: header {k} at {path}: {hit:#?}"
            );
        }
        for k in want["without"].as_array().into_iter().flatten() {
            let k = k.as_str().unwrap();
            assert!(
                !hit.headers.contains_key(k),
                "{id}: {k} must not reach {path}: {hit:#?}"
            );
        }
    }
}

#[test]
fn http_request_case_table() {
    let t = table();
    let servers = Servers::start(&t["servers"]);
    let env = Env::new();
    let cases = t["cases"].as_array().unwrap();
    let steps: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({"id": c["id"], "tool": "http_request", "parameters": servers.fill(&c["params"]), "continue_on_error": true})
        })
        .collect();
    let plan = json!({"version": 1, "id": "http-table", "policy": {"risk_tolerance": "high"}, "steps": steps});
    let o = run_plan(&env, &plan, &local_policy(&env));
    assert!(
        matches!(code(&o), 0 | 1),
        "exit {}: {}",
        code(&o),
        stderr(&o)
    );
    let report = env.report();
    for case in cases {
        check_case(&env, &servers, &report, case);
    }
    // The request's credentials appear nowhere plangate wrote.
    let mut written = stderr(&o);
    for e in walk(&env.out) {
        written.push_str(&String::from_utf8_lossy(&std::fs::read(e).unwrap()));
    }
    for needle in t["never_written"].as_array().unwrap() {
        let n = needle.as_str().unwrap();
        assert!(!written.contains(n), "`{n}` was written by plangate");
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A one-step plan against server `a` (and `b`).
fn one_step(policy: Value, params: Value) -> Value {
    json!({"version": 1, "id": "http-one", "policy": policy,
           "steps": [{"id": "call", "tool": "http_request", "parameters": params}]})
}

fn routes() -> Value {
    table()["servers"].clone()
}

#[test]
fn the_allow_list_is_enforced_at_load_and_on_every_redirect() {
    let servers = Servers::start(&routes());
    let a = servers.base_a.clone();
    // Allowed host: runs.
    let env = Env::new();
    let plan = one_step(
        json!({"risk_tolerance": "medium", "allowed_hosts": ["127.0.0.1"]}),
        json!({"method": "GET", "url": format!("{a}/json")}),
    );
    let o = run_plan(&env, &plan, &local_policy(&env));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // Not allowed: refused at load with the URL's position, nothing requested.
    let env = Env::new();
    let before = servers.a.received().len();
    let plan_yaml = format!(
        "version: 1\nid: deny\npolicy:\n  risk_tolerance: medium\n  allowed_hosts: [api.example.com]\nsteps:\n  - id: call\n    tool: http_request\n    parameters:\n      method: GET\n      url: {a}/json\n"
    );
    let o = env.run(&plan_yaml, &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("plan.yaml:11:12: error: step `call`: host `127.0.0.1`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(servers.a.received().len(), before, "nothing was requested");
    // A redirect to a host outside the list: refused at run time, never requested.
    let env = Env::new();
    let plan = one_step(
        json!({"risk_tolerance": "medium", "allowed_hosts": ["127.0.0.1"]}),
        json!({"method": "GET", "url": format!("{a}/to-b"), "headers": {"Authorization": "Bearer allow-list-test"}}),
    );
    let o = run_plan(&env, &plan, &local_policy(&env));
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = env.step_error("call");
    assert!(
        err.contains("refused the redirect to host `localhost`"),
        "{err}"
    );
    assert!(
        !servers.b.received().iter().any(|r| r.target == "/landing"),
        "the redirect was not followed"
    );
    let r = read_json(&env.out.join("artifacts/call/result.json"));
    assert_eq!(r["status_code"], 302, "{r:#}");
    // A --policy file caps the plan's list: the plan allows both, the file only localhost.
    let env = Env::new();
    let pol = env.ws.parent().unwrap().join("policy.yaml");
    std::fs::write(&pol, "allowed_hosts: [localhost]\n").unwrap();
    let plan = one_step(
        json!({"risk_tolerance": "medium", "allowed_hosts": ["127.0.0.1", "localhost"]}),
        json!({"method": "GET", "url": format!("{a}/json")}),
    );
    let o = run_plan(&env, &plan, &["--policy", pol.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("allowed: localhost"), "{}", stderr(&o));
    let v = env
        .cmd()
        .args(["validate", "--format", "json"])
        .arg(env.ws.parent().unwrap().join("http-plan.yaml"))
        .args(["--policy", pol.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&v), 2);
}

#[test]
fn reads_run_at_medium_writes_need_high() {
    let servers = Servers::start(&routes());
    let a = servers.base_a.clone();
    let env = Env::new();
    let get = one_step(
        json!({}),
        json!({"method": "GET", "url": format!("{a}/json")}),
    );
    let local = local_policy(&env);
    let medium = [&local[..], &["--risk-tolerance", "medium"]].concat();
    let o = run_plan(&env, &get, &medium);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("call")["risk"]["effective"], "moderate");
    // Default tolerance (low): a network read is denied.
    let o = run_plan(&env, &get, &local);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    // POST: dangerous, denied at medium and nothing sent.
    let post = one_step(
        json!({}),
        json!({"method": "POST", "url": format!("{a}/submit-risk"), "body": "{}"}),
    );
    let o = run_plan(&env, &post, &medium);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        !servers
            .a
            .received()
            .iter()
            .any(|r| r.target == "/submit-risk"),
        "a denied step sends nothing"
    );
    let o = run_plan(
        &env,
        &post,
        &[&local[..], &["--risk-tolerance", "high"]].concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("call")["risk"]["classified"], "dangerous");
    assert!(
        servers
            .a
            .received()
            .iter()
            .any(|r| r.target == "/submit-risk" && r.method == "POST")
    );
    // verify_ssl: false makes even a GET dangerous.
    let insecure = one_step(
        json!({}),
        json!({"method": "GET", "url": "https://127.0.0.1:9/", "verify_ssl": false}),
    );
    let o = run_plan(&env, &insecure, &["--risk-tolerance", "medium"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    // Credentials over plain http to another machine are dangerous; the reason says why.
    let p = env.write(
        "plan.yaml",
        "version: 1\nid: v\nsteps:\n  - {id: plain, tool: http_request, parameters: {method: GET, url: 'http://api.example.com/x', headers: {Authorization: Bearer x}}}\n  - {id: tls, tool: http_request, parameters: {method: GET, url: 'https://api.example.com/x', headers: {Authorization: Bearer x}}}\n",
    );
    let v = env.cmd().arg("validate").arg(&p).output().unwrap();
    let text = String::from_utf8_lossy(&v.stdout);
    let line = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("{text}"))
            .to_owned()
    };
    assert!(line("plain").contains("dangerous"), "{text}");
    assert!(line("plain").contains("unencrypted"), "{text}");
    assert!(line("tls ").contains("moderate"), "{text}");
}

#[test]
fn a_secret_in_the_response_is_found_and_never_stored() {
    let servers = Servers::start(&routes());
    let env = Env::new();
    let plan = one_step(
        json!({"risk_tolerance": "medium"}),
        json!({"method": "GET", "url": format!("{}/leak", servers.base_a), "show_cli": true}),
    );
    let o = run_plan(&env, &plan, &local_policy(&env));
    assert_eq!(code(&o), 4, "fail_on_secrets: {}", stderr(&o));
    let step = env.step("call");
    assert_eq!(step["status"], "success", "{step:#}");
    let findings = env.report()["findings"].clone();
    assert!(
        findings
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "aws-access-key-id"),
        "{findings:#}"
    );
    let secret = "AKIAZ7Q4NX2LMRBT5KPW";
    let text = std::fs::read_to_string(env.out.join("artifacts/call/result.json")).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(text.contains("[REDACTED:aws-access-key-id]"), "{text}");
    assert!(
        !stderr(&o).contains(secret),
        "show_cli echoes the redacted result"
    );
    for f in walk(&env.out) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "{} holds the secret",
            f.display()
        );
    }
}

#[test]
fn a_timeout_leaves_a_result_and_stops_in_time() {
    let servers = Servers::start(&routes());
    let env = Env::new();
    let plan = one_step(
        json!({"risk_tolerance": "medium"}),
        json!({"method": "GET", "url": format!("{}/slow", servers.base_a), "timeout": 1}),
    );
    let local = local_policy(&env);
    let started = std::time::Instant::now();
    let o = run_plan(&env, &plan, &local);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let step = env.step("call");
    assert_eq!(step["status"], "timed_out", "{step:#}");
    let r = read_json(&env.out.join("artifacts/call/result.json"));
    assert!(r["error"].as_str().unwrap().contains("timed out"), "{r:#}");
    assert_eq!(r["status_code"], Value::Null);
}

/// A secret in a credential response header (`X-Api-Key`, `Authorization`,
/// `Proxy-Authorization`, a `Set-Cookie` value) is a finding of the step's
/// `result.json` like any other (exit 4), and its value is written nowhere.
#[test]
fn a_secret_in_a_credential_response_header_is_a_finding() {
    let servers = Servers::start(&routes());
    let env = Env::new();
    let plan = one_step(
        json!({"risk_tolerance": "medium", "fail_on_secrets": true}),
        json!({"method": "GET", "url": format!("{}/cred-headers", servers.base_a), "show_cli": true}),
    );
    let o = run_plan(&env, &plan, &local_policy(&env));
    assert_eq!(code(&o), 4, "fail_on_secrets: {}", stderr(&o));
    let step = env.step("call");
    assert_eq!(step["status"], "success", "{step:#}");
    let findings = env.report()["findings"].clone();
    let ours: Vec<&Value> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["location"] == "artifacts/call/result.json" && f["step"] == "call")
        .collect();
    let prints: std::collections::BTreeSet<&str> = ours
        .iter()
        .map(|f| f["fingerprint"].as_str().unwrap())
        .collect();
    assert!(prints.len() >= 4, "one per header: {findings:#}");
    let r = read_json(&env.out.join("artifacts/call/result.json"));
    assert_eq!(r["headers"]["x-api-key"], "[REDACTED]", "{r:#}");
    assert_eq!(r["headers"]["x-request-id"], "abc-123", "{r:#}");
    let mut written = stderr(&o);
    written.push_str(&String::from_utf8_lossy(&o.stdout));
    for f in walk(&env.out) {
        written.push_str(&String::from_utf8_lossy(&std::fs::read(&f).unwrap()));
    }
    for secret in [
        "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",
        "8f3kQ9zLmP2xWv7RtY4nB6cJ",
        "dXNlcjpodW50ZXIyaHVudGVy",
        "Qx7Hv2pL9wW4mKz3Rt8YbN5c",
    ] {
        assert!(!written.contains(secret), "{secret} was written");
    }
}

/// Every spelling of a loopback, link-local (cloud metadata) or private
/// destination, and local names, with no `allowed_hosts` naming it: each
/// step is blocked before anything runs (it was a `moderate` read that
/// `medium` auto-approved). Named only by the plan's own `allowed_hosts`,
/// the step is dangerous (denied at medium); named by the operator's
/// `--policy` file, it runs as an ordinary read.
#[test]
fn a_local_or_metadata_destination_needs_the_operators_grant() {
    let servers = Servers::start(&routes());
    let a = servers.base_a.clone();
    let port = a.rsplit(':').next().unwrap().to_owned();
    let urls = [
        format!("{a}/json"),
        format!("http://localhost:{port}/json"),
        format!("http://app.localhost:{port}/json"),
        format!("http://127.1:{port}/json"),
        format!("http://2130706433:{port}/json"),
        format!("http://0x7f000001:{port}/json"),
        format!("http://0177.0.0.1:{port}/json"),
        format!("http://[::1]:{port}/json"),
        format!("http://[::ffff:127.0.0.1]:{port}/json"),
        format!("http://0.0.0.0:{port}/json"),
        "http://169.254.169.254/latest/meta-data/iam/".to_owned(),
        "http://169.254.170.2/v2/credentials".to_owned(),
        "http://[fd00:ec2::254]/latest/meta-data/".to_owned(),
        "http://metadata.google.internal/computeMetadata/v1/".to_owned(),
        "http://metadata/computeMetadata/v1/".to_owned(),
        "http://100.100.100.200/latest/meta-data/".to_owned(),
        "http://10.0.0.1/".to_owned(),
        "http://172.16.0.1/".to_owned(),
        "http://192.168.1.1/".to_owned(),
        "http://[fc00::1]/".to_owned(),
    ];
    let steps: Vec<Value> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| json!({"id": format!("s{i}"), "tool": "http_request", "continue_on_error": true, "parameters": {"method": "GET", "url": u, "timeout": 3}}))
        .collect();
    let env = Env::new();
    let plan = json!({"version": 1, "id": "local", "steps": steps});
    let o = run_plan(&env, &plan, &["--risk-tolerance", "medium"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    for (i, u) in urls.iter().enumerate() {
        let s = env.step(&format!("s{i}"));
        assert_eq!(s["approval"]["decision"], "blocked", "{u}: {s:#}");
        let why = s["approval"]["reason"].as_str().unwrap_or_default();
        assert!(
            why.contains("non-public address only where allowed_hosts names it"),
            "{u}: {why}"
        );
    }
    assert!(servers.a.received().is_empty(), "nothing was requested");
    // Named by the plan alone: dangerous, denied at medium, nothing sent.
    let one = one_step(
        json!({"allowed_hosts": ["127.0.0.1"]}),
        json!({"method": "GET", "url": format!("{a}/json")}),
    );
    let o = run_plan(&env, &one, &["--risk-tolerance", "medium"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let s = env.step("call");
    assert_eq!(s["risk"]["classified"], "dangerous", "{s:#}");
    assert_eq!(s["approval"]["decision"], "denied", "{s:#}");
    assert!(
        s["approval"]["reason"]
            .as_str()
            .unwrap()
            .contains("only the plan's allowed_hosts names"),
        "{s:#}"
    );
    assert!(servers.a.received().is_empty(), "nothing was requested");
    // Named by the operator: an ordinary read.
    let local = local_policy(&env);
    let o = run_plan(
        &env,
        &one,
        &[&local[..], &["--risk-tolerance", "medium"]].concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("call")["risk"]["effective"], "moderate");
}

/// At connect time every address is checked, whatever the URL's spelling:
/// a redirect from an allowed local server to a name that resolves to
/// loopback, another spelling of a loopback address on a port the operator
/// did not name, `0.0.0.0`, or a metadata address is refused before
/// anything is sent there.
#[test]
fn a_redirect_to_a_local_address_is_refused_at_connect_time() {
    let servers = Servers::start(&routes());
    let a = servers.base_a.clone();
    let port = a.rsplit(':').next().unwrap().to_owned();
    let env = Env::new();
    // The operator names server a (127.0.0.1 on its port) without narrowing
    // where http_request may go (a secret_hosts entry names a host too).
    let pol = env.tmp().join("operator-policy-a.yaml");
    std::fs::write(
        &pol,
        format!(
            "{}secret_hosts: {{PG_UNUSED: [\"127.0.0.1:{port}\"]}}\n",
            crate::harness::OPERATOR_POLICY_YAML
        ),
    )
    .unwrap();
    let names = [
        "localhost",
        "localhost-upper",
        "short",
        "decimal",
        "hex",
        "octal",
        "mapped",
        "v6",
        "any",
        "metadata",
        "ecs",
    ];
    let steps: Vec<Value> = names
        .iter()
        .map(|n| json!({"id": n.replace('-', "_"), "tool": "http_request", "continue_on_error": true, "parameters": {"method": "GET", "url": format!("{a}/to-local-{n}"), "timeout": 5}}))
        .collect();
    let plan = json!({"version": 1, "id": "redirects", "steps": steps});
    let o = run_plan(
        &env,
        &plan,
        &[
            "--policy",
            pol.to_str().unwrap(),
            "--risk-tolerance",
            "medium",
        ],
    );
    assert_eq!(code(&o), 0, "continue_on_error: {}", stderr(&o));
    for n in names {
        let s = env.step(&n.replace('-', "_"));
        assert_eq!(s["approval"]["decision"], "auto_approved", "{n}: {s:#}");
        assert_eq!(s["status"], "failed", "{n}: {s:#}");
        let err = s["error"].as_str().unwrap_or_default();
        assert!(err.contains("refused to connect"), "{n}: {err}");
    }
    assert!(
        servers.b.received().is_empty(),
        "nothing reached the other local server: {:#?}",
        servers.b.received()
    );
}
