//! Egress allow-lists (issue 24): a step that declares `egress` reaches the
//! declared hosts through plangate's proxy, and nothing else: not another
//! host, port or raw IP, not a declared name that resolves to a loopback
//! address, not the host directly (bypassing the proxy), not UDP, not a unix
//! socket. Every connection is an audit line; a refused one also a console
//! line; the report counts them per step.
//!
//! The allowed upstream is a stand-in HTTP server on 127.0.0.1 (declared
//! explicitly, as an IP or as `localhost`).

use std::io::{Read, Write};
use std::net::{TcpListener, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use crate::facility::Backend;
use crate::harness::{Env, code, stderr};

/// A stand-in HTTP server: answers `hello` to every request; records request lines.
fn upstream() -> (u16, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut buf = Vec::new();
            let mut b = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&b[..n]),
                }
            }
            let text = String::from_utf8_lossy(&buf);
            s.lock()
                .unwrap()
                .push(text.lines().next().unwrap_or("").to_owned());
            let _ = c.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n",
            );
        }
    });
    (port, seen)
}

/// The machine's host name when it resolves to addresses that are not
/// public (a loopback or private address: the "DNS trick" case), else None.
fn private_hostname(port: u16) -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_owned();
    let addrs: Vec<_> = (name.as_str(), port).to_socket_addrs().ok()?.collect();
    let private = |ip: std::net::IpAddr| match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        std::net::IpAddr::V6(v6) => v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00,
    };
    (!addrs.is_empty() && addrs.iter().all(|a| private(a.ip())) && name != "localhost")
        .then_some(name)
}

fn step(id: &str, cmd: &str, egress: &str) -> String {
    format!(
        "  - {{id: {id}, tool: bash, continue_on_error: true, parameters: {{command: {}, egress: {egress}}}}}\n",
        serde_json::to_string(cmd).unwrap()
    )
}

