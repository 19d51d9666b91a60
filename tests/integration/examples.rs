//! Every example plan is valid, and the capability examples under
//! `examples/plans/` run offline with the exit code their header promises
//! (`# expect-exit: N`). Adding an example adds a case, not code.

use std::path::{Path, PathBuf};

use crate::harness::{Env, code, stderr};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

/// Every `*.yaml` plan below `examples/`, sorted.
fn example_plans(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                // CI configurations are not plans.
                if p.file_name().is_some_and(|n| n != "ci") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "yaml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_example_plan_is_valid() {
    let env = Env::new();
    let plans = example_plans(Path::new(EXAMPLES));
    assert!(plans.len() >= 7, "{plans:?}");
    for p in &plans {
        let o = env
            .cmd()
            .args(["validate", "--format", "json"])
            .arg(p)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{}: {e}: {}", p.display(), stderr(&o)));
        assert_eq!(v["valid"], true, "{}", p.display());
        // 0, or 3 for an example whose steps need approvals `run` would refuse.
        let want = crate::harness::validate_exit(&v);
        assert_eq!(code(&o), want, "{}: {}", p.display(), stderr(&o));
    }
}

#[test]
fn each_capability_example_runs_offline_with_the_promised_exit_code() {
    let plans = example_plans(&Path::new(EXAMPLES).join("plans"));
    assert!(plans.len() >= 5, "{plans:?}");
    for p in &plans {
        let text = std::fs::read_to_string(p).unwrap();
        let expect: i32 = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect-exit:"))
            .unwrap_or_else(|| panic!("{} has no `# expect-exit: N` line", p.display()))
            .trim()
            .parse()
            .unwrap();
        let env = Env::new();
        let o = env
            .cmd()
            .arg("run")
            .arg(p)
            .arg("--workspace")
            .arg(&env.ws)
            .arg("--out")
            .arg(&env.out)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        assert_eq!(code(&o), expect, "{}: {}", p.display(), stderr(&o));
        let r = env.report();
        assert_eq!(r["exit_code"], expect, "{}", p.display());
        assert_eq!(r["in_progress"], false);
    }
}

