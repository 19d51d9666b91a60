//! The tool registry: the two tables that map the tool enum
//! (`crate::model::ToolName`) and the checked action ([`Action`], defined with
//! the tools' parameters in `super::params`) to the tool's folder
//! ([`ToolSpecOf::spec`], [`Action::spec`]).
//!
//! Every table is an exhaustive `match`, so a tool added to the enums and
//! missing from a table is a compile error, never a runtime surprise. The
//! only other table is [`super::execute`] (running a step). Pure: nothing
//! here or in the specs it names touches the engine, the report or a file.

use super::params::Action;
use super::spec::{ActionSpec, ToolSpec};
use super::{agent, archive, bash, find, git, http, secrets_scan, system_info};
use crate::model::ToolName;

/// `ToolName::spec`: a trait, because `ToolName` is defined in the model
/// crate and the specs it names live here (cargo keeps the model crate from
/// depending on the tools).
pub(crate) trait ToolSpecOf {
    /// The tool's load-time half: schema, checks, lowering.
    fn spec(self) -> &'static dyn ToolSpec;
}

impl ToolSpecOf for ToolName {
    fn spec(self) -> &'static dyn ToolSpec {
        match self {
            ToolName::Bash => &bash::spec::Spec,
            ToolName::Agent => &agent::spec::Spec,
            ToolName::FindInFiles => &find::spec::Spec,
            ToolName::Git => &git::spec::Spec,
            ToolName::HttpRequest => &http::spec::Spec,
            ToolName::Archive => &archive::spec::Spec,
            ToolName::SecretsScan => &secrets_scan::spec::Spec,
            ToolName::SystemInfo => &system_info::spec::Spec,
        }
    }
}

impl Action {
    /// The action's policy-facing half: classification, permission needs, flags.
    pub fn spec(&self) -> &dyn ActionSpec {
        match self {
            Action::Bash(a) => a,
            Action::Agent(a) => a.as_ref(),
            Action::SecretsScan(a) => a,
            Action::FindInFiles(a) => a.as_ref(),
            Action::Git(a) => a.as_ref(),
            Action::Http(a) => a.as_ref(),
            Action::Archive(a) => a.as_ref(),
            Action::SystemInfo(a) => a,
        }
    }

    /// [`Action::spec`], to change.
    pub fn spec_mut(&mut self) -> &mut dyn ActionSpec {
        match self {
            Action::Bash(a) => a,
            Action::Agent(a) => a.as_mut(),
            Action::SecretsScan(a) => a,
            Action::FindInFiles(a) => a.as_mut(),
            Action::Git(a) => a.as_mut(),
            Action::Http(a) => a.as_mut(),
            Action::Archive(a) => a.as_mut(),
            Action::SystemInfo(a) => a,
        }
    }

    /// Whether the step can change workspace files. Only plangate's own
    /// in-process tools that never write there say no; a command, an agent, a
    /// git operation or an archive extraction may.
    pub fn may_write_workspace(&self) -> bool {
        self.spec().may_write_workspace()
    }

    /// Whether the step's output is echoed on stderr when it ends (`show_cli`).
    pub fn show_cli(&self) -> bool {
        self.spec().show_cli()
    }
}
