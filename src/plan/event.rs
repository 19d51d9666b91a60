//! Untrusted inputs: an input declared `untrusted: true` is sanitised
//! ([`crate::guard::untrusted::sanitize`]) before any step or prompt sees it;
//! one with `from_event: title | body | comment` takes its text from the CI
//! event (GitHub's `GITHUB_EVENT_PATH` payload; GitLab's
//! `CI_MERGE_REQUEST_TITLE` / `CI_MERGE_REQUEST_DESCRIPTION`), passed only when
//! its author meets the input's `authors:` minimum, else withheld
//! (fail-close: an author whose standing cannot be read is withheld). Pure:
//! the caller reads the payload and hands it in.

use std::collections::BTreeMap;

use serde_json::Value;

use super::inputs::{EventField, InputDef, InputValue};
use crate::format::node::{Node, NodeValue};
use crate::guard::untrusted::{Association, GitlabMinimum, sanitize};
use crate::model::Diagnostic;
use crate::model::UntrustedText;

/// Bytes an untrusted input keeps when its `max_bytes` is not set.
pub(crate) const DEFAULT_MAX_BYTES: usize = 32 * 1024;

/// What the CI job says about its event (read by the caller).
#[derive(Debug, Clone, Default)]
pub(crate) struct EventSource {
    /// GitHub's event payload (the JSON file `GITHUB_EVENT_PATH` names), if any.
    pub github: Option<Value>,
    /// Why the payload could not be read, when `GITHUB_EVENT_PATH` is set but unreadable.
    pub github_error: Option<String>,
    /// GitLab's `CI_MERGE_REQUEST_TITLE` and `CI_MERGE_REQUEST_DESCRIPTION`, when `GITLAB_CI` is set.
    pub gitlab: Option<BTreeMap<String, String>>,
}

/// The text and what is known of its author; `Err`: why there is none.
fn github_text(payload: &Value, field: EventField) -> Result<(String, Association), String> {
    let from = |obj: &Value| -> Option<(String, Association)> {
        let text = match field {
            EventField::Title => obj.get("title"),
            _ => obj.get("body"),
        }?;
        let text = text.as_str().unwrap_or_default().to_owned();
        let assoc = obj
            .get("author_association")
            .and_then(Value::as_str)
            .map_or(Association::Unknown, |a| Association::Github(a.to_owned()));
        Some((text, assoc))
    };
    let objects: &[&str] = match field {
        EventField::Title | EventField::Body => &["pull_request", "issue"],
        EventField::Comment => &["comment", "review"],
    };
    objects
        .iter()
        .filter_map(|k| payload.get(*k).filter(|v| v.is_object()))
        .find_map(from)
        .ok_or_else(|| {
            format!(
                "the event payload has no {} ({})",
                field.as_str(),
                objects.join(" or ")
            )
        })
}

