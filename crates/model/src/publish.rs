//! Effects as data: a plan's `publish:` block (what the run may publish), the
//! typed requests steps write to `$PLANGATE_REQUESTS`, a policy's `patch:`
//! block and the report's `publish` rows. The logic is `publish`'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A plan's `publish:` block. Anything not declared here cannot be published.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishBlock {
    /// A pull request carrying the run's workspace changes, committed by plangate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PullRequestDecl>,
    /// GitLab's name for `pull_request` (the same keys); declare one or the other. The loader
    /// moves it to `pull_request`, and a request may say `"type": "merge_request"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_request: Option<PullRequestDecl>,
    /// A pull-request review: a verdict and inline comments by file and line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewDecl>,
    /// A comment on the pull request or issue, updated in place by its marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<CommentDecl>,
    /// Labels added to the pull request or issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<LabelsDecl>,
    /// New issues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<IssueDecl>,
    /// A check run on the commit, its title and summary from the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_run: Option<CheckRunDecl>,
}

/// The keys a `publish.<kind>` block allows (for "did you mean" help); none for an unknown kind.
pub fn decl_keys(kind: &str) -> Vec<String> {
    let keys: &[&str] = match kind {
        "pull_request" | "merge_request" => &[
            "branch",
            "base",
            "title_prefix",
            "labels",
            "draft",
            "reviewers",
            "max",
        ],
        "review" => &["verdict", "max_comments"],
        "comment" => &["max", "marker"],
        "labels" => &["allowed"],
        "issue" => &["title_prefix", "labels", "max"],
        "check_run" => &["name"],
        _ => &[],
    };
    keys.iter().map(|k| (*k).to_owned()).collect()
}

fn one() -> u32 {
    1
}

/// `publish.pull_request`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PullRequestDecl {
    /// The branch plangate commits to: a template where `{plan}` and `{run}` are replaced by the
    /// plan id and the run id, e.g. `plangate/{plan}/{run}`.
    #[schemars(length(min = 1, max = 200))]
    pub branch: String,
    /// The branch the pull request targets (default: the repository's default branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Every requested title must start with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_prefix: Option<String>,
    /// Labels plangate adds to the pull request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Always open it as a draft.
    #[serde(default)]
    pub draft: bool,
    /// Users asked to review it when the patch policy turns it into a draft.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviewers: Vec<String>,
    /// Most pull requests per run. Default 1.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 10))]
    pub max: u32,
}

/// A review's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Approve the pull request.
    Approve,
    /// Request changes.
    RequestChanges,
    /// Comment only.
    Comment,
}

impl Verdict {
    /// The plan's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::RequestChanges => "request_changes",
            Verdict::Comment => "comment",
        }
    }
}

fn comment_only() -> Vec<Verdict> {
    vec![Verdict::Comment]
}

fn ten() -> u32 {
    10
}

/// `publish.review`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewDecl {
    /// The verdicts a request may give. Default `[comment]`.
    #[serde(default = "comment_only")]
    #[schemars(length(min = 1))]
    pub verdict: Vec<Verdict>,
    /// Most inline comments in one review. Default 10.
    #[serde(default = "ten")]
    #[schemars(range(max = 100))]
    pub max_comments: u32,
}

/// `publish.comment`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentDecl {
    /// Most comments per run. Default 1.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 10))]
    pub max: u32,
    /// The comment's marker (letters, digits, `_`, `-`): a rerun finds the comment by it and
    /// updates it in place. Default `comment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"))]
    pub marker: Option<String>,
}

/// `publish.labels`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelsDecl {
    /// The only labels a request may add.
    #[schemars(length(min = 1))]
    pub allowed: Vec<String>,
}

/// `publish.issue`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueDecl {
    /// Every requested title must start with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_prefix: Option<String>,
    /// Labels plangate adds to each issue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Most issues per run. Default 1.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 10))]
    pub max: u32,
}

/// `publish.check_run`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRunDecl {
    /// The check run's name (default `plangate / <plan id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One inline comment of a review request.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InlineComment {
    /// The file, relative to the repository.
    pub path: String,
    /// The line in the file's new version.
    pub line: u64,
    /// The comment.
    pub body: String,
}

