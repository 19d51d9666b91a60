//! Plan inputs: the `inputs:` block (checked at load time), and the values a
//! run is given (`--input NAME=VALUE`, else `PLANGATE_INPUT_<NAME>`, else the
//! default), checked before anything runs.
//!
//! Every step gets each value in its environment as `PLANGATE_INPUT_<NAME>`
//! (the name as [`env_key`] writes it); values are never substituted into a
//! command. Nothing here does I/O: the caller hands the flags and plangate's
//! environment in.

use std::collections::BTreeMap;

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diag::did_you_mean;
use super::node::{Node, NodeValue, Pos};
use crate::format::names::env_key;
use crate::model::Diagnostic;

/// Input names: like step ids.
pub(crate) const INPUT_NAME_PATTERN: &str = super::ID_PATTERN;
/// The prefix of the variables that carry inputs, in plangate's environment and every step's.
pub(crate) const ENV_PREFIX: &str = "PLANGATE_INPUT_";

/// An input's type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum InputType {
    /// Any text (the default).
    #[default]
    String,
    /// A finite number, written as JSON writes numbers (`3`, `-1.5`, `2e3`).
    Number,
    /// `true` or `false`, nothing else.
    Boolean,
    /// One of `options`.
    Choice,
}

impl InputType {
    /// The name as written.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Boolean => "boolean",
            InputType::Choice => "choice",
        }
    }
}

/// A scalar as written in YAML: an input's `default`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Scalar {
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Num(serde_json::Number),
    /// Text.
    Str(String),
}

/// Which text of the CI event an input takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EventField {
    /// The pull request's, issue's or merge request's title.
    Title,
    /// Its body (description).
    Body,
    /// The comment (or review) that triggered the run.
    Comment,
}

impl EventField {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventField::Title => "title",
            EventField::Body => "body",
            EventField::Comment => "comment",
        }
    }
}

/// One input of the `inputs:` block.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InputDef {
    /// `string` (default), `number`, `boolean` or `choice`.
    #[serde(default, rename = "type")]
    pub kind: InputType,
    /// What the input is for.
    #[serde(default)]
    #[expect(dead_code, reason = "documentation for people; kept so the key parses")]
    pub description: Option<String>,
    /// The value when none is given (of the input's type; for `choice`, one of `options`).
    #[serde(default)]
    pub default: Option<Scalar>,
    /// The run is refused (exit 2) when no value is given and there is no default.
    #[serde(default)]
    pub required: bool,
    /// `choice`: the allowed values.
    #[serde(default)]
    pub options: Vec<String>,
    /// Text from someone the plan does not trust (a PR, issue or MR title, body or comment):
    /// sanitised before any step or prompt sees it (invisible and bidirectional Unicode, control
    /// characters and HTML comments removed, @-mentions neutralised, cut at `max_bytes`).
    #[serde(default)]
    pub untrusted: bool,
    /// Take the value from the CI event (`title`, `body` or `comment`), never from a flag or
    /// variable; untrusted, and passed only when its author meets `authors`.
    #[serde(default)]
    pub from_event: Option<EventField>,
    /// `from_event`: whose text is passed at all. Default `{github: collaborator, gitlab: developer}`.
    #[serde(default)]
    pub authors: Option<crate::guard::untrusted::Minimum>,
    /// Untrusted text: most bytes kept (cut at a character, with a marker). Default 32768.
    #[serde(default)]
    #[schemars(range(min = 64))]
    pub max_bytes: Option<usize>,
}

/// A checked input value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum InputValue {
    /// `string` and `choice` inputs.
    Str(String),
    /// `number` inputs.
    Num(serde_json::Number),
    /// `boolean` inputs.
    Bool(bool),
}

impl InputValue {
    /// The value as its variable carries it (numbers as JSON writes them).
    pub(crate) fn text(&self) -> String {
        match self {
            InputValue::Str(s) => s.clone(),
            InputValue::Num(n) => n.to_string(),
            InputValue::Bool(b) => b.to_string(),
        }
    }

    /// The value as JSON (the report's `inputs`).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            InputValue::Str(s) => serde_json::Value::from(s.clone()),
            InputValue::Num(n) => serde_json::Value::Number(n.clone()),
            InputValue::Bool(b) => serde_json::Value::Bool(*b),
        }
    }
}

