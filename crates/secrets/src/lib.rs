//! Secrets detection for plangate: finds credentials in text (source, configs, CI files,
//! `.env`, notebooks, logs) so that none leaves a run.
//!
//! Rules are data (`rules/default.toml`, compiled in; user files extend or override them by
//! id). The [`Scanner`] runs one Aho-Corasick pass over every rule keyword, then only the
//! rules whose keywords occur, on bounded windows around the hits. Candidates are filtered by
//! entropy, allowlists/stop-words, offline checksums (GitHub, npm) and structure (JWT), and
//! base64-wrapped provider tokens are found by their encoded prefixes. Everything here is
//! pure: no file I/O (the caller reads files and uses [`looks_binary`] to skip binaries).

pub mod chain;
mod checksum;
pub mod decode;
mod engine;
mod entropy;
pub mod fold;
pub mod forms;
mod names;
mod redact;
mod rules;
pub mod view;

pub use engine::Scanner;
pub use entropy::shannon as entropy;
pub use redact::{fingerprint, looks_binary, redact};
pub use rules::{RuleProblem, RulesError, Ruleset};

/// One detected secret.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// Rule id, stable (e.g. "github-pat", "aws-access-key-id").
    pub rule: String,
    /// Byte range of the secret itself (not the whole match), in the scanned bytes.
    pub start: usize,
    pub end: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in bytes.
    pub column: usize,
    /// 0..1: checksum-verified or prefixed formats high; generic+entropy lower.
    pub confidence: f32,
    /// [`fingerprint`] of the secret bytes.
    pub fingerprint: String,
}

#[cfg(test)]
mod tests;
