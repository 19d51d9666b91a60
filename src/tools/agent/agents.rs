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
    let needs_price = root
        .child("policy")
        .and_then(|p| p.child("budget"))
        .and_then(|b| b.child("max_cost_usd"))
        .is_some();
    for (k, a) in agents {
        let name = &k.name;
        let provider = match a.child("provider").and_then(str_of) {
            Some(p) => p,
            None if a.child("command").is_some() || a.child("preset").is_some() => "command",
            None => {
                out.push(
                    Diagnostic::at(file, k.pos, format!("agent `{name}` has neither `provider` nor `command`"))
                        .help("set `preset: claude-code` (or codex, gemini-cli), or `command: [cli, args...]`, or `provider: openai` with `base_url` and `model`, or `provider: replay` with `file`"),
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
        check_timeout(
            file,
            a.child("idle_timeout"),
            &format!("`idle_timeout` of agent `{name}`"),
            out,
        );
        if needs_price && a.child("price").is_none() {
            out.push(
                Diagnostic::at(file, k.pos, format!("agent `{name}` has no `price`, but `policy.budget.max_cost_usd` is set"))
                    .help("give `price: {input_per_mtok: X, output_per_mtok: Y}` so the cost budget can be enforced"),
            );
        }
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
