//! The tool registry: the tool enum of the plan format ([`ToolName`]), the
//! checked action of each tool ([`Action`]) and the two tables that map them
//! to the tool's folder ([`ToolName::spec`], [`Action::spec`]).
//!
//! Every table is an exhaustive `match`, so a tool added to the enums and
//! missing from a table is a compile error, never a runtime surprise. The
//! only other table is [`super::execute`] (running a step). Pure: nothing
//! here or in the specs it names touches the engine, the report or a file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::spec::{ActionSpec, ToolSpec};
use super::{agent, archive, bash, find, git, http, secrets_scan, system_info};

/// The tools a step can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolName {
    /// Run a bash command.
    Bash,
    /// Ask an agent; its answer is parsed fail-close.
    Agent,
    /// Search files.
    FindInFiles,
    /// Git operations.
    Git,
    /// An HTTP request.
    HttpRequest,
    /// Create, list or extract archives.
    Archive,
    /// Scan files for secrets.
    SecretsScan,
    /// Report the OS, CPU, memory, disk and tool versions (read-only).
    SystemInfo,
}

impl ToolName {
    /// Every tool, in the order of SPEC (a test checks none is missing).
    pub const ALL: [ToolName; 8] = [
        ToolName::Bash,
        ToolName::Agent,
        ToolName::FindInFiles,
        ToolName::Git,
        ToolName::HttpRequest,
        ToolName::Archive,
        ToolName::SecretsScan,
        ToolName::SystemInfo,
    ];

    /// The name used in plans and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Bash => "bash",
            ToolName::Agent => "agent",
            ToolName::FindInFiles => "find_in_files",
            ToolName::Git => "git",
            ToolName::HttpRequest => "http_request",
            ToolName::Archive => "archive",
            ToolName::SecretsScan => "secrets_scan",
            ToolName::SystemInfo => "system_info",
        }
    }

    /// The tool named `name` in a plan.
    pub fn from_name(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The tool's load-time half: schema, checks, lowering.
    pub fn spec(self) -> &'static dyn ToolSpec {
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

/// What a step does, per tool: its checked parameters.
#[derive(Debug, Clone)]
pub enum Action {
    /// A bash command.
    Bash(bash::params::BashAction),
    /// A question to an agent, answered through the fail-close guard.
    Agent(Box<agent::params::AgentAction>),
    /// A secrets scan of workspace files.
    SecretsScan(secrets_scan::params::ScanAction),
    /// A search of workspace files.
    FindInFiles(Box<find::params::FindAction>),
    /// A git operation.
    Git(Box<git::params::GitAction>),
    /// An HTTP request.
    Http(Box<http::params::HttpAction>),
    /// Create, extract or list an archive.
    Archive(Box<archive::params::ArchiveAction>),
    /// Facts about the machine.
    SystemInfo(system_info::params::SystemInfoParams),
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

#[cfg(test)]
mod tests {
    use super::ToolName;

    /// `ALL` lists every variant the plan format knows (the schema's enum).
    #[test]
    fn all_lists_every_tool() {
        let schema = schemars::schema_for!(ToolName).to_value();
        let mut names: Vec<String> = schema["oneOf"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["const"].as_str().or_else(|| v["enum"][0].as_str()))
            .map(str::to_owned)
            .collect();
        if names.is_empty() {
            names = schema["enum"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
        }
        let mut all: Vec<String> = ToolName::ALL
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
        names.sort();
        all.sort();
        assert_eq!(names, all);
        for t in ToolName::ALL {
            assert_eq!(ToolName::from_name(t.as_str()), Some(t));
        }
    }
}
