//! From bytes to a checked YAML tree: size cap, YAML parsing with budgets,
//! then validation against a generated JSON Schema, reporting every problem.
//!
//! No I/O here: callers read the file (see [`crate::plan::load_plan_file`]).

use serde_json::Value;
use serde_saphyr::options::DuplicateKeyPolicy;

use super::diag::did_you_mean;
use super::node::{Node, Pos};
use crate::model::Diagnostic;

/// Plans and policy files larger than this are refused before parsing.
pub(crate) const MAX_FILE_BYTES: usize = 1024 * 1024;
/// Deepest nesting accepted in a plan (a real plan needs fewer than 10 levels).
pub(crate) const MAX_DEPTH: usize = 32;
/// Most values a plan may expand to (aliases included).
pub(crate) const MAX_NODES: usize = 200_000;

/// Parse YAML text into a spanned tree, refusing oversized input, alias bombs and deep nesting.
pub(crate) fn parse_document(file: &str, text: &str) -> Result<Node, Diagnostic> {
    if text.len() > MAX_FILE_BYTES {
        return Err(Diagnostic::at(
            file,
            Pos::default(),
            format!(
                "file is {} bytes, more than the {} bytes a plan may have",
                text.len(),
                MAX_FILE_BYTES
            ),
        )
        .help("split the plan, or move large data into files the steps read"));
    }
    if text.trim().is_empty() {
        return Err(Diagnostic::at(file, Pos::default(), "file is empty")
            .help("a plan starts with `version: 1`, an `id` and a list of `steps`"));
    }
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.max_aliases = 1_000;
    budget.max_anchors = 1_000;
    budget.max_nodes = MAX_NODES;
    budget.max_documents = 1;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = DuplicateKeyPolicy::Error;
    // YAML 1.2 booleans only: `on`, `no`, `y` stay strings (`on: push`, `NO: 0`, `id: n`).
    options.strict_booleans = true;
    serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|e| yaml_error(file, &e))
}

fn yaml_error(file: &str, e: &serde_saphyr::Error) -> Diagnostic {
    let pos = e
        .location()
        .map(|l| Pos {
            line: l.line(),
            column: l.column(),
        })
        .unwrap_or_default();
    let rendered = e.without_snippet().to_string();
    let first = rendered.lines().next().unwrap_or("invalid YAML").trim();
    let message = strip_location_suffix(first);
    let (message, help) = explain_yaml(e, message);
    Diagnostic::at(file, pos, format!("invalid YAML: {message}")).help(help)
}

/// The wrapped error serde-saphyr reports (alias and snippet wrappers peeled).
fn original(mut e: &serde_saphyr::Error) -> &serde_saphyr::Error {
    while let serde_saphyr::Error::AliasError { error, .. }
    | serde_saphyr::Error::WithSnippet { error, .. } = e
    {
        e = error;
    }
    e
}

/// The diagnostic's message and help for a YAML error, by serde-saphyr's typed
/// error (its variants and budget breaches; never its message text).
fn explain_yaml(e: &serde_saphyr::Error, message: String) -> (String, &'static str) {
    use serde_saphyr::Error as E;
    use serde_saphyr::budget::BudgetBreach as B;
    match original(e) {
        E::MultipleDocuments { .. }
        | E::Budget {
            breach: B::Documents { .. },
            ..
        } => (
            "more than one YAML document (`---`) in the file".to_owned(),
            "a plan or policy file holds exactly one document; split it into files",
        ),
        E::Budget {
            breach: B::Nodes { .. },
            ..
        }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayLimitExceeded { .. } => (
            format!("the file expands to more than {MAX_NODES} values (an alias bomb?)"),
            "write the values out instead of expanding aliases of aliases",
        ),
        E::Budget {
            breach: B::Depth { .. },
            ..
        }
        | E::AliasReplayStackDepthExceeded { .. } => (
            format!("nesting deeper than {MAX_DEPTH} levels"),
            "a plan needs only a few levels of nesting; flatten the file",
        ),
        E::Budget { .. } => (
            message,
            "the file is too large or too repetitive to be a plan; simplify it",
        ),
        E::NonFiniteFloat { .. } => (
            "a number is NaN or infinite".to_owned(),
            "use a finite number (for a timeout: seconds, or a duration like `10m`)",
        ),
        E::DuplicateMappingKey { .. } => (
            message,
            "each key may appear once in a mapping; remove or rename the repeated key",
        ),
        _ => (message, "fix the YAML syntax at this position"),
    }
}

