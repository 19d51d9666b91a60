//! Semantic checks and lowering: raw plan tree -> [`Plan`].
//!
//! Runs after the schema check and reports everything it finds: duplicate
//! ids, unknown or self dependencies, cycles (named), tools not available,
//! bad timeouts, bad regexes, unsafe working directories, conflicting
//! environment settings.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use super::diag::{Diagnostic, did_you_mean};
use super::load::{parse_document, schema_check};
use super::matrix::{self, Expansion};
use super::node::{Node, NodeValue, Pos};
use super::raw::{AgentDef, BashParams, PlanFile, PolicyBlock, StepDef, Timeout, ToolName};
use super::schema::{allowed_keys, plan_schema};
use super::{
    Action, AgentAction, BashAction, DEFAULT_TIMEOUT, Plan, PromptSource, SandboxSpec, Step,
};
use crate::policy::Risk;

pub(super) fn plan_from_text(
    file: &str,
    text: &str,
    path: &Path,
    sha256: String,
) -> Result<Plan, Vec<Diagnostic>> {
    let root = parse_document(file, text).map_err(|d| vec![d])?;
    if root.value == NodeValue::Null {
        return Err(vec![
            Diagnostic::at(
                file,
                Pos::default(),
                "file is empty (it holds only comments)",
            )
            .help("a plan starts with `version: 1`, an `id` and a list of `steps`"),
        ]);
    }
    if !matches!(root.value, NodeValue::Map(_)) {
        return Err(vec![
            Diagnostic::at(file, root.pos, "a plan must be a mapping")
                .help("start the file with `version: 1`, an `id` and a list of `steps`"),
        ]);
    }
    let schema = plan_schema();
    let describe = |p: &str| describe(&root, p);
    let keys = |p: &str| keys_at(&root, p);
    let instance = root.to_json();
    let mut diags = schema_check(file, &root, &instance, &schema, &describe, &keys);
    let mut seen: std::collections::HashSet<(u64, u64, String)> = diags
        .iter()
        .map(|d| (d.line, d.column, d.message.clone()))
        .collect();
    for d in semantic_checks(file, &root) {
        if seen.insert((d.line, d.column, d.message.clone())) {
            diags.push(d);
        }
    }
    if !diags.is_empty() {
        diags.sort_by_key(|d| (d.line, d.column));
        return Err(diags);
    }
    let raw: PlanFile = serde_json::from_value(instance).map_err(|e| {
        vec![Diagnostic::at(
            file,
            Pos::default(),
            format!("invalid plan: {e}"),
        )]
    })?;
    lower(file, &root, raw, path, sha256)
}

/// Words for a JSON pointer, naming steps by id.
fn describe(root: &Node, pointer: &str) -> String {
    let segs: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let step_name = |i: &str| {
        root.at_pointer(&format!("/steps/{i}/id"))
            .and_then(|n| match &n.value {
                NodeValue::Str(s) if !s.is_empty() => Some(format!("step `{s}`")),
                _ => None,
            })
            .unwrap_or_else(|| format!("steps[{i}]"))
    };
    match segs
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => "the plan".to_owned(),
        ["steps", i] => step_name(i),
        ["steps", i, "parameters"] => format!("the parameters of {}", step_name(i)),
        ["steps", i, "parameters", k, ..] => format!("parameter `{k}` of {}", step_name(i)),
        ["steps", i, "dependencies", _] => format!("a dependency of {}", step_name(i)),
        ["steps", i, k, ..] => format!("`{k}` of {}", step_name(i)),
        ["agents", a] => format!("agent `{a}`"),
        ["agents", a, k, ..] => format!("`{k}` of agent `{a}`"),
        [first, rest @ ..] => {
            let mut s = (*first).to_owned();
            for r in rest {
                s.push('.');
                s.push_str(r);
            }
            format!("`{s}`")
        }
    }
}

