//! The pure half of every tool: what it declares to the plan loader and to
//! the policy before anything runs.
//!
//! A tool's folder implements [`ToolSpec`] (its parameters' schema and keys,
//! whether they are required, whether it takes `retry:`, its load-time checks
//! with positions, its lowering to a checked [`Action`]) and [`ActionSpec`] on
//! its checked action (risk classification, permission needs, `show_cli`,
//! whether it may write the workspace, which processes it starts, its sandbox
//! request, the secrets it gets, its limits, its summary line, the outputs it
//! sets, what `${{ }}` means in its parameters, the steps it reads besides
//! its dependencies). Every fact is a method
//! without a default, so a new tool is told by the compiler each one it must
//! state. Neither trait touches the engine,
//! the report or the file system: these files import only `plan`'s leaf
//! modules (`node`, `diag`, `raw`), `policy`, `guard`, `redact` and the
//! sandbox's `Request` type, so the loader can call them. Running a step is the other half (each folder's
//! `mod.rs`, dispatched by [`super::execute`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::params::Action;
use crate::format::agent::AgentDef;
use crate::format::node::{Node, NodeValue, Pos};
use crate::format::paths::relative_inside;
use crate::format::timeout::Timeout;
use crate::model::Diagnostic;
use crate::model::Level;
use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::permissions::Access;
use crate::sandbox::Request;

/// What a tool needs to know about the run (classification and execution).
#[derive(Debug, Clone)]
pub struct ToolEnv {
    /// Absolute, canonical workspace.
    pub workspace: PathBuf,
    /// `$HOME`, for the classifier.
    pub home: Option<PathBuf>,
    /// The policy's host allow-list for `http_request` (None: any host).
    pub allowed_hosts: Option<Vec<String>>,
    /// Where the operator lets a declared secret go (the `--policy` file's
    /// `allowed_hosts` and `secret_hosts`; never the plan's): `tools::secret_hosts`.
    pub secret_hosts: crate::policy::hosts::SecretHosts,
    /// What the sandbox pre-flight found (None: not probed, no step asks for a sandbox).
    pub sandbox: Option<crate::model::Availability>,
    /// plangate's environment and the `env_passthrough` in force: what a child's
    /// environment is built from (`StepContext::child_env`).
    pub(crate) scope: std::sync::Arc<crate::policy::env::Scope>,
    /// The git credentials withheld from the steps for this run, which
    /// plangate's own git push or pull gets back (empty when none).
    pub(crate) git_supply: std::sync::Arc<crate::sandbox::git_creds::Supply>,
}

/// Where a step's parameters are being checked (the tree may have failed the schema).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckCx<'a> {
    /// The plan file, for diagnostics.
    pub file: &'a str,
    /// The step's id as written (`?` when missing).
    pub sid: &'a str,
    /// The whole step node.
    pub step: &'a Node,
    /// The plan's `agents:` node, if any.
    pub agents: Option<&'a Node>,
    /// Every step id of the plan.
    pub known: &'a [&'a str],
}

impl CheckCx<'_> {
    /// A diagnostic at `pos`.
    pub(crate) fn at(&self, pos: Pos, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at(self.file, pos, message)
    }
}

/// Where a step that passed every check is being lowered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LowerCx<'a> {
    /// The plan file, for diagnostics.
    pub file: &'a str,
    /// The parsed tree, for positions.
    pub root: &'a Node,
    /// The step's index in the file.
    pub index: usize,
    /// The step's id.
    pub id: &'a str,
    /// Where the step is written.
    pub pos: Pos,
    /// Step index by id.
    pub steps: &'a HashMap<String, usize>,
    /// The plan's agents.
    pub agents: &'a BTreeMap<String, AgentDef>,
    /// The plan file's folder (replay files are relative to it).
    pub plan_dir: &'a Path,
}

