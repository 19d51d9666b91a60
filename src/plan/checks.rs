//! The checks the schema cannot express, on the parsed tree (so they
//! tolerate a tree the schema rejected): duplicate ids, unknown, self and
//! repeated dependencies, cycles (named), matrices, timeouts, `retry`,
//! regexes, environment names; each tool's own checks through its spec.

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

use super::diag::did_you_mean;
use super::node::{Node, NodeValue, Pos};
use crate::format::names::env_name_ok;
use crate::format::timeout::check_timeout;
use crate::model::Diagnostic;
use crate::model::ToolName;
use crate::tools::registry::ToolSpecOf;
use crate::tools::spec::{CheckCx, items, str_of};

/// Checks the schema cannot express; they tolerate a tree the schema rejected.
pub(super) fn semantic_checks(file: &str, root: &Node) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let steps = items(root.child("steps"));
    let mut ids: HashMap<&str, (usize, Pos)> = HashMap::new();
    for (i, step) in steps.iter().enumerate() {
        let Some(idn) = step.child("id") else {
            continue;
        };
        let Some(id) = str_of(idn) else { continue };
        if let Some((_, first)) = ids.get(id) {
            out.push(
                Diagnostic::at(file, idn.pos, format!("duplicate step id `{id}`")).help(format!(
                    "the id is first used at line {}; step ids must be unique",
                    first.line
                )),
            );
        } else {
            ids.insert(id, (i, idn.pos));
        }
    }
    let known: Vec<&str> = ids.keys().copied().collect();
    for step in steps {
        let sid = step.child("id").and_then(str_of).unwrap_or("?");
        check_step(
            file,
            root.child("agents"),
            step,
            sid,
            &ids,
            &known,
            &mut out,
        );
    }
    out.extend(find_cycles(file, steps, &ids));
    check_matrices(file, root, steps, &mut out);
    crate::tools::agent::agents::check_agents(file, root, &mut out);
    super::env::check(file, root, &mut out);
    super::inputs::check(file, root, &mut out);
    super::event::check(file, root, &mut out);
    if let Some(NodeValue::Map(agents)) = root.child("agents").map(|n| &n.value) {
        let re = Regex::new(super::ID_PATTERN).ok();
        for (k, _) in agents {
            if re.as_ref().is_some_and(|re| !re.is_match(&k.name)) {
                out.push(
                    Diagnostic::at(file, k.pos, format!("invalid agent name `{}`", k.name))
                        .help("agent names start with a letter or `_` and use only letters, digits, `_` and `-` (64 characters at most)"),
                );
            }
        }
    }
    out
}

