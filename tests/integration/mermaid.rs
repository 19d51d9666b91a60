//! Mermaid diagrams: `validate --format mermaid`, and the step graph and
//! timings of `report --format markdown` and the GitHub step summary.
//!
//! Every diagram is read back three ways: line by line against the only
//! shapes plangate writes (generated node ids, one quoted label per node,
//! entities for everything but plain characters), with its labels decoded and
//! compared with the step's id, tool, risk and state; by a GFM parser (each
//! diagram stays inside its ```` ```mermaid ```` block); and by the real
//! Mermaid parser (`tests/fixtures/mermaid/check.mjs`, mermaid and jsdom from
//! npm; `.ci/run` installs them and sets `PLANGATE_MERMAID_MODULES`: a
//! facility trial, tests/facilities/mermaid.rs, with these helpers). Hostile names come from fixture files: a plan whose step ids
//! are Mermaid keywords and a saved report whose ids try every way out.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use crate::harness::{Env, code, stderr};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mermaid")
        .join(name)
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// `plangate validate ARGS...` (exit code, stdout).
pub fn validate(env: &Env, args: &[&str]) -> (i32, String) {
    let o = env.cmd().arg("validate").args(args).output().unwrap();
    (code(&o), stdout(&o))
}

/// `plangate report --format markdown REPORT`.
pub fn markdown(env: &Env, report: &Path) -> String {
    let o = env
        .cmd()
        .args(["report", "--format", "markdown"])
        .arg(report)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

/// The ```` ```mermaid ```` blocks of a Markdown text, as a GFM parser reads them.
pub fn blocks(md: &str) -> Vec<String> {
    use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new(md) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) if &*lang == "mermaid" => {
                current = Some(String::new());
            }
            Event::Text(t) => {
                if let Some(c) = current.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

/// A flowchart as written: labels (entities decoded), classes, edges.
#[derive(Debug, PartialEq)]
pub struct Graph {
    pub labels: Vec<String>,
    pub classes: Vec<String>,
    pub edges: Vec<(usize, usize)>,
}

const CLASSES: &[&str] = &[
    "auto_approved",
    "pre_approved",
    "success",
    "failed",
    "timed_out",
    "rejected",
    "denied",
    "blocked",
    "skipped",
    "not_run",
];

/// `#NNN;` entities back to characters (what Mermaid does when it draws).
fn decode(label: &str) -> String {
    Regex::new(r"#(\d+);")
        .unwrap()
        .replace_all(label, |c: &regex::Captures<'_>| {
            char::from_u32(c[1].parse().unwrap()).unwrap().to_string()
        })
        .into_owned()
}

/// Every line of a flowchart is one of the shapes plangate writes; node ids
/// are n0, n1, … in order; a label holds no quote, `%`, backtick or `<` but
/// its one `<br>`, and `#` only in entities.
pub fn graph(text: &str) -> Graph {
    let node = Regex::new(r#"^  n(\d+)\["([^"\n]*)"\](?::::([a-z_]+))?$"#).unwrap();
    let edge = Regex::new(r"^  n(\d+) --> n(\d+)$").unwrap();
    let class = Regex::new(r"^  classDef ([a-z_]+) [a-z0-9:#,.\- ]+$").unwrap();
    let entity = Regex::new(r"#\d+;").unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("flowchart LR"), "{text}");
    let mut g = Graph {
        labels: Vec::new(),
        classes: Vec::new(),
        edges: Vec::new(),
    };
    let mut defined = Vec::new();
    for line in lines {
        if let Some(c) = node.captures(line) {
            assert_eq!(c[1].parse::<usize>().unwrap(), g.labels.len(), "{line}");
            let label = &c[2];
            assert_eq!(label.matches("<br>").count(), 1, "{line}");
            let bare = entity.replace_all(label, "");
            assert!(
                !bare
                    .replace("<br>", "")
                    .contains(['<', '>', '%', '`', '#', ';', '&']),
                "{line}"
            );
            g.labels.push(decode(label));
            g.classes
                .push(c.get(3).map_or(String::new(), |m| m.as_str().to_owned()));
        } else if let Some(c) = edge.captures(line) {
            let (a, b) = (c[1].parse().unwrap(), c[2].parse().unwrap());
            assert!(a < g.labels.len() && b < g.labels.len(), "{line}");
            g.edges.push((a, b));
        } else if let Some(c) = class.captures(line) {
            assert!(CLASSES.contains(&&c[1]), "{line}");
            defined.push(c[1].to_owned());
        } else {
            panic!("a line plangate does not write: {line:?}\n{text}");
        }
    }
    for c in g.classes.iter().filter(|c| !c.is_empty()) {
        assert!(
            defined.contains(c),
            "class {c} used but not defined\n{text}"
        );
    }
    g
}

/// One gantt bar as written: its task name, start and end (ms).
#[derive(Debug, PartialEq)]
pub struct Bar {
    pub text: String,
    pub crit: bool,
    pub start: u64,
    pub end: u64,
}

/// Every line of a gantt is one plangate writes; task names hold no `:`,
/// `#`, `;`, `%` or backtick and start with a status mark.
pub fn gantt(text: &str) -> Vec<Bar> {
    let task = Regex::new(r"^  ([✓✗•] [^:#;%`\n]*) :(crit, )?n(\d+), (\d+), (\d+)$").unwrap();
    let mut lines = text.lines();
    for head in [
        "gantt",
        "  title Seconds since the run started",
        "  dateFormat x",
    ] {
        assert_eq!(lines.next(), Some(head), "{text}");
    }
    assert!(
        matches!(lines.next(), Some("  axisFormat %s.%L" | "  axisFormat %s")),
        "{text}"
    );
    assert_eq!(lines.next(), Some("  todayMarker off"), "{text}");
    let mut bars = Vec::new();
    for line in lines {
        let c = task
            .captures(line)
            .unwrap_or_else(|| panic!("a line plangate does not write: {line:?}\n{text}"));
        assert_eq!(c[3].parse::<usize>().unwrap(), bars.len(), "{line}");
        let bar = Bar {
            text: c[1].to_owned(),
            crit: c.get(2).is_some(),
            start: c[4].parse().unwrap(),
            end: c[5].parse().unwrap(),
        };
        assert!(bar.end > bar.start, "{line}");
        bars.push(bar);
    }
    bars
}

/// What a name becomes in a label: cut at 100 characters (`…`), `?` when
/// empty, control characters as spaces.
fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(100).collect();
    if s.chars().count() > 100 {
        out.push('…');
    }
    if out.is_empty() {
        out.push('?');
    }
    out.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn label(id: &str, tool: &str, risk: Option<&str>, state: &str) -> String {
    let risk = risk.map(|r| format!(" · {r}")).unwrap_or_default();
    format!("{}<br>{}{risk} · {state}", shown(id), shown(tool))
}

/// The graph a saved report should give: a label per step, edges by id
/// (the first step of an id; unknown ids left out).
fn expected_graph(report: &Value) -> Graph {
    let steps = report["steps"].as_array().unwrap();
    let index = |id: &str| steps.iter().position(|s| s["id"] == id);
    let mut edges = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        for d in s["dependencies"].as_array().unwrap() {
            if let Some(from) = index(d.as_str().unwrap()) {
                edges.push((from, i));
            }
        }
    }
    Graph {
        labels: steps
            .iter()
            .map(|s| {
                label(
                    s["id"].as_str().unwrap(),
                    s["tool"].as_str().unwrap(),
                    s["risk"]["effective"].as_str(),
                    s["status"].as_str().unwrap(),
                )
            })
            .collect(),
        classes: steps
            .iter()
            .map(|s| s["status"].as_str().unwrap().to_owned())
            .collect(),
        edges,
    }
}

