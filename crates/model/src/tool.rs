//! The tool enum of the plan format: which tool a step uses, by the name
//! plans and reports spell. Each tool's load-time half and run live in its
//! folder under `tools` (`ToolName::spec` in `tools/registry.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

    /// SPEC's "Tools:" sentence names every tool, in `ALL`'s order.
    #[test]
    fn spec_names_every_tool_in_order() {
        let spec = include_str!("../../../docs/SPEC.md");
        let at = spec.find("\nTools: ").expect("SPEC's Tools: sentence");
        let sentence = &spec[at..spec[at..].find(" with ").map_or(spec.len(), |e| at + e)];
        let named: Vec<&str> = sentence.split('`').skip(1).step_by(2).collect();
        let all: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(named, all, "SPEC's Tools: sentence and ToolName::ALL");
    }
}
