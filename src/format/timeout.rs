//! Timeouts as a plan writes them: seconds or a duration string, at most one
//! day; the serde type with its JSON Schema, and the positioned check.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::node::{Node, NodeValue};
use crate::model::Diagnostic;

/// The longest timeout a step may ask for: one day.
pub(crate) const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// A duration in seconds: a positive number, or a string such as `90s`, `10m`, `1h 30m`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeout(pub std::time::Duration);

impl Timeout {
    /// Parse the string form (`90s`, `10m`, `1.5`); `None` when it is not a duration.
    pub fn parse_str(s: &str) -> Option<std::time::Duration> {
        let t = s.trim();
        if let Ok(n) = t.parse::<f64>() {
            return std::time::Duration::try_from_secs_f64(n).ok();
        }
        humantime::parse_duration(t).ok()
    }

    /// Whether the duration is within (0, one day].
    pub fn in_range(d: std::time::Duration) -> bool {
        !d.is_zero() && d.as_secs_f64() <= MAX_TIMEOUT_SECS
    }
}

/// A number of seconds or a duration string, as `timeout` and `retry.delay`
/// take it (None: neither a valid number nor a duration).
pub(crate) fn seconds_or_duration<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<std::time::Duration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Num(f64),
        Str(String),
    }
    Ok(match Raw::deserialize(d)? {
        Raw::Num(n) => std::time::Duration::try_from_secs_f64(n).ok(),
        Raw::Str(s) => Timeout::parse_str(&s),
    })
}

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match seconds_or_duration(d)? {
            Some(d) if Timeout::in_range(d) => Ok(Timeout(d)),
            _ => Err(serde::de::Error::custom(
                "a timeout is a positive number of seconds or a duration like `90s` or `10m`, at most one day",
            )),
        }
    }
}

/// What a duration string looks like (the schemas of `timeout` and `retry.delay`).
pub(crate) const DURATION_PATTERN: &str =
    r"^\s*[0-9]+(\.[0-9]+)?\s*([a-zA-Z]+)?(\s+[0-9]+\s*[a-zA-Z]+)*\s*$";

impl JsonSchema for Timeout {
    fn schema_name() -> Cow<'static, str> {
        "Timeout".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Seconds (a positive number, at most 86400) or a duration such as `90s`, `10m`, `1h 30m`.",
            "oneOf": [
                {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_SECS},
                {"type": "string", "pattern": DURATION_PATTERN}
            ]
        })
    }
}

/// Check a timeout node (a number of seconds or a duration string, within one
/// day), with a diagnostic at its position.
pub(crate) fn check_timeout(
    file: &str,
    node: Option<&Node>,
    what: &str,
    out: &mut Vec<Diagnostic>,
) {
    let Some(n) = node else { return };
    let dur = match &n.value {
        NodeValue::Int(i) => u64::try_from(*i).ok().map(std::time::Duration::from_secs),
        NodeValue::UInt(u) => Some(std::time::Duration::from_secs(*u)),
        NodeValue::Float(f) => std::time::Duration::try_from_secs_f64(*f).ok(),
        NodeValue::Str(s) => Timeout::parse_str(s),
        _ => None,
    };
    if !dur.is_some_and(Timeout::in_range) {
        out.push(
            Diagnostic::at(file, n.pos, format!("invalid timeout `{}` for {what}", short(&n.to_json())))
                .help("use a positive number of seconds (at most 86400) or a duration like `90s`, `10m`, `1h`"),
        );
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