fn audit_egress(env: &Env) -> Vec<serde_json::Value> {
    std::fs::read_to_string(env.out.join("audit.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "egress")
        .collect()
}

fn artifact(env: &Env, id: &str, stream: &str) -> String {
    std::fs::read_to_string(env.out.join(format!("artifacts/{id}/{stream}.txt")))
        .unwrap_or_default()
}

pub fn only_declared_hosts_are_reached_through_the_proxy(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (port, seen) = upstream();
    let (other, other_seen) = upstream();
    let sock_path = env.ws.join("daemon.sock");
    let unix = std::os::unix::net::UnixListener::bind(&sock_path).unwrap();
    let ip = format!("[\"127.0.0.1:{port}\"]");
    let curl = "curl -sS --fail --max-time 20";
    let python_unix = format!(
        "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"connected\")'",
        sock_path.display()
    );
    let mut yaml = String::from("version: 1\nid: egress\npolicy: {risk_tolerance: high}\nsteps:\n");
    yaml += &step(
        "allowed",
        &format!("{curl} http://127.0.0.1:{port}/plain"),
        &ip,
    );
    // -p: through a CONNECT tunnel (what HTTPS does).
    yaml += &step(
        "tunnel",
        &format!("{curl} -p http://127.0.0.1:{port}/tunnel"),
        &ip,
    );
    yaml += &step(
        "by_name",
        &format!("{curl} http://localhost:{port}/by-name"),
        &format!("[\"localhost:{port}\"]"),
    );
    yaml += &step(
        "proxy_env",
        "case \"$HTTPS_PROXY|$https_proxy|$HTTP_PROXY|$http_proxy\" in http://127.0.0.1:*) ;; *) exit 3;; esac; test -z \"${NO_PROXY-}${no_proxy-}\"",
        &ip,
    );
    yaml += &step("undeclared", &format!("{curl} http://example.com/"), &ip);
    yaml += &step(
        "other_port",
        &format!("{curl} http://127.0.0.1:{other}/"),
        &ip,
    );
    yaml += &step(
        "raw_ip",
        &format!("{curl} http://127.0.0.1:{port}/raw"),
        &format!("[\"localhost:{port}\"]"),
    );
    yaml += &step(
        "direct",
        &format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET /direct HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
        ),
        &ip,
    );
    yaml += &step(
        "direct_other",
        &format!(
            "exec 3<>/dev/tcp/127.0.0.1/{other} && printf 'GET /direct HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
        ),
        &ip,
    );
    yaml += &step("udp", &format!("echo x > /dev/udp/127.0.0.1/{port}"), &ip);
    yaml += &step("unix", &python_unix, &ip);
    let dns = private_hostname(port);
    if let Some(name) = &dns {
        yaml += &step(
            "dns_trick",
            &format!("{curl} http://{name}:{port}/dns"),
            &format!("[\"{name}:{port}\"]"),
        );
    }
    // The control: the same unix connect succeeds without an egress list.
    yaml += &format!(
        "  - {{id: unix_control, tool: bash, continue_on_error: true, network: true, parameters: {{command: {}}}}}\n",
        serde_json::to_string(&python_unix).unwrap()
    );
    // Every step approved (inline python is unclassifiable; Landlock's
    // egress is not auto-approved): each runs in the profile of its risk.
    let ids: Vec<&str> = yaml
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- {id: "))
        .filter_map(|rest| rest.split(',').next())
        .collect();
    let mut args = vec!["--sandbox-backend", flag];
    for id in &ids {
        args.extend(["--approve", id]);
    }
    let o = env.run(&yaml, &args);
    drop(unix);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    let r = env.report();
    assert_eq!(r["sandbox"]["available"], backend, "{}", r["sandbox"]);
    for id in ["allowed", "tunnel", "by_name", "proxy_env", "unix_control"] {
        let s = env.step(id);
        assert_eq!(
            s["status"],
            "success",
            "{backend}: {id}: {s}\n{}",
            artifact(&env, id, "stderr")
        );
    }
    for id in ["allowed", "tunnel", "by_name"] {
        assert_eq!(artifact(&env, id, "stdout"), "hello\n", "{backend}: {id}");
        let t = &env.step(id)["egress"];
        assert_eq!(t["allowed"], 1, "{backend}: {id}: {t}");
        assert_eq!(t["denied"], 0, "{backend}: {id}: {t}");
        assert!(
            t["bytes_in"].as_u64().unwrap() >= 60,
            "{backend}: {id}: {t}"
        );
        assert!(t["bytes_out"].as_u64().unwrap() > 0, "{backend}: {id}: {t}");
    }
    let mut refused = vec![
        "undeclared",
        "other_port",
        "raw_ip",
        "direct",
        "direct_other",
        "udp",
        "unix",
    ];
    if dns.is_some() {
        refused.push("dns_trick");
    }
    for id in &refused {
        let s = env.step(id);
        assert_eq!(s["status"], "failed", "{backend}: {id}: {s}");
    }
    // The upstream saw exactly the three requests let through, the other
    // server none.
    let mut lines = seen.lock().unwrap().clone();
    lines.sort();
    assert_eq!(
        lines,
        [
            "GET /by-name HTTP/1.1",
            "GET /plain HTTP/1.1",
            "GET /tunnel HTTP/1.1"
        ],
        "{backend}"
    );
    assert!(other_seen.lock().unwrap().is_empty(), "{backend}");
    // The unix socket is refused by the sandbox (EACCES), not missing.
    let err = artifact(&env, "unix", "stderr");
    assert!(err.contains("PermissionError"), "{backend}: {err}");
    // Each refusal through the proxy: an audit line naming the host, and a console line.
    let audit = audit_egress(&env);
    let denied = |step: &str| -> Vec<&serde_json::Value> {
        audit
            .iter()
            .filter(|v| v["step"] == step && v["allowed"] == false)
            .collect()
    };
    let mut expect = vec![
        (
            "undeclared",
            "example.com".to_owned(),
            80,
            "not in the step's egress list",
        ),
        ("other_port", "127.0.0.1".to_owned(), other, "raw IP"),
        ("raw_ip", "127.0.0.1".to_owned(), port, "raw IP"),
    ];
    if let Some(name) = &dns {
        expect.push(("dns_trick", name.to_lowercase(), port, "resolves to"));
    }
    let err = stderr(&o);
    for (id, host, p, why) in expect {
        let d = denied(id);
        assert_eq!(d.len(), 1, "{backend}: {id}: {audit:?}");
        assert_eq!(d[0]["host"], host.as_str(), "{backend}: {id}");
        assert_eq!(d[0]["port"], p, "{backend}: {id}");
        assert!(
            d[0]["reason"].as_str().unwrap().contains(why),
            "{backend}: {id}: {}",
            d[0]
        );
        assert!(
            err.contains(&format!("{id} egress denied: {host}:{p}")),
            "{backend}: {id}: {err}"
        );
        assert_eq!(env.step(id)["egress"]["denied"], 1, "{backend}: {id}");
    }
    // What never reached the proxy left no line: the step went around it and failed.
    for id in ["direct", "direct_other", "udp", "unix"] {
        assert!(
            audit.iter().all(|v| v["step"] != id),
            "{backend}: {id}: {audit:?}"
        );
    }
    // Every allowed connection is in the audit log, with its bytes.
    let allowed: Vec<_> = audit.iter().filter(|v| v["allowed"] == true).collect();
    assert_eq!(allowed.len(), 3, "{backend}: {audit:?}");
    for a in allowed {
        assert_eq!(a["address"], "127.0.0.1", "{backend}: {a}");
        assert!(a["bytes_in"].as_u64().unwrap() > 0, "{backend}: {a}");
    }
    // The profile records the list.
    assert_eq!(
        env.step("allowed")["sandbox"]["profile"]["egress"],
        serde_json::json!([format!("127.0.0.1:{port}")]),
        "{backend}"
    );
}

/// How each backend's egress decides approval: bwrap confines the step to
/// the proxy (auto-approved at moderate); Landlock confines it to the
/// proxy's port only, so such a step needs an explicit approval (unless the
/// policy allows any network anyway).
pub fn landlock_egress_is_not_auto_approved_bwrap_egress_is(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let yaml = format!(
        "version: 1\nid: egress\npolicy: {{risk_tolerance: high}}\nsteps:\n{}",
        step("s", "true", "[\"api.example.com\"]")
    );
    // A policy file that allows a high tolerance but not any network.
    let policy = env.write(
        "policy.yaml",
        "risk_tolerance: high\nallow_unsandboxed: true\nfail_on_secrets: false\n",
    );
    let policy = policy.display().to_string();
    let o = env.run(&yaml, &["--sandbox-backend", flag, "--policy", &policy]);
    let s = env.step("s");
    if flag == "landlock" {
        assert_eq!(s["status"], "denied", "{backend}: {s}");
        let why = s["approval"]["reason"].as_str().unwrap();
        assert!(why.contains("proxy's port only"), "{backend}: {why}");
        assert_eq!(
            env.report()["sandbox"]["properties"]["egress"],
            "proxy port only"
        );
        let o = env.run(
            &yaml,
            &[
                "--sandbox-backend",
                flag,
                "--policy",
                &policy,
                "--approve",
                "s",
            ],
        );
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
        assert_eq!(env.step("s")["status"], "success");
    } else {
        assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
        assert_eq!(s["status"], "success", "{backend}: {s}");
        assert_eq!(s["approval"]["decision"], "auto_approved", "{backend}: {s}");
        assert_eq!(env.report()["sandbox"]["properties"]["egress"], "enforced");
    }
    assert_eq!(s["risk"]["effective"], "moderate", "{backend}: {s}");
}

/// A stand-in model API: records each request (line, headers, body) and
/// answers `{"content": [{"text": "pong-4711"}]}`.
fn model_api() -> (u16, Arc<Mutex<Vec<String>>>) {
    model_api_answering(r#"{"content":[{"type":"text","text":"pong-4711"}]}"#)
}

/// A stand-in model API that answers every call with `body`.
fn model_api_answering(body: &'static str) -> (u16, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut buf = Vec::new();
            let mut b = [0u8; 4096];
            let mut want = None;
            loop {
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    want = Some(end + 4 + len);
                }
                if want.is_some_and(|w| buf.len() >= w) {
                    break;
                }
                match c.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&b[..n]),
                }
            }
            s.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf).into_owned());
            let _ = c.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (port, seen)
}