impl LowerCx<'_> {
    /// Position of a pointer below this step's `parameters`.
    pub(crate) fn param_pos(&self, key: &str) -> Pos {
        if key.is_empty() {
            self.root
                .pos_of(&format!("/steps/{}/parameters", self.index))
        } else {
            self.root
                .pos_of(&format!("/steps/{}/parameters/{key}", self.index))
        }
    }

    /// A diagnostic at the step.
    pub(crate) fn at_step(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at(self.file, self.pos, message)
    }

    /// A diagnostic at the step's `parameters`.
    pub(crate) fn at_params(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at(self.file, self.param_pos(""), message)
    }

    /// Deserialize the parameters; a failure is reported at `parameters`.
    pub(crate) fn params<T: DeserializeOwned>(&self, params: Value) -> Result<T, Diagnostic> {
        serde_json::from_value(params)
            .map_err(|e| self.at_params(format!("invalid parameters of step `{}`: {e}", self.id)))
    }

    /// A problem the schema could not see, at `parameters`, as "step `id`: ...".
    pub(crate) fn workspace_error(&self, why: impl std::fmt::Display) -> Diagnostic {
        self.at_params(format!("step `{}`: {why}", self.id))
    }

    /// Deserialize a workspace tool's parameters (errors as [`LowerCx::workspace_error`]).
    pub(crate) fn workspace_params<T: DeserializeOwned>(
        &self,
        params: Value,
    ) -> Result<T, Diagnostic> {
        serde_json::from_value(params)
            .map_err(|e| self.workspace_error(format!("invalid parameters: {e}")))
    }

    /// A workspace tool's path parameter (errors as [`LowerCx::workspace_error`]).
    pub(crate) fn workspace_path(&self, s: &str) -> Result<PathBuf, Diagnostic> {
        inside(s).map_err(|why| self.workspace_error(why))
    }

    /// A workspace-relative path; `.` is the workspace itself. Reported at the step.
    pub(crate) fn inside(&self, s: &str) -> Result<PathBuf, Diagnostic> {
        inside(s).map_err(|why| self.at_step(why.to_string()))
    }
}

/// A workspace-relative path (`.` is the workspace itself).
pub(crate) fn inside(s: &str) -> Result<PathBuf, crate::format::paths::PathError> {
    if s.trim() == "." {
        Ok(PathBuf::new())
    } else {
        relative_inside(s)
    }
}

/// A step lowered by its tool.
#[derive(Debug)]
pub(crate) struct Lowered {
    /// What the step does.
    pub action: Action,
    /// A risk the tool's own parameters declare (bash `security_level`).
    pub declared_risk: Option<Risk>,
    /// A timeout from the parameters (the step's own `timeout` wins).
    pub timeout: Option<Timeout>,
    /// Environment from the parameters (merged over the step's `env`).
    pub env: BTreeMap<String, String>,
}

impl Lowered {
    /// An action with nothing else from the parameters.
    pub(crate) fn action(action: Action) -> Lowered {
        Lowered {
            action,
            declared_risk: None,
            timeout: None,
            env: BTreeMap::new(),
        }
    }
}

/// A tool as the plan loader sees it.
pub(crate) trait ToolSpec: Sync {
    /// The JSON Schema of the tool's `parameters` (added to `generator`'s definitions).
    fn params_schema(&self, generator: &mut SchemaGenerator) -> Schema;
    /// Whether a step of this tool must have `parameters`.
    fn params_required(&self) -> bool;
    /// The parameter names, for "did you mean" help.
    fn param_keys(&self) -> Vec<String>;
    /// The keys of a nested parameter object (`limits`), for "did you mean" help.
    fn nested_keys(&self, key: &str) -> Vec<String>;
    /// Whether its steps take `retry:`; if not, the help of the diagnostic
    /// that refuses one.
    fn retry(&self) -> Result<(), &'static str>;
    /// Checks the schema cannot express, each problem at its position.
    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>);
    /// The checked action of a step whose plan passed every check.
    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic>;
}

