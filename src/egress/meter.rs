//! What the model API endpoint measures (issue 24, item 3): the usage each
//! answer reports (a JSON body, or the events of a server-sent stream), priced
//! with the agent's `price` or the built-in price of the model the call names
//! (`prices`), summed over the CLI's run; and the budget check that refuses
//! the next call once the run's or the step's budget is spent.

use std::sync::{Arc, Mutex};

use super::prices::Rates;
use crate::model::Usage;

/// Most answer bytes kept to read the usage from (the answer itself is
/// streamed to the CLI whatever its size).
pub(crate) const MAX_METERED: usize = 32 * 1024 * 1024;

/// Says why the next call must be refused, given what this CLI run has used so far.
pub(crate) type Budget = Arc<dyn Fn(&Usage) -> Option<String> + Send + Sync>;

/// The usage of one CLI run, as measured at the endpoint.
pub(crate) struct Meter {
    used: Mutex<Usage>,
    pricing: Pricing,
    budget: Budget,
    refused: Mutex<Option<String>>,
    unmeasured: Mutex<u64>,
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meter")
            .field("used", &self.usage())
            .finish_non_exhaustive()
    }
}

/// How a CLI run's calls are priced.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pricing {
    /// The agent's `price` (every model); None: the built-in price of the model each call names.
    pub fixed: Option<Rates>,
    /// The agent's name, for the refusal.
    pub agent: String,
    /// A cost budget is in force (run or step): a call without a price is refused.
    pub cost_budget: bool,
}

impl Meter {
    /// A fresh meter.
    pub(crate) fn new(pricing: Pricing, budget: Budget) -> Meter {
        Meter {
            used: Mutex::new(Usage::default()),
            pricing,
            budget,
            refused: Mutex::new(None),
            unmeasured: Mutex::new(0),
        }
    }

    /// What was measured so far.
    pub(crate) fn usage(&self) -> Usage {
        self.used.lock().map(|u| *u).unwrap_or_default()
    }

    /// Why the next call is refused (and remember it), if it is.
    pub(crate) fn over_budget(&self) -> Option<String> {
        let why = (self.budget)(&self.usage())?;
        if let Ok(mut r) = self.refused.lock() {
            r.get_or_insert_with(|| why.clone());
        }
        Some(why)
    }

    /// Remember that a call was refused (the first reason is kept).
    pub(crate) fn refuse(&self, why: &str) {
        if let Ok(mut r) = self.refused.lock() {
            r.get_or_insert_with(|| why.to_owned());
        }
    }

    /// The reason a call was refused for the budget, if one was.
    pub(crate) fn refused(&self) -> Option<String> {
        self.refused.lock().ok().and_then(|r| r.clone())
    }

    /// How many answers reported no usage that could be read (too large, or none given).
    pub(crate) fn unmeasured(&self) -> u64 {
        self.unmeasured.lock().map(|n| *n).unwrap_or(0)
    }

    /// The rates of a call naming `model`: the agent's `price`, else the
    /// model's built-in price; Err (the call must be refused) when there is
    /// none and a cost budget is in force. Ok(None): unpriced (cost 0, no
    /// cost budget to keep).
    pub(crate) fn price_for(&self, model: Option<&str>) -> Result<Option<Rates>, String> {
        if let Some(r) = self.pricing.fixed {
            return Ok(Some(r));
        }
        let found = model.and_then(super::prices::lookup);
        match (found, self.pricing.cost_budget) {
            (Some(r), _) => Ok(Some(r)),
            (None, false) => Ok(None),
            (None, true) => Err(format!(
                "{} has no built-in price and a cost budget is in force (plangate never prices a call at zero); set `price` on agent `{}`",
                model.map_or_else(
                    || "the call names no model, so it".to_owned(),
                    |m| format!("model `{m}`")
                ),
                self.pricing.agent
            )),
        }
    }

    /// Add an answer's body (None: more than [`MAX_METERED`] bytes), priced with `rates`.
    pub(crate) fn record(&self, rates: Option<Rates>, body: Option<&[u8]>, model_call: bool) {
        let measured = body.and_then(measure_full);
        let Some((mut u, write_1h)) = measured else {
            if model_call && let Ok(mut n) = self.unmeasured.lock() {
                *n += 1;
            }
            return;
        };
        if let Some(r) = rates {
            u.cost_usd = r.cost(&u, write_1h);
        }
        if let Ok(mut used) = self.used.lock() {
            used.add(&u);
        }
    }
}