/// The real key stays with plangate: the CLI finds a placeholder, reaches
/// the model API only through plangate's endpoint (which adds the key), and
/// finds the key nowhere it can look (environment, `/proc`, its files).
pub fn the_model_key_stays_with_plangate(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (port, seen) = model_api();
    let real = "sk-ant-api03-Zq7test0123456789abcdefXYZ";
    let reversed: String = real.chars().rev().collect();
    // The stand-in CLI knows the key only reversed (so that its own command
    // line does not hold it) and looks for it everywhere it can read.
    let script = format!(
        r#"cat > /dev/null
fail() {{ echo "$1" >&2; exit 9; }}
real=$(printf '%s' '{reversed}' | rev)
[ "$ANTHROPIC_API_KEY" = plangate-placeholder-key ] || fail "key variable: not the placeholder"
case "$ANTHROPIC_BASE_URL" in http://127.0.0.1:*) ;; *) fail "base url: $ANTHROPIC_BASE_URL";; esac
env | grep -qF "$real" && fail LEAK-env
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
  grep -qF "$real" "$f" 2>/dev/null && fail "LEAK-$f"
done
grep -rqF "$real" "$HOME" "$TMPDIR" . 2>/dev/null && fail LEAK-files
ans=$(curl -sS --fail -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' \
  -d '{{"model":"m","max_tokens":5,"messages":[]}}' "$ANTHROPIC_BASE_URL/v1/messages") || fail "the model call failed"
case "$ans" in *pong-4711*) ;; *) fail "answer: $ans";; esac
code=$(curl -s -o /dev/null -w '%{{http_code}}' -d x "$ANTHROPIC_BASE_URL/v1/files")
[ "$code" = 403 ] || fail "another path: $code"
curl -s --fail --max-time 5 --noproxy '' --proxy "$HTTP_PROXY" -o /dev/null -d x "http://127.0.0.1:{port}/v1/messages" && fail "reached the API through the proxy"
curl -s --fail --max-time 5 --noproxy '*' -o /dev/null -d x "http://127.0.0.1:{port}/v1/messages" && fail "reached the API directly"
printf '%s' '{{"status": "OK", "summary": "answered", "artifacts": [], "next_actions": []}}'
"#
    );
    let (o, err) = run_key_agent(&env, flag, port, &script, real, "");
    let s = env.step("ask");
    assert_eq!(code(&o), 0, "{backend}: {}\n{s}\n{err}", stderr(&o));
    assert_eq!(s["status"], "success", "{backend}: {s}\n{err}");
    // The upstream got one call, with the real key and nothing of the placeholder.
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{backend}: {got:?}");
    let req = got[0].to_lowercase();
    assert!(
        req.starts_with("post /v1/messages http/1.1\r\n"),
        "{backend}: {req}"
    );
    assert!(
        req.contains(&format!("x-api-key: {}", real.to_lowercase())),
        "{backend}: {req}"
    );
    assert!(!req.contains("placeholder"), "{backend}: {req}");
    assert!(req.contains("\"max_tokens\":5"), "{backend}: {req}");
    // The call and the refused path are in the audit log.
    let audit = audit_egress(&env);
    assert!(
        audit.iter().any(|v| v["allowed"] == true
            && v["reason"]
                .as_str()
                .is_some_and(|r| r.contains("POST /v1/messages"))
            && v["bytes_in"].as_u64().unwrap_or(0) > 0),
        "{backend}: {audit:?}"
    );
    assert!(
        audit.iter().any(|v| v["allowed"] == false
            && v["reason"]
                .as_str()
                .is_some_and(|r| r.contains("/v1/files"))),
        "{backend}: {audit:?}"
    );
    // Nothing plangate wrote holds the key.
    for e in walk(&env.out) {
        let text = std::fs::read(&e).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains(real),
            "{backend}: {} holds the key",
            e.display()
        );
    }
}

