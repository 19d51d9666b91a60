//! Permission rules as written in a plan's or a `--policy` file's
//! `permissions:` list (design 002 §5.1). The data only: matching and
//! evaluation live in `policy::permissions`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Risk, ToolName};

/// What a rule grants, ordered: none < read < write < execute < admin.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Nothing: the rule denies.
    None,
    /// Read files, query a URL with GET/HEAD/OPTIONS, inspect a repository or the machine.
    Read,
    /// Change files, send a request that changes something, change a repository.
    Write,
    /// Run commands (bash) or an agent.
    Execute,
    /// What a dangerous step does (force pushes, `reset --hard`, dangerous commands).
    Admin,
}

impl Level {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Read => "read",
            Level::Write => "write",
            Level::Execute => "execute",
            Level::Admin => "admin",
        }
    }
}

/// When a rule applies besides its tools and resource.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// Only steps whose effective risk is at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_at_most: Option<Risk>,
}

/// One permission rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionRule {
    /// Named in every decision this rule makes.
    #[schemars(length(min = 1))]
    pub id: String,
    /// `*` (anything), or a glob over the resource: a path relative to the
    /// workspace (`.` is the workspace itself; `src/**`), an `http_request`
    /// URL (`https://api.example.com/**`), `agent:<name>` or `system`.
    #[schemars(length(min = 1))]
    pub resource: String,
    /// The tools it covers (empty or absent: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolName>,
    /// What it grants: none (deny), read, write, execute, admin (each includes the ones before).
    pub level: Level,
    /// When it applies.
    #[serde(default, skip_serializing_if = "is_default")]
    pub conditions: Conditions,
    /// Higher decides first. Default 100.
    #[serde(default = "default_priority")]
    pub priority: i64,
    /// A disabled rule is ignored. Default true.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
}

fn is_default(c: &Conditions) -> bool {
    *c == Conditions::default()
}

fn default_priority() -> i64 {
    100
}

fn default_enabled() -> bool {
    true
}

/// A list of rules and where it comes from (`policy file`, `plan`).
#[derive(Debug, Clone, Copy)]
pub struct RuleList<'a> {
    /// For the reason line.
    pub source: &'static str,
    /// The rules.
    pub rules: &'a [PermissionRule],
}
