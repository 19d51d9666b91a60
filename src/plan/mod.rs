//! Plans: loading, validating and the checked types the engine runs.
//!
//! `raw` mirrors the YAML; `load` parses and schema-checks it; `validate`
//! runs the checks (`checks`, and each tool's own through its spec) and
//! `lower` turns the raw plan into a [`Plan`] whose references, graph,
//! timeouts and parameters are known to be good, collecting every problem at
//! once. Apart from [`load_plan_file`] reading its file, nothing here does I/O.
//!
//! Per-tool knowledge (parameter types, checks, lowering) lives in each
//! tool's folder under `tools/`, reached through `tools::registry`: plan
//! depends on those pure spec files, never on how a tool runs.

pub(crate) mod checks;
pub(crate) mod env;
pub(crate) mod event;
mod flow;
pub(crate) mod inputs;
pub(crate) mod load;
mod lower;
pub(crate) mod matrix;
pub(crate) mod raw;
pub(crate) mod schema;
pub(crate) mod validate;

#[cfg(test)]
#[path = "tool_facts_tests.rs"]
mod tool_facts_tests;

pub(crate) use crate::format::{diag, node};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

pub(crate) use crate::tools::params::Action;
pub(crate) use crate::tools::params::agent::{AgentAction, PromptSource};
pub(crate) use crate::tools::step::Step;
pub(crate) use node::Pos;
pub(crate) use raw::AgentDef;

use crate::model::{Diagnostic, PolicyBlock, ToolName};

/// Step and agent ids: a letter or underscore, then letters, digits, `_` or `-`; 64 at most.
pub(crate) const ID_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$";

/// The default step timeout (design 002's PlanStep default).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// A plan that passed every check.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The plan's id.
    pub id: String,
    /// What the plan is for.
    pub objective: Option<String>,
    /// The file it came from, as given.
    pub path: PathBuf,
    /// sha256 of the file's bytes, hex.
    pub sha256: String,
    /// The plan's own policy block.
    pub policy: PolicyBlock,
    /// Declared agents.
    pub agents: BTreeMap<String, AgentDef>,
    /// Declared inputs (`inputs:`).
    pub(crate) inputs: BTreeMap<String, inputs::InputDef>,
    /// Steps in file order.
    pub steps: Vec<Step>,
    /// What the run may publish (`publish:`; empty: nothing).
    pub(crate) publish: crate::model::publish::PublishBlock,
}

/// Read, parse and check a plan file: every problem is returned at once.
/// Every `http_request` step of `plan` whose URL's host the allow-list in
/// force does not allow (checked again at run time, for every redirect hop).
pub(crate) fn check_allowed_hosts(plan: &Plan, allowed: Option<&[String]>) -> Vec<Diagnostic> {
    let file = plan.path.display().to_string();
    crate::tools::http::spec::check_allowed_hosts(&file, &plan.steps, allowed)
}

pub(crate) fn load_plan_file(path: &Path) -> Result<Plan, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let bytes = read_capped(path).map_err(|d| vec![d])?;
    let text = String::from_utf8(bytes.clone()).map_err(|e| {
        vec![
            Diagnostic::at(
                &file,
                Pos::default(),
                format!(
                    "file is not valid UTF-8 (byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
            .help("save the plan as UTF-8"),
        ]
    })?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    validate::plan_from_text(&file, &text, path, sha256)
}

/// Check plan text (no file access); `path` is only recorded.
pub fn load_plan_str(file: &str, text: &str) -> Result<Plan, Vec<Diagnostic>> {
    let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
    validate::plan_from_text(file, text, Path::new(file), sha256)
}

/// Read a file, refusing anything larger than [`load::MAX_FILE_BYTES`] without reading it whole.
pub(crate) fn read_capped(path: &Path) -> Result<Vec<u8>, Diagnostic> {
    use std::io::Read;
    let file = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| {
        Diagnostic::at(&file, Pos::default(), format!("cannot read the file: {e}"))
            .help("check the path and its permissions")
    })?;
    let mut buf = Vec::new();
    let limit = u64::try_from(load::MAX_FILE_BYTES).unwrap_or(u64::MAX) + 1;
    f.take(limit)
        .read_to_end(&mut buf)
        .map_err(|e| Diagnostic::at(&file, Pos::default(), format!("cannot read the file: {e}")))?;
    if buf.len() > load::MAX_FILE_BYTES {
        return Err(Diagnostic::at(
            &file,
            Pos::default(),
            format!(
                "file is larger than the {} bytes a plan may have",
                load::MAX_FILE_BYTES
            ),
        )
        .help("split the plan, or move large data into files the steps read"));
    }
    Ok(buf)
}

