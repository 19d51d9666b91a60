//! The `agents:` block of a plan file: the agent definition, its provider and
//! CLI output format, and its prices (serde types with their JSON Schema).
//!
//! Plain data, shared by the plan loader and the `agent` tool. Nothing here does I/O.

use schemars::JsonSchema;
use serde::Deserialize;

use super::timeout::Timeout;

/// An agent that `agent` steps can call.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentDef {
    /// How to reach the agent: `command` (a local CLI; the default when `command` is set),
    /// `openai` (an OpenAI-compatible HTTP endpoint), `anthropic` (the Anthropic Messages API) or
    /// `replay` (answers recorded in a file).
    #[serde(default)]
    pub provider: Option<ProviderKind>,
    /// `command`: the CLI's argv (no shell). The prompt goes on its stdin, which is then closed; the answer is its stdout.
    /// With a `preset`: how to start the CLI (e.g. `[npx, -y, "@openai/codex"]`); the preset's flags follow.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>>,
    /// `command`: a known agent CLI run headless: `claude-code`, `codex` or `gemini-cli`. It sets the
    /// flags the CLI needs (no interactive approval, the prompt on stdin, the output format plangate
    /// reads) and `output_format`; `command` defaults to the CLI's program name.
    #[serde(default)]
    pub preset: Option<Preset>,
    /// `command` with a `preset`: more arguments, appended after the preset's flags.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// `command`: how to read stdout. `text` (default: stdout is the answer), `json` (one JSON object
    /// with the answer in `result`, token counts in `usage`, `total_cost_usd`, `is_error`),
    /// `claude-json` / `claude-stream-json` (`claude -p --output-format json` / `stream-json`),
    /// `codex-jsonl` (`codex exec --json`), `gemini-json` (`gemini --output-format json`).
    #[serde(default)]
    pub output_format: Option<CliOutputFormat>,
    /// `openai`: the API base, e.g. `https://api.openai.com/v1` (`/chat/completions` is appended).
    /// `anthropic`: default `https://api.anthropic.com` (`/v1/messages` is appended).
    #[serde(default)]
    pub base_url: Option<String>,
    /// `openai` and `anthropic`: the model name.
    #[serde(default)]
    pub model: Option<String>,
    /// `openai`, `anthropic` and `command`: the environment variable holding the API key (never
    /// the key itself; `anthropic` defaults to `ANTHROPIC_API_KEY`). It is a secret of the agent:
    /// must be set when the run starts, masked everywhere, and passed to a `command` CLI (the HTTP
    /// providers read it themselves).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// `openai` and `anthropic`: the system prompt.
    #[serde(default)]
    pub system: Option<String>,
    /// `openai` and `anthropic`: extra request headers, each mapped to the NAME of the environment
    /// variable holding its value (e.g. `api-key: AZURE_OPENAI_KEY`); values never appear in a
    /// plan. Each variable is a secret of the agent: must be set when the run starts, masked
    /// everywhere.
    #[serde(default)]
    #[schemars(extend(
        "additionalProperties" = {"type": "string", "pattern": crate::model::policy::ENV_NAME_PATTERN}
    ))]
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    /// `openai` and `anthropic`: for `output: json` steps whose schema is an object, ask for the
    /// provider's structured output (`response_format: json_schema`; a forced tool). Default
    /// true; the answer is still checked against the schema.
    #[serde(default)]
    pub structured_output: Option<bool>,
    /// `openai` and `anthropic`: retries of one call after HTTP 429, 500, 502, 503, 504, 529, an
    /// overloaded error or a dropped connection, within the call's timeout. Default 4.
    #[serde(default)]
    #[schemars(range(max = 10))]
    pub max_retries: Option<u32>,
    /// `openai` and `anthropic`: the first retry's longest wait (it doubles each retry, at most
    /// 60 s, the wait drawn at random below it); a `Retry-After` from the server wins. Default 1 s.
    #[serde(default)]
    pub retry_base_delay: Option<Timeout>,
    /// `command`: variables of plangate's environment the CLI gets besides the allow-list (every
    /// step calling this agent passes them); like a step's `secrets:`, each must be set when the
    /// run starts and is masked everywhere.
    #[serde(default)]
    #[schemars(inner(pattern(crate::model::policy::ENV_NAME_PATTERN)))]
    pub secrets: Option<Vec<String>>,
    /// `openai` and `anthropic`: sampling temperature.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 2.0))]
    pub temperature: Option<f64>,
    /// `openai` and `anthropic`: most tokens in one answer (`anthropic`: default 4096).
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
    /// Prices for cost accounting and cost budgets; without one, the built-in prices of the
    /// model (`model`, or with `api` the model each call names) apply.
    #[serde(default)]
    pub price: Option<Price>,
    /// The default budget of every step calling this agent (`max_tokens`, `max_cost_usd`, over
    /// all its attempts); a step's own `budget` may lower it, never raise it.
    #[serde(default)]
    pub budget: Option<crate::model::StepBudget>,
    /// (command) Let the agent CLI reach the network from its sandbox (to call its API); its steps'
    /// risk is at least moderate.
    #[serde(default)]
    pub network: bool,
    /// `read-only`: the agent's edits are never applied (its staged copy's changes and an envelope's
    /// files); the report lists them as `attempted_changes`. Default `read-write`. A step may make
    /// a read-write agent read-only (`mode: read-only` in its parameters), never the reverse.
    #[serde(default)]
    pub mode: Option<AgentMode>,
    /// (command) The only hosts the agent CLI may reach (`HOST`, `HOST:PORT`, `*.domain`; without
    /// a port, 80 and 443), through plangate's egress proxy, which its environment names
    /// (`HTTPS_PROXY`, `HTTP_PROXY`): every other host, port, raw IP and direct connection is
    /// refused. Its steps' risk is at least moderate. Not with `network: true`.
    #[serde(default)]
    pub egress: Option<Vec<String>>,
    /// (command) plangate serves the CLI's model API: the CLI is pointed at a local endpoint
    /// (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`) and finds a
    /// placeholder in its key variable; plangate sends each model call on to `base_url` with the
    /// real key, which no process the agent starts ever holds. With a `preset`, `api: {}` is
    /// enough (the preset's provider, its default key variable and URL). Its processes reach
    /// nothing else but the `egress` hosts.
    #[serde(default)]
    pub api: Option<ApiDef>,
    /// Set once the preset is applied to `command` and `output_format` (never from YAML).
    #[serde(skip)]
    #[schemars(skip)]
    pub preset_applied: bool,
}

