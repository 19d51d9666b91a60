//! The policy as data: a plan's `policy:` block (also the format of a
//! `--policy` file), its `budget:` and the policy a run ends up using. How the
//! two blocks combine (the cap) is `policy::cap`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{OnApproval, PermissionRule, SandboxMode, Tolerance};

/// The JSON Schema pattern of one `allowed_hosts` entry: a name
/// (`api.example.com`), a wildcard (`*.example.com`) or an IP address, each
/// with an optional `:port` (the schema rejects anything else with its
/// position, so `policy::hosts::HostPattern::parse` only sees
/// well-formed text).
pub const HOST_PATTERN: &str = r"^((\*\.)?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$";

/// The JSON Schema pattern of an environment variable name (`secrets:`,
/// `env_passthrough:`): portable names only.
pub const ENV_NAME_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_]*$";

/// A plan's `policy:` block; also the format of a `--policy` file.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyBlock {
    /// low (default): safe steps only | medium: safe and moderate | high: all but blocked.
    #[serde(default)]
    pub risk_tolerance: Option<Tolerance>,
    /// deny (default): the run ends with exit 3 before anything runs | skip: the step and its dependents are skipped.
    #[serde(default)]
    pub on_approval_required: Option<OnApproval>,
    /// Fail the run (exit 4) when a secret is found in what it produced. Default true.
    #[serde(default)]
    pub fail_on_secrets: Option<bool>,
    /// How many steps may run at once. Default 1.
    #[serde(default)]
    #[schemars(range(min = 1, max = 256))]
    pub max_parallel: Option<u32>,
    /// true (default): after a step fails (not under `continue_on_error`), no new step starts but
    /// those whose `if:` calls a status function. false: keep going: every step that does not
    /// depend on a failed step still runs (its dependents are `not_run`); the run still fails.
    /// A `--policy` file's `fail_fast: true` pins it (its `false` changes nothing).
    #[serde(default)]
    pub fail_fast: Option<bool>,
    /// Limits on tokens, cost and wall time for the whole run; exhausting one ends the run with exit 6.
    #[serde(default)]
    pub budget: Option<BudgetBlock>,
    /// Limits on tokens and cost for each agent step (its calls, all attempts). In a plan: the
    /// default of every agent step that sets none; in a `--policy` file: the most any step may
    /// have (a step's or agent's larger `budget` is lowered to it). Exhausting one fails the step
    /// and ends the run with exit 6.
    #[serde(default)]
    pub step_budget: Option<StepBudget>,
    /// Hosts `http_request` steps may reach (every redirect hop too): names (`api.example.com`),
    /// wildcards (`*.example.com`, names under it) or IP addresses, each with an optional `:port`.
    /// Unset: any host. A `--policy` file's list caps the plan's (a host must be in both).
    #[serde(default)]
    #[schemars(inner(pattern(HOST_PATTERN)))]
    pub allowed_hosts: Option<Vec<String>>,
    /// `--policy` file only (a plan that sets it is invalid): where each declared secret may be
    /// sent besides the file's `allowed_hosts`: secret name → hosts (entries as in
    /// `allowed_hosts`). A step that would send a secret (a `{secret: NAME}` header, an agent's
    /// key, a process holding it with `egress` or `network: true`) to a host neither allows is
    /// dangerous (not auto-approved below `high`; `--approve` runs it). The plan's own
    /// `allowed_hosts` never counts.
    #[serde(default)]
    pub secret_hosts: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// Permission rules (which tool may read, write, execute or administer which resource).
    /// When a list is set, a step needs every resource it touches allowed by it (default deny);
    /// a denied step is blocked. The plan's list and a `--policy` file's must both allow.
    #[serde(default)]
    pub permissions: Option<Vec<PermissionRule>>,
    /// required (default): every bash step, rollback and agent CLI runs in a sandbox whose profile
    /// is the risk it was approved at; when no backend works here, each such step is blocked before
    /// anything runs. optional: without a backend they run unsandboxed, marked "not enforced".
    /// Unset in the plan: the `--policy` file's value; set in both: the stricter.
    #[serde(default)]
    pub sandbox: Option<SandboxMode>,
    /// Whether a step approved as dangerous may ask to run without a sandbox (bash `sandbox:
    /// false`). Default true; `false` in either the plan or the `--policy` file forbids it.
    #[serde(default)]
    pub allow_unsandboxed: Option<bool>,
    /// Whether a step or agent may declare `network: true` (every host and port, no proxy).
    /// Default false: only a `--policy` file's `true` allows it (a plan's `false` still forbids
    /// it); list the hosts under `egress` instead.
    #[serde(default)]
    pub allow_any_network: Option<bool>,
    /// Variables of plangate's environment that every step's processes get besides the built-in
    /// allow-list (PATH, HOME, locale, the CI system's non-secret context). Names that look secret
    /// (`*_TOKEN`, `*_KEY`, `*PASSWORD*`, ...) and the workflow-command files (`GITHUB_ENV`, ...)
    /// are refused: declare secrets under a step's or agent's `secrets:`. A `--policy` file's list
    /// is the one in force when it sets one (the plan's names outside it are dropped: the
    /// maintainers decide what every step sees; `env_passthrough: []` allows none); otherwise
    /// the plan's list applies.
    #[serde(default)]
    #[schemars(inner(pattern(ENV_NAME_PATTERN)))]
    pub env_passthrough: Option<Vec<String>>,
    /// What a pull request plangate publishes may change (`publish:`): protected paths (built-in
    /// ones always apply), `allowed_files`, `excluded_files`, `max_files`, `max_bytes`, and per
    /// violation `block`, `draft` or `issue`. The plan's block and a `--policy` file's both apply.
    #[serde(default)]
    pub patch: Option<super::publish::PatchPolicy>,
}

