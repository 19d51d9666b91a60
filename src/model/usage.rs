//! Tokens and cost of agent calls ([`Usage`]), per attempt, per step and per run.

use serde::{Deserialize, Serialize};

/// Tokens and cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
    /// Dollars, from the agent's `price` (0 without one).
    pub cost_usd: f64,
    /// True when a figure is an estimate (4 characters a token) because the provider reported none.
    #[serde(default)]
    pub estimated: bool,
}

impl Usage {
    /// "N input + M output tokens (partly estimated), $X": the one wording
    /// the console and the Markdown summary share.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{} input + {} output tokens{}, ${:.4}",
            self.input_tokens,
            self.output_tokens,
            if self.estimated {
                " (partly estimated)"
            } else {
                ""
            },
            self.cost_usd
        )
    }

    /// Add another usage.
    pub(crate) fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
        self.estimated |= other.estimated;
    }

    /// All tokens.
    pub(crate) fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}
