//! Credentials stay with plangate (issue 25, item 5): `http_request` takes a
//! declared secret in a header by reference and resolves it itself; a
//! substitution spelling (`${NAME}`, `$NAME`, `${{ secrets.X }}`) anywhere in
//! its parameters is a load error that says how to write it; the CI write
//! tokens reach no step, sandboxed or not, unless declared (then with a warning).
//!
//! Every value here is made up for the test.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Env, code, mock_server, read_json, stderr};

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                hits.push(p.display().to_string());
            }
        }
    }
    hits
}

fn assert_nowhere(env: &Env, o: &std::process::Output, value: &str) {
    let hits = files_containing(&env.out, value);
    assert!(hits.is_empty(), "{value} left in {hits:?}");
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains(value),
        "{value} on stdout"
    );
    assert!(!stderr(o).contains(value), "{value} on stderr");
}

/// A one-step `http_request` plan in YAML with `where` set to `value`.
fn http_plan(where_: &str, value: &str) -> String {
    let v = serde_json::to_string(value).unwrap();
    let (url, extra) = match where_.split_once('.') {
        Some(("headers", name)) => (
            "\"http://api.example.com:9/x\"".to_owned(),
            format!("      headers:\n        {name}: {v}\n"),
        ),
        Some(("params", name)) => (
            "\"http://api.example.com:9/x\"".to_owned(),
            format!("      params:\n        {name}: {v}\n"),
        ),
        _ if where_ == "url" => (v.clone(), String::new()),
        _ => (
            "\"http://api.example.com:9/x\"".to_owned(),
            format!("      body: {v}\n"),
        ),
    };
    let method = if where_ == "body" { "POST" } else { "GET" };
    format!(
        "version: 1\nid: subst\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: call\n    tool: http_request\n    parameters:\n      method: {method}\n      url: {url}\n{extra}"
    )
}

#[test]
fn a_substitution_spelling_in_http_request_is_a_load_error_that_says_how_to_write_it() {
    let table = read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/credentials/substitutions.json"),
    );
    for case in table["cases"].as_array().unwrap() {
        let (w, value) = (
            case["where"].as_str().unwrap(),
            case["value"].as_str().unwrap(),
        );
        let env = Env::new();
        let plan = http_plan(w, value);
        let line = plan
            .lines()
            .position(|l| l.contains(&serde_json::to_string(value).unwrap()))
            .unwrap()
            + 1;
        let o = env.run(&plan, &[]);
        assert_eq!(code(&o), 2, "{w}={value}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("plan.yaml:{line}:")),
            "{w}={value}: no line {line}: {err}"
        );
        assert!(
            err.contains(case["names"].as_str().unwrap()),
            "{w}={value}: {err}"
        );
        assert!(
            err.contains("would be sent literally"),
            "{w}={value}: {err}"
        );
        assert!(
            err.contains(case["help"].as_str().unwrap()),
            "{w}={value}: {err}"
        );
        assert!(!env.out.join("artifacts/call").exists(), "nothing ran");
    }
    for case in table["accepted"].as_array().unwrap() {
        let (w, value) = (
            case["where"].as_str().unwrap(),
            case["value"].as_str().unwrap(),
        );
        let env = Env::new();
        let o = env
            .cmd()
            .arg("validate")
            .arg(env.write("plan.yaml", &http_plan(w, value)))
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{w}={value} must load: {}", stderr(&o));
    }
}

#[test]
fn a_header_secret_by_reference_must_be_declared_and_have_one_placeholder() {
    let base = "version: 1\nid: s\npolicy: {risk_tolerance: high}\nsteps:\n  - id: call\n    tool: http_request\n";
    for (secrets, header, want) in [
        (
            "",
            "{secret: GH_PAT}",
            "uses the secret `GH_PAT`, which the step does not declare",
        ),
        (
            "    secrets: [OTHER]\n",
            "{secret: GH_PAT}",
            "does not declare",
        ),
        (
            "    secrets: [GH_PAT]\n",
            "{secret: GH_PAT, format: \"Bearer\"}",
            "exactly one `{}`",
        ),
        (
            "    secrets: [GH_PAT]\n",
            "{secret: GH_PAT, format: \"{} {}\"}",
            "exactly one `{}`",
        ),
        (
            "    secrets: [GH_PAT]\n",
            "{secret: GH_PAT, format: \"$X {}\"}",
            "would be sent literally",
        ),
        (
            "    secrets: [GH_PAT]\n",
            "{secret: GH_PAT, extra: 1}",
            "extra",
        ),
    ] {
        let env = Env::new();
        let plan = format!(
            "{base}{secrets}    parameters:\n      method: GET\n      url: http://api.example.com:9/x\n      headers:\n        Authorization: {header}\n"
        );
        let o = env.run(&plan, &[]);
        assert_eq!(code(&o), 2, "{header}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{header}: {}", stderr(&o));
        assert!(stderr(&o).contains("plan.yaml:"), "{}", stderr(&o));
    }
}

