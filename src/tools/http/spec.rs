//! The `http_request` tool's load-time checks (URL, headers, body), the
//! allow-list check after a policy is known, lowering, classification (reads
//! moderate, writes dangerous) and permission needs. Pure.

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

use crate::format::node::{Node, NodeValue};
use crate::format::timeout::Timeout;
use crate::model::Diagnostic;
use crate::model::Level;
use crate::model::Risk;
use crate::policy::StepClassification;
use crate::policy::hosts;
use crate::policy::permissions::Access;
use crate::tools::params::Action;
use crate::tools::params::http::{HTTP_DEFAULT_TIMEOUT, HttpAction, HttpMethod, HttpRequestParams};
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, ToolEnv, ToolSpec, access, keys_of, schema_of,
};
use crate::tools::step::Step;

/// The `http_request` tool.
pub(crate) struct Spec;

impl ToolSpec for Spec {
    fn params_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        schema_of::<HttpRequestParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<HttpRequestParams>()
    }

    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
        check_http_params(cx.file, params, cx.sid, out);
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: HttpRequestParams = cx.workspace_params(params)?;
        hosts::parse_url(&p.url).map_err(|why| cx.workspace_error(format!("`url`: {why}")))?;
        for (k, v) in &p.headers {
            if let Some(why) = header_problem(k, Some(v)) {
                return Err(cx.workspace_error(why));
            }
        }
        if p.body.is_some() && p.method.is_read() {
            return Err(
                cx.workspace_error(format!("a {} request sends no `body`", p.method.as_str()))
            );
        }
        let timeout = Some(p.timeout.unwrap_or(Timeout(HTTP_DEFAULT_TIMEOUT)));
        Ok(Lowered {
            timeout,
            ..Lowered::action(Action::Http(Box::new(HttpAction {
                params: p,
                url_pos: cx.param_pos("url"),
            })))
        })
    }
}

impl ActionSpec for HttpAction {
    fn classify(&self, env: &ToolEnv) -> StepClassification {
        classify(self, env)
    }

    fn needs(&self) -> Vec<Access> {
        let level = match self.params.method {
            HttpMethod::Get | HttpMethod::Head | HttpMethod::Options => Level::Read,
            _ => Level::Write,
        };
        vec![access(self.params.url.clone(), level)]
    }

    fn show_cli(&self) -> bool {
        self.params.show_cli
    }

    fn may_write_workspace(&self) -> bool {
        false
    }
}

