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

pub use crate::model::rejection::{Category, Rejection};

impl Rejection {
    /// A rejection at a byte offset of `text` (converted to line and column).
    pub fn at(
        text: &str,
        byte_offset: usize,
        category: Category,
        message: impl Into<String>,
    ) -> Rejection {
        let (line, column) = line_col(text, byte_offset);
        Rejection {
            category,
            line,
            column,
            message: message.into(),
        }
    }
}

/// 1-based line and column (in characters) of a byte offset; offsets past the end clamp to the end.
pub fn line_col(text: &str, byte_offset: usize) -> (usize, usize) {
    let mut end = byte_offset.min(text.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
