//! The `system_info` tool's load-time checks (program names), lowering,
//! classification and permission needs. Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use crate::format::node::{Node, NodeValue};
use crate::model::Diagnostic;
use crate::model::Level;
use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::system_info::SystemInfoParams;
use std::path::Path;

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, fixed, keys_of, schema_of,
};

/// The `system_info` tool.
pub(crate) struct Spec;

impl ToolSpec for Spec {
    fn nested_keys(&self, _key: &str) -> Vec<String> {
        Vec::new()
    }

    fn retry(&self) -> Result<(), &'static str> {
        Err(crate::format::retry::NO_RETRY_HELP)
    }

    fn params_required(&self) -> bool {
        false
    }

    fn params_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        schema_of::<SystemInfoParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<SystemInfoParams>()
    }

    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
        if let Some(NodeValue::Seq(items)) = params.child("tools").map(|n| &n.value) {
            for t in items {
                if let NodeValue::Str(name) = &t.value
                    && !program_name_ok(name)
                {
                    out.push(
                        cx.at(t.pos, format!("`tools` entry `{name}` of step `{}` is not a program name", cx.sid))
                            .help("give plain names found on PATH, like `git` or `python3`; each is run as `NAME --version`"),
                    );
                }
            }
        }
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: SystemInfoParams = cx.workspace_params(params)?;
        for t in p.tools.iter().flatten() {
            if !program_name_ok(t) {
                return Err(cx.workspace_error(format!(
                    "`tools` entry `{t}` is not a program name (a plain name found on PATH, like `git`)"
                )));
            }
        }
        Ok(Lowered::action(Action::SystemInfo(p)))
    }
}

impl ActionSpec for SystemInfoParams {
    /// Only reads.
    fn classify(&self, _env: &ToolEnv) -> StepClassification {
        fixed(Risk::Safe, "system_info only reads facts about the machine")
    }

    fn needs(&self) -> Vec<Access> {
        vec![access("system", Level::Read)]
    }

    fn show_cli(&self) -> bool {
        self.show_cli
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

/// A plain program name looked up on PATH: no path, no option, no spaces.
pub(crate) fn program_name_ok(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 64
        && !t.starts_with('-')
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}
