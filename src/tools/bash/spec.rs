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
use std::path::{Component, Path, PathBuf};

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, keys_of, resource, schema_of, str_of,
};

/// The `bash` tool.
pub(crate) struct Spec;

impl ToolSpec for Spec {
    fn params_required(&self) -> bool {
        true
    }

    fn retry(&self) -> Result<(), &'static str> {
        Ok(())
    }

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

    fn processes(&self) -> Processes {
        Processes::Sandboxed
    }

    fn sandbox(&self, r: &mut Request, workspace: &Path, home: Option<&Path>) {
        r.network |= self.network;
        r.egress.clone_from(&self.egress);
        r.unsandboxed = self.unsandboxed;
        r.writable = self
            .writable
            .iter()
            .map(|w| absolute(w, workspace, home))
            .collect();
        // The workspace is readable already (minus what the permission
        // rules deny, which a `readable` path never undoes).
        r.readable = self
            .readable
            .iter()
            .map(|w| absolute(w, workspace, home))
            .filter(|p| !p.starts_with(workspace))
            .collect();
    }

    fn secret_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn limits(&self) -> Option<Limits> {
        self.limits.filter(|l| *l != Limits::default())
    }

    /// The command, redacted then cut.
    fn summary(&self) -> Option<String> {
        Some(format!(
            "bash `{}`",
            crate::redact::cut(&self.command.replace(['\n', '\r'], " "), COMMAND_CHARS)
        ))
    }

    /// Any name, from the `$PLANGATE_OUTPUT` file.
    fn outputs(&self) -> Outputs {
        Outputs::File
    }

    fn templates(&self) -> &'static [(&'static str, Templates)] {
        &[("command", Templates::Refused("the command"))]
    }

    fn linked_steps(&self) -> &[usize] {
        &[]
    }

    fn linked_steps_mut(&mut self) -> Option<&mut Vec<usize>> {
        None
    }
}

/// Most characters of a command in a step's summary line.
const COMMAND_CHARS: usize = 120;

/// `w` as an absolute, lexically normal path.
fn absolute(w: &str, workspace: &Path, home: Option<&Path>) -> PathBuf {
    let joined = if let Some(rest) = w.strip_prefix("~/") {
        home.unwrap_or(Path::new("/")).join(rest)
    } else {
        workspace.join(w)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::absolute;
    use std::path::{Path, PathBuf};

    #[test]
    fn writable_paths_become_absolute_and_normal() {
        let ws = Path::new("/w/repo");
        let home = Some(Path::new("/home/ci"));
        for (w, want) in [
            ("target", "/w/repo/target"),
            ("./a/../b", "/w/repo/b"),
            ("../../etc", "/etc"),
            ("/opt/cache/", "/opt/cache"),
            ("~/.cargo", "/home/ci/.cargo"),
            ("/../..", "/"),
        ] {
            assert_eq!(absolute(w, ws, home), PathBuf::from(want), "{w}");
        }
    }
}