/// `matrix:` blocks: distinct values per key, the combination caps. (Key and
/// value shapes are the schema's.)
fn check_matrices(file: &str, root: &Node, steps: &[Node], out: &mut Vec<Diagnostic>) {
    use super::raw::{MAX_COMBINATIONS_PER_STEP, MAX_EXPANDED_STEPS};
    let mut total: u64 = 0;
    for step in steps {
        let sid = step.child("id").and_then(str_of).unwrap_or("?");
        let Some(m) = step.child("matrix") else {
            total = total.saturating_add(1);
            continue;
        };
        let NodeValue::Map(pairs) = &m.value else {
            continue;
        };
        let mut combos: u64 = 1;
        for (k, list) in pairs {
            let vals = items(Some(list));
            combos = combos.saturating_mul(vals.len().max(1) as u64);
            let mut seen: HashMap<String, Pos> = HashMap::new();
            for v in vals {
                let text = match v.to_json() {
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => continue,
                };
                if let Some(first) = seen.get(&text) {
                    out.push(
                        Diagnostic::at(
                            file,
                            v.pos,
                            format!(
                                "matrix key `{}` of step `{sid}` lists `{text}` twice",
                                k.name
                            ),
                        )
                        .help(format!(
                            "first listed at line {}; each value makes one step, so list it once",
                            first.line
                        )),
                    );
                } else {
                    seen.insert(text, v.pos);
                }
            }
        }
        if combos > MAX_COMBINATIONS_PER_STEP {
            out.push(
                Diagnostic::at(
                    file,
                    m.pos,
                    format!(
                        "the matrix of step `{sid}` makes {combos} steps; at most {MAX_COMBINATIONS_PER_STEP} per step"
                    ),
                )
                .help("split the step, or shorten its value lists"),
            );
        }
        total = total.saturating_add(combos);
    }
    if total > MAX_EXPANDED_STEPS {
        let pos = root.child("steps").map_or(root.pos, |n| n.pos);
        out.push(
            Diagnostic::at(
                file,
                pos,
                format!(
                    "the plan expands to {total} steps; at most {MAX_EXPANDED_STEPS} once every matrix is expanded"
                ),
            )
            .help("split the plan into several plans"),
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn check_step(
    file: &str,
    root_agents: Option<&Node>,
    step: &Node,
    sid: &str,
    ids: &HashMap<&str, (usize, Pos)>,
    known: &[&str],
    out: &mut Vec<Diagnostic>,
) {
    let mut seen_deps = Vec::new();
    for dep in items(step.child("dependencies")) {
        let Some(d) = str_of(dep) else { continue };
        if d == sid {
            out.push(
                Diagnostic::at(file, dep.pos, format!("step `{sid}` depends on itself"))
                    .help("remove it from its own `dependencies`"),
            );
        } else if !ids.contains_key(d) {
            let diag = Diagnostic::at(
                file,
                dep.pos,
                format!("step `{sid}` depends on unknown step `{d}`"),
            );
            out.push(match did_you_mean(d, known.iter().copied()) {
                Some(s) => diag.help(format!("did you mean `{s}`?")),
                None => diag.help("list the id of a step defined in this plan"),
            });
        } else if seen_deps.contains(&d) {
            out.push(
                Diagnostic::at(
                    file,
                    dep.pos,
                    format!("step `{sid}` lists dependency `{d}` twice"),
                )
                .help("list each dependency once"),
            );
        }
        seen_deps.push(d);
    }
    check_timeout(
        file,
        step.child("timeout"),
        &format!("`timeout` of step `{sid}`"),
        out,
    );
    let params = step.child("parameters");
    check_timeout(
        file,
        params.and_then(|p| p.child("timeout")),
        &format!("parameter `timeout` of step `{sid}`"),
        out,
    );
    if let Some(t) = step.child("timeout")
        && params.and_then(|p| p.child("timeout")).is_some()
    {
        out.push(
            Diagnostic::at(
                file,
                t.pos,
                format!("step `{sid}` sets `timeout` and `parameters.timeout`"),
            )
            .help("set the timeout once"),
        );
    }
    if let Some(re) = step.child("expected_output")
        && let Some(s) = str_of(re)
        && let Err(e) = Regex::new(s)
    {
        let first = e.to_string().lines().last().unwrap_or("").trim().to_owned();
        out.push(
            Diagnostic::at(file, re.pos, format!("`expected_output` of step `{sid}` is not a valid regular expression: {first}"))
                .help("use Rust regex syntax (https://docs.rs/regex); escape literal characters like `(` with `\\`"),
        );
    }
    for key in ["rollback_command"] {
        if let Some(n) = step.child(key)
            && str_of(n).is_some_and(|s| s.trim().is_empty())
        {
            out.push(
                Diagnostic::at(file, n.pos, format!("`{key}` of step `{sid}` is empty"))
                    .help("remove it or give a command"),
            );
        }
    }
    check_env(file, step, sid, out);
    let retry = step.child("tool").and_then(str_of).map(|t| {
        let takes = ToolName::from_name(t)
            .map_or(Err(crate::format::retry::NO_RETRY_HELP), |tool| {
                tool.spec().retry()
            });
        (t, takes)
    });
    crate::format::retry::check(file, step.child("retry"), retry, sid, out);
    if let (Some(tool), Some(p)) = (
        step.child("tool")
            .and_then(str_of)
            .and_then(ToolName::from_name),
        params,
    ) {
        let cx = CheckCx {
            file,
            sid,
            step,
            agents: root_agents,
            known,
        };
        tool.spec().check(&cx, p, out);
    }
}

fn check_env(file: &str, step: &Node, sid: &str, out: &mut Vec<Diagnostic>) {
    let sources = [
        ("env", step.child("env")),
        (
            "parameters.environment",
            step.child("parameters")
                .and_then(|p| p.child("environment")),
        ),
    ];
    let mut names: Vec<&str> = Vec::new();
    for (label, node) in sources {
        let Some(NodeValue::Map(pairs)) = node.map(|n| &n.value) else {
            continue;
        };
        for (k, _) in pairs {
            if !env_name_ok(&k.name) {
                out.push(
                    Diagnostic::at(
                        file,
                        k.pos,
                        format!(
                            "invalid environment variable name `{}` in `{label}` of step `{sid}`",
                            k.name
                        ),
                    )
                    .help("use letters, digits and `_`, not starting with a digit"),
                );
            } else if k.name.starts_with("PLANGATE_") {
                out.push(
                    Diagnostic::at(
                        file,
                        k.pos,
                        format!("`{}` in `{label}` of step `{sid}` is reserved", k.name),
                    )
                    .help("plangate sets PLANGATE_* variables itself; choose another name"),
                );
            } else if names.contains(&k.name.as_str()) {
                out.push(
                    Diagnostic::at(file, k.pos, format!("`{}` is set in both `env` and `parameters.environment` of step `{sid}`", k.name))
                        .help("set each variable once"),
                );
            }
            names.push(&k.name);
        }
    }
}

/// Name every dependency cycle (strongly connected components larger than one step).
fn find_cycles(file: &str, steps: &[Node], ids: &HashMap<&str, (usize, Pos)>) -> Vec<Diagnostic> {
    let n = steps.len();
    let adj: Vec<Vec<usize>> = steps
        .iter()
        .map(|s| {
            items(s.child("dependencies"))
                .iter()
                .filter_map(|d| str_of(d).and_then(|d| ids.get(d)).map(|(i, _)| *i))
                .collect()
        })
        .enumerate()
        .map(|(i, deps): (usize, Vec<usize>)| deps.into_iter().filter(|&d| d != i).collect())
        .collect();
    let name = |i: usize| {
        steps[i]
            .child("id")
            .and_then(str_of)
            .unwrap_or("?")
            .to_owned()
    };
    // Iterative colouring DFS; each back edge closes one cycle, reported once per set of steps.
    let mut colour = vec![0u8; n];
    let mut reported: Vec<Vec<usize>> = Vec::new();
    let mut out = Vec::new();
    for start in 0..n {
        if colour[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        let mut path: Vec<usize> = vec![start];
        colour[start] = 1;
        while let Some((v, next)) = stack.last().copied() {
            if next < adj[v].len() {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                let w = adj[v][next];
                if colour[w] == 0 {
                    colour[w] = 1;
                    stack.push((w, 0));
                    path.push(w);
                } else if colour[w] == 1
                    && let Some(at) = path.iter().position(|&x| x == w)
                {
                    let cycle: Vec<usize> = path[at..].to_vec();
                    let mut key = cycle.clone();
                    key.sort_unstable();
                    if !reported.contains(&key) {
                        reported.push(key);
                        let mut names: Vec<String> = cycle.iter().map(|&i| name(i)).collect();
                        names.push(name(w));
                        // Report at the step that closes the cycle (its dependency on `w`).
                        let pos = items(steps[v].child("dependencies"))
                            .iter()
                            .find(|d| str_of(d) == Some(name(w).as_str()))
                            .map_or(steps[v].pos, |d| d.pos);
                        out.push(
                            Diagnostic::at(
                                file,
                                pos,
                                format!("dependency cycle: {}", names.join(" -> ")),
                            )
                            .help("break the cycle by removing one of these dependencies"),
                        );
                    }
                }
            } else {
                colour[v] = 2;
                stack.pop();
                path.pop();
            }
        }
    }
    out
}
