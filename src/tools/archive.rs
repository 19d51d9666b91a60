//! The `archive` tool (design 002, 2.6). Not available yet: plans using it
//! are refused at load (`plan::lower_tools::IMPLEMENTED`), so nothing here runs.

use super::{StepContext, Stop, ToolReturn, internal_failure};
use crate::plan::ArchiveAction;
use crate::policy::{Risk, StepClassification};

/// Unclassifiable until implemented (fail-close).
pub fn classify(_a: &ArchiveAction) -> StepClassification {
    StepClassification {
        floor: Risk::Moderate,
        classified: Risk::Dangerous,
        blocked: None,
        unclassifiable: Some("the archive tool is not available yet".to_owned()),
        reason: "the archive tool is not available yet".to_owned(),
    }
}

/// Refuses.
pub fn run(_a: &ArchiveAction, _ctx: &StepContext, _stop: &Stop) -> ToolReturn {
    ToolReturn {
        outcome: internal_failure(
            std::time::SystemTime::now(),
            "the archive tool is not available yet".to_owned(),
        ),
        result: None,
    }
}
