//! The command line: raw flags only (clap derive). Every flag a CI user would
//! set from the environment has a `PLANGATE_*` equivalent. Resolution into
//! settings happens in `settings.rs`.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

use crate::model::Tolerance;

/// Run agent plans in CI with nobody at the keyboard.
#[derive(Debug, Parser)]
#[command(name = "plangate", version = crate::version::VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process; boxing would buy nothing
pub enum Command {
    /// Run a plan: decide for every step, run what may run, write the report.
    Run(RunArgs),
    /// Check a plan and show each step's risk and the decision it would get; runs nothing.
    Validate(ValidateArgs),
    /// Print the JSON Schema of the plan format (or of a policy file).
    Schema(SchemaArgs),
    /// Ask an agent to draft a plan; check it and write it for review. Never runs it.
    Draft(DraftArgs),
    /// Scan files and directories for secrets (exit 4 when any is found).
    Scan(ScanArgs),
    /// Render a saved report.json again (for a later CI job to publish).
    Report(ReportArgs),
    /// Internal: restrict this process (Landlock, seccomp) and exec a sandboxed step's command.
    #[command(name = "__sandbox-exec", hide = true)]
    SandboxExec(crate::sandbox::ExecArgs),
    /// Internal: a resident step supervisor (serves steps over its stdin socket).
    #[command(name = "__sandbox-lane", hide = true)]
    SandboxLane,
    /// Internal: the sandbox self-test's probe (runs inside the backend).
    #[command(name = "__sandbox-probe", hide = true)]
    SandboxProbe(crate::sandbox::ProbeArgs),
    /// Internal: inside a bwrap sandbox, carry a step's proxy connections to plangate's egress proxy.
    #[command(name = "__egress-forward", hide = true)]
    EgressForward(crate::egress::ForwardArgs),
    /// Split the expanded plan into shards for a CI matrix (GitHub `strategy.matrix`, GitLab `parallel:matrix`).
    Shard(ShardArgs),
    /// Join shard reports (`run --shard i/N`) into one report, and publish it like `run`.
    Merge(MergeArgs),
}

/// `plangate shard`.
#[derive(Debug, Args)]
pub struct ShardArgs {
    /// The plan.
    #[arg(value_name = "PLAN.yaml")]
    pub plan: PathBuf,
    /// At most this many shards (GitHub: 256 jobs per matrix; GitLab: 200).
    #[arg(long, env = "PLANGATE_JOBS", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: u32,
    /// `github`: `{"include":[{"shard":"1/3"},...]}` for `fromJSON`; `gitlab`: a child pipeline; `json`: the whole partition.
    #[arg(long, env = "PLANGATE_SHARD_FORMAT", value_enum, default_value_t = ShardFormat::Json)]
    pub format: ShardFormat,
    /// Balance by the step durations of an earlier report (pass the same file to `run --shard`).
    #[arg(long, env = "PLANGATE_TIMINGS", value_name = "REPORT.json")]
    pub timings: Option<PathBuf>,
    /// `--format gitlab`: the file (in the repository) defining the `.plangate-shard` job template.
    #[arg(
        long,
        env = "PLANGATE_GITLAB_TEMPLATE",
        value_name = "FILE",
        default_value = ".gitlab/plangate-shard.yml"
    )]
    pub gitlab_template: String,
}

/// `plangate shard --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShardFormat {
    Github,
    Gitlab,
    Json,
}

/// `plangate merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard reports (`report.json` of each `run --shard i/N`).
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,
    /// Write report.json, diff-summary.md and gl-secret-detection-report.json here.
    #[arg(long, env = "PLANGATE_OUT", value_name = "DIR")]
    pub out: PathBuf,
    /// Also write the merged report as JUnit XML.
    #[arg(long, env = "PLANGATE_JUNIT", value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Fewer lines on stderr.
    #[arg(long, short, env = "PLANGATE_QUIET")]
    pub quiet: bool,
    #[command(flatten)]
    pub github: GithubArgs,
    #[command(flatten)]
    pub gitlab: GitlabArgs,
}

/// `plangate report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A report.json written by `plangate run`.
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,
    /// Output format (on stdout).
    #[arg(long, value_enum, required_unless_present = "publish_github")]
    pub format: Option<ReportFormat>,
    /// Publish the report to GitHub (PR comment, check run) as `run` does under Actions; needs a token.
    #[arg(long)]
    pub publish_github: bool,
    #[command(flatten)]
    pub github: GithubArgs,
    #[command(flatten)]
    pub gitlab: GitlabArgs,
}

