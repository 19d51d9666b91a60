//! The report's `publish` rows in words: one console line each and the
//! Markdown summary's "Publish" section.

use std::fmt::Write;

use super::section::Section;
use crate::markdown::{At, code, text};
use crate::model::Report;
use crate::model::publish::PublishEntry;

/// One line: "comment from `lint`: withheld (the run found 1 secret(s); ...)".
pub(crate) fn line(e: &PublishEntry) -> String {
    let from = e
        .step
        .as_deref()
        .map_or_else(String::new, |s| format!(" from `{s}`"));
    let draft = if e.draft { " (draft)" } else { "" };
    let at = e
        .url
        .as_deref()
        .map_or_else(String::new, |u| format!(" at {u}"));
    format!(
        "{}{draft}{from}: {}{at} ({})",
        e.kind,
        e.state.as_str(),
        e.reason
    )
}

/// The "Publish" section (absent when the plan publishes nothing).
pub(super) fn section(r: &Report) -> Option<Section> {
    if r.publish.is_empty() {
        return None;
    }
    let mut s = Section::new(
        "publish",
        "### Publish\n\n| kind | step | state | reason |\n|---|---|---|---|\n".to_owned(),
    );
    for e in &r.publish {
        let mut state = e.state.as_str().to_owned();
        if let Some(u) = &e.url {
            let _ = write!(state, " {}", code(u, At::Cell));
        }
        s.rows.push(format!(
            "| {}{} | {} | {state} | {} |\n",
            e.kind,
            if e.draft { " (draft)" } else { "" },
            e.step
                .as_deref()
                .map_or_else(|| "—".to_owned(), |id| code(id, At::Cell)),
            text(&e.reason, At::Cell)
        ));
    }
    // A table ends at a blank line; without one the next section's text would be a row.
    s.table = true;
    s.tail = "\n".to_owned();
    Some(s)
}
