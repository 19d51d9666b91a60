//! The built-in model prices (`prices.toml`, compiled in): the providers'
//! published per-million-token rates, cached input and cache writes at their
//! own rates, a long-prompt tier where the provider has one. Pure.
//!
//! A model is found by its exact id, else by the id without one date suffix
//! (`-20250929`, `-2025-04-14`) or `-latest`, each also against the rows'
//! `aliases`; never by a looser prefix (`gpt-5-mini` is not `gpt-5`). A model
//! not found has no price: the caller fails closed under a cost budget.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::model::Usage;

const TABLE: &str = include_str!("prices.toml");

/// One set of rates, USD per million tokens, every figure resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tier {
    /// Prompt tokens outside the cache.
    pub input: f64,
    /// Answer tokens.
    pub output: f64,
    /// Prompt tokens read from the cache.
    pub cached_input: f64,
    /// Prompt tokens written to the cache (Anthropic: 5-minute writes).
    pub cache_write: f64,
    /// Anthropic's 1-hour cache writes.
    pub cache_write_1h: f64,
}

/// A model's prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rates {
    /// The rates of an ordinary request.
    pub base: Tier,
    /// Prompts over this many tokens pay these rates on all their tokens.
    pub long: Option<(u64, Tier)>,
}

impl Rates {
    /// Flat rates (an agent's `price`): cached input and cache writes at
    /// their own rate when given, else at the input rate.
    pub(crate) fn flat(input: f64, output: f64, cached: Option<f64>, write: Option<f64>) -> Rates {
        Rates {
            base: Tier {
                input,
                output,
                cached_input: cached.unwrap_or(input),
                cache_write: write.unwrap_or(input),
                cache_write_1h: write.unwrap_or(input),
            },
            long: None,
        }
    }

    /// The dollars of one request's usage (`write_1h`: of its cache writes,
    /// the 1-hour ones).
    pub(crate) fn cost(&self, u: &Usage, write_1h: u64) -> f64 {
        let t = match self.long {
            Some((above, long)) if u.input_tokens > above => long,
            _ => self.base,
        };
        let read = u.cache_read_input_tokens;
        let write = u.cache_creation_input_tokens;
        let write_1h = write_1h.min(write);
        let fresh = u.input_tokens.saturating_sub(read + write);
        (fresh as f64 * t.input
            + read as f64 * t.cached_input
            + (write - write_1h) as f64 * t.cache_write
            + write_1h as f64 * t.cache_write_1h
            + u.output_tokens as f64 * t.output)
            / 1e6
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    provider: Vec<Source>,
    model: Vec<Row>,
}

/// Where a provider's rows were taken from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Source {
    /// `anthropic`, `openai`, `gemini`.
    pub name: String,
    /// The pricing page.
    pub source: String,
    /// The date the rates were taken (YYYY-MM-DD).
    pub as_of: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    provider: String,
    id: String,
    #[serde(default)]
    aliases: Vec<String>,
    input: f64,
    output: f64,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
    cache_write_1h: Option<f64>,
    long_above: Option<u64>,
    long_input: Option<f64>,
    long_output: Option<f64>,
    long_cached_input: Option<f64>,
    long_cache_write: Option<f64>,
    long_cache_write_1h: Option<f64>,
}

impl Row {
    fn rates(&self) -> Result<Rates, String> {
        let tier = |i: f64, o: f64, c: Option<f64>, w: Option<f64>, w1: Option<f64>| Tier {
            input: i,
            output: o,
            cached_input: c.unwrap_or(i),
            cache_write: w.unwrap_or(i),
            cache_write_1h: w1.or(w).unwrap_or(i),
        };
        let long = match (self.long_above, self.long_input, self.long_output) {
            (None, None, None) => None,
            (Some(a), Some(i), Some(o)) => Some((
                a,
                tier(
                    i,
                    o,
                    self.long_cached_input,
                    self.long_cache_write,
                    self.long_cache_write_1h,
                ),
            )),
            _ => {
                return Err(format!(
                    "model `{}`: `long_above`, `long_input` and `long_output` go together",
                    self.id
                ));
            }
        };
        Ok(Rates {
            base: tier(
                self.input,
                self.output,
                self.cached_input,
                self.cache_write,
                self.cache_write_1h,
            ),
            long,
        })
    }
}

/// The checked table.
#[derive(Debug)]
pub(crate) struct Table {
    /// Each provider's page and date.
    pub sources: Vec<Source>,
    /// (provider, id, aliases, rates).
    rows: Vec<(String, String, Vec<String>, Rates)>,
}

