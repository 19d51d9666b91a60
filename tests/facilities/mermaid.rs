//! The real Mermaid parser (`tests/fixtures/mermaid/check.mjs`: node with
//! mermaid and jsdom from npm, `PLANGATE_MERMAID_MODULES`) reads every
//! diagram plangate draws as plangate meant it. The line-by-line reading of
//! the same diagrams, and the helpers used here: tests/integration/mermaid.rs.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::harness::Env;
use crate::mermaid_shared::{blocks, fixture, gantt, graph, markdown, validate};

/// What the Mermaid parser read (`check.mjs`'s JSON), one object per file.
fn mermaid_parse(files: &[PathBuf]) -> Vec<Value> {
    // `Facility::Mermaid` checked that the folder holds mermaid and jsdom.
    let modules = crate::facility::mermaid_modules().expect("PLANGATE_MERMAID_MODULES");
    let o = Command::new("node")
        .arg(fixture("check.mjs"))
        .arg(&modules)
        .args(files)
        .output()
        .expect("node (installed with npm)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

pub fn the_mermaid_parser_reads_every_diagram_as_plangate_meant_it() {
    let env = Env::new();
    let mut diagrams: Vec<String> = Vec::new();
    // validate exits as run would: 3 for the plan with a blocked step (`upload`).
    for (plan, input, want) in [
        ("keyword-ids.yaml", None, 0),
        ("decisions.yaml", Some("target=x"), 3),
    ] {
        let plan = fixture(plan);
        let mut args = vec!["--format", "mermaid", plan.to_str().unwrap()];
        args.extend(input.iter().flat_map(|i| ["--input", i]));
        let (rc, text) = validate(&env, &args);
        assert_eq!(rc, want, "{text}");
        diagrams.push(text);
    }
    for report in ["mixed-report.json", "hostile-report.json"] {
        diagrams.extend(blocks(&markdown(&env, &fixture(report))));
    }
    let files: Vec<PathBuf> = diagrams
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let p = env.ws.join(format!("d{i}.mmd"));
            std::fs::write(&p, d).unwrap();
            p
        })
        .collect();
    let parsed = mermaid_parse(&files);
    assert_eq!(parsed.len(), diagrams.len());
    for (text, p) in diagrams.iter().zip(&parsed) {
        assert!(p.get("error").is_none(), "{p:#}\n{text}");
        assert_eq!(p["config"], serde_json::json!({}), "no directive: {text}");
        if text.starts_with("flowchart") {
            let g = graph(text);
            let vertices = p["vertices"].as_array().unwrap();
            assert_eq!(vertices.len(), g.labels.len(), "{p:#}");
            for (i, v) in vertices.iter().enumerate() {
                assert_eq!(v["id"], format!("n{i}"));
                assert_eq!(v["text"], g.labels[i], "{text}");
                // Only the label's own `<br>` is markup.
                assert_eq!(v["raw"].as_str().unwrap().matches('<').count(), 1, "{v}");
                assert_eq!(v["link"], Value::Null);
                let want: Vec<&str> = [g.classes[i].as_str()]
                    .into_iter()
                    .filter(|c| !c.is_empty())
                    .collect();
                assert_eq!(v["classes"], serde_json::json!(want), "{v}");
            }
            let edges: Vec<(usize, usize)> = p["edges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    let n = |k: usize| e[k].as_str().unwrap()[1..].parse().unwrap();
                    (n(0), n(1))
                })
                .collect();
            assert_eq!(edges, g.edges);
            assert_eq!(p["subgraphs"], 0);
            assert_eq!(p["tooltips"], 0);
        } else {
            let bars = gantt(text);
            let tasks = p["tasks"].as_array().unwrap();
            assert_eq!(tasks.len(), bars.len(), "{p:#}");
            for (i, (t, b)) in tasks.iter().zip(&bars).enumerate() {
                assert_eq!(t["id"], format!("n{i}"));
                assert_eq!(t["text"], b.text.trim_end());
                assert_eq!(t["start"], b.start);
                assert_eq!(t["end"], b.end);
                assert_eq!(t["crit"], b.crit);
            }
            assert_eq!(p["links"], 0);
            assert_eq!(p["title"], "Seconds since the run started");
        }
    }
}
