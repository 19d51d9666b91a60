//! Load-time checks of the `agents:` block: each agent's provider, the keys
//! that provider takes and needs (declared by the provider), its command,
//! URL, key variable, replay file, timeouts and price. Pure.

use super::provider;
use crate::format::agent::ProviderKind;
use crate::format::names::env_name_ok;
use crate::format::node::{Node, NodeValue, Pos};
use crate::format::timeout::check_timeout;
use crate::model::Diagnostic;
use crate::tools::spec::{items, str_of};

/// Provider-specific checks of every agent definition.
pub(crate) fn check_agents(file: &str, root: &Node, out: &mut Vec<Diagnostic>) {
    let Some(NodeValue::Map(agents)) = root.child("agents").map(|n| &n.value) else {
        return;
    };
    let (run_cost, step_cost) = cost_budgets(root);
    for (k, a) in agents {
        let name = &k.name;
        let provider = match a.child("provider").and_then(str_of) {
            Some(p) => p,
            None if a.child("command").is_some() || a.child("preset").is_some() => "command",
            None => {
                out.push(
                    Diagnostic::at(file, k.pos, format!("agent `{name}` has neither `provider` nor `command`"))
                        .help("set `preset: claude-code` (or codex, gemini-cli), or `command: [cli, args...]`, or `provider: openai` with `base_url` and `model`, or `provider: anthropic` with `model`, or `provider: replay` with `file`"),
                );
                continue;
            }
        };
        let Some(kind) = ProviderKind::from_name(provider) else {
            continue;
        };
        let (required, allowed) = (
            provider::of(kind).required_keys(),
            provider::of(kind).keys(),
        );
        for r in required {
            if a.child(r).is_none() {
                out.push(
                    Diagnostic::at(
                        file,
                        k.pos,
                        format!("agent `{name}` (provider {provider}) needs `{r}`"),
                    )
                    .help(format!("add `{r}:` to agent `{name}`")),
                );
            }
        }
        if kind == ProviderKind::Command {
            check_preset(file, name, k.pos, a, out);
        }
        let specific = provider::specific_keys();
        if let NodeValue::Map(pairs) = &a.value {
            for (key, _) in pairs {
                if specific.contains(&key.name.as_str()) && !allowed.contains(&key.name.as_str()) {
                    out.push(
                        Diagnostic::at(
                            file,
                            key.pos,
                            format!(
                                "`{}` does not apply to agent `{name}` (provider {provider})",
                                key.name
                            ),
                        )
                        .help("remove it, or change the agent's `provider`"),
                    );
                }
            }
        }
        if let Some(cmd) = a.child("command")
            && items(Some(cmd))
                .first()
                .and_then(str_of)
                .is_some_and(|s| s.trim().is_empty())
        {
            out.push(
                Diagnostic::at(
                    file,
                    cmd.pos,
                    format!("the program of agent `{name}` is empty"),
                )
                .help("the first item is the program to run"),
            );
        }
        if let Some(u) = a.child("base_url").and_then(|n| str_of(n).map(|s| (n, s)))
            && !(u.1.starts_with("http://") || u.1.starts_with("https://"))
        {
            out.push(
                Diagnostic::at(
                    file,
                    u.0.pos,
                    format!("`base_url` of agent `{name}` is not an http(s) URL"),
                )
                .help("e.g. https://api.openai.com/v1"),
            );
        }
        if let Some(e) = a
            .child("api_key_env")
            .and_then(|n| str_of(n).map(|s| (n, s)))
            && !env_name_ok(e.1)
        {
            out.push(
                Diagnostic::at(file, e.0.pos, format!("`api_key_env` of agent `{name}` is not an environment variable name"))
                    .help("name the variable that holds the key (e.g. OPENAI_API_KEY), never the key itself"),
            );
        }
        if let Some(f) = a.child("file").and_then(|n| str_of(n).map(|s| (n, s)))
            && f.1.trim().is_empty()
        {
            out.push(
                Diagnostic::at(file, f.0.pos, format!("`file` of agent `{name}` is empty"))
                    .help("name the recorded answers file"),
            );
        }
        check_egress(file, name, a, out);
        check_api(file, name, a, out);
        check_headers(file, name, kind, a, out);
        check_timeouts(file, name, a, out);
        let needs_price = run_cost || step_cost.contains(&name.as_str());
        check_price(file, (name, k.pos), kind, a, needs_price, out);
    }
}

