//! A secret found in what the run produced: where, by which rule, and a
//! fingerprint, never the value.

use serde::{Deserialize, Serialize};

/// A secret found in what the run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Rule id.
    pub rule: String,
    /// The step whose output or files held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Where, relative to the output directory or workspace.
    pub location: String,
    /// 1-based line.
    pub line: u64,
    /// Stable fingerprint of the secret (never the secret).
    pub fingerprint: String,
}