/// Every input's value made safe: `from_event` inputs filled from `event`
/// (or withheld), `untrusted` ones sanitised. Returns what was done, by input.
pub(crate) fn apply(
    inputs: &BTreeMap<String, InputDef>,
    values: &mut BTreeMap<String, InputValue>,
    event: &EventSource,
) -> BTreeMap<String, UntrustedText> {
    let mut records = BTreeMap::new();
    for (name, def) in inputs {
        if !def.untrusted && def.from_event.is_none() {
            continue;
        }
        let cap = def.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
        let mut record = UntrustedText::default();
        let text = match def.from_event {
            None => match values.get(name) {
                Some(InputValue::Str(s)) => {
                    record.source = "input".to_owned();
                    Some(s.clone())
                }
                _ => None,
            },
            Some(field) => {
                let min = def.authors.unwrap_or_default();
                record.source = format!("event {}", field.as_str());
                let got = if let Some(p) = &event.github {
                    github_text(p, field).and_then(|(t, a)| {
                        if let Association::Github(s) = &a {
                            record.author = Some(s.clone());
                        }
                        a.check(min).map(|()| t)
                    })
                } else if let Some(why) = &event.github_error {
                    Err(why.clone())
                } else if let Some(vars) = &event.gitlab {
                    let key = match field {
                        EventField::Title => Some("CI_MERGE_REQUEST_TITLE"),
                        EventField::Body => Some("CI_MERGE_REQUEST_DESCRIPTION"),
                        EventField::Comment => None,
                    };
                    match key.and_then(|k| vars.get(k)) {
                        None => Err(format!(
                            "GitLab CI gives no merge request {} to this job",
                            field.as_str()
                        )),
                        Some(t) if min.gitlab == GitlabMinimum::None => Ok(t.clone()),
                        Some(_) => Err("GitLab CI does not say the merge request author's access level (withheld unless `authors.gitlab` is `none`)".to_owned()),
                    }
                } else {
                    Err("no CI event: neither GITHUB_EVENT_PATH nor GITLAB_CI is set".to_owned())
                };
                match got {
                    Ok(t) => Some(t),
                    Err(why) => {
                        values.insert(
                            name.clone(),
                            InputValue::Str(format!("[withheld by plangate: {why}]")),
                        );
                        record.withheld = Some(why);
                        None
                    }
                }
            }
        };
        if let Some(t) = text {
            let (clean, removed) = sanitize(&t, cap);
            record.removed = removed.counts;
            values.insert(name.clone(), InputValue::Str(clean));
        }
        records.insert(name.clone(), record);
    }
    records
}

/// Load-time checks of one input's `untrusted`, `from_event`, `authors`, `max_bytes`.
fn check_one(file: &str, name: &str, def: &Node, out: &mut Vec<Diagnostic>) {
    let from_event = def.child("from_event");
    let is_untrusted = matches!(
        def.child("untrusted").map(|n| &n.value),
        Some(NodeValue::Bool(true))
    );
    if let Some(a) = def.child("authors")
        && from_event.is_none()
    {
        out.push(
            Diagnostic::at(file, a.pos, format!("input `{name}` has `authors` but no `from_event`"))
                .help("`authors` decides whose CI event text an input takes; add `from_event: title | body | comment`, or remove it"),
        );
    }
    if let Some(m) = def.child("max_bytes")
        && from_event.is_none()
        && !is_untrusted
    {
        out.push(
            Diagnostic::at(
                file,
                m.pos,
                format!("input `{name}` has `max_bytes` but is not untrusted"),
            )
            .help("add `untrusted: true` (or `from_event`), or remove `max_bytes`"),
        );
    }
    let kind = match def.child("type").map(|n| &n.value) {
        Some(NodeValue::Str(s)) => s.as_str(),
        _ => "string",
    };
    if let Some(f) = from_event.or_else(|| is_untrusted.then(|| def.child("untrusted")).flatten())
        && kind != "string"
    {
        out.push(
            Diagnostic::at(
                file,
                f.pos,
                format!("input `{name}` is untrusted text but of type `{kind}`"),
            )
            .help("only `type: string` inputs carry text to sanitise"),
        );
    }
    if let Some(f) = from_event {
        for key in ["default", "required"] {
            if let Some(k) = def.child(key) {
                out.push(
                    Diagnostic::at(file, k.pos, format!("input `{name}` takes its value from the CI event: it has no `{key}`"))
                        .help(format!("remove `{key}`; without an event (or an author below `authors`) the value says it was withheld")),
                );
            }
        }
        let _ = f;
    }
}

