//! Agent providers: how an `agent` step reaches its agent. Each provider is
//! one file implementing [`Provider`]: the agent keys it takes, its risk
//! floor and its call. [`of`] is the table from [`ProviderKind`] (an
//! exhaustive `match`, so a provider missing from it is a compile error).

mod anthropic;
pub(crate) mod cli;
mod command;
mod http;
mod openai;
mod replay;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::format::agent::ProviderKind;
use crate::model::Risk;
use crate::model::{AgentSession, HttpAttempt, Usage};
use crate::tools::StepContext;
use crate::tools::params::agent::AgentAction;
use crate::tools::step::Step;

/// Every key of an agent definition that belongs to one provider or another
/// (the keys every provider takes, such as `timeout`, are not listed).
pub(crate) fn specific_keys() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = ProviderKind::ALL
        .iter()
        .flat_map(|k| of(*k).keys().iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The provider of `kind`.
pub(crate) fn of(kind: ProviderKind) -> &'static dyn Provider {
    match kind {
        ProviderKind::Command => &command::Command,
        ProviderKind::Openai => &openai::OpenAi,
        ProviderKind::Anthropic => &anthropic::Anthropic,
        ProviderKind::Replay => &replay::Replay,
    }
}

/// One agent call's inputs.
#[derive(Clone, Copy)]
pub(crate) struct Call<'a> {
    /// The step's agent action.
    pub action: &'a AgentAction,
    /// The step.
    pub step: &'a Step,
    /// The run around it.
    pub ctx: &'a StepContext,
    /// The prompt to send.
    pub prompt: &'a str,
    /// 1-based attempt number.
    pub attempt: u32,
    /// sha256 of the prompt, hex.
    pub digest: &'a str,
    /// Most characters of an answer.
    pub max_out: u64,
    /// Time for this call (the agent's `timeout`, within the step's), retries included.
    pub timeout: Duration,
    /// A private, writable home for an agent CLI (`HOME`, the XDG folders);
    /// `ctx`'s workspace is then the staged copy it works in.
    pub home: Option<&'a std::path::Path>,
    /// Where HTTP providers record each request.
    pub http: &'a HttpLog,
    /// What the step's earlier attempts used (its budget counts them).
    pub spent: crate::model::Usage,
}

/// The HTTP requests of one call (the report's `http_attempts`).
#[derive(Debug, Default)]
pub(crate) struct HttpLog(std::sync::Mutex<Vec<HttpAttempt>>);

