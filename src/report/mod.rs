//! Reporting: the only consumer of the engine's events.
//!
//! One [`Reporter`] turns [`RunEvent`]s into `report.json` (rewritten
//! atomically: temp file in the same directory, then rename), the artifact
//! manifest, `audit.jsonl` and the console lines on stderr. It runs on its
//! own thread; events that arrive while it writes are applied together, so a
//! plan of many fast steps does not pay one full report write per step.

pub(crate) mod audit;
pub(crate) mod console;
mod fragments;
pub(crate) mod gitlab;
pub(crate) mod mermaid;
pub(crate) mod publish;
pub(crate) mod render;
pub(crate) mod section;
pub(crate) mod tail;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Instant, SystemTime};

use serde::Serialize;

use crate::engine::events::RunEvent;
use crate::engine::{RunSettings, input_hash};
use crate::model::Diagnostic;
use crate::model::{
    AttemptEvent, AuditEvent, DiffSummary, Finding, PlanRef, Report, RollbackReport, RunStatus,
    SCHEMA_VERSION, StepOutcome, StepReport, StepStatus, Usage,
};
use crate::plan::Plan;
use crate::redact;
use audit::AuditLog;
use console::Console;

/// Most time between an event and the report that shows it while the run
/// goes on (the final report is written at once, on every way out): a plan
/// of many short steps rewrites its growing report a few times a second,
/// not once a step.
pub(crate) const FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// RFC 3339 with milliseconds, UTC.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Write `value` as pretty JSON to `path` atomically, through the redaction
/// layer, readable like any file the user's umask allows; `sync` also
/// fsyncs before the rename.
pub(crate) fn write_json_atomic<T: Serialize>(
    path: &Path,
    value: &T,
    sync: bool,
) -> std::io::Result<()> {
    let mut raw = serde_json::to_vec_pretty(value)?;
    raw.push(b'\n');
    crate::atomic::write(path, crate::atomic::Mode::Set(0o644), sync, |w| {
        w.write_all(&redact::clean(&raw))
    })
}

/// Write `value` as [`write_json_atomic`] does, its top-level list `key`
/// (`items`; empty in `skeleton`) redacted entry by entry with the cleaned
/// entries of the last write reused ([`fragments`]); `changed` says which
/// entries may differ from the last write. `full` gives the whole
/// document when the list cannot be placed (written the plain way).
fn write_json_cached<S: Serialize, T: Serialize, F: Serialize>(
    path: &Path,
    cache: &mut fragments::Fragments,
    skeleton: &S,
    key: &str,
    items: &[T],
    changed: impl Fn(usize) -> bool,
    full: impl FnOnce() -> F,
) -> std::io::Result<()> {
    match cache.render_changed(skeleton, key, items, changed)? {
        Some(bytes) => crate::atomic::write(path, crate::atomic::Mode::Set(0o644), false, |w| {
            w.write_all(&bytes)
        }),
        None => write_json_atomic(path, &full(), false),
    }
}

/// Write text atomically through the redaction layer.
pub(crate) fn write_text_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let clean = redact::clean(text.as_bytes());
    crate::atomic::write_bytes(path, crate::atomic::Mode::Set(0o644), &clean)
}

/// One manifest entry: design 002's ArtifactMetadata.
#[derive(Debug, Clone, Serialize)]
struct ManifestEntry {
    run_id: String,
    step_id: String,
    tool: String,
    kind: &'static str,
    sequence: u32,
    started_at: String,
    finished_at: String,
    input_hash: String,
    output_size: u64,
    duration_ms: u64,
    status: StepStatus,
    error: Option<String>,
    files: Vec<String>,
}

/// `artifacts/manifest.json`, serialized straight from the entries.
#[derive(Serialize)]
struct Manifest<'a> {
    run_id: &'a str,
    entries: &'a [ManifestEntry],
}

/// Builds and writes everything in the output directory.
pub(crate) struct Reporter {
    plan: Arc<Plan>,
    out_dir: PathBuf,
    report: Report,
    manifest: Vec<ManifestEntry>,
    hashes: Vec<String>,
    audit: AuditLog,
    console: Console,
    started: Instant,
    started_at: SystemTime,
    /// `--show-output`: whose output tail the report keeps.
    show_output: crate::model::ShowOutput,
    /// The cleaned step entries of the last rewrite of `report.json`.
    report_cache: fragments::Fragments,
    /// The cleaned entries of the last rewrite of the manifest.
    manifest_cache: fragments::Fragments,
    /// What changed since the last rewrite.
    since: Since,
}

