//! Human lines on stderr (through `crate::output`): one when a step starts,
//! one when it ends.
//!
//! Colour only when stderr is a terminal (anstream honours NO_COLOR and
//! CLICOLOR). Under GitHub Actions each finished step's details are folded
//! in a `::group::`. Step output itself is echoed only for `show_cli: true`.

use std::path::Path;

use anstyle::{AnsiColor, Style};

use crate::engine::RunSettings;
use crate::model::StepStatus;
use crate::model::{Conclusion, RunStatus};
use crate::model::{OutputTail, Report, RollbackReport, StepReport};
use crate::plan::{Plan, Step};

/// How to print.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Console {
    /// Wrap step details in `::group::` / `::endgroup::`.
    pub github: bool,
    /// Print only the outcome line, and only when the run did not
    /// succeed cleanly ([`outcome_line`]).
    pub quiet: bool,
}

const DIM: Style = Style::new().dimmed();
const BOLD: Style = Style::new().bold();
const GREEN: Style = AnsiColor::Green.on_default();
const RED: Style = AnsiColor::Red.on_default().bold();
const YELLOW: Style = AnsiColor::Yellow.on_default();

/// Most bytes of a step's output echoed for `show_cli`.
const ECHO_LIMIT: u64 = 64 * 1024;

fn status_style(s: StepStatus) -> (Style, &'static str) {
    match s {
        StepStatus::Success => (GREEN, "ok"),
        StepStatus::Failed | StepStatus::TimedOut | StepStatus::Rejected => (RED, "FAIL"),
        StepStatus::Denied | StepStatus::Blocked => (RED, "DENY"),
        StepStatus::Skipped | StepStatus::NotRun => (YELLOW, "--"),
    }
}

