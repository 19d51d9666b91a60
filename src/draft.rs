//! `plangate draft`: an agent drafts a plan; plangate checks it and writes it
//! for review. It never runs it.
//!
//! The answer goes through the same fail-close path as an `agent` step with
//! `output: code` (one fenced YAML block), and the block must then pass the
//! plan validator; the validator's diagnostics go back to the agent as
//! retry feedback, like the parser's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::model::Risk;
use crate::model::StepStatus;
use crate::model::ToolName;
use crate::model::{Category, Rejection};
use crate::plan::raw::{OutputKind, ProviderKind};
use crate::plan::{Action, AgentAction, AgentDef, PromptSource, Step};
use crate::policy::env::Scope;
use crate::tools::{RunShared, StepContext, ToolEnv, agent};

/// What the drafting agent is told.
pub(crate) fn draft_prompt(objective: &str, max_steps: u32) -> String {
    format!(
        "Write a plangate plan for this objective:\n\n{objective}\n\n\
plangate runs the plan unattended in CI. The plan is YAML:\n\
version: 1\n\
id: <short-id>            # letters, digits, - and _\n\
objective: <one sentence>\n\
steps:                    # at most {max_steps} steps\n  \
- id: <step-id>\n    \
tool: bash\n    \
description: <what it does>\n    \
parameters: {{ command: \"<bash command>\" }}\n    \
risk_level: safe | moderate | dangerous   # be honest: reads are safe, writes moderate\n    \
timeout: 120          # seconds\n    \
dependencies: [<ids of steps that must succeed first>]\n    \
expected_output: <optional regex stdout must match>\n    \
rollback_command: <optional bash command undoing the step>\n\n\
Rules: use only `bash` steps; prefer read-only commands; never use sudo, never write outside \
the repository, never pipe downloads into a shell; keep each command short; no secrets in commands."
    )
}

/// Plan-validator diagnostics as retry feedback.
fn check_plan_text(text: &str) -> Vec<Rejection> {
    match crate::plan::load_plan_str("draft.yaml", text) {
        Ok(_) => Vec::new(),
        Err(diags) => diags
            .into_iter()
            .map(|d| Rejection {
                category: Category::Schema,
                line: usize::try_from(d.line).unwrap_or(0),
                column: usize::try_from(d.column).unwrap_or(0),
                message: match d.help {
                    Some(h) => format!("{} ({h})", d.message),
                    None => d.message,
                },
            })
            .collect(),
    }
}

/// Everything `draft` needs.
#[derive(Debug, Clone)]
pub(crate) struct DraftRequest {
    /// What the plan must achieve.
    pub objective: String,
    /// The agent's name and definition.
    pub agent_name: String,
    /// The agent.
    pub agent: AgentDef,
    /// Where relative replay files are found.
    pub agents_dir: PathBuf,
    /// The workspace (canonical).
    pub workspace: PathBuf,
    /// Where evidence goes (prompts, answers).
    pub out_dir: PathBuf,
    /// Attempts.
    pub max_attempts: u32,
}

/// The drafted plan text, or why there is none.
pub(crate) enum DraftResult {
    /// Accepted and valid.
    Plan {
        /// The YAML.
        text: String,
        /// Attempts used.
        attempts: u32,
    },
    /// Every answer was refused; the last rejections.
    Rejected(String),
    /// The agent could not be asked.
    Failed(String),
}

/// Ask the agent, check the answer, return the plan text.
/// The built-in policy; `draft` takes no policy file: the operator who runs
/// it chose the agent, so its `network: true` is allowed.
fn draft_policy() -> crate::model::EffectivePolicy {
    let mut policy = crate::policy::cap::resolve(
        &crate::model::PolicyBlock::default(),
        crate::policy::cap::Overrides::default(),
        None,
    );
    policy.allow_any_network = true;
    policy
}

/// An agent CLI drafts in the sandbox of an agent step (moderate: the
/// workspace writable, the network only when its definition says so); when
/// none works here, it is not run (Err: why).
fn draft_sandbox(
    req: &DraftRequest,
    provider: ProviderKind,
) -> Result<Option<crate::model::StepSandbox>, String> {
    if provider != ProviderKind::Command {
        return Ok(None);
    }
    let availability = crate::sandbox::preflight(crate::sandbox::Choice::Auto);
    let policy = draft_policy();
    let request = crate::sandbox::Request {
        network: req.agent.network,
        egress: req.agent.egress.clone(),
        ..crate::sandbox::Request::default()
    };
    crate::sandbox::plan_for(&request, Risk::Moderate, Some(&availability), &policy)
        .map(Some)
        .map_err(|why| format!("agent `{}` not run: {why}", req.agent_name))
}

