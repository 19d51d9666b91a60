//! `plangate validate`: check a plan and show each step's risk and the
//! decision it would get, as a table (text), as [`ValidateOutput`] (JSON) or
//! as a Mermaid flowchart (`report::mermaid`). Runs nothing.

use std::collections::BTreeSet;
use std::io::Write;

use schemars::JsonSchema;
use serde::Serialize;

use super::Outcome;
use crate::cli::{Format, ValidateArgs};
use crate::engine::{self, StepDecision};
use crate::error::Error;
use crate::model::Diagnostic;
use crate::model::EffectivePolicy;
use crate::model::RunStatus;
use crate::settings::{PlanSettings, RunFlags};

/// `validate --format json` of a valid plan.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ValidateOutput<'a> {
    /// Always `true` here.
    pub valid: bool,
    pub plan: PlanSummary<'a>,
    /// The workspace, canonical.
    pub workspace: String,
    /// The policy in force (after flags and the `--policy` cap).
    #[schemars(with = "serde_json::Value")]
    pub policy: &'a EffectivePolicy,
    /// The `--approve` ids.
    pub approvals: &'a BTreeSet<String>,
    /// The inputs' values for this validation (`--input`, `PLANGATE_INPUT_*`,
    /// defaults); an input with no value is absent.
    pub inputs: std::collections::BTreeMap<&'a str, serde_json::Value>,
    pub size: Size,
    pub steps: Vec<StepLine<'a>>,
    /// What `run` would make of these decisions before any step starts.
    pub gate: Gate,
    /// Always empty here.
    pub errors: [Diagnostic; 0],
}

/// What `run` would make of the decisions before any step starts, and the
/// code `validate` exits with: `denied` (3) when a step would stop the run
/// (`refused`: blocked, or denied under `on_approval_required: deny`), else
/// `success` (0), with the steps it would skip for want of approval and their
/// dependents in `partial_reasons` (`--strict`: `denied`, 3).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Gate {
    pub status: String,
    pub exit_code: u8,
    pub refused: Vec<String>,
    #[schemars(with = "Vec<serde_json::Value>")]
    pub partial_reasons: Vec<crate::model::PartialReason>,
    pub strict: bool,
}

impl Gate {
    /// The gate for these decisions (`strict`: `--strict`).
    pub(crate) fn of(
        p: &PlanSettings,
        decisions: &[StepDecision],
        strict: bool,
    ) -> (Gate, RunStatus) {
        let (refused, partial) = engine::gate_outcome(&p.plan, &p.policy, decisions);
        let mut status = if refused.is_empty() {
            RunStatus::Success
        } else {
            RunStatus::Denied
        };
        if strict {
            status = status.strict(partial.iter().map(|r| r.reason));
        }
        let gate = Gate {
            status: status.as_str().to_owned(),
            exit_code: status.code(),
            refused: refused
                .iter()
                .map(|&i| p.plan.steps[i].id.clone())
                .collect(),
            partial_reasons: partial,
            strict,
        };
        (gate, status)
    }
}

/// `validate --format json` of an invalid plan.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ValidateInvalid<'a> {
    /// Always `false`.
    pub valid: bool,
    /// The plan path as given.
    pub plan: String,
    /// Every problem found.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub errors: &'a [Diagnostic],
}

/// Which plan.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PlanSummary<'a> {
    pub id: &'a str,
    pub path: String,
    pub sha256: &'a str,
    pub objective: &'a Option<String>,
}

/// Steps as written and once matrices are expanded.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Size {
    pub written: usize,
    pub expanded: usize,
}

/// One expanded step and the decision it would get.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StepLine<'a> {
    pub id: &'a str,
    pub template: &'a str,
    pub matrix: &'a std::collections::BTreeMap<String, String>,
    pub tool: &'a str,
    pub line: u64,
    pub dependencies: Vec<&'a str>,
    #[schemars(with = "serde_json::Value")]
    pub risk: &'a crate::model::RiskAssessment,
    #[schemars(with = "serde_json::Value")]
    pub approval: &'a crate::model::Decision,
    /// Why the step is skipped before the run (its `if:`, known from the
    /// inputs and matrix values, is false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<&'a str>,
    /// An agent step's CLI as it will be started (a preset resolved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_command: Option<&'a [String]>,
}

