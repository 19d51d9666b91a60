//! `output: envelope`: the three-tier fail-close parse of design 001.
//!
//! * Tier 1 — find the envelope object by string-aware brace scanning, parse it
//!   strictly (every JSON extension named, duplicate keys found), validate its
//!   exact shape and its artifact paths.
//! * Tier 2 — only when tier 1 fails on the syntax of string values (raw
//!   control characters, unescaped `"`): find every way of closing the strings
//!   that gives well-formed JSON, whatever its keys ([`tier2`]); two or more
//!   "read two ways" and are refused with the place they part; the single one
//!   is escaped and goes through tier 1's strict parse and key rules.
//! * Tier 3 — [`tier3_failure`]: the FAIL envelope recorded for a refused answer.
//!
//! Candidate rule: a top-level `{...}` region is *envelope-like* when it parses
//! as an object with at least one envelope key, or (when it does not parse)
//! when its text mentions an envelope key followed by `:`. Other regions —
//! `{}` or `{name}` in a sentence, an example `{"path": ...}` — are prose and
//! ignored. Two envelope-like regions are ambiguous, even if identical. With
//! no envelope-like region, a single parsed object is validated (so the agent
//! learns which keys are missing); several are "not found". An unclosed `{`
//! is truncated and never completed.

mod paths;
mod tier2;

use super::json::{
    Checked, MAX_REPORTED, Region, after_bom, build_value, check, finish, junk_after, pending,
    pending_offset, pos, remap, scan_regions, shown, truncated_first,
};
use super::{Category, Rejection};
use serde_json::Value;
use std::collections::HashMap;
use tier2::{Outcome, Role, Span, TwoWays};

/// The agent's answer for `output: envelope`.
///
/// `artifacts` and `next_actions` are optional: a key the answer left out is
/// `None`, stays absent when serialised (`parsed.json`) and counts as none
/// ([`Envelope::files`], [`Envelope::actions`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Envelope {
    pub status: Status,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_actions: Option<Vec<String>>,
}

impl Envelope {
    /// The files to write: none when `artifacts` is absent.
    pub fn files(&self) -> &[Artifact] {
        self.artifacts.as_deref().unwrap_or(&[])
    }

    /// The follow-up actions: none when `next_actions` is absent.
    pub fn actions(&self) -> &[String] {
        self.next_actions.as_deref().unwrap_or(&[])
    }
}

/// The agent's verdict on its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Status {
    #[serde(rename = "OK")]
    Ok,
    #[serde(rename = "FAIL")]
    Fail,
}

/// A file the agent produced (path relative to the workspace).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Artifact {
    pub path: String,
    pub content: String,
}

/// Which tier accepted the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Strict JSON.
    Strict,
    /// Raw control characters or unescaped quotes in string values, with exactly one reading.
    Recovered,
}

/// Every envelope key (what makes a region envelope-like).
const KEYS: [&str; 4] = ["status", "summary", "artifacts", "next_actions"];
/// The keys an envelope must have.
const REQUIRED: [&str; 2] = ["status", "summary"];
/// The keys an envelope may leave out (absent = none).
const OPTIONAL: [&str; 2] = ["artifacts", "next_actions"];
/// Pointer index depth: /artifacts/0/path.
const INDEX_DEPTH: usize = 3;

/// A region and what tier 1 made of it.
struct Cand {
    region: Region,
    checked: Checked,
    value: Option<Value>,
    env_like: bool,
}

/// Whether `text` mentions an envelope key followed (after an optional quote and spaces) by `:`.
fn mentions_key(text: &str) -> bool {
    let b = text.as_bytes();
    KEYS.iter().any(|k| {
        text.match_indices(k).any(|(i, _)| {
            let mut j = i + k.len();
            if matches!(b.get(j), Some(b'"' | b'\'')) {
                j += 1;
            }
            while matches!(b.get(j), Some(b' ' | b'\t' | b'\r' | b'\n')) {
                j += 1;
            }
            b.get(j) == Some(&b':')
        })
    })
}