/// Read and check a price table: every rate finite and not negative, cached
/// input not above input, each provider named with an https source and a
/// date, no id or alias twice.
pub(crate) fn parse(text: &str) -> Result<Table, String> {
    let f: File = toml::from_str(text).map_err(|e| format!("prices.toml: {e}"))?;
    for s in &f.provider {
        let date_ok = s.as_of.len() == 10
            && s.as_of.bytes().enumerate().all(|(i, b)| {
                if i == 4 || i == 7 {
                    b == b'-'
                } else {
                    b.is_ascii_digit()
                }
            });
        if !s.source.starts_with("https://") || !date_ok {
            return Err(format!(
                "prices.toml: provider `{}` needs an https `source` and an `as_of` date (YYYY-MM-DD)",
                s.name
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::new();
    for r in &f.model {
        if !f.provider.iter().any(|p| p.name == r.provider) {
            return Err(format!(
                "prices.toml: model `{}` names provider `{}`, which has no [[provider]] entry",
                r.id, r.provider
            ));
        }
        let rates = r.rates()?;
        for t in std::iter::once(rates.base).chain(rates.long.map(|l| l.1)) {
            let all = [
                t.input,
                t.output,
                t.cached_input,
                t.cache_write,
                t.cache_write_1h,
            ];
            if all.iter().any(|x| !x.is_finite() || *x < 0.0) || t.cached_input > t.input {
                return Err(format!(
                    "prices.toml: model `{}` has a negative or non-finite rate, or cached input above input",
                    r.id
                ));
            }
        }
        for name in std::iter::once(&r.id).chain(&r.aliases) {
            if name.trim().is_empty() || !seen.insert(name.clone()) {
                return Err(format!("prices.toml: `{name}` is listed twice (or empty)"));
            }
        }
        rows.push((r.provider.clone(), r.id.clone(), r.aliases.clone(), rates));
    }
    Ok(Table {
        sources: f.provider,
        rows,
    })
}

/// The built-in table (None when the compiled-in file is broken: then no
/// model has a price, and a cost budget refuses every unpriced agent).
pub(crate) fn table() -> Option<&'static Table> {
    static T: OnceLock<Option<Table>> = OnceLock::new();
    T.get_or_init(|| parse(TABLE).ok()).as_ref()
}

impl Table {
    /// The rates of `model` and the id of its row.
    pub(crate) fn lookup(&self, model: &str) -> Option<(&str, Rates)> {
        let m = model.trim();
        let m = m.strip_prefix("models/").unwrap_or(m);
        for cand in candidates(m) {
            if let Some((_, id, _, r)) = self
                .rows
                .iter()
                .find(|(_, id, aliases, _)| *id == cand || aliases.contains(&cand))
            {
                return Some((id, *r));
            }
        }
        None
    }
}

/// "plangate's built-in prices (anthropic as of DATE, ...)".
pub(crate) fn sources() -> String {
    let Some(t) = table() else {
        return "plangate's built-in prices (its table is broken)".to_owned();
    };
    let v: Vec<String> = t
        .sources
        .iter()
        .map(|s| format!("{} as of {}", s.name, s.as_of))
        .collect();
    format!("plangate's built-in prices ({})", v.join(", "))
}

/// The built-in rates of `model`, if it has some.
pub(crate) fn lookup(model: &str) -> Option<Rates> {
    table()?.lookup(model).map(|(_, r)| r)
}

/// The id itself, then without one date suffix or `-latest`.
fn candidates(m: &str) -> Vec<String> {
    let mut v = vec![m.to_owned()];
    if let Some(base) = m.strip_suffix("-latest") {
        v.push(base.to_owned());
    }
    let b = m.as_bytes();
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    // -YYYYMMDD
    if b.len() > 9 && b[b.len() - 9] == b'-' && digits(&b[b.len() - 8..]) {
        v.push(m[..m.len() - 9].to_owned());
    }
    // -YYYY-MM-DD
    if b.len() > 11 {
        let t = &b[b.len() - 11..];
        if t[0] == b'-'
            && digits(&t[1..5])
            && t[5] == b'-'
            && digits(&t[6..8])
            && t[8] == b'-'
            && digits(&t[9..11])
        {
            v.push(m[..m.len() - 11].to_owned());
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_table_is_valid() {
        let t = parse(TABLE).expect("prices.toml");
        for p in ["anthropic", "openai", "gemini"] {
            assert!(t.sources.iter().any(|s| s.name == p), "{p}");
        }
        assert!(t.rows.len() >= 30, "{}", t.rows.len());
        // Every row is found by its id, and a dated id finds it too.
        for (_, id, _, _) in &t.rows {
            assert_eq!(t.lookup(id).map(|x| x.0), Some(id.as_str()));
        }
    }

    /// Each case: the model as a CLI sends it, the row it must find (None: no price).
    #[test]
    fn lookup_by_exact_id_then_date_suffix_or_latest_only() {
        let t = parse(TABLE).expect("prices.toml");
        let cases: &[(&str, Option<&str>)] = &[
            ("claude-sonnet-4-5", Some("claude-sonnet-4-5")),
            ("claude-sonnet-4-5-20250929", Some("claude-sonnet-4-5")),
            ("claude-opus-4-20250514", Some("claude-opus-4-0")),
            ("claude-3-7-sonnet-latest", Some("claude-3-7-sonnet")),
            ("claude-3-5-haiku-20241022", Some("claude-3-5-haiku")),
            ("gpt-5", Some("gpt-5")),
            ("gpt-5-mini", Some("gpt-5-mini")),
            ("gpt-5-mini-2025-08-07", Some("gpt-5-mini")),
            ("gpt-4.1-2025-04-14", Some("gpt-4.1")),
            ("codex-mini-latest", Some("codex-mini-latest")),
            ("models/gemini-2.5-pro", Some("gemini-2.5-pro")),
            ("gemini-2.5-flash", Some("gemini-2.5-flash")),
            // Never a looser match.
            ("gpt-5-turbo", None),
            ("gpt-5-mini-extra", None),
            ("gpt-", None),
            ("claude-sonnet", None),
            ("claude-sonnet-4-5-2025", None),
            ("gemini-2.5-pro-exp", None),
            ("GPT-5", None),
            ("", None),
            ("my-local-model", None),
        ];
        for (q, want) in cases {
            assert_eq!(t.lookup(q).map(|x| x.0), *want, "{q}");
        }
    }

    #[test]
    fn cached_input_and_cache_writes_have_their_own_price() {
        let r = lookup("claude-sonnet-4-5").expect("sonnet");
        let u = Usage {
            input_tokens: 1_000_000 + 2_000_000 + 1_000_000,
            output_tokens: 100_000,
            cache_read_input_tokens: 2_000_000,
            cache_creation_input_tokens: 1_000_000,
            ..Usage::default()
        };
        // 1 M fresh at 3, 2 M read at 0.30, 1 M written: 0.5 M 5-minute at 3.75
        // and 0.5 M 1-hour at 6, 0.1 M out at 15: but 4 M prompt tokens is over
        // the 200k tier, so the long rates apply.
        let long = 6.0 + 2.0 * 0.60 + 0.5 * 7.5 + 0.5 * 12.0 + 0.1 * 22.5;
        assert!(
            (r.cost(&u, 500_000) - long).abs() < 1e-9,
            "{}",
            r.cost(&u, 500_000)
        );
        let small = Usage {
            input_tokens: 1000 + 2000,
            output_tokens: 100,
            cache_read_input_tokens: 2000,
            ..Usage::default()
        };
        let want = (1000.0 * 3.0 + 2000.0 * 0.30 + 100.0 * 15.0) / 1e6;
        assert!((r.cost(&small, 0) - want).abs() < 1e-12);
        let o = lookup("gpt-5").expect("gpt-5");
        let u = Usage {
            input_tokens: 300,
            output_tokens: 10,
            cache_read_input_tokens: 200,
            ..Usage::default()
        };
        let want = (100.0 * 1.25 + 200.0 * 0.125 + 10.0 * 10.0) / 1e6;
        assert!((o.cost(&u, 0) - want).abs() < 1e-12);
        // A flat `price` without cache rates prices cached tokens at input.
        let f = Rates::flat(2.0, 4.0, None, None);
        assert!((f.cost(&u, 0) - (300.0 * 2.0 + 40.0) / 1e6).abs() < 1e-12);
    }

    #[test]
    fn broken_tables_are_refused() {
        let head = "[[provider]]\nname='x'\nsource='https://e.example'\nas_of='2026-01-01'\n";
        let bad = [
            format!("{head}[[model]]\nprovider='x'\nid='a'\ninput=-1.0\noutput=1.0\n"),
            format!(
                "{head}[[model]]\nprovider='x'\nid='a'\ninput=1.0\noutput=1.0\ncached_input=2.0\n"
            ),
            format!("{head}[[model]]\nprovider='y'\nid='a'\ninput=1.0\noutput=1.0\n"),
            format!(
                "{head}[[model]]\nprovider='x'\nid='a'\ninput=1.0\noutput=1.0\n[[model]]\nprovider='x'\nid='a'\ninput=1.0\noutput=1.0\n"
            ),
            format!("{head}[[model]]\nprovider='x'\nid='a'\ninput=1.0\noutput=1.0\nlong_above=5\n"),
            "[[provider]]\nname='x'\nsource='http://e.example'\nas_of='2026-01-01'\nmodel=[]\n"
                .to_owned(),
            format!("{head}[[model]]\nprovider='x'\nid='a'\ninput=1.0\noutput=1.0\nmystery=1\n"),
        ];
        for b in bad {
            assert!(parse(&b).is_err(), "{b}");
        }
    }
}