/// Under a cost budget (the run's, its steps', or the agent's own), every
/// call of the agent must have a price.
fn check_price(
    file: &str,
    (name, pos): (&str, Pos),
    kind: ProviderKind,
    a: &Node,
    needs_price: bool,
    out: &mut Vec<Diagnostic>,
) {
    let own = a
        .child("budget")
        .and_then(|b| b.child("max_cost_usd"))
        .is_some();
    let from = PriceFrom {
        price: a.child("price").is_some(),
        api: a.child("api").is_some(),
        kind,
        model: a.child("model").and_then(str_of),
    };
    if (needs_price || own)
        && let Err(why) = from.check(name)
    {
        out.push(Diagnostic::at(file, pos, why).help(PRICE_HELP));
    }
}

/// Whether the plan sets a cost budget for the run (or every step), and the
/// agents called by a step whose own `budget` sets one.
fn cost_budgets(root: &Node) -> (bool, Vec<&str>) {
    let policy_cost = |key: &str| {
        root.child("policy")
            .and_then(|p| p.child(key))
            .and_then(|b| b.child("max_cost_usd"))
            .is_some()
    };
    let run_cost = policy_cost("budget") || policy_cost("step_budget");
    // Agents called by a step whose own `budget` has a cost limit.
    let step_cost: Vec<&str> = items(root.child("steps"))
        .iter()
        .filter_map(|s| s.child("parameters"))
        .filter(|p| {
            p.child("budget")
                .and_then(|b| b.child("max_cost_usd"))
                .is_some()
        })
        .filter_map(|p| p.child("agent").and_then(str_of))
        .collect();
    (run_cost, step_cost)
}

/// What to do about an agent without a price under a cost budget.
pub(crate) const PRICE_HELP: &str = "give the agent `price: {input_per_mtok: X, output_per_mtok: Y}` (and `cached_input_per_mtok`, `cache_write_per_mtok` if it uses a prompt cache), or use a model with a built-in price; plangate never prices a call at zero";

/// Where an agent's cost comes from under a cost budget.
pub(crate) struct PriceFrom<'a> {
    /// It has `price`.
    pub price: bool,
    /// It is served by plangate's model API endpoint (each call priced by the model it names).
    pub api: bool,
    /// Its provider.
    pub kind: ProviderKind,
    /// Its `model`.
    pub model: Option<&'a str>,
}

impl PriceFrom<'_> {
    /// Ok when every call of the agent has a price; Err names why not.
    pub(crate) fn check(&self, name: &str) -> Result<(), String> {
        if self.price || (self.kind == ProviderKind::Command && self.api) {
            // With `api`, the endpoint prices each call by the model it names
            // and refuses one whose model has no price.
            return Ok(());
        }
        match (self.kind, self.model) {
            (ProviderKind::Openai | ProviderKind::Anthropic, Some(m)) => {
                match crate::egress::prices::lookup(m) {
                    Some(_) => Ok(()),
                    None => Err(format!(
                        "agent `{name}`: model `{m}` is not in {}, and a cost budget is in force",
                        crate::egress::prices::sources()
                    )),
                }
            }
            (ProviderKind::Command, _) => Err(format!(
                "agent `{name}` has no `price` and no `api` (plangate's endpoint, which prices each call by its model), and a cost budget is in force"
            )),
            _ => Err(format!(
                "agent `{name}` has no `price` and no `model` with a built-in price, and a cost budget is in force"
            )),
        }
    }
}

/// An agent's `api` names its provider (or has a preset that does), an
/// http(s) `base_url` and a variable name.
fn check_api(file: &str, name: &str, a: &Node, out: &mut Vec<Diagnostic>) {
    let Some(api) = a.child("api") else {
        return;
    };
    if api.child("provider").is_none() && a.child("preset").is_none() {
        out.push(
            Diagnostic::at(
                file,
                api.pos,
                format!("`api` of agent `{name}` names no provider"),
            )
            .help("set `provider: anthropic` (or openai, gemini), or give the agent a `preset`"),
        );
    }
    if let Some(u) = api
        .child("base_url")
        .and_then(|n| str_of(n).map(|s| (n, s)))
        && !(u.1.starts_with("https://") || u.1.starts_with("http://"))
    {
        out.push(
            Diagnostic::at(
                file,
                u.0.pos,
                format!("`api.base_url` of agent `{name}` is not an http(s) URL"),
            )
            .help("e.g. https://api.anthropic.com"),
        );
    }
    if let Some(e) = api
        .child("api_key_env")
        .and_then(|n| str_of(n).map(|s| (n, s)))
        && !env_name_ok(e.1)
    {
        out.push(
            Diagnostic::at(
                file,
                e.0.pos,
                format!("`api.api_key_env` of agent `{name}` is not an environment variable name"),
            )
            .help("name the variable that holds the key, never the key itself"),
        );
    }
}

