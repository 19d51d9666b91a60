//! What happens to an agent's answer: the guard judges it ([`judge`]); an
//! accepted value is stored as `parsed.*`, the step's `expected_output` is
//! applied, and the agent's change set (its staged copy's changes, an
//! envelope's files) is checked and applied ([`accept`], `changes.rs`).

use std::path::Path;

use serde_json::Value;

use super::changes::ChangeSet;
use super::provider::{Answer, one_line};
use super::stage::Stage;
use crate::guard::envelope::{self, Status, Tier};
use crate::guard::{code, json};
use crate::model::{AgentChanges, AgentResult, StepOutcome, StepStatus};
use crate::model::{Category, Rejection};
use crate::tools::StepContext;
use crate::tools::params::agent::{AgentAction, OutputKind};
use crate::tools::step::Step;

/// The parsed value of an accepted answer.
pub(super) struct Accepted {
    /// The envelope tier, for envelopes.
    pub(super) tier: Option<Tier>,
    kind: AcceptedKind,
}

enum AcceptedKind {
    Envelope(envelope::Envelope),
    Code(String),
    Json(Value),
}

pub(super) fn judge(
    a: &AgentAction,
    answer: &Answer,
    max_out: u64,
) -> Result<Accepted, Vec<Rejection>> {
    if let Some(why) = &answer.cut_short {
        return Err(vec![Rejection::whole(
            Category::Truncated,
            format!("the answer was cut short ({why}); give a complete, shorter answer"),
        )]);
    }
    let chars = answer.text.chars().count() as u64;
    if chars > max_out {
        return Err(vec![Rejection::whole(
            Category::Truncated,
            format!(
                "the answer has {chars} characters, more than the {max_out} allowed; give a shorter answer"
            ),
        )]);
    }
    match a.output {
        OutputKind::Envelope => envelope::parse_envelope(&answer.text).map(|(e, t)| Accepted {
            tier: Some(t),
            kind: AcceptedKind::Envelope(e),
        }),
        OutputKind::Code => {
            let c = code::parse_code(&answer.text, a.language.as_deref())?;
            if let Some(check) = a.check_code {
                let problems = check(&c);
                if !problems.is_empty() {
                    return Err(problems);
                }
            }
            Ok(Accepted {
                tier: None,
                kind: AcceptedKind::Code(c),
            })
        }
        OutputKind::Json => json::parse_json(&answer.text, a.schema.as_ref()).map(|v| Accepted {
            tier: None,
            kind: AcceptedKind::Json(v),
        }),
    }
}

/// Store the accepted value, check `expected_output`, then commit the
/// agent's change set (its staged copy's changes and an envelope's files):
/// checked as a whole, applied only when every check passes.
pub(super) fn accept(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    stage: Option<&Stage>,
    acc: Accepted,
    exclude: &[String],
    mut out: StepOutcome,
) -> StepOutcome {
    let (rel, text) = match &acc.kind {
        AcceptedKind::Code(c) => (format!("{}/parsed.txt", ctx.artifacts_rel), c.clone()),
        AcceptedKind::Envelope(e) => (
            format!("{}/parsed.json", ctx.artifacts_rel),
            serde_json::to_string_pretty(e).unwrap_or_default(),
        ),
        AcceptedKind::Json(v) => (
            format!("{}/parsed.json", ctx.artifacts_rel),
            serde_json::to_string_pretty(v).unwrap_or_default(),
        ),
    };
    let path = ctx.out_dir.join(&rel);
    if let Err(e) = std::fs::write(&path, text.as_bytes()) {
        out.error = Some(format!("cannot store the accepted answer: {e}"));
        return out;
    }
    out.artifacts.push(rel);
    out.result_file = Some(path);
    out.result = Some(shown(a, &acc.kind, &text));
    let mut files: Vec<(&str, &[u8])> = Vec::new();
    if let AcceptedKind::Envelope(e) = &acc.kind {
        if e.status == Status::Fail {
            out.status = StepStatus::Failed;
            out.error = Some(format!("the agent reported FAIL: {}", one_line(&e.summary)));
            return out;
        }
        if a.write_artifacts || a.read_only {
            files = e
                .files()
                .iter()
                .map(|f| (f.path.as_str(), f.content.as_bytes()))
                .collect();
        }
    }
    if let Some(re) = &step.expected_output
        && !crate::tools::expected_output_matches(re, &text)
    {
        out.status = StepStatus::Failed;
        out.error = Some(format!(
            "the accepted answer does not match expected_output `{}`",
            re.as_str()
        ));
        return out;
    }
    if a.read_only {
        // Nothing is applied, whatever the answer says: what it tried is reported.
        match attempted(ctx, stage, &files, exclude) {
            Ok(tried) => out.attempted_changes = tried,
            Err(why) => {
                out.status = StepStatus::Failed;
                out.error = Some(format!(
                    "the answer was accepted but what the read-only agent tried to change cannot be listed: {why}"
                ));
                return out;
            }
        }
        out.status = StepStatus::Success;
        out.error = None;
        return out;
    }
    // `commit` says what was not applied, once: its message is the error.
    if let Err(why) = commit(ctx, stage, &files, exclude, &mut out) {
        out.status = StepStatus::Failed;
        out.error = Some(why);
        return out;
    }
    out.status = StepStatus::Success;
    out.error = None;
    out
}