fn classify(answer: &str, region: Region) -> Cand {
    let checked = check(
        answer,
        region.start,
        region.end,
        !region.closed,
        INDEX_DEPTH,
    );
    if checked.syntax_ok() {
        match build_value(answer, region.start, checked.value_end.max(region.start)) {
            Ok(v) => {
                let env_like = v
                    .as_object()
                    .is_some_and(|o| KEYS.iter().any(|k| o.contains_key(*k)));
                return Cand {
                    region,
                    checked,
                    value: Some(v),
                    env_like,
                };
            }
            Err(e) => {
                let mut checked = checked;
                checked.problems.push(e);
                checked.fatal = true;
                let env_like = mentions_key(answer.get(region.start..region.end).unwrap_or(""));
                return Cand {
                    region,
                    checked,
                    value: None,
                    env_like,
                };
            }
        }
    }
    let env_like = mentions_key(answer.get(region.start..region.end).unwrap_or(""));
    // Prose braces (`{name}`) are never looked at again: keep only what an unclosed region needs.
    let checked = if env_like || !region.closed {
        checked
    } else {
        Checked::default()
    };
    Cand {
        region,
        checked,
        value: None,
        env_like,
    }
}

fn sort_by_position(v: &mut [Rejection]) {
    v.sort_by_key(|r| (r.line, r.column));
}

fn ambiguous(first: usize, other: usize) -> Rejection {
    let lc = pos(first);
    pending(
        other,
        Category::Ambiguous,
        format!(
            "a second envelope object starts here (the first at {lc}): answer with exactly one envelope"
        ),
    )
}

/// Parses an agent answer as an envelope: the exact envelope the agent meant, or every reason it was refused.
pub fn parse_envelope(answer: &str) -> Result<(Envelope, Tier), Vec<Rejection>> {
    parse_envelope_inner(answer).map_err(|r| finish(answer, r))
}

fn parse_envelope_inner(answer: &str) -> Result<(Envelope, Tier), Vec<Rejection>> {
    let base = after_bom(answer);
    if answer.get(base..).is_none_or(|s| s.trim().is_empty()) {
        return Err(vec![Rejection::whole(
            Category::Empty,
            "the answer is empty: answer with one JSON envelope object",
        )]);
    }
    let cands: Vec<Cand> = scan_regions(answer, base, b"{")
        .into_iter()
        .map(|r| classify(answer, r))
        .collect();
    let env: Vec<&Cand> = cands.iter().filter(|c| c.env_like).collect();
    let Some(first) = env.first() else {
        return no_envelope(answer, &cands);
    };
    if let Some(v) = &first.value {
        if env.len() > 1 {
            return Err(env
                .iter()
                .skip(1)
                .map(|c| ambiguous(first.region.start, c.region.start))
                .collect());
        }
        if let Some(r) = wrapped_in_array(answer, first.region) {
            return Err(vec![r]);
        }
        if let Some(r) = junk_after(answer, first.region.end) {
            let r = other_boundary(answer, first.region).unwrap_or(r);
            let mut all = vec![r];
            all.extend(first.checked.problems.iter().cloned());
            return Err(all);
        }
        return match validate(v, &first.checked) {
            Ok(e) if first.checked.problems.is_empty() => {
                match other_boundary(answer, first.region) {
                    Some(r) => Err(vec![r]),
                    None => Ok((e, Tier::Strict)),
                }
            }
            Ok(_) => Err(first.checked.problems.clone()),
            Err(r) => {
                // Parse problems first (design 001), then validation problems.
                let mut all = first.checked.problems.clone();
                all.extend(r);
                Err(all)
            }
        };
    }
    // Tier 1 failed on the first envelope-like region.
    let mut problems = first.checked.problems.clone();
    // Tier 1 stopped on a string (raw control characters, a quote followed by text): tier 2's
    // verdict comes first. Otherwise (a JSON extension, a missing comma) tier 1's problems come
    // first, and a reading refused by the key rules is not reported (it was read across them).
    let string_first = problems
        .first()
        .is_some_and(|p| matches!(p.category, Category::Escaping | Category::Truncated));
    let mut read_complete = false;
    if !first.checked.syntax_ok() {
        let verdict = match tier2::recover(answer, first.region.start) {
            Outcome::Unique { strings, end } => {
                match from_reading(answer, first.region.start, &strings, end) {
                    Some(Ok(accepted)) => return Ok(accepted),
                    Some(Err(r)) if string_first => return Err(r),
                    _ => None,
                }
            }
            Outcome::TwoBoundaries(other) => {
                read_complete = true;
                Some(two_boundaries(first.region.start, other))
            }
            Outcome::TwoWays(w) => {
                read_complete = true;
                Some(two_ways(answer, &w))
            }
            Outcome::TooComplex => {
                let at = problems
                    .first()
                    .and_then(pending_offset)
                    .unwrap_or(first.region.start);
                Some(too_complex(at))
            }
            Outcome::Nothing => None,
        };
        if let Some(v) = verdict {
            // A complete reading was found: the answer is not truncated, whatever the quote
            // parity made the region scan believe.
            if read_complete {
                problems.retain(|p| p.category != Category::Truncated);
            }
            if string_first {
                problems.insert(0, v);
            } else {
                problems.push(v);
            }
        }
    }
    for c in env.iter().skip(1) {
        if c.value.is_some() && c.region.start >= first.region.end {
            problems.push(ambiguous(first.region.start, c.region.start));
        }
    }
    if !first.region.closed && !read_complete {
        // The answer ends inside the envelope: that is the problem to fix first.
        truncated_first(answer, first.region.start, &mut problems);
    }
    if problems.is_empty() {
        problems.push(pending(
            first.region.start,
            Category::Syntax,
            "the envelope object is not valid JSON",
        ));
    }
    Err(problems)
}