/// The usage an answer reports: every `usage` / `usageMetadata` object in
/// the body (one JSON value, or the `data:` events of a stream), each figure
/// the largest seen (streams repeat them cumulatively). None when there is none.
#[cfg(test)]
pub(crate) fn measure(body: &[u8]) -> Option<Usage> {
    measure_full(body).map(|(u, _)| u)
}

/// [`measure`], and of the cache writes the 1-hour ones (Anthropic's
/// `cache_creation.ephemeral_1h_input_tokens`).
fn measure_full(body: &[u8]) -> Option<(Usage, u64)> {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start();
    let mut found = Figures::default();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: serde_json::Value = serde_json::from_str(trimmed).ok()?;
        walk(&v, &mut found);
    } else {
        for line in text.lines() {
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(data.trim()) {
                walk(&v, &mut found);
            }
        }
    }
    found
        .seen
        .then(|| (found.usage(), found.cache_write_1h.min(found.cache_write)))
}

#[derive(Debug, Default)]
struct Figures {
    seen: bool,
    input: u64,
    output: u64,
    thoughts: u64,
    cache_read: u64,
    cache_write: u64,
    cache_write_1h: u64,
    /// Anthropic counts cache reads and writes outside `input_tokens`.
    cache_apart: bool,
}

impl Figures {
    fn usage(&self) -> Usage {
        let input = if self.cache_apart {
            self.input + self.cache_read + self.cache_write
        } else {
            self.input
        };
        Usage {
            input_tokens: input,
            output_tokens: self.output + self.thoughts,
            cost_usd: 0.0,
            estimated: false,
            cache_creation_input_tokens: self.cache_write,
            cache_read_input_tokens: self.cache_read,
            reported_by_cli_usd: None,
        }
    }
}

fn walk(v: &serde_json::Value, f: &mut Figures) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if (k == "usage" || k == "usageMetadata") && x.is_object() {
                    take(x, f);
                } else {
                    walk(x, f);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, f)),
        _ => {}
    }
}