/// Agent providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A local CLI.
    Command,
    /// An OpenAI-compatible chat-completions endpoint.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// Recorded answers.
    Replay,
}

/// The variable holding an `anthropic` agent's API key when it sets no `api_key_env`.
pub(crate) const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";

impl ProviderKind {
    /// The variable holding the API key when the agent sets no `api_key_env`
    /// (None: the provider reads no key unless told which).
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::Anthropic => Some(ANTHROPIC_KEY_ENV),
            ProviderKind::Command | ProviderKind::Openai | ProviderKind::Replay => None,
        }
    }

    /// Every provider (a test checks none is missing).
    pub const ALL: [ProviderKind; 4] = [
        ProviderKind::Command,
        ProviderKind::Openai,
        ProviderKind::Anthropic,
        ProviderKind::Replay,
    ];

    /// The name used in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Command => "command",
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Replay => "replay",
        }
    }

    /// The provider named `name` in a plan.
    pub fn from_name(name: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Whether an agent's edits may reach the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AgentMode {
    /// Its accepted changes are applied (the default).
    ReadWrite,
    /// Its changes are never applied, only reported.
    ReadOnly,
}

impl AgentMode {
    /// The name used in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentMode::ReadWrite => "read-write",
            AgentMode::ReadOnly => "read-only",
        }
    }
}

