//! The plan file as written: serde types mirroring the YAML, with their JSON Schema.
//!
//! These types are the single source of truth for the plan format: `plangate
//! schema` prints the schema generated from them, and the loader validates the
//! YAML against that same schema before deserializing into them, so the two
//! cannot drift. Nothing here does I/O.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;

use crate::model::{PolicyBlock, Risk, ToolName};

pub(crate) use super::inputs::InputDef;
pub(crate) use crate::format::agent::{AgentDef, Price, ProviderKind};
pub(crate) use crate::format::timeout::Timeout;
pub(crate) use crate::tools::params::agent::OutputKind;

use super::ID_PATTERN;

/// Plan ids may also contain dots.
pub(crate) const PLAN_ID_PATTERN: &str = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$";

/// A plangate plan (format version 1).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "plangate plan")]
pub(crate) struct PlanFile {
    /// Plan format version. Must be 1.
    #[schemars(range(min = 1, max = 1))]
    #[expect(
        dead_code,
        reason = "the JSON Schema pins it to 1 (with its position); kept so the key parses"
    )]
    pub(crate) version: u32,
    /// The plan's id, used in reports.
    #[schemars(pattern(PLAN_ID_PATTERN))]
    pub id: String,
    /// What the plan is for, in one sentence.
    #[serde(default)]
    pub objective: Option<String>,
    /// The plan's own policy. A `--policy` file can make it stricter, never looser.
    #[serde(default)]
    pub policy: PolicyBlock,
    /// Agents that `agent` steps refer to by name.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentDef>,
    /// Values the run is given: `--input NAME=VALUE`, else `PLANGATE_INPUT_<NAME>`, else
    /// `default`. Checked before anything runs; every step reads them from its environment
    /// as `PLANGATE_INPUT_<NAME>` (the name upper-cased, `_` for every other character).
    #[serde(default)]
    pub inputs: BTreeMap<String, InputDef>,
    /// The steps, run as a dependency graph.
    #[schemars(length(min = 1))]
    pub steps: Vec<StepDef>,
    /// What the run may publish (pull request, review, comment, labels, issue, check run). Steps
    /// ask by appending JSON lines to `$PLANGATE_REQUESTS`; plangate publishes them after the run,
    /// only when every gate passed. Anything not declared here cannot be published.
    #[serde(default)]
    pub publish: Option<crate::model::publish::PublishBlock>,
}

/// One step of the plan.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepDef {
    /// Unique id: a letter or underscore, then letters, digits, `_` or `-`.
    #[schemars(pattern(ID_PATTERN))]
    pub id: String,
    /// Which tool runs the step.
    pub tool: ToolName,
    /// The tool's parameters (see the per-tool schemas).
    #[serde(default)]
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// What the step does, for humans.
    #[serde(default)]
    pub description: Option<String>,
    /// A regular expression searched in the step's standard output (a final newline is ignored
    /// by `$`; use `(?m)` for per-line anchors); no match and the step fails.
    #[serde(default)]
    pub expected_output: Option<String>,
    /// A bash command that undoes the step; run, newest first, for completed steps when the run fails.
    #[serde(default)]
    pub rollback_command: Option<String>,
    /// The risk the author declares. The effective risk is never lower than what plangate classifies.
    #[serde(default)]
    pub risk_level: Option<Risk>,
    /// Never run this step without an explicit approval, whatever its risk.
    #[serde(default)]
    pub requires_approval: bool,
    /// Seconds (or `90s`, `10m`, `1h`); default 300. The whole process group is killed when it expires.
    #[serde(default)]
    pub timeout: Option<Timeout>,
    /// Ids of steps that must succeed first.
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// Bash steps only: run the command again after a failed attempt, e.g. `{max_attempts: 3,
    /// delay: 5s, backoff: 2}`. Each attempt starts afresh (`$PLANGATE_OUTPUT` emptied); the
    /// report lists every attempt (`command_attempts`).
    #[serde(default)]
    pub retry: Option<crate::format::retry::RetryDef>,
    /// Run the step only when this expression holds (see "Conditions" in the README), e.g.
    /// `steps.lint.outputs.changed == 'true'` or `failure()`; false: the step is `skipped`
    /// ("condition false"). Without it a step runs when its dependencies succeeded.
    #[serde(default, rename = "if")]
    #[expect(
        dead_code,
        reason = "plan::flow reads it from the tree, with positions; kept so the key parses"
    )]
    pub condition: Option<String>,
    /// A failure of this step neither stops its dependents nor fails the run.
    #[serde(default)]
    pub continue_on_error: bool,
    /// Extra environment variables for the step.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Let the step's processes (bash command, rollback, agent CLI) reach the network from their
    /// sandbox. Its risk is then at least moderate.
    #[serde(default)]
    pub network: bool,
    /// Variables of plangate's environment this step's processes get (its command, rollback, git,
    /// its agent's CLI): nothing else passes but a fixed allow-list and `env`. Each must be set and
    /// non-empty when the run starts (else the step is blocked), and its value is masked in every
    /// output. Workflow-command files (`GITHUB_ENV`, `GITHUB_OUTPUT`, ...) are refused.
    #[serde(default)]
    #[schemars(inner(pattern(crate::model::policy::ENV_NAME_PATTERN)))]
    pub secrets: Vec<String>,
    /// Run the step once per combination of these values: `{package: [a, b]}` makes
    /// `ID[package=a]` and `ID[package=b]`, each with `PLANGATE_MATRIX_PACKAGE` set
    /// (values reach the command only through the environment, never by substitution).
    #[serde(default)]
    pub matrix: Option<Matrix>,
}