/// A stand-in model API that echoes the key it got (some gateways quote
/// the header in a 401): in a response header, and in the body twice, the
/// second time cut across two writes.
fn model_api_echoing_the_key() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut buf = Vec::new();
            let mut b = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&b[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf).into_owned();
            let key = head
                .lines()
                .find_map(|l| {
                    l.to_lowercase()
                        .starts_with("x-api-key:")
                        .then(|| l[10..].trim().to_owned())
                })
                .unwrap_or_default();
            let (a, b2) = key.split_at(key.len() / 2);
            let body = format!("{{\"error\": \"invalid key {key}\", \"again\": \"{a}");
            let _ = c.write_all(
                format!("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nX-Echo: {key}\r\n\r\n{body}").as_bytes(),
            );
            let _ = c.flush();
            std::thread::sleep(std::time::Duration::from_millis(50));
            let _ = c.write_all(format!("{b2}\"}}").as_bytes());
        }
    });
    port
}

/// An upstream that echoes the key gives the CLI nothing of it: plangate's
/// endpoint replaces it, in the answer's headers and body, even cut across
/// two pieces of the stream.
pub fn an_upstream_echoing_the_key_gives_it_to_no_cli(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let port = model_api_echoing_the_key();
    let real = "sk-ant-api03-Echo7test0123456789abcdefXYZ";
    let reversed: String = real.chars().rev().collect();
    let script = format!(
        r#"cat > /dev/null
real=$(printf '%s' '{reversed}' | rev)
ans=$(curl -sS -i -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' \
  -d '{{"model":"m","max_tokens":5,"messages":[]}}' "$ANTHROPIC_BASE_URL/v1/messages")
case "$ans" in *"$real"*) echo LEAKED-KEY >&2; exit 9;; esac
case "$ans" in *plangate-placeholder-key*) ;; *) echo "no mask: $ans" >&2; exit 8;; esac
printf '%s' '{{"status": "OK", "summary": "answered", "artifacts": [], "next_actions": []}}'
"#
    );
    let (o, err) = run_key_agent(&env, flag, port, &script, real, ", max_attempts: 1");
    assert!(
        !err.contains("LEAKED-KEY"),
        "{backend}: the CLI got the key back: {err}"
    );
    assert_eq!(
        env.step("ask")["status"],
        "success",
        "{backend}: {}\n{err}",
        stderr(&o)
    );
}