/// A checked action as the policy sees it.
pub trait ActionSpec {
    /// The tool's risk floor and the risk of these parameters.
    fn classify(&self, env: &ToolEnv) -> StepClassification;
    /// The resources the step touches and the level it needs on each (first: the main one).
    fn needs(&self) -> Vec<Access>;
    /// Whether the step's output is echoed on stderr when it ends.
    fn show_cli(&self) -> bool;
    /// Whether the step can change workspace files.
    fn may_write_workspace(&self) -> bool;
    /// Which processes a step of this action starts (its rollback aside).
    fn processes(&self) -> Processes;
    /// What the action adds to its step's sandbox request (asked whenever
    /// the step runs processes in a sandbox: its own, or only its
    /// `rollback_command`): `writable` and
    /// `readable` paths made absolute (`~/` against `home`, relative ones
    /// against `workspace`, `..` resolved lexically).
    fn sandbox(&self, r: &mut Request, workspace: &Path, home: Option<&Path>);
    /// The secrets the step's processes get besides its own `secrets:`.
    fn secret_names(&self) -> Vec<String>;
    /// The resource limits it sets (None: none).
    fn limits(&self) -> Option<crate::model::Limits>;
    /// What ran, for the step's summary line (None: the tool's name says it).
    fn summary(&self) -> Option<String>;
    /// The outputs a step of this action sets for its dependents.
    fn outputs(&self) -> Outputs;
    /// Its parameters that may hold `${{ }}` (by name), and what is done with them.
    fn templates(&self) -> &'static [(&'static str, Templates)];
    /// The steps (indices) whose results it reads besides its dependencies
    /// (an agent's `context_steps`): the loader re-points them at matrix
    /// expansions and renumbers them with the steps.
    fn linked_steps(&self) -> &[usize];
    /// [`ActionSpec::linked_steps`], to change (None: it has none).
    fn linked_steps_mut(&mut self) -> Option<&mut Vec<usize>>;
}

/// The outputs a step sets for its dependents (`steps.ID.outputs.NAME`,
/// `PLANGATE_OUTPUT_<STEP>_<NAME>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outputs {
    /// None.
    None,
    /// Any valid name (known only when it runs), from the `$PLANGATE_OUTPUT`
    /// file its command writes.
    File,
    /// These names, from its accepted answer: what it hands on is judged, so a
    /// refused one (a bad publish request included) is a rejection.
    Answer(&'static [&'static str]),
}

/// What is done with `${{ }}` in a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Templates {
    /// Rendered when the step runs: every template must be one known
    /// reference. The words name the parameter in messages ("the prompt").
    Rendered(&'static str),
    /// Refused at load: the text runs as a command ("the command").
    Refused(&'static str),
}

/// Which processes a step starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Processes {
    /// None: plangate does the work itself (in-process tools, agents over HTTP).
    None,
    /// plangate's own program (`git`), outside the sandbox, with the step's environment.
    Own,
    /// The step's own program (a command, an agent CLI), in the sandbox its approval grants.
    Sandboxed,
}

/// The schema of a parameters type.
pub(crate) fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// The keys of a parameters type.
pub(crate) fn keys_of<T: JsonSchema>() -> Vec<String> {
    crate::format::schema::allowed_keys::<T>()
}

/// One access.
pub(crate) fn access(resource: impl Into<String>, level: Level) -> Access {
    Access {
        resource: resource.into(),
        level,
    }
}

/// A workspace path as a permission resource (`.` for the workspace).
pub(crate) fn resource(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    let s = s.trim_start_matches("./").trim_end_matches('/');
    if s.is_empty() || s == "." {
        ".".to_owned()
    } else {
        s.to_owned()
    }
}

/// A classification at a fixed risk.
pub(crate) fn fixed(risk: Risk, reason: impl Into<String>) -> StepClassification {
    StepClassification {
        floor: risk,
        classified: risk,
        blocked: None,
        unclassifiable: None,
        reason: reason.into(),
    }
}

/// The text of a string node.
pub(crate) fn str_of(n: &Node) -> Option<&str> {
    match &n.value {
        NodeValue::Str(s) => Some(s),
        _ => None,
    }
}

/// The items of a sequence node (empty for anything else).
pub(crate) fn items(n: Option<&Node>) -> &[Node] {
    match n.map(|n| &n.value) {
        Some(NodeValue::Seq(v)) => v,
        _ => &[],
    }
}

/// Check path-valued parameters `(key, is a list)` stay inside the workspace.
pub(crate) fn check_paths(
    cx: &CheckCx<'_>,
    params: &Node,
    keys: &[(&str, bool)],
    out: &mut Vec<Diagnostic>,
) {
    for (key, list) in keys {
        let Some(n) = params.child(key) else { continue };
        let values: Vec<&Node> = match (&n.value, list) {
            (NodeValue::Seq(items), true) => items.iter().collect(),
            (_, false) => vec![n],
            _ => Vec::new(),
        };
        for v in values {
            if let NodeValue::Str(s) = &v.value
                && s.trim() != "."
                && let Err(why) = relative_inside(s)
            {
                out.push(
                    cx.at(v.pos, format!("`{key}` of step `{}`: {why}", cx.sid))
                        .help("give a path relative to the workspace that stays inside it (`.` for all of it)"),
                );
            }
        }
    }
}
