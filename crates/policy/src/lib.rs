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

use plangate_model as model;

pub mod addr;
#[cfg(test)]
mod agree_tests;
pub mod cap;
pub mod classify;
pub mod env;
pub mod git;
pub mod glob;
pub mod hosts;
pub mod permissions;

use crate::model::{Decision, DecisionKind, Risk, RiskAssessment, Tolerance};

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
pub struct DecisionInput<'a> {
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
pub fn decide(input: DecisionInput<'_>) -> (RiskAssessment, Decision) {
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