/// How a CLI agent prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CliOutputFormat {
    /// stdout is the answer.
    Text,
    /// stdout is `{"result": "...", "usage": {"input_tokens": N, "output_tokens": N}, "total_cost_usd"?, "is_error"?}`.
    Json,
    /// Claude Code `-p --output-format json`: one `{"type": "result", "subtype", "is_error", "result", "total_cost_usd", "usage", ...}`.
    ClaudeJson,
    /// Claude Code `-p --output-format stream-json --verbose`: JSON Lines (`system`, `assistant`, `user`, then `result`).
    ClaudeStreamJson,
    /// Codex `exec --json`: JSON Lines of thread events (`thread.started`, `item.completed`, `turn.completed`, `turn.failed`, `error`).
    CodexJsonl,
    /// Gemini CLI `--output-format json`: one `{"response", "stats": {"models": ...}, "error"?}`.
    GeminiJson,
}

impl CliOutputFormat {
    /// Every format (a test checks none is missing).
    pub const ALL: [CliOutputFormat; 6] = [
        CliOutputFormat::Text,
        CliOutputFormat::Json,
        CliOutputFormat::ClaudeJson,
        CliOutputFormat::ClaudeStreamJson,
        CliOutputFormat::CodexJsonl,
        CliOutputFormat::GeminiJson,
    ];

    /// The name used in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            CliOutputFormat::Text => "text",
            CliOutputFormat::Json => "json",
            CliOutputFormat::ClaudeJson => "claude-json",
            CliOutputFormat::ClaudeStreamJson => "claude-stream-json",
            CliOutputFormat::CodexJsonl => "codex-jsonl",
            CliOutputFormat::GeminiJson => "gemini-json",
        }
    }

    /// Whether stdout is a JSON Lines stream of events.
    pub fn is_stream(self) -> bool {
        matches!(
            self,
            CliOutputFormat::ClaudeStreamJson | CliOutputFormat::CodexJsonl
        )
    }
}

/// In an agent's arguments, replaced by the address of plangate's model
/// endpoint (with `base_url`'s path) when the CLI starts ([`Preset::api_flags`]).
pub(crate) const API_URL_SLOT: &str = "{plangate-api-url}";

