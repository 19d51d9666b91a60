//! The checked step: what the plan loader hands the engine for each step, with
//! the tool's own [`Action`] (the plan loader builds it; `plan::Step` names it too).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use regex::Regex;

use crate::format::node::Pos;
use crate::model::{Risk, ToolName};
use crate::tools::bash::params::SandboxSpec;
use crate::tools::registry::Action;

/// A checked step.
#[derive(Debug, Clone)]
pub struct Step {
    /// Unique id.
    pub id: String,
    /// Position in the plan (0-based).
    pub index: usize,
    /// The tool.
    pub tool: ToolName,
    /// What to do, per tool.
    pub action: Action,
    /// The parameters as written (for the input hash).
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// For humans.
    pub description: Option<String>,
    /// stdout must match this, or the step fails.
    pub expected_output: Option<Regex>,
    /// Undo command for when the run fails.
    pub rollback_command: Option<String>,
    /// Declared risk (`risk_level`, or the tool's `security_level`; safe when neither).
    pub declared_risk: Risk,
    /// Never run without an explicit approval.
    pub requires_approval: bool,
    /// Kill the process group after this long.
    pub timeout: Duration,
    /// Indices of the steps this one depends on.
    pub deps: Vec<usize>,
    /// A failure neither stops dependents nor fails the run.
    pub continue_on_error: bool,
    /// Extra environment (step `env` and tool `environment` merged).
    pub env: BTreeMap<String, String>,
    /// The step's own `secrets:` (see [`Step::secret_names`] for all it gets).
    pub secrets: BTreeSet<String>,
    /// Where the step is written in the plan.
    pub pos: Pos,
    /// The id written in the plan (the same as `id` unless the step has a `matrix`).
    pub template: String,
    /// This expansion's matrix values (key -> value as rendered); empty without a matrix.
    pub matrix: BTreeMap<String, String>,
}

impl Step {
    /// The sandbox this step asks for, if any.
    pub fn sandbox(&self) -> Option<SandboxSpec> {
        match &self.action {
            Action::Bash(b) => b.sandbox,
            _ => None,
        }
    }

    /// Every secret the step's processes get: its own `secrets:`, and for an
    /// agent step its agent's `secrets:` and `api_key_env`.
    pub fn secret_names(&self) -> BTreeSet<String> {
        let mut all = self.secrets.clone();
        if let Action::Agent(a) = &self.action {
            all.extend(a.agent.secrets.iter().flatten().cloned());
            all.extend(a.agent.api_key_env.iter().cloned());
        }
        all
    }

    /// The step's resource limits, if it sets any.
    pub fn limits(&self) -> Option<crate::model::Limits> {
        match &self.action {
            Action::Bash(b) => b.limits.filter(|l| *l != crate::model::Limits::default()),
            _ => None,
        }
    }
}