/// One request a step wrote to `$PLANGATE_REQUESTS` (a JSON line).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
// `allow`, not `expect`: clippy leaves a public item of a library (this
// crate's) alone, a crate-private one not.
#[allow(
    clippy::enum_variant_names,
    reason = "the variants are the kinds' names, `pull_request` among them"
)]
pub enum Request {
    /// Open a pull request (GitLab: a merge request, `"type": "merge_request"`) with the run's
    /// workspace changes.
    #[serde(alias = "merge_request")]
    PullRequest {
        /// Its title (starting with the declared `title_prefix`).
        title: String,
        /// Text before the run summary in its body.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
    },
    /// Review the pull request.
    Review {
        /// One of the declared verdicts.
        verdict: Verdict,
        /// The review's text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// Inline comments.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        comments: Vec<InlineComment>,
    },
    /// Comment on the pull request (updated in place on a rerun).
    Comment {
        /// The comment's text.
        body: String,
    },
    /// Add labels to the pull request.
    Labels {
        /// Each one declared under `allowed`.
        labels: Vec<String>,
    },
    /// Open an issue.
    Issue {
        /// Its title (starting with the declared `title_prefix`).
        title: String,
        /// Its text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
    },
    /// Create the check run.
    CheckRun {
        /// Its title (default: the run's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Its summary (default: the run's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
}

impl Request {
    /// The kind's name, as in `publish:`.
    pub fn kind(&self) -> &'static str {
        match self {
            Request::PullRequest { .. } => "pull_request",
            Request::Review { .. } => "review",
            Request::Comment { .. } => "comment",
            Request::Labels { .. } => "labels",
            Request::Issue { .. } => "issue",
            Request::CheckRun { .. } => "check_run",
        }
    }
}

/// What a patch-policy violation does to a pull request.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PatchAction {
    /// Open it as a draft and say why in its body.
    Draft,
    /// Open an issue with the patch attached instead.
    Issue,
    /// Publish nothing of it.
    #[default]
    Block,
}

/// A policy's `patch:` block: what a pull request's changes may touch. The built-in
/// protected paths always apply.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchPolicy {
    /// More protected paths (globs, `**` across folders), besides the built-in ones: CI
    /// configuration, agent instruction files, dependency manifests and lockfiles,
    /// `CODEOWNERS` and every top-level dot-folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected_paths: Vec<String>,
    /// What a change to a protected path does: block (default), draft or issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected: Option<PatchAction>,
    /// When set, the only paths (globs) a pull request may change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_files: Option<Vec<String>>,
    /// Paths (globs) a pull request may not change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_files: Vec<String>,
    /// Most files a pull request may change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_files: Option<u64>,
    /// Most bytes (the changed files' new sizes added up) a pull request may carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// What any other violation (allowed, excluded, max) does: block (default), draft or issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_violation: Option<PatchAction>,
}

/// Where a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PublishState {
    /// Applied; see `url` / `number`.
    Published,
    /// Every gate passed but nothing was applied (dry run, no publisher here).
    WouldPublish,
    /// A gate failed (or applying it did): nothing was published.
    Withheld,
}

impl PublishState {
    /// The report's name.
    pub fn as_str(self) -> &'static str {
        match self {
            PublishState::Published => "published",
            PublishState::WouldPublish => "would_publish",
            PublishState::Withheld => "withheld",
        }
    }
}

/// One row of the report's `publish` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishEntry {
    /// pull_request, review, comment, labels, issue or check_run.
    pub kind: String,
    /// The step that asked for it (absent: a declaration listed by a dry run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// published | would_publish | withheld.
    pub state: PublishState,
    /// Why it is in that state, in one line.
    pub reason: String,
    /// A pull request opened as a draft (the policy's `draft`, or the declaration's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draft: bool,
    /// Where it was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The pull request, issue, comment, review or check run number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u64>,
    /// Labels the declaration adds (an issue, a pull request).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// The declaration's comment marker or check-run name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The request as accepted (what the publisher applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
    /// A pull request's branch: the declared template, then the branch pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A pull request's declared base (absent: the repository's default branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The commit pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Users asked to review a pull request the patch policy made a draft.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviewers: Vec<String>,
    /// What the patch policy found, when it made this a draft or an issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// `pull_request`: an issue the patch policy opened instead (the patch attached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}
