//! The `openai` provider: an OpenAI-compatible chat-completions endpoint over
//! HTTP (ureq, rustls with ring), one POST per attempt on the blocking pool,
//! no redirects, the reply capped. A client timeout is a timed-out step, told
//! apart by ureq's typed error (never by its text).

use std::time::Duration;

use serde_json::Value;

use super::{Answer, Call, CallError, CallFuture, Provider, one_line};
use crate::model::Risk;
use crate::model::Usage;
use crate::tools::agent::params::AgentAction;

/// Most bytes read from an HTTP reply.
const MAX_HTTP_BODY: u64 = 16 * 1024 * 1024;

/// The `openai` provider.
pub(super) struct OpenAi;

impl Provider for OpenAi {
    fn required_keys(&self) -> &'static [&'static str] {
        &["base_url", "model"]
    }

    fn keys(&self) -> &'static [&'static str] {
        &[
            "base_url",
            "model",
            "api_key_env",
            "temperature",
            "max_tokens",
        ]
    }

    fn risk_floor(&self, a: &AgentAction) -> (Risk, String) {
        (
            Risk::Moderate,
            format!(
                "sends the prompt to `{}`",
                a.agent.base_url.as_deref().unwrap_or("?")
            ),
        )
    }

    fn call<'a>(&'a self, call: Call<'a>) -> CallFuture<'a> {
        Box::pin(call_openai(call))
    }
}

async fn call_openai(c: Call<'_>) -> Result<Answer, CallError> {
    let Call {
        action: a,
        ctx,
        prompt,
        timeout,
        ..
    } = c;
    let base = a.agent.base_url.clone().unwrap_or_default();
    let url = format!("{}/chat/completions", base.trim_end_matches('/'));
    let key = match &a.agent.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => Some(k),
            _ => {
                return Err(CallError::Failed(format!(
                    "agent `{}` reads its API key from ${var}, which is not set",
                    a.agent_name
                )));
            }
        },
        None => None,
    };
    let mut body = serde_json::json!({
        "model": a.agent.model,
        "messages": [{"role": "user", "content": prompt}],
    });
    if let Some(t) = a.agent.temperature {
        body["temperature"] = Value::from(t);
    }
    if let Some(m) = a.agent.max_tokens {
        body["max_tokens"] = Value::from(m);
    }
    let name = a.agent_name.clone();
    let task = tokio::task::spawn_blocking(move || http_post(&url, key.as_deref(), &body, timeout));
    let mut cancel = ctx.cancel.clone();
    let result = tokio::select! {
        r = task => r.map_err(|e| CallError::Failed(format!("agent `{name}` call crashed: {e}")))?,
        _ = cancel.wait_for(|c| *c) => return Err(CallError::Stopped),
    };
    let (status, reply) = result.map_err(|e| {
        if e.is_timeout() {
            CallError::TimedOut(format!("agent `{name}`: {e}"))
        } else {
            CallError::Failed(format!("agent `{name}`: {e}"))
        }
    })?;
    if !(200..300).contains(&status) {
        return Err(CallError::Failed(format!(
            "agent `{name}`: HTTP {status}: {}",
            one_line(&reply)
        )));
    }
    openai_answer(&name, &reply)
}

/// Why a POST to an OpenAI-compatible endpoint gave no reply.
#[derive(Debug, thiserror::Error)]
pub(super) enum PostError {
    /// The request body could not be encoded.
    #[error("cannot encode the request: {0}")]
    Encode(#[source] serde_json::Error),
    /// The request failed (connection, TLS, time).
    #[error("request to {url} failed: {source}")]
    Request {
        /// The endpoint.
        url: String,
        /// The client's error.
        #[source]
        source: ureq::Error,
    },
    /// Reading the reply failed.
    #[error("reading the reply from {url} failed: {source}")]
    Read {
        /// The endpoint.
        url: String,
        /// The reader's error.
        #[source]
        source: std::io::Error,
    },
    /// The reply is larger than the cap.
    #[error("the reply from {url} is larger than {MAX_HTTP_BODY} bytes")]
    TooLarge {
        /// The endpoint.
        url: String,
    },
    /// The reply is not UTF-8.
    #[error("the reply from {url} is not UTF-8")]
    NotUtf8 {
        /// The endpoint.
        url: String,
    },
}

impl PostError {
    /// Whether the call ran out of time (the step then times out rather than fails).
    pub(super) fn is_timeout(&self) -> bool {
        match self {
            PostError::Request { source, .. } => is_timeout(source),
            PostError::Read { source, .. } => {
                source.kind() == std::io::ErrorKind::TimedOut
                    || source
                        .get_ref()
                        .and_then(|e| e.downcast_ref::<ureq::Error>())
                        .is_some_and(is_timeout)
            }
            _ => false,
        }
    }
}

/// ureq's own timeouts, and a socket's.
fn is_timeout(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::TimedOut,
        _ => false,
    }
}

/// POST JSON; returns (status, body) with the body capped.
fn http_post(
    url: &str,
    key: Option<&str>,
    body: &Value,
    timeout: Duration,
) -> Result<(u16, String), PostError> {
    use std::io::Read;
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build(),
    );
    let mut req = agent.post(url).header("content-type", "application/json");
    if let Some(k) = key {
        req = req.header("authorization", &format!("Bearer {k}"));
    }
    let payload = serde_json::to_vec(body).map_err(PostError::Encode)?;
    let mut resp = req
        .send(&payload[..])
        .map_err(|source| PostError::Request {
            url: url.to_owned(),
            source,
        })?;
    let status = resp.status().as_u16();
    let mut buf = Vec::new();
    resp.body_mut()
        .as_reader()
        .take(MAX_HTTP_BODY + 1)
        .read_to_end(&mut buf)
        .map_err(|source| PostError::Read {
            url: url.to_owned(),
            source,
        })?;
    if buf.len() as u64 > MAX_HTTP_BODY {
        return Err(PostError::TooLarge {
            url: url.to_owned(),
        });
    }
    String::from_utf8(buf)
        .map(|s| (status, s))
        .map_err(|_| PostError::NotUtf8 {
            url: url.to_owned(),
        })
}

fn openai_answer(agent: &str, reply: &str) -> Result<Answer, CallError> {
    let v: Value = serde_json::from_str(reply)
        .map_err(|e| CallError::Failed(format!("agent `{agent}`: the reply is not JSON: {e}")))?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| CallError::Failed(format!("agent `{agent}`: the reply has no `choices`")))?;
    let text = choice
        .pointer("/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            CallError::Failed(format!("agent `{agent}`: the reply has no message content"))
        })?
        .to_owned();
    let cut_short = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => Some("finish_reason `length`: the model hit its token limit".to_owned()),
        Some("content_filter") => Some("finish_reason `content_filter`".to_owned()),
        _ => None,
    };
    let usage = v.get("usage").map(|u| Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        cost_usd: 0.0,
        estimated: false,
    });
    Ok(Answer {
        text,
        usage,
        cut_short,
        extra: super::Extra::default(),
    })
}