impl HttpLog {
    fn with<T>(&self, f: impl FnOnce(&mut Vec<HttpAttempt>) -> T) -> T {
        let mut v = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut v)
    }

    /// Record a request.
    fn push(&self, a: HttpAttempt) {
        self.with(|v| v.push(a));
    }

    /// Record the wait after the last request.
    fn set_wait(&self, ms: u64) {
        self.with(|v| {
            if let Some(last) = v.last_mut() {
                last.wait_ms = Some(ms);
            }
        });
    }

    /// Requests so far.
    fn len(&self) -> usize {
        self.with(|v| v.len())
    }

    /// "429, 503, connection error": each request's status.
    fn statuses(&self) -> String {
        self.with(|v| {
            v.iter()
                .map(|a| {
                    a.status
                        .map_or_else(|| "no reply".to_owned(), |s| s.to_string())
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
    }

    /// Every request, in order.
    pub(crate) fn take(&self) -> Vec<HttpAttempt> {
        self.with(std::mem::take)
    }
}

/// One answer from a provider.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The answer text (handed to the guard).
    pub text: String,
    /// Token counts, when the provider reports them.
    pub usage: Option<Usage>,
    /// The provider says it stopped early (e.g. `finish_reason: length`).
    pub cut_short: Option<String>,
    /// What the provider adds besides the text (an agent CLI's session, kept files).
    pub extra: Extra,
}

/// What a provider reports besides an answer's text.
#[derive(Debug, Default)]
pub(crate) struct Extra {
    /// What an agent CLI said about its session.
    pub session: Option<AgentSession>,
    /// More evidence of the attempt in the artifact folder (relative to the output directory),
    /// e.g. the CLI's raw JSON Lines.
    pub files: Vec<String>,
    /// Processes the agent CLI left running, which its sandbox supervisor killed.
    pub lingering: usize,
    /// Files the CLI wrote as its own output (Codex's `-o` file), relative to the workspace:
    /// never the agent's edits, never applied.
    pub output_files: Vec<String>,
}

/// What a call that gave no answer still cost and left behind.
#[derive(Debug, Default)]
pub(crate) struct Spent {
    /// The tokens and cost the provider reported (counted against the budget).
    pub usage: Option<Usage>,
    /// Session facts and kept files.
    pub extra: Extra,
}

/// Why a provider gave no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The call failed; the step fails.
    #[error("{0}")]
    Failed(String),
    /// The call ran out of time; the step times out.
    #[error("{0}")]
    TimedOut(String),
    /// The run is stopping.
    #[error("the agent was stopped")]
    Stopped,
    /// A failure (never itself `After`) after the agent spent tokens or left evidence.
    #[error("{error}")]
    After {
        /// The failure.
        error: Box<CallError>,
        /// What it cost and left.
        spent: Box<Spent>,
    },
}

impl CallError {
    /// This failure, with what the call spent and left.
    pub(crate) fn after(self, spent: Spent) -> CallError {
        let (error, mut before) = self.split();
        before.usage = match (before.usage, spent.usage) {
            (Some(mut a), Some(b)) => {
                a.add(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        before.extra.session = spent.extra.session.or(before.extra.session);
        before.extra.files.extend(spent.extra.files);
        CallError::After {
            error: Box::new(error),
            spent: Box::new(before),
        }
    }

    /// The failure and what it spent (nothing, for a plain failure).
    pub(crate) fn split(self) -> (CallError, Spent) {
        match self {
            CallError::After { error, spent } => (*error, *spent),
            e => (e, Spent::default()),
        }
    }
}

/// A call in flight.
pub(crate) type CallFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Answer, CallError>> + Send + 'a>>;

/// How `agent` steps reach one kind of agent.
pub(crate) trait Provider: Sync {
    /// The agent keys this provider needs.
    fn required_keys(&self) -> &'static [&'static str];
    /// The provider-specific agent keys it takes (the required ones included).
    fn keys(&self) -> &'static [&'static str];
    /// The risk of a step by this provider alone, and why.
    fn risk_floor(&self, a: &AgentAction) -> (Risk, String);
    /// Ask the agent once.
    fn call<'a>(&'a self, call: Call<'a>) -> CallFuture<'a>;
}

/// The schema to ask an HTTP provider's structured output for: an `output:
/// json` step's schema when it describes an object (what both APIs take) and
/// the agent does not set `structured_output: false`.
fn structured_schema(a: &AgentAction) -> Option<&serde_json::Value> {
    if a.output != crate::tools::params::agent::OutputKind::Json
        || a.agent.structured_output == Some(false)
    {
        return None;
    }
    a.schema
        .as_ref()
        .filter(|s| s.get("type").and_then(serde_json::Value::as_str) == Some("object"))
}

/// One line of at most 300 characters (for messages quoting an answer),
/// redacted before it is cut.
pub(crate) fn one_line(s: &str) -> String {
    let line = crate::redact::cut(s.lines().next().unwrap_or(""), 300);
    if line.is_empty() {
        "(no summary)".to_owned()
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::{ProviderKind, of, specific_keys};

    #[test]
    fn every_provider_declares_its_required_keys_among_its_keys() {
        for k in ProviderKind::ALL {
            let p = of(k);
            for r in p.required_keys() {
                assert!(p.keys().contains(r), "{k:?}: {r}");
            }
        }
        assert!(specific_keys().contains(&"base_url"));
    }
}
