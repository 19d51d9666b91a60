//! Outputs that independent validators accept: SARIF against the official
//! 2.1.0 schema, repository-relative locations in SARIF, the GitHub
//! annotations and the GitLab report, and Markdown that a GFM renderer reads
//! back with every hostile file name intact. The validators this machine
//! may lack (xmllint for JUnit, the SARIF Multitool's rule sets) are
//! facility trials, with these helpers: tests/facilities/formats.rs.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::harness::{Env, read_json};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schemas")
}

/// A fake AWS key assembled at run time (no secret in this file).
pub fn key() -> String {
    format!("AKIA{}", "Z7Q4NX2LMRBT5KPW")
}

/// Hostile file names: backticks, pipes, brackets, HTML, entities, spaces, non-ASCII.
const NAMES: &[&str] = &[
    "tick`name.txt",
    "``double``.txt",
    "pipe|name.txt",
    "[link](x.md).txt",
    "<b>bold.txt",
    "<img src=x onerror=alert(1)>.txt",
    "amp&lt;.txt",
    "*star*_u_.txt",
    " spaced .txt",
    "é x.txt",
];

/// A git repository (the temp folder holding `ws/` and `out/`), a plan that
/// writes every hostile name into the workspace, leaks a key into a file with
/// a hostile name and into its own output, and fails one step.
pub fn hostile_run() -> (Env, PathBuf, std::process::Output) {
    // (The `broken` step fails on purpose; neither it nor the secrets fail the run.)
    let env = Env::new();
    let repo = env.ws.parent().unwrap().to_path_buf();
    let st = Command::new("git")
        .arg("init")
        .arg("-q")
        .arg(&repo)
        .status()
        .unwrap();
    assert!(st.success());
    let stage = repo.join("stage");
    std::fs::create_dir_all(stage.join("conf")).unwrap();
    for n in NAMES {
        std::fs::write(stage.join(n), "x\n").unwrap_or_else(|e| panic!("{n}: {e}"));
    }
    std::fs::write(stage.join("conf/key`|x.env"), format!("KEY={}\n", key())).unwrap();
    let plan = format!(
        "version: 1\nid: formats\npolicy: {{risk_tolerance: high, fail_on_secrets: false}}\nsteps:\n\
         \x20 - {{id: write, tool: bash, parameters: {{command: \"cp -R {stage}/. .\", readable: [\"{stage}\"]}}}}\n\
         \x20 - {{id: leak, tool: bash, dependencies: [write], parameters: {{command: \"cat conf/*.env\"}}}}\n\
         \x20 - {{id: scan, tool: secrets_scan, dependencies: [write], parameters: {{path: conf}}}}\n\
         \x20 - {{id: broken, tool: bash, continue_on_error: true, dependencies: [write], parameters: {{command: \"echo '<b>[x](y)</b> a|b' >&2; exit 3\"}}}}\n",
        stage = stage.display()
    );
    let junit = env.out.join("junit.xml");
    let o = env.run(&plan, &["--junit", junit.to_str().unwrap()]);
    (env, repo, o)
}

