//! Where a step would send a declared secret, and the operator's say on it
//! (SPEC "Where a secret may go"). A plan is written by whoever opened the
//! pull request: it may name any host, so only the `--policy` file decides
//! where a secret may go (its `allowed_hosts` for every secret, its
//! `secret_hosts` per name; the plan's `allowed_hosts` never counts). A step
//! that would send one elsewhere is floored at dangerous: not auto-approved
//! below tolerance high, run with `--approve`. A host plangate cannot know
//! before the run (any host, a URL it cannot read, a sandbox that does not
//! hold the step to its list) counts as not allowed. Pure.

use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::hosts::{self, HostPattern, Target};
use crate::tools::params::Action;
use crate::tools::params::agent::AgentAction;
use crate::tools::params::http::HeaderValueSpec;
use crate::tools::spec::ToolEnv;
use crate::tools::step::Step;

/// Where a secret goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum To {
    /// The hosts `pattern` matches (an `egress` entry, a URL's host), on `ports`.
    Host {
        shown: String,
        pattern: HostPattern,
        ports: Vec<u16>,
    },
    /// A host plangate cannot know before the run: why.
    Unknown(String),
}

/// One secret and one place it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Send {
    secret: String,
    to: To,
}

/// A URL's host as one exact pattern (its port).
fn url_to(url: &str) -> To {
    match hosts::parse_url(url) {
        Ok((_, t)) => target_to(&t),
        Err(_) => To::Unknown("a URL plangate cannot read".to_owned()),
    }
}

fn target_to(t: &Target) -> To {
    let default = if t.https { 443 } else { 80 };
    To::Host {
        shown: if t.port == default {
            t.host.clone()
        } else {
            format!("{}:{}", t.host, t.port)
        },
        pattern: HostPattern {
            wildcard: false,
            host: t.host.clone(),
            port: Some(t.port),
        },
        ports: vec![t.port],
    }
}

/// Whether `url` is the provider's own public API (`default`, over TLS):
/// its key's destination, which the plan did not choose.
fn is_vendor(url: &str, default: &str) -> bool {
    match (hosts::parse_url(url), hosts::parse_url(default)) {
        (Ok((_, a)), Ok((_, b))) => a.https && a == b,
        _ => false,
    }
}

/// What plangate itself sends: an `http_request`'s `{secret: NAME}` headers
/// to its URL; an HTTP agent provider's key and header variables to its
/// `base_url`; the real key of an agent with `api` to `api.base_url`. A
/// provider's own public API (`base_url` unset, or the same origin) is left
/// out: the key is the vendor's.
fn plangate_sends(step: &Step) -> Vec<Send> {
    let mut out = Vec::new();
    match &step.action {
        Action::Http(h) => {
            for v in h.params.headers.values() {
                if let HeaderValueSpec::Secret(s) = v {
                    out.push(Send {
                        secret: s.secret.clone(),
                        to: url_to(&h.params.url),
                    });
                }
            }
        }
        Action::Agent(a) => agent_sends(a, &mut out),
        _ => {}
    }
    out
}

fn agent_sends(a: &AgentAction, out: &mut Vec<Send>) {
    use crate::egress::api::Provider as Api;
    use crate::format::agent::ProviderKind;
    let vendor = match a.provider {
        ProviderKind::Anthropic => Some(Api::Anthropic.default_base_url()),
        ProviderKind::Openai => Some(Api::Openai.default_base_url()),
        ProviderKind::Command | ProviderKind::Replay => None,
    };
    if let Some(vendor) = vendor {
        let url = a.agent.base_url.as_deref().unwrap_or(vendor);
        if !is_vendor(url, vendor) {
            let names = a
                .key_env()
                .map(str::to_owned)
                .into_iter()
                .chain(a.agent.headers.iter().flatten().map(|(_, v)| v.clone()));
            for secret in names {
                out.push(Send {
                    secret,
                    to: url_to(url),
                });
            }
        }
    }
    if let (Some(p), Some(key)) = (a.api_provider(), a.api_key_env()) {
        let url = (a.agent.api.as_ref())
            .and_then(|x| x.base_url.clone())
            .unwrap_or_else(|| p.default_base_url().to_owned());
        if !is_vendor(&url, p.default_base_url()) {
            out.push(Send {
                secret: key,
                to: url_to(&url),
            });
        }
    }
}

