//! The `agent` tool's load-time checks and lowering, and its risk floor (the
//! provider's) and permission needs. Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use super::provider;
use crate::format::agent::{AgentMode, ProviderKind};
use crate::format::diag::did_you_mean;
use crate::format::node::{Node, NodeValue};
use crate::format::paths::relative_inside;
use crate::model::Diagnostic;
use crate::model::Level;
use crate::policy::StepClassification;
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::agent::{AgentAction, AgentParams, OutputKind, PromptSource};
use std::path::Path;

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, fixed, items, keys_of, resource, schema_of, str_of,
};

/// The `agent` tool.
pub(crate) struct Spec;

impl ToolSpec for Spec {
    fn params_required(&self) -> bool {
        true
    }

    fn retry(&self) -> Result<(), &'static str> {
        Err("remove `retry`; an agent step retries rejected answers with `parameters.max_attempts`")
    }

    fn params_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        schema_of::<AgentParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<AgentParams>()
    }

    fn nested_keys(&self, key: &str) -> Vec<String> {
        match key {
            "budget" => keys_of::<crate::model::StepBudget>(),
            _ => Vec::new(),
        }
    }

    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
        check_params(cx, params, out);
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        Ok(Lowered::action(Action::Agent(Box::new(lower(cx, params)?))))
    }
}

impl ActionSpec for AgentAction {
    /// The agent step's risk floor: what the provider and the output can do by themselves.
    fn classify(&self, _env: &ToolEnv) -> StepClassification {
        let (floor, reason) = provider::of(self.provider).risk_floor(self);
        fixed(floor, reason)
    }

    fn needs(&self) -> Vec<Access> {
        let mut v = vec![access(format!("agent:{}", self.agent_name), Level::Execute)];
        // What the prompt reads: its file and the context files.
        if let PromptSource::File(f) = &self.prompt {
            v.push(access(resource(f), Level::Read));
        }
        v.extend(
            self.context_files
                .iter()
                .map(|f| access(resource(f), Level::Read)),
        );
        if self.write_artifacts {
            v.push(access(".", Level::Write));
        }
        v
    }

    fn show_cli(&self) -> bool {
        false
    }

    fn may_write_workspace(&self) -> bool {
        // A read-only step never applies a change (accept.rs); its staged copy is private.
        !self.read_only
    }

    /// An agent CLI is a process of the step's own; an HTTP provider is plangate's call.
    fn processes(&self) -> Processes {
        if self.provider == ProviderKind::Command {
            Processes::Sandboxed
        } else {
            Processes::None
        }
    }

    fn sandbox(&self, r: &mut Request, _workspace: &Path, _home: Option<&Path>) {
        r.network |= self.agent.network;
        r.egress.clone_from(&self.agent.egress);
        // Its model API is served by plangate: the CLI reaches that
        // endpoint, and through the proxy only what `egress` lists.
        if self.agent.api.is_some() && r.egress.is_none() {
            r.egress = Some(Vec::new());
        }
    }

    /// Its agent's `secrets:`, `api_key_env` (or its provider's default) and
    /// the variables of its `headers`.
    fn secret_names(&self) -> Vec<String> {
        let mut all: Vec<String> = self.agent.secrets.iter().flatten().cloned().collect();
        all.extend(self.key_env().map(str::to_owned));
        all.extend(self.api_key_env());
        all.extend(
            self.agent
                .headers
                .iter()
                .flatten()
                .map(|(_, var)| var.clone()),
        );
        all
    }

    fn limits(&self) -> Option<crate::model::Limits> {
        None
    }

    fn summary(&self) -> Option<String> {
        Some(format!("agent `{}`", self.agent_name))
    }

    /// Its accepted answer's values.
    fn outputs(&self) -> Outputs {
        Outputs::Answer(crate::tools::outputs::agent_names(self.output))
    }

    fn templates(&self) -> &'static [(&'static str, Templates)] {
        &[("prompt", Templates::Rendered("the prompt"))]
    }

    fn linked_steps(&self) -> &[usize] {
        &self.context_steps
    }

    fn linked_steps_mut(&mut self) -> Option<&mut Vec<usize>> {
        Some(&mut self.context_steps)
    }
}

