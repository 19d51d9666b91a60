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
use crate::tools::params::http::{
    HTTP_DEFAULT_TIMEOUT, HeaderValueSpec, HttpAction, HttpMethod, HttpRequestParams,
};
use std::path::Path;

use crate::sandbox::Request;
use crate::tools::spec::{
    ActionSpec, CheckCx, LowerCx, Lowered, Outputs, Processes, Templates, ToolEnv, ToolSpec,
    access, keys_of, schema_of,
};
use crate::tools::step::Step;

/// The `http_request` tool.
pub(crate) struct Spec;

impl ToolSpec for Spec {
    fn params_required(&self) -> bool {
        true
    }

    fn nested_keys(&self, _key: &str) -> Vec<String> {
        Vec::new()
    }

    fn retry(&self) -> Result<(), &'static str> {
        Err(crate::format::retry::NO_RETRY_HELP)
    }

    fn params_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        schema_of::<HttpRequestParams>(generator)
    }

    fn param_keys(&self) -> Vec<String> {
        keys_of::<HttpRequestParams>()
    }

    fn check(&self, cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
        check_http_params(cx.file, params, cx.sid, out);
        check_references(cx, params, out);
    }

    fn lower(&self, cx: &LowerCx<'_>, params: Value) -> Result<Lowered, Diagnostic> {
        let p: HttpRequestParams = cx.workspace_params(params)?;
        hosts::parse_url(&p.url).map_err(|why| cx.workspace_error(format!("`url`: {why}")))?;
        for (k, v) in &p.headers {
            let text = match v {
                HeaderValueSpec::Text(t) => Some(t.as_str()),
                HeaderValueSpec::Secret(_) => None,
            };
            if let Some(why) = header_problem(k, text) {
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

    fn processes(&self) -> Processes {
        Processes::None
    }

    fn sandbox(&self, _r: &mut Request, _workspace: &Path, _home: Option<&Path>) {}

    fn secret_names(&self) -> Vec<String> {
        Vec::new()
    }

    fn limits(&self) -> Option<crate::model::Limits> {
        None
    }

    fn summary(&self) -> Option<String> {
        None
    }

    fn outputs(&self) -> Outputs {
        Outputs::None
    }

    fn templates(&self) -> &'static [(&'static str, Templates)] {
        &[]
    }

    fn linked_steps(&self) -> &[usize] {
        &[]
    }

    fn linked_steps_mut(&mut self) -> Option<&mut Vec<usize>> {
        None
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
        let sends_credentials = p.headers.iter().any(|(k, v)| {
            matches!(v, HeaderValueSpec::Secret(_))
                || looks_sensitive(k)
                || is_listed(k, &p.sensitive_headers)
        });
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
    let mut blocked = (!target.allowed_by(env.allowed_hosts.as_deref())).then(|| {
        format!(
            "host `{}` (port {}) is not in the policy's allowed_hosts",
            target.host, target.port
        )
    });
    let grants = Grants::of(env);
    if blocked.is_none()
        && let Some(what) = crate::policy::addr::known_local(&target.host)
        && !grants.allow(&target.host, target.port, None)
    {
        blocked = Some(format!(
            "`{}` is {what}: http_request reaches a loopback, link-local (cloud metadata), private or other non-public address only where allowed_hosts names it (no wildcard); add `{}` to the --policy file's allowed_hosts",
            target.host,
            hosts::with_port(&target.host, target.port)
        ));
    }
    let plan_only = grants.plan_only();
    if !plan_only.is_empty() {
        risk = Risk::Dangerous;
        raised.push(format!(
            "may reach {} (not public), which only the plan's allowed_hosts names; add it to the --policy file's allowed_hosts or approve the step",
            plan_only.join(", ")
        ));
    }
    raised.extend(notes);
    StepClassification {
        floor: Risk::Moderate,
        classified: risk,
        blocked,
        unclassifiable: None,
        reason: raised.join("; "),
    }
}

/// Who lets an `http_request` reach an address that is not public (see
/// [`crate::policy::addr`]): only an entry that names the host itself, no
/// wildcard. The operator's `--policy` file names it in its `allowed_hosts`
/// or a `secret_hosts` list; the plan's own `allowed_hosts` counts only for
/// an entry that is itself known to be local (`127.0.0.1`, `localhost`),
/// and makes every `http_request` step of the plan dangerous (a redirect
/// can lead there). A name that only resolves to such an address
/// (`x.127.0.0.1.nip.io`) is reached only when the operator names it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Grants {
    /// The list in force (plan and file joined; None: any host).
    effective: Option<Vec<String>>,
    /// The `--policy` file's lists: its `allowed_hosts` and `secret_hosts`.
    operator: Vec<Vec<String>>,
}