fn two_boundaries(start: usize, other_end: usize) -> Rejection {
    pending(other_end.saturating_sub(1),
        Category::Ambiguous,
        "the envelope can be read as ending at two places (a string holds unescaped quotes followed by JSON-looking text, and the envelope could also close here): escape every \" inside strings as \\\"",
    )
    .with_start(start)
}

trait WithStart {
    fn with_start(self, start: usize) -> Rejection;
}

impl WithStart for Rejection {
    fn with_start(self, start: usize) -> Rejection {
        let lc = pos(start);
        Rejection {
            message: format!("{} (envelope opened at {lc})", self.message),
            ..self
        }
    }
}

/// A strictly valid envelope followed by text with a `}`: could a string of it run on and
/// close the envelope later (two valid boundaries)? Only then is tier 2's automaton run.
fn other_boundary(answer: &str, region: Region) -> Option<Rejection> {
    if !answer
        .get(region.end..)
        .is_some_and(|rest| rest.contains('}'))
    {
        return None;
    }
    match tier2::recover(answer, region.start) {
        Outcome::Unique { end, .. } if end == region.end => None,
        Outcome::Nothing => None,
        Outcome::TwoBoundaries(other) => Some(two_boundaries(region.start, other)),
        Outcome::Unique { end, .. } => Some(two_boundaries(region.start, end)),
        Outcome::TwoWays(w) => Some(two_ways(answer, &w)),
        Outcome::TooComplex => Some(too_complex(region.start)),
    }
}

/// The envelope object is an element of a JSON array (`[{...}]`): wrong shape.
fn wrapped_in_array(answer: &str, region: Region) -> Option<Rejection> {
    let before = answer.get(..region.start)?.trim_end();
    let after = answer.get(region.end..)?.trim_start();
    if before.ends_with('[') && (after.starts_with(']') || after.starts_with(',')) {
        return Some(pending(
            before.len().saturating_sub(1),
            Category::Schema,
            "the envelope is wrapped in a JSON array: answer with the envelope object itself, not [ {...} ]",
        ));
    }
    None
}

