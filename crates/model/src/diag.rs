//! A diagnostic: what is wrong in a plan or policy file, where, and what to
//! do. Produced by the loader (`plan`, which also builds them at a YAML
//! position), carried by the report.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A position in the source: 1-based line and column (characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// 1-based line; 0 when unknown.
    pub line: u64,
    /// 1-based column; 0 when unknown.
    pub column: u64,
}

/// One problem found in an input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// The file, as the user named it.
    pub file: String,
    /// 1-based line (0 when the whole file is concerned).
    pub line: u64,
    /// 1-based column (0 when the whole file is concerned).
    pub column: u64,
    /// What is wrong, as a lowercase sentence fragment.
    pub message: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at a position.
    pub fn at(file: &str, pos: Pos, message: impl Into<String>) -> Self {
        Diagnostic {
            file: file.to_owned(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
            help: None,
        }
    }

    /// Add what to do.
    #[must_use]
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "{}:{}:{}: error: {}",
                self.file, self.line, self.column, self.message
            )?;
        } else {
            write!(f, "{}: error: {}", self.file, self.message)?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}