fn keys_at(root: &Node, pointer: &str) -> Vec<String> {
    let segs: Vec<&str> = pointer.split('/').skip(1).collect();
    match segs.as_slice() {
        [] => allowed_keys::<PlanFile>(),
        ["policy"] => allowed_keys::<PolicyBlock>(),
        ["steps", _] => allowed_keys::<StepDef>(),
        ["steps", i, "parameters"] => {
            match root
                .at_pointer(&format!("/steps/{i}/tool"))
                .map(|n| &n.value)
            {
                Some(NodeValue::Str(t)) if t == "bash" => allowed_keys::<BashParams>(),
                Some(NodeValue::Str(t)) if t == "secrets_scan" => {
                    allowed_keys::<super::raw::SecretsScanParams>()
                }
                Some(NodeValue::Str(t)) if t == "agent" => {
                    allowed_keys::<super::raw::AgentParams>()
                }
                Some(NodeValue::Str(t)) => super::lower_tools::param_keys(t),
                _ => Vec::new(),
            }
        }
        ["steps", _, "parameters", "limits"] => allowed_keys::<super::raw::Limits>(),
        ["agents", _] => allowed_keys::<AgentDef>(),
        ["agents", _, "price"] => allowed_keys::<super::raw::Price>(),
        ["policy", "budget"] => allowed_keys::<super::raw::BudgetBlock>(),
        ["policy", "permissions", _] => {
            allowed_keys::<crate::policy::permissions::PermissionRule>()
        }
        ["policy", "permissions", _, "conditions"] => {
            allowed_keys::<crate::policy::permissions::Conditions>()
        }
        _ => Vec::new(),
    }
}

fn str_of(n: &Node) -> Option<&str> {
    match &n.value {
        NodeValue::Str(s) => Some(s),
        _ => None,
    }
}

fn items(n: Option<&Node>) -> &[Node] {
    match n.map(|n| &n.value) {
        Some(NodeValue::Seq(v)) => v,
        _ => &[],
    }
}