/// No envelope-like region: say what is there.
fn no_envelope(answer: &str, cands: &[Cand]) -> Result<(Envelope, Tier), Vec<Rejection>> {
    if let Some(open) = cands.iter().find(|c| !c.region.closed) {
        let mut p: Vec<Rejection> = open
            .checked
            .problems
            .iter()
            .filter(|r| r.category == Category::Truncated)
            .cloned()
            .collect();
        if p.is_empty() {
            let lc = pos(open.region.start);
            p.push(pending(
                answer.len(),
                Category::Truncated,
                format!(
                    "the answer ends before the '{{' at {lc} is closed: send the complete envelope"
                ),
            ));
        }
        return Err(p);
    }
    let parsed: Vec<&Cand> = cands.iter().filter(|c| c.value.is_some()).collect();
    if let [only] = parsed.as_slice()
        && let Some(v) = &only.value
        && v.as_object().is_some_and(|o| !o.is_empty())
    {
        let mut all = only.checked.problems.clone();
        if let Err(r) = validate(v, &only.checked) {
            all.extend(r);
        }
        return Err(all);
    }
    Err(vec![Rejection::whole(
        Category::NotFound,
        "no envelope found: answer with one JSON object {\"status\": \"OK\"|\"FAIL\", \"summary\": \"...\", \"artifacts\": [{\"path\": \"...\", \"content\": \"...\"}], \"next_actions\": [\"...\"]} (artifacts and next_actions may be left out)",
    )])
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct Validator<'a> {
    index: &'a HashMap<String, usize>,
    keys: &'a HashMap<String, usize>,
    root: usize,
    out: Vec<Rejection>,
}

impl Validator<'_> {
    fn at(&self, ptr: &str) -> usize {
        self.index.get(ptr).copied().unwrap_or(self.root)
    }

    fn key_at(&self, ptr: &str) -> usize {
        self.keys.get(ptr).copied().unwrap_or_else(|| self.at(ptr))
    }

    fn err(&mut self, ptr: &str, category: Category, msg: String) {
        // Past the report limit only the count matters (`finish` adds "N more").
        if self.out.len() > MAX_REPORTED {
            return;
        }
        let at = self.at(ptr);
        self.out.push(pending(at, category, msg));
    }

    /// All of `required` and nothing but `required` and `optional` in `obj`;
    /// reports missing and extra keys.
    fn exact_keys(
        &mut self,
        ptr: &str,
        what: &str,
        obj: &serde_json::Map<String, Value>,
        required: &[&str],
        optional: &[&str],
    ) {
        let allowed = if optional.is_empty() {
            format!("exactly {}", required.join(", "))
        } else {
            format!(
                "{}, and optionally {}",
                required.join(", "),
                optional.join(", ")
            )
        };
        for k in required {
            if !obj.contains_key(*k) {
                self.err(
                    ptr,
                    Category::Schema,
                    format!("{what} is missing the key \"{k}\": it needs {allowed}"),
                );
            }
        }
        let mut extra: Vec<(usize, &String)> = obj
            .keys()
            .filter(|k| !required.contains(&k.as_str()) && !optional.contains(&k.as_str()))
            .map(|k| (self.key_at(&format!("{ptr}/{}", esc(k))), k))
            .collect();
        extra.sort();
        for (at, k) in extra {
            let shown = shown(k, 60);
            self.out.push(pending(
                at,
                Category::Schema,
                format!("unexpected key \"{shown}\" in {what}: remove it ({what} has {allowed})"),
            ));
        }
    }

    fn string<'v>(&mut self, ptr: &str, what: &str, v: Option<&'v Value>) -> Option<&'v str> {
        match v {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                let t = type_name(other);
                self.err(
                    ptr,
                    Category::Schema,
                    format!("{what} must be a string, found {t}"),
                );
                None
            }
            None => None,
        }
    }
}

