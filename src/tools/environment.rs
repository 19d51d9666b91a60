//! A step's environment as the report and the decision see it: the names
//! of the variables its processes get, and the declared secrets it cannot
//! run without.

use super::context::StepContext;
use super::spec::Processes;
use super::spec::ToolEnv;
use super::step::Step;

/// The names of the variables a step's processes get, for the report; None
/// for a step that starts no process (in-process tools, agents over HTTP).
pub(super) fn environment_record(
    step: &Step,
    ctx: &StepContext,
) -> Option<crate::model::StepEnvironment> {
    let starts_process = step.processes() != Processes::None;
    starts_process.then(|| {
        let c = ctx.scoped_env(step);
        crate::model::StepEnvironment {
            variables: c.variables,
            write_tokens: c
                .secrets
                .iter()
                .filter(|n| crate::policy::env::WRITE_TOKENS.contains(&n.as_str()))
                .cloned()
                .collect(),
            secrets: c.secrets,
        }
    })
}

/// Why a step cannot run: a secret it declares is unset or empty in
/// plangate's environment (`engine::decide_all` blocks a step that may run on it).
pub(crate) fn missing_secrets(step: &Step, env: &ToolEnv) -> Option<String> {
    let declared = step.secret_names();
    let missing = env.scope.missing(&declared);
    (!missing.is_empty()).then(|| {
        let names: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "the secret{} {} (declared in `secrets:`, or the agent's `api_key_env` or `headers`) {} unset or empty in plangate's environment; set {} in the CI job's environment, or stop declaring {}",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "them" },
        )
    })
}