/// Formats of `plangate report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// GitHub-flavoured Markdown (step summary, PR comment).
    Markdown,
    /// JUnit XML (GitLab `reports: junit`).
    Junit,
    /// SARIF 2.1.0 of the findings.
    Sarif,
    /// The report as JSON.
    Json,
    /// GitLab's secret-detection report (`gl-secret-detection-report.json`) of the findings.
    GitlabSecretDetection,
}

/// `plangate scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files or directories to scan (hidden files included, `.git/` skipped).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ScanFormat::Text)]
    pub format: ScanFormat,
    /// Rewrite each file in place with its secrets replaced by `[REDACTED:<rule>]`.
    #[arg(long)]
    pub redact: bool,
    /// Suppress findings whose fingerprint is in this file (an earlier `--format json` or `sarif` output).
    #[arg(long, env = "PLANGATE_BASELINE", value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Extra rules (TOML, the format of the built-in rules), added to or replacing built-in ones by id.
    #[arg(long, env = "PLANGATE_RULES", value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

/// Output formats of `scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScanFormat {
    /// For people.
    Text,
    /// Design 002's shape: secrets_found, files_scanned, findings, scan_time.
    Json,
    /// SARIF 2.1.0 for code scanning.
    Sarif,
    /// GitLab's secret-detection report (`gl-secret-detection-report.json`).
    GitlabSecretDetection,
}

/// `plangate draft`.
#[derive(Debug, Args)]
pub struct DraftArgs {
    /// What the plan must achieve.
    #[arg(long, value_name = "TEXT")]
    pub objective: String,
    /// The agent to ask (declared under `agents:` in --agents).
    #[arg(long, value_name = "NAME")]
    pub agent: String,
    /// A YAML file with an `agents:` block (a plan works too) [default: WORKSPACE/.plangate/agents.yaml].
    #[arg(long, env = "PLANGATE_AGENTS", value_name = "FILE")]
    pub agents: Option<PathBuf>,
    /// Where the drafted plan is written.
    #[arg(long, value_name = "PLAN.yaml", default_value = "plan.draft.yaml")]
    pub out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    pub force: bool,
    /// Attempts before the answer is rejected for good.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub max_attempts: u32,
    #[command(flatten)]
    pub decision: DecisionArgs,
}

/// Flags shared by `run` and `validate` that decide approvals.
#[derive(Debug, Args)]
pub struct DecisionArgs {
    /// The repository the plan works on.
    #[arg(long, env = "PLANGATE_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Approve a step in advance (repeatable; comma-separated in PLANGATE_APPROVE).
    #[arg(long = "approve", env = "PLANGATE_APPROVE", value_name = "STEP_ID")]
    pub approve: Vec<String>,
    /// Highest risk that runs with nobody present; beats the plan's, within --policy's (a plan alone gets at most low).
    #[arg(long, env = "PLANGATE_RISK_TOLERANCE", value_enum)]
    pub risk_tolerance: Option<ToleranceArg>,
    /// The maintainers' policy file: caps the plan's policy (without it, or for a key it does not set, the built-in policy does).
    #[arg(long, env = "PLANGATE_POLICY", value_name = "POLICY.yaml")]
    pub policy: Option<PathBuf>,
    /// Sandbox backend for steps with `sandbox: true` (probed at start; `none` refuses every such step, even under `sandbox: optional`).
    #[arg(long, env = "PLANGATE_SANDBOX_BACKEND", value_enum, default_value_t = crate::sandbox::Choice::Auto)]
    pub sandbox_backend: crate::sandbox::Choice,
}

/// The plan's inputs (`run` and `validate`).
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Give the plan's input NAME this value (repeatable); beats PLANGATE_INPUT_<NAME> in the environment.
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub input: Vec<String>,
}

