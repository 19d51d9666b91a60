//! Load-time checks of the names a plan or policy file gives the scoped
//! environment: `secrets:` of steps and agents, agents' `api_key_env` and
//! `headers`, and `env_passthrough:`. The rules are `policy::env`'s; this file only finds the
//! names and their positions. (Name syntax is the schema's.)

use crate::format::node::Node;
use crate::model::Diagnostic;
use crate::policy::env::{Refusal, passthrough_refusal, secret_refusal};
use crate::tools::spec::{items, str_of};

/// Every scoped-environment name of a plan: steps' and agents' `secrets`,
/// agents' `api_key_env` and `headers` values, `policy.env_passthrough`.
pub(super) fn check(file: &str, root: &Node, out: &mut Vec<Diagnostic>) {
    for step in items(root.child("steps")) {
        let sid = step.child("id").and_then(str_of).unwrap_or("?");
        names(
            file,
            step.child("secrets"),
            &format!("`secrets` of step `{sid}`"),
            secret_refusal,
            out,
        );
    }
    if let Some(crate::format::node::NodeValue::Map(agents)) =
        root.child("agents").map(|n| &n.value)
    {
        for (k, a) in agents {
            let place = format!("`secrets` of agent `{}`", k.name);
            names(file, a.child("secrets"), &place, secret_refusal, out);
            if let Some(n) = a.child("api_key_env")
                && let Some(name) = str_of(n)
                && let Some(r) = secret_refusal(name)
            {
                let place = format!("`api_key_env` of agent `{}`", k.name);
                out.push(Diagnostic::at(file, n.pos, r.message(name, &place)).help(r.help()));
            }
            if let Some(crate::format::node::NodeValue::Map(headers)) =
                a.child("headers").map(|n| &n.value)
            {
                for (h, n) in headers {
                    if let Some(name) = str_of(n)
                        && let Some(r) = secret_refusal(name)
                    {
                        let place = format!("header `{}` of agent `{}`", h.name, k.name);
                        out.push(
                            Diagnostic::at(file, n.pos, r.message(name, &place)).help(r.help()),
                        );
                    }
                }
            }
        }
    }
    check_passthrough(file, root.child("policy"), "`policy.env_passthrough`", out);
}

/// `env_passthrough` of a policy block (a plan's `policy:` or a `--policy` file's root).
pub(crate) fn check_passthrough(
    file: &str,
    policy: Option<&Node>,
    place: &str,
    out: &mut Vec<Diagnostic>,
) {
    let list = policy.and_then(|p| p.child("env_passthrough"));
    names(file, list, place, passthrough_refusal, out);
}

fn names(
    file: &str,
    list: Option<&Node>,
    place: &str,
    refusal: fn(&str) -> Option<Refusal>,
    out: &mut Vec<Diagnostic>,
) {
    for n in items(list) {
        if let Some(name) = str_of(n)
            && let Some(r) = refusal(name)
        {
            out.push(Diagnostic::at(file, n.pos, r.message(name, place)).help(r.help()));
        }
    }
}