/// serde-saphyr appends " at line X column Y"; the diagnostic carries the position already.
fn strip_location_suffix(msg: &str) -> String {
    if let Some(rest) = msg.strip_prefix("duplicate mapping key: ") {
        let key = rest.split(',').next().unwrap_or(rest).trim();
        return format!("duplicate key `{key}`");
    }
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// Validate a tree (and its JSON form, `instance`) against a schema; every violation becomes a diagnostic.
///
/// `describe` turns a JSON pointer into words ("step `lint`"), and `keys_at`
/// lists the keys allowed at a pointer, for "did you mean" help.
pub(crate) fn schema_check(
    file: &str,
    root: &Node,
    instance: &Value,
    schema: &Value,
    describe: &dyn Fn(&str) -> String,
    keys_at: &dyn Fn(&str) -> Vec<String>,
) -> Vec<Diagnostic> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            return vec![Diagnostic::at(
                file,
                Pos::default(),
                format!("internal error: the generated schema is invalid: {e}"),
            )];
        }
    };
    let mut out = Vec::new();
    for err in validator.iter_errors(instance) {
        let pointer = err.instance_path().as_str().to_owned();
        out.extend(explain(file, root, &pointer, &err, describe, keys_at));
    }
    out.sort_by_key(|d| (d.line, d.column));
    out.dedup();
    out
}