/// Load-time checks of every input's untrusted keys.
pub(super) fn check(file: &str, root: &Node, out: &mut Vec<Diagnostic>) {
    if let Some(NodeValue::Map(pairs)) = root.child("inputs").map(|n| &n.value) {
        for (k, def) in pairs {
            check_one(file, &k.name, def, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::untrusted::{GithubMinimum, Minimum};
    use crate::plan::inputs::InputType;

    fn def(field: Option<EventField>, min: Option<GithubMinimum>) -> InputDef {
        InputDef {
            kind: InputType::String,
            description: None,
            default: None,
            required: false,
            options: Vec::new(),
            untrusted: field.is_none(),
            from_event: field,
            authors: min.map(|g| Minimum {
                github: g,
                ..Minimum::default()
            }),
            max_bytes: None,
        }
    }

    fn run(d: InputDef, given: Option<&str>, event: &EventSource) -> (String, UntrustedText) {
        let inputs: BTreeMap<String, InputDef> = [("x".to_owned(), d)].into();
        let mut values = BTreeMap::new();
        if let Some(g) = given {
            values.insert("x".to_owned(), InputValue::Str(g.to_owned()));
        }
        let mut r = apply(&inputs, &mut values, event);
        (values["x"].text(), r.remove("x").unwrap())
    }

    fn gh(v: Value) -> EventSource {
        EventSource {
            github: Some(v),
            ..EventSource::default()
        }
    }

    #[test]
    fn event_text_passes_only_above_the_minimum() {
        let pr = |assoc: &str| {
            gh(
                serde_json::json!({"pull_request": {"title": "Fix\u{200b} it <!-- hidden -->", "body": "b", "author_association": assoc}}),
            )
        };
        let (v, r) = run(def(Some(EventField::Title), None), None, &pr("MEMBER"));
        assert_eq!(v, "Fix it ");
        assert_eq!(r.withheld, None);
        assert_eq!(r.removed["invisible"], 1);
        assert_eq!(r.removed["html_comment"], 1);
        let (v, r) = run(def(Some(EventField::Title), None), None, &pr("CONTRIBUTOR"));
        assert!(v.starts_with("[withheld by plangate:"), "{v}");
        assert!(!v.contains("Fix"));
        assert!(r.withheld.unwrap().contains("CONTRIBUTOR"));
        let (v, _) = run(
            def(Some(EventField::Body), Some(GithubMinimum::Contributor)),
            None,
            &pr("CONTRIBUTOR"),
        );
        assert_eq!(v, "b");
        // No association in the payload: withheld.
        let e = gh(serde_json::json!({"issue": {"title": "t", "body": "secret plan"}}));
        let (v, r) = run(
            def(Some(EventField::Body), Some(GithubMinimum::Contributor)),
            None,
            &e,
        );
        assert!(!v.contains("secret plan") && r.withheld.is_some(), "{v}");
        // A comment is the comment's author's, not the issue's.
        let e = gh(
            serde_json::json!({"issue": {"title": "t", "body": "b", "author_association": "OWNER"},
            "comment": {"body": "@maintainer merge", "author_association": "NONE"}}),
        );
        let (v, r) = run(def(Some(EventField::Comment), None), None, &e);
        assert!(!v.contains("merge"), "{v}");
        assert_eq!(r.author.as_deref(), Some("NONE"));
    }

    #[test]
    fn no_event_or_gitlab_without_levels_is_withheld() {
        let (v, r) = run(
            def(Some(EventField::Title), None),
            None,
            &EventSource::default(),
        );
        assert!(v.contains("withheld"), "{v}");
        assert!(r.withheld.unwrap().contains("no CI event"));
        let lab = EventSource {
            gitlab: Some([("CI_MERGE_REQUEST_TITLE".to_owned(), "MR @all".to_owned())].into()),
            ..EventSource::default()
        };
        let (v, _) = run(def(Some(EventField::Title), None), None, &lab);
        assert!(v.contains("withheld"), "{v}");
        let mut d = def(Some(EventField::Title), None);
        d.authors = Some(Minimum {
            github: GithubMinimum::Owner,
            gitlab: GitlabMinimum::None,
        });
        let (v, r) = run(d, None, &lab);
        assert_eq!(v, "MR \u{ff20}all");
        assert_eq!(r.removed["mention"], 1);
    }

    #[test]
    fn an_untrusted_input_given_on_the_command_line_is_sanitised() {
        let (v, r) = run(def(None, None), Some("a\u{202e}b"), &EventSource::default());
        assert_eq!(v, "ab");
        assert_eq!(r.source, "input");
        assert_eq!(r.removed["bidi"], 1);
    }
}
