//! The `openai` provider: an OpenAI-compatible chat-completions endpoint
//! (`POST {base_url}/chat/completions`), through the shared HTTP transport
//! and retries of `http.rs`. A `system` prompt goes first; `output: json`
//! steps with an object schema ask for `response_format: json_schema`.

use serde_json::Value;

use super::http;
use super::{Answer, Call, CallError, CallFuture, Provider};
use crate::model::Risk;
use crate::model::Usage;
use crate::tools::params::agent::AgentAction;

/// The `openai` provider.
pub(super) struct OpenAi;

impl Provider for OpenAi {
    fn required_keys(&self) -> &'static [&'static str] {
        &["base_url", "model"]
    }

    fn keys(&self) -> &'static [&'static str] {
        http::KEYS
    }

    fn risk_floor(&self, a: &AgentAction) -> (Risk, String) {
        http::risk_floor(a.agent.base_url.as_deref().unwrap_or("?"))
    }

    fn call<'a>(&'a self, call: Call<'a>) -> CallFuture<'a> {
        Box::pin(call_openai(call))
    }
}

async fn call_openai(c: Call<'_>) -> Result<Answer, CallError> {
    let a = c.action;
    let base = a.agent.base_url.as_deref().unwrap_or_default();
    let mut headers = Vec::new();
    if let Some(var) = &a.agent.api_key_env {
        let key = http::secret(&c, var, "its API key")?;
        headers.push(("authorization".to_owned(), format!("Bearer {key}")));
    }
    let body = request_body(a, c.prompt);
    http::exchange(&c, base, "/chat/completions", headers, body, |reply| {
        openai_answer(&a.agent_name, reply)
    })
    .await
}

/// The chat-completions request.
fn request_body(a: &AgentAction, prompt: &str) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &a.agent.system {
        messages.push(serde_json::json!({"role": "system", "content": system}));
    }
    messages.push(serde_json::json!({"role": "user", "content": prompt}));
    let mut body = serde_json::json!({
        "model": a.agent.model,
        "messages": messages,
    });
    if let Some(t) = a.agent.temperature {
        body["temperature"] = Value::from(t);
    }
    if let Some(m) = a.agent.max_tokens {
        body["max_tokens"] = Value::from(m);
    }
    if let Some(schema) = super::structured_schema(a) {
        body["response_format"] = serde_json::json!({
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "schema": schema,
                "strict": strict_ok(schema),
            }
        });
    }
    body
}

/// Whether OpenAI's strict mode accepts `schema` as it is: every object
/// closed (`additionalProperties: false`) with all its properties required.
/// Otherwise the schema is sent with `strict: false` (it guides the model;
/// plangate checks the answer either way).
fn strict_ok(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            let is_object = m.get("type").and_then(Value::as_str) == Some("object")
                || m.contains_key("properties");
            if is_object {
                if m.get("additionalProperties") != Some(&Value::Bool(false)) {
                    return false;
                }
                let props: Vec<&String> = m
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().collect())
                    .unwrap_or_default();
                let required: Vec<&str> = m
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if props.iter().any(|p| !required.contains(&p.as_str())) {
                    return false;
                }
            }
            m.values().all(strict_ok)
        }
        Value::Array(items) => items.iter().all(strict_ok),
        _ => true,
    }
}

fn openai_answer(agent: &str, reply: &str) -> Result<Answer, CallError> {
    let v = http::reply_json(agent, reply)?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| CallError::Failed(format!("agent `{agent}`: the reply has no `choices`")))?;
    let message = choice.get("message");
    let text = match message
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
    {
        Some(t) => t.to_owned(),
        None => {
            let refusal = message
                .and_then(|m| m.get("refusal"))
                .and_then(Value::as_str)
                .map(|r| format!(" (the model refused: {})", super::one_line(r)))
                .unwrap_or_default();
            return Err(CallError::Failed(format!(
                "agent `{agent}`: the reply has no message content{refusal}"
            )));
        }
    };
    let cut_short = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => Some("finish_reason `length`: the model hit its token limit".to_owned()),
        Some("content_filter") => Some("finish_reason `content_filter`".to_owned()),
        _ => None,
    };
    let usage = v.get("usage").map(|u| {
        let cached = u
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Usage {
            input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
            output_tokens: u
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            cost_usd: 0.0,
            estimated: false,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: cached,
            reported_by_cli_usd: None,
        }
    });
    Ok(Answer {
        text,
        usage,
        cut_short,
        extra: super::Extra::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::strict_ok;
    use serde_json::json;

    #[test]
    fn strict_mode_only_for_closed_fully_required_schemas() {
        let closed = json!({"type": "object", "additionalProperties": false,
            "properties": {"a": {"type": "string"}, "b": {"type": "array", "items":
                {"type": "object", "additionalProperties": false, "properties": {"c": {}}, "required": ["c"]}}},
            "required": ["a", "b"]});
        assert!(strict_ok(&closed));
        let open = json!({"type": "object", "properties": {"a": {}}, "required": ["a"]});
        assert!(!strict_ok(&open));
        let optional = json!({"type": "object", "additionalProperties": false,
            "properties": {"a": {}, "b": {}}, "required": ["a"]});
        assert!(!strict_ok(&optional));
        let nested_open = json!({"type": "object", "additionalProperties": false,
            "properties": {"a": {"type": "object"}}, "required": ["a"]});
        assert!(!strict_ok(&nested_open));
    }
}