fn lower(cx: &LowerCx<'_>, params: Value) -> Result<AgentAction, Diagnostic> {
    let p: AgentParams = cx.params(params)?;
    let agent = cx
        .agents
        .get(&p.agent)
        .cloned()
        .ok_or_else(|| cx.at_step(format!("unknown agent `{}`", p.agent)))?;
    let provider = agent.provider.unwrap_or(ProviderKind::Command);
    let path = |f: &str| relative_inside(f).map_err(|why| cx.at_step(why.to_string()));
    let prompt = match (&p.prompt, &p.prompt_file) {
        (Some(t), None) => PromptSource::Inline(t.clone()),
        (None, Some(f)) => PromptSource::File(path(f)?),
        _ => {
            return Err(cx.at_step("set exactly one of `prompt` and `prompt_file`"));
        }
    };
    let context_files = p
        .context_files
        .iter()
        .map(|f| path(f.path()))
        .collect::<Result<Vec<_>, _>>()?;
    let untrusted_files = p
        .context_files
        .iter()
        .zip(&context_files)
        .filter_map(|(f, rel)| f.untrusted_cap().map(|cap| (rel.clone(), cap)))
        .collect();
    let replay_file = agent.file.as_ref().map(|f| cx.plan_dir.join(f));
    let read_only = read_only(agent.mode, p.mode).map_err(|why| {
        cx.at_step(format!("agent `{}`: {why}", p.agent))
            .help("remove `mode: read-write` from the step, or declare a read-write agent for it")
    })?;
    if read_only && p.write_artifacts == Some(true) {
        return Err(cx
            .at_step("`write_artifacts: true` contradicts `mode: read-only`: a read-only step writes nothing")
            .help("remove `write_artifacts`, or the `mode: read-only` that applies to this step"));
    }
    let writes_files = matches!(provider, ProviderKind::Command | ProviderKind::Replay);
    if p.publish_schemas == Some(true) && !writes_files {
        return Err(cx
            .at_step(format!(
                "`publish_schemas: true`: agent `{}` runs no process, so it cannot append requests to $PLANGATE_REQUESTS",
                p.agent
            ))
            .help("remove `publish_schemas`, or give the step a `command` agent"));
    }
    Ok(AgentAction {
        agent_name: p.agent.clone(),
        publish_schemas: p.publish_schemas.unwrap_or(true) && writes_files,
        requests_prompt: None,
        provider,
        prompt,
        output: p.output.unwrap_or(OutputKind::Envelope),
        language: p.language.clone(),
        schema: p.schema.clone(),
        max_attempts: p.max_attempts.unwrap_or(2).clamp(1, 10),
        context_steps: p
            .context_steps
            .iter()
            .filter_map(|c| cx.steps.get(c).copied())
            .collect(),
        context_files,
        untrusted_files,
        write_artifacts: p.write_artifacts.unwrap_or(!read_only) && !read_only,
        read_only,
        budget: p
            .budget
            .unwrap_or_default()
            .narrowest(agent.budget.unwrap_or_default()),
        replay_file,
        check_code: None,
        agent,
    })
}

/// Whether a step is read-only: its agent's `mode` or its own. A step may
/// make a read-write agent read-only, never a read-only agent read-write.
pub(crate) fn read_only(agent: Option<AgentMode>, step: Option<AgentMode>) -> Result<bool, String> {
    match (agent, step) {
        (Some(AgentMode::ReadOnly), Some(AgentMode::ReadWrite)) => Err(
            "`mode: read-write` cannot widen a read-only agent: its definition says `mode: read-only`"
                .to_owned(),
        ),
        (a, s) => Ok(a == Some(AgentMode::ReadOnly) || s == Some(AgentMode::ReadOnly)),
    }
}