pub(crate) async fn draft(req: &DraftRequest) -> DraftResult {
    let provider = req.agent.provider.unwrap_or(ProviderKind::Command);
    let action = AgentAction {
        agent_name: req.agent_name.clone(),
        agent: req.agent.clone(),
        provider,
        prompt: PromptSource::Inline(draft_prompt(&req.objective, 20)),
        output: OutputKind::Code,
        language: Some("yaml".to_owned()),
        schema: None,
        max_attempts: req.max_attempts,
        context_steps: Vec::new(),
        context_files: Vec::new(),
        untrusted_files: std::collections::BTreeMap::new(),
        write_artifacts: false,
        // Drafting a plan edits nothing: whatever the agent changed is only reported.
        read_only: true,
        budget: req.agent.budget.unwrap_or_default(),
        replay_file: req.agent.file.as_ref().map(|f| req.agents_dir.join(f)),
        check_code: Some(check_plan_text),
        publish_schemas: false,
        requests_prompt: None,
    };
    let step = Step {
        id: "draft".to_owned(),
        index: 0,
        tool: ToolName::Agent,
        action: Action::Agent(Box::new(action.clone())),
        parameters: serde_json::Map::new(),
        description: None,
        expected_output: None,
        rollback_command: None,
        declared_risk: Risk::Safe,
        requires_approval: false,
        timeout: Duration::from_secs(3600),
        deps: Vec::new(),
        template: "draft".into(),
        matrix: BTreeMap::new(),
        matrix_values: BTreeMap::new(),
        condition: None,
        continue_on_error: false,
        retry: None,
        env: BTreeMap::new(),
        secrets: std::collections::BTreeSet::new(),
        pos: crate::plan::Pos::default(),
        network: false,
    };
    // An agent CLI drafts in the sandbox of an agent step (moderate: the
    // workspace writable, the network only when its definition says so); when
    // none works here, it is not run.
    let sandbox = match draft_sandbox(req, provider) {
        Ok(s) => s,
        Err(why) => return DraftResult::Failed(why),
    };
    // The agent's CLI gets the allow-list and its own secrets, like in a run.
    let scope = Scope::new(crate::process::own_env(), &[]);
    let declared = step.secret_names();
    if let Some(first) = scope.missing(&declared).first() {
        return DraftResult::Failed(format!(
            "agent `{}` needs `{first}` (its `secrets:`, `api_key_env` or `headers`), which is unset or empty in plangate's environment; set it, or stop declaring it",
            req.agent_name
        ));
    }
    crate::redact::remember_secrets(scope.secret_values(&declared));
    let (_tx, cancel) = tokio::sync::watch::channel(false);
    let art = req.out_dir.join("artifacts").join("draft");
    let ctx = StepContext {
        sandbox,
        judge: None,
        extra_readable: Vec::new(),
        env: ToolEnv {
            workspace: req.workspace.clone(),
            home: crate::environ::var_os("HOME").map(PathBuf::from),
            allowed_hosts: None,
            secret_hosts: crate::policy::hosts::SecretHosts::default(),
            sandbox: None,
            scope: Arc::new(scope),
            git_supply: Arc::default(),
        },
        out_dir: req.out_dir.clone(),
        run_vars: BTreeMap::from([(
            "PLANGATE_STEP_ARTIFACTS".to_owned(),
            art.display().to_string(),
        )]),
        artifacts_dir: art,
        artifacts_rel: "artifacts/draft".to_owned(),
        max_output_bytes: 16 * 1024 * 1024,
        kill_grace: Duration::from_secs(5),
        cancel,
        shared: Arc::new(RunShared::new(crate::model::BudgetBlock::default())),
        step_ids: Arc::new(vec!["draft".to_owned()]),
        fail_on_secrets: true,
        record: None,
        pulse: None,
        on_retry: None,
        on_egress: None,
        template_values: BTreeMap::new(),
        overlay: None,
    };
    let out = agent::run(&action, &step, &ctx, SystemTime::now()).await;
    match out.status {
        StepStatus::Success => match out.result_file.as_deref().map(std::fs::read_to_string) {
            Some(Ok(text)) => DraftResult::Plan {
                text,
                attempts: out.attempts,
            },
            _ => DraftResult::Failed("the accepted plan could not be read back".to_owned()),
        },
        StepStatus::Rejected => DraftResult::Rejected(out.error.unwrap_or_default()),
        _ => DraftResult::Failed(
            out.error
                .unwrap_or_else(|| "the agent call failed".to_owned()),
        ),
    }
}

/// Where the draft's evidence goes by default.
pub(crate) fn default_out_dir(workspace: &Path, run_id: &str) -> PathBuf {
    crate::format::paths::drafts_folder(workspace).join(run_id)
}
