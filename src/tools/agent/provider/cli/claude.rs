//! Claude Code in print mode (`claude -p`).
//!
//! `--output-format json` prints one result object; `stream-json` (which
//! needs `--verbose` in print mode) prints JSON Lines: a `system` event
//! (`subtype: init`, `session_id`, `model`, `tools`), `assistant` and `user`
//! messages (each assistant message with the API's `usage`), then the same
//! result object as the last line:
//!
//! ```json
//! {"type": "result", "subtype": "success", "is_error": false, "result": "...",
//!  "num_turns": 3, "duration_ms": 5120, "session_id": "...", "total_cost_usd": 0.0123,
//!  "usage": {"input_tokens": 12, "cache_creation_input_tokens": 2048,
//!            "cache_read_input_tokens": 10240, "output_tokens": 310},
//!  "permission_denials": []}
//! ```
//!
//! `subtype` is `success`, or `error_max_turns`, `error_during_execution`,
//! `error_max_budget_usd`, `error_max_structured_output_retries` (then with
//! `errors: [..]` and no `result`); a failed API call is `success` with
//! `is_error: true` and the message in `result`. The generic `json` format
//! reads the same object without requiring `type`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::super::anthropic::usage_of;
use super::{CliRun, ReadError, s};
use crate::model::Usage;

/// The result object (`--output-format json`, the last event of
/// `stream-json`, or the generic `json` format when `typed` is false).
pub(super) fn object(v: &Value, typed: bool) -> Result<CliRun, ReadError> {
    if typed && s(v, "type") != Some("result") {
        return Err(ReadError::Shape(format!(
            "the object's `type` is {}, not \"result\"",
            v.get("type")
                .map_or_else(|| "missing".to_owned(), Value::to_string)
        )));
    }
    let mut run = CliRun::default();
    let cost = v.get("total_cost_usd").and_then(Value::as_f64);
    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
        let mut usage = usage_of(u);
        usage.cost_usd = cost.unwrap_or(0.0);
        run.usage = Some(usage);
    } else if let Some(c) = cost {
        run.usage = Some(Usage {
            cost_usd: c,
            ..Usage::default()
        });
    }
    run.session.session_id = s(v, "session_id").map(str::to_owned);
    run.session.turns = v.get("num_turns").and_then(Value::as_u64);
    let denials = v
        .get("permission_denials")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    run.session.permission_denials = denials.len() as u64;
    if !denials.is_empty() {
        let mut tools: Vec<String> = denials
            .iter()
            .map(|d| super::super::one_line(s(d, "tool_name").unwrap_or("?")))
            .collect();
        tools.dedup();
        run.session.warnings.push(format!(
            "its permission mode refused {} tool call(s) ({}): it could not run everything it was asked to",
            denials.len(),
            tools.join(", ")
        ));
    }
    let subtype = s(v, "subtype");
    run.session.outcome = subtype.map(str::to_owned);
    let is_error = v.get("is_error").and_then(Value::as_bool) == Some(true);
    let result = s(v, "result");
    run.failure = failure(subtype, is_error, result, v, run.session.turns);
    if run.failure.is_none() {
        run.text = Some(
            result
                .ok_or_else(|| ReadError::Shape("the result has no string `result`".to_owned()))?
                .to_owned(),
        );
    }
    Ok(run)
}

/// `--output-format json --verbose`: one JSON array of the session's
/// messages (`system`, `assistant`, `user`, ...), the result object last.
/// Exactly one result, and last: otherwise the array reads two ways.
pub(super) fn array(items: &[Value]) -> Result<CliRun, ReadError> {
    if let Some(i) = items.iter().position(|m| !m.is_object()) {
        return Err(ReadError::Shape(format!(
            "element {} of the array of messages is not an object",
            i + 1
        )));
    }
    let results: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, m)| s(m, "type") == Some("result"))
        .map(|(i, _)| i)
        .collect();
    let last = match results.as_slice() {
        [] => {
            return Err(ReadError::Shape(
                "the array of messages has no result message (`type: result`)".to_owned(),
            ));
        }
        [i] if *i + 1 == items.len() => *i,
        [i] => {
            return Err(ReadError::Shape(format!(
                "the result message is element {} of {}, not the last; the array reads two ways",
                i + 1,
                items.len()
            )));
        }
        many => {
            return Err(ReadError::Shape(format!(
                "the array of messages holds {} result messages; it reads two ways",
                many.len()
            )));
        }
    };
    let mut run = object(&items[last], true)?;
    let mut stream = Stream::default();
    for m in items {
        stream.event(m);
    }
    if run.session.session_id.is_none() {
        run.session.session_id = stream.session_id;
    }
    Ok(run)
}

