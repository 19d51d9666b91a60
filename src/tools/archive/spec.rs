//! The `archive` tool's load-time checks (paths, parameters that fit the
//! operation, a knowable format, exclude globs), lowering, classification
//! and permission needs. Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use super::names::show_path;
use crate::format::node::{Node, NodeValue};
use crate::model::Diagnostic;
use crate::model::Level;
use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::archive::{
    ArchiveAction, ArchiveFormat, ArchiveOperation, ArchiveParams,
};
use std::path::Path;

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, check_paths, keys_of, resource, schema_of,
};

/// The `archive` tool.
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
        schema_of::<ArchiveParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<ArchiveParams>()
    }

    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
        check_paths(
            cx,
            params,
            &[
                ("archive_path", false),
                ("destination", false),
                ("source_paths", true),
            ],
            out,
        );
        check_archive_params(cx.file, params, cx.sid, out);
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: ArchiveParams = cx.workspace_params(params)?;
        let archive = cx.workspace_path(&p.archive_path)?;
        let sources = p
            .source_paths
            .iter()
            .map(|s| cx.workspace_path(s))
            .collect::<Result<Vec<_>, _>>()?;
        let destination = match &p.destination {
            Some(d) => Some(cx.workspace_path(d)?),
            None => None,
        };
        if p.operation == ArchiveOperation::Create && sources.is_empty() {
            return Err(cx.workspace_error("archive `create` needs `source_paths`"));
        }
        Ok(Lowered::action(Action::Archive(Box::new(ArchiveAction {
            archive,
            sources,
            destination,
            params: p,
        }))))
    }
}

impl ActionSpec for ArchiveAction {
    fn classify(&self, _env: &ToolEnv) -> StepClassification {
        classify(self)
    }

    fn needs(&self) -> Vec<Access> {
        match self.params.operation {
            ArchiveOperation::List => vec![access(resource(&self.archive), Level::Read)],
            ArchiveOperation::Create => {
                let mut v: Vec<Access> = self
                    .sources
                    .iter()
                    .map(|s| access(resource(s), Level::Read))
                    .collect();
                v.push(access(resource(&self.archive), Level::Write));
                v
            }
            ArchiveOperation::Extract => vec![
                access(resource(&self.archive), Level::Read),
                access(
                    self.destination.as_deref().map_or(".".to_owned(), resource),
                    Level::Write,
                ),
            ],
        }
    }

    fn show_cli(&self) -> bool {
        self.params.show_cli
    }

    fn may_write_workspace(&self) -> bool {
        self.params.operation != ArchiveOperation::List
    }

    fn processes(&self) -> Processes {
        Processes::None
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

/// List only reads; create and extract write inside the workspace.
fn classify(a: &ArchiveAction) -> StepClassification {
    let p = &a.params;
    let archive = show_path(&a.archive);
    let (classified, reason) = match p.operation {
        ArchiveOperation::List => (Risk::Safe, format!("archive list only reads `{archive}`")),
        ArchiveOperation::Create => (
            Risk::Moderate,
            format!(
                "archive create writes `{archive}` inside the workspace{}",
                if p.overwrite {
                    ", replacing it if it exists (overwrite: true)"
                } else {
                    ""
                }
            ),
        ),
        ArchiveOperation::Extract => {
            let dest = a.destination_or_parent();
            let dest = if dest.as_os_str().is_empty() {
                ".".to_owned()
            } else {
                show_path(&dest)
            };
            (
                Risk::Moderate,
                format!(
                    "archive extract writes into `{dest}` inside the workspace (entries that would leave it are refused){}",
                    if p.overwrite {
                        "; overwrite: true replaces existing files there"
                    } else {
                        ""
                    }
                ),
            )
        }
    };
    StepClassification {
        floor: Risk::Safe,
        classified,
        blocked: None,
        unclassifiable: None,
        reason,
    }
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
                && let Err(e) = crate::policy::glob::check_depth(g.trim()).and_then(|()| {
                    globset::Glob::new(g.trim())
                        .map(|_| ())
                        .map_err(|e| e.kind().to_string())
                })
            {
                out.push(
                    Diagnostic::at(
                        file,
                        it.pos,
                        format!(
                            "`exclude_patterns` entry `{g}` of step `{sid}` is not a valid glob: {e}"
                        ),
                    )
                    .help("use globs like `*.log`, `node_modules` or `build/**`"),
                );
            }
        }
    }
}