fn esc(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// Validates the exact envelope shape and the artifact paths of a tier-1 value.
fn validate(v: &Value, checked: &Checked) -> Result<Envelope, Vec<Rejection>> {
    let root = checked.index.get("").copied().unwrap_or(0);
    let mut val = Validator {
        index: &checked.index,
        keys: &checked.keys,
        root,
        out: Vec::new(),
    };
    let Some(obj) = v.as_object() else {
        val.err(
            "",
            Category::Schema,
            format!("the envelope must be a JSON object, found {}", type_name(v)),
        );
        return Err(val.out);
    };
    val.exact_keys("", "the envelope", obj, &REQUIRED, &OPTIONAL);
    let status = match obj.get("status") {
        Some(Value::String(s)) if s == "OK" => Some(Status::Ok),
        Some(Value::String(s)) if s == "FAIL" => Some(Status::Fail),
        Some(other) => {
            let shown = shown(&other.to_string(), 40);
            val.err(
                "/status",
                Category::Schema,
                format!("status must be \"OK\" or \"FAIL\" (exactly, upper case), found {shown}"),
            );
            None
        }
        None => None,
    };
    let summary = val
        .string("/summary", "summary", obj.get("summary"))
        .map(str::to_string);
    let artifacts = artifacts(&mut val, obj.get("artifacts"));
    let next_actions = next_actions(&mut val, obj.get("next_actions"));
    match (status, summary) {
        (Some(status), Some(summary)) if val.out.is_empty() => Ok(Envelope {
            status,
            summary,
            artifacts,
            next_actions,
        }),
        _ => {
            let mut out = val.out;
            sort_by_position(&mut out);
            Err(out)
        }
    }
}

/// The envelope's `artifacts` (None when absent): each `{"path", "content"}` with a safe, unique path.
fn artifacts(val: &mut Validator<'_>, value: Option<&Value>) -> Option<Vec<Artifact>> {
    let mut artifacts = Vec::new();
    match value {
        Some(Value::Array(items)) => {
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for (i, item) in items.iter().enumerate() {
                let ptr = format!("/artifacts/{i}");
                let Some(a) = item.as_object() else {
                    val.err(
                        &ptr,
                        Category::Schema,
                        format!(
                            "artifacts[{i}] must be an object {{\"path\", \"content\"}}, found {}",
                            type_name(item)
                        ),
                    );
                    continue;
                };
                val.exact_keys(
                    &ptr,
                    &format!("artifacts[{i}]"),
                    a,
                    &["path", "content"],
                    &[],
                );
                let path = val.string(
                    &format!("{ptr}/path"),
                    &format!("artifacts[{i}].path"),
                    a.get("path"),
                );
                let content = val.string(
                    &format!("{ptr}/content"),
                    &format!("artifacts[{i}].content"),
                    a.get("content"),
                );
                if let Some(p) = path {
                    let problems = paths::path_problems(p);
                    if !problems.is_empty() {
                        let shown = shown(p, 80);
                        val.err(
                            &format!("{ptr}/path"),
                            Category::UnsafePath,
                            format!(
                                "artifacts[{i}].path \"{shown}\" is unsafe: {}",
                                problems.join("; ")
                            ),
                        );
                    }
                    if let Some(first) = seen.get(p) {
                        val.err(
                            &format!("{ptr}/path"),
                            Category::Schema,
                            format!("artifacts[{i}].path repeats artifacts[{first}].path: send each file once"),
                        );
                    } else {
                        seen.insert(p, i);
                    }
                }
                if let (Some(p), Some(c)) = (path, content) {
                    artifacts.push(Artifact {
                        path: p.to_string(),
                        content: c.to_string(),
                    });
                }
            }
        }
        Some(other) => val.err(
            "/artifacts",
            Category::Schema,
            format!(
                "artifacts must be an array of {{\"path\", \"content\"}} objects, found {}",
                type_name(other)
            ),
        ),
        None => return None,
    }
    Some(artifacts)
}

/// The envelope's `next_actions` (None when absent): an array of strings.
fn next_actions(val: &mut Validator<'_>, value: Option<&Value>) -> Option<Vec<String>> {
    let mut next_actions = Vec::new();
    match value {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if let Some(s) = val.string(
                    &format!("/next_actions/{i}"),
                    &format!("next_actions[{i}]"),
                    Some(item),
                ) {
                    next_actions.push(s.to_string());
                }
            }
        }
        Some(other) => val.err(
            "/next_actions",
            Category::Schema,
            format!(
                "next_actions must be an array of strings, found {}",
                type_name(other)
            ),
        ),
        None => return None,
    }
    Some(next_actions)
}