/// Run a one-step plan whose agent CLI is the bash `script`, its API the
/// model endpoint on `port`, with `real` as the model key in plangate's
/// environment (`params`: more parameters of the step). The output, and
/// what the CLI wrote on stderr in every attempt.
fn run_key_agent(
    env: &Env,
    flag: &str,
    port: u16,
    script: &str,
    real: &str,
    params: &str,
) -> (std::process::Output, String) {
    let yaml = format!(
        "version: 1\nid: key\npolicy: {{risk_tolerance: medium}}\nagents:\n  cli:\n    command: [bash, -c, {}]\n    timeout: 60\n    api: {{provider: anthropic, base_url: \"http://127.0.0.1:{port}\"}}\nsteps:\n  - {{id: ask, tool: agent, parameters: {{agent: cli, prompt: hi{params}}}}}\n",
        serde_json::to_string(script).unwrap()
    );
    let plan = env.write("plan.yaml", &yaml);
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan)
        .args(["--sandbox-backend", flag, "--approve", "ask", "--out"])
        .arg(&env.out)
        .env("ANTHROPIC_API_KEY", real)
        .output()
        .unwrap();
    let err = walk(&env.out.join("artifacts/ask"))
        .iter()
        .filter(|p| p.to_string_lossy().ends_with("stderr.txt"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    (o, err)
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The budget is enforced where the tokens flow: the endpoint reads each
/// answer's usage, and once the run's budget is spent it refuses the next
/// call; the step fails, the run ends with exit 6 and a valid report whose
/// usage is what the endpoint measured.
pub fn the_endpoint_refuses_calls_past_the_budget(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (port, seen) = model_api_answering(
        r#"{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1000,"output_tokens":500}}"#,
    );
    let script = r#"cat > /dev/null
for i in 1 2 3 4; do
  curl -s -o /dev/null -w '%{http_code}\n' -H 'content-type: application/json' -d '{"model":"m","max_tokens":5,"messages":[]}' "$ANTHROPIC_BASE_URL/v1/messages"
done
printf '%s' '{"status": "OK", "summary": "spent", "artifacts": [], "next_actions": []}'
"#;
    let yaml = format!(
        "version: 1\nid: budget\npolicy: {{risk_tolerance: medium, budget: {{max_tokens: 2000}}}}\nagents:\n  cli:\n    command: [bash, -c, {}]\n    timeout: 60\n    api: {{provider: anthropic, base_url: \"http://127.0.0.1:{port}\"}}\nsteps:\n  - {{id: spend, tool: agent, parameters: {{agent: cli, prompt: hi}}}}\n",
        serde_json::to_string(&script).unwrap()
    );
    let plan = env.write("plan.yaml", &yaml);
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan)
        .args(["--sandbox-backend", flag, "--approve", "spend", "--out"])
        .arg(&env.out)
        .env("ANTHROPIC_API_KEY", "sk-ant-api03-budget-test-key-000000")
        .output()
        .unwrap();
    assert_eq!(
        code(&o),
        6,
        "{backend}: {}\n{}\n{:?}",
        stderr(&o),
        env.step("spend"),
        audit_egress(&env)
    );
    // Two calls went through (1 500 tokens each: the second passed at 1 500 of
    // 2 000), the third and fourth were refused at the endpoint.
    assert_eq!(seen.lock().unwrap().len(), 2, "{backend}");
    let s = env.step("spend");
    assert_eq!(s["status"], "failed", "{backend}: {s}");
    assert!(
        s["error"]
            .as_str()
            .unwrap()
            .contains("token budget exhausted"),
        "{backend}: {s}"
    );
    assert_eq!(s["usage"]["input_tokens"], 2000, "{backend}: {s}");
    assert_eq!(s["usage"]["output_tokens"], 1000, "{backend}: {s}");
    assert_eq!(s["usage"]["estimated"], false, "{backend}: {s}");
    let r = env.report();
    assert_eq!(
        r["usage"]["input_tokens"], 2000,
        "{backend}: {}",
        r["usage"]
    );
    let audit = audit_egress(&env);
    let refused: Vec<_> = audit
        .iter()
        .filter(|v| {
            v["allowed"] == false
                && v["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("budget exhausted"))
        })
        .collect();
    assert_eq!(refused.len(), 2, "{backend}: {audit:?}");
}

/// The stand-in CLI of a budget test: `calls` model calls with curl, each
/// answer on stderr as `BODY<i> <body> CODE<status>`, then `answer` on stdout.
fn spending_cli(calls: u32, url: &str, request: &str, answer: &str) -> String {
    format!(
        "cat > /dev/null\nfor i in $(seq 1 {calls}); do\n  printf 'BODY%s ' \"$i\" >&2\n  curl -s -w ' CODE%{{http_code}}\\n' -H 'content-type: application/json' -d '{request}' \"{url}\" >&2\ndone\nprintf '%s' '{answer}'\n"
    )
}

/// `BODY<i> <body> CODE<status>` lines of a step's stderr: (status, body as JSON).
fn answers(env: &Env, id: &str) -> Vec<(u16, serde_json::Value)> {
    let err = std::fs::read_to_string(env.out.join(format!("artifacts/{id}/attempt-1.stderr.txt")))
        .unwrap_or_default();
    err.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("BODY")?;
            let (_, rest) = rest.split_once(' ')?;
            let (body, code) = rest.rsplit_once(" CODE")?;
            Some((
                code.trim().parse().ok()?,
                serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
            ))
        })
        .collect()
}