/// Checks the schema cannot express; they tolerate a tree the schema rejected.
fn semantic_checks(file: &str, root: &Node) -> Vec<Diagnostic> {
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
    check_agents(file, root, &mut out);
    if let Some(NodeValue::Map(agents)) = root.child("agents").map(|n| &n.value) {
        let re = Regex::new(super::raw::ID_PATTERN).ok();
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
    if let Some(tool) = step.child("tool").and_then(str_of)
        && ToolName::ALL.iter().any(|t| t.as_str() == tool)
        && !super::lower_tools::IMPLEMENTED.contains(&tool)
    {
        out.push(
            Diagnostic::at(
                file,
                step.child("tool").map_or(step.pos, |n| n.pos),
                format!("tool `{tool}` of step `{sid}` is not available in plangate {} yet", env!("CARGO_PKG_VERSION")),
            )
            .help("use a `bash` step for now; plangate refuses a step it cannot run rather than skipping it"),
        );
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
    match (step.child("tool").and_then(str_of), params) {
        (Some("bash"), Some(p)) => check_bash_params(file, p, sid, out),
        (
            Some(tool @ ("find_in_files" | "git" | "http_request" | "archive" | "system_info")),
            Some(p),
        ) => {
            out.extend(super::lower_tools::check_params(file, tool, p, sid));
        }
        (Some("secrets_scan"), Some(p)) => {
            if let Some(n) = p.child("path")
                && let Some(s) = str_of(n)
                && let Err(why) = relative_inside(s)
            {
                out.push(
                    Diagnostic::at(file, n.pos, format!("`path` of step `{sid}` {why}"))
                        .help("give a path relative to the workspace that stays inside it (`.` for all of it)"),
                );
            }
            if let Some(ids) = p.child("rules") {
                let known = crate::secrets::Ruleset::builtin();
                let known_ids = known.ids();
                for n in items(Some(ids)) {
                    if let Some(id) = str_of(n)
                        && !known_ids.contains(&id)
                    {
                        let d = Diagnostic::at(
                            file,
                            n.pos,
                            format!("unknown secrets rule `{id}` in step `{sid}`"),
                        );
                        out.push(match did_you_mean(id, known_ids.iter().copied()) {
                            Some(s) => d.help(format!("did you mean `{s}`?")),
                            None => {
                                d.help("`plangate scan` rule ids are listed in its SARIF output")
                            }
                        });
                    }
                }
            }
        }
        (Some("agent"), Some(p)) => check_agent_params(file, root_agents, step, p, sid, known, out),
        _ => {}
    }
}

fn check_agent_params(
    file: &str,
    agents: Option<&Node>,
    step: &Node,
    p: &Node,
    sid: &str,
    known: &[&str],
    out: &mut Vec<Diagnostic>,
) {
    if let Some(n) = p.child("agent")
        && let Some(name) = str_of(n)
        && agents.and_then(|a| a.child(name)).is_none()
    {
        let names: Vec<&str> = match agents.map(|a| &a.value) {
            Some(NodeValue::Map(pairs)) => pairs.iter().map(|(k, _)| k.name.as_str()).collect(),
            _ => Vec::new(),
        };
        let d = Diagnostic::at(
            file,
            n.pos,
            format!("step `{sid}` uses agent `{name}`, which is not declared under `agents:`"),
        );
        out.push(match did_you_mean(name, names.iter().copied()) {
            Some(s) => d.help(format!("did you mean `{s}`?")),
            None => d.help("declare it under `agents:` with a `command`, an `openai` endpoint or a `replay` file"),
        });
    }
    match (p.child("prompt"), p.child("prompt_file")) {
        (None, None) => out.push(
            Diagnostic::at(
                file,
                p.pos,
                format!("the parameters of step `{sid}` have neither `prompt` nor `prompt_file`"),
            )
            .help(
                "give the prompt inline with `prompt:` or in a workspace file with `prompt_file:`",
            ),
        ),
        (Some(a), Some(_)) => out.push(
            Diagnostic::at(
                file,
                a.pos,
                format!("step `{sid}` sets both `prompt` and `prompt_file`"),
            )
            .help("keep one of them"),
        ),
        (Some(a), None) if str_of(a).is_some_and(|s| s.trim().is_empty()) => out.push(
            Diagnostic::at(file, a.pos, format!("the prompt of step `{sid}` is empty"))
                .help("say what the agent should do"),
        ),
        _ => {}
    }
    let output = p.child("output").and_then(str_of).unwrap_or("envelope");
    for (key, wanted) in [
        ("language", "code"),
        ("schema", "json"),
        ("write_artifacts", "envelope"),
    ] {
        if let Some(n) = p.child(key)
            && output != wanted
        {
            out.push(
                Diagnostic::at(
                    file,
                    n.pos,
                    format!(
                        "`{key}` of step `{sid}` only applies to `output: {wanted}`, not `{output}`"
                    ),
                )
                .help(format!("remove `{key}` or set `output: {wanted}`")),
            );
        }
    }
    if output == "json" {
        match p.child("schema") {
            None => out.push(
                Diagnostic::at(file, p.pos, format!("step `{sid}` has `output: json` but no `schema`"))
                    .help("give the JSON Schema the answer must satisfy; plangate does not accept unchecked JSON"),
            ),
            Some(n) => {
                if let Err(e) = jsonschema::validator_for(&n.to_json()) {
                    out.push(
                        Diagnostic::at(file, n.pos, format!("the `schema` of step `{sid}` is not a valid JSON Schema: {e}"))
                            .help("fix the schema (draft 2020-12)"),
                    );
                }
            }
        }
    }
    let deps: Vec<&str> = items(step.child("dependencies"))
        .iter()
        .filter_map(str_of)
        .collect();
    for n in items(p.child("context_steps")) {
        let Some(c) = str_of(n) else { continue };
        if !deps.contains(&c) {
            let d = Diagnostic::at(
                file,
                n.pos,
                format!("context step `{c}` of step `{sid}` is not one of its dependencies"),
            );
            out.push(if known.contains(&c) {
                d.help(format!("add `{c}` to the `dependencies` of `{sid}` so its output exists when `{sid}` runs"))
            } else {
                d.help("name a step this one depends on")
            });
        }
    }
    for key in ["prompt_file"] {
        if let Some(n) = p.child(key)
            && let Some(s) = str_of(n)
            && let Err(why) = relative_inside(s)
        {
            out.push(
                Diagnostic::at(file, n.pos, format!("`{key}` of step `{sid}` {why}"))
                    .help("give a path relative to the workspace that stays inside it"),
            );
        }
    }
    for n in items(p.child("context_files")) {
        if let Some(s) = str_of(n)
            && let Err(why) = relative_inside(s)
        {
            out.push(
                Diagnostic::at(file, n.pos, format!("context file of step `{sid}` {why}"))
                    .help("give a path relative to the workspace that stays inside it"),
            );
        }
    }
}

/// Provider-specific checks of every agent definition.
pub(crate) fn check_agents(file: &str, root: &Node, out: &mut Vec<Diagnostic>) {
    let Some(NodeValue::Map(agents)) = root.child("agents").map(|n| &n.value) else {
        return;
    };
    let needs_price = root
        .child("policy")
        .and_then(|p| p.child("budget"))
        .and_then(|b| b.child("max_cost_usd"))
        .is_some();
    for (k, a) in agents {
        let name = &k.name;
        let provider = match a.child("provider").and_then(str_of) {
            Some(p) => p,
            None if a.child("command").is_some() => "command",
            None => {
                out.push(
                    Diagnostic::at(file, k.pos, format!("agent `{name}` has neither `provider` nor `command`"))
                        .help("set `command: [cli, args...]`, or `provider: openai` with `base_url` and `model`, or `provider: replay` with `file`"),
                );
                continue;
            }
        };
        let (required, allowed): (&[&str], &[&str]) = match provider {
            "command" => (&["command"], &["command", "output_format", "idle_timeout"]),
            "openai" => (
                &["base_url", "model"],
                &[
                    "base_url",
                    "model",
                    "api_key_env",
                    "temperature",
                    "max_tokens",
                ],
            ),
            "replay" => (&["file"], &["file"]),
            _ => continue,
        };
        for r in required {
            if a.child(r).is_none() {
                out.push(
                    Diagnostic::at(
                        file,
                        k.pos,
                        format!("agent `{name}` (provider {provider}) needs `{r}`"),
                    )
                    .help(format!("add `{r}:` to agent `{name}`")),
                );
            }
        }
        let specific = [
            "command",
            "output_format",
            "idle_timeout",
            "base_url",
            "model",
            "api_key_env",
            "temperature",
            "max_tokens",
            "file",
        ];
        if let NodeValue::Map(pairs) = &a.value {
            for (key, _) in pairs {
                if specific.contains(&key.name.as_str()) && !allowed.contains(&key.name.as_str()) {
                    out.push(
                        Diagnostic::at(
                            file,
                            key.pos,
                            format!(
                                "`{}` does not apply to agent `{name}` (provider {provider})",
                                key.name
                            ),
                        )
                        .help("remove it, or change the agent's `provider`"),
                    );
                }
            }
        }
        if let Some(cmd) = a.child("command")
            && items(Some(cmd))
                .first()
                .and_then(str_of)
                .is_some_and(|s| s.trim().is_empty())
        {
            out.push(
                Diagnostic::at(
                    file,
                    cmd.pos,
                    format!("the program of agent `{name}` is empty"),
                )
                .help("the first item is the program to run"),
            );
        }
        if let Some(u) = a.child("base_url").and_then(|n| str_of(n).map(|s| (n, s)))
            && !(u.1.starts_with("http://") || u.1.starts_with("https://"))
        {
            out.push(
                Diagnostic::at(
                    file,
                    u.0.pos,
                    format!("`base_url` of agent `{name}` is not an http(s) URL"),
                )
                .help("e.g. https://api.openai.com/v1"),
            );
        }
        if let Some(e) = a
            .child("api_key_env")
            .and_then(|n| str_of(n).map(|s| (n, s)))
            && !env_name_ok(e.1)
        {
            out.push(
                Diagnostic::at(file, e.0.pos, format!("`api_key_env` of agent `{name}` is not an environment variable name"))
                    .help("name the variable that holds the key (e.g. OPENAI_API_KEY), never the key itself"),
            );
        }
        if let Some(f) = a.child("file").and_then(|n| str_of(n).map(|s| (n, s)))
            && f.1.trim().is_empty()
        {
            out.push(
                Diagnostic::at(file, f.0.pos, format!("`file` of agent `{name}` is empty"))
                    .help("name the recorded answers file"),
            );
        }
        check_timeout(
            file,
            a.child("idle_timeout"),
            &format!("`idle_timeout` of agent `{name}`"),
            out,
        );
        if needs_price && a.child("price").is_none() {
            out.push(
                Diagnostic::at(file, k.pos, format!("agent `{name}` has no `price`, but `policy.budget.max_cost_usd` is set"))
                    .help("give `price: {input_per_mtok: X, output_per_mtok: Y}` so the cost budget can be enforced"),
            );
        }
    }
}

fn check_timeout(file: &str, node: Option<&Node>, what: &str, out: &mut Vec<Diagnostic>) {
    let Some(n) = node else { return };
    let dur = match &n.value {
        NodeValue::Int(i) => u64::try_from(*i).ok().map(std::time::Duration::from_secs),
        NodeValue::UInt(u) => Some(std::time::Duration::from_secs(*u)),
        NodeValue::Float(f) => std::time::Duration::try_from_secs_f64(*f).ok(),
        NodeValue::Str(s) => Timeout::parse_str(s),
        _ => None,
    };
    if !dur.is_some_and(Timeout::in_range) {
        out.push(
            Diagnostic::at(file, n.pos, format!("invalid timeout `{}` for {what}", short(&n.to_json())))
                .help("use a positive number of seconds (at most 86400) or a duration like `90s`, `10m`, `1h`"),
        );
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn env_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
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

fn check_bash_params(file: &str, p: &Node, sid: &str, out: &mut Vec<Diagnostic>) {
    for (key, why) in [("use_pty", "pseudo-terminals are not supported yet")] {
        if let Some(n) = p.child(key)
            && n.value == NodeValue::Bool(true)
        {
            out.push(
                Diagnostic::at(file, n.pos, format!("`{key}: true` on step `{sid}`: {why}"))
                    .help(format!("remove `{key}` or set it to false")),
            );
        }
    }
    if let Some(n) = p.child("network")
        && n.value == NodeValue::Bool(true)
        && p.child("sandbox").map(|s| &s.value) != Some(&NodeValue::Bool(true))
    {
        out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!("`network: true` on step `{sid}` without `sandbox: true`"),
            )
            .help("`network` only controls the sandbox; set `sandbox: true` or remove `network`"),
        );
    }
    if let Some(n) = p.child("command")
        && str_of(n).is_some_and(|s| !s.is_empty() && s.trim().is_empty())
    {
        out.push(
            Diagnostic::at(file, n.pos, format!("the command of step `{sid}` is empty"))
                .help("give the bash command to run"),
        );
    }
    if let Some(n) = p.child("working_directory")
        && let Some(s) = str_of(n)
        && let Err(why) = relative_inside(s)
    {
        out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!("`working_directory` of step `{sid}` {why}"),
            )
            .help("give a path relative to the workspace that stays inside it"),
        );
    }
}