/// Builds the envelope of the unique tier-2 reading: its repaired strings escaped, then the
/// same strict parse and key rules as tier 1. None when the reading needed no repair.
fn from_reading(
    answer: &str,
    start: usize,
    strings: &[Span],
    end: usize,
) -> Option<Result<(Envelope, Tier), Vec<Rejection>>> {
    if !strings.iter().any(|s| s.repaired) {
        return None;
    }
    let mut out: Vec<Rejection> = strings
        .iter()
        .filter(|s| s.repaired && s.escaped)
        .map(|s| pending(s.start.saturating_sub(1),
            Category::Escaping,
            "this string has raw newlines or unescaped quotes AND escape sequences (\\n, \\\", \\\\), so it cannot be read with certainty: escape all of it: \" as \\\", \\ as \\\\, newline as \\n",
        ))
        .collect();
    if out.is_empty() {
        let fixed = Repaired::new(answer, strings, end);
        let back = |o: usize| fixed.original(o);
        let checked = check(&fixed.text, start, fixed.text.len(), false, INDEX_DEPTH);
        let value = if checked.syntax_ok() {
            build_value(&fixed.text, start, checked.value_end.max(start))
                .map_err(|e| vec![e])
                .and_then(|v| match validate(&v, &checked) {
                    Ok(e) if checked.problems.is_empty() => Ok(e),
                    Ok(_) => Err(Vec::new()),
                    Err(r) => Err(r),
                })
        } else {
            Err(Vec::new())
        };
        match value {
            Ok(env) => {
                out.extend(swallowed_keys(answer, strings, &env));
                if out.is_empty() {
                    out = after_reading(answer, start, end);
                }
                if out.is_empty() {
                    return Some(Ok((env, Tier::Recovered)));
                }
            }
            Err(r) => {
                // Parse problems first (design 001), then validation problems.
                out.extend(checked.problems.iter().cloned().map(|r| remap(r, back)));
                out.extend(r.into_iter().map(|r| remap(r, back)));
                out.extend(after_reading(answer, start, end));
            }
        }
    }
    if out.is_empty() {
        out.push(pending(
            start,
            Category::Syntax,
            "the envelope object is not valid JSON",
        ));
    }
    Some(Err(out))
}

/// What may not follow a recovered envelope: text glued to it, JSON-looking text, another envelope.
fn after_reading(answer: &str, start: usize, end: usize) -> Vec<Rejection> {
    let mut out: Vec<Rejection> = junk_after(answer, end).into_iter().collect();
    for r in scan_regions(answer, end, b"{") {
        let c = classify(answer, r);
        if c.env_like {
            out.push(ambiguous(start, r.start));
        }
    }
    out
}

/// The answer up to the end of the recovered envelope, with the repaired strings escaped
/// (`"` as `\"`, control characters as `\n`, `\t`, `\r`, `\u00XX`): strict JSON.
struct Repaired {
    text: String,
    /// (offset in `text` after an inserted escape, bytes inserted up to there), in order.
    shifts: Vec<(usize, usize)>,
}