/// What changed since the last rewrite while the run goes on: only those
/// entries are serialized again (see [`fragments::Fragments::render_changed`]).
#[derive(Default)]
struct Since {
    /// The step entries an event touched.
    touched: Vec<bool>,
    /// How many manifest entries the last rewrite held (the list only grows).
    manifest_written: usize,
}

impl Since {
    /// Note the step entries `ev` may change (of `n`).
    fn note(&mut self, ev: &RunEvent, n: usize) {
        self.touched.resize(n, false);
        match touches(ev) {
            Touches::Step(i) if i < n => self.touched[i] = true,
            Touches::Step(_) | Touches::All => self.touched.fill(true),
        }
    }
}

/// Which step entries of the report an event may change.
enum Touches {
    /// This one.
    Step(usize),
    /// Any of them.
    All,
}

/// Exhaustive on purpose: a new event must say which entries it changes.
fn touches(ev: &RunEvent) -> Touches {
    match ev {
        RunEvent::Decided { step, .. }
        | RunEvent::StepStarted { step, .. }
        | RunEvent::Heartbeat { step, .. }
        | RunEvent::StepRetrying { step, .. }
        | RunEvent::StepFinished { step, .. }
        | RunEvent::Egress { step, .. }
        | RunEvent::StepNotRun { step, .. }
        | RunEvent::StepCarriedOver { step, .. }
        | RunEvent::RollbackStarted { step, .. }
        | RunEvent::RollbackFinished { step, .. }
        | RunEvent::StepChanges { step, .. } => Touches::Step(*step),
        RunEvent::Publish { .. }
        | RunEvent::Diff { .. }
        | RunEvent::InternalError { .. }
        | RunEvent::RunFinished { .. } => Touches::All,
    }
}

/// A step's first entry: `not_run`, nothing known yet.
fn not_run(plan: &Plan, s: &crate::tools::step::Step) -> StepReport {
    StepReport {
        id: s.id.clone(),
        tool: s.tool.as_str().to_owned(),
        description: s.description.clone(),
        status: StepStatus::NotRun,
        risk: None,
        approval: None,
        dependencies: s.deps.iter().map(|&d| plan.steps[d].id.clone()).collect(),
        exit_code: None,
        signal: None,
        started_at: None,
        finished_at: None,
        duration_ms: 0,
        attempts: 0,
        artifacts: Vec::new(),
        truncated: false,
        output_bytes: 0,
        error: None,
        lingering_processes: None,
        warnings: Vec::new(),
        output_tail: None,
        sandbox: None,
        egress: None,
        rollback: None,
        usage: None,
        agent_command: s.action.agent_command().map(<[String]>::to_vec),
        agent_attempts: Vec::new(),
        command_attempts: Vec::new(),
        agent_changes: None,
        attempted_changes: None,
        untrusted_context: std::collections::BTreeMap::new(),
        result: None,
        changed_files: None,
        changed_files_omitted: 0,
        environment: None,
        outputs: std::collections::BTreeMap::new(),
        carried_over: None,
    }
}