fn explain(
    file: &str,
    root: &Node,
    pointer: &str,
    err: &jsonschema::ValidationError<'_>,
    describe: &dyn Fn(&str) -> String,
    keys_at: &dyn Fn(&str) -> Vec<String>,
) -> Vec<Diagnostic> {
    use jsonschema::error::ValidationErrorKind as K;
    let pos = root.pos_of(pointer);
    let what = describe(pointer);
    let node = root.at_pointer(pointer);
    let found = node.map(|n| short(&n.to_json())).unwrap_or_default();
    match err.kind() {
        K::AdditionalProperties { unexpected } => {
            let allowed = keys_at(pointer);
            unexpected
                .iter()
                .map(|name| {
                    let kpos = node.and_then(|n| n.key_pos(name)).unwrap_or(pos);
                    let mut d = Diagnostic::at(file, kpos, format!("unknown key `{name}` in {what}"));
                    let list = allowed.join(", ");
                    d = match did_you_mean(name, allowed.iter().map(String::as_str)) {
                        Some(s) => d.help(format!("did you mean `{s}`? allowed keys: {list}")),
                        None => d.help(format!("allowed keys: {list}")),
                    };
                    d
                })
                .collect()
        }
        K::Required { property } => {
            let name = property.as_str().unwrap_or("?");
            vec![
                Diagnostic::at(file, pos, format!("missing required key `{name}` in {what}"))
                    .help(format!("add `{name}:` to {what}")),
            ]
        }
        K::Enum { options } => {
            let opts: Vec<String> = options
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            let value = node.and_then(|n| n.to_json().as_str().map(str::to_owned)).unwrap_or(found);
            let mut d = Diagnostic::at(file, pos, format!("invalid value `{value}` for {what}"));
            let list = opts.join(", ");
            d = match did_you_mean(&value, opts.iter().map(String::as_str)) {
                Some(s) => d.help(format!("did you mean `{s}`? expected one of: {list}")),
                None => d.help(format!("expected one of: {list}")),
            };
            vec![d]
        }
        K::Pattern { .. } if pointer.contains("/allowed_hosts/") => vec![
            Diagnostic::at(file, pos, format!("invalid host `{found}` in {what}")).help(
                "give a host name (`api.example.com`), a wildcard (`*.example.com`) or an IP address, with an optional `:port`; no scheme or path",
            ),
        ],
        K::Pattern { .. } if pointer.contains("/matrix/") => vec![
            Diagnostic::at(file, pos, format!("invalid matrix value `{found}` in {what}")).help(
                "matrix strings use only letters, digits and `_ . + @ -` (64 characters at most): they become part of step ids and folder names",
            ),
        ],
        K::OneOfNotValid { .. }
            if pointer.contains("/matrix/")
                && node.is_some_and(|n| n.to_json().is_string()) =>
        {
            vec![
                Diagnostic::at(file, pos, format!("invalid matrix value `{found}` in {what}")).help(
                    "matrix strings use only letters, digits and `_ . + @ -` (64 characters at most): they become part of step ids and folder names",
                ),
            ]
        }
        K::OneOfNotValid { .. } if pointer.contains("/matrix/") => vec![
            Diagnostic::at(file, pos, format!("invalid matrix value in {what}: {found}"))
                .help("a matrix value is a string, a number or a boolean"),
        ],
        K::PropertyNames { .. } if pointer.ends_with("/matrix") => vec![
            Diagnostic::at(file, pos, format!("invalid matrix key in {what}"))
                .help("matrix keys are lowercase: a letter, then letters, digits or `_` (32 at most); each becomes PLANGATE_MATRIX_<KEY>"),
        ],
        K::Pattern { .. } => vec![pattern_error(file, pos, &what, &found, pointer)],
        K::OneOfNotValid { context } | K::AnyOf { context } if !consts(context).is_empty() => {
            let opts = consts(context);
            let value = node.and_then(|n| n.to_json().as_str().map(str::to_owned)).unwrap_or(found);
            let list = opts.join(", ");
            let d = Diagnostic::at(file, pos, format!("invalid value `{value}` for {what}"));
            vec![match did_you_mean(&value, opts.iter().map(String::as_str)) {
                Some(s) => d.help(format!("did you mean `{s}`? expected one of: {list}")),
                None => d.help(format!("expected one of: {list}")),
            }]
        }
        K::OneOfNotValid { .. } | K::AnyOf { .. } if duration_key(pointer).is_some() => {
            vec![duration_error(file, pos, &what, &found, pointer)]
        }
        K::OneOfNotValid { context } | K::AnyOf { context } if single_branch(context).is_some() => {
            let mut out = Vec::new();
            for e in single_branch(context).unwrap_or_default() {
                let inner = e.instance_path().as_str().to_owned();
                out.extend(explain(file, root, &inner, e, describe, keys_at));
            }
            out
        }
        K::MinLength { limit: 1 } | K::MinItems { limit: 1 } => vec![
            Diagnostic::at(file, pos, format!("{what} must not be empty"))
                .help("give a value, or remove the key"),
        ],
        K::Type { kind } => vec![
            Diagnostic::at(
                file,
                pos,
                format!(
                    "wrong type for {what}: expected {}, found {}",
                    type_words(kind),
                    node.map(|n| shown(&n.to_json())).unwrap_or_default()
                ),
            )
            .help("see `plangate schema` for the expected shape"),
        ],
        _ => vec![
            Diagnostic::at(file, pos, format!("invalid {what}: {err}"))
                .help("see `plangate schema` for the expected shape"),
        ],
    }
}

/// The duration keys (`timeout`, a bash step's `retry.delay`): the word for one.
fn duration_key(pointer: &str) -> Option<&'static str> {
    if pointer.ends_with("/timeout") {
        Some("timeout")
    } else if pointer.ends_with("/retry/delay") {
        Some("delay")
    } else {
        None
    }
}

/// A `timeout` or `retry.delay` that is neither a number in range nor a duration.
fn duration_error(file: &str, pos: Pos, what: &str, found: &str, pointer: &str) -> Diagnostic {
    let d = Diagnostic::at(
        file,
        pos,
        format!(
            "invalid {} `{found}` for {what}",
            duration_key(pointer).unwrap_or("duration")
        ),
    );
    if pointer.ends_with("/timeout") {
        d.help("use a positive number of seconds (at most 86400) or a duration like `90s`, `10m`, `1h`")
    } else {
        d.help(crate::format::retry::DELAY_HELP)
    }
}

/// A string that does not match its pattern: an agent header's variable name, else an id.
fn pattern_error(file: &str, pos: Pos, what: &str, found: &str, pointer: &str) -> Diagnostic {
    if pointer.contains("/headers/") {
        return Diagnostic::at(file, pos, format!("invalid {what}: `{found}` is not an environment variable name"))
            .help("give the NAME of the variable that holds the header's value (e.g. AZURE_OPENAI_KEY), never the value itself");
    }
    Diagnostic::at(file, pos, format!("invalid {what}: `{found}`")).help(
        "ids start with a letter or `_` and use only letters, digits, `_` and `-` (64 characters at most)",
    )
}