/// `policy.budget`: limits for the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetBlock {
    /// Most prompt + answer tokens over all agent calls.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// Most dollars over all agent calls (needs a `price` on every agent).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub max_cost_usd: Option<f64>,
    /// Most seconds for the whole run.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_wall_seconds: Option<u64>,
}

/// A step's budget (`budget:` of an agent step or definition, `policy.step_budget`): the most
/// tokens and dollars the step's agent calls may use over all its attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepBudget {
    /// Most prompt + answer tokens of the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// Most dollars of the step (priced with the agent's `price` or the built-in prices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub max_cost_usd: Option<f64>,
}

impl StepBudget {
    /// Neither limit set.
    pub fn is_none(&self) -> bool {
        self.max_tokens.is_none() && self.max_cost_usd.is_none()
    }

    /// Each limit the lower of the two (a limit set on one side only stays).
    pub fn narrowest(self, other: StepBudget) -> StepBudget {
        fn low<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        StepBudget {
            max_tokens: low(self.max_tokens, other.max_tokens),
            max_cost_usd: low(self.max_cost_usd, other.max_cost_usd),
        }
    }

    /// Why the step's budget is spent with `used`, if it is.
    pub fn exhausted(&self, used: &super::Usage) -> Option<String> {
        if let Some(max) = self.max_cost_usd.filter(|&m| used.cost_usd >= m) {
            return Some(format!(
                "step budget exhausted: ${:.4} of ${max:.4} spent",
                used.cost_usd
            ));
        }
        self.max_tokens.filter(|&m| used.tokens() >= m).map(|max| {
            format!(
                "step budget exhausted: {} of {max} tokens used",
                used.tokens()
            )
        })
    }
}

/// The policy a run uses, with where each value came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectivePolicy {
    /// Highest risk that runs unattended.
    pub risk_tolerance: Tolerance,
    /// What happens without an approval.
    pub on_approval_required: OnApproval,
    /// Findings fail the run.
    pub fail_on_secrets: bool,
    /// Steps at once.
    pub max_parallel: u32,
    /// Stop starting steps after the first failure (false: keep going with independent steps).
    #[serde(default = "default_true")]
    pub fail_fast: bool,
    /// Limits for the whole run (each the lower of plan and policy file).
    #[serde(default)]
    pub budget: BudgetBlock,
    /// The most each agent step may use (plan's default and policy file's cap, the lower of each).
    #[serde(default, skip_serializing_if = "StepBudget::is_none")]
    pub step_budget: StepBudget,
    /// Hosts `http_request` may reach (None: any); both lists when plan and policy file set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_hosts: Option<Vec<String>>,
    /// The policy file's `secret_hosts` (secret name → hosts it may be sent to, besides the
    /// file's `allowed_hosts`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub secret_hosts: std::collections::BTreeMap<String, Vec<String>>,
    /// The policy file's `allowed_hosts` as written (None: the file sets none, or no file): the
    /// hosts any declared secret may be sent to (the plan's list never counts). Not in the
    /// report (`allowed_hosts` and `capped` say it).
    #[serde(skip)]
    pub file_hosts: Option<Vec<String>>,
    /// The policy file's permission rules (None: no list, no permission check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Vec<PermissionRule>>,
    /// The plan's own permission rules (they can only restrict: both lists must allow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_permissions: Option<Vec<PermissionRule>>,
    /// What happens when no sandbox backend works.
    pub sandbox: SandboxMode,
    /// Whether an approved dangerous step may run without a sandbox.
    pub allow_unsandboxed: bool,
    /// Whether `network: true` (any host) may run.
    #[serde(default)]
    pub allow_any_network: bool,
    /// Variables of plangate's environment passed to every step besides the built-in allow-list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_passthrough: Vec<String>,
    /// The patch policies in force besides the built-in protected paths: the plan's and the
    /// `--policy` file's (each must pass).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patch: Vec<super::publish::PatchPolicy>,
    /// What capped the plan's policy: `policy file` (the `--policy` file, and
    /// the built-in policy for the keys it does not set) or `built-in` (no file).
    #[serde(default)]
    pub cap: String,
    /// The `--policy` file, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_file: Option<String>,
    /// One line per value the cap lowered (naming the key and the cap).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capped: Vec<String>,
}

fn default_true() -> bool {
    true
}

impl EffectivePolicy {
    /// The permission lists in force (policy file first).
    pub fn permission_lists(&self) -> Vec<super::RuleList<'_>> {
        let mut v = Vec::new();
        if let Some(r) = &self.permissions {
            v.push(super::RuleList {
                source: "policy file",
                rules: r,
            });
        }
        if let Some(r) = &self.plan_permissions {
            v.push(super::RuleList {
                source: "plan",
                rules: r,
            });
        }
        v
    }
}
