//! What happens to an agent's answer: the guard judges it ([`judge`]); an
//! accepted value is stored as `parsed.*`, an accepted envelope's files are
//! written into the workspace (never through a symlink, never outside it),
//! and the step's `expected_output` is applied ([`accept`]).

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::params::{AgentAction, OutputKind};
use super::provider::{Answer, one_line};
use crate::guard::envelope::{self, Status, Tier};
use crate::guard::{code, json};
use crate::model::{Category, Rejection};
use crate::model::{StepOutcome, StepStatus};
use crate::tools::StepContext;
use crate::tools::step::Step;

/// Why an accepted envelope's files were not written.
#[derive(Debug, thiserror::Error)]
pub(super) enum WriteError {
    /// Absolute, or with `.`/`..` parts.
    #[error("unsafe path `{0}`")]
    Unsafe(String),
    /// A component is a symlink.
    #[error("`{0}` goes through the symlink `{link}`", link = .1.display())]
    Symlink(String, PathBuf),
    /// A parent is not a directory.
    #[error("`{0}`: `{parent}` is not a directory", parent = .1.display())]
    NotADirectory(String, PathBuf),
    /// The target is a directory.
    #[error("`{0}` is a directory")]
    IsADirectory(String),
    /// No parent directory.
    #[error("no parent directory")]
    NoParent,
    /// Creating a directory failed.
    #[error("cannot create `{dir}`: {1}", dir = .0.display())]
    CreateDir(PathBuf, #[source] std::io::Error),
    /// Creating the temporary file failed.
    #[error("cannot write in `{dir}`: {1}", dir = .0.display())]
    WriteIn(PathBuf, #[source] std::io::Error),
    /// Writing or renaming the file failed.
    #[error("cannot write `{path}`: {1}", path = .0.display())]
    Write(PathBuf, #[source] std::io::Error),
}

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

/// Store the accepted value, write envelope files, set the outcome.
pub(super) fn accept(
    a: &AgentAction,
    step: &Step,
    ctx: &StepContext,
    acc: Accepted,
    mut out: StepOutcome,
) -> StepOutcome {
    let (rel, text, bytes) = match &acc.kind {
        AcceptedKind::Code(c) => (
            format!("{}/parsed.txt", ctx.artifacts_rel),
            c.clone(),
            c.clone().into_bytes(),
        ),
        AcceptedKind::Envelope(e) => {
            let body = serde_json::to_string_pretty(e).unwrap_or_default();
            (
                format!("{}/parsed.json", ctx.artifacts_rel),
                body.clone(),
                body.into_bytes(),
            )
        }
        AcceptedKind::Json(v) => {
            let body = serde_json::to_string_pretty(v).unwrap_or_default();
            (
                format!("{}/parsed.json", ctx.artifacts_rel),
                body.clone(),
                body.into_bytes(),
            )
        }
    };
    let path = ctx.out_dir.join(&rel);
    if let Err(e) = std::fs::write(&path, &bytes) {
        out.error = Some(format!("cannot store the accepted answer: {e}"));
        return out;
    }
    out.artifacts.push(rel);
    out.result_file = Some(path);
    if let AcceptedKind::Envelope(e) = &acc.kind {
        if e.status == Status::Fail {
            out.status = StepStatus::Failed;
            out.error = Some(format!("the agent reported FAIL: {}", one_line(&e.summary)));
            return out;
        }
        if a.write_artifacts {
            if ctx.fail_on_secrets
                && let Some(why) = holds_secret(e)
            {
                out.status = StepStatus::Failed;
                out.error = Some(format!(
                    "the envelope was accepted but its files were not written: {why} (fail_on_secrets)"
                ));
                return out;
            }
            match write_envelope_files(&ctx.env.workspace, e) {
                Ok(n) => {
                    out.output_bytes = n;
                    out.workspace_files = e.files().iter().map(|a| a.path.clone()).collect();
                }
                Err(why) => {
                    out.status = StepStatus::Failed;
                    out.error = Some(format!(
                        "the envelope was accepted but its files were not written: {why}"
                    ));
                    return out;
                }
            }
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
    out.status = StepStatus::Success;
    out.error = None;
    out
}

/// The first envelope file holding a secret, scanned as the redaction layer
/// scans what plangate writes (rules, values given or found, the text as
/// shown): why it must not be written. Values found are remembered, so they
/// are redacted wherever they show up (the answer, `parsed.json`).
fn holds_secret(e: &envelope::Envelope) -> Option<String> {
    e.files().iter().find_map(|art| {
        let (cleaned, found) = crate::redact::scrub(art.content.as_bytes(), true);
        match (found.first(), cleaned) {
            (Some(f), _) => Some(format!("`{}` holds a secret ({})", art.path, f.rule)),
            (None, std::borrow::Cow::Owned(_)) => {
                Some(format!("`{}` holds a secret value", art.path))
            }
            (None, std::borrow::Cow::Borrowed(_)) => None,
        }
    })
}

/// Write an accepted envelope's files into the workspace: every component must
/// be a real directory inside it (no symlinks), each file is replaced atomically.
/// All paths are checked before anything is written.
fn write_envelope_files(workspace: &Path, e: &envelope::Envelope) -> Result<u64, WriteError> {
    let mut targets = Vec::new();
    for art in e.files() {
        let rel = Path::new(&art.path);
        if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(WriteError::Unsafe(art.path.clone()));
        }
        let mut cur = workspace.to_path_buf();
        let parts: Vec<_> = rel.components().collect();
        for (i, c) in parts.iter().enumerate() {
            cur.push(c);
            match std::fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(WriteError::Symlink(art.path.clone(), cur));
                }
                Ok(m) if i + 1 < parts.len() && !m.is_dir() => {
                    return Err(WriteError::NotADirectory(art.path.clone(), cur));
                }
                Ok(m) if i + 1 == parts.len() && m.is_dir() => {
                    return Err(WriteError::IsADirectory(art.path.clone()));
                }
                _ => {}
            }
        }
        targets.push((cur, art.content.as_bytes()));
    }
    let mut total = 0u64;
    for (path, content) in targets {
        let dir = path.parent().ok_or(WriteError::NoParent)?;
        std::fs::create_dir_all(dir).map_err(|e| WriteError::CreateDir(dir.to_owned(), e))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".plangate-")
            .tempfile_in(dir)
            .map_err(|e| WriteError::WriteIn(dir.to_owned(), e))?;
        std::io::Write::write_all(&mut tmp, content)
            .map_err(|e| WriteError::Write(path.clone(), e))?;
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = tmp
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644));
        }
        tmp.persist(&path)
            .map_err(|e| WriteError::Write(path.clone(), e.error))?;
        total += content.len() as u64;
    }
    Ok(total)
}

pub(super) fn write_json(path: &Path, v: &Value) -> std::io::Result<()> {
    std::fs::write(
        path,
        serde_json::to_vec_pretty(v).map_err(std::io::Error::other)?,
    )
}
