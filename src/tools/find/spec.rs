//! The `find_in_files` tool's load-time checks (path, the query as a
//! ripgrep regex), lowering, classification and permission needs. Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use crate::format::node::{Node, NodeValue};
use crate::model::Diagnostic;
use crate::model::Level;
use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::find::{FindAction, FindInFilesParams};
use std::path::Path;

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, check_paths, fixed, keys_of, resource, schema_of,
};

/// The `find_in_files` tool.
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
        schema_of::<FindInFilesParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<FindInFilesParams>()
    }

    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
        check_paths(cx, params, &[("path", false)], out);
        check_globs(cx, params, out);
        if let Some(q) = params.child("query")
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
                    cx.at(q.pos, format!("`query` of step `{}` is not a valid regular expression: {first}", cx.sid))
                        .help("use Rust regex syntax (as ripgrep does), or set `fixed_strings: true` to search for the text as is"),
                );
            }
        }
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: FindInFilesParams = cx.workspace_params(params)?;
        let path = cx.workspace_path(p.path.as_deref().unwrap_or("."))?;
        Ok(Lowered::action(Action::FindInFiles(Box::new(FindAction {
            path,
            params: p,
        }))))
    }
}

/// `file_pattern` (comma-separated) and `exclude_dirs` must compile, nesting bounded.
fn check_globs(cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
    let mut nodes: Vec<(&str, &Node)> = Vec::new();
    if let Some(n) = params.child("file_pattern") {
        nodes.push(("file_pattern", n));
    }
    for n in crate::tools::spec::items(params.child("exclude_dirs")) {
        nodes.push(("exclude_dirs", n));
    }
    for (key, n) in nodes {
        if let NodeValue::Str(list) = &n.value
            && let Err(e) =
                crate::policy::glob::set(list.split(',').map(str::trim).filter(|g| !g.is_empty()))
        {
            out.push(
                cx.at(
                    n.pos,
                    format!("`{key}` of step `{}` is not a valid glob: {e}", cx.sid),
                )
                .help("use globs like `*.rs`, `src/**/*.ts` or `node_modules`"),
            );
        }
    }
}

impl ActionSpec for FindAction {
    /// Reading files is safe.
    fn classify(&self, _env: &ToolEnv) -> StepClassification {
        fixed(Risk::Safe, "find_in_files only reads workspace files")
    }

    fn needs(&self) -> Vec<Access> {
        vec![access(resource(&self.path), Level::Read)]
    }

    fn show_cli(&self) -> bool {
        self.params.show_cli
    }

    fn may_write_workspace(&self) -> bool {
        false
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