/// `plangate validate`.
pub(crate) fn run(args: &ValidateArgs) -> Outcome {
    // As `run` does: the sandbox self-test then finds what a run would.
    // `validate` runs no step and publishes nothing: a part that failed is a
    // warning here (`run` refuses).
    for why in crate::environ::seal().failed {
        crate::output::warning(format_args!("{why}"));
    }
    let resolved =
        PlanSettings::resolve(&args.plan, &args.decision, RunFlags::default()).and_then(|mut p| {
            p.inputs = crate::settings::inputs(&args.inputs, &p.plan)?;
            Ok(p)
        });
    let prepared = match resolved {
        Ok(p) => p,
        Err(diags) => {
            if args.format == Format::Json {
                let v = ValidateInvalid {
                    valid: false,
                    plan: args.plan.display().to_string(),
                    errors: &diags,
                };
                let _ = crate::output::stdout(&pretty(&v));
            }
            return Err(Error::Invalid(diags));
        }
    };
    let decisions = engine::decide_all(
        &prepared.plan,
        &prepared.env,
        &prepared.policy,
        &prepared.approvals,
        &prepared.inputs,
        &vec![true; prepared.plan.steps.len()],
    );
    let (gate, status) = Gate::of(&prepared, &decisions, args.strict);
    let out = match args.format {
        Format::Json => pretty(&to_json(&prepared, &decisions, gate)),
        Format::Text => {
            let mut out = text(&prepared, &decisions);
            gate_text(&mut out, &gate);
            out
        }
        Format::Mermaid => mermaid(&prepared, &decisions),
    };
    crate::output::stdout(&out).map_err(Error::Stdout)?;
    // The code `run` would exit with for these decisions (3: it would stop at the gate).
    Ok(status)
}

/// What the gate would do, when it would stop the run or skip a step.
fn gate_text(out: &mut Vec<u8>, gate: &Gate) {
    use std::fmt::Write as _;
    let mut t = String::new();
    if !gate.refused.is_empty() {
        let ids: Vec<String> = gate.refused.iter().map(|id| format!("`{id}`")).collect();
        let _ = writeln!(
            t,
            "\nrun would stop before any step runs (exit {}): {} blocked or without the approval it needs (on_approval_required: deny)",
            gate.exit_code,
            ids.join(", ")
        );
    } else if !gate.partial_reasons.is_empty() {
        let strict = if gate.strict {
            format!(
                "--strict: the run would be {} (exit {})",
                gate.status, gate.exit_code
            )
        } else {
            "exit 0 if every step that runs succeeds; --strict: exit 3".to_owned()
        };
        let _ = writeln!(t, "\nrun would succeed only partly ({strict}):");
        for r in &gate.partial_reasons {
            let _ = writeln!(t, "  - {}", r.describe(|id| format!("`{id}`")));
        }
    }
    out.extend_from_slice(t.as_bytes());
}

/// Pretty JSON and a newline, keys sorted (through `serde_json::Value`, as
/// the output has always been).
fn pretty(v: &impl Serialize) -> Vec<u8> {
    let mut out = serde_json::to_value(v)
        .and_then(|v| serde_json::to_vec_pretty(&v))
        .unwrap_or_default();
    out.push(b'\n');
    out
}

/// The JSON form of a valid plan.
pub(crate) fn to_json<'a>(
    p: &'a PlanSettings,
    decisions: &'a [StepDecision],
    gate: Gate,
) -> ValidateOutput<'a> {
    let steps = p
        .plan
        .steps
        .iter()
        .zip(decisions)
        .map(|(s, d)| StepLine {
            id: &s.id,
            template: &s.template,
            matrix: &s.matrix,
            tool: s.tool.as_str(),
            line: s.pos.line,
            dependencies: s
                .deps
                .iter()
                .map(|&i| p.plan.steps[i].id.as_str())
                .collect(),
            risk: &d.risk,
            approval: &d.decision,
            skipped: d.skip.as_deref(),
            agent_command: s.action.agent_command(),
        })
        .collect();
    ValidateOutput {
        valid: true,
        plan: PlanSummary {
            id: &p.plan.id,
            path: p.plan.path.display().to_string(),
            sha256: &p.plan.sha256,
            objective: &p.plan.objective,
        },
        workspace: p.env.workspace.display().to_string(),
        policy: &p.policy,
        approvals: &p.approvals,
        inputs: p
            .inputs
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_json()))
            .collect(),
        size: Size {
            written: p.plan.template_count(),
            expanded: p.plan.steps.len(),
        },
        steps,
        gate,
        errors: [],
    }
}

