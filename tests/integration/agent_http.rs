//! The HTTP agent providers (`openai`, `anthropic`) against local servers
//! that script their replies: retries with backoff on 429/5xx/529/overload
//! and dropped connections, `Retry-After`, errors that fail at once, the
//! Messages API's shapes (cache tokens, `stop_reason: max_tokens`), the
//! system prompt, extra headers from the environment (never shown), and
//! structured output still checked by the guard.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Env, code, stderr};

const GOOD: &str = "```json\n{\"status\": \"OK\", \"summary\": \"done\"}\n```\n";

/// One scripted reply.
enum Reply {
    /// Status, extra headers, body.
    Http(u16, Vec<(&'static str, String)>, String),
    /// Read a little of the request, then close with unread data: the kernel resets the connection.
    Reset,
}

fn ok(body: Value) -> Reply {
    Reply::Http(200, Vec::new(), body.to_string())
}

/// A request as received.
#[derive(Clone, Debug)]
struct Seen {
    /// Request line and headers, lower-cased.
    head: String,
    body: String,
    at: Instant,
}

impl Seen {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// A local server answering each connection with the next reply; after the
/// last one it stops listening (later connections are refused).
fn serve(replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for reply in replies {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let at = Instant::now();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            if let Reply::Reset = reply {
                let mut one = [0u8; 1];
                let _ = stream.read(&mut one);
                std::thread::sleep(Duration::from_millis(100));
                log.lock().unwrap().push(Seen {
                    head: "reset".into(),
                    body: String::new(),
                    at,
                });
                drop(stream);
                continue;
            }
            let mut reader = BufReader::new(stream);
            let (mut head, mut len) = (String::new(), 0usize);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&lower);
            }
            let mut buf = vec![0u8; len];
            let _ = reader.read_exact(&mut buf);
            log.lock().unwrap().push(Seen {
                head,
                body: String::from_utf8_lossy(&buf).into_owned(),
                at,
            });
            let mut stream = reader.into_inner();
            if let Reply::Http(status, headers, body) = reply {
                let extra: String = headers
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}\r\n"))
                    .collect();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        }
    });
    Server { url, seen }
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    })
}

fn message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 34,
                  "cache_creation_input_tokens": 200, "cache_read_input_tokens": 1000}
    })
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

fn anthropic_error(status: u16, kind: &str, msg: &str) -> Reply {
    Reply::Http(
        status,
        Vec::new(),
        json!({"type": "error", "error": {"type": kind, "message": msg}, "request_id": "req_1"})
            .to_string(),
    )
}

/// Run one agent step (`fix`) with `agent` defined by `def` (YAML lines under
/// the agent's name) and `params` (YAML lines under `parameters:`).
fn run(env: &Env, def: &str, params: &str, vars: &[(&str, &str)]) -> std::process::Output {
    let plan = format!(
        "version: 1\nid: h\npolicy: {{risk_tolerance: medium}}\nagents:\n  llm:\n{def}steps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: llm\n{params}"
    );
    let path = env.write("plan.yaml", &plan);
    let mut c = env.run_cmd(&path);
    // The keys go to the local stand-in: the operator allows it.
    c.arg("--policy").arg(env.policy_allowing_local(&[
        "TEST_ANTHROPIC_KEY",
        "ANTHROPIC_API_KEY",
        "TEST_REFERER",
        "TEST_AZURE_KEY",
    ]));
    for (k, v) in vars {
        c.env(k, v);
    }
    c.timeout(Duration::from_secs(120)).output().unwrap()
}

fn openai(url: &str, extra: &str) -> String {
    format!(
        "    provider: openai\n    base_url: {url}/v1\n    model: m\n    retry_base_delay: 0.01\n{extra}"
    )
}

fn anthropic(url: &str, extra: &str) -> String {
    format!(
        "    provider: anthropic\n    base_url: {url}\n    model: claude-test\n    api_key_env: TEST_ANTHROPIC_KEY\n    retry_base_delay: 0.01\n{extra}"
    )
}

