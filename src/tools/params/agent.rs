//! The `agent` tool's parameters as written and its checked action.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::format::agent::{AgentDef, AgentMode, ProviderKind};

/// What an agent step expects back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// `{"status","summary","artifacts":[{"path","content"}],"next_actions"}`, parsed in three tiers.
    Envelope,
    /// Exactly one fenced code block.
    Code,
    /// One JSON value, validated against `schema`.
    Json,
}

/// Parameters of the `agent` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentParams {
    /// Name of an agent declared under `agents:`.
    pub agent: String,
    /// The prompt (set this or `prompt_file`).
    #[serde(default)]
    pub prompt: Option<String>,
    /// A workspace file holding the prompt.
    #[serde(default)]
    pub prompt_file: Option<String>,
    /// What the answer must be. Default `envelope`.
    #[serde(default)]
    pub output: Option<OutputKind>,
    /// `output: code`: the block's language (aliases such as py, sh, yml, rs are understood).
    #[serde(default)]
    pub language: Option<String>,
    /// `output: json`: the JSON Schema the answer must satisfy.
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
    /// Attempts before the answer is rejected for good; each retry carries the parser's errors. Default 2.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub max_attempts: Option<u32>,
    /// Steps (among the dependencies) whose captured output is appended to the prompt.
    #[serde(default)]
    pub context_steps: Vec<String>,
    /// Workspace files appended to the prompt: a path, or `{path, untrusted: true, max_bytes}`
    /// for a file holding text from outside (a pull request's or issue's text a step saved):
    /// sanitised like an untrusted input before it reaches the prompt, what was removed in the
    /// step's `untrusted_context`.
    #[serde(default)]
    pub context_files: Vec<ContextFile>,
    /// `output: envelope`: write the envelope's `artifacts` (files) into the workspace once the
    /// whole answer is accepted and the files pass the change-set checks. Default true (false for a
    /// read-only step).
    #[serde(default)]
    pub write_artifacts: Option<bool>,
    /// `read-only`: this step never applies the agent's edits (a reviewer); they are reported as
    /// `attempted_changes`. Default: the agent's `mode`. A read-only agent stays read-only.
    #[serde(default)]
    pub mode: Option<AgentMode>,
    /// Show the agent, in its prompt, the request schemas of the kinds the plan's `publish:`
    /// declares (and only those) and the file to append them to (`$PLANGATE_REQUESTS`). Default
    /// true when the plan declares `publish:` and the agent can write that file (a `command` agent,
    /// or `replay` standing in for one); `openai` and `anthropic` agents run no process and never
    /// get it.
    #[serde(default)]
    pub publish_schemas: Option<bool>,
    /// Most tokens and dollars this step's agent calls may use over all its attempts; with the
    /// agent's `api`, enforced at each model call. Lowers the agent's `budget`, never raises it;
    /// `policy.step_budget` is the default and a `--policy` file's caps it.
    #[serde(default)]
    pub budget: Option<crate::model::StepBudget>,
}

/// One of `context_files`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum ContextFile {
    /// A workspace path.
    Path(String),
    /// A workspace path with how to treat its text.
    Entry(ContextFileEntry),
}

/// `context_files: [{path, untrusted, max_bytes}]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextFileEntry {
    /// The workspace path.
    pub path: String,
    /// Text from outside (a pull request, issue or merge request): sanitised before the
    /// prompt (invisible and bidirectional characters, controls, HTML comments removed,
    /// @-mentions neutralised, capped).
    #[serde(default)]
    pub untrusted: bool,
    /// `untrusted`: most bytes kept (default 32768).
    #[serde(default)]
    #[schemars(range(min = 1, max = 262_144))]
    pub max_bytes: Option<usize>,
}

impl ContextFile {
    /// Its path as written.
    pub(crate) fn path(&self) -> &str {
        match self {
            ContextFile::Path(p) => p,
            ContextFile::Entry(e) => &e.path,
        }
    }