/// A known agent CLI, run headless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// Claude Code: `claude -p --output-format stream-json --verbose --permission-mode acceptEdits`.
    ClaudeCode,
    /// Codex: `codex exec --json --skip-git-repo-check --sandbox workspace-write --color never -`.
    Codex,
    /// Gemini CLI: `gemini --output-format json --approval-mode auto_edit`.
    GeminiCli,
}

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 3] = [Preset::ClaudeCode, Preset::Codex, Preset::GeminiCli];

    /// The name used in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::ClaudeCode => "claude-code",
            Preset::Codex => "codex",
            Preset::GeminiCli => "gemini-cli",
        }
    }

    /// The CLI's program name (looked up in `PATH`).
    pub fn program(self) -> &'static str {
        match self {
            Preset::ClaudeCode => "claude",
            Preset::Codex => "codex",
            Preset::GeminiCli => "gemini",
        }
    }

    /// The flags that run it headless, reading the prompt on stdin and printing what plangate reads.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            // `-p` without a prompt argument reads stdin; stream-json needs --verbose in print
            // mode; acceptEdits lets it edit files, any other tool needing approval is denied
            // (never asked) in print mode.
            Preset::ClaudeCode => &[
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "acceptEdits",
            ],
            // exec never asks for approval; workspace-write lets it edit the checkout.
            Preset::Codex => &[
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--sandbox",
                "workspace-write",
                "--color",
                "never",
            ],
            // Headless when stdin is not a terminal: the prompt is read from stdin.
            Preset::GeminiCli => &["--output-format", "json", "--approval-mode", "auto_edit"],
        }
    }

    /// The flags that point the CLI at plangate's model endpoint, for an
    /// agent with `api`. Claude Code and Gemini CLI read the endpoint from
    /// a variable; Codex (0.1xx) ignores `OPENAI_BASE_URL` and would first
    /// try a WebSocket transport: it gets a model provider of its own (plain
    /// HTTPS-style Responses calls, the key from `OPENAI_API_KEY`, which
    /// holds the placeholder) whose base URL is [`API_URL_SLOT`], filled in
    /// when the endpoint's address is known.
    pub fn api_flags(self) -> &'static [&'static str] {
        match self {
            Preset::Codex => &[
                "-c",
                "model_provider=\"plangate\"",
                "-c",
                concat!(
                    "model_providers.plangate={name=\"plangate\", base_url=\"",
                    "{plangate-api-url}",
                    "\", env_key=\"OPENAI_API_KEY\", wire_api=\"responses\"}"
                ),
            ],
            Preset::ClaudeCode | Preset::GeminiCli => &[],
        }
    }

    /// Variables the CLI needs to run headless (`api`: whether plangate
    /// serves its model API). Gemini CLI (0.6x) refuses to run headless in a
    /// folder it was never told to trust; Claude Code's non-essential calls
    /// (telemetry, error reports, update checks) would only be refused by
    /// the egress allow-list, one denial line each.
    pub fn env(self, api: bool) -> &'static [(&'static str, &'static str)] {
        match self {
            Preset::GeminiCli => &[("GEMINI_CLI_TRUST_WORKSPACE", "true")],
            Preset::ClaudeCode if api => &[("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")],
            Preset::ClaudeCode | Preset::Codex => &[],
        }
    }

    /// The preset's flags to use instead of `flags`' own when plangate
    /// sandboxes the CLI: `(what the flags say, what replaces it)`. Codex's
    /// own sandbox (`--sandbox workspace-write`) cannot start inside
    /// plangate's (bubblewrap or Landlock): each of its edits and commands
    /// would fail. Inside plangate's sandbox, which holds the CLI and all it
    /// starts to the step's profile, it runs without its own.
    pub fn when_sandboxed(self) -> Option<(&'static [&'static str], &'static [&'static str])> {
        match self {
            Preset::Codex => Some((
                &["--sandbox", "workspace-write"],
                &["--dangerously-bypass-approvals-and-sandbox"],
            )),
            Preset::ClaudeCode | Preset::GeminiCli => None,
        }
    }

    /// Arguments that must come last (Codex's `-`: the prompt is on stdin).
    pub fn trailing(self) -> &'static [&'static str] {
        match self {
            Preset::Codex => &["-"],
            Preset::ClaudeCode | Preset::GeminiCli => &[],
        }
    }

    /// The output format its flags select.
    pub fn output_format(self) -> CliOutputFormat {
        match self {
            Preset::ClaudeCode => CliOutputFormat::ClaudeStreamJson,
            Preset::Codex => CliOutputFormat::CodexJsonl,
            Preset::GeminiCli => CliOutputFormat::GeminiJson,
        }
    }
}

impl AgentDef {
    /// The definition with its preset applied: `command` is the CLI (the given `command`, else
    /// the preset's program) followed by the preset's flags, then `args`, then the preset's
    /// trailing arguments; `output_format` is the preset's. Without a preset, unchanged.
    #[must_use]
    pub fn resolved(mut self) -> AgentDef {
        let Some(p) = self.preset.filter(|_| !self.preset_applied) else {
            return self;
        };
        self.preset_applied = true;
        let mut argv = self
            .command
            .take()
            .unwrap_or_else(|| vec![p.program().to_owned()]);
        argv.extend(p.flags().iter().map(|s| (*s).to_owned()));
        if self.api.is_some() {
            argv.extend(p.api_flags().iter().map(|s| (*s).to_owned()));
        }
        argv.extend(self.args.iter().flatten().cloned());
        argv.extend(p.trailing().iter().map(|s| (*s).to_owned()));
        self.command = Some(argv);
        self.output_format = Some(p.output_format());
        if let Some(api) = self.api.as_mut() {
            api.provider.get_or_insert(p.api_provider());
        }
        self
    }
}

/// `api`: the model API plangate serves for an agent CLI, holding its key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiDef {
    /// `anthropic`, `openai` or `gemini` (a preset's: claude-code → anthropic, codex → openai,
    /// gemini-cli → gemini).
    #[serde(default)]
    pub provider: Option<ApiProvider>,
    /// The variable of plangate's environment that holds the real key (default: the agent's
    /// `api_key_env`, else `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Where plangate sends the calls (default: the provider's public API,
    /// `https://api.anthropic.com`, `https://api.openai.com/v1`,
    /// `https://generativelanguage.googleapis.com`).
    #[serde(default)]
    pub base_url: Option<String>,
}

