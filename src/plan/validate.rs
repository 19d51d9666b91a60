//! Checking plan text: parse, schema-check (with step-aware wording and
//! "did you mean" keys), the semantic checks ([`super::checks`]), then
//! lowering ([`super::lower`]). Every problem is collected and returned at once.

use std::path::Path;

use super::load::{parse_document, schema_check};
use super::node::{Node, NodeValue, Pos};
use super::raw::{AgentDef, PlanFile, StepDef};
use super::schema::{allowed_keys, plan_schema};
use super::{Plan, ToolName};
use crate::model::Diagnostic;
use crate::model::{BudgetBlock, PolicyBlock};
use crate::tools::registry::ToolSpecOf;

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
    for d in super::checks::semantic_checks(file, &root) {
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
    super::lower::lower(file, text, &root, raw, path, sha256)
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
        ["inputs", a] => format!("input `{a}`"),
        ["inputs", a, k, ..] => format!("`{k}` of input `{a}`"),
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
                Some(NodeValue::Str(t)) => {
                    ToolName::from_name(t).map_or_else(Vec::new, |t| t.spec().param_keys())
                }
                _ => Vec::new(),
            }
        }
        ["steps", i, "parameters", key] => {
            match root
                .at_pointer(&format!("/steps/{i}/tool"))
                .map(|n| &n.value)
            {
                Some(NodeValue::Str(t)) => {
                    ToolName::from_name(t).map_or_else(Vec::new, |t| t.spec().nested_keys(key))
                }
                _ => Vec::new(),
            }
        }
        ["steps", _, "retry"] => allowed_keys::<crate::format::retry::RetryDef>(),
        ["agents", _] => allowed_keys::<AgentDef>(),
        ["inputs", _] => allowed_keys::<super::raw::InputDef>(),
        ["agents", _, "price"] => allowed_keys::<super::raw::Price>(),
        ["policy", "budget"] => allowed_keys::<BudgetBlock>(),
        ["policy", "step_budget"] | ["agents", _, "budget"] => {
            allowed_keys::<crate::model::StepBudget>()
        }
        ["policy", "patch"] => allowed_keys::<crate::model::publish::PatchPolicy>(),
        ["publish"] => allowed_keys::<crate::model::publish::PublishBlock>(),
        ["publish", kind] => crate::model::publish::decl_keys(kind),
        ["policy", "permissions", _] => allowed_keys::<crate::model::PermissionRule>(),
        ["policy", "permissions", _, "conditions"] => allowed_keys::<crate::model::Conditions>(),
        _ => Vec::new(),
    }
}
