//! The plan file format's leaf pieces, shared by the plan loader (`plan`) and
//! the tools' load halves (`tools`): the positioned YAML node tree, the
//! workspace path rules, diagnostics at a position and "did you mean", the
//! agent definition, timeouts, a bash step's `retry:`, environment names and schema helpers, the
//! expression language of `if:` and prompt templates.
//!
//! Depends only on `model` and external crates, never on `plan` or `tools`, so
//! the layering runs model <- format <- tools <- plan. Nothing here does I/O.

pub(crate) mod agent;
pub(crate) mod diag;
pub(crate) mod expr;
pub(crate) mod names;
pub(crate) mod node;
pub(crate) mod paths;
pub(crate) mod retry;
pub(crate) mod schema;
pub(crate) mod template;
pub(crate) mod timeout;