/// `plangate run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file.
    #[arg(value_name = "PLAN.yaml")]
    pub plan: PathBuf,
    #[command(flatten)]
    pub decision: DecisionArgs,
    #[command(flatten)]
    pub inputs: InputArgs,
    /// Where the report and artifacts go [default: $RUNNER_TEMP/plangate/runs/RUN_ID on GitHub Actions, $RUNNER_TEMP_PROJECT_DIR/… on GitLab CI, else WORKSPACE/.plangate/runs/RUN_ID, which git ignores].
    #[arg(long, env = "PLANGATE_OUT", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Decide and report, execute nothing.
    #[arg(long, env = "PLANGATE_DRY_RUN")]
    pub dry_run: bool,
    /// Run only these steps: `3`, `2-5`, `lint,test` (1-based positions or ids, comma-separated).
    #[arg(long, env = "PLANGATE_STEPS", value_name = "RANGE")]
    pub steps: Option<String>,
    /// Resume the run this report describes: steps that succeeded there (and were not rolled back) are carried over, the rest run. Refused unless the plan file, the workspace and its git HEAD are the same.
    #[arg(long, env = "PLANGATE_RESUME", value_name = "REPORT.json")]
    pub resume: Option<PathBuf>,
    /// Write every live agent answer (with its prompt's sha256 and its usage, redacted) to this file, which a `provider: replay` agent reads: replaying the run gives the same statuses and results.
    #[arg(long, env = "PLANGATE_RECORD", value_name = "FILE.jsonl")]
    pub record: Option<PathBuf>,
    /// Run only shard i of N (`plangate shard`): the same partition on every machine.
    #[arg(
        long,
        env = "PLANGATE_SHARD",
        value_name = "i/N",
        conflicts_with = "steps"
    )]
    pub shard: Option<String>,
    /// With `--shard`: the timings report `plangate shard --timings` was given.
    #[arg(
        long,
        env = "PLANGATE_TIMINGS",
        value_name = "REPORT.json",
        requires = "shard"
    )]
    pub timings: Option<PathBuf>,
    /// Steps at once (capped by --policy).
    #[arg(long, env = "PLANGATE_MAX_PARALLEL", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_parallel: Option<u32>,
    /// Most bytes kept per captured stream of a step; the rest is dropped and flagged `truncated`.
    #[arg(long, env = "PLANGATE_MAX_OUTPUT_BYTES", value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_output_bytes: u64,
    /// Seconds between SIGTERM and SIGKILL when a step is stopped.
    #[arg(
        long,
        env = "PLANGATE_KILL_GRACE",
        value_name = "SECONDS",
        default_value_t = 5.0
    )]
    pub kill_grace: f64,
    /// Seconds between the console's "still running" lines of a long agent step (elapsed time,
    /// and the tokens and cost its CLI's stream reported so far); 0 turns them off.
    #[arg(
        long,
        env = "PLANGATE_HEARTBEAT",
        value_name = "SECONDS",
        default_value_t = 30.0
    )]
    pub heartbeat: f64,
    /// Also write the report as JUnit XML here (GitLab `artifacts: reports: junit`).
    #[arg(long, env = "PLANGATE_JUNIT", value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// On stderr only one line, when the run does not succeed cleanly: the outcome and why (the blocked, denied or failed steps with their reasons).
    #[arg(long, short, env = "PLANGATE_QUIET")]
    pub quiet: bool,
    /// Whether findings fail the run (exit 4); overrides the plan's `fail_on_secrets` unless --policy pins it to true.
    #[arg(long, env = "PLANGATE_FAIL_ON_SECRETS", value_name = "true|false", value_parser = strict_bool)]
    pub fail_on_secrets: Option<bool>,
    /// Fail a partial success: a step skipped for want of approval makes the run `denied` (exit 3), a failure allowed by continue_on_error makes it `failed` (exit 1).
    #[arg(long, env = "PLANGATE_STRICT")]
    pub strict: bool,
    /// Whose last lines of stdout and stderr the console, annotations, JUnit, the summary and the PR comment show.
    #[arg(long, env = "PLANGATE_SHOW_OUTPUT", value_enum, default_value_t = ShowOutputArg::Failures)]
    pub show_output: ShowOutputArg,
    /// Stop starting steps after the first failure (the default; `--fail-fast=false` is `--no-fail-fast`); overrides the plan's `policy.fail_fast`.
    #[arg(long, env = "PLANGATE_FAIL_FAST", value_name = "true|false", value_parser = strict_bool, num_args = 0..=1, require_equals = true, default_missing_value = "true", overrides_with = "no_fail_fast")]
    pub fail_fast: Option<bool>,
    /// Keep going after a failed step: every step that does not depend on a failed one still runs; the run still fails (exit 1).
    #[arg(long, overrides_with = "fail_fast")]
    pub no_fail_fast: bool,
    #[command(flatten)]
    pub github: GithubArgs,
    #[command(flatten)]
    pub gitlab: GitlabArgs,
}

/// `--show-output` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowOutputArg {
    /// Failed steps' (failures allowed by continue_on_error included).
    Failures,
    /// Every step that ran.
    All,
    /// None: the output stays in the artifacts.
    None,
}

impl From<ShowOutputArg> for crate::model::ShowOutput {
    fn from(s: ShowOutputArg) -> crate::model::ShowOutput {
        match s {
            ShowOutputArg::Failures => crate::model::ShowOutput::Failures,
            ShowOutputArg::All => crate::model::ShowOutput::All,
            ShowOutputArg::None => crate::model::ShowOutput::None,
        }
    }
}