/// The Mermaid form: the expanded steps, their dependencies, each node
/// labelled with its effective risk and decision (`skipped` for a step whose
/// `if:` is false before the run, as in the table, and for a denied step
/// under `on_approval_required: skip`). Printed whatever its size, with a
/// warning when Mermaid's default limits would stop a renderer.
pub(crate) fn mermaid(p: &PlanSettings, decisions: &[StepDecision]) -> Vec<u8> {
    use crate::model::{DecisionKind, OnApproval};
    use crate::report::mermaid::{self, Node};
    let skip = p.policy.on_approval_required == OnApproval::Skip;
    let nodes: Vec<Node<'_>> = p
        .plan
        .steps
        .iter()
        .zip(decisions)
        .map(|(s, d)| Node {
            id: &s.id,
            tool: s.tool.as_str(),
            risk: Some(d.risk.effective.as_str()),
            state: match d.decision.decision {
                _ if d.skip.is_some() => "skipped",
                DecisionKind::Denied if skip => "skipped",
                k => k.as_str(),
            },
        })
        .collect();
    let edges: Vec<(usize, usize)> = p
        .plan
        .steps
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.deps.iter().map(move |&d| (d, i)))
        .collect();
    let text = mermaid::flowchart(&nodes, &edges);
    if text.len() > mermaid::MERMAID_MAX_TEXT || edges.len() > mermaid::MERMAID_MAX_EDGES {
        crate::output::warning(format_args!(
            "the graph has {} characters and {} edges: Mermaid's defaults (maxTextSize {}, maxEdges {}) stop renderers such as GitHub's from drawing it",
            text.len(),
            edges.len(),
            mermaid::MERMAID_MAX_TEXT,
            mermaid::MERMAID_MAX_EDGES
        ));
    }
    text.into_bytes()
}

/// The text form: the plan, the policy, one table row per step.
pub(crate) fn text(p: &PlanSettings, decisions: &[StepDecision]) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_text(&mut out, p, decisions);
    out
}

fn write_text(
    out: &mut impl Write,
    p: &PlanSettings,
    decisions: &[StepDecision],
) -> std::io::Result<()> {
    let pol = &p.policy;
    if p.plan.has_matrix() {
        writeln!(
            out,
            "plan `{}` ({}): {} steps once expanded ({} written, matrices expanded), valid",
            p.plan.id,
            p.plan.path.display(),
            p.plan.steps.len(),
            p.plan.template_count()
        )?;
    } else {
        writeln!(
            out,
            "plan `{}` ({}): {} steps, valid",
            p.plan.id,
            p.plan.path.display(),
            p.plan.steps.len()
        )?;
    }
    writeln!(
        out,
        "policy: risk_tolerance {}, on_approval_required {}, max_parallel {}, fail_on_secrets {}, fail_fast {}",
        pol.risk_tolerance.as_str(),
        pol.on_approval_required.as_str(),
        pol.max_parallel,
        pol.fail_on_secrets,
        pol.fail_fast
    )?;
    if let Some(hosts) = &pol.allowed_hosts {
        writeln!(out, "policy: allowed_hosts [{}]", hosts.join(", "))?;
    }
    for list in pol.permission_lists() {
        writeln!(
            out,
            "policy: {} permission rule(s) from the {} (what no rule allows is blocked)",
            list.rules.len(),
            list.source
        )?;
    }
    for c in &pol.capped {
        writeln!(out, "policy: {c}")?;
    }
    let width =
        |f: fn(&crate::plan::Step) -> usize| p.plan.steps.iter().map(f).max().unwrap_or(4).max(4);
    let w = width(|s| s.id.len());
    let t = width(|s| s.tool.as_str().len());
    writeln!(out)?;
    writeln!(
        out,
        "{:<w$}  {:<t$}  {:<9}  {:<10}  {:<9}  {:<13}  REASON",
        "STEP", "TOOL", "DECLARED", "CLASSIFIED", "EFFECTIVE", "DECISION"
    )?;
    for (s, d) in p.plan.steps.iter().zip(decisions) {
        writeln!(
            out,
            "{:<w$}  {:<t$}  {:<9}  {:<10}  {:<9}  {:<13}  {}",
            s.id,
            s.tool.as_str(),
            d.risk.declared.as_str(),
            d.risk.classified.as_str(),
            d.risk.effective.as_str(),
            if d.skip.is_some() {
                "skipped"
            } else {
                d.decision.decision.as_str()
            },
            d.skip.as_ref().map_or_else(
                || d.decision.reason.clone(),
                |why| format!("{why}: not run, so no approval is needed")
            )
        )?;
    }
    let agents: Vec<_> = p
        .plan
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            crate::tools::params::Action::Agent(a) => a.cli_argv().map(|argv| (s, a, argv)),
            _ => None,
        })
        .collect();
    if !agents.is_empty() {
        writeln!(out)?;
    }
    for (s, a, argv) in agents {
        writeln!(
            out,
            "{:<w$}  agent `{}` runs: {}{}",
            s.id,
            a.agent_name,
            crate::tools::agent::provider::cli::shown_argv(argv),
            crate::tools::agent::provider::cli::shown_format(&a.agent)
        )?;
    }
    Ok(())
}
