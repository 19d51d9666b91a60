//! The prompt an agent step sends (its text, earlier steps' output, workspace
//! files, each capped) and the usage an answer is charged.

use std::path::{Path, PathBuf};

use crate::tools::WorkspacePathError;

use crate::model::Usage;
use crate::tools::StepContext;
use crate::tools::params::agent::{AgentAction, PromptSource};

/// Most bytes of a step's output appended to a prompt as context.
const MAX_CONTEXT_BYTES: u64 = 256 * 1024;

/// Why a step's prompt could not be built.
#[derive(Debug, thiserror::Error)]
pub(super) enum PromptError {
    /// `prompt_file` cannot be used.
    #[error("prompt_file {0}")]
    PromptFile(#[source] WorkspacePathError),
    /// `prompt_file` cannot be read.
    #[error("cannot read prompt_file `{}`: {source}", .rel.display())]
    ReadPromptFile {
        /// As written.
        rel: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A template of the prompt has no value.
    #[error("prompt template: {0}")]
    Template(String),
    /// A context step left no output.
    #[error("context step `{0}` left no output to include")]
    NoContext(String),
    /// A context file cannot be used.
    #[error("context file {0}")]
    ContextFile(#[source] WorkspacePathError),
    /// The permission rules deny reading a file.
    #[error("`{}`: {why}", .rel.display())]
    Denied {
        /// As written.
        rel: PathBuf,
        /// The rules' reason.
        why: String,
    },
    /// A file cannot be read.
    #[error("cannot read `{}`: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What the sanitiser did to each untrusted context file, by path.
pub(super) type UntrustedContext = std::collections::BTreeMap<String, crate::model::UntrustedText>;

/// The prompt text with its context (earlier steps' output, workspace files;
/// those marked untrusted sanitised, what was removed returned by path).
/// With `dry` (a dry run), what earlier steps have not produced yet is a placeholder.
pub(super) fn build_prompt(
    a: &AgentAction,
    ctx: &StepContext,
    dry: bool,
) -> Result<(String, UntrustedContext), PromptError> {
    let mut untrusted = UntrustedContext::new();
    let mut prompt = match &a.prompt {
        PromptSource::Inline(t) => render(t, ctx, dry)?,
        PromptSource::File(rel) => {
            let path = crate::tools::workspace_file(&ctx.env.workspace, rel)
                .map_err(PromptError::PromptFile)?;
            may_read(ctx, rel)?;
            crate::regular::read_to_string(&path).map_err(|source| PromptError::ReadPromptFile {
                rel: rel.clone(),
                source,
            })?
        }
    };
    for &i in &a.context_steps {
        let id = ctx.step_ids.get(i).cloned().unwrap_or_default();
        let dir = ctx.out_dir.join("artifacts").join(&id);
        let found = ["parsed.txt", "parsed.json", "stdout.txt"]
            .iter()
            .map(|f| (*f, dir.join(f)))
            .find(|(_, p)| p.is_file());
        let (label, text) = match found {
            Some((label, file)) => (label, read_capped(&file, MAX_CONTEXT_BYTES)?),
            None if dry => (
                "placeholder",
                format!("<the output of step `{id}` goes here once it has run>"),
            ),
            None => return Err(PromptError::NoContext(id.clone())),
        };
        prompt.push_str(&format!("\n\n--- output of step `{id}` ({label}) ---\n{text}\n--- end of output of step `{id}` ---"));
    }
    for rel in &a.context_files {
        let path = crate::tools::workspace_file(&ctx.env.workspace, rel)
            .map_err(PromptError::ContextFile)?;
        may_read(ctx, rel)?;
        let mut text = read_capped(&path, MAX_CONTEXT_BYTES)?;
        let name = rel.display();
        if let Some(&cap) = a.untrusted_files.get(rel) {
            let (clean, removed) = crate::guard::untrusted::sanitize(&text, cap);
            text = clean;
            untrusted.insert(
                name.to_string(),
                crate::model::UntrustedText {
                    source: "context file".to_owned(),
                    removed: removed.counts,
                    ..crate::model::UntrustedText::default()
                },
            );
        }
        prompt.push_str(&format!(
            "\n\n--- file `{name}` ---\n{text}\n--- end of file `{name}` ---"
        ));
    }
    if let Some(section) = &a.requests_prompt {
        prompt.push_str("\n\n");
        prompt.push_str(section);
    }
    Ok((prompt, untrusted))
}

/// The inline prompt with its `${{ }}` templates rendered (checked at load
/// time; an input given no value renders empty, an output the dependency did
/// not set is an error). A `prompt_file` is sent as it is.
fn render(text: &str, ctx: &StepContext, dry: bool) -> Result<String, PromptError> {
    use crate::format::expr::Ref;
    crate::format::template::render(text, &|r| match ctx.template_values.get(&r.to_string()) {
        Some(v) => Ok(v.clone()),
        None if dry && matches!(r, Ref::Output(..)) => {
            Ok(format!("<{r}: known once the step has run>"))
        }
        None => match r {
            Ref::Input(_) => Ok(String::new()),
            Ref::Output(step, name) => Err(format!(
                "step `{step}` set no output `{name}` (`${{{{ {r} }}}}`)"
            )),
            _ => Err(format!("`{r}` has no value")),
        },
    })
    .map_err(PromptError::Template)
}

/// The permission rules must let the step read `rel`, as written and where it resolves.
fn may_read(ctx: &StepContext, rel: &Path) -> Result<(), PromptError> {
    ctx.may(&ctx.env.workspace.join(rel), crate::model::Level::Read)
        .map_err(|why| PromptError::Denied {
            rel: rel.to_path_buf(),
            why,
        })
}

fn read_capped(path: &Path, cap: u64) -> Result<String, PromptError> {
    use std::io::Read;
    let read = |source| PromptError::Read {
        path: path.to_path_buf(),
        source,
    };
    let f = crate::regular::open(path).map_err(read)?;
    let mut buf = Vec::new();
    f.take(cap + 1).read_to_end(&mut buf).map_err(read)?;
    let cut = buf.len() as u64 > cap;
    buf.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    if cut {
        // Whole lines only: a secret cut in half would no longer be recognised.
        let keep = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
        buf.truncate(keep);
    }
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if cut {
        text.push_str(&format!("\n[... cut at {cap} bytes ...]"));
    }
    Ok(text)
}

/// Roughly four characters a token, marked as an estimate.
pub(super) fn estimate(prompt: &str, answer: &str) -> Usage {
    let t = |s: &str| (s.chars().count() as u64).div_ceil(4);
    Usage {
        input_tokens: t(prompt),
        output_tokens: t(answer),
        cost_usd: 0.0,
        estimated: true,
        ..Usage::default()
    }
}

/// A usage without a cost figure priced with the agent's `price`, else the
/// built-in price of its `model` (cached input and cache writes at their own
/// rates); unpriced otherwise (the load checks refuse that under a cost budget).
pub(super) fn priced(mut u: Usage, a: &AgentAction) -> Usage {
    // A reported cost that is not a number of dollars ≥ 0 counts for
    // nothing: a negative one would take from what other steps spent, a
    // NaN would never be over a budget. The tokens are priced instead.
    if !(u.cost_usd.is_finite() && u.cost_usd >= 0.0) {
        u.cost_usd = 0.0;
    }
    u.reported_by_cli_usd = u.reported_by_cli_usd.filter(|c| c.is_finite() && *c >= 0.0);
    let rates = a.agent.price.map(|p| p.rates()).or_else(|| {
        a.agent
            .model
            .as_deref()
            .and_then(crate::egress::prices::lookup)
    });
    if let Some(r) = rates
        && u.cost_usd == 0.0
    {
        u.cost_usd = r.cost(&u, 0);
    }
    u
}