    /// The byte cap of an untrusted file (None: trusted).
    pub(crate) fn untrusted_cap(&self) -> Option<usize> {
        match self {
            ContextFile::Entry(e) if e.untrusted => Some(e.max_bytes.unwrap_or(32 * 1024)),
            _ => None,
        }
    }
}

/// Where an agent step's prompt comes from.
#[derive(Debug, Clone)]
pub enum PromptSource {
    /// Written in the plan.
    Inline(String),
    /// A workspace file (relative, inside).
    File(PathBuf),
}

impl AgentAction {
    /// The variable holding the agent's API key: its `api_key_env`, else its
    /// provider's default (`ProviderKind::default_key_env`).
    pub(crate) fn key_env(&self) -> Option<&str> {
        self.agent
            .api_key_env
            .as_deref()
            .or(self.provider.default_key_env())
    }

    /// With `api`: the model API plangate serves for its CLI (provider from
    /// the `api` block or the preset; None when neither names one: refused at load).
    pub(crate) fn api_provider(&self) -> Option<crate::egress::api::Provider> {
        use crate::format::agent::ApiProvider;
        let api = self.agent.api.as_ref()?;
        let p = api.provider.or_else(|| {
            self.agent
                .preset
                .map(crate::format::agent::Preset::api_provider)
        })?;
        Some(match p {
            ApiProvider::Anthropic => crate::egress::api::Provider::Anthropic,
            ApiProvider::Openai => crate::egress::api::Provider::Openai,
            ApiProvider::Gemini => crate::egress::api::Provider::Gemini,
        })
    }

    /// With `api`: the variable of plangate's environment holding the real key.
    pub(crate) fn api_key_env(&self) -> Option<String> {
        let api = self.agent.api.as_ref()?;
        api.api_key_env
            .clone()
            .or_else(|| self.agent.api_key_env.clone())
            .or_else(|| self.api_provider().map(|p| p.default_key_env().to_owned()))
    }

    /// The argv of its CLI (a `command` agent, preset resolved); None for other providers.
    pub(crate) fn cli_argv(&self) -> Option<&[String]> {
        (self.provider == ProviderKind::Command)
            .then_some(self.agent.command.as_deref())
            .flatten()
    }
}

/// A checked agent step.
#[derive(Debug, Clone)]
pub struct AgentAction {
    /// The agent's name under `agents:`.
    pub agent_name: String,
    /// The agent's definition (provider already resolved).
    pub agent: AgentDef,
    /// The provider.
    pub provider: ProviderKind,
    /// The prompt.
    pub prompt: PromptSource,
    /// What the answer must be.
    pub output: OutputKind,
    /// `output: code`: the language.
    pub language: Option<String>,
    /// `output: json`: the schema.
    pub schema: Option<serde_json::Value>,
    /// Attempts before rejection.
    pub max_attempts: u32,
    /// Indices of the steps whose output is appended to the prompt.
    pub context_steps: Vec<usize>,
    /// Workspace files appended to the prompt.
    pub context_files: Vec<PathBuf>,
    /// Those marked `untrusted`, with their byte caps: sanitised before the prompt.
    pub untrusted_files: std::collections::BTreeMap<PathBuf, usize>,
    /// Write envelope artifacts into the workspace.
    pub write_artifacts: bool,
    /// Read-only (the agent's or the step's `mode`): no edit of the agent is ever applied.
    pub read_only: bool,
    /// The step's budget: its own and its agent's, each limit the lower (the policy's is
    /// applied when it runs).
    pub budget: crate::model::StepBudget,
    /// `replay`: the recorded answers file (resolved against the plan's folder).
    pub replay_file: Option<PathBuf>,
    /// The step shows the request schemas of the plan's `publish:` (see `publish_schemas`).
    pub publish_schemas: bool,
    /// The publishing section of its prompt, filled in when the plan is lowered (None: no
    /// `publish:` declared, or `publish_schemas` off).
    pub requests_prompt: Option<String>,
    /// A further check of an accepted code block (e.g. `plangate draft` validates the drafted
    /// plan); its rejections go back to the agent like the parser's. Never set from YAML.
    pub check_code: Option<fn(&str) -> Vec<crate::model::Rejection>>,
}
