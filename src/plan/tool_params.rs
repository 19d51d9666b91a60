//! Parameters of the workspace tools of design 002, section 2: the design's
//! parameter names (and its returns, written by each tool to
//! `artifacts/<step>/result.json`), plus what CI users expect. Paths are
//! relative to the workspace and must stay inside it (checked at load).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::raw::Timeout;

fn default_true() -> bool {
    true
}

/// Parameters of `find_in_files` (design 002, 2.2): a regex search with ripgrep's crates.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindInFilesParams {
    /// The pattern: a regular expression (Rust/ripgrep syntax), or a literal with `fixed_strings: true`.
    #[schemars(length(min = 1))]
    pub query: String,
    /// File or directory to search, relative to the workspace. Default `.`.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files whose name matches these globs (comma-separated), e.g. `*.rs,*.toml`.
    #[serde(default)]
    pub file_pattern: Option<String>,
    /// Lines of context shown before and after each match. Default 2.
    #[serde(default)]
    #[schemars(range(max = 1000))]
    pub max_context_lines: Option<u32>,
    /// Matches kept in the result (all are counted in `total_matches`). Default 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub max_matches: Option<u32>,
    /// Case-sensitive search. Default false (as in the design).
    #[serde(default)]
    pub case_sensitive: bool,
    /// Search binary files too (matches are reported with their line, text lossy). Default false.
    #[serde(default)]
    pub include_binary: bool,
    /// Directory names (or globs) never entered, e.g. `node_modules`. `.git` is always left out.
    #[serde(default)]
    pub exclude_dirs: Vec<String>,
    /// Treat `query` as a literal string, not a regex.
    #[serde(default)]
    pub fixed_strings: bool,
    /// Search hidden files and directories too. Default true (`.gitignore` is still respected).
    #[serde(default = "default_true")]
    pub hidden: bool,
    /// Fail the step when the query matches (a "must not appear" check). Default false.
    #[serde(default)]
    pub fail_on_match: bool,
    /// Fail the step when the query does not match (a "must appear" check). Default false.
    #[serde(default)]
    pub fail_if_none: bool,
    /// Print the matches on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

/// The operations of the `git` tool (design 002, 2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GitOperation {
    /// `git status` (read-only).
    Status,
    /// `git diff` (read-only).
    Diff,
    /// `git log` (read-only).
    Log,
    /// `git add` (`files`, default all changes).
    Add,
    /// `git commit -m commit_message` (`files` to commit only those).
    Commit,
    /// `git push` (dangerous with `force` or to the default branch).
    Push,
    /// `git pull --ff-only` unless `args` say otherwise.
    Pull,
    /// `git branch` (lists without args; creates, deletes with args).
    Branch,
    /// `git checkout`.
    Checkout,
    /// `git stash`.
    Stash,
    /// `git reset` (dangerous with `--hard` or `force`).
    Reset,
}

impl GitOperation {
    /// The git subcommand.
    pub fn as_str(self) -> &'static str {
        match self {
            GitOperation::Status => "status",
            GitOperation::Diff => "diff",
            GitOperation::Log => "log",
            GitOperation::Add => "add",
            GitOperation::Commit => "commit",
            GitOperation::Push => "push",
            GitOperation::Pull => "pull",
            GitOperation::Branch => "branch",
            GitOperation::Checkout => "checkout",
            GitOperation::Stash => "stash",
            GitOperation::Reset => "reset",
        }
    }
}

/// Parameters of the `git` tool (design 002, 2.3). Runs `git` directly (no shell),
/// with hooks, pagers, credential prompts and external diff drivers disabled.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitParams {
    /// The operation.
    pub operation: GitOperation,
    /// More arguments for the git subcommand, one per item (never parsed by a shell).
    #[serde(default)]
    pub args: Vec<String>,
    /// The repository, relative to the workspace. Default: the workspace.
    #[serde(default)]
    pub repository_path: Option<String>,
    /// The commit message (required for `commit`; also the message of a `stash push`).
    #[serde(default)]
    pub commit_message: Option<String>,
    /// Paths (git pathspecs, relative to the repository) for status, diff, log, add, commit,
    /// checkout, reset and stash push. `add` without files stages all changes; `commit`
    /// without files commits what is staged (`args: [--all]` for every tracked change).
    #[serde(default)]
    pub files: Vec<String>,
    /// Force the operation (`push --force-with-lease`, `pull --force`, `add --force`,
    /// `checkout --force`, `branch --force`/`-D`, `reset --hard`): dangerous.
    #[serde(default)]
    pub force: bool,
    /// Show what would be done: `--dry-run` for add, commit, push and pull; nothing to do for
    /// the read-only operations; a plan error for the others (git has no dry run for them).
    #[serde(default)]
    pub dry_run: bool,
    /// Same as the step's `timeout`; set one or the other.
    #[serde(default)]
    pub timeout: Option<Timeout>,
    /// Print git's output on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