impl Repaired {
    fn new(answer: &str, strings: &[Span], end: usize) -> Repaired {
        let mut text = String::with_capacity(end + 64);
        let mut shifts = Vec::new();
        let mut extra = 0usize;
        let mut cursor = 0usize;
        for s in strings.iter().filter(|s| s.repaired) {
            text.push_str(answer.get(cursor..s.start).unwrap_or(""));
            for ch in answer.get(s.start..s.end).unwrap_or("").chars() {
                let esc = match ch {
                    '"' => "\\\"".to_string(),
                    '\n' => "\\n".to_string(),
                    '\r' => "\\r".to_string(),
                    '\t' => "\\t".to_string(),
                    c if u32::from(c) < 0x20 => format!("\\u{:04x}", u32::from(c)),
                    c => {
                        text.push(c);
                        continue;
                    }
                };
                text.push_str(&esc);
                extra += esc.len() - 1;
                shifts.push((text.len(), extra));
            }
            cursor = s.end;
        }
        text.push_str(answer.get(cursor..end).unwrap_or(""));
        Repaired { text, shifts }
    }

    /// The answer's offset of an offset in the repaired text.
    fn original(&self, at: usize) -> usize {
        let i = self.shifts.partition_point(|(o, _)| *o <= at);
        let extra = i
            .checked_sub(1)
            .and_then(|j| self.shifts.get(j))
            .map_or(0, |(_, e)| *e);
        at.saturating_sub(extra)
    }
}

/// A recovered reading without `artifacts` (or `next_actions`) whose repaired string holds
/// `"artifacts":` (or `"next_actions":`) swallowed the key the agent wrote: refused, never
/// read as an envelope without it.
fn swallowed_keys(answer: &str, strings: &[Span], env: &Envelope) -> Vec<Rejection> {
    let absent: Vec<&str> = [
        (env.artifacts.is_none(), "artifacts"),
        (env.next_actions.is_none(), "next_actions"),
    ]
    .iter()
    .filter(|(absent, _)| *absent)
    .map(|(_, k)| *k)
    .collect();
    let mut out = Vec::new();
    for s in strings.iter().filter(|s| s.repaired) {
        let text = answer.get(s.start..s.end).unwrap_or("");
        for key in &absent {
            let quoted = format!("\"{key}\"");
            let hit = text.match_indices(&quoted).find(|(i, _)| {
                text.get(i + quoted.len()..)
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
            });
            if let Some((i, _)) = hit {
                out.push(pending(
                    s.start + i,
                    Category::Escaping,
                    format!("a string with unescaped quotes holds \"{key}\": here: if it is the key, close the string before it; if it is text, escape every \" inside the string as \\\""),
                ));
            }
        }
    }
    out
}

/// What a string of a reading is, for a message: `the value of "summary"`, `the key "x"`.
fn describe(answer: &str, s: &Span, key: Option<&Span>) -> String {
    let text = |sp: &Span| shown(answer.get(sp.start..sp.end).unwrap_or(""), 40);
    let key = key.map(text);
    match (s.role, key) {
        (Role::Key, _) => format!("the key \"{}\"", text(s)),
        (Role::Member, Some(k)) => format!("the value of \"{k}\""),
        (Role::Element, Some(k)) => format!("a string in \"{k}\""),
        (Role::Member, None) => "a string value".to_string(),
        (Role::Element, None) => "a string in a list".to_string(),
    }
}

/// Two readings of the answer are well-formed JSON: say which string and where they part.
fn two_ways(answer: &str, w: &TwoWays) -> Rejection {
    let what = describe(answer, &w.string, w.key.as_ref());
    let at = pos(w.string.end);
    let rest = match (&w.next, w.short_end) {
        (Some(n), _) if n.role == Role::Key => {
            format!(
                "the rest reads as the key \"{}\"",
                shown(answer.get(n.start..n.end).unwrap_or(""), 40)
            )
        }
        (Some(n), _) => format!(
            "the rest reads as the string \"{}\"",
            shown(answer.get(n.start..n.end).unwrap_or(""), 40)
        ),
        (None, Some(e)) => format!("the envelope closes at {}", pos(e.saturating_sub(1))),
        (None, None) => "the rest reads as more JSON".to_string(),
    };
    let other = match w.long_end {
        Some(e) => format!(
            "it runs on to the quote at {} and swallows that text",
            pos(e)
        ),
        None => "it runs on past that quote and swallows that text".to_string(),
    };
    pending(
        w.string.end,
        Category::Ambiguous,
        format!(
            "the answer reads two ways: {what} ends at the quote at {at} and {rest}, or {other}; escape every \" inside a string as \\\" (and every raw newline as \\n) so that it reads one way"
        ),
    )
}