/// The hostile run went through (the failing step has `continue_on_error`).
pub fn ran(o: &std::process::Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

pub fn report_as(env: &Env, format: &str) -> String {
    let o = env
        .cmd()
        .arg("report")
        .arg(env.out.join("report.json"))
        .args(["--format", format])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn sarif_schema_check(sarif: &Value) {
    let schema: Value = read_json(&fixtures().join("sarif-2.1.0.json"));
    let v = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = v
        .iter_errors(sarif)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF schema errors: {errors:#?}\n{sarif:#}"
    );
}

pub fn check_sarif(sarif: &Value) -> Vec<(String, String)> {
    sarif_schema_check(sarif);
    let run = &sarif["runs"][0];
    for rule in run["tool"]["driver"]["rules"].as_array().unwrap() {
        assert_ne!(rule["name"], rule["id"], "{rule}");
        assert!(
            rule["help"]["text"].as_str().is_some_and(|t| !t.is_empty()),
            "{rule}"
        );
        assert!(
            rule["help"]["markdown"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "{rule}"
        );
    }
    assert!(
        run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
            .as_str()
            .unwrap()
            .starts_with("file:///")
    );
    run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"]["artifactLocation"];
            (
                loc["uri"].as_str().unwrap().to_owned(),
                loc["uriBaseId"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn sarif_is_valid_and_its_locations_are_repository_relative_uris() {
    let env = Env::new();
    let repo = env.ws.parent().unwrap().to_path_buf();
    assert!(
        Command::new("git")
            .arg("init")
            .arg("-q")
            .arg(&repo)
            .status()
            .unwrap()
            .success()
    );
    let deep = repo.join("sub dir/é");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("x y.env"), format!("KEY={}\n", key())).unwrap();
    let want = (
        "sub%20dir/%C3%A9/x%20y.env".to_owned(),
        "%SRCROOT%".to_owned(),
    );
    // The same file however the scan path is written: relative with `..`, absolute, a single file.
    for path in [
        "../sub dir".to_owned(),
        repo.join("sub dir").display().to_string(),
        "../sub dir/é/x y.env".to_owned(),
    ] {
        let o = env
            .cmd()
            .args(["scan", &path, "--format", "sarif"])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(4),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let sarif: Value = serde_json::from_slice(&o.stdout).unwrap();
        let locs = check_sarif(&sarif);
        assert_eq!(locs, vec![want.clone()], "scan {path}");
    }
}

#[test]
fn run_findings_point_into_the_repository_in_sarif_annotations_and_gitlab() {
    let (env, repo, o) = hostile_run();
    ran(&o);
    let sarif: Value = serde_json::from_str(&report_as(&env, "sarif")).unwrap();
    let locs = check_sarif(&sarif);
    let uris: Vec<&str> = locs.iter().map(|(u, _)| u.as_str()).collect();
    assert!(locs.iter().all(|(_, b)| b == "%SRCROOT%"), "{locs:?}");
    // In the workspace (secrets_scan), in the step's output (out/ is beside ws/ in the repository).
    assert!(uris.contains(&"ws/conf/key%60%7Cx.env"), "{uris:?}");
    assert!(uris.contains(&"out/artifacts/leak/stdout.txt"), "{uris:?}");
    // GitLab: the same repository-relative files.
    let gl: Value = serde_json::from_str(&report_as(&env, "gitlab-secret-detection")).unwrap();
    let files: Vec<&str> = gl["vulnerabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["location"]["file"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"ws/conf/key`|x.env"), "{files:?}");
    assert!(
        files.contains(&"out/artifacts/leak/stdout.txt"),
        "{files:?}"
    );
    // GitHub annotations: the run again, as under GitHub Actions.
    let plan = std::fs::read_to_string(env.ws.join("plan.yaml")).unwrap();
    let gh = Env::new();
    let o = gh
        .cmd()
        .current_dir(&env.ws)
        .env("GITHUB_ACTIONS", "true")
        .arg("run")
        .arg(env.ws.join("plan.yaml"))
        .arg("--workspace")
        .arg(&env.ws)
        .arg("--out")
        .arg(repo.join("out2"))
        .output()
        .unwrap();
    let stdout =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    // In the run's output (no file of the commit): named in the message, no `file=`.
    assert!(
        stdout.contains("::error title=secret (aws-access-key-id)::a aws-access-key-id secret was found in the run's output, artifacts/leak/stdout.txt line 1"),
        "{plan}\n{stdout}"
    );
    assert!(!stdout.contains("file=out2/"), "{stdout}");
    assert!(
        stdout.contains("::error file=ws/conf/key`|x.env,line=1"),
        "{stdout}"
    );
}

/// Every `<code>` element's text in rendered HTML, entities decoded.
fn code_spans(html: &str) -> Vec<String> {
    html.split("<code>")
        .skip(1)
        .filter_map(|s| s.split_once("</code>").map(|(c, _)| c))
        .map(|c| {
            c.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&")
        })
        .collect()
}

fn gfm(md: &str) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let mut out = String::new();
    html::push_html(
        &mut out,
        Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH),
    );
    out
}

#[test]
fn markdown_renderings_keep_every_file_name_whole() {
    let (env, _repo, o) = hostile_run();
    ran(&o);
    for (what, md) in [
        (
            "plangate report --format markdown",
            report_as(&env, "markdown"),
        ),
        (
            "diff-summary.md",
            std::fs::read_to_string(env.out.join("diff-summary.md")).unwrap(),
        ),
    ] {
        let html = gfm(&md);
        let codes = code_spans(&html);
        for n in NAMES {
            assert!(
                codes.iter().any(|c| c == n),
                "{what}: `{n}` is not one code span: {codes:#?}\n{md}"
            );
        }
        assert!(
            codes.iter().any(|c| c == "conf/key`|x.env"),
            "{what}: {codes:#?}\n{md}"
        );
        // Nothing a name holds became markup.
        assert!(!html.contains("<b>"), "{what}: {html}");
        assert!(!html.contains("<a href"), "{what}: {html}");
        assert!(!html.contains("<em>"), "{what}: {html}");
        // Every table row still has as many cells as its header: no name split a row.
        for table in html.split("<table>").skip(1) {
            let table = table.split("</table>").next().unwrap_or("");
            let (head, body) = table.split_once("<tbody>").unwrap_or((table, ""));
            let columns = head.matches("</th>").count();
            for row in body.split("<tr>").skip(1) {
                assert_eq!(row.matches("</td>").count(), columns, "{what}: {row}\n{md}");
            }
        }
    }
}