/// The checks of an agent step's parameters.
fn check_params(cx: &CheckCx<'_>, p: &Node, out: &mut Vec<Diagnostic>) {
    let (file, agents, sid) = (cx.file, cx.agents, cx.sid);
    if let Some(n) = p.child("agent")
        && let Some(name) = str_of(n)
        && agents.and_then(|a| a.child(name)).is_none()
    {
        let names: Vec<&str> = match agents.map(|a| &a.value) {
            Some(NodeValue::Map(pairs)) => pairs.iter().map(|(k, _)| k.name.as_str()).collect(),
            _ => Vec::new(),
        };
        let d = Diagnostic::at(
            file,
            n.pos,
            format!("step `{sid}` uses agent `{name}`, which is not declared under `agents:`"),
        );
        out.push(match did_you_mean(name, names.iter().copied()) {
            Some(s) => d.help(format!("did you mean `{s}`?")),
            None => d.help("declare it under `agents:` with a `command`, an `openai` endpoint or a `replay` file"),
        });
    }
    match (p.child("prompt"), p.child("prompt_file")) {
        (None, None) => out.push(
            Diagnostic::at(
                file,
                p.pos,
                format!("the parameters of step `{sid}` have neither `prompt` nor `prompt_file`"),
            )
            .help(
                "give the prompt inline with `prompt:` or in a workspace file with `prompt_file:`",
            ),
        ),
        (Some(a), Some(_)) => out.push(
            Diagnostic::at(
                file,
                a.pos,
                format!("step `{sid}` sets both `prompt` and `prompt_file`"),
            )
            .help("keep one of them"),
        ),
        (Some(a), None) if str_of(a).is_some_and(|s| s.trim().is_empty()) => out.push(
            Diagnostic::at(file, a.pos, format!("the prompt of step `{sid}` is empty"))
                .help("say what the agent should do"),
        ),
        _ => {}
    }
    let output = p.child("output").and_then(str_of).unwrap_or("envelope");
    for (key, wanted) in [
        ("language", "code"),
        ("schema", "json"),
        ("write_artifacts", "envelope"),
    ] {
        if let Some(n) = p.child(key)
            && output != wanted
        {
            out.push(
                Diagnostic::at(
                    file,
                    n.pos,
                    format!(
                        "`{key}` of step `{sid}` only applies to `output: {wanted}`, not `{output}`"
                    ),
                )
                .help(format!("remove `{key}` or set `output: {wanted}`")),
            );
        }
    }
    if output == "json" {
        match p.child("schema") {
            None => out.push(
                Diagnostic::at(file, p.pos, format!("step `{sid}` has `output: json` but no `schema`"))
                    .help("give the JSON Schema the answer must satisfy; plangate does not accept unchecked JSON"),
            ),
            Some(n) => {
                if let Err(e) = jsonschema::validator_for(&n.to_json()) {
                    out.push(
                        Diagnostic::at(file, n.pos, format!("the `schema` of step `{sid}` is not a valid JSON Schema: {e}"))
                            .help("fix the schema (draft 2020-12)"),
                    );
                }
            }
        }
    }
    check_context(cx, p, out);
}

/// `context_steps` must be dependencies; `prompt_file` and `context_files` stay inside the workspace.
fn check_context(cx: &CheckCx<'_>, p: &Node, out: &mut Vec<Diagnostic>) {
    let (file, step, sid, known) = (cx.file, cx.step, cx.sid, cx.known);
    let deps: Vec<&str> = items(step.child("dependencies"))
        .iter()
        .filter_map(str_of)
        .collect();
    for n in items(p.child("context_steps")) {
        let Some(c) = str_of(n) else { continue };
        if !deps.contains(&c) {
            let d = Diagnostic::at(
                file,
                n.pos,
                format!("context step `{c}` of step `{sid}` is not one of its dependencies"),
            );
            out.push(if known.contains(&c) {
                d.help(format!("add `{c}` to the `dependencies` of `{sid}` so its output exists when `{sid}` runs"))
            } else {
                d.help("name a step this one depends on")
            });
        }
    }
    for key in ["prompt_file"] {
        if let Some(n) = p.child(key)
            && let Some(s) = str_of(n)
            && let Err(why) = relative_inside(s)
        {
            out.push(
                Diagnostic::at(file, n.pos, format!("`{key}` of step `{sid}` {why}"))
                    .help("give a path relative to the workspace that stays inside it"),
            );
        }
    }
    for n in items(p.child("context_files")) {
        let n = n.child("path").unwrap_or(n);
        if let Some(s) = str_of(n)
            && let Err(why) = relative_inside(s)
        {
            out.push(
                Diagnostic::at(file, n.pos, format!("context file of step `{sid}` {why}"))
                    .help("give a path relative to the workspace that stays inside it"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read_only;
    use crate::format::agent::AgentMode::{ReadOnly, ReadWrite};

    /// A step narrows its agent to read-only, never widens a read-only one.
    #[test]
    fn a_step_may_narrow_its_agents_mode_never_widen_it() {
        for (agent, step, want) in [
            (None, None, Some(false)),
            (Some(ReadWrite), None, Some(false)),
            (None, Some(ReadWrite), Some(false)),
            (None, Some(ReadOnly), Some(true)),
            (Some(ReadWrite), Some(ReadOnly), Some(true)),
            (Some(ReadOnly), None, Some(true)),
            (Some(ReadOnly), Some(ReadOnly), Some(true)),
            (Some(ReadOnly), Some(ReadWrite), None),
        ] {
            assert_eq!(read_only(agent, step).ok(), want, "{agent:?} {step:?}");
        }
    }
}
