//! Checking and lowering the parameters of the workspace tools
//! (`find_in_files`, `git`, `http_request`, `archive`, `system_info`).
//!
//! The JSON Schema has already rejected unknown and mistyped parameters with
//! their line and column; here each path parameter is checked to stay inside
//! the workspace (again with its position), and the parameters become the
//! step's [`Action`].

use std::path::PathBuf;

use super::node::{Node, NodeValue};
use super::raw::ToolName;
use super::tool_params::{
    ArchiveFormat, ArchiveOperation, ArchiveParams, FindInFilesParams, GitParams,
    HttpRequestParams, SystemInfoParams,
};
use super::validate::relative_inside;
use super::{Action, ArchiveAction, Diagnostic, FindAction, GitAction, HttpAction};

/// The tools plangate can run. A tool named in the plan format but not listed
/// here is refused at load ("not available yet"), never skipped or faked.
pub(crate) const IMPLEMENTED: &[&str] = &[
    "bash",
    "agent",
    "secrets_scan",
    "find_in_files",
    "system_info",
    "archive",
];

/// The parameter names of a workspace tool (for "did you mean" help).
pub(crate) fn param_keys(tool: &str) -> Vec<String> {
    use super::schema::allowed_keys;
    match tool {
        "find_in_files" => allowed_keys::<FindInFilesParams>(),
        "git" => allowed_keys::<GitParams>(),
        "http_request" => allowed_keys::<HttpRequestParams>(),
        "archive" => allowed_keys::<ArchiveParams>(),
        "system_info" => allowed_keys::<SystemInfoParams>(),
        _ => Vec::new(),
    }
}

/// Path-valued parameters of each tool: (key, is a list).
fn path_keys(tool: &str) -> &'static [(&'static str, bool)] {
    match tool {
        "find_in_files" => &[("path", false)],
        "git" => &[("repository_path", false), ("files", true)],
        "archive" => &[
            ("archive_path", false),
            ("destination", false),
            ("source_paths", true),
        ],
        _ => &[],
    }
}

/// Semantic checks of a workspace tool's parameters, every problem with its position.
pub(crate) fn check_params(file: &str, tool: &str, params: &Node, sid: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (key, list) in path_keys(tool) {
        let Some(n) = params.child(key) else { continue };
        let values: Vec<&Node> = match (&n.value, list) {
            (NodeValue::Seq(items), true) => items.iter().collect(),
            (_, false) => vec![n],
            _ => Vec::new(),
        };
        for v in values {
            if let NodeValue::Str(s) = &v.value
                && s.trim() != "."
                && let Err(why) = relative_inside(s)
            {
                out.push(
                    Diagnostic::at(file, v.pos, format!("`{key}` of step `{sid}`: {why}"))
                        .help("give a path relative to the workspace that stays inside it (`.` for all of it)"),
                );
            }
        }
    }
    if tool == "find_in_files"
        && let Some(q) = params.child("query")
        && let NodeValue::Str(query) = &q.value
    {
        let literal = matches!(
            params.child("fixed_strings").map(|n| &n.value),
            Some(NodeValue::Bool(true))
        );
        if !literal
            && let Err(e) = grep_regex::RegexMatcherBuilder::new()
                .line_terminator(Some(b'\n'))
                .build(query)
        {
            let first = e.to_string().lines().last().unwrap_or("").trim().to_owned();
            out.push(
                Diagnostic::at(file, q.pos, format!("`query` of step `{sid}` is not a valid regular expression: {first}"))
                    .help("use Rust regex syntax (as ripgrep does), or set `fixed_strings: true` to search for the text as is"),
            );
        }
    }
    if tool == "system_info"
        && let Some(NodeValue::Seq(items)) = params.child("tools").map(|n| &n.value)
    {
        for t in items {
            if let NodeValue::Str(name) = &t.value
                && !program_name_ok(name)
            {
                out.push(
                    Diagnostic::at(file, t.pos, format!("`tools` entry `{name}` of step `{sid}` is not a program name"))
                        .help("give plain names found on PATH, like `git` or `python3`; each is run as `NAME --version`"),
                );
            }
        }
    }
    if tool == "git"
        && let Some(NodeValue::Str(op)) = params.child("operation").map(|n| &n.value)
        && op == "commit"
        && params
            .child("commit_message")
            .is_none_or(|m| matches!(&m.value, NodeValue::Str(s) if s.trim().is_empty()))
    {
        out.push(
            Diagnostic::at(
                file,
                params.pos,
                format!("step `{sid}`: a git `commit` needs a non-empty `commit_message`"),
            )
            .help("add `commit_message: \"...\"` to the parameters"),
        );
    }
    if tool == "archive" {
        check_archive_params(file, params, sid, &mut out);
    }
    out
}