impl RunArgs {
    /// `--no-fail-fast`, else `--fail-fast[=BOOL]` or `PLANGATE_FAIL_FAST` (None: the plan decides).
    pub(crate) fn fail_fast(&self) -> Option<bool> {
        if self.no_fail_fast {
            Some(false)
        } else {
            self.fail_fast
        }
    }
}

/// Publishing to GitHub (under GitHub Actions, with a token): a pull-request
/// comment and a check run. Never changes the run's outcome.
#[derive(Debug, Clone, Args)]
pub struct GithubArgs {
    /// Token for the GitHub REST API (pass it as PLANGATE_GITHUB_TOKEN: steps can read a process's arguments). Never printed.
    #[arg(
        long,
        env = "PLANGATE_GITHUB_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub github_token: Option<String>,
    /// The REST API's base URL [default: $GITHUB_API_URL, else https://api.github.com].
    #[arg(long, env = "PLANGATE_GITHUB_API_URL", value_name = "URL")]
    pub github_api_url: Option<String>,
    /// Post (or update in place) a summary comment on the pull request.
    #[arg(long, env = "PLANGATE_COMMENT", value_name = "true|false", value_parser = strict_bool, action = ArgAction::Set, default_value = "true")]
    pub comment: bool,
    /// Create a check run with the summary on the commit.
    #[arg(long, env = "PLANGATE_CHECK_RUN", value_name = "true|false", value_parser = strict_bool, action = ArgAction::Set, default_value = "true")]
    pub check_run: bool,
}

/// Publishing to GitLab (under GitLab CI, or with an explicit token): the
/// run-summary note on the merge request, a commit status and the plan's
/// `publish:` requests. `--comment` and `--check-run` (the commit status) apply too.
#[derive(Debug, Clone, Args)]
pub struct GitlabArgs {
    /// Token for the GitLab REST API (pass it as PLANGATE_GITLAB_TOKEN: steps can read a process's arguments) [default: $GITLAB_TOKEN, else $CI_JOB_TOKEN]. Never printed.
    #[arg(
        long,
        env = "PLANGATE_GITLAB_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub gitlab_token: Option<String>,
    /// GitLab's REST API base URL, ending in /api/v4 [default: $CI_API_V4_URL].
    #[arg(long, env = "PLANGATE_GITLAB_API_URL", value_name = "URL")]
    pub gitlab_api_url: Option<String>,
}

/// A switch given something other than `true` or `false`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected `true` or `false`, got `{0}`")]
pub(crate) struct NotABool(String);

/// `true` or `false`, nothing else (no `yes`, `1`, `on`): a typo in a CI input must not flip a switch.
fn strict_bool(s: &str) -> Result<bool, NotABool> {
    match s {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(NotABool(other.to_owned())),
    }
}

/// `plangate validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The plan file.
    #[arg(value_name = "PLAN.yaml")]
    pub plan: PathBuf,
    #[command(flatten)]
    pub decision: DecisionArgs,
    #[command(flatten)]
    pub inputs: InputArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Exit as `run --strict` would: a step that would be skipped for want of approval makes it 3.
    #[arg(long, env = "PLANGATE_STRICT")]
    pub strict: bool,
}

/// `plangate schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Print the schema of a --policy file instead of a plan.
    #[arg(long)]
    pub policy: bool,
}

/// Output formats of `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For people.
    Text,
    /// For programs.
    Json,
    /// A Mermaid flowchart: one node per step (id, tool, effective risk,
    /// decision), one edge per dependency, nodes styled by decision.
    Mermaid,
}

/// `--risk-tolerance` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToleranceArg {
    /// Safe steps only.
    Low,
    /// Safe and moderate steps.
    Medium,
    /// All but blocked.
    High,
}