impl Reporter {
    /// Create the output directory and the first report (every step `not_run`).
    pub(crate) fn new(
        plan: Arc<Plan>,
        settings: &RunSettings,
        console: Console,
    ) -> std::io::Result<Reporter> {
        std::fs::create_dir_all(settings.out_dir.join("artifacts"))?;
        let audit = AuditLog::create(&settings.out_dir)?;
        // From here plangate writes its folder through a descriptor, no link followed.
        crate::outdir::pin(&settings.out_dir, &settings.env.workspace)?;
        let started_at = SystemTime::now();
        let steps = plan.steps.iter().map(|s| not_run(&plan, s)).collect();
        let report = Report {
            schema_version: SCHEMA_VERSION,
            plangate_version: crate::version::VERSION.to_owned(),
            run_id: settings.run_id.clone(),
            in_progress: true,
            plan: PlanRef {
                id: Some(plan.id.clone()),
                path: plan.path.display().to_string(),
                sha256: Some(plan.sha256.clone()),
                objective: plan.objective.clone(),
            },
            status: RunStatus::Interrupted,
            exit_code: RunStatus::Interrupted.code(),
            conclusion: Some(RunStatus::Interrupted.conclusion(false)),
            partial_reasons: Vec::new(),
            strict: settings.strict,
            started_at: rfc3339(started_at),
            finished_at: None,
            duration_ms: 0,
            dry_run: settings.dry_run,
            workspace: settings.env.workspace.display().to_string(),
            policy: Some(settings.policy.clone()),
            approvals: settings.approvals.iter().cloned().collect(),
            sandbox: settings.env.sandbox.clone(),
            git_credentials_withheld: settings.env.git_supply.withheld.clone(),
            steps,
            findings: Vec::new(),
            diff: None,
            usage: Usage::default(),
            budget_exhausted: None,
            workspace_head: settings.workspace_head.clone(),
            resumed_from: settings.resume.as_ref().map(|r| r.from.clone()),
            shard: settings.shard.clone(),
            inputs: settings
                .inputs
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect(),
            untrusted_inputs: settings.untrusted.clone(),
            inputs_sha256: (!plan.inputs.is_empty())
                .then(|| crate::plan::inputs::digest(&settings.inputs)),
            publish: Vec::new(),
            errors: Vec::new(),
        };
        let hashes = plan.steps.iter().map(input_hash).collect();
        let mut r = Reporter {
            plan,
            out_dir: settings.out_dir.clone(),
            report,
            manifest: Vec::new(),
            hashes,
            audit,
            console,
            started: Instant::now(),
            started_at,
            show_output: settings.show_output,
            report_cache: fragments::Fragments::default(),
            manifest_cache: fragments::Fragments::default(),
            since: Since::default(),
        };
        r.audit(AuditEvent::PlanLoaded {
            plan_id: r.plan.id.clone(),
            path: r.report.plan.path.clone(),
            sha256: r.plan.sha256.clone(),
            steps: r.plan.steps.len(),
        });
        r.audit(AuditEvent::RunStarted {
            run_id: r.report.run_id.clone(),
            policy: Box::new(settings.policy.clone()),
            dry_run: settings.dry_run,
            approvals: r.report.approvals.clone(),
            workspace_head: r.report.workspace_head.clone(),
            resumed_from: r.report.resumed_from.clone(),
        });
        r.console.run_started(&r.plan, settings);
        r.flush(false)?;
        Ok(r)
    }

