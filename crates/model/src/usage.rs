//! Tokens and cost of agent calls ([`Usage`]), per attempt, per step and per run.

use serde::{Deserialize, Serialize};

/// Tokens and cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cache writes and reads included.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
    /// Dollars, from the agent's `price` (0 without one).
    pub cost_usd: f64,
    /// True when a figure is an estimate (4 characters a token) because the provider reported none.
    #[serde(default)]
    pub estimated: bool,
    /// Of `input_tokens`, those written to the provider's prompt cache (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// The cost the agent CLI printed itself (Claude Code's `total_cost_usd`, ...) when plangate
    /// measured the usage at its model API endpoint and priced it differently (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_by_cli_usd: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// "N input + M output tokens (partly estimated), $X": the one wording
    /// the console and the Markdown summary share.
    pub fn summary(&self) -> String {
        let cache = if self.cache_read_input_tokens + self.cache_creation_input_tokens > 0 {
            format!(
                " (cache: {} read, {} written)",
                self.cache_read_input_tokens, self.cache_creation_input_tokens
            )
        } else {
            String::new()
        };
        let cli = self
            .reported_by_cli_usd
            .map(|c| format!(" (the CLI reported ${c:.4})"))
            .unwrap_or_default();
        format!(
            "{} input{cache} + {} output tokens{}, ${:.4}{cli}",
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
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
        self.estimated |= other.estimated;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.reported_by_cli_usd = match (self.reported_by_cli_usd, other.reported_by_cli_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// All tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}