/// The graph `validate --format mermaid` should give, from `validate --format json`.
fn expected_plan_graph(json: &Value, skip: bool) -> Graph {
    let steps = json["steps"].as_array().unwrap();
    let index = |id: &str| steps.iter().position(|s| s["id"] == id).unwrap();
    let state = |s: &Value| match s["approval"]["decision"].as_str().unwrap() {
        _ if s.get("skipped").is_some() => "skipped".to_owned(),
        "denied" if skip => "skipped".to_owned(),
        d => d.to_owned(),
    };
    Graph {
        labels: steps
            .iter()
            .map(|s| {
                label(
                    s["id"].as_str().unwrap(),
                    s["tool"].as_str().unwrap(),
                    s["risk"]["effective"].as_str(),
                    &state(s),
                )
            })
            .collect(),
        classes: steps.iter().map(state).collect(),
        edges: steps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                s["dependencies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |d| (index(d.as_str().unwrap()), i))
            })
            .collect(),
    }
}

fn plan_json(env: &Env, args: &[&str]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let (_, out) = validate(env, &all);
    serde_json::from_str(&out).unwrap()
}

#[test]
fn validate_mermaid_draws_each_expanded_step_and_dependency() {
    let env = Env::new();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plans/valid/matrix-expansion.yaml");
    let plan = plan.to_str().unwrap();
    let (rc, text) = validate(&env, &["--format", "mermaid", plan]);
    assert_eq!(rc, 0, "{text}");
    let g = graph(&text);
    assert_eq!(g, expected_plan_graph(&plan_json(&env, &[plan]), false));
    assert_eq!(g.labels.len(), 13);
    assert!(
        g.labels
            .contains(&"test[os=linux,package=a]<br>bash · safe · auto_approved".to_owned())
    );
    // test[os=…,package=a] depends on build[package=a] only; report on every test.
    assert_eq!(g.edges.len(), 9 + 9);
    insta::assert_snapshot!("mermaid_validate_matrix", text);
}

