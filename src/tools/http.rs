//! The `http_request` tool (design 002, 2.5). Not available yet: plans using
//! it are refused at load (`plan::lower_tools::IMPLEMENTED`), so nothing here runs.

use super::{StepContext, Stop, ToolEnv, ToolReturn, internal_failure};
use crate::plan::HttpAction;
use crate::policy::{Risk, StepClassification};

/// Unclassifiable until implemented (fail-close).
pub fn classify(_a: &HttpAction, _env: &ToolEnv) -> StepClassification {
    StepClassification {
        floor: Risk::Moderate,
        classified: Risk::Dangerous,
        blocked: None,
        unclassifiable: Some("the http_request tool is not available yet".to_owned()),
        reason: "the http_request tool is not available yet".to_owned(),
    }
}

/// Refuses.
pub fn run(_a: &HttpAction, _ctx: &StepContext, _stop: &Stop) -> ToolReturn {
    ToolReturn {
        outcome: internal_failure(
            std::time::SystemTime::now(),
            "the http_request tool is not available yet".to_owned(),
        ),
        result: None,
    }
}
