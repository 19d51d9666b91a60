//! The checked step: what the plan loader hands the engine for each step, with
//! the tool's own [`Action`] (the plan loader builds it; `plan::Step` names it too).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use regex::Regex;

use crate::format::node::Pos;
use crate::model::{Risk, ToolName};
use crate::sandbox::Request;
use crate::tools::params::Action;

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
    /// Whether the step runs processes of its own (a bash command, a rollback
    /// command, an agent CLI): those run in the sandbox its approval grants.
    pub fn runs_processes(&self) -> bool {
        self.rollback_command.is_some()
            || match &self.action {
                Action::Bash(_) => true,
                Action::Agent(a) => a.provider == crate::format::agent::ProviderKind::Command,
                _ => false,
            }
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
        match &self.action {
            Action::Bash(b) => {
                r.network |= b.network;
                r.egress.clone_from(&b.egress);
                r.unsandboxed = b.unsandboxed;
                r.writable = b
                    .writable
                    .iter()
                    .map(|w| absolute(w, workspace, home))
                    .collect();
                // The workspace is readable already (minus what the permission
                // rules deny, which a `readable` path never undoes).
                r.readable = b
                    .readable
                    .iter()
                    .map(|w| absolute(w, workspace, home))
                    .filter(|p| !p.starts_with(workspace))
                    .collect();
            }
            Action::Agent(a) => {
                r.network |= a.agent.network;
                r.egress.clone_from(&a.agent.egress);
                // Its model API is served by plangate: the CLI reaches that
                // endpoint, and through the proxy only what `egress` lists.
                if a.agent.api.is_some() && r.egress.is_none() {
                    r.egress = Some(Vec::new());
                }
            }
            _ => {}
        }
        Some(r)
    }

    /// Every secret the step's processes get: its own `secrets:`, and for an
    /// agent step its agent's `secrets:`, `api_key_env` (or its provider's
    /// default) and the variables of its `headers`.
    pub fn secret_names(&self) -> BTreeSet<String> {
        let mut all = self.secrets.clone();
        if let Action::Agent(a) = &self.action {
            all.extend(a.agent.secrets.iter().flatten().cloned());
            all.extend(a.key_env().map(str::to_owned));
            all.extend(a.api_key_env());
            all.extend(a.agent.headers.iter().flatten().map(|(_, var)| var.clone()));
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

/// `w` as an absolute, lexically normal path.
fn absolute(w: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    let joined = if let Some(rest) = w.strip_prefix("~/") {
        home.unwrap_or(Path::new("/")).join(rest)
    } else {
        workspace.join(w)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::absolute;
    use std::path::{Path, PathBuf};

    #[test]
    fn writable_paths_become_absolute_and_normal() {
        let ws = Path::new("/w/repo");
        let home = Some(Path::new("/home/ci"));
        for (w, want) in [
            ("target", "/w/repo/target"),
            ("./a/../b", "/w/repo/b"),
            ("../../etc", "/etc"),
            ("/opt/cache/", "/opt/cache"),
            ("~/.cargo", "/home/ci/.cargo"),
            ("/../..", "/"),
        ] {
            assert_eq!(absolute(w, ws, home), PathBuf::from(want), "{w}");
        }
    }
}
