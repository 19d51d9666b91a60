//! The `anthropic` provider: the Messages API (`POST {base_url}/v1/messages`,
//! `x-api-key`, `anthropic-version: 2023-06-01`), through the shared HTTP
//! transport and retries of `http.rs`. The answer is the reply's `text`
//! blocks joined; `output: json` steps with an object schema force a tool
//! whose `input` is the answer. `stop_reason: max_tokens` is a truncated
//! answer (rejected like any other).

use serde_json::Value;

use super::http;
use super::{Answer, Call, CallError, CallFuture, Provider};
use crate::format::agent::ANTHROPIC_KEY_ENV;
use crate::model::Risk;
use crate::model::Usage;
use crate::tools::params::agent::AgentAction;

/// The API when `base_url` is not set.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// `max_tokens` when the agent does not set it (every Claude model allows it).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The API version sent.
const API_VERSION: &str = "2023-06-01";
/// The forced tool of structured output.
const TOOL: &str = "answer";

/// The `anthropic` provider.
pub(super) struct Anthropic;

impl Provider for Anthropic {
    fn required_keys(&self) -> &'static [&'static str] {
        &["model"]
    }

    fn keys(&self) -> &'static [&'static str] {
        http::KEYS
    }

    fn risk_floor(&self, a: &AgentAction) -> (Risk, String) {
        http::risk_floor(a.agent.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL))
    }

    fn call<'a>(&'a self, call: Call<'a>) -> CallFuture<'a> {
        Box::pin(call_anthropic(call))
    }
}

async fn call_anthropic(c: Call<'_>) -> Result<Answer, CallError> {
    let a = c.action;
    let base = a.agent.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
    let var = a.key_env().unwrap_or(ANTHROPIC_KEY_ENV);
    let headers = vec![
        (
            "x-api-key".to_owned(),
            http::secret(&c, var, "its API key")?,
        ),
        ("anthropic-version".to_owned(), API_VERSION.to_owned()),
    ];
    let body = request_body(a, c.prompt);
    http::exchange(&c, base, "/v1/messages", headers, body, |reply| {
        answer(&a.agent_name, max_tokens(a), reply)
    })
    .await
}

fn max_tokens(a: &AgentAction) -> u32 {
    a.agent.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)
}

/// The Messages API request.
fn request_body(a: &AgentAction, prompt: &str) -> Value {
    let mut body = serde_json::json!({
        "model": a.agent.model,
        "max_tokens": max_tokens(a),
        "messages": [{"role": "user", "content": prompt}],
    });
    if let Some(system) = &a.agent.system {
        body["system"] = Value::from(system.as_str());
    }
    if let Some(t) = a.agent.temperature {
        body["temperature"] = Value::from(t);
    }
    if let Some(schema) = super::structured_schema(a) {
        body["tools"] = serde_json::json!([{
            "name": TOOL,
            "description": "Give the answer: its input is the whole answer, checked against the schema.",
            "input_schema": schema,
        }]);
        body["tool_choice"] = serde_json::json!({"type": "tool", "name": TOOL});
    }
    body
}

/// The answer in a Messages API reply: the forced tool's `input` as JSON
/// when there is one, else the `text` blocks joined.
fn answer(agent: &str, max_tokens: u32, reply: &str) -> Result<Answer, CallError> {
    let v = http::reply_json(agent, reply)?;
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| CallError::Failed(format!("agent `{agent}`: the reply has no `content`")))?;
    let tool_input = blocks.iter().find_map(|b| {
        (b.get("type").and_then(Value::as_str) == Some("tool_use")
            && b.get("name").and_then(Value::as_str) == Some(TOOL))
        .then(|| b.get("input"))
        .flatten()
    });
    let text = match tool_input {
        Some(input) => serde_json::to_string_pretty(input).map_err(|e| {
            CallError::Failed(format!("agent `{agent}`: cannot read the tool input: {e}"))
        })?,
        None => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<String>(),
    };
    let cut_short = match v.get("stop_reason").and_then(Value::as_str) {
        Some("max_tokens") => Some(format!(
            "stop_reason `max_tokens`: the model hit max_tokens ({max_tokens}); raise the agent's `max_tokens`"
        )),
        Some("model_context_window_exceeded") => {
            Some("stop_reason `model_context_window_exceeded`".to_owned())
        }
        Some("refusal") => Some("stop_reason `refusal`: the model declined".to_owned()),
        _ => None,
    };
    let usage = v.get("usage").map(usage_of);
    Ok(Answer {
        text,
        usage,
        cut_short,
        extra: super::Extra::default(),
    })
}

/// Tokens of a Messages API `usage` object (Claude Code reports the same
/// shape): the input counts both cache figures.
pub(super) fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (written, read) = (
        n("cache_creation_input_tokens"),
        n("cache_read_input_tokens"),
    );
    Usage {
        input_tokens: n("input_tokens") + written + read,
        output_tokens: n("output_tokens"),
        cost_usd: 0.0,
        estimated: false,
        cache_creation_input_tokens: written,
        cache_read_input_tokens: read,
        reported_by_cli_usd: None,
    }
}

#[cfg(test)]
mod tests {
    use super::answer;
    use serde_json::json;

    #[test]
    fn text_blocks_join_and_cache_tokens_count_as_input() {
        let reply = json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "Hello, "}, {"type": "thinking", "thinking": "x"},
                        {"type": "text", "text": "world."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5,
                      "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000}
        });
        let a = answer("c", 4096, &reply.to_string()).unwrap();
        assert_eq!(a.text, "Hello, world.");
        assert!(a.cut_short.is_none());
        let u = a.usage.unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_creation_input_tokens,
                u.cache_read_input_tokens
            ),
            (1110, 5, 100, 1000)
        );
    }

    #[test]
    fn the_forced_tool_input_is_the_answer_and_max_tokens_cuts_short() {
        let reply = json!({
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "answer", "input": {"n": 1}}],
            "stop_reason": "max_tokens", "usage": {"input_tokens": 1, "output_tokens": 2}
        });
        let a = answer("c", 64, &reply.to_string()).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&a.text).unwrap(),
            json!({"n": 1})
        );
        assert!(a.cut_short.unwrap().contains("max_tokens (64)"));
        assert!(answer("c", 1, "{\"type\": \"message\"}").is_err());
    }
}