impl Grants {
    pub(crate) fn of(env: &ToolEnv) -> Grants {
        Grants {
            effective: env.allowed_hosts.clone(),
            operator: env
                .secret_hosts
                .any
                .iter()
                .chain(env.secret_hosts.by_name.values())
                .cloned()
                .collect(),
        }
    }

    /// The entries of the list in force that are known local.
    fn local_entries(&self) -> Vec<String> {
        self.effective
            .iter()
            .flatten()
            .filter(|e| {
                hosts::HostPattern::parse(e).is_ok_and(|p| {
                    !p.wildcard && crate::policy::addr::known_local(&p.host).is_some()
                })
            })
            .cloned()
            .collect()
    }

    /// Whether the operator names `host:port` (or its address `ip`).
    fn operator_names(&self, host: &str, port: u16, ip: Option<std::net::IpAddr>) -> bool {
        self.operator
            .iter()
            .any(|l| hosts::names(l, host, port, ip))
    }

    /// Whether `host:port`, at the address `ip` that is not public (None:
    /// the host's own, when it is one), may be reached.
    pub(crate) fn allow(&self, host: &str, port: u16, ip: Option<std::net::IpAddr>) -> bool {
        self.operator_names(host, port, ip) || hosts::names(&self.local_entries(), host, port, ip)
    }

