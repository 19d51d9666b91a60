//! A bash step's `retry:` block as a plan writes it (`max_attempts`,
//! `delay`, `backoff`), its JSON Schema, the positioned checks the schema
//! cannot make, and the checked [`Retry`] the engine runs with.

use std::borrow::Cow;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

use super::node::{Node, NodeValue};
use super::timeout::Timeout;
use crate::model::Diagnostic;

/// Most attempts a step may ask for.
pub(crate) const MAX_ATTEMPTS: u32 = 10;
/// The longest wait between two attempts, whatever `delay` and `backoff` say (seconds).
pub(crate) const MAX_WAIT_SECS: u64 = 600;
/// What a bad `delay` should be instead.
pub(crate) const DELAY_HELP: &str =
    "use a number of seconds from 0 to 600 or a duration like `5s` or `2m`";
/// The largest `backoff` factor.
pub(crate) const MAX_BACKOFF: f64 = 10.0;

/// `retry:` of a bash step, as written.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetryDef {
    /// How many times the command may run in all, 1 to 10 (1: once, no retry). An attempt that
    /// fails (non-zero exit, killed, timed out, `expected_output` not matched, a bad
    /// `$PLANGATE_OUTPUT`) runs again; a stopped run, a secret found under `fail_on_secrets` and a
    /// failure of plangate itself do not. The step's `timeout` holds for each attempt.
    #[schemars(range(min = 1, max = 10))]
    pub max_attempts: u32,
    /// The wait before the second attempt: seconds (0 to 600) or a duration such as `2s` or
    /// `1m`. Default 0.
    #[serde(default)]
    pub delay: Option<Delay>,
    /// Each later wait is the previous one times this factor (1 to 10, default 1); no wait is
    /// longer than 600 s.
    #[serde(default)]
    #[schemars(range(min = 1.0, max = 10.0))]
    pub backoff: Option<f64>,
}

/// A wait in seconds, 0 to [`MAX_WAIT_SECS`]: a number or a duration string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Delay(pub Duration);

impl Delay {
    fn from_node(n: &Node) -> Option<Duration> {
        let d = match &n.value {
            NodeValue::Int(i) => u64::try_from(*i).ok().map(Duration::from_secs),
            NodeValue::UInt(u) => Some(Duration::from_secs(*u)),
            NodeValue::Float(f) => Duration::try_from_secs_f64(*f).ok(),
            NodeValue::Str(s) => Timeout::parse_str(s),
            _ => None,
        }?;
        (d <= Duration::from_secs(MAX_WAIT_SECS)).then_some(d)
    }
}

impl<'de> Deserialize<'de> for Delay {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match super::timeout::seconds_or_duration(d)? {
            Some(d) if d <= Duration::from_secs(MAX_WAIT_SECS) => Ok(Delay(d)),
            _ => Err(serde::de::Error::custom(DELAY_HELP)),
        }
    }
}

impl JsonSchema for Delay {
    fn schema_name() -> Cow<'static, str> {
        "RetryDelay".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Seconds (0 to 600) or a duration such as `5s`, `2m`.",
            "oneOf": [
                {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECS},
                {"type": "string", "pattern": super::timeout::DURATION_PATTERN}
            ]
        })
    }
}

/// A checked `retry:` block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    /// Attempts in all (1 to [`MAX_ATTEMPTS`]).
    pub max_attempts: u32,
    /// The wait before the second attempt.
    pub delay: Duration,
    /// The factor of each later wait.
    pub backoff: f64,
}

impl Retry {
    /// From a block that passed the schema and [`check`].
    pub(crate) fn from_def(d: RetryDef) -> Retry {
        Retry {
            max_attempts: d.max_attempts.clamp(1, MAX_ATTEMPTS),
            delay: d.delay.map_or(Duration::ZERO, |x| x.0),
            backoff: d
                .backoff
                .filter(|b| b.is_finite())
                .unwrap_or(1.0)
                .clamp(1.0, MAX_BACKOFF),
        }
    }

    /// The wait after failed attempt `n` (1-based): `delay · backoff^(n-1)`,
    /// at most [`MAX_WAIT_SECS`].
    pub fn wait_after(&self, n: u32) -> Duration {
        let exp = i32::try_from(n.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.delay.as_secs_f64() * self.backoff.powi(exp);
        let cap = Duration::from_secs(MAX_WAIT_SECS);
        Duration::try_from_secs_f64(secs).map_or(cap, |d| d.min(cap))
    }
}

/// The help for `retry` on a step whose tool takes none (and on a tool
/// plangate does not know).
pub(crate) const NO_RETRY_HELP: &str = "remove `retry`, or run the command as a bash step";

/// The checks of a step's `retry:` the schema leaves out: a delay string
/// within 0–600 s, and `retry` only where the tool takes it (`tool`: the
/// step's tool as written, when it names one, and its `ToolSpec::retry`).
pub(crate) fn check(
    file: &str,
    retry: Option<&Node>,
    tool: Option<(&str, Result<(), &str>)>,
    sid: &str,
    out: &mut Vec<Diagnostic>,
) {
    let Some(r) = retry else { return };
    if let Some((t, Err(help))) = tool {
        out.push(
            Diagnostic::at(
                file,
                r.pos,
                format!(
                    "`retry` of step `{sid}`: only bash steps retry, and this one uses tool `{t}`"
                ),
            )
            .help(help),
        );
    }
    // The same words as the schema's diagnostic (they are merged when both see it).
    if let Some(d) = r.child("delay")
        && Delay::from_node(d).is_none()
    {
        let found = match d.to_json() {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        out.push(
            Diagnostic::at(
                file,
                d.pos,
                format!("invalid delay `{found}` for `retry` of step `{sid}`"),
            )
            .help(DELAY_HELP),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_by_the_backoff_and_stop_at_ten_minutes() {
        let r = Retry {
            max_attempts: 5,
            delay: Duration::from_secs(2),
            backoff: 3.0,
        };
        let waits: Vec<u64> = (1..=5).map(|n| r.wait_after(n).as_secs()).collect();
        assert_eq!(waits, [2, 6, 18, 54, 162]);
        let r = Retry {
            max_attempts: 10,
            delay: Duration::from_secs(600),
            backoff: 10.0,
        };
        assert_eq!(r.wait_after(9), Duration::from_secs(MAX_WAIT_SECS));
        let none = Retry::from_def(RetryDef {
            max_attempts: 3,
            delay: None,
            backoff: None,
        });
        assert_eq!(none.wait_after(2), Duration::ZERO);
        assert!((none.backoff - 1.0).abs() < f64::EPSILON);
    }
}
