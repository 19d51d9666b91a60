//! The fail-close guard: every agent answer passes through here before
//! anything stores or uses it.
//!
//! Pure, and a crate of its own (`plangate-guard`) so that the compiler
//! checks it: no I/O, no processes, no environment; it depends on the model
//! and on serde only (the JSON Schema check of `output: json` comes in
//! through [`json::SchemaCheck`]). Each parser returns the exact
//! value the agent meant, or a rejection that says what is wrong and where;
//! it never guesses, never completes a truncated answer, never picks one of
//! two candidates.

pub mod code;
pub mod envelope;
pub mod json;
pub mod protocol;
pub mod untrusted;

pub use plangate_model::rejection::{Category, Rejection, line_col};
