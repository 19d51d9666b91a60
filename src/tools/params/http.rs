//! The `http_request` tool's parameters as written (design 002, 2.5) and its checked action.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::format::node::Pos;
use crate::format::timeout::Timeout;

fn default_true() -> bool {
    true
}

/// `http_request`'s timeout when neither the step nor `parameters.timeout` sets one.
pub(crate) const HTTP_DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// HTTP methods of `http_request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// Read (moderate).
    Get,
    /// Write (dangerous).
    Post,
    /// Write (dangerous).
    Put,
    /// Write (dangerous).
    Delete,
    /// Write (dangerous).
    Patch,
    /// Read (moderate).
    Head,
    /// Read (moderate).
    Options,
}

impl HttpMethod {
    /// The method name.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Head => "HEAD",
            HttpMethod::Options => "OPTIONS",
        }
    }

    /// Whether the method only reads.
    pub fn is_read(self) -> bool {
        matches!(
            self,
            HttpMethod::Get | HttpMethod::Head | HttpMethod::Options
        )
    }
}

/// A request header's value as written: text, or a secret plangate puts in when it sends.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HeaderValueSpec {
    /// Sent as is.
    Text(String),
    /// A declared secret's value, resolved by plangate at send time.
    Secret(SecretHeader),
}

/// `{secret: NAME, format: "Bearer {}"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretHeader {
    /// The secret's name: declared in the step's `secrets:`, set in plangate's environment.
    #[schemars(length(min = 1))]
    pub secret: String,
    /// The header's value with exactly one `{}` where the secret goes (default `{}`).
    #[serde(default)]
    pub format: Option<String>,
}

impl SecretHeader {
    /// The header's value with `value` in place of `{}`.
    pub fn render(&self, value: &str) -> String {
        match &self.format {
            Some(f) => f.replacen("{}", value, 1),
            None => value.to_owned(),
        }
    }
}

/// Parameters of `http_request` (design 002, 2.5).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpRequestParams {
    /// The method.
    pub method: HttpMethod,
    /// `http://` or `https://` URL. Its host must be allowed by `policy.allowed_hosts` when that is set.
    #[schemars(length(min = 1))]
    pub url: String,
    /// Request headers (`Host`, `Content-Length`, `Transfer-Encoding` and `Connection` are set by
    /// plangate). A value is text sent as is, or `{secret: NAME, format: "Bearer {}"}`: the value
    /// of the secret `NAME` (declared in the step's `secrets:`), read by plangate when it sends
    /// the request and put where `{}` is in `format` (default `{}`). No `$NAME` is substituted.
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderValueSpec>,
    /// Request body, sent as is (POST, PUT, PATCH, DELETE only).
    #[serde(default)]
    pub body: Option<String>,
    /// Query parameters, added to the URL's.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// Seconds (or `30s`-style) for the whole exchange, redirects included; same as the step's
    /// `timeout` (set one or the other). Default 30.
    #[serde(default)]
    pub timeout: Option<Timeout>,
    /// Verify TLS certificates. Default true; `false` raises the step's risk to dangerous.
    #[serde(default = "default_true")]
    pub verify_ssl: bool,
    /// Follow redirects (301, 302, 303, 307, 308). Default true. A redirect to a host
    /// `policy.allowed_hosts` does not allow, or from https to http, stops the step.
    #[serde(default = "default_true")]
    pub follow_redirects: bool,
    /// Most redirects followed. Default 5.
    #[serde(default)]
    #[schemars(range(max = 20))]
    pub max_redirects: Option<u32>,
    /// Most response-body bytes kept (the rest is dropped and `truncated` set); the cut moves back
    /// rather than keep part of a secret or of a UTF-8 character. Default 10 MiB.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_response_bytes: Option<u64>,
    /// Status codes that count as success. Default: any 2xx.
    #[serde(default)]
    #[schemars(inner(range(min = 100, max = 599)))]
    pub expected_status: Vec<u16>,
    /// More request headers never sent to another origin on a redirect (`Authorization`,
    /// `Cookie`, `Proxy-Authorization` and names with `auth`, `token`, `key`, `secret`,
    /// `session`, `password` or `credential` in them are dropped anyway).
    #[serde(default)]
    pub sensitive_headers: Vec<String>,
    /// Print the response (`result.json`, never the request's headers or body) on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

/// A checked `http_request` step.
#[derive(Debug, Clone)]
pub struct HttpAction {
    /// The parameters as written.
    pub params: HttpRequestParams,
    /// Where `url` is written (for allow-list diagnostics).
    pub url_pos: Pos,
}