const KEY: (&str, &str) = ("TEST_ANTHROPIC_KEY", "fake-anthropic-key-0001");
const PROMPT: &str = "      prompt: Say done.\n";

fn http_attempts(env: &Env) -> Vec<Value> {
    env.step("fix")["agent_attempts"][0]["http_attempts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_429_is_retried_after_the_servers_retry_after() {
    let env = Env::new();
    let server = serve(vec![
        Reply::Http(
            429,
            vec![("Retry-After", "1".into())],
            json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
        ),
        ok(completion(GOOD)),
    ]);
    let o = run(&env, &openai(&server.url, ""), PROMPT, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    // The base delay is 10 ms: only the server's Retry-After explains the second.
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_millis(950), "{gap:?}");
    let http = http_attempts(&env);
    assert_eq!(http.len(), 2, "{http:?}");
    assert_eq!(http[0]["status"], 429);
    assert_eq!(http[0]["retry_after_ms"], 1000);
    assert_eq!(http[0]["wait_ms"], 1000);
    assert!(
        http[0]["error"]
            .as_str()
            .unwrap()
            .contains("Rate limit reached")
    );
    assert_eq!(http[1]["status"], 200);
    assert!(http[1].get("error").is_none());
    let s = env.step("fix");
    assert_eq!(s["status"], "success");
    assert_eq!(s["attempts"], 1, "HTTP retries are not agent attempts");
}

#[test]
fn a_500_and_a_reset_connection_are_retried_with_backoff() {
    let env = Env::new();
    let server = serve(vec![
        Reply::Http(
            500,
            vec![("retry-after-ms", "50".into())],
            "{\"error\": {\"message\": \"internal\"}}".into(),
        ),
        Reply::Reset,
        ok(completion(GOOD)),
    ]);
    let o = run(&env, &openai(&server.url, ""), PROMPT, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(server.seen().len(), 3);
    let http = http_attempts(&env);
    assert_eq!(http.len(), 3, "{http:?}");
    assert_eq!(http[0]["status"], 500);
    assert_eq!(http[0]["retry_after_ms"], 50);
    assert!(http[1].get("status").is_none(), "{http:?}");
    assert!(!http[1]["error"].as_str().unwrap().is_empty());
    assert!(http[1]["wait_ms"].as_u64().unwrap() <= 20, "{http:?}");
    assert_eq!(http[2]["status"], 200);
}

#[test]
fn anthropic_529_overloaded_twice_then_an_answer_with_cache_tokens() {
    let env = Env::new();
    let server = serve(vec![
        anthropic_error(529, "overloaded_error", "Overloaded"),
        anthropic_error(529, "overloaded_error", "Overloaded"),
        ok(message(text(GOOD), "end_turn")),
    ]);
    let o = run(
        &env,
        &anthropic(
            &server.url,
            "    price: {input_per_mtok: 1000, output_per_mtok: 1000}\n",
        ),
        PROMPT,
        &[KEY],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen[0].head.starts_with("post /v1/messages "),
        "{}",
        seen[0].head
    );
    assert!(seen[0].head.contains("x-api-key: fake-anthropic-key-0001"));
    assert!(seen[0].head.contains("anthropic-version: 2023-06-01"));
    let body = seen[0].json();
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["messages"][0]["role"], "user");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Say done.")
    );
    assert!(body.get("system").is_none());
    assert!(body.get("tools").is_none());
    let http = http_attempts(&env);
    let statuses: Vec<&Value> = http.iter().map(|h| &h["status"]).collect();
    assert_eq!(statuses, [&json!(529), &json!(529), &json!(200)]);
    assert!(
        http[0]["error"]
            .as_str()
            .unwrap()
            .contains("overloaded_error: Overloaded")
    );
    assert!(stderr(&o).contains("2 HTTP retries"), "{}", stderr(&o));
    let s = env.step("fix");
    assert_eq!(s["status"], "success");
    // Cache writes and reads are input tokens, and shown apart.
    assert_eq!(s["usage"]["input_tokens"], 1212);
    assert_eq!(s["usage"]["output_tokens"], 34);
    assert_eq!(s["usage"]["cache_creation_input_tokens"], 200);
    assert_eq!(s["usage"]["cache_read_input_tokens"], 1000);
    assert_eq!(s["usage"]["estimated"], false);
    let cost = s["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 1.246).abs() < 1e-9, "{cost}");
    let total = env.report()["usage"].clone();
    assert_eq!(total["cache_read_input_tokens"], 1000, "{total}");
}

#[test]
fn a_401_fails_at_once_with_the_providers_message() {
    let env = Env::new();
    let server = serve(vec![
        anthropic_error(401, "authentication_error", "invalid x-api-key"),
        ok(message(text(GOOD), "end_turn")),
    ]);
    let o = run(&env, &anthropic(&server.url, ""), PROMPT, &[KEY]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(server.seen().len(), 1, "a 401 is never retried");
    let s = env.step("fix");
    assert_eq!(s["status"], "failed");
    let err = s["error"].as_str().unwrap();
    assert!(
        err.contains("HTTP 401: authentication_error: invalid x-api-key"),
        "{err}"
    );
    assert!(!err.contains('\n'));
    assert_eq!(http_attempts(&env).len(), 1);
    assert!(stderr(&o).contains("invalid x-api-key"), "{}", stderr(&o));
}

#[test]
fn exhausted_retries_fail_the_step_listing_every_request() {
    let env = Env::new();
    let busy = || {
        Reply::Http(
            503,
            Vec::new(),
            "{\"error\": {\"message\": \"unavailable\"}}".into(),
        )
    };
    let server = serve(vec![busy(), busy(), busy(), ok(completion(GOOD))]);
    let o = run(
        &env,
        &openai(&server.url, "    max_retries: 2\n"),
        PROMPT,
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(server.seen().len(), 3);
    let err = env.step("fix")["error"].as_str().unwrap().to_owned();
    assert!(
        err.contains("gave up after 3 request(s) (503, 503, 503): HTTP 503: unavailable"),
        "{err}"
    );
    let http = http_attempts(&env);
    assert_eq!(http.len(), 3);
    assert!(http[2].get("wait_ms").is_none(), "{http:?}");
    assert_eq!(env.step("fix")["agent_attempts"][0]["verdict"], "error");
}

#[test]
fn a_retry_after_past_the_calls_timeout_stops_at_once() {
    let env = Env::new();
    let server = serve(vec![
        Reply::Http(
            429,
            vec![("Retry-After", "120".into())],
            "{\"error\": {\"message\": \"slow down\"}}".into(),
        ),
        ok(completion(GOOD)),
    ]);
    let started = Instant::now();
    let o = run(&env, &openai(&server.url, "    timeout: 20\n"), PROMPT, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(server.seen().len(), 1);
    let err = env.step("fix")["error"].as_str().unwrap().to_owned();
    assert!(err.contains("after the call's timeout"), "{err}");
    assert_eq!(http_attempts(&env)[0]["retry_after_ms"], 120_000);
}

#[test]
fn anthropic_max_tokens_is_a_truncated_answer() {
    let env = Env::new();
    let server = serve(vec![
        ok(message(text("```json\n{\"status\": \"OK\""), "max_tokens")),
        ok(message(text(GOOD), "end_turn")),
    ]);
    let o = run(
        &env,
        &anthropic(&server.url, "    max_tokens: 64\n"),
        &format!("{PROMPT}      max_attempts: 2\n"),
        &[KEY],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(server.seen()[0].json()["max_tokens"], 64);
    let s = env.step("fix");
    let first = &s["agent_attempts"][0];
    assert_eq!(first["verdict"], "rejected");
    assert_eq!(first["rejections"][0]["category"], "truncated");
    assert!(
        first["rejections"][0]["message"]
            .as_str()
            .unwrap()
            .contains("stop_reason `max_tokens`")
    );
    assert_eq!(s["agent_attempts"][1]["verdict"], "accepted");
}

#[test]
fn system_prompt_and_headers_reach_the_server_and_header_values_no_output() {
    let referer = "https://ci.example.test/plangate-referer-0001";
    let azure = "fake-azure-header-value-0001";
    for provider in ["openai", "anthropic"] {
        let env = Env::new();
        let reply = if provider == "openai" {
            ok(completion(GOOD))
        } else {
            ok(message(text(GOOD), "end_turn"))
        };
        let server = serve(vec![reply]);
        let extra = "    system: You are terse.\n    headers:\n      HTTP-Referer: TEST_REFERER\n      api-key: TEST_AZURE_KEY\n";
        let def = if provider == "openai" {
            openai(&server.url, extra)
        } else {
            anthropic(&server.url, extra)
        };
        let o = run(
            &env,
            &def,
            PROMPT,
            &[KEY, ("TEST_REFERER", referer), ("TEST_AZURE_KEY", azure)],
        );
        assert_eq!(code(&o), 0, "{provider}: {}", stderr(&o));
        let seen = server.seen();
        assert!(
            seen[0].head.contains(&format!("http-referer: {referer}")),
            "{provider}: {}",
            seen[0].head
        );
        assert!(seen[0].head.contains(&format!("api-key: {azure}")));
        let body = seen[0].json();
        if provider == "openai" {
            assert_eq!(
                body["messages"][0],
                json!({"role": "system", "content": "You are terse."})
            );
            assert_eq!(body["messages"][1]["role"], "user");
        } else {
            assert_eq!(body["system"], "You are terse.");
        }
        // No header value in anything plangate printed or wrote.
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        for value in [referer, azure, KEY.1] {
            assert!(!printed.contains(value), "{provider}: {value} printed");
            for f in walk(&env.out) {
                let bytes = std::fs::read(&f).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(value),
                    "{provider}: {value} in {}",
                    f.display()
                );
            }
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn an_unset_header_variable_blocks_the_step_before_the_run() {
    let env = Env::new();
    let server = serve(vec![ok(completion(GOOD))]);
    let o = run(
        &env,
        &openai(
            &server.url,
            "    headers: {api-key: TEST_UNSET_HEADER_VAR}\n",
        ),
        PROMPT,
        &[],
    );
    // The pre-flight of agents: the run is invalid (exit 2), nothing is sent.
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(server.seen().is_empty());
    assert!(
        stderr(&o).contains(
            "the variable `TEST_UNSET_HEADER_VAR` of its header `api-key` is unset or empty"
        ),
        "{}",
        stderr(&o)
    );
}

const SCHEMA: &str = "      output: json\n      schema: {type: object, additionalProperties: false, properties: {count: {type: integer, minimum: 0}}, required: [count]}\n";

#[test]
fn openai_structured_output_sends_the_schema_and_the_answer_is_still_checked() {
    let env = Env::new();
    let server = serve(vec![
        ok(completion("{\"count\": -1}")),
        ok(completion("{\"count\": 3}")),
    ]);
    let o = run(
        &env,
        &openai(&server.url, ""),
        &format!("{PROMPT}{SCHEMA}      max_attempts: 2\n"),
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let body = server.seen()[0].json();
    let rf = &body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["name"], "answer");
    assert_eq!(rf["json_schema"]["strict"], true);
    assert_eq!(rf["json_schema"]["schema"]["required"], json!(["count"]));
    let s = env.step("fix");
    assert_eq!(s["agent_attempts"][0]["verdict"], "rejected");
    assert_eq!(
        s["agent_attempts"][0]["rejections"][0]["category"],
        "schema"
    );
    assert_eq!(s["agent_attempts"][1]["verdict"], "accepted");

    // Opted out: no response_format.
    let env = Env::new();
    let server = serve(vec![ok(completion("{\"count\": 3}"))]);
    let o = run(
        &env,
        &openai(&server.url, "    structured_output: false\n"),
        &format!("{PROMPT}{SCHEMA}"),
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(server.seen()[0].json().get("response_format").is_none());
}

#[test]
fn anthropic_structured_output_forces_a_tool_whose_input_is_checked() {
    let env = Env::new();
    let tool = |input: Value| json!([{"type": "tool_use", "id": "toolu_01", "name": "answer", "input": input}]);
    let server = serve(vec![
        ok(message(tool(json!({"count": "three"})), "tool_use")),
        ok(message(tool(json!({"count": 3})), "tool_use")),
    ]);
    let o = run(
        &env,
        &anthropic(&server.url, ""),
        &format!("{PROMPT}{SCHEMA}      max_attempts: 2\n"),
        &[KEY],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let body = server.seen()[0].json();
    assert_eq!(body["tools"][0]["name"], "answer");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["count"])
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "answer"})
    );
    let s = env.step("fix");
    assert_eq!(s["agent_attempts"][0]["verdict"], "rejected");
    assert_eq!(
        s["agent_attempts"][0]["rejections"][0]["category"],
        "schema"
    );
    assert_eq!(s["agent_attempts"][1]["verdict"], "accepted");
    let parsed: Value = serde_json::from_str(
        &std::fs::read_to_string(env.out.join("artifacts/fix/parsed.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(parsed, json!({"count": 3}));
}

#[test]
fn anthropic_reads_its_key_from_anthropic_api_key_by_default() {
    let env = Env::new();
    let server = serve(vec![ok(message(text(GOOD), "end_turn"))]);
    let def = format!(
        "    provider: anthropic\n    base_url: {}\n    model: claude-test\n",
        server.url
    );
    let o = run(
        &env,
        &def,
        PROMPT,
        &[("ANTHROPIC_API_KEY", "fake-default-key-0001")],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        server.seen()[0]
            .head
            .contains("x-api-key: fake-default-key-0001")
    );
    // Unset, the run is invalid (the pre-flight of agents, exit 2) before anything runs.
    let env = Env::new();
    let path = env.write(
        "plan.yaml",
        &format!(
            "version: 1\nid: h\npolicy: {{risk_tolerance: medium}}\nagents:\n  llm:\n{def}steps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: llm\n{PROMPT}"
        ),
    );
    let o = env
        .run_cmd(&path)
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`ANTHROPIC_API_KEY` (api_key_env) is unset or empty"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn every_reply_is_kept_even_one_whose_wrapper_cannot_be_read() {
    // (provider definition, reply, exit code)
    let env = Env::new();
    let good = serve(vec![ok(completion(GOOD))]);
    let broken = serve(vec![Reply::Http(
        200,
        Vec::new(),
        "{\"choices\": [{\"message\": ".to_owned(),
    )]);
    let cases = [
        (openai(&good.url, ""), 0, "\"choices\""),
        (
            openai(&broken.url, "    max_retries: 0\n"),
            1,
            "{\"choices\": [{\"message\": ",
        ),
    ];
    for (def, exit, body) in cases {
        let o = run(&env, &def, PROMPT, &[]);
        assert_eq!(code(&o), exit, "{}", stderr(&o));
        let kept = std::fs::read_to_string(env.out.join("artifacts/fix/attempt-1.reply.json"))
            .unwrap_or_else(|e| panic!("{def}: {e}"));
        assert!(kept.contains(body), "{kept}");
        let attempt = &env.step("fix")["agent_attempts"][0];
        assert!(
            attempt["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "artifacts/fix/attempt-1.reply.json"),
            "{attempt}"
        );
    }
}

/// A server's wait no `Duration` holds (`1e300` ms, infinity, a number past
/// `u64`) or none at all (NaN, negative): never a panic. A huge wait ends the
/// call at once (past its timeout) with a clear error; a meaningless one is
/// ignored (the backoff applies).
#[test]
fn a_retry_after_no_clock_can_hold_ends_the_call_clearly_and_never_panics() {
    for huge in ["1e300", "inf", "184467440737095516150000"] {
        let env = Env::new();
        let server = serve(vec![Reply::Http(
            429,
            vec![("retry-after-ms", huge.into())],
            "{\"error\": {\"message\": \"slow down\"}}".into(),
        )]);
        let t = Instant::now();
        let o = run(&env, &openai(&server.url, ""), PROMPT, &[]);
        let err = stderr(&o);
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{huge}: {:?}",
            t.elapsed()
        );
        assert_eq!(code(&o), 1, "{huge}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("internal error"),
            "{huge}: {err}"
        );
        let why = env.step_error("fix");
        assert!(why.contains("after the call's timeout"), "{huge}: {why}");
        assert_eq!(server.seen().len(), 1, "{huge}");
    }
    for meaningless in ["NaN", "-5", "-inf"] {
        let env = Env::new();
        let server = serve(vec![
            Reply::Http(
                503,
                vec![("retry-after-ms", meaningless.into())],
                "{\"error\": {\"message\": \"busy\"}}".into(),
            ),
            ok(completion(GOOD)),
        ]);
        let o = run(&env, &openai(&server.url, ""), PROMPT, &[]);
        assert_eq!(code(&o), 0, "{meaningless}: {}", stderr(&o));
        assert_eq!(server.seen().len(), 2, "{meaningless}");
        assert!(http_attempts(&env)[0].get("retry_after_ms").is_none());
    }
}

/// A step budget holds for HTTP agents too, between attempts: the first
/// answer is rejected, but its cost (Claude Haiku 4.5's built-in price, no
/// `price` on the agent: 12 fresh input tokens at $1, 200 cache writes at
/// $1.25, 1 000 cache reads at $0.10, 34 output at $5 per million) already
/// spent the step's budget, so no retry is sent: exit 6, valid report.
#[test]
fn a_step_budget_stops_the_retry_and_the_built_in_price_applies() {
    let env = Env::new();
    let server = serve(vec![
        ok(message(text("no envelope here"), "end_turn")),
        ok(message(text(GOOD), "end_turn")),
    ]);
    let def = anthropic(&server.url, "").replace("model: claude-test", "model: claude-haiku-4-5");
    let o = run(
        &env,
        &def,
        "      prompt: Say done.\n      budget: {max_cost_usd: 0.0005}\n",
        &[KEY],
    );
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    assert_eq!(server.seen().len(), 1);
    let s = env.step("fix");
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["attempts"], 1, "{s}");
    let err = s["error"].as_str().unwrap();
    assert!(
        err.contains("step budget exhausted: $0.0005 of $0.0005 spent"),
        "{err}"
    );
    let cost = s["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.000_532).abs() < 1e-12, "{cost}");
    let r = env.report();
    assert_eq!(r["status"], "budget_exhausted");
    assert!(
        r["budget_exhausted"]
            .as_str()
            .is_some_and(|b| b.contains("step budget"))
    );
}

/// A cost budget that only the maintainers' `--policy` file sets (the plan's
/// checks cannot see it) still needs a price: the step fails before any
/// request is sent, naming the fix; the call is never counted as free.
#[test]
fn a_policy_files_cost_budget_refuses_an_unpriced_model_before_any_call() {
    let env = Env::new();
    let server = serve(vec![ok(message(text(GOOD), "end_turn"))]);
    let plan = format!(
        "version: 1\nid: h\npolicy: {{risk_tolerance: medium}}\nagents:\n  llm:\n{}steps:\n  - id: fix\n    tool: agent\n    parameters:\n      agent: llm\n{PROMPT}",
        anthropic(&server.url, "")
    );
    let plan = env.write("plan.yaml", &plan);
    for policy in [
        "risk_tolerance: medium\nbudget: {max_cost_usd: 1}\nsecret_hosts: {TEST_ANTHROPIC_KEY: [\"127.0.0.1\"]}\n",
        "risk_tolerance: medium\nstep_budget: {max_cost_usd: 1}\nsecret_hosts: {TEST_ANTHROPIC_KEY: [\"127.0.0.1\"]}\n",
    ] {
        let file = env.write("policy.yaml", policy);
        let o = env
            .run_cmd(&plan)
            .arg("--policy")
            .arg(&file)
            .env(KEY.0, KEY.1)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        assert_eq!(code(&o), 1, "{policy}: {}", stderr(&o));
        assert!(server.seen().is_empty(), "{policy}");
        let s = env.step("fix");
        let err = s["error"].as_str().unwrap_or("");
        assert!(
            err.contains("model `claude-test` is not in plangate's built-in prices")
                && err.contains("give the agent `price"),
            "{policy}: {s}"
        );
    }
}
