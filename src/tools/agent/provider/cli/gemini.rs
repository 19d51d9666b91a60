//! Gemini CLI headless with `--output-format json` (`docs/cli/headless.md`,
//! `packages/core/src/output/types.ts`): one object
//!
//! ```json
//! {"session_id": "...", "response": "...",
//!  "stats": {"models": {"gemini-2.5-pro": {"api": {"totalRequests": 2, ...},
//!            "tokens": {"input": 13745, "prompt": 24401, "candidates": 215, "total": 24719,
//!                       "cached": 10656, "thoughts": 103, "tool": 0}}},
//!            "tools": {"totalCalls": 1, ...}, "files": {...}},
//!  "error": {"type": "ApiError", "message": "...", "code": 429}}
//! ```
//!
//! `prompt` counts the cached tokens; thoughts are billed as output. Gemini
//! CLI reports tokens, no cost. `error` means the run failed (a partial
//! `response` beside it is not an answer); exit code 53 is its turn limit.

use serde_json::Value;

use super::{CliRun, ReadError, n, s};
use crate::model::Usage;

/// The JSON object.
pub(super) fn object(v: &Value) -> Result<CliRun, ReadError> {
    let mut run = CliRun::default();
    run.session.session_id = s(v, "session_id").map(str::to_owned);
    if let Some(models) = v
        .get("stats")
        .and_then(|st| st.get("models"))
        .and_then(Value::as_object)
    {
        let mut total = Usage::default();
        for m in models.values() {
            let t = m.get("tokens").cloned().unwrap_or(Value::Null);
            total.add(&Usage {
                input_tokens: n(&t, "prompt") + n(&t, "tool"),
                output_tokens: n(&t, "candidates") + n(&t, "thoughts"),
                cache_read_input_tokens: n(&t, "cached"),
                ..Usage::default()
            });
        }
        run.usage = Some(total);
    }
    if let Some(calls) = v
        .get("stats")
        .and_then(|st| st.get("tools"))
        .and_then(|t| t.get("totalCalls"))
        .and_then(Value::as_u64)
    {
        run.session.commands = calls;
    }
    match v.get("error").filter(|e| !e.is_null()) {
        Some(e) => {
            let kind = s(e, "type").unwrap_or("error");
            let code = e
                .get("code")
                .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned));
            let msg = super::super::one_line(s(e, "message").unwrap_or("no message"));
            run.session.outcome = Some(kind.to_owned());
            run.failure = Some(match code {
                Some(c) => format!("reported an error ({kind}, code {c}): {msg}"),
                None => format!("reported an error ({kind}): {msg}"),
            });
        }
        None => {
            run.session.outcome = Some("success".to_owned());
            run.text = Some(
                s(v, "response")
                    .ok_or_else(|| {
                        ReadError::Shape("the object has neither `response` nor `error`".to_owned())
                    })?
                    .to_owned(),
            );
        }
    }
    Ok(run)
}

/// Exit code 53 of Gemini CLI's headless mode: the session's turn limit.
pub(super) const TURN_LIMIT_EXIT: i32 = 53;