impl From<ToleranceArg> for Tolerance {
    fn from(t: ToleranceArg) -> Tolerance {
        match t {
            ToleranceArg::Low => Tolerance::Low,
            ToleranceArg::Medium => Tolerance::Medium,
            ToleranceArg::High => Tolerance::High,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_true_or_false_and_nothing_else() {
        assert_eq!(strict_bool("true"), Ok(true));
        assert_eq!(strict_bool("false"), Ok(false));
        for bad in ["True", "1", "yes", "on", "", " true"] {
            assert!(strict_bool(bad).is_err(), "{bad:?}");
        }
        let cli = Cli::try_parse_from(["plangate", "run", "p.yaml", "--fail-on-secrets", "false"])
            .unwrap_or_else(|e| panic!("{e}"));
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.fail_on_secrets, Some(false));
        assert!(
            Cli::try_parse_from(["plangate", "run", "p.yaml", "--fail-on-secrets", "no"]).is_err()
        );
    }

    #[test]
    fn fail_fast_flags_the_last_one_wins_and_a_bare_flag_takes_no_plan_path() {
        let parse = |args: &[&str]| {
            let mut all = vec!["plangate", "run"];
            all.extend_from_slice(args);
            let cli = Cli::try_parse_from(all).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let Command::Run(run) = cli.command else {
                panic!("not run")
            };
            (run.fail_fast(), run.plan)
        };
        assert_eq!(parse(&["p.yaml"]).0, None);
        assert_eq!(parse(&["--no-fail-fast", "p.yaml"]).0, Some(false));
        assert_eq!(
            parse(&["--fail-fast", "p.yaml"]),
            (Some(true), PathBuf::from("p.yaml"))
        );
        assert_eq!(parse(&["p.yaml", "--fail-fast=false"]).0, Some(false));
        assert_eq!(
            parse(&["p.yaml", "--fail-fast", "--no-fail-fast"]).0,
            Some(false)
        );
        assert_eq!(
            parse(&["p.yaml", "--no-fail-fast", "--fail-fast"]).0,
            Some(true)
        );
        assert!(Cli::try_parse_from(["plangate", "run", "p.yaml", "--fail-fast=no"]).is_err());
    }

    /// The line above SPEC's flag table.
    const FLAGS_MARKER: &str = "<!-- flags: generated from src/cli.rs; PLANGATE_WRITE_DOCS=1 cargo test --lib flags_table rewrites it -->";

    /// Every visible long flag of every visible subcommand with its
    /// environment variable (`—`: none), one row per flag and variable, naming
    /// the commands that take it, in clap's order.
    fn flag_rows() -> Vec<Vec<String>> {
        use clap::CommandFactory;
        let cli = Cli::command();
        let mut rows: Vec<(String, Vec<String>, String)> = Vec::new();
        for sub in cli.get_subcommands().filter(|c| !c.is_hide_set()) {
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                let Some(long) = arg.get_long().filter(|l| !matches!(*l, "help" | "version"))
                else {
                    continue;
                };
                let flag = format!("`--{long}`");
                let env = arg
                    .get_env()
                    .map_or("—".to_owned(), |e| format!("`{}`", e.to_string_lossy()));
                let name = format!("`{}`", sub.get_name());
                match rows.iter_mut().find(|r| r.0 == flag && r.2 == env) {
                    Some(r) => r.1.push(name),
                    None => rows.push((flag, vec![name], env)),
                }
            }
        }
        rows.into_iter()
            .map(|(flag, commands, env)| vec![flag, commands.join(", "), env])
            .collect()
    }

    /// SPEC's flag table is `flag_rows()`: a flag, a command or a variable
    /// missing or wrong fails here. `PLANGATE_WRITE_DOCS=1` rewrites the table
    /// instead (then review the diff).
    #[test]
    fn flags_table_in_spec_is_the_cli() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SPEC.md");
        let doc = std::fs::read_to_string(path).expect("docs/SPEC.md");
        let want = flag_rows();
        if crate::markdown::table_after(&doc, FLAGS_MARKER) == want {
            return;
        }
        let table: Vec<String> = [
            "| flag | commands | environment variable |",
            "| --- | --- | --- |",
        ]
        .into_iter()
        .map(str::to_owned)
        .chain(want.iter().map(|r| format!("| {} |", r.join(" | "))))
        .collect();
        if crate::environ::var("PLANGATE_WRITE_DOCS").as_deref() == Some("1") {
            let lines: Vec<&str> = doc.lines().collect();
            let at = lines
                .iter()
                .position(|l| l.trim() == FLAGS_MARKER)
                .expect("the flag table's marker line in docs/SPEC.md");
            let end = at
                + 1
                + lines[at + 1..]
                    .iter()
                    .take_while(|l| l.starts_with('|'))
                    .count();
            let mut out: Vec<String> = lines[..=at].iter().map(|l| (*l).to_owned()).collect();
            out.extend(table);
            out.extend(lines[end..].iter().map(|l| (*l).to_owned()));
            std::fs::write(path, out.join("\n") + "\n").expect("write docs/SPEC.md");
            return;
        }
        panic!(
            "docs/SPEC.md's flag table differs from src/cli.rs; \
             PLANGATE_WRITE_DOCS=1 cargo test --lib flags_table rewrites it as:\n{}",
            table.join("\n")
        );
    }
}