/// Per-step budgets at the endpoint, one step per provider: the first call
/// passes, the second is refused (403, never a status the CLIs retry) in
/// that provider's error shape naming the step's budget; each step fails,
/// the others still run, and the run ends with exit 6 and a valid report.
/// The step budget comes from the step (cost, priced with the model's
/// built-in price, cached input at its own rate), from the agent's default
/// (tokens), and from a `--policy` file's `step_budget` that lowers the
/// step's own. The CLI's own cost figure is shown beside the measured one.
pub fn step_budgets_refuse_the_next_call_in_each_providers_shape(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    // 1 000 fresh + 2 000 cache-read input tokens and 500 output: 3 500 tokens.
    let (port, seen) = model_api_answering(
        r#"{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1000,"output_tokens":500,"cache_read_input_tokens":2000}}"#,
    );
    let envelope = r#"{"status": "OK", "summary": "spent", "artifacts": [], "next_actions": []}"#;
    let claude_answer = format!(
        r#"{{"result": {}, "usage": {{"input_tokens": 3000, "output_tokens": 500}}, "total_cost_usd": 0.5}}"#,
        serde_json::to_string(envelope).unwrap()
    );
    let claude = spending_cli(
        2,
        "$ANTHROPIC_BASE_URL/v1/messages",
        r#"{"model":"claude-haiku-4-5-20251001","max_tokens":5,"messages":[]}"#,
        &claude_answer,
    );
    let codex = spending_cli(
        2,
        "$OPENAI_BASE_URL/responses",
        r#"{"model":"gpt-5-mini","input":"hi"}"#,
        envelope,
    );
    let gemini = spending_cli(
        2,
        "$GOOGLE_GEMINI_BASE_URL/v1beta/models/gemini-2.5-flash:generateContent",
        r#"{"contents":[]}"#,
        envelope,
    );
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let yaml = format!(
        "version: 1\nid: step-budgets\npolicy: {{risk_tolerance: medium}}\nagents:\n  claude:\n    command: [bash, -c, {}]\n    output_format: json\n    timeout: 60\n    api: {{provider: anthropic, base_url: \"{base}\"}}\n  codex:\n    command: [bash, -c, {}]\n    timeout: 60\n    api: {{provider: openai, base_url: \"{base}/v1\"}}\n    budget: {{max_tokens: 1000}}\n  gemini:\n    command: [bash, -c, {}]\n    timeout: 60\n    api: {{provider: gemini, base_url: \"{base}\"}}\nsteps:\n  - {{id: claude_cost, tool: agent, parameters: {{agent: claude, prompt: hi, budget: {{max_cost_usd: 0.003}}}}}}\n  - {{id: codex_tokens, tool: agent, parameters: {{agent: codex, prompt: hi}}}}\n  - {{id: gemini_capped, tool: agent, parameters: {{agent: gemini, prompt: hi, budget: {{max_tokens: 100000}}}}}}\n",
        q(&claude),
        q(&codex),
        q(&gemini)
    );
    let plan = env.write("plan.yaml", &yaml);
    let policy = env.write(
        "policy.yaml",
        "risk_tolerance: medium\nstep_budget: {max_tokens: 3000}\n",
    );
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan)
        .arg("--policy")
        .arg(&policy)
        .args(["--sandbox-backend", flag, "--out"])
        .arg(&env.out)
        .args(["--approve", "claude_cost,codex_tokens,gemini_capped"])
        .env(
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-Q7x9Lm2Pz4Rt8Vw1Yb5Nc3Kd6Hf0",
        )
        .env("OPENAI_API_KEY", "sk-proj-Zr4Tq8Wm1Xv5Ys9Ub3Pn7Lk2Jh6Gf0")
        .env("GEMINI_API_KEY", "AIzaSyQ7x9Lm2Pz4Rt8Vw1Yb5Nc3Kd6Hf0Jq")
        .output()
        .unwrap();
    let r = env.report();
    assert_eq!(
        code(&o),
        6,
        "{backend}: {}\n{}",
        stderr(&o),
        serde_json::to_string_pretty(&r["steps"]).unwrap()
    );
    assert_eq!(r["status"], "budget_exhausted", "{backend}");
    // One call per step reached the provider; the second of each was refused.
    let got = seen.lock().unwrap().clone();
    let lines: Vec<&str> = got.iter().map(|g| g.lines().next().unwrap_or("")).collect();
    assert_eq!(lines.len(), 3, "{backend}: {lines:?}");
    for (id, budget) in [
        ("claude_cost", "$0.0037 of $0.0030 spent"),
        ("codex_tokens", "3500 of 1000 tokens used"),
        ("gemini_capped", "3500 of 3000 tokens used"),
    ] {
        let s = env.step(id);
        assert_eq!(s["status"], "failed", "{backend}: {s}");
        let err = s["error"].as_str().unwrap_or("");
        assert!(
            err.contains("step budget exhausted") && err.contains(budget),
            "{backend}: {id}: {err}"
        );
        assert_eq!(s["usage"]["input_tokens"], 3000, "{backend}: {id}: {s}");
        assert_eq!(s["usage"]["output_tokens"], 500, "{backend}: {id}: {s}");
        let a = answers(&env, id);
        assert_eq!(a.len(), 2, "{backend}: {id}: {a:?}");
        assert_eq!(a[0].0, 200, "{backend}: {id}: {a:?}");
        assert_eq!(a[1].0, 403, "{backend}: {id}: {a:?}");
        let e = &a[1].1;
        let message = match id {
            "claude_cost" => {
                assert_eq!(e["type"], "error", "{e}");
                assert_eq!(e["error"]["type"], "permission_error", "{e}");
                e["error"]["message"].as_str()
            }
            "codex_tokens" => {
                assert!(
                    e["error"]["type"].is_string() && e.get("type").is_none(),
                    "{e}"
                );
                assert_eq!(e["error"]["code"], "plangate_refused", "{e}");
                e["error"]["message"].as_str()
            }
            _ => {
                assert_eq!(e["error"]["code"], 403, "{e}");
                assert_eq!(e["error"]["status"], "PERMISSION_DENIED", "{e}");
                e["error"]["message"].as_str()
            }
        };
        assert!(
            message.is_some_and(|m| m.contains("step budget exhausted")),
            "{backend}: {id}: {e}"
        );
    }
    // Claude Haiku 4.5's built-in price: 1 000 fresh at $1, 2 000 cache reads
    // at $0.10, 500 out at $5 per million; the CLI's own $0.50 beside it.
    let c = env.step("claude_cost");
    let cost = c["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0037).abs() < 1e-9, "{backend}: {c}");
    assert_eq!(c["usage"]["reported_by_cli_usd"], 0.5, "{backend}: {c}");
    assert!(
        env.step("codex_tokens")["usage"]
            .get("reported_by_cli_usd")
            .is_none()
    );
    // gpt-5-mini: 1 000 at $0.25, 2 000 cached at $0.025, 500 at $2.
    let cost = env.step("codex_tokens")["usage"]["cost_usd"]
        .as_f64()
        .unwrap();
    assert!((cost - 0.0013).abs() < 1e-9, "{backend}: {cost}");
    let md = env
        .cmd()
        .arg("report")
        .arg(env.out.join("report.json"))
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("`claude_cost`") && md.contains("(the CLI reported $0.5000)"),
        "{backend}: {md}"
    );
}