/// A working directory must be relative and must not climb out of the workspace.
pub(crate) fn relative_inside(s: &str) -> Result<PathBuf, String> {
    let p = Path::new(s);
    if s.is_empty() {
        return Err("is empty".into());
    }
    if s.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if p.is_absolute() || s.starts_with('~') {
        return Err(format!("`{s}` is not relative to the workspace"));
    }
    let mut depth: i64 = 0;
    let mut clean = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(part) => {
                depth += 1;
                clean.push(part);
            }
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("`{s}` leaves the workspace"));
                }
                clean.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("`{s}` is not relative to the workspace"));
            }
        }
    }
    Ok(clean)
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

fn lower(
    file: &str,
    root: &Node,
    raw: PlanFile,
    path: &Path,
    sha256: String,
) -> Result<Plan, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let index: HashMap<String, usize> = raw
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.clone(), i))
        .collect();
    let mut templates = Vec::with_capacity(raw.steps.len());
    let mut expansions = Vec::with_capacity(raw.steps.len());
    for (i, mut s) in raw.steps.into_iter().enumerate() {
        let pos = root.pos_of(&format!("/steps/{i}"));
        let ctx = LowerCtx {
            file,
            root,
            index: &index,
            agents: &raw.agents,
            plan_dir: path.parent().unwrap_or(Path::new("")),
        };
        expansions.push(Expansion::of(s.matrix.take().as_ref()));
        match lower_step(&ctx, i, s, pos) {
            Ok(step) => templates.push(step),
            Err(d) => diags.push(d),
        }
    }
    super::check_permissions(
        file,
        root,
        "/policy",
        raw.policy.permissions.as_deref(),
        &mut diags,
    );
    if !diags.is_empty() {
        return Err(diags);
    }
    let steps = expand(file, root, templates, &expansions)?;
    Ok(Plan {
        id: raw.id,
        objective: raw.objective,
        path: path.to_path_buf(),
        sha256,
        policy: raw.policy,
        agents: raw.agents,
        steps,
    })
}

