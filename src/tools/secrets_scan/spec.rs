//! The `secrets_scan` tool's load-time checks (path, rule ids), lowering,
//! classification and permission needs. Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use crate::format::diag::did_you_mean;
use crate::format::node::Node;
use crate::format::paths::relative_inside;
use crate::model::Diagnostic;
use crate::model::Level;
use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::secrets_scan::{ScanAction, ScanType, SecretsScanParams};
use std::path::Path;

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, items, keys_of, resource, schema_of, str_of,
};

/// The `secrets_scan` tool.
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
        schema_of::<SecretsScanParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<SecretsScanParams>()
    }

    fn check(&self, cx: &CheckCx<'_>, p: &Node, out: &mut Vec<Diagnostic>) {
        let sid = cx.sid;
        if let Some(n) = p.child("path")
            && let Some(s) = str_of(n)
            && let Err(why) = relative_inside(s)
        {
            out.push(cx.at(n.pos, format!("`path` of step `{sid}` {why}")).help(
                "give a path relative to the workspace that stays inside it (`.` for all of it)",
            ));
        }
        if let Some(ids) = p.child("rules") {
            let known = crate::secrets::Ruleset::builtin();
            let known_ids = known.ids();
            for n in items(Some(ids)) {
                if let Some(id) = str_of(n)
                    && !known_ids.contains(&id)
                {
                    let d = cx.at(
                        n.pos,
                        format!("unknown secrets rule `{id}` in step `{sid}`"),
                    );
                    out.push(match did_you_mean(id, known_ids.iter().copied()) {
                        Some(s) => d.help(format!("did you mean `{s}`?")),
                        None => d.help("`plangate scan` rule ids are listed in its SARIF output"),
                    });
                }
            }
        }
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: SecretsScanParams = cx.params(params)?;
        let split = |g: &str| {
            g.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        Ok(Lowered::action(Action::SecretsScan(ScanAction {
            path: cx.inside(&p.path)?,
            include: p.file_pattern.as_deref().map(split).unwrap_or_default(),
            exclude: p.exclude_patterns.clone(),
            scan_type: p.scan_type.unwrap_or(ScanType::Detect),
            rules: p.rules.clone(),
            show_cli: p.show_cli,
        })))
    }
}

impl ActionSpec for ScanAction {
    /// Reading is safe; rewriting workspace files is moderate.
    fn classify(&self, _env: &ToolEnv) -> StepClassification {
        let (risk, reason) = match self.scan_type {
            ScanType::Redact => (
                Risk::Moderate,
                "rewrites workspace files with their secrets replaced",
            ),
            ScanType::Detect | ScanType::Report => (Risk::Safe, "only reads files"),
        };
        StepClassification {
            floor: Risk::Safe,
            classified: risk,
            blocked: None,
            unclassifiable: None,
            reason: format!("secrets_scan {reason}"),
        }
    }

    fn needs(&self) -> Vec<Access> {
        let level = if self.scan_type == ScanType::Redact {
            Level::Write
        } else {
            Level::Read
        };
        vec![access(resource(&self.path), level)]
    }

    fn show_cli(&self) -> bool {
        self.show_cli
    }

    fn may_write_workspace(&self) -> bool {
        self.scan_type == ScanType::Redact
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