/// For an optional value (`anyOf: [T, null]`) that is present but wrong: the errors of
/// the one branch that is not just "expected null".
fn single_branch<'a>(
    context: &'a [Vec<jsonschema::ValidationError<'static>>],
) -> Option<&'a [jsonschema::ValidationError<'static>]> {
    use jsonschema::error::ValidationErrorKind as K;
    let real: Vec<&Vec<jsonschema::ValidationError<'static>>> = context
        .iter()
        .filter(|b| !(b.len() == 1 && matches!(b[0].kind(), K::Type { .. })))
        .collect();
    match real.as_slice() {
        [one] if !one.is_empty() && context.len() > 1 => Some(one.as_slice()),
        _ => None,
    }
}

/// The constants of a `oneOf`/`anyOf` of `const` schemas (how schemars writes documented enums).
fn consts(context: &[Vec<jsonschema::ValidationError<'static>>]) -> Vec<String> {
    use jsonschema::error::ValidationErrorKind as K;
    let mut out = Vec::new();
    for branch in context {
        for e in branch {
            match e.kind() {
                K::Constant { expected_value } => match expected_value.as_str() {
                    Some(s) => out.push(s.to_owned()),
                    None => return Vec::new(),
                },
                K::OneOfNotValid { context } | K::AnyOf { context } => {
                    let inner = consts(context);
                    if inner.is_empty() {
                        return Vec::new();
                    }
                    out.extend(inner);
                }
                // The `null` branch of an optional enum.
                K::Type { .. } => {}
                _ => return Vec::new(),
            }
        }
    }
    out
}

fn type_words(kind: &jsonschema::error::TypeKind) -> String {
    use jsonschema::error::TypeKind;
    let name = |t: &jsonschema::JsonType| match t.to_string().as_str() {
        "object" => "a mapping".to_owned(),
        "array" => "a list".to_owned(),
        "string" => "a string".to_owned(),
        "integer" => "an integer".to_owned(),
        "number" => "a number".to_owned(),
        "boolean" => "true or false".to_owned(),
        "null" => "null".to_owned(),
        other => other.to_owned(),
    };
    match kind {
        TypeKind::Single(t) => name(t),
        TypeKind::Multiple(ts) => ts.iter().map(|t| name(&t)).collect::<Vec<_>>().join(" or "),
    }
}

/// A value as the user wrote it: strings quoted, so `"true"` is not mistaken for `true`.
fn shown(v: &Value) -> String {
    match v {
        Value::String(_) => format!("the string {}", Value::String(short(v))),
        Value::Null => "nothing".to_owned(),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a mapping".to_owned(),
        other => format!("`{other}`"),
    }
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // Redacted before it is cut: a cut secret is no longer recognised.
    let s = crate::redact::clean_str(&s).into_owned();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}...")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::parse_document;

    /// The diagnostic's message and help for `text`.
    fn refused(text: &str) -> (String, String) {
        match parse_document("p.yaml", text) {
            Ok(_) => panic!("accepted: {text}"),
            Err(d) => (d.message, d.help.unwrap_or_default()),
        }
    }

    #[test]
    fn yaml_failures_are_told_apart_by_their_type() {
        let mut bomb = String::from("a: &a [x,x,x,x,x,x,x,x,x,x]\n");
        for (name, prev) in [("b", "a"), ("c", "b"), ("d", "c"), ("e", "d"), ("f", "e")] {
            let refs = vec![format!("*{prev}"); 10].join(",");
            bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let (message, help) = refused(&bomb);
        assert!(
            message.contains("alias bomb") || help.contains("too large or too repetitive"),
            "{message} / {help}"
        );
        let deep = format!("x: {}{}\n", "[".repeat(64), "]".repeat(64));
        assert!(refused(&deep).0.contains("nesting deeper than"));
        let two = "a: 1\n---\nb: 2\n";
        assert!(refused(two).0.contains("more than one YAML document"));
        let dup = "a: 1\na: 2\n";
        assert!(refused(dup).1.contains("each key may appear once"));
        let syntax = "a: [1, 2\n";
        assert_eq!(refused(syntax).1, "fix the YAML syntax at this position");
    }
}
