//! The `bash` tool's load-time checks and lowering, its classification (the
//! parser-based bash classifier) and its permission needs. Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use crate::format::node::{Node, NodeValue};
use crate::format::paths::relative_inside;
use crate::model::Diagnostic;
use crate::model::Level;
use crate::model::Limits;
use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::classify::{ClassifyContext, classify_bash};
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::bash::{BashAction, BashParams};
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, ToolEnv, ToolSpec, access, keys_of, resource, schema_of,
    str_of,
};

/// The `bash` tool.
pub(crate) struct Spec;

impl ToolSpec for Spec {
    fn params_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        schema_of::<BashParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<BashParams>()
    }

    fn nested_keys(&self, key: &str) -> Vec<String> {
        match key {
            "limits" => keys_of::<Limits>(),
            _ => Vec::new(),
        }
    }

    fn check(&self, cx: &CheckCx<'_>, p: &Node, out: &mut Vec<Diagnostic>) {
        let sid = cx.sid;
        for (key, why) in [("use_pty", "pseudo-terminals are not supported yet")] {
            if let Some(n) = p.child(key)
                && n.value == NodeValue::Bool(true)
            {
                out.push(
                    cx.at(n.pos, format!("`{key}: true` on step `{sid}`: {why}"))
                        .help(format!("remove `{key}` or set it to false")),
                );
            }
        }
        for key in ["writable", "readable"] {
            if let Some(n) = p.child(key)
                && let NodeValue::Seq(items) = &n.value
            {
                for item in items {
                    if str_of(item).is_some_and(|w| w.trim().is_empty() || w.contains('\0')) {
                        out.push(
                        cx.at(
                            item.pos,
                            format!("an empty path in `{key}` of step `{sid}`"),
                        )
                        .help(
                            "give an absolute path, `~/...`, or a path relative to the workspace",
                        ),
                    );
                    }
                }
            }
        }
        if let Some(n) = p.child("command")
            && str_of(n).is_some_and(|s| !s.is_empty() && s.trim().is_empty())
        {
            out.push(
                cx.at(n.pos, format!("the command of step `{sid}` is empty"))
                    .help("give the bash command to run"),
            );
        }
        if let Some(n) = p.child("working_directory")
            && let Some(s) = str_of(n)
            && let Err(why) = relative_inside(s)
        {
            out.push(
                cx.at(n.pos, format!("`working_directory` of step `{sid}` {why}"))
                    .help("give a path relative to the workspace that stays inside it"),
            );
        }
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: BashParams = cx.params(params)?;
        let working_directory = match &p.working_directory {
            Some(w) => Some(relative_inside(w).map_err(|why| cx.at_step(why.to_string()))?),
            None => None,
        };
        if let Some(list) = &p.egress {
            crate::egress::Rules::parse(list).map_err(|why| {
                cx.at_step(why).help(
                    "list host names, `*.domain`, or IP addresses, each with an optional `:port`",
                )
            })?;
        }
        Ok(Lowered {
            action: Action::Bash(BashAction {
                command: p.command,
                working_directory,
                show_cli: p.show_cli,
                capture_output: p.capture_output,
                unsandboxed: !p.sandbox,
                network: p.network,
                egress: p.egress,
                writable: p.writable,
                readable: p.readable,
                limits: p.limits,
            }),
            declared_risk: p.security_level,
            timeout: p.timeout,
            env: p.environment,
        })
    }
}

impl ActionSpec for BashAction {
    fn classify(&self, env: &ToolEnv) -> StepClassification {
        let wd = self
            .working_directory
            .as_ref()
            .map_or_else(|| env.workspace.clone(), |w| env.workspace.join(w));
        let ctx = ClassifyContext {
            workspace: &env.workspace,
            working_dir: &wd,
            home: env.home.as_deref(),
        };
        let main = classify_bash(&self.command, &ctx);
        StepClassification {
            floor: Risk::Safe,
            classified: main.risk(),
            blocked: main.blocked().map(str::to_owned),
            unclassifiable: main.unclassifiable().map(str::to_owned),
            reason: main.reason().to_owned(),
        }
    }

    fn needs(&self) -> Vec<Access> {
        vec![access(
            self.working_directory
                .as_deref()
                .map_or(".".to_owned(), resource),
            Level::Execute,
        )]
    }

    fn show_cli(&self) -> bool {
        self.show_cli
    }

    fn may_write_workspace(&self) -> bool {
        true
    }
}