/// The longest expanded id: it names the step's artifact folder (255 bytes at most on most file systems).
const MAX_EXPANDED_ID: usize = 200;

/// Replace each template by its expansions (module `matrix` has the rules);
/// dependencies and agent `context_steps` are re-pointed at expansions.
fn expand(
    file: &str,
    root: &Node,
    templates: Vec<Step>,
    expansions: &[Expansion],
) -> Result<Vec<Step>, Vec<Diagnostic>> {
    let mut start = Vec::with_capacity(expansions.len());
    let mut total = 0usize;
    for e in expansions {
        start.push(total);
        total += e.len();
    }
    let names: Vec<String> = templates.iter().map(|s| s.id.clone()).collect();
    let mut diags = Vec::new();
    let mut steps = Vec::with_capacity(total);
    for (t, template) in templates.into_iter().enumerate() {
        let exp = &expansions[t];
        let links = |targets: &[usize], report: bool, diags: &mut Vec<Diagnostic>| {
            let mut per: Vec<Vec<usize>> = vec![Vec::new(); exp.len()];
            for (k, &d) in targets.iter().enumerate() {
                let linked = matrix::link(exp, &expansions[d]);
                let mut missing = None;
                for (c, l) in linked.into_iter().enumerate() {
                    match l {
                        Some(l) => per[c].extend(l.into_iter().map(|x| start[d] + x)),
                        None => missing = missing.or(Some(c)),
                    }
                }
                if let (Some(c), true) = (missing, report) {
                    diags.push(
                        Diagnostic::at(
                            file,
                            root.pos_of(&format!("/steps/{t}/dependencies/{k}")),
                            format!(
                                "step `{}` depends on `{}`, which has no expansion with the same matrix values",
                                exp.id(&template.id, c),
                                names[d]
                            ),
                        )
                        .help("shared matrix keys link expansions with equal values; give both steps the same values for the keys they share"),
                    );
                }
            }
            per
        };
        let deps = links(&template.deps, true, &mut diags);
        let ctx = match &template.action {
            Action::Agent(a) => links(&a.context_steps, false, &mut diags),
            _ => Vec::new(),
        };
        if exp.keys.is_empty() {
            let mut s = template;
            s.index = steps.len();
            s.deps = deps.into_iter().next().unwrap_or_default();
            if let (Action::Agent(a), Some(c)) = (&mut s.action, ctx.into_iter().next()) {
                a.context_steps = c;
            }
            steps.push(s);
            continue;
        }
        if let Some(c) = (0..exp.len()).find(|&c| exp.id(&template.id, c).len() > MAX_EXPANDED_ID) {
            diags.push(
                Diagnostic::at(
                    file,
                    root.pos_of(&format!("/steps/{t}/matrix")),
                    format!(
                        "the expanded id `{}` is longer than {MAX_EXPANDED_ID} bytes",
                        exp.id(&template.id, c)
                    ),
                )
                .help("an expanded id names the step's artifact folder; use shorter matrix keys or values"),
            );
            continue;
        }
        for (c, dc) in deps.into_iter().enumerate() {
            let mut s = template.clone();
            s.index = steps.len();
            s.id = exp.id(&template.id, c);
            s.matrix = exp.values(c);
            for (k, v) in &s.matrix {
                s.env.insert(matrix::env_name(k), v.clone());
            }
            s.deps = dc;
            if let (Action::Agent(a), Some(cs)) = (&mut s.action, ctx.get(c)) {
                a.context_steps = cs.clone();
            }
            steps.push(s);
        }
    }
    if diags.is_empty() {
        Ok(steps)
    } else {
        Err(diags)
    }
}

