//! The data layer of the tools: each tool's parameters as written and its
//! checked action (one file per tool), and [`Action`], the enum of them that a
//! checked step carries.
//!
//! Plain data: nothing here depends on a tool's checks or execution code, so
//! the step (`super::step`), the specs and the tools can all depend on it
//! without depending on each other. The tables mapping an action to its tool
//! live in `super::registry`.

pub(crate) mod agent;
pub(crate) mod archive;
pub(crate) mod bash;
pub(crate) mod find;
pub(crate) mod git;
pub(crate) mod http;
pub(crate) mod secrets_scan;
pub(crate) mod system_info;

/// What a step does, per tool: its checked parameters.
#[derive(Debug, Clone)]
pub enum Action {
    /// A bash command.
    Bash(bash::BashAction),
    /// A question to an agent, answered through the fail-close guard.
    Agent(Box<agent::AgentAction>),
    /// A secrets scan of workspace files.
    SecretsScan(secrets_scan::ScanAction),
    /// A search of workspace files.
    FindInFiles(Box<find::FindAction>),
    /// A git operation.
    Git(Box<git::GitAction>),
    /// An HTTP request.
    Http(Box<http::HttpAction>),
    /// Create, extract or list an archive.
    Archive(Box<archive::ArchiveAction>),
    /// Facts about the machine.
    SystemInfo(system_info::SystemInfoParams),
}

impl Action {
    /// An agent step's CLI argv (see `AgentAction::cli_argv`).
    pub(crate) fn agent_command(&self) -> Option<&[String]> {
        match self {
            Action::Agent(a) => a.cli_argv(),
            _ => None,
        }
    }
}