#[test]
fn a_header_secret_by_reference_reaches_the_server_and_is_written_nowhere() {
    let secret = "fake-pat-Vq3Zr8Lm1Xt6Wn4Hk9";
    let server = mock_server(vec![(200, "{\"ok\":true}".to_owned())]);
    let env = Env::new();
    let plan = json!({"version": 1, "id": "ref", "policy": {"risk_tolerance": "high"},
        "steps": [{"id": "call", "tool": "http_request", "secrets": ["DEPLOY_PAT"],
            "parameters": {"method": "POST", "url": format!("{}/hook", server.url), "body": "{}",
                "show_cli": true,
                "headers": {"Authorization": {"secret": "DEPLOY_PAT", "format": "Bearer {}"},
                            "X-Plain": {"secret": "DEPLOY_PAT"}}}}]});
    let p = env.write("plan.yaml", &plan.to_string());
    // The operator names the local stand-in (an address that is not public).
    let o = env
        .run_cmd(&p)
        .arg("--policy")
        .arg(env.policy_allowing_local(&["DEPLOY_PAT"]))
        .env("DEPLOY_PAT", secret)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let reqs = server.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    let head = reqs[0].0.to_ascii_lowercase();
    assert!(
        head.contains(&format!(
            "authorization: bearer {}",
            secret.to_ascii_lowercase()
        )),
        "{head}"
    );
    assert!(
        head.contains(&format!("x-plain: {}", secret.to_ascii_lowercase())),
        "{head}"
    );
    // The plan echo, report, audit log, result.json, console: never the value.
    assert!(env.out.join("report.json").exists());
    assert_nowhere(&env, &o, secret);
    // Unset at run time: the step is refused before anything is sent.
    let env = Env::new();
    let p = env.write("plan.yaml", &plan.to_string());
    let o = env
        .run_cmd(&p)
        .arg("--policy")
        .arg(env.policy_allowing_local(&["DEPLOY_PAT"]))
        .env_remove("DEPLOY_PAT")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("DEPLOY_PAT"), "{}", stderr(&o));
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "nothing more was sent"
    );
}

/// The write tokens and where they come from in CI.
const TOKENS: &[(&str, &str)] = &[
    ("GITHUB_TOKEN", "fake-ghs-Tq2Wm7Zp4Lx9Rc1Vb6"),
    ("GITLAB_TOKEN", "fake-glpat-Yh8Nd3Ks6Qa0Ue5J"),
    ("CI_JOB_TOKEN", "fake-job-Fw4Sc9Zq1Ly7Ek2Dm"),
    ("PLANGATE_GITHUB_TOKEN", "fake-pg-Xn5Bt0Hv3Gr8Pj6Wa"),
];

#[test]
fn write_tokens_reach_no_step_sandboxed_or_not_unless_declared_with_a_warning() {
    let env = Env::new();
    // Each step writes what it can see to a workspace file: its environment,
    // and every process's environment and arguments /proc lets it read
    // (plangate's own are wiped and not dumpable).
    let dump = |name: &str| {
        format!(
            "{{ env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f 2>/dev/null || true; done; }} > dump-{name}.txt 2>/dev/null || true"
        )
    };
    let plan = format!(
        "version: 1\nid: tokens\npolicy: {{risk_tolerance: high}}\nsteps:\n  - id: boxed\n    tool: bash\n    parameters: {{command: {a:?}}}\n  - id: bare\n    tool: bash\n    dependencies: [boxed]\n    parameters: {{sandbox: false, command: {b:?}}}\n  - id: declared\n    tool: bash\n    dependencies: [bare]\n    secrets: [GITLAB_TOKEN]\n    parameters: {{sandbox: false, command: 'echo ${{GITLAB_TOKEN:+given}} > given.txt'}}\n",
        a = dump("boxed"),
        b = dump("bare"),
    );
    let p = env.write("plan.yaml", &plan);
    let mut c = env.run_cmd(&p);
    for (k, v) in TOKENS {
        c.env(k, v);
    }
    let o = c.timeout(Duration::from_secs(120)).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for step in ["boxed", "bare"] {
        let text = std::fs::read_to_string(env.ws.join(format!("dump-{step}.txt")))
            .unwrap_or_else(|e| panic!("{step} wrote no dump: {e}"));
        assert!(text.contains("PATH="), "{step}: {text}");
        for (name, value) in TOKENS {
            assert!(!text.contains(value), "{step} saw {name}");
            assert!(!text.contains(&format!("{name}=")), "{step} saw {name}");
        }
    }
    // Declared: given, and the report says it should not be.
    let given = std::fs::read_to_string(env.ws.join("given.txt")).unwrap();
    assert_eq!(given, "given\n");
    let report = env.report();
    let tokens = |id: &str| -> Value {
        report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["environment"]["write_tokens"].clone())
            .unwrap_or_default()
    };
    assert_eq!(tokens("declared"), json!(["GITLAB_TOKEN"]));
    assert_eq!(tokens("bare"), Value::Null);
    for (_, value) in TOKENS {
        assert_nowhere(&env, &o, value);
    }
}

#[test]
fn a_token_given_as_a_flag_is_masked_in_the_arguments_every_process_can_read() {
    let env = Env::new();
    // `/proc/<pid>/cmdline` is world-readable whatever plangate's dumpable
    // state: an unsandboxed step reads every process's arguments.
    let plan = "version: 1\nid: argv\npolicy: {risk_tolerance: high}\nsteps:\n  - id: bare\n    tool: bash\n    parameters: {sandbox: false, command: 'for f in /proc/[0-9]*/cmdline; do tr \"\\0\" \"\\n\" < $f 2>/dev/null || true; done > dump.txt; grep -c \"^--github-token=\\*\\**$\" dump.txt > masked.txt || true'}\n";
    let p = env.write("plan.yaml", plan);
    let token = "fake-argv-Kc7Rw2Qn9Vd4Tz1Lh5";
    let o = env
        .run_cmd(&p)
        .arg(format!("--github-token={token}"))
        .env_remove("GITHUB_REPOSITORY")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let dump = std::fs::read_to_string(env.ws.join("dump.txt")).unwrap();
    assert!(dump.contains("--github-token="), "{dump}");
    assert!(
        !dump.contains(token),
        "the step read the token from plangate's arguments"
    );
    let masked = std::fs::read_to_string(env.ws.join("masked.txt")).unwrap();
    assert_ne!(
        masked.trim(),
        "0",
        "plangate's own arguments were not in the dump"
    );
    assert_nowhere(&env, &o, token);
}