#[test]
fn what_the_capability_examples_show_is_what_happens() {
    let run = |name: &str, args: &[&str]| {
        let env = Env::new();
        let o = env
            .cmd()
            .arg("run")
            .arg(Path::new(EXAMPLES).join("plans").join(name))
            .args(["--workspace", env.ws.to_str().unwrap()])
            .args(["--out", env.out.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        (env, o)
    };
    let (env, _) = run("approvals.yaml", &[]);
    assert_eq!(env.step("publish")["status"], "skipped");
    assert_eq!(env.step("announce")["status"], "skipped");
    assert_eq!(env.step("look")["status"], "success");
    let (env, o) = run("approvals.yaml", &["--approve", "publish"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(env.step("announce")["status"], "success");
    let (env, _) = run("rollback.yaml", &[]);
    assert_eq!(env.step("config")["rollback"]["status"], "success");
    assert_eq!(env.step("backup")["rollback"]["status"], "success");
    assert_eq!(env.step("restart")["status"], "not_run");
    assert!(!env.ws.join("state/app.conf").exists());
    let (env, _) = run("secrets.yaml", &[]);
    let findings = env.report()["findings"].as_array().unwrap().len();
    assert!(findings >= 1);
    let (env, _) = run("changes.yaml", &[]);
    let files: Vec<String> = env.report()["diff"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(files, ["notes/final.md", "notes/list.txt"]);
}

/// One `# example-run:` line of a job example: the flags, then what the run
/// must give (`exit=N`, `conclusion=success|partial|failure`, `STEP=STATUS`,
/// `outputs.STEP.NAME=VALUE`, `publish.KIND=STATE` for every publish row of
/// that kind, `publish=none`; a value holds no `=`).
struct ExampleRun {
    setup_args: Vec<String>,
    flags: Vec<String>,
    expect: Vec<(String, String)>,
}

/// The runs a job example's header promises, in order. `# example-setup-args:`
/// applies to the runs after it.
fn example_runs(plan: &Path) -> Vec<ExampleRun> {
    let text = std::fs::read_to_string(plan).unwrap();
    let mut setup_args: Vec<String> = Vec::new();
    let mut runs = Vec::new();
    for line in text.lines() {
        if let Some(a) = line.strip_prefix("# example-setup-args:") {
            setup_args = a.split_whitespace().map(str::to_owned).collect();
        } else if let Some(r) = line.strip_prefix("# example-run:") {
            let r = r.trim();
            let close = r
                .find(']')
                .unwrap_or_else(|| panic!("{}: `{r}`", plan.display()));
            let flags = r[1..close]
                .split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(str::to_owned)
                .collect();
            let expect = r[close + 1..]
                .split_whitespace()
                .map(|kv| {
                    let (k, v) = kv
                        .rsplit_once('=')
                        .unwrap_or_else(|| panic!("{}: `{kv}`", plan.display()));
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            runs.push(ExampleRun {
                setup_args: setup_args.clone(),
                flags,
                expect,
            });
        }
    }
    runs
}

#[test]
fn each_job_example_runs_offline_as_its_header_says() {
    let jobs = Path::new(EXAMPLES).join("jobs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&jobs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("plan.yaml").is_file())
        .collect();
    dirs.sort();
    let names: Vec<_> = dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_owned())
        .collect();
    for want in ["dependency-batch", "lint-fix", "pr-review"] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for dir in &dirs {
        let plan = dir.join("plan.yaml");
        let runs = example_runs(&plan);
        assert!(!runs.is_empty(), "{} promises no run", plan.display());
        for run in runs {
            let env = Env::new();
            let setup = std::process::Command::new("bash")
                .arg(dir.join("setup.sh"))
                .arg(&env.ws)
                .args(&run.setup_args)
                .output()
                .unwrap();
            assert!(
                setup.status.success(),
                "{}: {}",
                dir.display(),
                stderr(&setup)
            );
            let o = env
                .cmd()
                .arg("run")
                .arg(&plan)
                .arg("--workspace")
                .arg(&env.ws)
                .arg("--out")
                .arg(&env.out)
                .args(&run.flags)
                .timeout(std::time::Duration::from_secs(120))
                .output()
                .unwrap();
            let what = format!("{} {:?} {:?}", plan.display(), run.setup_args, run.flags);
            let r = env.report();
            assert_eq!(r["in_progress"], false, "{what}");
            for (k, v) in &run.expect {
                if k == "exit" {
                    assert_eq!(code(&o).to_string(), *v, "{what}: {}", stderr(&o));
                } else if k == "conclusion" {
                    assert_eq!(r["conclusion"], *v.as_str(), "{what}");
                } else if k == "publish" {
                    assert_eq!(v, "none", "{what}");
                    assert!(
                        r["publish"].as_array().is_none_or(Vec::is_empty),
                        "{what}: {}",
                        r["publish"]
                    );
                } else if let Some(kind) = k.strip_prefix("publish.") {
                    // Every row of that kind is in that state (and there is one).
                    let rows: Vec<&serde_json::Value> = r["publish"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|e| e["kind"] == kind)
                        .collect();
                    assert!(
                        !rows.is_empty(),
                        "{what}: no `{kind}` row: {}",
                        r["publish"]
                    );
                    for e in rows {
                        assert_eq!(e["state"], *v.as_str(), "{what}: {e}");
                    }
                } else if let Some(rest) = k.strip_prefix("outputs.") {
                    let (step, name) = rest.rsplit_once('.').unwrap();
                    assert_eq!(env.step(step)["outputs"][name], *v.as_str(), "{what}: {k}");
                } else {
                    assert_eq!(env.step(k)["status"], *v.as_str(), "{what}: {k}");
                }
            }
        }
    }
}

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The first line of the README's first `sh` block, without its comment.
fn readme_first_command() -> String {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .nth(1)
        .expect("README has an sh block");
    let line = block.lines().next().unwrap();
    line.split(" #").next().unwrap().trim().to_owned()
}

#[test]
fn the_readmes_first_command_is_the_quickstart_header_and_does_what_the_readme_says() {
    let first = readme_first_command();
    let quickstart = std::fs::read_to_string(Path::new(EXAMPLES).join("quickstart.yaml")).unwrap();
    let header = quickstart
        .lines()
        .skip_while(|l| !l.contains("Run it with:"))
        .nth(1)
        .and_then(|l| l.strip_prefix('#'))
        .expect("quickstart.yaml says how to run it")
        .trim();
    assert_eq!(
        header, first,
        "quickstart.yaml's header and README disagree"
    );
    // What it runs: plangate with the words after `cargo run --release --`.
    let args: Vec<&str> = first
        .strip_prefix("cargo run --release -- ")
        .unwrap_or_else(|| panic!("`{first}`"))
        .split_whitespace()
        .collect();
    let run = |args: &[&str]| {
        let env = Env::new();
        env.write("src/main.rs", "fn main() {}\n");
        env.write("src/lib.rs", "\n");
        let o = env
            .cmd()
            .current_dir(ROOT)
            .args(args)
            .args(["--workspace", env.ws.to_str().unwrap()])
            .args(["--out", env.out.to_str().unwrap()])
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        (env, o)
    };
    let (env, o) = run(&args);
    assert_eq!(code(&o), 0, "`{first}`: {}", stderr(&o));
    for s in ["inventory", "status", "write", "check"] {
        assert_eq!(env.step(s)["status"], "success", "{s}");
    }
    assert_eq!(
        std::fs::read_to_string(env.ws.join("target/plangate-quickstart/summary.txt")).unwrap(),
        "rust files: 2\n"
    );
    // With no sandbox backend nothing runs bare: the built-in policy requires
    // one, and a plan cannot lower that (exit 3, the step says why).
    let mut bare = args.clone();
    bare.extend(["--sandbox-backend", "none"]);
    let (env, o) = run(&bare);
    assert_eq!(code(&o), 3, "no backend: {}", stderr(&o));
    assert!(!env.ws.join("target").exists(), "nothing ran bare");
    // "Drop `--approve write` and the run is refused before anything executes (exit 3)."
    let without: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "--approve" && *a != "write")
        .collect();
    let (env, o) = run(&without);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(!env.ws.join("target").exists(), "nothing ran");
}

/// The agent presets plangate knows, as its plan schema lists them.
fn known_presets(env: &Env) -> Vec<String> {
    let o = env.cmd().arg("schema").output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let presets: Vec<String> = schema["$defs"]["Preset"]["oneOf"]
        .as_array()
        .expect("the schema lists the presets")
        .iter()
        .map(|p| p["const"].as_str().unwrap().to_owned())
        .collect();
    assert!(presets.contains(&"claude-code".to_owned()), "{presets:?}");
    presets
}

/// Every text file below `dir` (recursively).
fn text_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read_to_string(&p).is_ok() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_preset_the_examples_and_docs_name_exists() {
    let env = Env::new();
    let presets = known_presets(&env);
    let mut files = text_files(Path::new(EXAMPLES));
    files.extend(text_files(&Path::new(ROOT).join("templates")));
    files.extend(text_files(&Path::new(ROOT).join("docs")));
    files.push(Path::new(ROOT).join("README.md"));
    let mut named = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            for (i, _) in line.match_indices("preset:") {
                let name: String = line[i + "preset:".len()..]
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect();
                if name.is_empty() {
                    continue;
                }
                named += 1;
                assert!(
                    presets.contains(&name),
                    "{}:{}: preset `{name}` does not exist (known: {presets:?})",
                    f.display(),
                    n + 1
                );
            }
        }
    }
    assert!(named >= 4, "only {named} presets named");
}

/// A `plangate run|validate ...` or `cargo run --release -- run|validate ...`
/// command a comment of an example plan gives, as plangate's arguments.
fn header_commands(plan: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(plan).unwrap();
    let mut out = Vec::new();
    for line in text.lines().filter_map(|l| l.strip_prefix('#')) {
        let start = [
            "plangate run ",
            "plangate validate ",
            "-- run ",
            "-- validate ",
        ]
        .iter()
        .find_map(|p| line.find(p).map(|i| i + p.find(' ').unwrap() + 1));
        let Some(start) = start else { continue };
        // In prose the command is a code span: it ends at the closing backtick.
        let in_code = line[..start].matches('`').count() % 2 == 1;
        let ends: &[char] = if in_code { &['`'] } else { &['#', '&', ';'] };
        let cmd = line[start..]
            .split(ends)
            .next()
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        out.push(cmd);
    }
    out
}

#[test]
fn every_command_an_example_plan_gives_is_accepted() {
    let mut checked = 0;
    for plan in example_plans(Path::new(EXAMPLES)) {
        for mut cmd in header_commands(&plan) {
            let env = Env::new();
            let setup = plan.parent().unwrap().join("setup.sh");
            if setup.is_file() {
                let s = std::process::Command::new("bash")
                    .arg(&setup)
                    .arg(&env.ws)
                    .output()
                    .unwrap();
                assert!(s.status.success(), "{}", stderr(&s));
            }
            // The workspace is this test's; the plan path is the repository's.
            if let Some(i) = cmd.iter().position(|a| a == "--workspace") {
                cmd.drain(i..(i + 2).min(cmd.len()));
            }
            let mut c = env.cmd();
            c.current_dir(ROOT).args(&cmd);
            c.args(["--workspace", env.ws.to_str().unwrap()]);
            if cmd.first().is_some_and(|w| w == "run") {
                c.args(["--dry-run", "--out", env.out.to_str().unwrap()]);
            }
            let o = c
                .timeout(std::time::Duration::from_secs(60))
                .output()
                .unwrap();
            assert_ne!(
                code(&o),
                2,
                "{}: `plangate {}` is refused: {}",
                plan.display(),
                cmd.join(" "),
                stderr(&o)
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} commands found");
}