struct LowerCtx<'a> {
    file: &'a str,
    root: &'a Node,
    index: &'a HashMap<String, usize>,
    agents: &'a BTreeMap<String, AgentDef>,
    plan_dir: &'a Path,
}

fn lower_agent(
    ctx: &LowerCtx<'_>,
    i: usize,
    s: &StepDef,
    pos: Pos,
) -> Result<AgentAction, Diagnostic> {
    use super::raw::{AgentParams, OutputKind, ProviderKind};
    let file = ctx.file;
    let p: AgentParams =
        serde_json::from_value(Value::Object(s.parameters.clone())).map_err(|e| {
            Diagnostic::at(
                file,
                ctx.root.pos_of(&format!("/steps/{i}/parameters")),
                format!("invalid parameters of step `{}`: {e}", s.id),
            )
        })?;
    let agent = ctx
        .agents
        .get(&p.agent)
        .cloned()
        .ok_or_else(|| Diagnostic::at(file, pos, format!("unknown agent `{}`", p.agent)))?;
    let provider = agent.provider.unwrap_or(ProviderKind::Command);
    let prompt = match (&p.prompt, &p.prompt_file) {
        (Some(t), None) => PromptSource::Inline(t.clone()),
        (None, Some(f)) => {
            PromptSource::File(relative_inside(f).map_err(|why| Diagnostic::at(file, pos, why))?)
        }
        _ => {
            return Err(Diagnostic::at(
                file,
                pos,
                "set exactly one of `prompt` and `prompt_file`",
            ));
        }
    };
    let context_files = p
        .context_files
        .iter()
        .map(|f| relative_inside(f).map_err(|why| Diagnostic::at(file, pos, why)))
        .collect::<Result<Vec<_>, _>>()?;
    let replay_file = agent.file.as_ref().map(|f| ctx.plan_dir.join(f));
    Ok(AgentAction {
        agent_name: p.agent.clone(),
        provider,
        prompt,
        output: p.output.unwrap_or(OutputKind::Envelope),
        language: p.language.clone(),
        schema: p.schema.clone(),
        max_attempts: p.max_attempts.unwrap_or(2).clamp(1, 10),
        context_steps: p
            .context_steps
            .iter()
            .filter_map(|c| ctx.index.get(c).copied())
            .collect(),
        context_files,
        write_artifacts: p.write_artifacts.unwrap_or(true),
        replay_file,
        check_code: None,
        agent,
    })
}