/// What a result says went wrong, if anything.
fn failure(
    subtype: Option<&str>,
    is_error: bool,
    result: Option<&str>,
    v: &Value,
    turns: Option<u64>,
) -> Option<String> {
    let errors: Vec<&str> = v
        .get("errors")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let detail = errors
        .first()
        .copied()
        .or(result.filter(|_| is_error))
        .map(|m| format!(": {}", super::super::one_line(m)))
        .unwrap_or_default();
    let after = turns
        .map(|t| format!(" after {t} turns"))
        .unwrap_or_default();
    match subtype {
        None | Some("success") if !is_error => None,
        None | Some("success") => Some(format!("reported an error{detail}")),
        Some("error_max_turns") => {
            Some(format!("ran out of turns{after} (error_max_turns){detail}"))
        }
        Some("error_during_execution") => Some(format!(
            "failed during execution{after} (error_during_execution){detail}"
        )),
        Some("error_max_budget_usd") => Some(format!(
            "hit its own cost limit{after} (error_max_budget_usd){detail}"
        )),
        Some(other) => Some(format!("ended with `{other}`{after}{detail}")),
    }
}

/// `stream-json`, event by event.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    session_id: Option<String>,
    /// Each assistant message's latest usage, by message id (a message
    /// split in several events repeats its usage).
    messages: BTreeMap<String, Value>,
    /// The result event, once seen.
    result: Option<Value>,
    /// Tool uses seen in assistant messages.
    tools: u64,
}

impl Stream {
    /// Take one event.
    pub(crate) fn event(&mut self, v: &Value) {
        match s(v, "type") {
            Some("system") => {
                if let Some(id) = s(v, "session_id") {
                    self.session_id.get_or_insert_with(|| id.to_owned());
                }
            }
            Some("assistant") => {
                let Some(m) = v.get("message") else { return };
                if let Some(u) = m.get("usage") {
                    let id = s(m, "id")
                        .map_or_else(|| format!("#{}", self.messages.len()), str::to_owned);
                    self.messages.insert(id, u.clone());
                }
                self.tools += m.get("content").and_then(Value::as_array).map_or(0, |c| {
                    c.iter()
                        .filter(|b| s(b, "type") == Some("tool_use"))
                        .count() as u64
                });
            }
            Some("result") => self.result = Some(v.clone()),
            _ => {}
        }
    }

    /// Tokens so far (the result's, once it came) and the cost, once known.
    pub(crate) fn so_far(&self) -> (u64, Option<f64>) {
        if let Some(r) = &self.result {
            let tokens = r.get("usage").map_or(0, |u| usage_of(u).tokens());
            return (tokens, r.get("total_cost_usd").and_then(Value::as_f64));
        }
        let tokens = self.messages.values().map(|u| usage_of(u).tokens()).sum();
        (tokens, None)
    }

    /// What the stream said. Without a result event the CLI failed (or was
    /// stopped); the tokens of its messages are then what it spent.
    pub(crate) fn finish(self, ended: bool) -> CliRun {
        if let Some(r) = &self.result
            && let Ok(mut run) = object(r, true)
        {
            if run.session.session_id.is_none() {
                run.session.session_id = self.session_id;
            }
            return run;
        }
        let mut run = CliRun::default();
        let mut total = Usage::default();
        for u in self.messages.values() {
            total.add(&usage_of(u));
        }
        run.usage = (!self.messages.is_empty()).then_some(total);
        run.session.session_id = self.session_id;
        run.failure = Some(match (&self.result, ended) {
            (Some(_), _) => "printed a result event that cannot be read".to_owned(),
            (None, true) => "ended its stream without a result event".to_owned(),
            (None, false) => "was stopped before its result event".to_owned(),
        });
        run
    }
}