/// The accepted result as the summaries show it: redacted, then cut.
fn shown(a: &AgentAction, kind: &AcceptedKind, text: &str) -> AgentResult {
    const MAX_ITEM: usize = 300;
    let cut_text = |t: &str| {
        let clean = crate::redact::clean_str(t).into_owned();
        let cut = clean.chars().count() > AgentResult::MAX_TEXT;
        (
            clean
                .chars()
                .take(AgentResult::MAX_TEXT)
                .collect::<String>(),
            cut,
        )
    };
    match kind {
        AcceptedKind::Envelope(e) => AgentResult {
            kind: "envelope".to_owned(),
            summary: Some(crate::redact::cut(&e.summary, AgentResult::MAX_TEXT)),
            files: e
                .files()
                .iter()
                .map(|f| crate::redact::cut(&f.path, MAX_ITEM))
                .collect(),
            next_actions: e
                .actions()
                .iter()
                .map(|n| crate::redact::cut(n, MAX_ITEM))
                .collect(),
            ..AgentResult::default()
        },
        AcceptedKind::Json(_) | AcceptedKind::Code(_) => {
            let (text, cut) = cut_text(text);
            let code = matches!(kind, AcceptedKind::Code(_));
            AgentResult {
                kind: if code { "code" } else { "json" }.to_owned(),
                language: if code { a.language.clone() } else { None },
                text,
                cut,
                ..AgentResult::default()
            }
        }
    }
}

/// What a read-only agent tried to change: its staged copy's changes and its
/// envelope's files (never applied); None when it tried nothing. Paths in
/// `exclude` (a CLI's own output file) are not the agent's edits.
fn attempted(
    ctx: &StepContext,
    stage: Option<&Stage>,
    files: &[(&str, &[u8])],
    exclude: &[String],
) -> Result<Option<AgentChanges>, String> {
    let mut set = match stage {
        Some(s) => s.attempted()?,
        None => ChangeSet::default(),
    };
    set.exclude(exclude);
    let staged = !set.is_empty();
    let envelope = ChangeSet::from_files(&ctx.env.workspace, files.iter().copied());
    let enveloped = !envelope.is_empty();
    // An envelope's file replaces the copy's change at the same path.
    set.changes
        .retain(|c| !envelope.changes.iter().any(|e| e.path == c.path));
    set.changes.extend(envelope.changes);
    if set.is_empty() {
        return Ok(None);
    }
    let via = match (staged, enveloped) {
        (true, true) => "staged copy and envelope",
        (true, false) => "staged copy",
        _ => "envelope",
    };
    Ok(Some(AgentChanges {
        via: via.to_owned(),
        files: set.listed(),
        bytes: set.bytes(),
        stage: stage.filter(|_| staged).map(|s| s.kind().to_owned()),
    }))
}

/// Check and apply the agent's change set; record it on `out`. `Err` is
/// the whole message (what was not applied, then why), for the step's error.
/// Paths in `exclude` (a CLI's own output file) are not the agent's edits.
fn commit(
    ctx: &StepContext,
    stage: Option<&Stage>,
    files: &[(&str, &[u8])],
    exclude: &[String],
    out: &mut StepOutcome,
) -> Result<(), String> {
    let envelope = ChangeSet::from_files(&ctx.env.workspace, files.iter().copied());
    if stage.is_none() && envelope.is_empty() {
        return Ok(());
    }
    let mut findings = Vec::new();
    let checked = envelope.check(ctx, &mut findings);
    out.findings.append(&mut findings);
    let not_written =
        |why: String| format!("the envelope was accepted but its files were not written: {why}");
    let not_applied = |why: String| {
        format!("the answer was accepted but the agent's changes were not applied: {why}")
    };
    checked.map_err(not_written)?;
    let set = match stage {
        Some(s) => {
            // The envelope's files on top of the stage's changes: one change set for both.
            let mut set = s.changes_with(files).map_err(not_applied)?;
            set.exclude(exclude);
            // The envelope's files were scanned above.
            let checked = set.check(ctx, &mut findings);
            findings.retain(|f| !out.findings.iter().any(|o| o.fingerprint == f.fingerprint));
            out.findings.append(&mut findings);
            checked.map_err(not_applied)?;
            set
        }
        None => envelope,
    };
    let written = set.apply(&ctx.env.workspace).map_err(|why| match stage {
        Some(_) => not_applied(why),
        None => not_written(why),
    })?;
    let listed = set.listed();
    out.output_bytes = written;
    out.workspace_files = listed
        .iter()
        .filter(|c| c.change != crate::model::Change::Deleted)
        .map(|c| c.path.clone())
        .collect();
    out.agent_changes = Some(AgentChanges {
        via: if stage.is_some() {
            "staged copy"
        } else {
            "envelope"
        }
        .to_owned(),
        stage: stage.map(|s| s.kind().to_owned()),
        files: listed,
        bytes: set.bytes(),
    });
    Ok(())
}

pub(super) fn write_json(path: &Path, v: &Value) -> std::io::Result<()> {
    std::fs::write(
        path,
        serde_json::to_vec_pretty(v).map_err(std::io::Error::other)?,
    )
}
