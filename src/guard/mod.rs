//! The fail-close guard: every agent answer passes through here before
//! anything stores or uses it.
//!
//! Pure: no I/O, no processes, no environment. Each parser returns the exact
//! value the agent meant, or a rejection that says what is wrong and where;
//! it never guesses, never completes a truncated answer, never picks one of
//! two candidates.

pub mod code;
pub mod envelope;
pub mod json;
pub(crate) mod protocol;
pub mod untrusted;

pub use crate::model::rejection::{Category, Rejection, line_col};