/// Where the step's processes may send the secrets they hold: the hosts of
/// its `egress` list; anywhere with `network: true`, without a sandbox, or
/// where the sandbox does not hold it to its list.
fn process_reach(step: &Step, env: &ToolEnv) -> Vec<To> {
    use crate::model::sandbox::{EGRESS, ENFORCED};
    let Some(req) = step.sandbox_request(&env.workspace, env.home.as_deref()) else {
        return Vec::new();
    };
    let backend = env.sandbox.as_ref().and_then(|a| a.backend());
    if req.unsandboxed {
        return vec![To::Unknown(
            "any host (it runs without a sandbox, `sandbox: false`)".to_owned(),
        )];
    }
    if req.network {
        return vec![To::Unknown("any host (`network: true`)".to_owned())];
    }
    if backend.is_none() {
        return vec![To::Unknown(
            "any host (no sandbox backend confines its network here)".to_owned(),
        )];
    }
    let Some(list) = &req.egress else {
        // The sandbox gives it no network.
        return Vec::new();
    };
    let enforced = env
        .sandbox
        .as_ref()
        .and_then(|a| a.properties.get(EGRESS))
        .is_some_and(|v| v == ENFORCED);
    if !list.is_empty() && !enforced {
        return vec![To::Unknown(
            "any host (the sandbox here holds `egress` to the proxy's port only)".to_owned(),
        )];
    }
    list.iter()
        .map(|e| match HostPattern::parse(e) {
            Ok(p) => To::Host {
                shown: e.clone(),
                ports: p.port.map_or_else(|| vec![80, 443], |q| vec![q]),
                pattern: p,
            },
            Err(_) => To::Unknown(format!("`{e}`, which plangate cannot read")),
        })
        .collect()
}

/// Every secret the step would send and where.
fn sends(step: &Step, env: &ToolEnv) -> Vec<Send> {
    let mut out = plangate_sends(step);
    let mut held = step.secret_names();
    // With `api` the CLI holds a placeholder, not the key (its rollback would).
    if let Action::Agent(a) = &step.action
        && step.rollback_command.is_none()
        && let Some(k) = a.api_key_env()
    {
        held.remove(&k);
    }
    if !held.is_empty() {
        let reach = process_reach(step, env);
        for secret in &held {
            out.extend(reach.iter().map(|to| Send {
                secret: secret.clone(),
                to: to.clone(),
            }));
        }
    }
    out
}

/// Floor `c` at dangerous when the step would send a declared secret to a
/// host the operator's policy does not allow for it; the reason names each.
pub(crate) fn floor(step: &Step, env: &ToolEnv, c: &mut StepClassification) {
    let mut denied: Vec<(String, Vec<String>)> = Vec::new();
    let mut unknown = false;
    for s in sends(step, env) {
        let shown = match &s.to {
            To::Host {
                shown,
                pattern,
                ports,
            } => {
                if ports
                    .iter()
                    .all(|&p| env.secret_hosts.allows(&s.secret, pattern, p))
                {
                    continue;
                }
                format!("`{shown}`")
            }
            To::Unknown(why) => {
                unknown = true;
                why.clone()
            }
        };
        match denied.iter_mut().find(|(n, _)| *n == s.secret) {
            Some((_, to)) if !to.contains(&shown) => to.push(shown),
            Some(_) => {}
            None => denied.push((s.secret, vec![shown])),
        }
    }
    if denied.is_empty() {
        return;
    }
    let what: Vec<String> = denied
        .iter()
        .map(|(n, to)| format!("secret `{n}` to {}", to.join(", ")))
        .collect();
    let fix = if unknown {
        "list the hosts it needs (`egress`), add them to the --policy file's allowed_hosts (or secret_hosts), or approve the step"
    } else {
        "add the host to the --policy file's allowed_hosts (or secret_hosts) or approve the step"
    };
    let why = format!(
        "sends {}, which the operator's policy does not allow (a plan's own allowed_hosts does not count); {fix}",
        what.join(" and ")
    );
    if Risk::Dangerous > c.classified.max(c.floor) {
        c.reason = if c.reason.is_empty() {
            why
        } else {
            format!("{why}; {}", c.reason)
        };
    } else {
        c.reason = if c.reason.is_empty() {
            why
        } else {
            format!("{}; {why}", c.reason)
        };
    }
    c.floor = Risk::Dangerous;
}
