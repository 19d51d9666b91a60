//! The checked step: what the plan loader hands the engine for each step, with
//! the tool's own [`Action`] (the plan loader builds it; `plan::Step` names it too).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use regex::Regex;

use crate::format::node::Pos;
use crate::model::{Risk, ToolName};
use crate::sandbox::Request;
use crate::tools::params::Action;
use crate::tools::spec::Processes;

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
    /// `retry:` (bash steps): run the command again after a failed attempt.
    pub retry: Option<crate::format::retry::Retry>,
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
    /// The same values with their types, for conditions.
    pub(crate) matrix_values: BTreeMap<String, crate::format::expr::Val>,
    /// `if:`: run only when it holds (checked at load time).
    pub(crate) condition: Option<crate::format::expr::Condition>,
    /// `network: true`: its processes may reach the network.
    pub network: bool,
}

impl Step {
    /// Which processes the step starts, its rollback command aside (the
    /// tool's own answer, [`crate::tools::spec::ActionSpec::processes`]).
    pub fn processes(&self) -> Processes {
        self.action.spec().processes()
    }

    /// Whether the step runs processes of its own (a bash command, a rollback
    /// command, an agent CLI): those run in the sandbox its approval grants.
    pub fn runs_processes(&self) -> bool {
        self.rollback_command.is_some() || self.processes() == Processes::Sandboxed
    }

    /// What the step declares about its sandbox (None: it runs no process),
    /// with `writable` paths made absolute (`~/` against `home`, relative
    /// ones against `workspace`, `..` resolved lexically).
    pub(crate) fn sandbox_request(&self, workspace: &Path, home: Option<&Path>) -> Option<Request> {
        if !self.runs_processes() {
            return None;
        }
        let mut r = Request {
            network: self.network,
            ..Request::default()
        };
        self.action.spec().sandbox(&mut r, workspace, home);
        Some(r)
    }

    /// Every secret the step's processes get: its own `secrets:`, and what
    /// its tool adds (an agent step: its agent's `secrets:`, `api_key_env`
    /// or its provider's default, and the variables of its `headers`).
    pub fn secret_names(&self) -> BTreeSet<String> {
        let mut all = self.secrets.clone();
        all.extend(self.action.spec().secret_names());
        all
    }

    /// The step's resource limits, if it sets any.
    pub fn limits(&self) -> Option<crate::model::Limits> {
        self.action.spec().limits()
    }
}