fn secs(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

impl Console {
    /// From the environment: `GITHUB_ACTIONS=true` turns on groups.
    pub(crate) fn from_env() -> Console {
        Console {
            github: crate::environ::var("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
            quiet: false,
        }
    }

    fn line(&self, text: std::fmt::Arguments<'_>) {
        if self.quiet {
            return;
        }
        crate::output::line(text);
    }

    pub(super) fn run_started(&self, plan: &Plan, s: &RunSettings) {
        self.line(format_args!(
            "{BOLD}plangate{BOLD:#} run {} of plan `{}` ({} steps, tolerance {}, on_approval_required {}{})",
            s.run_id,
            plan.id,
            plan.steps.len(),
            s.policy.risk_tolerance.as_str(),
            s.policy.on_approval_required.as_str(),
            if s.dry_run { ", dry run" } else { "" }
        ));
        for c in &s.policy.capped {
            self.line(format_args!("{YELLOW}policy{YELLOW:#}: {c}"));
        }
    }

    pub(super) fn step_started(&self, step: &Step, r: &StepReport) {
        let (risk, decision, reason) = match (&r.risk, &r.approval) {
            (Some(k), Some(a)) => (k.effective.as_str(), a.decision.as_str(), a.reason.as_str()),
            _ => ("?", "?", ""),
        };
        let sandbox = r.sandbox.as_ref().map_or_else(String::new, |s| {
            if s.is_enforced() {
                format!(" {DIM}[sandbox {}]{DIM:#}", s.summary())
            } else {
                format!(" [sandbox {}]", s.summary())
            }
        });
        self.line(format_args!(
            "{DIM}>{DIM:#} {BOLD}{}{BOLD:#} [{}] {risk}, {decision}: {reason}{sandbox}",
            step.id,
            step.tool.as_str()
        ));
    }

    /// "… fix still running after 1m30s (attempt 1: 42 events, 12345 tokens, $0.0421 so far)".
    pub(super) fn heartbeat(&self, id: &str, b: &crate::tools::Beat) {
        let t = b.elapsed.as_secs_f64();
        let elapsed = if t < 60.0 {
            format!("{t:.1}s")
        } else {
            format!(
                "{}m{:02}s",
                b.elapsed.as_secs() / 60,
                b.elapsed.as_secs() % 60
            )
        };
        let mut said = vec![format!("attempt {}", b.attempt)];
        if b.events > 0 {
            let s = if b.events == 1 { "" } else { "s" };
            said.push(format!("{} event{s}", b.events));
        }
        if let Some(n) = b.tokens {
            said.push(format!("{n} tokens"));
        }
        if let Some(c) = b.cost_usd {
            said.push(format!("${c:.4}"));
        }
        let so_far = if b.tokens.is_some() || b.cost_usd.is_some() {
            " so far"
        } else {
            ""
        };
        self.line(format_args!(
            "{DIM}…{DIM:#} {BOLD}{id}{BOLD:#} still running after {elapsed} ({}{so_far})",
            said.join(", ")
        ));
    }

    /// "… test attempt 1/3 failed (exited with code 1); retrying in 2s (attempt 2/3)".
    /// A connection a step's egress proxy refused.
    pub(super) fn egress_denied(&self, id: &str, c: &crate::egress::Connection) {
        // The reason names the host and port.
        self.line(format_args!(
            "{YELLOW}✗{YELLOW:#} {BOLD}{id}{BOLD:#} egress denied: {}",
            c.reason.as_deref().unwrap_or("refused")
        ));
    }

    pub(super) fn step_retrying(&self, id: &str, n: &crate::tools::RetryNotice) {
        let w = n.wait.as_secs_f64();
        let wait = if n.wait.subsec_millis() == 0 {
            format!("{}s", n.wait.as_secs())
        } else {
            format!("{w:.1}s")
        };
        let why = n
            .error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        self.line(format_args!(
            "{YELLOW}…{YELLOW:#} {BOLD}{id}{BOLD:#} attempt {}/{} {}{why}; retrying in {wait} (attempt {}/{})",
            n.attempt,
            n.max_attempts,
            n.status.as_str(),
            n.attempt + 1,
            n.max_attempts
        ));
    }

    pub(super) fn step_finished(&self, step: &Step, r: &StepReport, out_dir: &Path) {
        let (style, tag) = status_style(r.status);
        let head = head_line(r);
        if self.github {
            self.line(format_args!("::group::{tag} {head}"));
            // Never an empty group: what ran, how long, what it left.
            self.line(format_args!("     {}", step_summary(step, r)));
        } else {
            self.line(format_args!("{style}{tag:>4}{style:#} {head}"));
        }
        let mut warnings: Vec<String> = r
            .agent_warnings()
            .into_iter()
            .map(|w| format!("step `{}`: {w}", r.id))
            .collect();
        warnings.extend(r.warnings.iter().map(|w| format!("step `{}`: {w}", r.id)));
        if let Some(n) = r.lingering_processes.filter(|n| *n > 0) {
            warnings.push(format!(
                "step `{}` left {n} process(es) running when it ended; they were killed",
                r.id
            ));
        }
        for what in warnings {
            if self.github {
                self.line(format_args!("::warning::{}", gh_data(&what)));
            } else {
                self.line(format_args!("     warning: {what}"));
            }
        }
        let show = step.action.show_cli();
        if show {
            // Under GitHub Actions nothing a step printed may act as a workflow command.
            let token = uuid::Uuid::now_v7().simple().to_string();
            if self.github {
                self.line(format_args!("::stop-commands::{token}"));
            }
            for a in &r.artifacts {
                echo_file(self, &out_dir.join(a));
            }
            if self.github {
                self.line(format_args!("::{token}::"));
            }
        } else if let Some(t) = &r.output_tail {
            self.output_tail(t);
        }
        if !show && !self.github && r.status.is_failure() && !r.artifacts.is_empty() {
            self.line(format_args!(
                "     {DIM}output:{DIM:#} {}",
                out_dir.join("artifacts").join(&r.id).display()
            ));
        }
        if self.github {
            self.line(format_args!("::endgroup::"));
            if r.status.is_failure() {
                self.annotate_failure(r, step.continue_on_error);
            }
        }
    }

    /// A step's output tail, each line behind `| ` (so no line it holds
    /// can start a workflow command).
    fn output_tail(&self, t: &OutputTail) {
        for (label, lines) in super::tail::blocks(t) {
            self.line(format_args!("     {DIM}{label}:{DIM:#}"));
            for l in lines {
                self.line(format_args!("     | {l}"));
            }
        }
    }

    /// A failed step's annotation: `::error`, or `::warning` for a failure
    /// `continue_on_error` allows; its message is the error and the output tail.
    fn annotate_failure(&self, r: &StepReport, allowed: bool) {
        let (kind, what) = if allowed {
            (
                "warning",
                format!("{} (allowed: continue_on_error)", r.status.as_str()),
            )
        } else {
            ("error", r.status.as_str().to_owned())
        };
        let mut message = r.error.clone().unwrap_or_default();
        if let Some(t) = &r.output_tail {
            for (label, lines) in super::tail::blocks(t) {
                message.push_str(&format!("\n{label}:"));
                for l in lines {
                    message.push('\n');
                    message.push_str(l);
                }
            }
        }
        self.line(format_args!(
            "::{kind} title={}::{}",
            gh_property(&format!("plangate step {} {what}", r.id)),
            gh_data(&message)
        ));
    }

    /// What made the run partial (or, with `--strict`, failed), one line,
    /// and under GitHub Actions a warning annotation for a partial success.
    fn partial(&self, r: &Report) {
        if r.partial_reasons.is_empty() {
            return;
        }
        let items: Vec<String> = r
            .partial_reasons
            .iter()
            .map(|p| p.describe(|id| format!("`{id}`")))
            .collect();
        let items = items.join("; ");
        match r.conclusion() {
            Conclusion::Partial => {
                self.line(format_args!("{YELLOW}partial{YELLOW:#}: {items}"));
                if self.github {
                    self.line(format_args!(
                        "::warning title=plangate: partial success::{}",
                        gh_data(&items)
                    ));
                }
            }
            _ if r.strict => self.line(format_args!(
                "{RED}strict{RED:#}: a partial success fails the run: {items}"
            )),
            _ => self.line(format_args!("also left undone: {items}")),
        }
    }

    /// One annotation per finding (GitHub shows at most 10 error annotations
    /// per step; the rest are in the report). A secret in a workspace file
    /// (written there, or shown in the diff summary) points at that file,
    /// relative to the repository, and its line, so GitHub links it; one in
    /// the run's own output names that file in the message only, since the
    /// output folder is no file of the commit.
    fn finding_annotations(&self, r: &Report, out_dir: &Path) {
        let repo = crate::location::Repo::current();
        let diff_summary = std::fs::read_to_string(out_dir.join("diff-summary.md")).ok();
        for f in r.findings.iter().take(10) {
            let in_workspace = match f.location.strip_prefix("workspace:") {
                Some(rel) => Some((rel.to_owned(), f.line)),
                None if f.location == "diff-summary.md" => r
                    .diff
                    .as_ref()
                    .zip(diff_summary.as_deref())
                    .and_then(|(d, md)| crate::diff::locate(&d.files, md, f.line)),
                None => None,
            };
            let title = gh_property(&format!("secret ({})", f.rule));
            match in_workspace {
                Some((rel, line)) => {
                    let path = Path::new(&r.workspace).join(&rel);
                    self.line(format_args!(
                        "::error file={},line={line},title={title}::{}",
                        gh_property(&repo.relative_or(&path, &rel)),
                        gh_data(&format!(
                            "a {} secret was found here; its value is redacted (fingerprint {})",
                            f.rule, f.fingerprint
                        ))
                    ));
                }
                None => self.line(format_args!(
                    "::error title={title}::{}",
                    gh_data(&format!(
                        "a {} secret was found in the run's output, {} line {} (in the output folder); its value is redacted (fingerprint {})",
                        f.rule, f.location, f.line, f.fingerprint
                    ))
                )),
            }
        }
    }

    /// What the run may publish, one line each.
    pub(super) fn publish(&self, entries: &[crate::model::publish::PublishEntry]) {
        for e in entries {
            self.line(format_args!(
                "{BOLD}publish{BOLD:#}: {}",
                super::publish::line(e)
            ));
        }
    }

    pub(super) fn step_not_run(&self, r: &StepReport) {
        let (style, tag) = status_style(r.status);
        self.line(format_args!(
            "{style}{tag:>4}{style:#} {} {}: {}",
            r.id,
            r.status.as_str(),
            r.error.as_deref().unwrap_or("")
        ));
    }

    pub(super) fn step_carried_over(&self, r: &StepReport) {
        let (style, tag) = status_style(r.status);
        let from = r.carried_over.as_ref().map_or("", |c| c.run_id.as_str());
        self.line(format_args!(
            "{style}{tag:>4}{style:#} {} {} (carried over from run {from}, not run again)",
            r.id,
            r.status.as_str(),
        ));
    }

    pub(super) fn rollback_started(&self, id: &str) {
        self.line(format_args!("{DIM}>{DIM:#} rollback of {BOLD}{id}{BOLD:#}"));
    }

    pub(super) fn rollback_finished(&self, id: &str, rb: &RollbackReport) {
        let (style, tag) = status_style(rb.status);
        self.line(format_args!(
            "{style}{tag:>4}{style:#} rollback of {id} {} in {}{}",
            rb.status.as_str(),
            secs(rb.duration_ms),
            rb.error
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ));
    }

    pub(super) fn run_finished(&self, r: &Report, out_dir: &Path) {
        if self.quiet {
            // Quiet (cron): nothing for a clean success, else one line that says why.
            if let Some(l) = outcome_line(r, out_dir) {
                crate::output::line(format_args!("{l}"));
            }
            return;
        }
        let partial = r.conclusion() == Conclusion::Partial;
        let (style, outcome) = match r.status {
            RunStatus::Success if partial => (YELLOW, "partial success"),
            RunStatus::Success => (GREEN, "success"),
            other => (RED, other.as_str()),
        };
        let count = |s: StepStatus| r.steps.iter().filter(|x| x.status == s).count();
        self.line(format_args!(
            "{BOLD}plangate{BOLD:#}: {style}{}{style:#} (exit {}) in {}: {} succeeded, {} failed, {} timed out, {} denied, {} blocked, {} skipped, {} not run",
            outcome,
            r.exit_code,
            secs(r.duration_ms),
            count(StepStatus::Success),
            count(StepStatus::Failed),
            count(StepStatus::TimedOut),
            count(StepStatus::Denied),
            count(StepStatus::Blocked),
            count(StepStatus::Skipped),
            count(StepStatus::NotRun),
        ));
        if let Some(d) = &r.diff {
            self.line(format_args!(
                "changed: {} file(s), +{} -{} (diff-summary.md)",
                d.files_changed, d.insertions, d.deletions
            ));
        }
        if r.usage.tokens() > 0 {
            self.line(format_args!("agent usage: {}", r.usage.summary()));
        }
        if !r.findings.is_empty() {
            self.line(format_args!(
                "{RED}secrets{RED:#}: {} found in what the run produced (values redacted; see `findings` in the report)",
                r.findings.len()
            ));
        }
        self.partial(r);
        if self.github {
            self.finding_annotations(r, out_dir);
        }
        if let Some(why) = &r.budget_exhausted {
            self.line(format_args!("{RED}budget{RED:#}: {why}"));
        }
        self.line(format_args!(
            "report: {}",
            out_dir.join("report.json").display()
        ));
    }
}

/// Most steps named in the quiet outcome line.
const OUTCOME_STEPS: usize = 3;
/// Most characters of one step's reason in the quiet outcome line.
const OUTCOME_REASON_CHARS: usize = 160;

/// The `--quiet` outcome, one line (None for a clean success): the outcome
/// and exit code, then why: the steps that were blocked, denied or failed,
/// each with its reason (redacted, cut), at most [`OUTCOME_STEPS`] of them
/// ("and N more"); what made the run partial; secrets found; the budget;
/// then where the report is. `plangate: denied (exit 3): deploy — blocked:
/// the secret `GITHUB_TOKEN` … is unset …; push — denied: dangerous risk
/// exceeds tolerance medium …; report: out/report.json`.
pub(crate) fn outcome_line(r: &Report, out_dir: &Path) -> Option<String> {
    let partial = r.conclusion() == Conclusion::Partial;
    if r.status == RunStatus::Success && !partial {
        return None;
    }
    let outcome = if partial {
        "partial success"
    } else {
        r.status.as_str()
    };
    let mut why: Vec<String> = Vec::new();
    let stopped: Vec<&StepReport> = r
        .steps
        .iter()
        .filter(|s| {
            matches!(s.status, StepStatus::Blocked | StepStatus::Denied) || s.status.is_failure()
        })
        .collect();
    for s in stopped.iter().take(OUTCOME_STEPS) {
        let status = s.status.as_str();
        let error = s.error.as_deref().unwrap_or("");
        // A blocked step's reason already starts with "blocked: ".
        let error = error
            .strip_prefix(status)
            .and_then(|e| e.strip_prefix(": "))
            .unwrap_or(error);
        let one_line = error.replace(['\n', '\r'], " ");
        why.push(format!(
            "{} — {status}: {}",
            s.id,
            crate::redact::cut(one_line.trim(), OUTCOME_REASON_CHARS)
        ));
    }
    if stopped.len() > OUTCOME_STEPS {
        why.push(format!(
            "and {} more {}",
            stopped.len() - OUTCOME_STEPS,
            if stopped.len() - OUTCOME_STEPS == 1 {
                "step"
            } else {
                "steps"
            }
        ));
    }
    let reasons: Vec<String> = r
        .partial_reasons
        .iter()
        .map(|p| p.describe(|id| format!("`{id}`")))
        .collect();
    for p in reasons.iter().take(OUTCOME_STEPS) {
        why.push(crate::redact::cut(p, OUTCOME_REASON_CHARS));
    }
    if reasons.len() > OUTCOME_STEPS {
        why.push(format!(
            "and {} more left undone",
            reasons.len() - OUTCOME_STEPS
        ));
    }
    if !r.findings.is_empty() {
        why.push(format!(
            "{} secret(s) found in what the run produced (values redacted)",
            r.findings.len()
        ));
    }
    if let Some(b) = &r.budget_exhausted {
        why.push(format!(
            "budget: {}",
            crate::redact::cut(b, OUTCOME_REASON_CHARS)
        ));
    }
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(": {}", why.join("; "))
    };
    Some(format!(
        "plangate: {outcome} (exit {}){why}; report: {}",
        r.exit_code,
        out_dir.join("report.json").display()
    ))
}

/// "fix failed in 1.20s, 2 attempt(s), 1 rejected (exited with code 1)".
fn head_line(r: &StepReport) -> String {
    let mut head = format!("{} {} in {}", r.id, r.status.as_str(), secs(r.duration_ms));
    if !r.agent_attempts.is_empty() {
        let rejected = r
            .agent_attempts
            .iter()
            .filter(|a| a.verdict == "rejected")
            .count();
        head.push_str(&format!(
            ", {} attempt(s), {rejected} rejected",
            r.agent_attempts.len()
        ));
        let retries: usize = r
            .agent_attempts
            .iter()
            .map(|a| a.http_attempts.len().saturating_sub(1))
            .sum();
        if retries > 0 {
            head.push_str(&format!(
                ", {retries} HTTP retr{}",
                if retries == 1 { "y" } else { "ies" }
            ));
        }
    }
    if r.command_attempts.len() > 1 {
        head.push_str(&format!(", {} attempts", r.command_attempts.len()));
    }
    if let Some(e) = &r.error {
        head.push_str(&format!(" ({e})"));
    }
    head
}

/// Most artifacts named in a step's summary line.
const SUMMARY_ARTIFACTS: usize = 5;

/// One line for a step's group: what ran (a bash command, redacted then
/// cut; an agent's name; the tool), how long, the artifacts it left.
fn step_summary(step: &Step, r: &StepReport) -> String {
    let what = step
        .action
        .spec()
        .summary()
        .unwrap_or_else(|| step.tool.as_str().to_owned());
    let mut line = format!("{what}, {}", secs(r.duration_ms));
    if r.artifacts.is_empty() {
        line.push_str(", no artifacts");
    } else {
        let shown: Vec<&str> = r
            .artifacts
            .iter()
            .take(SUMMARY_ARTIFACTS)
            .map(String::as_str)
            .collect();
        line.push_str(&format!(", artifacts: {}", shown.join(", ")));
        if r.artifacts.len() > SUMMARY_ARTIFACTS {
            line.push_str(&format!(
                " (+{} more)",
                r.artifacts.len() - SUMMARY_ARTIFACTS
            ));
        }
    }
    line
}

fn echo_file(c: &Console, path: &Path) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = crate::regular::open(path) else {
        return;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return;
    }
    if len > ECHO_LIMIT {
        c.line(format_args!(
            "     ... ({} bytes not shown; see {})",
            len - ECHO_LIMIT,
            path.display()
        ));
        let _ = f.seek(SeekFrom::Start(len - ECHO_LIMIT));
    }
    let mut buf = Vec::new();
    let _ = f.take(ECHO_LIMIT).read_to_end(&mut buf);
    if len > ECHO_LIMIT {
        // Whole lines only: the first one starts mid-line (maybe mid-secret).
        let from = memchr::memchr(b'\n', &buf).map_or(buf.len(), |i| i + 1);
        buf.drain(..from);
    }
    for line in String::from_utf8_lossy(&buf).lines() {
        // Neutralise workflow commands a step could print.
        let safe = if c.github && line.trim_start().starts_with("::") {
            format!(" {line}")
        } else {
            line.to_owned()
        };
        c.line(format_args!("     | {safe}"));
    }
}

/// Escape a workflow-command message.
pub(crate) fn gh_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a workflow-command property value.
fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}
