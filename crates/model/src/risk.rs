//! Risk levels, the tolerance that says how much of it runs unattended, and
//! what happens to a step that needs an approval. The policy (`policy`)
//! judges with them; plans, reports and audit lines carry them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Risk levels, ordered: safe < moderate < dangerous.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Read-only: cannot change the workspace or the world.
    Safe,
    /// Changes the workspace, talks to the network, or does something unknown.
    Moderate,
    /// Can do lasting damage outside the workspace or to shared state.
    Dangerous,
}

impl Risk {
    /// The lowercase name used in plans and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Safe => "safe",
            Risk::Moderate => "moderate",
            Risk::Dangerous => "dangerous",
        }
    }
}

impl std::fmt::Display for Risk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much risk may run with nobody present.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Tolerance {
    /// Only safe steps run unattended (the default).
    Low,
    /// Safe and moderate steps run unattended.
    Medium,
    /// Everything but blocked commands runs unattended.
    High,
}

impl Tolerance {
    /// The highest risk this tolerance lets run unattended.
    pub fn max_unattended(self) -> Risk {
        match self {
            Tolerance::Low => Risk::Safe,
            Tolerance::Medium => Risk::Moderate,
            Tolerance::High => Risk::Dangerous,
        }
    }

    /// The lowercase name used in plans and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Tolerance::Low => "low",
            Tolerance::Medium => "medium",
            Tolerance::High => "high",
        }
    }
}

/// What happens to a step that needs an approval it does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnApproval {
    /// The run ends before anything executes, exit 3 (the default).
    Deny,
    /// The step and its dependents are skipped; the rest of the plan runs.
    Skip,
}

impl OnApproval {
    /// Deny is stricter than skip.
    pub fn strictest(self, other: OnApproval) -> OnApproval {
        if self == OnApproval::Deny || other == OnApproval::Deny {
            OnApproval::Deny
        } else {
            OnApproval::Skip
        }
    }

    /// The lowercase name used in plans and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            OnApproval::Deny => "deny",
            OnApproval::Skip => "skip",
        }
    }
}
