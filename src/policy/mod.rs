//! Policy: how risky a step is and whether it may run with nobody present.
//!
//! Pure: no I/O, no processes, no environment reads. The engine hands in the
//! step, the approvals it collected and the resolved settings; this module
//! answers with a [`Decision`] that always carries a one-line reason.
//!
//! Rules (SPEC "Policy"):
//! - effective risk = max(declared, the tool's floor, classified);
//! - a blocked command never runs, not even approved (blocked beats approval);
//! - a command the classifier cannot read needs an explicit approval whatever
//!   the tolerance (fail-close: "cannot be sure" means "ask", and asking in CI
//!   means deny);
//! - otherwise a step runs unattended when its effective risk is within the
//!   tolerance and it does not set `requires_approval`; else only if approved.

pub(crate) mod cap;
pub(crate) mod classify;
pub(crate) mod git;
pub(crate) mod hosts;
pub(crate) mod permissions;

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

/// The approval decision recorded for every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DecisionKind {
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
    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) struct RiskAssessment {
    /// What the plan says (`risk_level`; safe when omitted).
    pub declared: Risk,
    /// What plangate read from the concrete parameters.
    pub classified: Risk,
    /// The highest of declared, the tool's floor and classified.
    pub effective: Risk,
}

/// A decision and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Decision {
    /// The verdict.
    pub decision: DecisionKind,
    /// One line saying what decided it.
    pub reason: String,
    /// What the permission rules said (absent when no `permissions:` list is in force).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<permissions::Verdict>,
}

impl Decision {
    /// Apply the permission rules' verdict: a denial blocks the step (before
    /// and whatever any approval); an allowance is noted in the reason.
    pub(crate) fn with_permission(mut self, verdict: Option<permissions::Verdict>) -> Decision {
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

/// What the classifier of a tool says about one step's concrete parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepClassification {
    /// The tool's own floor (e.g. bash: safe; a network tool: moderate).
    pub floor: Risk,
    /// Classified risk of the parameters (already at least `floor`).
    pub classified: Risk,
    /// Some(reason) when the step must never run.
    pub blocked: Option<String>,
    /// Some(reason) when the classifier could not read the parameters.
    pub unclassifiable: Option<String>,
    /// What decided `classified`.
    pub reason: String,
}

/// Everything [`decide`] needs to know about one step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecisionInput<'a> {
    /// The plan's `risk_level` (safe when omitted).
    pub declared: Risk,
    /// The step sets `requires_approval: true`.
    pub requires_approval: bool,
    /// The classifier's verdict.
    pub classification: &'a StepClassification,
    /// The step id is in `--approve` / `PLANGATE_APPROVE`.
    pub approved: bool,
    /// The resolved tolerance (CLI/plan, capped by the policy file).
    pub tolerance: Tolerance,
}

/// Decide whether a step may run with nobody present.
pub(crate) fn decide(input: DecisionInput<'_>) -> (RiskAssessment, Decision) {
    let c = input.classification;
    let classified = c.classified.max(c.floor);
    let effective = input.declared.max(classified);
    let assessment = RiskAssessment {
        declared: input.declared,
        classified,
        effective,
    };
    let decision = if let Some(why) = &c.blocked {
        Decision {
            decision: DecisionKind::Blocked,
            reason: format!("blocked: {why}"),
            permission: None,
        }
    } else if let Some(why) = &c.unclassifiable {
        approval_needed(
            input.approved,
            format!("cannot classify the command ({why}); an explicit approval is required"),
        )
    } else if input.requires_approval {
        approval_needed(input.approved, "the step sets requires_approval".to_owned())
    } else if effective <= input.tolerance.max_unattended() {
        Decision {
            decision: DecisionKind::AutoApproved,
            reason: format!(
                "{effective} risk is within tolerance {} ({})",
                input.tolerance.as_str(),
                why_effective(input.declared, classified, &c.reason)
            ),
            permission: None,
        }
    } else {
        approval_needed(
            input.approved,
            format!(
                "{effective} risk exceeds tolerance {} ({})",
                input.tolerance.as_str(),
                why_effective(input.declared, classified, &c.reason)
            ),
        )
    };
    (assessment, decision)
}

fn why_effective(declared: Risk, classified: Risk, reason: &str) -> String {
    if declared > classified {
        format!("declared {declared}")
    } else {
        reason.to_owned()
    }
}

fn approval_needed(approved: bool, why: String) -> Decision {
    if approved {
        Decision {
            decision: DecisionKind::PreApproved,
            reason: format!("approved in advance; {why}"),
            permission: None,
        }
    } else {
        Decision {
            decision: DecisionKind::Denied,
            reason: format!("{why}; no approval given (use --approve or PLANGATE_APPROVE)"),
            permission: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(classified: Risk) -> StepClassification {
        StepClassification {
            floor: Risk::Safe,
            classified,
            blocked: None,
            unclassifiable: None,
            reason: "test".into(),
        }
    }

    fn run(
        declared: Risk,
        c: &StepClassification,
        tol: Tolerance,
        approved: bool,
        req: bool,
    ) -> (RiskAssessment, Decision) {
        decide(DecisionInput {
            declared,
            requires_approval: req,
            classification: c,
            approved,
            tolerance: tol,
        })
    }

    #[test]
    fn table() {
        use DecisionKind::*;
        use Risk::*;
        use Tolerance::*;
        // (declared, classified, tolerance, approved, requires_approval) -> decision
        let cases = [
            (Safe, Safe, Low, false, false, AutoApproved),
            (Safe, Moderate, Low, false, false, Denied),
            (Safe, Moderate, Low, true, false, PreApproved),
            (Safe, Moderate, Medium, false, false, AutoApproved),
            (Dangerous, Safe, Medium, false, false, Denied),
            (Safe, Dangerous, High, false, false, AutoApproved),
            (Safe, Safe, High, false, true, Denied),
            (Safe, Safe, High, true, true, PreApproved),
        ];
        for (declared, classified, tol, approved, req, want) in cases {
            let (_, d) = run(declared, &class(classified), tol, approved, req);
            assert_eq!(
                d.decision, want,
                "{declared} {classified} {tol:?} {approved} {req}"
            );
            assert!(!d.reason.is_empty() && !d.reason.contains('\n'));
        }
    }

    #[test]
    fn blocked_beats_approval_and_unclassifiable_needs_one() {
        let mut c = class(Risk::Dangerous);
        c.blocked = Some("rm -rf /".into());
        let (_, d) = run(Risk::Safe, &c, Tolerance::High, true, false);
        assert_eq!(d.decision, DecisionKind::Blocked);
        let mut c = class(Risk::Dangerous);
        c.unclassifiable = Some("syntax error".into());
        let (_, d) = run(Risk::Safe, &c, Tolerance::High, false, false);
        assert_eq!(d.decision, DecisionKind::Denied);
        let (_, d) = run(Risk::Safe, &c, Tolerance::High, true, false);
        assert_eq!(d.decision, DecisionKind::PreApproved);
    }

    #[test]
    fn effective_is_the_max() {
        let mut c = class(Risk::Safe);
        c.floor = Risk::Moderate;
        let (a, _) = run(Risk::Safe, &c, Tolerance::Low, false, false);
        assert_eq!(a.effective, Risk::Moderate);
        let (a, _) = run(Risk::Dangerous, &c, Tolerance::Low, false, false);
        assert_eq!(a.effective, Risk::Dangerous);
    }
}