    /// The local entries of the list in force that the operator does not name.
    fn plan_only(&self) -> Vec<String> {
        self.local_entries()
            .into_iter()
            .filter(|e| {
                hosts::HostPattern::parse(e).is_ok_and(|p| {
                    !self.operator.iter().flatten().any(|o| {
                        hosts::HostPattern::parse(o).is_ok_and(|q| {
                            !q.wildcard
                                && q.port.is_none_or(|qp| p.port == Some(qp))
                                && (q.host == p.host
                                    || crate::policy::addr::host_ip(&q.host).is_some_and(|a| {
                                        crate::policy::addr::host_ip(&p.host) == Some(a)
                                    }))
                        })
                    })
                })
            })
            .collect()
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
                NodeValue::Map(_) => v.child("format").and_then(|f| match &f.value {
                    NodeValue::Str(s) => Some(s.as_str()),
                    _ => None,
                }),
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

/// A spelling of variable substitution in `text` that plangate would send
/// literally: `${NAME}`, `${{ secrets.NAME }}`, `$(...)`, `{{ env.NAME }}`,
/// and `$NAME` (in a header any `$` + letter; elsewhere, where `$filter` or
/// `$schema` are ordinary text, an upper-case `$NAME` only). The reference as
/// written, and the name it means when one can be read.
pub(crate) fn substitution(text: &str, header: bool) -> Option<(String, Option<String>)> {
    let name_at = |rest: &str| -> Option<String> {
        let n: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        (!n.is_empty() && !n.starts_with(|c: char| c.is_ascii_digit())).then_some(n)
    };
    // The name inside `{{ ... }}` or `${ ... }`: the last dotted part.
    let inner_name = |inner: &str| -> Option<String> {
        let t = inner.trim();
        let last = t.rsplit('.').next().unwrap_or(t);
        name_at(last.trim())
    };
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('$') {
        let rest = &text[i + 1..];
        if let Some(after) = rest.strip_prefix('{') {
            let end = after.find('}').map_or(text.len(), |j| i + 2 + j + 1);
            let end = if after.starts_with('{') {
                after.find("}}").map_or(text.len(), |j| i + 2 + j + 2)
            } else {
                end
            };
            let shown = text[i..end.min(text.len())].to_owned();
            let inner = shown.trim_start_matches("${").trim_start_matches('{');
            let inner = inner.trim_end_matches('}');
            return Some((shown.clone(), inner_name(inner)));
        }
        if rest.starts_with('(') {
            let end = rest.find(')').map_or(text.len(), |j| i + 1 + j + 1);
            return Some((text[i..end].to_owned(), None));
        }
        if let Some(n) = name_at(rest) {
            let upper = n
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                && n.chars().any(|c| c.is_ascii_uppercase());
            // `a$b`: a dollar inside a word is not a reference outside headers.
            let word_before =
                i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            if header || (upper && !word_before) {
                return Some((format!("${n}"), Some(n)));
            }
        }
    }
    let mut from = 0;
    while let Some(j) = text[from..].find("{{") {
        let start = from + j;
        let end = text[start..]
            .find("}}")
            .map_or(text.len(), |k| start + k + 2);
        let inner = text[start + 2..end.min(text.len())].trim_end_matches('}');
        let t = inner.trim().to_ascii_lowercase();
        let t = t.trim_start_matches('.');
        if header || t.starts_with("secrets.") || t.starts_with("env.") {
            return Some((text[start..end].to_owned(), inner_name(inner)));
        }
        from = end.min(text.len());
        if from >= text.len() {
            break;
        }
    }
    None
}

/// The step's `secrets:` as written.
fn declared_secrets(step: &Node) -> Vec<String> {
    match step.child("secrets").map(|n| &n.value) {
        Some(NodeValue::Seq(items)) => items
            .iter()
            .filter_map(|n| match &n.value {
                NodeValue::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// No substitution spelling in a header, the URL, `params` or the body (plangate
/// sends them as written); every `{secret: NAME}` header names a secret the step
/// declares, with a `format` holding exactly one `{}`.
fn check_references(cx: &CheckCx<'_>, params: &Node, out: &mut Vec<Diagnostic>) {
    let sid = cx.sid;
    let declared = declared_secrets(cx.step);
    let how = |header: &str, name: &str| -> String {
        let scheme = if header.eq_ignore_ascii_case("authorization") {
            ", format: \"Bearer {}\""
        } else {
            ""
        };
        format!(
            "plangate substitutes nothing in `http_request`; write `{header}: {{secret: {name}{scheme}}}` and declare `{name}` in the step's `secrets:` (plangate reads it from its own environment when it sends the request and masks it everywhere)"
        )
    };
    if let Some(NodeValue::Map(pairs)) = params.child("headers").map(|n| &n.value) {
        for (k, v) in pairs {
            match &v.value {
                NodeValue::Str(text) => {
                    if let Some((shown, name)) = substitution(text, true) {
                        let name = name.unwrap_or_else(|| "NAME".to_owned());
                        out.push(
                            cx.at(
                                v.pos,
                                format!(
                                    "`headers` of step `{sid}`: header `{}` holds `{shown}`, which would be sent literally",
                                    k.name
                                ),
                            )
                            .help(how(&k.name, &name)),
                        );
                    }
                }
                NodeValue::Map(_) => {
                    if let Some(s) = v.child("secret")
                        && let NodeValue::Str(name) = &s.value
                    {
                        if let Some(r) = crate::policy::env::secret_refusal(name) {
                            out.push(
                                cx.at(
                                    s.pos,
                                    r.message(
                                        name,
                                        &format!("header `{}` of step `{sid}`", k.name),
                                    ),
                                )
                                .help(r.help()),
                            );
                        } else if !declared.iter().any(|d| d == name) {
                            out.push(
                                cx.at(
                                    s.pos,
                                    format!(
                                        "header `{}` of step `{sid}` uses the secret `{name}`, which the step does not declare",
                                        k.name
                                    ),
                                )
                                .help(format!(
                                    "add `{name}` to the step's `secrets:` (a step gets only the secrets it declares)"
                                )),
                            );
                        }
                    }
                    if let Some(f) = v.child("format")
                        && let NodeValue::Str(fmt) = &f.value
                    {
                        if fmt.matches("{}").count() != 1 {
                            out.push(
                                cx.at(
                                    f.pos,
                                    format!(
                                        "`format` of header `{}` of step `{sid}` must hold exactly one `{{}}` (where the secret goes)",
                                        k.name
                                    ),
                                )
                                .help("for example `format: \"Bearer {}\"`"),
                            );
                        } else if let Some((shown, _)) = substitution(fmt, true) {
                            out.push(
                                cx.at(
                                    f.pos,
                                    format!(
                                        "`format` of header `{}` of step `{sid}` holds `{shown}`, which would be sent literally",
                                        k.name
                                    ),
                                )
                                .help("`{}` is the only place plangate fills in"),
                            );
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut texts: Vec<(String, &Node)> = Vec::new();
    if let Some(u) = params.child("url") {
        texts.push(("`url`".to_owned(), u));
    }
    if let Some(b) = params.child("body") {
        texts.push(("`body`".to_owned(), b));
    }
    if let Some(NodeValue::Map(pairs)) = params.child("params").map(|n| &n.value) {
        for (k, v) in pairs {
            texts.push((format!("`params.{}`", k.name), v));
        }
    }
    for (what, n) in texts {
        if let NodeValue::Str(text) = &n.value
            && let Some((shown, _)) = substitution(text, false)
        {
            out.push(
                cx.at(
                    n.pos,
                    format!("{what} of step `{sid}` holds `{shown}`, which would be sent literally"),
                )
                .help("plangate substitutes nothing in `http_request`, and a secret never travels in the URL, the query or the body (they are logged by servers and proxies): send it in a header as `{secret: NAME}` and declare NAME in the step's `secrets:`; if the text is meant literally, move the `$` out of an upper-case name or braces (for example percent-encode it as `%24` in the URL)"),
            );
        }
    }
}

#[cfg(test)]
mod reference_tests {
    use super::substitution;

    #[test]
    fn substitution_spellings_are_found() {
        for (text, header, name) in [
            ("Bearer ${GITHUB_TOKEN}", true, Some("GITHUB_TOKEN")),
            ("Bearer ${{ secrets.GH_TOKEN }}", true, Some("GH_TOKEN")),
            ("Bearer $GITHUB_TOKEN", true, Some("GITHUB_TOKEN")),
            ("token $token", true, Some("token")),
            ("Bearer $(cat /tmp/t)", true, None),
            ("Bearer {{ .Env.TOKEN }}", true, Some("TOKEN")),
            ("Bearer ${GITHUB_TOKEN", true, Some("GITHUB_TOKEN")),
            ("https://h/x?t=${TOKEN}", false, Some("TOKEN")),
            ("https://h/x?t=$API_KEY", false, Some("API_KEY")),
            ("{\"t\": \"${{ secrets.X }}\"}", false, Some("X")),
            ("{\"t\": \"{{ secrets.X }}\"}", false, Some("X")),
            ("{\"t\": \"{{env.X}}\"}", false, Some("X")),
        ] {
            let got = substitution(text, header);
            assert!(got.is_some(), "{text:?} not found");
            assert_eq!(got.unwrap().1.as_deref(), name, "{text:?}");
        }
    }

    #[test]
    fn ordinary_text_is_not_a_reference() {
        for (text, header) in [
            ("application/json", true),
            ("price is $5", true),
            ("a lone $", true),
            ("https://h/odata?$filter=a&$top=5", false),
            ("{\"$schema\": \"x\"}", false),
            ("cost$TOTAL", false),
            ("{{ name }}", false),
            ("100$", false),
        ] {
            assert_eq!(substitution(text, header), None, "{text:?}");
        }
    }
}