    /// Consume events until the engine is done; returns the final report path.
    ///
    /// The report is rewritten as soon as an event arrives, but at most once
    /// per [`FLUSH_INTERVAL`]: a killed run's report lags by at most that
    /// much, and a plan of a thousand one-millisecond steps does not pay a
    /// thousand rewrites of a growing file. The final write is immediate and
    /// fsynced.
    pub(crate) fn consume(mut self, rx: &Receiver<RunEvent>) -> std::io::Result<PathBuf> {
        let mut last_flush = Instant::now();
        let mut dirty = false;
        loop {
            let ev = if dirty {
                let wait = FLUSH_INTERVAL.saturating_sub(last_flush.elapsed());
                match rx.recv_timeout(wait) {
                    Ok(ev) => Some(ev),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match rx.recv() {
                    Ok(ev) => Some(ev),
                    Err(_) => break,
                }
            };
            let mut finished = false;
            if let Some(ev) = ev {
                finished = self.apply(&ev);
                while let Ok(more) = rx.try_recv() {
                    finished |= self.apply(&more);
                }
                dirty = true;
            }
            if finished || (dirty && last_flush.elapsed() >= FLUSH_INTERVAL) {
                self.flush(finished)?;
                last_flush = Instant::now();
                dirty = false;
            }
        }
        if dirty {
            self.flush(false)?;
        }
        Ok(self.out_dir.join("report.json"))
    }

    fn audit(&mut self, event: AuditEvent) {
        self.audit.write(&event);
    }

    /// The renames the sweeps made (for `step`, or all left), in the audit log.
    fn renamed(&mut self, step: Option<&str>) {
        for r in crate::tools::take_renamed(step) {
            self.audit(AuditEvent::Renamed {
                step: r.step,
                path: r.path,
            });
        }
    }

    /// Apply one event; returns true when the run finished.
    fn apply(&mut self, ev: &RunEvent) -> bool {
        self.since.note(ev, self.report.steps.len());
        match ev {
            RunEvent::Decided {
                step,
                risk,
                decision,
                sandbox,
            } => {
                let s = &mut self.report.steps[*step];
                s.risk = Some(*risk);
                s.sandbox.clone_from(sandbox);
                s.approval = Some(decision.clone());
                let step = s.id.clone();
                self.audit(AuditEvent::Decision {
                    step,
                    risk: *risk,
                    decision: decision.decision,
                    reason: decision.reason.clone(),
                });
            }
            RunEvent::StepStarted { step, sequence, at } => {
                let s = &mut self.report.steps[*step];
                s.started_at = Some(rfc3339(*at));
                let step_id = s.id.clone();
                self.audit(AuditEvent::StepStarted {
                    step: step_id,
                    sequence: *sequence,
                });
                self.console
                    .step_started(&self.plan.steps[*step], &self.report.steps[*step]);
            }
            RunEvent::StepFinished {
                step,
                sequence,
                outcome,
            } => {
                self.finish_step(*step, *sequence, outcome);
            }
            RunEvent::StepRetrying { step, notice } => self.step_retrying(*step, notice),
            RunEvent::Egress { step, conn } => self.egress(*step, conn),
            RunEvent::Heartbeat { step, beat } => self.heartbeat(*step, beat),
            RunEvent::StepNotRun {
                step,
                status,
                reason,
            } => {
                let s = &mut self.report.steps[*step];
                s.status = *status;
                s.error = Some(reason.clone());
                let step_id = s.id.clone();
                self.audit(AuditEvent::StepNotRun {
                    step: step_id,
                    status: *status,
                    reason: reason.clone(),
                });
                self.console.step_not_run(&self.report.steps[*step]);
            }
            RunEvent::StepCarriedOver {
                step,
                previous,
                findings,
            } => {
                // Its decision too is the one under which it ran.
                self.report.steps[*step] = (**previous).clone();
                self.report.findings.extend(findings.iter().cloned());
                let s = &self.report.steps[*step];
                let event = AuditEvent::StepCarriedOver {
                    step: s.id.clone(),
                    from: s.carried_over.clone(),
                };
                self.audit(event);
                self.console.step_carried_over(&self.report.steps[*step]);
            }
            RunEvent::RollbackStarted { step, sequence } => {
                let id = self.report.steps[*step].id.clone();
                self.audit(AuditEvent::RollbackStarted {
                    step: id.clone(),
                    sequence: *sequence,
                });
                self.console.rollback_started(&id);
            }
            RunEvent::RollbackFinished {
                step,
                sequence,
                outcome,
            } => self.finish_rollback(*step, *sequence, outcome),
            RunEvent::StepChanges {
                step,
                rollback,
                files,
                omitted,
            } => self.step_changes(*step, *rollback, files, *omitted),
            RunEvent::Diff {
                summary,
                markdown,
                findings,
            } => self.diff(summary, markdown, findings),
            RunEvent::Publish { entries } => self.publish(entries),
            RunEvent::InternalError { message } => {
                self.report.errors.push(crate::model::Diagnostic {
                    file: "<plangate>".into(),
                    line: 0,
                    column: 0,
                    message: format!("internal error (a bug, please report it): {message}"),
                    help: Some("the run stopped here; the steps it had not finished are not reported as succeeded".into()),
                });
            }
            RunEvent::RunFinished { status, partial } => {
                self.run_finished(*status, partial);
                return true;
            }
        }
        false
    }

    /// The run is over: its status in the report and the audit log.
    fn run_finished(&mut self, status: RunStatus, partial: &[crate::model::PartialReason]) {
        self.report.status = status;
        self.report.exit_code = status.code();
        self.report.conclusion = Some(status.conclusion(!partial.is_empty()));
        self.report.partial_reasons = partial.to_vec();
        self.report.in_progress = false;
        self.report.finished_at = Some(rfc3339(SystemTime::now()));
        self.audit(AuditEvent::RunFinished {
            status,
            exit_code: status.code(),
        });
    }

    /// What the run may publish: the console and the report.
    fn publish(&mut self, entries: &[crate::model::publish::PublishEntry]) {
        self.console.publish(entries);
        self.report.publish = entries.to_vec();
    }

    /// A bash step's attempt failed and its command runs again: the audit log and the console say so.
    fn step_retrying(&mut self, step: usize, notice: &crate::tools::RetryNotice) {
        let id = self.report.steps[step].id.clone();
        self.audit(AuditEvent::StepRetry {
            step: id.clone(),
            attempt: notice.attempt,
            max_attempts: notice.max_attempts,
            status: notice.status,
            exit_code: notice.exit_code,
            error: notice.error.clone(),
            wait_ms: millis(notice.wait),
        });
        self.console.step_retrying(&id, notice);
    }

    fn heartbeat(&mut self, step: usize, beat: &crate::tools::Beat) {
        self.console.heartbeat(&self.report.steps[step].id, beat);
    }

    /// A connection through a step's egress proxy: an audit line, the
    /// step's tally, and a console line when it was refused.
    fn egress(&mut self, step: usize, c: &crate::egress::Connection) {
        let id = self.report.steps[step].id.clone();
        let t = self.report.steps[step].egress.get_or_insert_default();
        if c.allowed {
            t.allowed += 1;
        } else {
            t.denied += 1;
        }
        t.bytes_out += c.bytes_out;
        t.bytes_in += c.bytes_in;
        self.audit(AuditEvent::Egress {
            step: id.clone(),
            host: c.host.clone(),
            port: c.port,
            address: c.address.clone(),
            allowed: c.allowed,
            reason: c.reason.clone(),
            bytes_out: c.bytes_out,
            bytes_in: c.bytes_in,
        });
        if !c.allowed {
            self.console.egress_denied(&id, c);
        }
    }

    /// A rollback ended: its report under the step, its findings, its manifest entry.
    fn finish_rollback(&mut self, step: usize, sequence: u32, outcome: &StepOutcome) {
        let id = self.report.steps[step].id.clone();
        let rb = RollbackReport {
            status: outcome.status,
            exit_code: outcome.exit_code,
            duration_ms: millis(outcome.duration),
            artifacts: outcome.artifacts.clone(),
            error: outcome.error.clone(),
            changed_files: None,
            changed_files_omitted: 0,
        };
        self.audit(AuditEvent::RollbackFinished {
            step: id.clone(),
            status: outcome.status,
            error: outcome.error.clone(),
        });
        self.console.rollback_finished(&id, &rb);
        self.report
            .findings
            .extend(outcome.findings.iter().cloned());
        self.manifest_entry(step, sequence, "rollback", outcome);
        self.report.steps[step].rollback = Some(rb);
    }

    /// The files a step (or its rollback) changed.
    fn step_changes(&mut self, step: usize, rollback: bool, files: &[String], omitted: u64) {
        let s = &mut self.report.steps[step];
        let id = s.id.clone();
        let (target, target_omitted) = match (rollback, s.rollback.as_mut()) {
            (true, Some(rb)) => (&mut rb.changed_files, &mut rb.changed_files_omitted),
            _ => (&mut s.changed_files, &mut s.changed_files_omitted),
        };
        *target = Some(files.to_vec());
        *target_omitted = omitted;
        let total = files.len() as u64 + omitted;
        self.audit(AuditEvent::StepChanges {
            step: id,
            rollback,
            files: total,
        });
    }

    /// What the run changed: the report's `diff` block, its findings, `diff-summary.md`.
    fn diff(&mut self, summary: &DiffSummary, markdown: &str, findings: &[Finding]) {
        self.report.diff = Some(summary.clone());
        self.report.findings.extend(findings.iter().cloned());
        for f in findings {
            self.audit(finding_event(None, f));
        }
        self.renamed(None);
        self.audit(AuditEvent::Diff {
            method: summary.method,
            files_changed: summary.files_changed,
            insertions: summary.insertions,
            deletions: summary.deletions,
            notes: summary.notes.clone(),
        });
        let path = self.out_dir.join("diff-summary.md");
        if let Err(e) = write_text_atomic(&path, markdown) {
            self.audit(AuditEvent::Error {
                what: "diff-summary.md".to_owned(),
                error: e.to_string(),
            });
        }
    }

    fn finish_step(&mut self, step: usize, sequence: u32, o: &StepOutcome) {
        let s = &mut self.report.steps[step];
        s.status = o.status;
        s.exit_code = o.exit_code;
        s.signal = o.signal;
        s.started_at = Some(rfc3339(o.started_at));
        s.finished_at = Some(rfc3339(o.started_at + o.duration));
        s.duration_ms = millis(o.duration);
        s.attempts = o.attempts;
        s.artifacts.clone_from(&o.artifacts);
        s.truncated = o.truncated;
        s.output_bytes = o.output_bytes;
        s.error.clone_from(&o.error);
        s.lingering_processes = o.lingering_processes;
        s.warnings.clone_from(&o.warnings);
        s.usage = o.usage;
        s.environment.clone_from(&o.environment);
        s.outputs.clone_from(&o.outputs);
        self.report.findings.extend(o.findings.iter().cloned());
        let s = &mut self.report.steps[step];
        s.agent_attempts.clone_from(&o.agent_attempts);
        s.command_attempts.clone_from(&o.command_attempts);
        s.agent_changes.clone_from(&o.agent_changes);
        s.attempted_changes.clone_from(&o.attempted_changes);
        s.untrusted_context.clone_from(&o.untrusted_context);
        s.result.clone_from(&o.result);
        if let Some(u) = &o.usage {
            self.report.usage.add(u);
        }
        if o.budget_exhausted && self.report.budget_exhausted.is_none() {
            self.report.budget_exhausted.clone_from(&o.error);
        }
        let s = &self.report.steps[step];
        let id = s.id.clone();
        self.audit(AuditEvent::StepFinished {
            step: id.clone(),
            sequence,
            status: o.status,
            exit_code: o.exit_code,
            duration_ms: millis(o.duration),
            truncated: o.truncated,
            error: o.error.clone(),
        });
        for f in &o.findings {
            self.audit(finding_event(Some(&id), f));
        }
        self.renamed(Some(&id));
        for a in &o.agent_attempts {
            let attempt = AttemptEvent {
                step: id.clone(),
                attempt: a.attempt,
                verdict: a.verdict.clone(),
                rejections: a.rejections.clone(),
                usage: a.usage,
            };
            self.audit(if a.verdict == "rejected" {
                AuditEvent::ParseFailure(attempt)
            } else {
                AuditEvent::AgentAttempt(attempt)
            });
        }
        self.manifest_entry(step, sequence, "step", o);
        let tail = tail::of_step(&self.out_dir, &self.report.steps[step], self.show_output);
        self.report.steps[step].output_tail = tail;
        self.console.step_finished(
            &self.plan.steps[step],
            &self.report.steps[step],
            &self.out_dir,
        );
    }

    fn manifest_entry(&mut self, step: usize, sequence: u32, kind: &'static str, o: &StepOutcome) {
        let s = &self.plan.steps[step];
        self.manifest.push(ManifestEntry {
            run_id: self.report.run_id.clone(),
            step_id: s.id.clone(),
            tool: s.tool.as_str().to_owned(),
            kind,
            sequence,
            started_at: rfc3339(o.started_at),
            finished_at: rfc3339(o.started_at + o.duration),
            input_hash: self.hashes[step].clone(),
            output_size: o.output_bytes,
            duration_ms: millis(o.duration),
            status: o.status,
            error: o.error.clone(),
            files: o.artifacts.clone(),
        });
    }

    /// Write report.json and the manifest (atomically), and flush the audit log.
    fn flush(&mut self, last: bool) -> std::io::Result<()> {
        self.report.duration_ms = millis(self.started.elapsed());
        if last {
            self.report.finished_at = Some(rfc3339(self.started_at + self.started.elapsed()));
        }
        self.audit.flush()?;
        let manifest = Manifest {
            run_id: &self.report.run_id,
            entries: &self.manifest,
        };
        let manifest_path = self.out_dir.join("artifacts").join("manifest.json");
        let report_path = self.out_dir.join("report.json");
        if last {
            // The files that stay: redacted whole, as one text, and fsynced.
            write_json_atomic(&manifest_path, &manifest, true)?;
            write_json_atomic(&report_path, &self.report, true)?;
        } else {
            // A rewrite while the run goes on: only the entries that changed
            // (or every one, when the redaction's values grew) are redacted.
            let skeleton = Manifest {
                run_id: &self.report.run_id,
                entries: &[],
            };
            let old = self.since.manifest_written;
            write_json_cached(
                &manifest_path,
                &mut self.manifest_cache,
                &skeleton,
                "entries",
                &self.manifest,
                |i| i >= old,
                || manifest,
            )?;
            self.since.manifest_written = self.manifest.len();
            let steps = std::mem::take(&mut self.report.steps);
            let touched = std::mem::take(&mut self.since.touched);
            let written = write_json_cached(
                &report_path,
                &mut self.report_cache,
                &self.report,
                "steps",
                &steps,
                |i| touched.get(i).is_none_or(|t| *t),
                || {
                    let mut whole = self.report.clone();
                    whole.steps.clone_from(&steps);
                    whole
                },
            );
            self.report.steps = steps;
            if written.is_err() {
                // Not written: every entry counts as changed next time.
                self.since.touched = vec![true; touched.len()];
            }
            written?;
        }
        if last {
            self.audit.sync()?;
            self.console.run_finished(&self.report, &self.out_dir);
        }
        Ok(())
    }
}

/// Write the report of a run that never started because its plan or flags were invalid.
pub(crate) fn write_invalid(
    out_dir: &Path,
    run_id: &str,
    plan_path: &Path,
    workspace: &Path,
    errors: &[Diagnostic],
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(out_dir)?;
    let now = rfc3339(SystemTime::now());
    let bytes = std::fs::read(plan_path).ok();
    let report = Report {
        schema_version: SCHEMA_VERSION,
        plangate_version: crate::version::VERSION.to_owned(),
        run_id: run_id.to_owned(),
        in_progress: false,
        plan: PlanRef {
            id: None,
            path: plan_path.display().to_string(),
            sha256: bytes.map(|b| {
                use sha2::Digest;
                hex::encode(sha2::Sha256::digest(&b))
            }),
            objective: None,
        },
        status: RunStatus::Invalid,
        exit_code: RunStatus::Invalid.code(),
        conclusion: Some(RunStatus::Invalid.conclusion(false)),
        partial_reasons: Vec::new(),
        strict: false,
        started_at: now.clone(),
        finished_at: Some(now),
        duration_ms: 0,
        dry_run: false,
        workspace: workspace.display().to_string(),
        policy: None,
        approvals: Vec::new(),
        sandbox: None,
        git_credentials_withheld: Vec::new(),
        steps: Vec::new(),
        findings: Vec::new(),
        diff: None,
        usage: Usage::default(),
        budget_exhausted: None,
        workspace_head: None,
        resumed_from: None,
        shard: None,
        inputs: std::collections::BTreeMap::new(),
        untrusted_inputs: std::collections::BTreeMap::new(),
        inputs_sha256: None,
        publish: Vec::new(),
        errors: errors.to_vec(),
    };
    let path = out_dir.join("report.json");
    write_json_atomic(&path, &report, true)?;
    let line = audit::line(&AuditEvent::PlanInvalid {
        errors: errors.len(),
    })
    .map_err(std::io::Error::other)?;
    std::fs::write(out_dir.join(audit::FILE), line)?;
    Ok(path)
}

/// Append one event to a finished run's `audit.jsonl` (what happened after
/// the report was final, such as publishing), through the redaction layer.
pub(crate) fn append_audit(out_dir: &Path, event: &AuditEvent) -> std::io::Result<()> {
    audit::append(out_dir, event)
}

/// The audit line of a finding (`step`: the step whose output held it; none for the diff's).
fn finding_event(step: Option<&str>, f: &Finding) -> AuditEvent {
    AuditEvent::Finding {
        step: step.map(str::to_owned),
        rule: f.rule.clone(),
        location: f.location.clone(),
        line: f.line,
        fingerprint: f.fingerprint.clone(),
    }
}
