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
    /// Items in the shape from before Codex renamed `item_type` to `type` (and
    /// `assistant_message` to `agent_message`, openai/codex#4610).
    old_items: u64,
    /// An item that names two different types (`type` and `item_type`).
    conflict: Option<String>,
    /// The item types seen, for the hint when no `agent_message` came.
    kinds: std::collections::BTreeSet<String>,
    /// Lines in the `{"id", "msg"}` shape of Codex's older protocol events.
    protocol_lines: u64,
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
            None if v.get("msg").is_some_and(Value::is_object) => self.protocol_lines += 1,
            _ => {}
        }
    }

    /// An item's type: `type`, or the older `item_type` (`assistant_message`
    /// then meant `agent_message`); None when it names none, or two.
    fn kind<'a>(&mut self, item: &'a Value) -> Option<&'a str> {
        let old = s(item, "item_type").map(|t| match t {
            "assistant_message" => "agent_message",
            t => t,
        });
        match (s(item, "type"), old) {
            (Some(t), None) => Some(t),
            (None, Some(t)) => {
                self.old_items += 1;
                Some(t)
            }
            (Some(t), Some(o)) if t == o => Some(t),
            (Some(t), Some(_)) => {
                self.conflict.get_or_insert_with(|| {
                    format!(
                        "printed an item whose `type` ({t}) and `item_type` ({}) differ; it reads two ways",
                        s(item, "item_type").unwrap_or("?")
                    )
                });
                None
            }
            (None, None) => None,
        }
    }

    fn item(&mut self, item: &Value) {
        let kind = self.kind(item);
        if let Some(k) = kind {
            self.kinds.insert(k.to_owned());
        }
        match kind {
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
        if let Some(c) = self.conflict {
            self.run.failure = Some(c);
            self.run.text = None;
        }
        if self.old_items > 0 {
            self.run.session.warnings.push(format!(
                "{} item(s) in Codex's older event shape (`item_type`, `assistant_message`), read as `type` and `agent_message`; update Codex",
                self.old_items
            ));
        }
        self.run.no_answer_hint = Some(if self.protocol_lines > 0 && self.kinds.is_empty() {
            format!(
                "its {} line(s) are `{{\"id\", \"msg\"}}` protocol events of a Codex from before `exec --json` printed thread events; update Codex (codex-jsonl reads thread.started, item.completed, turn.completed)",
                self.protocol_lines
            )
        } else if self.kinds.is_empty() {
            "no item.completed event came; codex-jsonl reads `codex exec --json` thread events (thread.started, item.completed, turn.completed): check `codex --version`".to_owned()
        } else {
            format!(
                "no agent_message item came (item types seen: {}); codex-jsonl reads `codex exec --json` thread events: check `codex --version`",
                self.kinds.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        });
        if self.protocol_lines > 0 && self.kinds.is_empty() && self.run.failure.is_some() {
            // Not the thread events at all: say so rather than "no turn.completed".
            self.run.failure = Some(format!(
                "printed no thread events: {}",
                self.run.no_answer_hint.clone().unwrap_or_default()
            ));
        }
        self.run
    }
}

/// A `file_change` entry (`KIND PATH`, then ` (failed)` when it failed)
/// with its path as the repository knows it: Codex names the files it
/// changed by their absolute path in the staged copy (one of `roots`), shown
/// relative to the copy; an absolute path elsewhere is marked as outside.
pub(crate) fn relative_change(entry: &str, roots: &[&std::path::Path]) -> String {
    let Some((kind, rest)) = entry.split_once(' ') else {
        return entry.to_owned();
    };
    let (path, failed) = match rest.strip_suffix(" (failed)") {
        Some(p) => (p, " (failed)"),
        None => (rest, ""),
    };
    let p = std::path::Path::new(path);
    if !p.is_absolute() {
        return entry.to_owned();
    }
    let inside = roots.iter().find_map(|r| {
        p.strip_prefix(r).ok().filter(|rel| {
            rel.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
    });
    match inside {
        Some(rel) if rel.as_os_str().is_empty() => format!("{kind} .{failed}"),
        Some(rel) => format!("{kind} {}{failed}", rel.display()),
        None => format!("{kind} {path} (outside the repository){failed}"),
    }
}

fn one(msg: &str) -> String {
    super::super::one_line(msg)
}