fn lower_step(ctx: &LowerCtx<'_>, i: usize, s: StepDef, pos: Pos) -> Result<Step, Diagnostic> {
    let (file, root, index) = (ctx.file, ctx.root, ctx.index);
    let params_json = Value::Object(s.parameters.clone());
    let (action, declared_extra, param_timeout, param_env) = match s.tool {
        ToolName::Bash => {
            let p: BashParams = serde_json::from_value(params_json).map_err(|e| {
                Diagnostic::at(
                    file,
                    root.pos_of(&format!("/steps/{i}/parameters")),
                    format!("invalid parameters of step `{}`: {e}", s.id),
                )
            })?;
            let working_directory = match &p.working_directory {
                Some(w) => Some(relative_inside(w).map_err(|why| Diagnostic::at(file, pos, why))?),
                None => None,
            };
            (
                Action::Bash(BashAction {
                    command: p.command,
                    working_directory,
                    show_cli: p.show_cli,
                    capture_output: p.capture_output,
                    sandbox: p.sandbox.then_some(SandboxSpec { network: p.network }),
                    limits: p.limits,
                }),
                p.security_level,
                p.timeout,
                p.environment,
            )
        }
        ToolName::SecretsScan => {
            let p: super::raw::SecretsScanParams =
                serde_json::from_value(params_json).map_err(|e| {
                    Diagnostic::at(
                        file,
                        root.pos_of(&format!("/steps/{i}/parameters")),
                        format!("invalid parameters of step `{}`: {e}", s.id),
                    )
                })?;
            let split = |g: &str| {
                g.split(',')
                    .map(str::trim)
                    .filter(|x| !x.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            };
            (
                Action::SecretsScan(super::ScanAction {
                    path: if p.path.trim() == "." {
                        PathBuf::new()
                    } else {
                        relative_inside(&p.path).map_err(|why| Diagnostic::at(file, pos, why))?
                    },
                    include: p.file_pattern.as_deref().map(split).unwrap_or_default(),
                    exclude: p.exclude_patterns.clone(),
                    scan_type: p.scan_type.unwrap_or(super::raw::ScanType::Detect),
                    rules: p.rules.clone(),
                    show_cli: p.show_cli,
                }),
                None,
                None,
                BTreeMap::new(),
            )
        }
        ToolName::Agent => (
            Action::Agent(Box::new(lower_agent(ctx, i, &s, pos)?)),
            None,
            None,
            BTreeMap::new(),
        ),
        other => {
            let (mut action, timeout) =
                super::lower_tools::lower(other, params_json).map_err(|why| {
                    Diagnostic::at(
                        file,
                        root.pos_of(&format!("/steps/{i}/parameters")),
                        format!("step `{}`: {why}", s.id),
                    )
                })?;
            if let Action::Http(h) = &mut action {
                h.url_pos = root.pos_of(&format!("/steps/{i}/parameters/url"));
            }
            (action, None, timeout, BTreeMap::new())
        }
    };
    let mut env: BTreeMap<String, String> = s.env;
    env.extend(param_env);
    let expected_output = match &s.expected_output {
        Some(re) => Some(
            Regex::new(re)
                .map_err(|e| Diagnostic::at(file, pos, format!("bad expected_output: {e}")))?,
        ),
        None => None,
    };
    let declared_risk = s
        .risk_level
        .unwrap_or(Risk::Safe)
        .max(declared_extra.unwrap_or(Risk::Safe));
    Ok(Step {
        index: i,
        tool: s.tool,
        action,
        parameters: s.parameters,
        description: s.description,
        expected_output,
        rollback_command: s.rollback_command,
        declared_risk,
        requires_approval: s.requires_approval,
        timeout: s.timeout.or(param_timeout).map_or(DEFAULT_TIMEOUT, |t| t.0),
        deps: s
            .dependencies
            .iter()
            .filter_map(|d| index.get(d).copied())
            .collect(),
        continue_on_error: s.continue_on_error,
        env,
        pos,
        template: s.id.clone(),
        matrix: BTreeMap::new(),
        id: s.id,
    })
}

#[cfg(test)]
mod tests {
    use super::relative_inside;

    #[test]
    fn working_directories() {
        assert!(relative_inside("src").is_ok());
        assert!(relative_inside("a/../b").is_ok());
        assert!(relative_inside("./x/./y").is_ok());
        assert!(relative_inside("..").is_err());
        assert!(relative_inside("a/../../b").is_err());
        assert!(relative_inside("/etc").is_err());
        assert!(relative_inside("~/x").is_err());
        assert!(relative_inside("").is_err());
    }
}
