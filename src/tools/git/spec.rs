//! The `git` tool's load-time checks (paths, commit message, and the
//! operation's own argument rules from `args::problems`, placed at the
//! parameter at fault), lowering and permission needs; its classification is
//! the git tool's own (`super::classify`). Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use crate::format::node::{Node, NodeValue};
use crate::model::Diagnostic;
use crate::model::Level;
use crate::policy::StepClassification;
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::git::{GitAction, GitOperation, GitParams};
use std::path::Path;

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, check_paths, keys_of, resource, schema_of,
};

/// The `git` tool.
pub(crate) struct Spec;

impl ToolSpec for Spec {
    fn params_required(&self) -> bool {
        true
    }

    fn nested_keys(&self, _key: &str) -> Vec<String> {
        Vec::new()
    }

    fn retry(&self) -> Result<(), &'static str> {
        Err(crate::format::retry::NO_RETRY_HELP)
    }

    fn params_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        schema_of::<GitParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<GitParams>()
    }

    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
        let sid = cx.sid;
        check_paths(
            cx,
            params,
            &[("repository_path", false), ("files", true)],
            out,
        );
        if let Some(NodeValue::Str(op)) = params.child("operation").map(|n| &n.value)
            && op == "commit"
            && params
                .child("commit_message")
                .is_none_or(|m| matches!(&m.value, NodeValue::Str(s) if s.trim().is_empty()))
        {
            out.push(
                cx.at(
                    params.pos,
                    format!("step `{sid}`: a git `commit` needs a non-empty `commit_message`"),
                )
                .help("add `commit_message: \"...\"` to the parameters"),
            );
        }
        out.extend(check_git(cx.file, params, sid));
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: GitParams = cx.workspace_params(params)?;
        let repo = cx.workspace_path(p.repository_path.as_deref().unwrap_or("."))?;
        let timeout = p.timeout;
        Ok(Lowered {
            timeout,
            ..Lowered::action(Action::Git(Box::new(GitAction { repo, params: p })))
        })
    }
}

/// The level an operation needs.
pub(crate) fn level(op: GitOperation) -> Level {
    match op {
        GitOperation::Status | GitOperation::Diff | GitOperation::Log => Level::Read,
        GitOperation::Push => Level::Admin,
        _ => Level::Write,
    }
}

/// The path a pathspec names, its magic prefix (`:(literal)`, `:/`) dropped.
fn pathspec_path(spec: &str) -> &str {
    if let Some(rest) = spec.strip_prefix(":(")
        && let Some(i) = rest.find(')')
    {
        return &rest[i + 1..];
    }
    spec.strip_prefix(":/").unwrap_or(spec)
}

impl ActionSpec for GitAction {
    fn classify(&self, _env: &ToolEnv) -> StepClassification {
        super::classify(self)
    }

    /// The repository, and every path named in `files` or after `--` in `args`.
    fn needs(&self) -> Vec<Access> {
        let level = level(self.params.operation);
        let mut v = vec![access(resource(&self.repo), level)];
        let after_dashdash = self.params.args.iter().skip_while(|a| *a != "--").skip(1);
        for f in self.params.files.iter().chain(after_dashdash) {
            v.push(access(resource(&self.repo.join(pathspec_path(f))), level));
        }
        v
    }

    fn show_cli(&self) -> bool {
        self.params.show_cli
    }

    fn may_write_workspace(&self) -> bool {
        true
    }

    fn processes(&self) -> Processes {
        Processes::Own
    }

    fn sandbox(&self, _r: &mut Request, _workspace: &Path, _home: Option<&Path>) {}

    fn secret_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn limits(&self) -> Option<crate::model::Limits> {
        None
    }

    fn summary(&self) -> Option<String> {
        None
    }

    fn outputs(&self) -> Outputs {
        Outputs::None
    }

    fn templates(&self) -> &'static [(&'static str, Templates)] {
        &[]
    }

    fn linked_steps(&self) -> &[usize] {
        &[]
    }

    fn linked_steps_mut(&mut self) -> Option<&mut Vec<usize>> {
        None
    }
}

/// The git tool's own checks ([`crate::tools::git::args::problems`]), placed at the parameter at fault.
fn check_git(file: &str, params: &Node, sid: &str) -> Vec<Diagnostic> {
    use super::args::{Request, Where, problems};
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
            }
            .unwrap_or(params.pos);
            Diagnostic::at(file, pos, format!("step `{sid}`: {}", pb.message)).help(pb.help)
        })
        .collect()
}