/// Matrix keys: a lowercase letter, then lowercase letters, digits or `_`; 32 at most.
pub(crate) const MATRIX_KEY_PATTERN: &str = r"^[a-z][a-z0-9_]{0,31}$";
/// Matrix string values: they become part of step ids and artifact folder names.
pub(crate) const MATRIX_VALUE_PATTERN: &str = r"^[A-Za-z0-9_.+@-]{1,64}$";
/// Most combinations one step's matrix may make.
pub(crate) const MAX_COMBINATIONS_PER_STEP: u64 = 10_000;
/// Most steps a plan may have once every matrix is expanded.
pub(crate) const MAX_EXPANDED_STEPS: u64 = 100_000;

/// A step's `matrix:` block: key -> non-empty list of values.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Matrix(pub BTreeMap<String, Vec<MatrixValue>>);

/// One matrix value: a string, a number or a boolean.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum MatrixValue {
    /// A boolean, written `true` / `false`.
    Bool(bool),
    /// A number, written as in the plan.
    Num(serde_json::Number),
    /// A string.
    Str(String),
}

impl MatrixValue {
    /// The value as it appears in ids and in `PLANGATE_MATRIX_<KEY>`.
    pub(crate) fn render(&self) -> String {
        match self {
            MatrixValue::Bool(b) => b.to_string(),
            MatrixValue::Num(n) => n.to_string(),
            MatrixValue::Str(s) => s.clone(),
        }
    }
}

impl JsonSchema for Matrix {
    fn schema_name() -> Cow<'static, str> {
        "Matrix".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Run the step once per combination: keys (lowercase, `^[a-z][a-z0-9_]{0,31}$`) map to non-empty lists of strings (`^[A-Za-z0-9_.+@-]{1,64}$`), numbers or booleans. Each expansion gets the id `ID[key=value,...]` (keys sorted) and `PLANGATE_MATRIX_<KEY>` in its environment. At most 10000 combinations per step and 100000 steps per plan.",
            "type": "object",
            "minProperties": 1,
            "maxProperties": 8,
            "propertyNames": {"pattern": MATRIX_KEY_PATTERN},
            "additionalProperties": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_COMBINATIONS_PER_STEP,
                "items": {
                    "oneOf": [
                        {"type": "string", "pattern": MATRIX_VALUE_PATTERN},
                        {"type": "number"},
                        {"type": "boolean"}
                    ]
                }
            }
        })
    }
}