/// The archive tool's checks: parameters that fit the operation, a format
/// that can be known, a compression the format has, valid exclude globs.
fn check_archive_params(file: &str, params: &Node, sid: &str, out: &mut Vec<Diagnostic>) {
    let str_at = |key: &str| match params.child(key).map(|n| &n.value) {
        Some(NodeValue::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    let op = str_at("operation");
    let non_empty = |key: &str| {
        params
            .child(key)
            .filter(|n| !matches!(&n.value, NodeValue::Seq(v) if v.is_empty()))
    };
    if op == Some("create") && non_empty("source_paths").is_none() {
        out.push(
            Diagnostic::at(
                file,
                params.pos,
                format!("step `{sid}`: archive `create` needs `source_paths`"),
            )
            .help("list what to pack, e.g. `source_paths: [dist]`"),
        );
    }
    if let Some(o @ ("extract" | "list")) = op
        && let Some(n) = non_empty("source_paths")
    {
        out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!("`source_paths` of step `{sid}` is only for `create`, not `{o}`"),
            )
            .help("remove it, or set `operation: create`"),
        );
    }
    if let Some(o @ ("create" | "list")) = op
        && let Some(n) = params.child("destination")
    {
        out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!("`destination` of step `{sid}` is only for `extract`, not `{o}`"),
            )
            .help("remove it, or set `operation: extract`"),
        );
    }
    let by_name = str_at("archive_path").and_then(ArchiveFormat::from_name);
    let format = match str_at("format") {
        Some("zip") => Some(ArchiveFormat::Zip),
        Some("tar") => Some(ArchiveFormat::Tar),
        _ => by_name.map(|b| b.0),
    };
    if op == Some("create")
        && format.is_none()
        && params.child("format").is_none()
        && let Some(n) = params.child("archive_path")
        && let Some(path) = str_at("archive_path")
    {
        out.push(
            Diagnostic::at(file, n.pos, format!("step `{sid}`: cannot tell the archive format of `{path}`"))
                .help("name it .zip, .tar, .tar.gz, .tgz or .tar.bz2, or set `format: zip` or `format: tar`"),
        );
    }
    if format == Some(ArchiveFormat::Zip)
        && str_at("compression") == Some("bz2")
        && let Some(n) = params.child("compression")
    {
        out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!(
                    "`compression` of step `{sid}`: zip entries are deflated or stored, not bz2"
                ),
            )
            .help("use `compression: gzip` (deflate) or `none` (stored) for zip, or a .tar.bz2"),
        );
    }
    if let Some(NodeValue::Seq(items)) = params.child("exclude_patterns").map(|n| &n.value) {
        for it in items {
            if let NodeValue::Str(g) = &it.value
                && let Err(e) = globset::Glob::new(g.trim())
            {
                out.push(
                    Diagnostic::at(file, it.pos, format!("`exclude_patterns` entry `{g}` of step `{sid}` is not a valid glob: {}", e.kind()))
                        .help("use globs like `*.log`, `node_modules` or `build/**`"),
                );
            }
        }
    }
}

/// A plain program name looked up on PATH: no path, no option, no spaces.
fn program_name_ok(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && !t.starts_with('-')
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

/// A workspace-relative path (`.` is the workspace itself).
fn inside(s: &str) -> Result<PathBuf, String> {
    if s.trim() == "." {
        Ok(PathBuf::new())
    } else {
        relative_inside(s)
    }
}

/// Lower a workspace tool's parameters. The error is a message for the step's position.
pub(crate) fn lower(
    tool: ToolName,
    params: serde_json::Value,
) -> Result<(Action, Option<super::raw::Timeout>), String> {
    let bad = |e: serde_json::Error| format!("invalid parameters: {e}");
    Ok(match tool {
        ToolName::FindInFiles => {
            let p: FindInFilesParams = serde_json::from_value(params).map_err(bad)?;
            let path = inside(p.path.as_deref().unwrap_or("."))?;
            (
                Action::FindInFiles(Box::new(FindAction { path, params: p })),
                None,
            )
        }
        ToolName::Git => {
            let p: GitParams = serde_json::from_value(params).map_err(bad)?;
            let repo = inside(p.repository_path.as_deref().unwrap_or("."))?;
            let timeout = p.timeout;
            (
                Action::Git(Box::new(GitAction { repo, params: p })),
                timeout,
            )
        }
        ToolName::HttpRequest => {
            let p: HttpRequestParams = serde_json::from_value(params).map_err(bad)?;
            let timeout = p.timeout;
            (Action::Http(Box::new(HttpAction { params: p })), timeout)
        }
        ToolName::Archive => {
            let p: ArchiveParams = serde_json::from_value(params).map_err(bad)?;
            let archive = inside(&p.archive_path)?;
            let sources = p
                .source_paths
                .iter()
                .map(|s| inside(s))
                .collect::<Result<Vec<_>, _>>()?;
            let destination = match &p.destination {
                Some(d) => Some(inside(d)?),
                None => None,
            };
            if p.operation == ArchiveOperation::Create && sources.is_empty() {
                return Err("archive `create` needs `source_paths`".to_owned());
            }
            (
                Action::Archive(Box::new(ArchiveAction {
                    archive,
                    sources,
                    destination,
                    params: p,
                })),
                None,
            )
        }
        ToolName::SystemInfo => {
            let p: SystemInfoParams = serde_json::from_value(params).map_err(bad)?;
            for t in p.tools.iter().flatten() {
                if !program_name_ok(t) {
                    return Err(format!(
                        "`tools` entry `{t}` is not a program name (a plain name found on PATH, like `git`)"
                    ));
                }
            }
            (Action::SystemInfo(p), None)
        }
        ToolName::Bash | ToolName::Agent | ToolName::SecretsScan => {
            return Err(format!("{} is not a workspace tool", tool.as_str()));
        }
    })
}