fn take(u: &serde_json::Value, f: &mut Figures) {
    let n = |path: &[&str]| -> Option<u64> {
        let mut cur = u;
        for p in path {
            cur = cur.get(*p)?;
        }
        cur.as_u64()
    };
    let first = |paths: &[&[&str]]| paths.iter().find_map(|p| n(p));
    let mut any = false;
    let mut max = |slot: &mut u64, v: Option<u64>| {
        if let Some(v) = v {
            any = true;
            *slot = (*slot).max(v);
        }
    };
    max(
        &mut f.input,
        first(&[&["input_tokens"], &["prompt_tokens"], &["promptTokenCount"]]),
    );
    max(
        &mut f.output,
        first(&[
            &["output_tokens"],
            &["completion_tokens"],
            &["candidatesTokenCount"],
        ]),
    );
    max(&mut f.thoughts, n(&["thoughtsTokenCount"]));
    max(
        &mut f.cache_read,
        first(&[
            &["cache_read_input_tokens"],
            &["input_tokens_details", "cached_tokens"],
            &["prompt_tokens_details", "cached_tokens"],
            &["cachedContentTokenCount"],
        ]),
    );
    max(&mut f.cache_write, n(&["cache_creation_input_tokens"]));
    max(
        &mut f.cache_write_1h,
        n(&["cache_creation", "ephemeral_1h_input_tokens"]),
    );
    if u.get("cache_read_input_tokens").is_some() || u.get("cache_creation_input_tokens").is_some()
    {
        f.cache_apart = true;
    }
    f.seen |= any;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_json_and_stream() {
        let u = measure(br#"{"content":[],"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}}"#).expect("usage");
        assert_eq!((u.input_tokens, u.output_tokens), (117, 5));
        assert_eq!(
            (u.cache_read_input_tokens, u.cache_creation_input_tokens),
            (100, 7)
        );
        let sse = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":42}}\n\n";
        let u = measure(sse).expect("usage");
        assert_eq!((u.input_tokens, u.output_tokens), (20, 42));
    }

    #[test]
    fn openai_responses_chat_and_gemini() {
        let sse = b"data: {\"type\":\"response.created\"}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":300,\"input_tokens_details\":{\"cached_tokens\":200},\"output_tokens\":9}}}\n\n";
        let u = measure(sse).expect("usage");
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cache_read_input_tokens),
            (300, 9, 200)
        );
        let chat = br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#;
        assert_eq!(measure(chat).map(|u| u.tokens()), Some(15));
        let gem = b"data: {\"usageMetadata\":{\"promptTokenCount\":50,\"candidatesTokenCount\":2}}\r\n\r\ndata: {\"usageMetadata\":{\"promptTokenCount\":50,\"candidatesTokenCount\":8,\"thoughtsTokenCount\":4}}\r\n\r\n";
        let u = measure(gem).expect("usage");
        assert_eq!((u.input_tokens, u.output_tokens), (50, 12));
        let arr = br#"[{"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1}}]"#;
        assert_eq!(measure(arr).map(|u| u.tokens()), Some(6));
    }

    #[test]
    fn no_usage_is_none() {
        assert!(measure(b"{\"data\":[]}").is_none());
        assert!(measure(b"not json").is_none());
        assert!(measure(b"").is_none());
    }

    #[test]
    fn the_meter_prices_and_the_budget_refuses_the_next_call() {
        let m = Meter::new(
            Pricing {
                fixed: Some(Rates::flat(3.0, 15.0, None, None)),
                ..Pricing::default()
            },
            Arc::new(|u: &Usage| {
                (u.cost_usd >= 0.0001).then(|| "cost budget exhausted".to_owned())
            }),
        );
        assert!(m.over_budget().is_none());
        let r = m.price_for(Some("any-model")).expect("the agent's price");
        m.record(
            r,
            Some(br#"{"usage":{"input_tokens":100,"output_tokens":10}}"#),
            true,
        );
        let u = m.usage();
        assert!((u.cost_usd - (300.0 + 150.0) / 1e6).abs() < 1e-12, "{u:?}");
        assert_eq!(m.over_budget().as_deref(), Some("cost budget exhausted"));
        assert_eq!(m.refused().as_deref(), Some("cost budget exhausted"));
        m.record(r, None, true);
        assert_eq!(m.unmeasured(), 1);
    }

    #[test]
    fn built_in_prices_per_call_and_cached_tokens_at_their_own_price() {
        let never = || -> Budget { Arc::new(|_: &Usage| None) };
        let m = Meter::new(
            Pricing {
                fixed: None,
                agent: "a".into(),
                cost_budget: true,
            },
            never(),
        );
        // Anthropic: cache reads and 5-minute / 1-hour writes apart from input_tokens.
        let r = m
            .price_for(Some("claude-sonnet-4-5-20250929"))
            .expect("known");
        m.record(
            r,
            Some(br#"{"usage":{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":2000,"cache_creation_input_tokens":400,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":300}}}"#),
            true,
        );
        let want = (1000.0 * 3.0 + 2000.0 * 0.30 + 100.0 * 3.75 + 300.0 * 6.0 + 100.0 * 15.0) / 1e6;
        let u = m.usage();
        assert!((u.cost_usd - want).abs() < 1e-12, "{u:?} want {want}");
        // OpenAI Responses: cached_tokens inside input_tokens.
        let r = m.price_for(Some("gpt-5-mini")).expect("known");
        m.record(
            r,
            Some(br#"{"usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":800},"output_tokens":50}}"#),
            true,
        );
        let want2 = (200.0 * 0.25 + 800.0 * 0.025 + 50.0 * 2.0) / 1e6;
        assert!((m.usage().cost_usd - want - want2).abs() < 1e-12);
        // Unknown model under a cost budget: refused, naming the fix; none: no model.
        let e = m.price_for(Some("my-local-model")).expect_err("unknown");
        assert!(
            e.contains("`my-local-model`") && e.contains("set `price`"),
            "{e}"
        );
        assert!(m.price_for(None).is_err());
        // Without a cost budget an unknown model is measured unpriced.
        let free = Meter::new(Pricing::default(), never());
        assert_eq!(free.price_for(Some("my-local-model")), Ok(None));
    }
}
