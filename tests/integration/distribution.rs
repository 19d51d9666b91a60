//! The repository as users meet it: every CI example works outside
//! plangate's own repository (no build from `--path .`, no `uses: ./`), the
//! GitLab component declares the inputs users set and uses the image, and
//! every relative link in the Markdown files points at a file that exists.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_ci_example_works_outside_plangates_repository() {
    let dir = root().join("examples/ci");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for bad in ["--path .", "uses: ./", "image: rust:", "cargo install"] {
            assert!(
                !text.contains(bad),
                "{} builds plangate from its own source ({bad})",
                p.display()
            );
        }
        if p.extension().is_some_and(|e| e == "yml") {
            let v = yaml(&p);
            assert!(v.is_object(), "{}", p.display());
            // Every GitLab job that runs plangate in the image clears its entrypoint
            // (the image's is `plangate`; GitLab needs a shell).
            for (name, job) in v.as_object().unwrap() {
                let image = &job["image"];
                if image.is_object() {
                    assert_eq!(
                        image["entrypoint"],
                        serde_json::json!([""]),
                        "{}: {name}",
                        p.display()
                    );
                    assert!(
                        image["name"].as_str().unwrap().contains("/plangate:"),
                        "{name}"
                    );
                }
            }
        }
        seen += 1;
    }
    assert!(seen >= 5);
}

#[test]
fn the_gitlab_component_takes_the_inputs_users_set_and_uses_the_image() {
    let text = std::fs::read_to_string(root().join("templates/plangate.yml")).unwrap();
    let (spec, job) = text.split_once("\n---\n").expect("spec, then the job");
    let spec: Value = serde_saphyr::from_str(spec).unwrap();
    let inputs = spec["spec"]["inputs"].as_object().unwrap();
    for name in ["plan", "policy", "tolerance", "approvals", "junit"] {
        assert!(inputs.contains_key(name), "input {name}");
    }
    assert!(inputs["plan"].get("default").is_none(), "plan is required");
    // Every `$[[ inputs.x ]]` the job uses is declared.
    for part in job.split("$[[ inputs.").skip(1) {
        let name = part.split_whitespace().next().unwrap();
        assert!(inputs.contains_key(name), "undeclared input {name}");
    }
    // With the inputs filled in, the job is valid YAML that runs plangate in the image.
    let mut filled = job.to_owned();
    for (name, v) in inputs {
        let value = v["default"].as_str().unwrap_or("plan.yaml");
        let value = if name == "job" { "plangate" } else { value };
        filled = filled.replace(&format!("$[[ inputs.{name} ]]"), value);
    }
    let v: Value = serde_saphyr::from_str(&filled).unwrap();
    let job = &v["plangate"];
    assert!(
        job["image"]["name"]
            .as_str()
            .unwrap()
            .contains("/plangate:")
    );
    assert!(job["script"][0].as_str().unwrap().contains("plangate run"));
    assert_eq!(job["artifacts"]["reports"]["junit"], "plangate-junit.xml");
}

/// Relative link targets in a Markdown text: `[text](target)` with no scheme.
fn relative_links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for part in line.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or("");
            let target = target.split_whitespace().next().unwrap_or("");
            let target = target.split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            out.push(target.to_owned());
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_markdown_files_points_at_a_file() {
    let mut files = vec![
        root().join("README.md"),
        root().join("ARCHITECTURE.md"),
        root().join("CHANGELOG.md"),
    ];
    for dir in ["docs", "docs/design", "tests/fixtures/schemas"] {
        if let Ok(rd) = std::fs::read_dir(root().join(dir)) {
            files.extend(
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "md")),
            );
        }
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for f in &files {
        let Ok(md) = std::fs::read_to_string(f) else {
            continue;
        };
        for link in relative_links(&md) {
            checked += 1;
            let target = f.parent().unwrap().join(&link);
            if !target.exists() {
                broken.push(format!("{}: {link}", f.display()));
            }
            // Nothing outside the repository (the old `../shared/SPEC.md`).
            let canon = target.canonicalize().unwrap_or(target.clone());
            if !canon.starts_with(root().canonicalize().unwrap()) {
                broken.push(format!("{}: {link} leaves the repository", f.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
    assert!(checked > 5, "{checked} links");
}