/// Under a cost budget a call naming a model without a built-in price (and
/// an agent without `price`) is refused before it is sent, naming the fix;
/// never priced at zero.
pub fn a_call_for_a_model_without_a_price_is_refused_under_a_cost_budget(b: Backend) {
    let (flag, backend) = b.pair();
    let env = Env::new();
    let (port, seen) =
        model_api_answering(r#"{"content":[],"usage":{"input_tokens":10,"output_tokens":5}}"#);
    let cli = spending_cli(
        1,
        "$ANTHROPIC_BASE_URL/v1/messages",
        r#"{"model":"my-local-model","max_tokens":5,"messages":[]}"#,
        r#"{"status": "OK", "summary": "x", "artifacts": [], "next_actions": []}"#,
    );
    let yaml = format!(
        "version: 1\nid: unpriced\npolicy: {{risk_tolerance: medium, budget: {{max_cost_usd: 5}}}}\nagents:\n  local:\n    command: [bash, -c, {}]\n    timeout: 60\n    api: {{provider: anthropic, base_url: \"http://127.0.0.1:{port}\"}}\nsteps:\n  - {{id: ask, tool: agent, parameters: {{agent: local, prompt: hi}}}}\n",
        serde_json::to_string(&cli).unwrap()
    );
    let plan = env.write("plan.yaml", &yaml);
    let o = env
        .cmd()
        .arg("run")
        .arg(&plan)
        .args(["--sandbox-backend", flag, "--approve", "ask", "--out"])
        .arg(&env.out)
        .env(
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-Wm1Xv5Ys9Ub3Pn7Lk2Jh6Gf0Zr4",
        )
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{backend}: {}", stderr(&o));
    assert!(seen.lock().unwrap().is_empty(), "{backend}");
    let s = env.step("ask");
    let err = s["error"].as_str().unwrap_or("");
    assert!(
        err.contains("model `my-local-model` has no built-in price")
            && err.contains("set `price` on agent `local`"),
        "{backend}: {s}"
    );
    let a = answers(&env, "ask");
    assert_eq!(a.len(), 1, "{backend}: {a:?}");
    assert_eq!(a[0].0, 403, "{backend}: {a:?}");
    assert_eq!(
        a[0].1["error"]["type"], "permission_error",
        "{backend}: {a:?}"
    );
}

/// A step's processes that hold a declared secret send it wherever they
/// reach: the hosts of its `egress` list (or of its agent's), any host with
/// `network: true`. Only the operator's `--policy` file (`allowed_hosts`,
/// `secret_hosts`) lets them; else the step is dangerous: denied at medium,
/// run with `--approve`. Without secrets the same steps are unaffected. An
/// agent with `api` holds no key: plangate sends it to `api.base_url`, a host
/// the plan names, so the operator must allow that one (issue 23, item 5).
pub fn secrets_in_a_steps_processes_go_only_to_hosts_the_operator_allows(b: Backend) {
    let (flag, backend) = b.pair();
    let landlock = flag == "landlock";
    let env = Env::new();
    let agents = "agents:\n  cli:\n    command: [bash, -c, 'cat > /dev/null']\n    api: {provider: anthropic, api_key_env: PG_API_KEY, base_url: \"http://127.0.0.1:9\"}\n";
    let steps = [
        "  - {id: eg, tool: bash, secrets: [MY_TOKEN], parameters: {command: 'touch eg-ran', egress: [api.example.com]}}\n",
        "  - {id: eg_plain, tool: bash, parameters: {command: 'touch eg-plain-ran', egress: [api.example.com]}}\n",
        "  - {id: net, tool: bash, secrets: [MY_TOKEN], network: true, parameters: {command: 'touch net-ran'}}\n",
        "  - {id: net_plain, tool: bash, network: true, parameters: {command: 'touch net-plain-ran'}}\n",
        "  - {id: nonet, tool: bash, secrets: [MY_TOKEN], parameters: {command: 'touch nonet-ran'}}\n",
        "  - {id: ag, tool: agent, parameters: {agent: cli, prompt: hi}}\n",
    ];
    let plan = |only: &[&str]| {
        let chosen: String = steps
            .iter()
            .filter(|s| only.iter().any(|id| s.contains(&format!("id: {id},"))))
            .copied()
            .collect();
        env.write(
            "plan.yaml",
            &format!("version: 1\nid: sh\n{agents}steps:\n{chosen}"),
        )
    };
    let policy = |text: &str| {
        let p = env.ws.parent().unwrap().join("operator-policy.yaml");
        std::fs::write(
            &p,
            format!("risk_tolerance: medium\nallow_any_network: true\n{text}"),
        )
        .unwrap();
        p
    };
    let cmd = |verb: &str, plan: &std::path::Path, pol: &std::path::Path, args: &[&str]| {
        let mut c = env.cmd();
        c.arg(verb)
            .arg(plan)
            .args([
                "--sandbox-backend",
                flag,
                "--risk-tolerance",
                "medium",
                "--policy",
            ])
            .arg(pol)
            .env("MY_TOKEN", "pg-proc-token-8e1f03")
            .env("PG_API_KEY", "pg-api-key-41c2d9");
        if verb == "run" {
            c.arg("--out").arg(&env.out);
        } else {
            c.args(["--format", "json"]);
        }
        c.args(args).output().unwrap()
    };
    let all = plan(&["eg", "eg_plain", "net", "net_plain", "nonet", "ag"]);
    let open = policy("");
    let v = cmd("validate", &all, &open, &[]);
    assert_eq!(code(&v), 3, "{backend}: {}", stderr(&v));
    let shown: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    let decision = |id: &str| {
        let s = shown["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {shown:#}"));
        (
            s["approval"]["decision"].as_str().unwrap().to_owned(),
            s["approval"]["reason"].as_str().unwrap().to_owned(),
        )
    };
    let (d, why) = decision("eg");
    assert_eq!(d, "denied", "{backend}: {why}");
    if landlock {
        assert!(why.contains("proxy's port only"), "{backend}: {why}");
    } else {
        assert!(
            why.contains("sends secret `MY_TOKEN` to `api.example.com`, which the operator's policy does not allow"),
            "{backend}: {why}"
        );
    }
    let (d, why) = decision("net");
    assert_eq!(d, "denied", "{backend}: {why}");
    assert!(
        why.contains("sends secret `MY_TOKEN` to any host (`network: true`)"),
        "{backend}: {why}"
    );
    let (d, why) = decision("ag");
    assert_eq!(d, "denied", "{backend}: {why}");
    assert!(
        why.contains("sends secret `PG_API_KEY` to `127.0.0.1:9`"),
        "{backend}: {why}"
    );
    // Landlock does not auto-approve a workspace-write step (metadata) or egress
    // (the proxy's port only) anyway: there, only the reason is checked.
    for id in ["net_plain", "nonet", "eg_plain"] {
        let (d, why) = decision(id);
        assert!(!why.contains("sends secret"), "{backend} {id}: {why}");
        if !landlock {
            assert_eq!(d, "auto_approved", "{backend} {id}: {why}");
        }
    }
    // `run` agrees, and runs nothing.
    let o = cmd("run", &all, &open, &[]);
    assert_eq!(code(&o), 3, "{backend}: {}", stderr(&o));
    for m in ["eg-ran", "net-ran", "nonet-ran", "net-plain-ran"] {
        assert!(!env.ws.join(m).exists(), "{backend}: {m}");
    }
    // The operator's host (either key), or an approval, lets the egress step run.
    let eg = plan(&["eg"]);
    for text in [
        "allowed_hosts: [api.example.com]\n",
        "secret_hosts: {MY_TOKEN: [\"*.example.com\", api.example.com]}\n",
    ] {
        let _ = std::fs::remove_file(env.ws.join("eg-ran"));
        let o = cmd("run", &eg, &policy(text), &[]);
        if landlock {
            assert_eq!(code(&o), 3, "{backend} {text}: {}", stderr(&o));
        } else {
            assert_eq!(code(&o), 0, "{backend} {text}: {}", stderr(&o));
            assert!(env.ws.join("eg-ran").exists(), "{backend} {text}");
        }
    }
    // Another secret's hosts, or a narrower port, do not.
    for text in [
        "secret_hosts: {OTHER: [api.example.com]}\n",
        "allowed_hosts: [\"api.example.com:443\"]\n",
    ] {
        let o = cmd("run", &eg, &policy(text), &[]);
        assert_eq!(code(&o), 3, "{backend} {text}: {}", stderr(&o));
    }
    let _ = std::fs::remove_file(env.ws.join("eg-ran"));
    let o = cmd("run", &eg, &open, &["--approve", "eg"]);
    assert_eq!(code(&o), 0, "{backend}: {}", stderr(&o));
    assert!(env.ws.join("eg-ran").exists(), "{backend}");
}
