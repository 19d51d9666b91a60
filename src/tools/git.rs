//! The `git` tool (design 002, 2.3). Not available yet: plans using it are
//! refused at load (`plan::lower_tools::IMPLEMENTED`), so nothing here runs.

use std::time::SystemTime;

use super::{StepContext, internal_failure};
use crate::engine::events::StepOutcome;
use crate::plan::{GitAction, Step};
use crate::policy::{Risk, StepClassification};

/// Unclassifiable until implemented (fail-close).
pub fn classify(_a: &GitAction) -> StepClassification {
    StepClassification {
        floor: Risk::Moderate,
        classified: Risk::Dangerous,
        blocked: None,
        unclassifiable: Some("the git tool is not available yet".to_owned()),
        reason: "the git tool is not available yet".to_owned(),
    }
}

/// Refuses.
pub async fn run(
    _a: &GitAction,
    _step: &Step,
    _ctx: &StepContext,
    started: SystemTime,
) -> StepOutcome {
    internal_failure(started, "the git tool is not available yet".to_owned())
}
