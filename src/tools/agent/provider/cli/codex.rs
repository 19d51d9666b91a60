//! Codex's `codex exec --json`: JSON Lines of thread events
//! (`codex-rs/exec/src/exec_events.rs`, `docs/exec.md`):
//!
//! ```json
//! {"type":"thread.started","thread_id":"0199a213-..."}
//! {"type":"turn.started"}
//! {"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"..."}}
//! {"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","status":"in_progress"}}
//! {"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"src/a.rs","kind":"update"}],"status":"completed"}}
//! {"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"..."}}
//! {"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
//! ```
//!
//! A failed turn is `{"type":"turn.failed","error":{"message":"..."}}`, a
//! fatal stream error `{"type":"error","message":"..."}`; an item of type
//! `error` is a non-fatal notice. The answer is the last `agent_message`;
//! Codex reports tokens (cached ones are part of `input_tokens`), no cost.

use serde_json::Value;

use super::{CliRun, n, s};
use crate::model::Usage;

/// `codex exec --json`, event by event.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    run: CliRun,
    usage: Option<Usage>,
    /// The last fatal error (`turn.failed` or `error`, and what it said) not followed by a completed turn.
    fatal: Option<(&'static str, String)>,
    completed: bool,
}

impl Stream {
    /// Take one event.
    pub(crate) fn event(&mut self, v: &Value) {
        match s(v, "type") {
            Some("thread.started") => {
                self.run.session.session_id = s(v, "thread_id").map(str::to_owned);
            }
            Some("turn.started") => {
                self.run.session.turns = Some(self.run.session.turns.unwrap_or(0) + 1);
            }
            Some("item.completed") => {
                if let Some(item) = v.get("item") {
                    self.item(item);
                }
            }
            Some("turn.completed") => {
                let u = v.get("usage").cloned().unwrap_or(Value::Null);
                let turn = Usage {
                    input_tokens: n(&u, "input_tokens"),
                    output_tokens: n(&u, "output_tokens"),
                    cache_read_input_tokens: n(&u, "cached_input_tokens"),
                    ..Usage::default()
                };
                self.usage.get_or_insert_with(Usage::default).add(&turn);
                self.completed = true;
                self.fatal = None;
            }
            Some("turn.failed") => {
                let msg = v
                    .get("error")
                    .and_then(|e| s(e, "message"))
                    .unwrap_or("no message");
                self.fatal = Some((
                    "turn.failed",
                    format!("failed its turn (turn.failed): {}", one(msg)),
                ));
                self.completed = false;
            }
            Some("error") => {
                let msg = s(v, "message").unwrap_or("no message");
                self.fatal = Some(("error", format!("reported an error: {}", one(msg))));
                self.completed = false;
            }
            _ => {}
        }
    }

    fn item(&mut self, item: &Value) {
        match s(item, "type") {
            Some("agent_message") => self.run.text = s(item, "text").map(str::to_owned),
            Some("command_execution") => self.run.session.commands += 1,
            Some("file_change") => {
                let status = s(item, "status").unwrap_or("completed");
                for c in item
                    .get("changes")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let kind = s(c, "kind").unwrap_or("change");
                    let path = s(c, "path").unwrap_or("?");
                    let failed = if status == "failed" { " (failed)" } else { "" };
                    self.run
                        .session
                        .file_changes
                        .push(format!("{kind} {path}{failed}"));
                }
            }
            Some("error") => {
                let msg = s(item, "message").unwrap_or("no message");
                self.run.session.warnings.push(one(msg));
            }
            _ => {}
        }
    }

    /// Tokens so far (of the completed turns); Codex gives no cost.
    pub(crate) fn so_far(&self) -> (u64, Option<f64>) {
        (self.usage.map_or(0, |u| u.tokens()), None)
    }

    /// What the stream said: a failure when its last word was an error or
    /// no turn completed.
    pub(crate) fn finish(mut self, ended: bool) -> CliRun {
        self.run.usage = self.usage;
        let (outcome, failure) = match (self.fatal, self.completed, ended) {
            (Some((o, f)), _, _) => (o, Some(f)),
            (None, true, _) => ("turn.completed", None),
            (None, false, true) => (
                "incomplete",
                Some("ended its stream without turn.completed".to_owned()),
            ),
            (None, false, false) => (
                "incomplete",
                Some("was stopped before its turn completed".to_owned()),
            ),
        };
        self.run.failure = failure;
        self.run.session.outcome = Some(outcome.to_owned());
        self.run
    }
}

fn one(msg: &str) -> String {
    super::super::one_line(msg)
}
