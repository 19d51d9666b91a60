//! The approval decision recorded for every step: the verdict, its reason,
//! the three risk figures and what the permission rules said. Computed by
//! `policy::decide`; carried by the engine's events, the report and
//! `audit.jsonl`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Risk;

/// The approval decision recorded for every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Within the tolerance: runs with nobody present.
    AutoApproved,
    /// Needed an approval and had one (`--approve` / `PLANGATE_APPROVE`).
    PreApproved,
    /// Needed an approval and had none.
    Denied,
    /// Never runs, whatever the approvals.
    Blocked,
}

impl DecisionKind {
    /// The snake_case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::AutoApproved => "auto_approved",
            DecisionKind::PreApproved => "pre_approved",
            DecisionKind::Denied => "denied",
            DecisionKind::Blocked => "blocked",
        }
    }
}

/// The three risk figures of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RiskAssessment {
    /// What the plan says (`risk_level`; safe when omitted).
    pub declared: Risk,
    /// What plangate read from the concrete parameters.
    pub classified: Risk,
    /// The highest of declared, the tool's floor and classified.
    pub effective: Risk,
}

/// A decision and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// The verdict.
    pub decision: DecisionKind,
    /// One line saying what decided it.
    pub reason: String,
    /// What the permission rules said (absent when no `permissions:` list is in force).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<Verdict>,
}

/// What the permission rules said about a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    /// Every need was allowed.
    pub allowed: bool,
    /// The ids of the rules that decided (for a denial: the denying rule, none when no rule matched).
    pub rules: Vec<String>,
    /// One line naming the rules, resources and levels.
    pub reason: String,
}

impl Decision {
    /// Apply the permission rules' verdict: a denial blocks the step (before
    /// and whatever any approval); an allowance is noted in the reason.
    pub fn with_permission(mut self, verdict: Option<Verdict>) -> Decision {
        let Some(v) = verdict else { return self };
        if !v.allowed && self.decision != DecisionKind::Blocked {
            self.decision = DecisionKind::Blocked;
            self.reason = format!("blocked: {}", v.reason);
        } else if v.allowed {
            self.reason = format!("{}; {}", self.reason, v.reason);
        }
        self.permission = Some(v);
        self
    }
}
