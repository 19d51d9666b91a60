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
    "git",
    "http_request",
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
    if tool == "http_request" {
        check_http_params(file, params, sid, &mut out);
    }
    if tool == "git" {
        out.extend(check_git(file, params, sid));
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

/// Request headers plangate sets itself: a plan setting them could send one
/// host's request to another (`Host`) or desynchronise the message framing.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// Why a request header cannot be sent as written, if it cannot.
fn header_problem(name: &str, value: Option<&str>) -> Option<String> {
    if ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Some(format!("`{name}` is not a valid header name"));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Some(format!(
            "header `{name}` is set by plangate from the URL and the body"
        ));
    }
    if let Some(v) = value
        && ureq::http::HeaderValue::from_str(v).is_err()
    {
        return Some(format!(
            "the value of header `{name}` holds a control character or a line break"
        ));
    }
    None
}

/// `http_request`: the URL (scheme, host, no credentials), the headers, a body only for writes.
fn check_http_params(file: &str, params: &Node, sid: &str, out: &mut Vec<Diagnostic>) {
    if let Some(u) = params.child("url")
        && let NodeValue::Str(url) = &u.value
        && let Err(why) = crate::policy::hosts::parse_url(url)
    {
        out.push(
            Diagnostic::at(file, u.pos, format!("`url` of step `{sid}`: {why}"))
                .help("give an absolute URL such as `https://api.example.com/v1/status`"),
        );
    }
    if let Some(NodeValue::Map(pairs)) = params.child("headers").map(|n| &n.value) {
        for (k, v) in pairs {
            let value = match &v.value {
                NodeValue::Str(s) => Some(s.as_str()),
                _ => None,
            };
            if let Some(why) = header_problem(&k.name, value) {
                let at = if ureq::http::HeaderName::from_bytes(k.name.as_bytes()).is_ok()
                    && !RESERVED_HEADERS.contains(&k.name.to_ascii_lowercase().as_str())
                {
                    v.pos
                } else {
                    k.pos
                };
                out.push(
                    Diagnostic::at(file, at, format!("`headers` of step `{sid}`: {why}"))
                        .help("header names are tokens like `Accept` or `X-Request-Id`; values are one line of text"),
                );
            }
        }
    }
    for n in match params.child("sensitive_headers").map(|n| &n.value) {
        Some(NodeValue::Seq(items)) => items.as_slice(),
        _ => &[],
    } {
        if let NodeValue::Str(name) = &n.value
            && ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err()
        {
            out.push(
                Diagnostic::at(
                    file,
                    n.pos,
                    format!(
                        "`sensitive_headers` of step `{sid}`: `{name}` is not a valid header name"
                    ),
                )
                .help("list header names such as `X-Api-Key`"),
            );
        }
    }
    if let Some(b) = params.child("body")
        && let Some(NodeValue::Str(m)) = params.child("method").map(|n| &n.value)
        && matches!(m.as_str(), "GET" | "HEAD" | "OPTIONS")
    {
        out.push(
            Diagnostic::at(
                file,
                b.pos,
                format!("step `{sid}`: a {m} request sends no `body`"),
            )
            .help("use POST, PUT, PATCH or DELETE to send a body, or move the data to `params`"),
        );
    }
}

/// Every `http_request` step whose URL's host the allow-list in force does
/// not allow (checked again at run time, for every redirect hop).
pub fn check_allowed_hosts(plan: &super::Plan, allowed: Option<&[String]>) -> Vec<Diagnostic> {
    let Some(list) = allowed else {
        return Vec::new();
    };
    let file = plan.path.display().to_string();
    let mut out = Vec::new();
    for step in &plan.steps {
        let Action::Http(h) = &step.action else {
            continue;
        };
        let Ok((_, target)) = crate::policy::hosts::parse_url(&h.params.url) else {
            continue;
        };
        if !target.allowed_by(Some(list)) {
            let shown = if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            };
            out.push(
                Diagnostic::at(
                    &file,
                    h.url_pos,
                    format!(
                        "step `{}`: host `{}` (port {}) is not in the policy's allowed_hosts",
                        step.id, target.host, target.port
                    ),
                )
                .help(format!(
                    "allowed: {shown}; add the host to `policy.allowed_hosts` (a `--policy` file's list also applies)"
                )),
            );
        }
    }
    out
}

/// The git tool's own checks ([`crate::tools::git::args::problems`]), placed at the parameter at fault.
fn check_git(file: &str, params: &Node, sid: &str) -> Vec<Diagnostic> {
    use crate::tools::git::args::{Request, Where, problems};
    let Some(NodeValue::Str(op)) = params.child("operation").map(|n| &n.value) else {
        return Vec::new();
    };
    let Ok(op) = serde_json::from_value(serde_json::Value::String(op.clone())) else {
        return Vec::new();
    };
    let arg_nodes: Vec<&Node> = match params.child("args").map(|n| &n.value) {
        Some(NodeValue::Seq(items)) => items.iter().collect(),
        _ => Vec::new(),
    };
    let args: Vec<String> = arg_nodes
        .iter()
        .filter_map(|n| match &n.value {
            NodeValue::Str(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    if args.len() != arg_nodes.len() {
        // Mistyped entries: the schema has reported them.
        return Vec::new();
    }
    let is_true = |k: &str| {
        matches!(
            params.child(k).map(|n| &n.value),
            Some(NodeValue::Bool(true))
        )
    };
    let req = Request {
        op,
        args: &args,
        has_files: matches!(params.child("files").map(|n| &n.value), Some(NodeValue::Seq(v)) if !v.is_empty()),
        force: is_true("force"),
        dry_run: is_true("dry_run"),
        has_message: params
            .child("commit_message")
            .is_some_and(|n| !matches!(n.value, NodeValue::Null)),
    };
    problems(&req)
        .into_iter()
        .map(|pb| {
            let pos = match pb.at {
                Where::Arg(i) => arg_nodes.get(i).map(|n| n.pos),
                Where::Force => params.child("force").map(|n| n.pos),
                Where::DryRun => params.child("dry_run").map(|n| n.pos),
                Where::Files => params.child("files").map(|n| n.pos),
                Where::CommitMessage => params.child("commit_message").map(|n| n.pos),
                Where::Params => None,
            }
            .unwrap_or(params.pos);
            Diagnostic::at(file, pos, format!("step `{sid}`: {}", pb.message)).help(pb.help)
        })
        .collect()
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
            crate::policy::hosts::parse_url(&p.url).map_err(|why| format!("`url`: {why}"))?;
            for (k, v) in &p.headers {
                if let Some(why) = header_problem(k, Some(v)) {
                    return Err(why);
                }
            }
            if p.body.is_some() && p.method.is_read() {
                return Err(format!("a {} request sends no `body`", p.method.as_str()));
            }
            let timeout = Some(p.timeout.unwrap_or(super::raw::Timeout(
                super::tool_params::HTTP_DEFAULT_TIMEOUT,
            )));
            (
                Action::Http(Box::new(HttpAction {
                    params: p,
                    url_pos: super::Pos::default(),
                })),
                timeout,
            )
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