/// Whether a header (or query parameter) name looks like it carries a credential.
pub(crate) fn looks_sensitive(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    if matches!(n.as_str(), "www-authenticate" | "proxy-authenticate")
        || n.starts_with("access-control-")
    {
        return false;
    }
    [
        "auth",
        "token",
        "secret",
        "key",
        "session",
        "password",
        "passwd",
        "credential",
        "cookie",
        "signature",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// Network reads are moderate, writes dangerous; no TLS verification, or
/// credentials over plain http to another machine, are dangerous too.
fn classify(a: &HttpAction, env: &ToolEnv) -> StepClassification {
    let p = &a.params;
    let m = p.method.as_str();
    let target = match hosts::parse_url(&p.url) {
        Ok((_, t)) => t,
        Err(why) => {
            return StepClassification {
                floor: Risk::Moderate,
                classified: Risk::Dangerous,
                blocked: Some(format!("`url`: {why}")),
                unclassifiable: None,
                reason: format!("`url`: {why}"),
            };
        }
    };
    let mut risk = Risk::Moderate;
    let mut raised: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    if p.method.is_read() {
        notes.push(format!("{m} reads from {} over the network", target.host));
    } else {
        risk = Risk::Dangerous;
        raised.push(format!("{m} to {} can change remote state", target.host));
    }
    if !p.verify_ssl {
        risk = Risk::Dangerous;
        raised.push("TLS certificate verification is off (verify_ssl: false)".to_owned());
    }
    if !target.https && !target.is_loopback() {
        let sends_credentials = p
            .headers
            .keys()
            .any(|k| looks_sensitive(k) || is_listed(k, &p.sensitive_headers));
        if sends_credentials {
            risk = Risk::Dangerous;
            raised.push(format!(
                "credentials in headers go unencrypted over plain http to {}",
                target.host
            ));
        } else {
            notes.push(format!("plain http (unencrypted) to {}", target.host));
        }
    }
    let blocked = (!target.allowed_by(env.allowed_hosts.as_deref())).then(|| {
        format!(
            "host `{}` (port {}) is not in the policy's allowed_hosts",
            target.host, target.port
        )
    });
    raised.extend(notes);
    StepClassification {
        floor: Risk::Moderate,
        classified: risk,
        blocked,
        unclassifiable: None,
        reason: raised.join("; "),
    }
}

pub(crate) fn is_listed(name: &str, list: &[String]) -> bool {
    list.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// Request headers plangate sets itself: a plan setting them could send one
/// host's request to another (`Host`) or desynchronise the message framing.
pub(crate) const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// Why a request header cannot be sent as written, if it cannot.
pub(crate) fn header_problem(name: &str, value: Option<&str>) -> Option<String> {
    if ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Some(format!("`{name}` is not a valid header name"));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Some(format!(
            "header `{name}` is set by plangate from the URL and the body"
        ));
    }
    if let Some(v) = value
        && ureq::http::HeaderValue::from_str(v).is_err()
    {
        return Some(format!(
            "the value of header `{name}` holds a control character or a line break"
        ));
    }
    None
}

/// `http_request`: the URL (scheme, host, no credentials), the headers, a body only for writes.
fn check_http_params(file: &str, params: &Node, sid: &str, out: &mut Vec<Diagnostic>) {
    if let Some(u) = params.child("url")
        && let NodeValue::Str(url) = &u.value
        && let Err(why) = crate::policy::hosts::parse_url(url)
    {
        out.push(
            Diagnostic::at(file, u.pos, format!("`url` of step `{sid}`: {why}"))
                .help("give an absolute URL such as `https://api.example.com/v1/status`"),
        );
    }
    if let Some(NodeValue::Map(pairs)) = params.child("headers").map(|n| &n.value) {
        for (k, v) in pairs {
            let value = match &v.value {
                NodeValue::Str(s) => Some(s.as_str()),
                _ => None,
            };
            if let Some(why) = header_problem(&k.name, value) {
                let at = if ureq::http::HeaderName::from_bytes(k.name.as_bytes()).is_ok()
                    && !RESERVED_HEADERS.contains(&k.name.to_ascii_lowercase().as_str())
                {
                    v.pos
                } else {
                    k.pos
                };
                out.push(
                    Diagnostic::at(file, at, format!("`headers` of step `{sid}`: {why}"))
                        .help("header names are tokens like `Accept` or `X-Request-Id`; values are one line of text"),
                );
            }
        }
    }
    for n in match params.child("sensitive_headers").map(|n| &n.value) {
        Some(NodeValue::Seq(items)) => items.as_slice(),
        _ => &[],
    } {
        if let NodeValue::Str(name) = &n.value
            && ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err()
        {
            out.push(
                Diagnostic::at(
                    file,
                    n.pos,
                    format!(
                        "`sensitive_headers` of step `{sid}`: `{name}` is not a valid header name"
                    ),
                )
                .help("list header names such as `X-Api-Key`"),
            );
        }
    }
    if let Some(b) = params.child("body")
        && let Some(NodeValue::Str(m)) = params.child("method").map(|n| &n.value)
        && matches!(m.as_str(), "GET" | "HEAD" | "OPTIONS")
    {
        out.push(
            Diagnostic::at(
                file,
                b.pos,
                format!("step `{sid}`: a {m} request sends no `body`"),
            )
            .help("use POST, PUT, PATCH or DELETE to send a body, or move the data to `params`"),
        );
    }
}

/// Every `http_request` step whose URL's host the allow-list in force does
/// not allow (checked again at run time, for every redirect hop); `file` is
/// the plan file the steps come from, for the diagnostics.
pub(crate) fn check_allowed_hosts(
    file: &str,
    steps: &[Step],
    allowed: Option<&[String]>,
) -> Vec<Diagnostic> {
    let Some(list) = allowed else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for step in steps {
        let Action::Http(h) = &step.action else {
            continue;
        };
        let Ok((_, target)) = crate::policy::hosts::parse_url(&h.params.url) else {
            continue;
        };
        if !target.allowed_by(Some(list)) {
            let shown = if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            };
            out.push(
                Diagnostic::at(
                    file,
                    h.url_pos,
                    format!(
                        "step `{}`: host `{}` (port {}) is not in the policy's allowed_hosts",
                        step.id, target.host, target.port
                    ),
                )
                .help(format!(
                    "allowed: {shown}; add the host to `policy.allowed_hosts` (a `--policy` file's list also applies)"
                )),
            );
        }
    }
    out
}