impl Plan {
    /// Step index by id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }

    /// Whether any step was written with a `matrix`.
    pub fn has_matrix(&self) -> bool {
        self.steps.iter().any(|s| !s.matrix.is_empty())
    }

    /// How many steps were written in the plan (matrix templates counted once).
    pub fn template_count(&self) -> usize {
        let mut n = 0;
        let mut last: Option<&str> = None;
        for s in &self.steps {
            if last != Some(s.template.as_str()) {
                n += 1;
                last = Some(&s.template);
            }
        }
        n
    }

    /// The plan restricted to the steps marked in `keep`, which must be closed
    /// under dependencies (a shard is: components never split). Indices are
    /// renumbered; `index` becomes the position in the smaller plan.
    pub fn restricted(&self, keep: &[bool]) -> Plan {
        let mut map = vec![usize::MAX; self.steps.len()];
        let mut next = 0;
        for (i, k) in keep.iter().enumerate() {
            if *k {
                map[i] = next;
                next += 1;
            }
        }
        let remap = |v: &[usize]| -> Vec<usize> {
            v.iter()
                .filter_map(|&d| map.get(d).copied().filter(|&m| m != usize::MAX))
                .collect()
        };
        let steps = self
            .steps
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(s, _)| {
                let mut s = s.clone();
                s.index = map[s.index];
                s.deps = remap(&s.deps);
                if let Some(linked) = s.action.spec_mut().linked_steps_mut() {
                    *linked = remap(linked);
                }
                s
            })
            .collect();
        Plan {
            steps,
            ..self.clone_header()
        }
    }

    fn clone_header(&self) -> Plan {
        Plan {
            id: self.id.clone(),
            objective: self.objective.clone(),
            path: self.path.clone(),
            sha256: self.sha256.clone(),
            policy: self.policy.clone(),
            agents: self.agents.clone(),
            inputs: self.inputs.clone(),
            steps: Vec::new(),
            publish: self.publish.clone(),
        }
    }
}

/// Read and check a `--policy` file (YAML with the keys of a plan's `policy:` block).
pub(crate) fn load_policy_file(path: &Path) -> Result<PolicyBlock, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let bytes = read_capped(path).map_err(|d| vec![d])?;
    let text = String::from_utf8(bytes).map_err(|_| {
        vec![
            Diagnostic::at(&file, Pos::default(), "file is not valid UTF-8")
                .help("save the policy as UTF-8"),
        ]
    })?;
    let root = load::parse_document(&file, &text).map_err(|d| vec![d])?;
    let describe = |p: &str| {
        if p.is_empty() {
            "the policy file".to_owned()
        } else {
            format!("`{}`", p.trim_start_matches('/').replace('/', "."))
        }
    };
    let keys = |p: &str| {
        let segs: Vec<&str> = p.split('/').skip(1).collect();
        match segs.as_slice() {
            ["permissions", _] => schema::allowed_keys::<crate::model::PermissionRule>(),
            ["permissions", _, "conditions"] => schema::allowed_keys::<crate::model::Conditions>(),
            ["budget"] => schema::allowed_keys::<crate::model::BudgetBlock>(),
            ["patch"] => schema::allowed_keys::<crate::model::publish::PatchPolicy>(),
            _ => schema::allowed_keys::<PolicyBlock>(),
        }
    };
    let instance = root.to_json();
    let diags = load::schema_check(
        &file,
        &root,
        &instance,
        &schema::policy_schema(),
        &describe,
        &keys,
    );
    if !diags.is_empty() {
        return Err(diags);
    }
    let block: PolicyBlock = serde_json::from_value(instance).map_err(|e| {
        vec![Diagnostic::at(
            &file,
            Pos::default(),
            format!("invalid policy file: {e}"),
        )]
    })?;
    let mut diags = Vec::new();
    check_permissions(&file, &root, "", block.permissions.as_deref(), &mut diags);
    env::check_passthrough(&file, Some(&root), "`env_passthrough`", &mut diags);
    check_secret_hosts(&file, &root, &mut diags);
    if diags.is_empty() {
        Ok(block)
    } else {
        Err(diags)
    }
}