/// An agent's `egress` entries are hosts.
fn check_egress(file: &str, name: &str, a: &Node, out: &mut Vec<Diagnostic>) {
    let Some(e) = a.child("egress") else {
        return;
    };
    let list: Vec<String> = items(Some(e))
        .iter()
        .filter_map(|n| str_of(n).map(str::to_owned))
        .collect();
    if let Err(why) = crate::egress::Rules::parse(&list) {
        out.push(
            Diagnostic::at(file, e.pos, format!("agent `{name}`: {why}")).help(
                "list host names, `*.domain`, or IP addresses, each with an optional `:port`",
            ),
        );
    }
}

/// A `command` agent has a `command` or a `preset`; `args` only go with a
/// preset, whose output format is its own.
fn check_preset(file: &str, name: &str, pos: Pos, a: &Node, out: &mut Vec<Diagnostic>) {
    let preset = a.child("preset").and_then(str_of);
    if a.child("command").is_none() && a.child("preset").is_none() {
        out.push(
            Diagnostic::at(
                file,
                pos,
                format!("agent `{name}` (provider command) needs `command` or `preset`"),
            )
            .help("add `preset: claude-code` (or codex, gemini-cli), or `command: [cli, args...]`"),
        );
    }
    if let Some(n) = a.child("args")
        && a.child("preset").is_none()
    {
        out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!("`args` of agent `{name}` only apply with a `preset`"),
            )
            .help("put the arguments in `command`"),
        );
    }
    if let (Some(n), Some(p)) = (a.child("output_format"), preset) {
        out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!("`output_format` of agent `{name}` is set by its preset `{p}`"),
            )
            .help("remove `output_format`, or drop the preset and write the whole `command`"),
        );
    }
}

/// Why an agent's `headers` may not set `header` (None: it may): the
/// transport's own headers, and the ones its provider sets (the key, the
/// API version).
fn reserved_header(kind: ProviderKind, a: &Node, header: &str) -> Option<&'static str> {
    let h = header.to_ascii_lowercase();
    let transport = matches!(
        h.as_str(),
        "host" | "content-length" | "content-type" | "transfer-encoding" | "connection" | "upgrade"
    );
    let key = match kind {
        ProviderKind::Openai => h == "authorization" && a.child("api_key_env").is_some(),
        ProviderKind::Anthropic => h == "x-api-key",
        _ => false,
    };
    if transport {
        Some("remove it: the HTTP client sets it for the JSON request")
    } else if key {
        Some("remove it: the API key comes from the variable `api_key_env` names")
    } else if kind == ProviderKind::Anthropic && h == "anthropic-version" {
        Some("remove it: plangate speaks `anthropic-version: 2023-06-01`, the version it reads")
    } else {
        None
    }
}

/// `headers`: each name an HTTP header name the provider does not set
/// itself (that each value names an environment variable is the schema's).
fn check_headers(file: &str, name: &str, kind: ProviderKind, a: &Node, out: &mut Vec<Diagnostic>) {
    let Some(NodeValue::Map(pairs)) = a.child("headers").map(|n| &n.value) else {
        return;
    };
    for (k, _) in pairs {
        let header = k.name.as_str();
        let token = !header.is_empty()
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            out.push(
                Diagnostic::at(
                    file,
                    k.pos,
                    format!("`{header}` in `headers` of agent `{name}` is not an HTTP header name"),
                )
                .help("use letters, digits and `-`, e.g. `api-key` or `HTTP-Referer`"),
            );
        } else if let Some(help) = reserved_header(kind, a, header) {
            out.push(
                Diagnostic::at(
                    file,
                    k.pos,
                    format!("`headers` of agent `{name}` may not set `{header}`: plangate sets it"),
                )
                .help(help),
            );
        }
    }
}

/// The agent's `retry_base_delay` and `idle_timeout`.
fn check_timeouts(file: &str, name: &str, a: &Node, out: &mut Vec<Diagnostic>) {
    for key in ["retry_base_delay", "idle_timeout"] {
        check_timeout(
            file,
            a.child(key),
            &format!("`{key}` of agent `{name}`"),
            out,
        );
    }
}
