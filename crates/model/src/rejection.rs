//! Why an agent answer was refused: the category and the position in the
//! answer. The fail-close guard (`guard`) produces them; step outcomes,
//! the report and the retry prompt carry them.

use serde::{Deserialize, Serialize};

/// Why an answer was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Nothing that looks like the expected output.
    NotFound,
    /// More than one candidate (blocks, objects) where exactly one is allowed.
    Ambiguous,
    /// The answer stops before its output is complete.
    Truncated,
    /// Not valid syntax (JSON, fences) and not recoverable with certainty.
    Syntax,
    /// Strings need escaping the parser cannot undo with certainty.
    Escaping,
    /// A key appears twice in one object.
    DuplicateKey,
    /// Valid syntax, wrong shape (missing field, wrong type, extra field, schema violation).
    Schema,
    /// An artifact path that could leave the workspace or touch `.git`.
    UnsafePath,
    /// The block or value is empty.
    Empty,
}

impl Category {
    /// The snake_case name used in reports and feedback.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::NotFound => "not_found",
            Category::Ambiguous => "ambiguous",
            Category::Truncated => "truncated",
            Category::Syntax => "syntax",
            Category::Escaping => "escaping",
            Category::DuplicateKey => "duplicate_key",
            Category::Schema => "schema",
            Category::UnsafePath => "unsafe_path",
            Category::Empty => "empty",
        }
    }
}

/// One reason an answer was refused, with its position in the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// What kind of problem.
    pub category: Category,
    /// 1-based line in the answer (0 when the whole answer is concerned).
    pub line: usize,
    /// 1-based column in characters (0 when the whole answer is concerned).
    pub column: usize,
    /// What is wrong and what the agent should do, in one line, for the retry prompt.
    pub message: String,
}

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

    /// A rejection about the whole answer.
    pub fn whole(category: Category, message: impl Into<String>) -> Rejection {
        Rejection {
            category,
            line: 0,
            column: 0,
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

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "{} at line {} column {}: {}",
                self.category.as_str(),
                self.line,
                self.column,
                self.message
            )
        } else {
            write!(f, "{}: {}", self.category.as_str(), self.message)
        }
    }
}