/// A model API plangate can serve for an agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApiProvider {
    /// Anthropic Messages API (Claude Code).
    Anthropic,
    /// OpenAI Responses / Chat Completions (Codex).
    Openai,
    /// Gemini API (Gemini CLI).
    Gemini,
}

impl ApiProvider {
    /// The plan's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiProvider::Anthropic => "anthropic",
            ApiProvider::Openai => "openai",
            ApiProvider::Gemini => "gemini",
        }
    }
}

impl Preset {
    /// The model API the preset's CLI calls.
    pub fn api_provider(self) -> ApiProvider {
        match self {
            Preset::ClaudeCode => ApiProvider::Anthropic,
            Preset::Codex => ApiProvider::Openai,
            Preset::GeminiCli => ApiProvider::Gemini,
        }
    }
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
    /// USD per million prompt tokens read from the provider's cache. Default: `input_per_mtok`.
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub cached_input_per_mtok: Option<f64>,
    /// USD per million prompt tokens written to the provider's cache. Default: `input_per_mtok`.
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub cache_write_per_mtok: Option<f64>,
}

impl Price {
    /// As rates (cached input and cache writes at the input price when not given).
    pub(crate) fn rates(&self) -> crate::egress::prices::Rates {
        crate::egress::prices::Rates::flat(
            self.input_per_mtok,
            self.output_per_mtok,
            self.cached_input_per_mtok,
            self.cache_write_per_mtok,
        )
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
        let named = ["command", "openai", "anthropic", "replay"];
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

    /// Only `anthropic` reads a key without being told which variable holds it.
    #[test]
    fn default_key_variables() {
        for k in ProviderKind::ALL {
            let want = (k == ProviderKind::Anthropic).then_some("ANTHROPIC_API_KEY");
            assert_eq!(k.default_key_env(), want, "{}", k.as_str());
        }
    }

    /// SPEC's preset table (Agent CLIs): one row per preset, in
    /// `Preset::ALL`'s order, with the argv `AgentDef::resolved` builds
    /// (`ARGS` standing for the agent's `args`) and the output format it sets.
    /// The table is read without `crate::markdown` (this module imports only
    /// `model`): rows after the marker line, cells split on `|`.
    #[test]
    fn specs_preset_table_is_what_resolved_builds() {
        use super::{AgentDef, Preset};
        let marker = "<!-- agent-presets: checked against src/format/agent.rs by a test -->";
        let rows: Vec<Vec<String>> = include_str!("../../docs/SPEC.md")
            .lines()
            .skip_while(|l| l.trim() != marker)
            .skip(3)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
                inner.split('|').map(|c| c.trim().to_owned()).collect()
            })
            .collect();
        // Every variant the plan format accepts is in `Preset::ALL`.
        let schema = schemars::schema_for!(Preset).to_value();
        let text = schema.to_string();
        let count =
            text.matches("\"const\"").count() + schema["enum"].as_array().map_or(0, Vec::len);
        assert_eq!(count, Preset::ALL.len(), "{schema}");
        assert_eq!(
            rows.len(),
            Preset::ALL.len(),
            "one row per preset: {rows:#?}"
        );
        for (row, p) in rows.iter().zip(Preset::ALL) {
            let def: AgentDef = serde_json::from_value(serde_json::json!({
                "provider": "command", "preset": p.as_str(), "args": ["ARGS"],
            }))
            .expect("an agent definition");
            let def = def.resolved();
            let argv = def.command.unwrap_or_default().join(" ");
            let format = def.output_format.map(|f| f.as_str()).unwrap_or("");
            assert_eq!(row.len(), 3, "{row:?}");
            assert_eq!(row[0], format!("`{}`", p.as_str()), "{row:?}");
            assert_eq!(row[1], format!("`{argv}`"), "{row:?}");
            assert_eq!(row[2], format!("`{format}`"), "{row:?}");
        }
    }
}