/// The variable that carries input `name` (`PLANGATE_INPUT_<NAME>`).
pub(crate) fn env_name(name: &str) -> String {
    format!("{ENV_PREFIX}{}", env_key(name))
}

/// Load-time checks of the `inputs:` block, at their positions: names, two
/// names with one variable, `options` only and always for `choice`, defaults
/// of the input's type.
pub(super) fn check(file: &str, root: &Node, out: &mut Vec<Diagnostic>) {
    let Some(NodeValue::Map(pairs)) = root.child("inputs").map(|n| &n.value) else {
        return;
    };
    let re = Regex::new(INPUT_NAME_PATTERN).ok();
    let mut vars: BTreeMap<String, (&str, Pos)> = BTreeMap::new();
    for (k, def) in pairs {
        let name = k.name.as_str();
        if re.as_ref().is_some_and(|re| !re.is_match(name)) {
            out.push(
                Diagnostic::at(file, k.pos, format!("invalid input name `{name}`")).help(
                    "input names start with a letter or `_` and use only letters, digits, `_` and `-` (64 characters at most)",
                ),
            );
            continue;
        }
        let var = env_name(name);
        if let Some((other, first)) = vars.get(&var) {
            out.push(
                Diagnostic::at(
                    file,
                    k.pos,
                    format!("inputs `{other}` and `{name}` would both be `{var}`"),
                )
                .help(format!(
                    "`{other}` is at line {}; rename one (the variable is the name upper-cased, with `_` for every other character)",
                    first.line
                )),
            );
        } else {
            vars.insert(var, (name, k.pos));
        }
        check_one(file, name, def, out);
    }
}