/// `http_request`'s timeout when neither the step nor `parameters.timeout` sets one.
pub const HTTP_DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

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

/// Parameters of `http_request` (design 002, 2.5).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpRequestParams {
    /// The method.
    pub method: HttpMethod,
    /// `http://` or `https://` URL. Its host must be allowed by `policy.allowed_hosts` when that is set.
    #[schemars(length(min = 1))]
    pub url: String,
    /// Request headers (`Host`, `Content-Length`, `Transfer-Encoding` and `Connection` are set by plangate).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
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
    /// Most response-body bytes kept (the rest is dropped and `truncated` set). Default 10 MiB.
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

/// Archive operations (design 002, 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveOperation {
    /// Pack `source_paths` into `archive_path`.
    Create,
    /// Unpack `archive_path` into `destination`, refusing anything that would escape it.
    Extract,
    /// List the entries.
    List,
}

/// Compression of a tar archive (zip entries are deflated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Plain tar.
    None,
    /// gzip.
    Gzip,
    /// bzip2.
    Bz2,
}

/// Archive formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveFormat {
    /// tar (with `compression`).
    Tar,
    /// zip.
    Zip,
}

/// Parameters of `archive` (design 002, 2.6).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveParams {
    /// create | extract | list.
    pub operation: ArchiveOperation,
    /// The archive, relative to the workspace.
    #[schemars(length(min = 1))]
    pub archive_path: String,
    /// What to pack (`create`), relative to the workspace.
    #[serde(default)]
    pub source_paths: Vec<String>,
    /// Where to unpack (`extract`), relative to the workspace. Default: beside the archive.
    #[serde(default)]
    pub destination: Option<String>,
    /// zip or tar. Default: from the archive's extension (`.zip`, `.tar`, `.tar.gz`, `.tgz`, `.tar.bz2`, `.tbz2`).
    #[serde(default)]
    pub format: Option<ArchiveFormat>,
    /// Compression of a tar (`none`, `gzip`, `bz2`); for a zip `none` stores and `gzip` deflates.
    /// Default: from the archive's content (extract, list) or extension, else gzip.
    #[serde(default)]
    pub compression: Option<Compression>,
    /// Globs of paths to leave out (create and extract). A path is left out when a pattern
    /// matches it, one of its parent directories or one of its names: `*.log`, `node_modules`, `build/**`.
    #[serde(default)]
    pub exclude_patterns: Vec<String>,
    /// Replace existing files (the archive for create, files in the destination for extract).
    /// Default false: an existing file is an error and nothing is written.
    #[serde(default)]
    pub overwrite: bool,
    /// Most bytes written by an extraction (counted as written, not as declared); a compressed
    /// tar may also not expand past it plus a quarter and 64 MiB (headers, skipped entries). Default 1 GiB.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_total_bytes: Option<u64>,
    /// Most entries in an archive (extract and list). Default 100 000.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_entries: Option<u64>,
    /// Highest expansion accepted: bytes the archive expands to / its size on disk, checked once
    /// it has expanded past 1 MiB (extract and list of a tar). Default 200.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_ratio: Option<u64>,
    /// Print the result (file list included) on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}

impl ArchiveFormat {
    /// The name used in results and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveFormat::Tar => "tar",
            ArchiveFormat::Zip => "zip",
        }
    }

    /// The format (and, for a tar, the compression) an archive's file name
    /// implies: `.zip`, `.tar`, `.tar.gz`/`.tgz`, `.tar.bz2`/`.tbz2`/`.tbz`.
    pub fn from_name(name: &str) -> Option<(ArchiveFormat, Option<Compression>)> {
        let n = name.to_ascii_lowercase();
        if n.ends_with(".zip") {
            Some((ArchiveFormat::Zip, None))
        } else if n.ends_with(".tar") {
            Some((ArchiveFormat::Tar, Some(Compression::None)))
        } else if n.ends_with(".tar.gz") || n.ends_with(".tgz") {
            Some((ArchiveFormat::Tar, Some(Compression::Gzip)))
        } else if n.ends_with(".tar.bz2") || n.ends_with(".tbz2") || n.ends_with(".tbz") {
            Some((ArchiveFormat::Tar, Some(Compression::Bz2)))
        } else {
            None
        }
    }
}

impl Compression {
    /// The name used in results and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Bz2 => "bz2",
        }
    }
}

/// Parameters of `system_info` (read-only; design 002's system tool).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemInfoParams {
    /// Programs whose version is reported (each run as `NAME --version`, no shell, 5 s each).
    /// Default: git, bash, python3, node, cargo, rustc, go, java, docker.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Print the summary on stderr when the step ends.
    #[serde(default)]
    pub show_cli: bool,
}
