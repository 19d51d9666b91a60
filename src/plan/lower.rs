//! Lowering a plan that passed every check: each step's tool turns its
//! parameters into the checked [`Action`] (through its spec), the step's own
//! keys are added, and matrix templates are expanded ([`super::matrix`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use regex::Regex;
use serde_json::Value;

use super::matrix::{self, Expansion};
use super::node::Node;
use super::raw::{PlanFile, StepDef};
use super::{Action, DEFAULT_TIMEOUT, Plan, Step};
use crate::model::Diagnostic;
use crate::model::Risk;
use crate::tools::registry::ToolSpecOf;
use crate::tools::spec::LowerCx;

pub(super) fn lower(
    file: &str,
    text: &str,
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
    // Presets become the argv and output format they stand for, once, here.
    let agents: std::collections::BTreeMap<_, _> = raw
        .agents
        .into_iter()
        .map(|(k, a)| (k, a.resolved()))
        .collect();
    let mut templates = Vec::with_capacity(raw.steps.len());
    let mut expansions = Vec::with_capacity(raw.steps.len());
    let mut matrix_types = Vec::with_capacity(raw.steps.len());
    for (i, mut s) in raw.steps.into_iter().enumerate() {
        let pos = root.pos_of(&format!("/steps/{i}"));
        let id = s.id.clone();
        let cx = LowerCx {
            file,
            root,
            index: i,
            id: &id,
            pos,
            steps: &index,
            agents: &agents,
            plan_dir: path.parent().unwrap_or(Path::new("")),
        };
        let m = s.matrix.take();
        matrix_types.push(matrix::key_types(m.as_ref()));
        expansions.push(Expansion::of(m.as_ref()));
        match lower_step(&cx, s) {
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
    if raw.policy.secret_hosts.is_some() {
        diags.push(
            Diagnostic::at(
                file,
                root.pos_of("/policy/secret_hosts"),
                "`policy.secret_hosts` belongs to the operator: only a --policy file says where a secret may be sent",
            )
            .help("remove it from the plan and put it in the --policy file (a plan is written by whoever opened the pull request; its own lists never let a secret go anywhere)"),
        );
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let conditions = super::flow::check(&super::flow::FlowCx {
        file,
        text,
        root,
        templates: &templates,
        expansions: &expansions,
        matrix_types: &matrix_types,
        inputs: &raw.inputs,
    })?;
    for (t, c) in templates.iter_mut().zip(conditions) {
        t.condition = c;
    }
    let mut steps = expand(file, root, templates, &expansions)?;
    distinct_env_keys(file, &steps)?;
    let publish = one_spelling(file, root, raw.publish.unwrap_or_default())?;
    let requests_prompt = crate::publish::schemas::prompt_section(&publish);
    for s in &mut steps {
        if let Action::Agent(a) = &mut s.action
            && a.publish_schemas
        {
            a.requests_prompt.clone_from(&requests_prompt);
        }
    }
    Ok(Plan {
        id: raw.id,
        objective: raw.objective,
        path: path.to_path_buf(),
        sha256,
        policy: raw.policy,
        agents,
        inputs: raw.inputs,
        steps,
        publish,
    })
}

/// `publish.merge_request` is GitLab's name for `publish.pull_request`: it
/// becomes that; both at once is an error at the second one.
fn one_spelling(
    file: &str,
    root: &Node,
    mut block: crate::model::publish::PublishBlock,
) -> Result<crate::model::publish::PublishBlock, Vec<Diagnostic>> {
    let Some(mr) = block.merge_request.take() else {
        return Ok(block);
    };
    if block.pull_request.is_some() {
        return Err(vec![
            Diagnostic::at(
                file,
                root.pos_of("/publish/merge_request"),
                "`publish` declares both `pull_request` and `merge_request`, two names of one thing",
            )
            .help("keep one: `merge_request` is GitLab's name for `pull_request`"),
        ]);
    }
    block.pull_request = Some(mr);
    Ok(block)
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
        let ctx = links(template.action.spec().linked_steps(), false, &mut diags);
        if exp.keys.is_empty() {
            let mut s = template;
            s.index = steps.len();
            s.deps = deps.into_iter().next().unwrap_or_default();
            if let (Some(linked), Some(c)) = (
                s.action.spec_mut().linked_steps_mut(),
                ctx.into_iter().next(),
            ) {
                *linked = c;
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
            s.matrix_values = exp.typed_values(c);
            for (k, v) in &s.matrix {
                s.env.insert(matrix::env_name(k), v.clone());
            }
            s.deps = dc;
            if let (Some(linked), Some(cs)) = (s.action.spec_mut().linked_steps_mut(), ctx.get(c)) {
                linked.clone_from(cs);
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

/// One step: its tool lowers the parameters, the step's own keys are added.
fn lower_step(cx: &LowerCx<'_>, s: StepDef) -> Result<Step, Diagnostic> {
    let lowered = s
        .tool
        .spec()
        .lower(cx, Value::Object(s.parameters.clone()))?;
    let mut env: BTreeMap<String, String> = s.env;
    env.extend(lowered.env);
    let expected_output = match &s.expected_output {
        Some(re) => {
            Some(Regex::new(re).map_err(|e| cx.at_step(format!("bad expected_output: {e}")))?)
        }
        None => None,
    };
    let declared_risk = s
        .risk_level
        .unwrap_or(Risk::Safe)
        .max(lowered.declared_risk.unwrap_or(Risk::Safe));
    Ok(Step {
        index: cx.index,
        tool: s.tool,
        action: lowered.action,
        parameters: s.parameters,
        description: s.description,
        expected_output,
        rollback_command: s.rollback_command,
        declared_risk,
        requires_approval: s.requires_approval,
        timeout: s
            .timeout
            .or(lowered.timeout)
            .map_or(DEFAULT_TIMEOUT, |t| t.0),
        deps: s
            .dependencies
            .iter()
            .filter_map(|d| cx.steps.get(d).copied())
            .collect(),
        continue_on_error: s.continue_on_error,
        retry: s.retry.map(crate::format::retry::Retry::from_def),
        env,
        secrets: s.secrets.into_iter().collect(),
        pos: cx.pos,
        template: s.id.clone(),
        matrix: BTreeMap::new(),
        matrix_values: BTreeMap::new(),
        condition: None,
        network: s.network,
        id: s.id,
    })
}

/// Two steps whose ids make one variable name (`PLANGATE_OUTPUT_<STEP>_...`,
/// `PLANGATE_RESULT_<STEP>`) are refused: `deploy-web` and `deploy_web`, or
/// two matrix expansions whose values differ only in punctuation.
fn distinct_env_keys(file: &str, steps: &[Step]) -> Result<(), Vec<Diagnostic>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut diags = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let key = crate::format::names::env_key(&s.id);
        if let Some(&j) = seen.get(&key) {
            let first = &steps[j];
            diags.push(
                Diagnostic::at(
                    file,
                    s.pos,
                    format!(
                        "steps `{}` and `{}` would have the same variables (`PLANGATE_OUTPUT_{key}_*`)",
                        first.id, s.id
                    ),
                )
                .help(format!(
                    "`{}` is at line {}; a step's variables use its id upper-cased with `_` for every other character: rename one",
                    first.id, first.pos.line
                )),
            );
        } else {
            seen.insert(key, i);
        }
    }
    if diags.is_empty() { Ok(()) } else { Err(diags) }
}