fn check_one(file: &str, name: &str, def: &Node, out: &mut Vec<Diagnostic>) {
    let kind = match def.child("type").map(|n| &n.value) {
        Some(NodeValue::Str(s)) => match s.as_str() {
            "number" => InputType::Number,
            "boolean" => InputType::Boolean,
            "choice" => InputType::Choice,
            "string" => InputType::String,
            _ => return, // the schema reports it
        },
        _ => InputType::String,
    };
    let options: Vec<(String, Pos)> = match def.child("options").map(|n| &n.value) {
        Some(NodeValue::Seq(items)) => items
            .iter()
            .filter_map(|n| match &n.value {
                NodeValue::Str(s) => Some((s.clone(), n.pos)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    match (kind, def.child("options")) {
        (InputType::Choice, None) => out.push(
            Diagnostic::at(
                file,
                def.pos,
                format!("input `{name}` is a `choice` without `options`"),
            )
            .help("list the allowed values under `options:`"),
        ),
        (InputType::Choice, Some(_)) => {
            for (i, (v, pos)) in options.iter().enumerate() {
                if options[..i].iter().any(|(w, _)| w == v) {
                    out.push(
                        Diagnostic::at(
                            file,
                            *pos,
                            format!("input `{name}` lists option `{v}` twice"),
                        )
                        .help("list each option once"),
                    );
                }
            }
        }
        (_, Some(n)) => out.push(
            Diagnostic::at(
                file,
                n.pos,
                format!(
                    "input `{name}` has `options` but is of type `{}`",
                    kind.as_str()
                ),
            )
            .help("`options` belongs to `type: choice`; remove it or make the input a choice"),
        ),
        (_, None) => {}
    }
    let Some(d) = def.child("default") else {
        return;
    };
    let ok = match (&d.value, kind) {
        (NodeValue::Str(_), InputType::String) => true,
        (NodeValue::Str(s), InputType::Choice) => options.iter().any(|(o, _)| o == s),
        (NodeValue::Bool(_), InputType::Boolean) => true,
        (NodeValue::Int(_) | NodeValue::UInt(_) | NodeValue::Float(_), InputType::Number) => true,
        _ => false,
    };
    if !ok {
        let help = match kind {
            InputType::Choice => format!(
                "the default of a choice is one of its options: {}",
                options
                    .iter()
                    .map(|(o, _)| format!("`{o}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            InputType::String => "quote it to make it text: default: '1'".to_owned(),
            other => format!("give a {} default", other.as_str()),
        };
        out.push(
            Diagnostic::at(
                file,
                d.pos,
                format!(
                    "the default of input `{name}` is not a valid {}",
                    kind.as_str()
                ),
            )
            .help(help),
        );
    }
}

/// Where a value came from, for messages.
#[derive(Debug, Clone, Copy)]
enum Source {
    Flag,
    Env,
    Default,
}

/// The values of a run: `--input NAME=VALUE` (`given`, as written), else
/// `PLANGATE_INPUT_<NAME>` in `env` (plangate's environment), else the
/// default. Every problem is returned at once: a malformed or repeated flag,
/// an unknown input (flag or variable), a missing required input, a value
/// not of the input's type or not among its options.
pub(crate) fn resolve(
    inputs: &BTreeMap<String, InputDef>,
    given: &[String],
    env: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, InputValue>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let known = || inputs.keys().map(String::as_str);
    let mut flags: BTreeMap<&str, &str> = BTreeMap::new();
    for g in given {
        let Some((name, value)) = g.split_once('=') else {
            diags.push(usage(
                format!("--input `{g}` is not NAME=VALUE"),
                "write --input NAME=VALUE (the value may be empty: --input NAME=)",
            ));
            continue;
        };
        if !inputs.contains_key(name) {
            diags.push(unknown(format!("--input names `{name}`"), name, known()));
        } else if flags.insert(name, value).is_some() {
            diags.push(usage(
                format!("--input `{name}` is given twice"),
                "give each input once",
            ));
        }
    }
    let by_var: BTreeMap<String, &str> = inputs.keys().map(|n| (env_name(n), n.as_str())).collect();
    let mut vars: BTreeMap<&str, &str> = BTreeMap::new();
    for (k, v) in env {
        if !k.starts_with(ENV_PREFIX) {
            continue;
        }
        match by_var.get(k) {
            Some(name) => {
                vars.insert(name, v.as_str());
            }
            None => diags.push(unknown(
                format!("the environment variable `{k}` names no input"),
                k.trim_start_matches(ENV_PREFIX),
                known(),
            )),
        }
    }
    let mut values = BTreeMap::new();
    for (name, def) in inputs {
        if def.from_event.is_some() {
            if flags.contains_key(name.as_str()) || vars.contains_key(name.as_str()) {
                diags.push(usage(
                    format!("input `{name}` takes its value from the CI event (`from_event`); it cannot be given"),
                    &format!("remove --input {name} and {}", env_name(name)),
                ));
            }
            continue;
        }
        let (text, source) = match (flags.get(name.as_str()), vars.get(name.as_str())) {
            (Some(v), _) => ((*v).to_owned(), Source::Flag),
            (None, Some(v)) => ((*v).to_owned(), Source::Env),
            (None, None) => match &def.default {
                Some(d) => (scalar_text(d), Source::Default),
                None if def.required => {
                    diags.push(usage(
                        format!("input `{name}` is required and was not given"),
                        &format!(
                            "pass --input {name}=VALUE or set {} in the environment",
                            env_name(name)
                        ),
                    ));
                    continue;
                }
                None => continue,
            },
        };
        match typed(def, &text) {
            Ok(v) => {
                values.insert(name.clone(), v);
            }
            Err(why) => {
                let from = match source {
                    Source::Flag => format!("--input {name}"),
                    Source::Env => env_name(name),
                    Source::Default => "its default".to_owned(),
                };
                diags.push(usage(
                    format!("input `{name}` (from {from}): {why}"),
                    "give a value of the input's type",
                ));
            }
        }
    }
    if diags.is_empty() {
        Ok(values)
    } else {
        Err(diags)
    }
}

fn scalar_text(s: &Scalar) -> String {
    match s {
        Scalar::Bool(b) => b.to_string(),
        Scalar::Num(n) => n.to_string(),
        Scalar::Str(s) => s.clone(),
    }
}

/// `text` as a value of `def`'s type.
fn typed(def: &InputDef, text: &str) -> Result<InputValue, String> {
    match def.kind {
        InputType::String => Ok(InputValue::Str(text.to_owned())),
        InputType::Boolean => match text {
            "true" => Ok(InputValue::Bool(true)),
            "false" => Ok(InputValue::Bool(false)),
            other => Err(format!("expected `true` or `false`, got `{other}`")),
        },
        InputType::Number => match text.trim().parse::<serde_json::Number>() {
            Ok(n) if n.as_f64().is_some_and(f64::is_finite) => Ok(InputValue::Num(n)),
            _ => Err(format!("expected a number, got `{text}`")),
        },
        InputType::Choice => {
            if def.options.iter().any(|o| o == text) {
                Ok(InputValue::Str(text.to_owned()))
            } else {
                Err(format!(
                    "`{text}` is not one of its options: {}",
                    def.options
                        .iter()
                        .map(|o| format!("`{o}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
    }
}

fn usage(message: String, help: &str) -> Diagnostic {
    Diagnostic {
        file: "<command line>".into(),
        line: 0,
        column: 0,
        message,
        help: Some(help.into()),
    }
}

fn unknown<'a>(message: String, name: &str, known: impl Iterator<Item = &'a str>) -> Diagnostic {
    let known: Vec<&str> = known.collect();
    let help = match did_you_mean(name, known.iter().copied()) {
        Some(s) => format!(
            "did you mean `{s}`? the plan's inputs: {}",
            known.join(", ")
        ),
        None if known.is_empty() => "the plan declares no `inputs:`".to_owned(),
        None => format!("the plan's inputs: {}", known.join(", ")),
    };
    usage(
        format!("{message}, which is not an input of the plan"),
        &help,
    )
}

/// sha256 over the values (name and JSON value, sorted): the report's
/// `inputs_sha256`, which `--resume` compares.
pub(crate) fn digest(values: &BTreeMap<String, InputValue>) -> String {
    use sha2::{Digest, Sha256};
    let v: BTreeMap<&String, serde_json::Value> =
        values.iter().map(|(k, v)| (k, v.to_json())).collect();
    let text = serde_json::to_string(&v).unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(kind: InputType, default: Option<Scalar>, required: bool, options: &[&str]) -> InputDef {
        InputDef {
            kind,
            description: None::<String>,
            default,
            required,
            options: options.iter().map(|s| (*s).to_owned()).collect(),
            untrusted: false,
            from_event: None,
            authors: None,
            max_bytes: None,
        }
    }

    #[test]
    fn flags_beat_the_environment_which_beats_defaults() {
        let mut inputs = BTreeMap::new();
        inputs.insert(
            "base-ref".to_owned(),
            def(
                InputType::String,
                Some(Scalar::Str("main".into())),
                false,
                &[],
            ),
        );
        inputs.insert("n".to_owned(), def(InputType::Number, None, true, &[]));
        let env: BTreeMap<String, String> = [
            ("PLANGATE_INPUT_BASE_REF".to_owned(), "dev".to_owned()),
            ("PLANGATE_INPUT_N".to_owned(), "2".to_owned()),
        ]
        .into();
        let v = resolve(&inputs, &["n=3.5".to_owned()], &env).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(v["base-ref"], InputValue::Str("dev".into()));
        assert_eq!(v["n"].text(), "3.5");
        let v = resolve(&inputs, &["n=1".to_owned()], &BTreeMap::new())
            .unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(v["base-ref"].text(), "main");
    }

    #[test]
    fn every_bad_value_is_named() {
        let mut inputs = BTreeMap::new();
        inputs.insert("flag".to_owned(), def(InputType::Boolean, None, true, &[]));
        inputs.insert(
            "kind".to_owned(),
            def(InputType::Choice, None, false, &["a", "b"]),
        );
        let given = ["flag=yes", "kind=c", "nope=1", "junk"].map(str::to_owned);
        let env: BTreeMap<String, String> =
            [("PLANGATE_INPUT_OTHER".to_owned(), "x".to_owned())].into();
        let Err(d) = resolve(&inputs, &given, &env) else {
            panic!("accepted")
        };
        let all: Vec<String> = d.iter().map(|d| d.message.clone()).collect();
        let text = all.join("\n");
        for want in [
            "`flag`",
            "`kind`",
            "`nope`",
            "`junk`",
            "PLANGATE_INPUT_OTHER",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        let Err(d) = resolve(&inputs, &[], &BTreeMap::new()) else {
            panic!("accepted")
        };
        assert!(d[0].message.contains("input `flag` is required"), "{d:?}");
    }
}