fn too_complex(at: usize) -> Rejection {
    pending(
        at,
        Category::Ambiguous,
        "string values hold so many unescaped quotes or raw control characters that the readings cannot all be checked (the answer may read two ways): escape every \" inside a string as \\\" and every newline as \\n",
    )
}

/// Tier 3 of design 001: the FAIL envelope plangate records for a refused answer: summary names the
/// problem(s), next_actions asks for a retry with the escaping rules.
pub fn tier3_failure(rejections: &[Rejection]) -> Envelope {
    let one_line = |s: String| s.replace(['\n', '\r'], " ");
    let problems: Vec<String> = rejections.iter().map(|r| one_line(r.to_string())).collect();
    let summary = if problems.is_empty() {
        "agent answer refused by the fail-close envelope parser".to_string()
    } else {
        format!(
            "agent answer refused by the fail-close envelope parser ({} problem{}): {}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems.join("; ")
        )
    };
    let mut next_actions = vec![
        "Retry: answer with exactly one JSON object with the keys status (\"OK\" or \"FAIL\") and summary, and optionally artifacts ([{\"path\", \"content\"}]) and next_actions ([strings]), no other key; prose or a ```json fence around it is fine, a second object is not".to_string(),
        "Escape inside every JSON string: \" as \\\", \\ as \\\\, newline as \\n, tab as \\t, carriage return as \\r; no raw control characters, no comments, no trailing commas, no single quotes".to_string(),
        "Artifact paths are relative file paths inside the workspace: no '..', no leading '/', '\\' or '~', no drive letters, nothing under .git".to_string(),
    ];
    next_actions.extend(rejections.iter().map(|r| one_line(format!("Fix: {r}"))));
    Envelope {
        status: Status::Fail,
        summary,
        artifacts: Some(Vec::new()),
        next_actions: Some(next_actions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tier3_names_every_problem_and_asks_for_escaping() {
        let r = vec![
            Rejection {
                category: Category::Syntax,
                line: 4,
                column: 12,
                message: "trailing comma after the last element of an array: remove it".into(),
            },
            Rejection::whole(Category::NotFound, "no envelope found"),
        ];
        let e = tier3_failure(&r);
        assert_eq!(e.status, Status::Fail);
        assert_eq!(e.artifacts, Some(Vec::new()));
        assert!(e.summary.contains("2 problems"));
        assert!(
            e.summary
                .contains("syntax at line 4 column 12: trailing comma")
        );
        assert!(e.summary.contains("not_found"));
        assert!(
            e.actions()
                .iter()
                .any(|a| a.contains("\\\"") && a.contains("\\n"))
        );
        assert!(
            e.actions()
                .iter()
                .any(|a| a.starts_with("Fix: syntax at line 4 column 12"))
        );
        assert!(e.actions().iter().all(|a| !a.contains('\n')));
        // The failure envelope is itself a valid envelope.
        let s = serde_json::to_string(&e).unwrap_or_default();
        assert_eq!(parse_envelope(&s).map(|x| x.0), Ok(e));
    }

    #[test]
    fn tier3_with_no_rejections_is_still_a_failure() {
        let e = tier3_failure(&[]);
        assert_eq!(e.status, Status::Fail);
        assert!(!e.summary.is_empty());
        assert!(e.actions().len() >= 2);
    }

    #[test]
    fn mentions() {
        assert!(mentions_key("{\"status\" : 1"));
        assert!(mentions_key("{status: 1"));
        assert!(!mentions_key("{the status of things}"));
    }
}
