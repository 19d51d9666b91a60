//! The plan file as written: serde types mirroring the YAML, with their JSON Schema.
//!
//! These types are the single source of truth for the plan format: `plangate
//! schema` prints the schema generated from them, and the loader validates the
//! YAML against that same schema before deserializing into them, so the two
//! cannot drift. Nothing here does I/O.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

use crate::model::{PolicyBlock, Risk, ToolName};

pub(crate) use crate::tools::agent::params::OutputKind;

/// Step and agent ids: a letter or underscore, then letters, digits, `_` or `-`; 64 at most.
pub(crate) const ID_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$";
/// Plan ids may also contain dots.
pub(crate) const PLAN_ID_PATTERN: &str = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$";
/// The longest timeout a step may ask for: one day.
pub(crate) const MAX_TIMEOUT_SECS: f64 = 86_400.0;

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
    /// The steps, run as a dependency graph.
    #[schemars(length(min = 1))]
    pub steps: Vec<StepDef>,
}

/// An agent that `agent` steps can call.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentDef {
    /// How to reach the agent: `command` (a local CLI; the default when `command` is set),
    /// `openai` (an OpenAI-compatible HTTP endpoint) or `replay` (answers recorded in a file).
    #[serde(default)]
    pub provider: Option<ProviderKind>,
    /// `command`: the CLI's argv (no shell). The prompt goes on its stdin, which is then closed; the answer is its stdout.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>>,
    /// `command`: `text` (default: stdout is the answer) or `json` (stdout is one JSON object with the
    /// answer in `result` and token counts in `usage`, as `claude -p --output-format json` prints).
    #[serde(default)]
    pub output_format: Option<CliOutputFormat>,
    /// `openai`: the API base, e.g. `https://api.openai.com/v1` (`/chat/completions` is appended).
    #[serde(default)]
    pub base_url: Option<String>,
    /// `openai`: the model name.
    #[serde(default)]
    pub model: Option<String>,
    /// `openai`: the environment variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// `openai`: sampling temperature.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 2.0))]
    pub temperature: Option<f64>,
    /// `openai`: most tokens in one answer.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u32>,
    /// `replay`: the JSON Lines file of recorded answers, relative to the plan file.
    #[serde(default)]
    pub file: Option<String>,
    /// Seconds (or `10m`) before one call is stopped. Default 600.
    #[serde(default)]
    pub timeout: Option<Timeout>,
    /// `command`: stop the agent when it prints nothing for this long.
    #[serde(default)]
    pub idle_timeout: Option<Timeout>,
    /// Refuse to send a prompt longer than this many characters (never truncated). Default 400000.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_input_chars: Option<u64>,
    /// Refuse an answer longer than this many characters (never truncated). Default 400000.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_output_chars: Option<u64>,
    /// Prices for cost accounting and `policy.budget.max_cost_usd`.
    #[serde(default)]
    pub price: Option<Price>,
}

/// Agent providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A local CLI.
    Command,
    /// An OpenAI-compatible chat-completions endpoint.
    Openai,
    /// Recorded answers.
    Replay,
}

impl ProviderKind {
    /// Every provider (a test checks none is missing).
    pub const ALL: [ProviderKind; 3] = [
        ProviderKind::Command,
        ProviderKind::Openai,
        ProviderKind::Replay,
    ];

    /// The name used in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Command => "command",
            ProviderKind::Openai => "openai",
            ProviderKind::Replay => "replay",
        }
    }

    /// The provider named `name` in a plan.
    pub fn from_name(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// How a CLI agent prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CliOutputFormat {
    /// stdout is the answer.
    Text,
    /// stdout is `{"result": "...", "usage": {"input_tokens": N, "output_tokens": N}, ...}`.
    Json,
}

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per million prompt tokens.
    #[schemars(range(min = 0.0))]
    pub input_per_mtok: f64,
    /// USD per million answer tokens.
    #[schemars(range(min = 0.0))]
    pub output_per_mtok: f64,
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
    /// A failure of this step neither stops its dependents nor fails the run.
    #[serde(default)]
    pub continue_on_error: bool,
    /// Extra environment variables for the step.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
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

/// A duration in seconds: a positive number, or a string such as `90s`, `10m`, `1h 30m`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeout(pub std::time::Duration);

impl Timeout {
    /// Parse the string form (`90s`, `10m`, `1.5`); `None` when it is not a duration.
    pub fn parse_str(s: &str) -> Option<std::time::Duration> {
        let t = s.trim();
        if let Ok(n) = t.parse::<f64>() {
            return std::time::Duration::try_from_secs_f64(n).ok();
        }
        humantime::parse_duration(t).ok()
    }

    /// Whether the duration is within (0, one day].
    pub fn in_range(d: std::time::Duration) -> bool {
        !d.is_zero() && d.as_secs_f64() <= MAX_TIMEOUT_SECS
    }
}

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Str(String),
        }
        let dur = match Raw::deserialize(d)? {
            Raw::Num(n) => std::time::Duration::try_from_secs_f64(n).ok(),
            Raw::Str(s) => Timeout::parse_str(&s),
        };
        match dur {
            Some(d) if Timeout::in_range(d) => Ok(Timeout(d)),
            _ => Err(serde::de::Error::custom(
                "a timeout is a positive number of seconds or a duration like `90s` or `10m`, at most one day",
            )),
        }
    }
}

impl JsonSchema for Timeout {
    fn schema_name() -> Cow<'static, str> {
        "Timeout".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Seconds (a positive number, at most 86400) or a duration such as `90s`, `10m`, `1h 30m`.",
            "oneOf": [
                {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_SECS},
                {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*([a-zA-Z]+)?(\s+[0-9]+\s*[a-zA-Z]+)*\s*$"}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ProviderKind;

    /// `ProviderKind::ALL` lists every variant the plan format knows.
    #[test]
    fn all_lists_every_provider() {
        let schema = schemars::schema_for!(ProviderKind).to_value();
        let text = schema.to_string();
        let named = ["command", "openai", "replay"];
        for n in named {
            assert!(text.contains(&format!("\"{n}\"")), "{n}");
        }
        let count =
            text.matches("\"const\"").count() + schema["enum"].as_array().map_or(0, Vec::len);
        assert_eq!(count, ProviderKind::ALL.len(), "{schema}");
        for k in ProviderKind::ALL {
            assert_eq!(ProviderKind::from_name(k.as_str()), Some(k));
        }
    }
}