#[test]
fn validate_mermaid_labels_every_decision_and_takes_the_flags_of_the_other_formats() {
    let env = Env::new();
    let cap = env.write("low.yaml", "risk_tolerance: low\n");
    let plan = fixture("decisions.yaml");
    let plan = plan.to_str().unwrap();
    let args = [
        plan,
        "--policy",
        cap.to_str().unwrap(),
        "--approve",
        "deploy",
        "--input",
        "target=prod",
    ];
    let mut mermaid_args = vec!["--format", "mermaid"];
    mermaid_args.extend_from_slice(&args);
    let (rc, text) = validate(&env, &mermaid_args);
    let mut text_args = vec!["--format", "text"];
    text_args.extend_from_slice(&args);
    assert_eq!(
        rc,
        validate(&env, &text_args).0,
        "the same exit code as the table"
    );
    let g = graph(&text);
    assert_eq!(g, expected_plan_graph(&plan_json(&env, &args), false));
    assert_eq!(
        g.classes,
        [
            "auto_approved",
            "denied",
            "pre_approved",
            "blocked",
            "skipped"
        ],
        "{text}"
    );
    assert_eq!(g.labels[1], "build<br>bash · moderate · denied");
    // An `if:` false before the run (from the inputs): skipped, as in the table.
    assert_eq!(g.labels[4], "announce<br>bash · safe · skipped");
    insta::assert_snapshot!("mermaid_validate_decisions", text);

    // Without the required input: the plan's problem, exit 2, nothing on stdout.
    let o = env
        .cmd()
        .args(["validate", "--format", "mermaid", plan])
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(o.stdout.is_empty());
    assert!(
        stderr(&o).contains("input `target` is required"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn keyword_ids_and_hostile_descriptions_stay_inside_labels() {
    let env = Env::new();
    let plan = fixture("keyword-ids.yaml");
    let plan = plan.to_str().unwrap();
    let (rc, text) = validate(&env, &["--format", "mermaid", plan]);
    assert_eq!(rc, validate(&env, &["--format", "text", plan]).0);
    let g = graph(&text);
    assert_eq!(g, expected_plan_graph(&plan_json(&env, &[plan]), true));
    // Denied under `on_approval_required: skip`: the run skips it.
    assert_eq!(g.labels[16], "graph<br>bash · dangerous · skipped");
    assert!(!text.contains("%%"), "{text}");
    assert!(
        !text.contains("alert"),
        "descriptions are never drawn: {text}"
    );

    // Run it: the report's graph and timings, and the same in the step summary.
    let summary = env.ws.join("summary.md");
    let o = env
        .run_cmd(plan)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = crate::harness::read_json(&env.out.join("report.json"));
    for md in [
        markdown(&env, &env.out.join("report.json")),
        std::fs::read_to_string(&summary).unwrap(),
    ] {
        let b = blocks(&md);
        assert_eq!(b.len(), 2, "{md}");
        assert_eq!(graph(&b[0]), expected_graph(&report));
        let bars = gantt(&b[1]);
        assert_eq!(bars.len(), 16, "the skipped steps have no bar: {}", b[1]);
        for id in [
            "end",
            "click",
            "gantt",
            "gantt-x",
            "section[v=2024-01-01]",
            "_init",
        ] {
            assert!(
                bars.iter().any(|b| b.text == format!("✓ {id}")),
                "{id}: {bars:?}"
            );
        }
    }
}

#[test]
fn report_markdown_draws_the_graph_by_status_and_the_timings_of_what_ran() {
    let env = Env::new();
    let path = fixture("mixed-report.json");
    let md = markdown(&env, &path);
    let report: Value = crate::harness::read_json(&path);
    let b = blocks(&md);
    assert_eq!(b.len(), 2, "{md}");
    assert_eq!(graph(&b[0]), expected_graph(&report));
    // The carried-over step ran in another run; denied, blocked, skipped and
    // not-run steps did not run. A step of 0 ms is drawn as 1 ms.
    let bars = gantt(&b[1]);
    let want = [
        ("✓ checkout", false, 0, 120),
        ("✓ build[package=cli]", false, 130, 1530),
        ("✓ build[package=core]", false, 130, 2130),
        ("✗ test[package=cli]", true, 1540, 2900),
        ("✗ test[package=core]", true, 2140, 8140),
        ("✗ review", true, 2150, 4150),
        ("✓ lint-fix", false, 4160, 4161),
    ];
    let want: Vec<Bar> = want
        .iter()
        .map(|&(text, crit, start, end)| Bar {
            text: text.to_owned(),
            crit,
            start,
            end,
        })
        .collect();
    assert_eq!(bars, want);
    assert!(
        b[1].contains("axisFormat %s.%L\n"),
        "a span under 10 s: milliseconds too"
    );
    assert!(md.contains("### Step graph\n\n```mermaid\nflowchart LR\n"));
    assert!(md.contains("### Step timings\n\n```mermaid\ngantt\n"));
    insta::assert_snapshot!("mermaid_report_mixed", b.join("---\n"));
}

#[test]
fn a_hostile_report_cannot_break_out_of_a_label_a_task_or_the_block() {
    let env = Env::new();
    let path = fixture("hostile-report.json");
    let md = markdown(&env, &path);
    let report: Value = crate::harness::read_json(&path);
    let b = blocks(&md);
    assert_eq!(b.len(), 2, "{md}");
    let g = graph(&b[0]);
    assert_eq!(g, expected_graph(&report));
    // The blocks are the text plangate wrote, whole.
    for block in &b {
        assert!(md.contains(&format!("```mermaid\n{block}```\n")));
    }
    // The steps table: a hostile tool name stays inside its cell, one row a step.
    assert!(!md.contains("<b>bash</b>"), "{md}");
    let rows = md.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(rows, report["steps"].as_array().unwrap().len(), "{md}");
    let bars = gantt(&b[1]);
    // Ran: everything with a readable start but the skipped, not-run, denied
    // and blocked steps; the one that started before the run counts from 0.
    assert_eq!(bars.len(), 9, "{bars:?}");
    assert!(
        bars.iter()
            .any(|b| b.text == "✓ early" && b.start == 0 && b.end == 5)
    );
    assert!(
        bars.iter()
            .any(|b| b.text == "✓ x _crit, n0, 0, 99999999" && b.start == 1000)
    );
    assert!(bars.iter().all(|b| b.end <= 15_000), "{bars:?}");
}

/// A plan of `n` independent bash steps.
fn wide_plan(n: usize) -> String {
    let mut s = String::from(
        "version: 1\nid: wide\npolicy: {risk_tolerance: high, max_parallel: 8}\nsteps:\n",
    );
    for i in 0..n {
        s.push_str(&format!(
            "  - {{id: s{i:03}, tool: bash, parameters: {{command: 'true'}}}}\n"
        ));
    }
    s
}

#[test]
fn a_plan_too_large_to_draw_gets_a_note_instead_of_a_diagram() {
    let env = Env::new();
    let plan = env.write("plan.yaml", &wide_plan(100));
    let summary = env.ws.join("summary.md");
    let o = env
        .run_cmd(&plan)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for md in [
        markdown(&env, &env.out.join("report.json")),
        std::fs::read_to_string(&summary).unwrap(),
    ] {
        assert!(blocks(&md).is_empty(), "{md}");
        assert!(
            md.contains(&format!(
                "*Step graph not drawn: 100 steps, more than 60 to draw usefully; `plangate validate --format mermaid {}` prints it.*",
                plan.display()
            )),
            "{md}"
        );
        assert!(
            md.contains("*Step timings not drawn: 100 steps ran, more than 60 to draw usefully; each step's `started_at` and `duration_ms` are in `report.json`.*"),
            "{md}"
        );
    }
    // validate draws it whatever its size.
    let (rc, text) = validate(&env, &["--format", "mermaid", plan.to_str().unwrap()]);
    assert_eq!(rc, 0);
    assert_eq!(graph(&text).labels.len(), 100);
}

#[test]
fn too_many_dependencies_get_a_note_and_a_dry_run_no_timings() {
    // 20 builds × 10 tests sharing no key: every test depends on every build.
    let env = Env::new();
    let plan = env.write(
        "plan.yaml",
        "version: 1\nid: dense\nsteps:\n  - id: build\n    tool: bash\n    matrix: {n: [a, b, c, d, e, f, g, h, i, j, k, l, m, o, p, q, r, s, t, u]}\n    parameters: {command: 'true'}\n  - id: test\n    tool: bash\n    dependencies: [build]\n    matrix: {t: [a, b, c, d, e, f, g, h, i, j]}\n    parameters: {command: 'true'}\n",
    );
    let o = env.run_cmd(&plan).arg("--dry-run").output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let md = markdown(&env, &env.out.join("report.json"));
    assert!(blocks(&md).is_empty(), "{md}");
    assert!(
        md.contains("*Step graph not drawn: 200 dependencies, more than 150 to draw usefully;"),
        "{md}"
    );
    assert!(!md.contains("Step timings"), "nothing ran: {md}");
    let (_, text) = validate(&env, &["--format", "mermaid", plan.to_str().unwrap()]);
    assert_eq!(graph(&text).edges.len(), 200);
}