/// A policy file's `secret_hosts`: each key a variable name, each entry a
/// host as in `allowed_hosts`, at their positions.
fn check_secret_hosts(file: &str, root: &node::Node, out: &mut Vec<Diagnostic>) {
    let Some(node::NodeValue::Map(pairs)) = root.child("secret_hosts").map(|n| &n.value) else {
        return;
    };
    for (k, v) in pairs {
        let name = k.name.as_str();
        let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            out.push(
                Diagnostic::at(
                    file,
                    k.pos,
                    format!("`secret_hosts`: `{name}` is not the name of a secret"),
                )
                .help("each key is a secret's variable name, as a step declares it under `secrets:` (e.g. `DEPLOY_TOKEN: [api.example.com]`)"),
            );
        }
        let items = match &v.value {
            node::NodeValue::Seq(items) => items.as_slice(),
            _ => &[],
        };
        for n in items {
            if let node::NodeValue::Str(entry) = &n.value
                && let Err(why) = crate::policy::hosts::HostPattern::parse(entry)
            {
                out.push(
                    Diagnostic::at(file, n.pos, format!("`secret_hosts.{name}`: {why}"))
                        .help("list hosts as in `allowed_hosts`: `api.example.com`, `*.example.com`, an IP address, each with an optional `:port`"),
                );
            }
        }
    }
}

/// Load-time checks of a `permissions:` list (globs, duplicate ids), at
/// their positions; `prefix` is the pointer of the block holding it.
pub(crate) fn check_permissions(
    file: &str,
    root: &node::Node,
    prefix: &str,
    rules: Option<&[crate::model::PermissionRule]>,
    out: &mut Vec<Diagnostic>,
) {
    let Some(rules) = rules else { return };
    for (i, field, msg) in crate::policy::permissions::check(rules) {
        let pos = root.pos_of(&format!("{prefix}/permissions/{i}/{field}"));
        out.push(Diagnostic::at(file, pos, msg).help(
            "resources are `*` or globs such as `src/**`, `https://api.example.com/**`, `agent:NAME`, `system`; rule ids are unique",
        ));
    }
}

/// Read the `agents:` block of a YAML file (a plan, or a file holding only `agents:`),
/// for `plangate draft`. Other keys are ignored.
pub(crate) fn load_agents_file(path: &Path) -> Result<BTreeMap<String, AgentDef>, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let bytes = read_capped(path).map_err(|d| vec![d])?;
    let text = String::from_utf8(bytes).map_err(|_| {
        vec![
            Diagnostic::at(&file, Pos::default(), "file is not valid UTF-8")
                .help("save it as UTF-8"),
        ]
    })?;
    let root = load::parse_document(&file, &text).map_err(|d| vec![d])?;
    let Some(agents) = root.child("agents") else {
        return Err(vec![
            Diagnostic::at(&file, root.pos, "no `agents:` block in this file")
                .help("declare the agent under `agents:` (a plan file works too)"),
        ]);
    };
    let mut diags = Vec::new();
    crate::tools::agent::agents::check_agents(&file, &root, &mut diags);
    if !diags.is_empty() {
        return Err(diags);
    }
    serde_json::from_value::<BTreeMap<String, AgentDef>>(agents.to_json())
        .map(|m| m.into_iter().map(|(k, a)| (k, a.resolved())).collect())
        .map_err(|e| {
            vec![
                Diagnostic::at(&file, agents.pos, format!("invalid `agents:` block: {e}"))
                    .help("see `plangate schema` for the agent format"),
            ]
        })
}
