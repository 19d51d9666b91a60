//! Rule definitions: the TOML data format, parsing, validation and merging.
//!
//! A rules file holds an optional global `[allowlist]` (applied to every rule) and a list of
//! `[[rules]]`. Each rule names the keywords that trigger it (lowercase literals, matched
//! ASCII-case-insensitively by the Aho-Corasick prefilter), a regex with a capture group
//! `secret` (or any group whose name starts with `secret`, or group 1) and optional filters.
//! Regexes are validated here by parsing only; compilation happens lazily in the engine.

use serde::Deserialize;

/// Allowlist: secrets matching one of `regexes`, or containing one of `stopwords`
/// (ASCII case-insensitive), are dropped.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Allowlist {
    #[serde(default)]
    pub regexes: Vec<String>,
    #[serde(default)]
    pub stopwords: Vec<String>,
    /// Substrings of the whole regex match (e.g. the key name) that drop the candidate.
    #[serde(default)]
    pub match_stopwords: Vec<String>,
}

/// One detection rule, as written in the TOML file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rule {
    pub id: String,
    pub description: String,
    pub keywords: Vec<String>,
    pub regex: String,
    /// Minimum Shannon entropy (bits/char) of the secret (of the decoded value with `decode`).
    pub entropy: Option<f64>,
    #[serde(default)]
    pub allowlist: Allowlist,
    /// `github` or `npm`: CRC32/base62 checksum in the last 6 chars; failing tokens are dropped.
    pub checksum: Option<String>,
    /// `jwt`: header must decode to JSON with an "alg" member.
    pub validate: Option<String>,
    /// `base64`: the secret is base64; it must decode to text, and filters apply to the text.
    pub decode: Option<String>,
    /// Regex the decoded text must match (with `decode`).
    pub decoded_regex: Option<String>,
    pub min_len: Option<usize>,
    pub max_len: Option<usize>,
    /// Minimum number of character classes (lower, upper, digit, symbol) in the secret.
    pub min_classes: Option<usize>,
    /// 0..1; default 0.9.
    pub confidence: Option<f32>,
    /// Higher wins when two rules report overlapping spans; default 50, generic rules lower.
    pub priority: Option<i32>,
    /// `line` (default): the hit's line (bounded); `block`: `before`/`after` bytes, multi-line.
    pub window: Option<String>,
    pub before: Option<usize>,
    pub after: Option<usize>,
    /// Exact-case literal prefixes whose base64 encodings are searched for wrapped secrets.
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Apply the global allowlist (default true).
    pub global_allowlist: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    allowlist: Allowlist,
    #[serde(default)]
    rules: Vec<Rule>,
}

/// A set of rules (the built-in ones, a user file, or both merged).
#[derive(Debug, Clone, Default)]
pub struct Ruleset {
    pub(crate) rules: Vec<Rule>,
    pub(crate) global: Allowlist,
}

const BUILTIN: &str = include_str!("../../rules/default.toml");

/// Replace the `{lb}` / `{rb}` shorthands (token boundaries) in a rule regex.
pub(crate) fn expand_regex(re: &str) -> String {
    re.replace("{lb}", r"(?:^|[^0-9A-Za-z]|\\[nrt])")
        .replace("{rb}", r"(?:[^0-9A-Za-z]|$)")
}

fn check_regex(id: &str, what: &str, re: &str) -> Result<usize, String> {
    let expanded = expand_regex(re);
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(&expanded)
        .map_err(|e| format!("rule `{id}`: invalid {what} regex: {e}"))?;
    Ok(hir.properties().explicit_captures_len())
}

fn validate(rule: &Rule, global: &Allowlist, regexes: bool) -> Result<(), String> {
    let id = rule.id.as_str();
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(format!(
            "rule `{id}`: id must be non-empty lowercase letters, digits and '-'"
        ));
    }
    if rule.description.trim().is_empty() {
        return Err(format!("rule `{id}`: empty description"));
    }
    if rule.keywords.is_empty() {
        return Err(format!("rule `{id}`: at least one keyword is required"));
    }
    for k in &rule.keywords {
        if k.len() < 2 {
            return Err(format!(
                "rule `{id}`: keyword `{k}` is too short (min 2 bytes)"
            ));
        }
        if k.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(format!("rule `{id}`: keyword `{k}` must be lowercase"));
        }
    }
    let caps = if regexes {
        check_regex(id, "main", &rule.regex)?
    } else {
        1
    };
    if caps == 0 {
        return Err(format!(
            "rule `{id}`: regex needs a capture group (`(?P<secret>...)` or group 1)"
        ));
    }
    if regexes {
        for r in &rule.allowlist.regexes {
            check_regex(id, "allowlist", r)?;
        }
        if let Some(r) = &rule.decoded_regex {
            check_regex(id, "decoded_regex", r)?;
        }
    }
    if let Some(e) = rule.entropy
        && !(0.0..=8.0).contains(&e)
    {
        return Err(format!("rule `{id}`: entropy {e} out of range 0..8"));
    }
    if let Some(c) = rule.confidence
        && !(0.0..=1.0).contains(&c)
    {
        return Err(format!("rule `{id}`: confidence {c} out of range 0..1"));
    }
    match rule.checksum.as_deref() {
        None | Some("github") | Some("npm") => {}
        Some(o) => return Err(format!("rule `{id}`: unknown checksum `{o}` (github, npm)")),
    }
    match rule.validate.as_deref() {
        None | Some("jwt") => {}
        Some(o) => return Err(format!("rule `{id}`: unknown validate `{o}` (jwt)")),
    }
    match rule.decode.as_deref() {
        None | Some("base64") => {}
        Some(o) => return Err(format!("rule `{id}`: unknown decode `{o}` (base64)")),
    }
    match rule.window.as_deref() {
        None | Some("line") | Some("block") => {}
        Some(o) => return Err(format!("rule `{id}`: unknown window `{o}` (line, block)")),
    }
    if let (Some(a), Some(b)) = (rule.min_len, rule.max_len)
        && a > b
    {
        return Err(format!("rule `{id}`: min_len > max_len"));
    }
    if regexes {
        for r in &global.regexes {
            check_regex("<global allowlist>", "allowlist", r)?;
        }
    }
    Ok(())
}

impl Ruleset {
    /// The compiled-in rules (`rules/default.toml`).
    pub fn builtin() -> Ruleset {
        // The built-in regexes are validated (and compiled) by the test suite, so the regex
        // syntax check is skipped here to keep the fixed cost low; fall back to an empty
        // set rather than panicking if the file were ever broken.
        Ruleset::parse(BUILTIN, false).unwrap_or_default()
    }

    /// Parse and validate a rules file. Errors name the rule id and what is wrong.
    pub fn from_toml(text: &str) -> Result<Ruleset, String> {
        Ruleset::parse(text, true)
    }

    fn parse(text: &str, check_regexes: bool) -> Result<Ruleset, String> {
        let file: RulesFile =
            toml::from_str(text).map_err(|e| format!("rules file: invalid TOML: {e}"))?;
        let mut seen = std::collections::HashSet::new();
        for r in &file.rules {
            validate(r, &file.allowlist, check_regexes)?;
            if !seen.insert(r.id.as_str()) {
                return Err(format!("rule `{}`: duplicate id", r.id));
            }
        }
        Ok(Ruleset {
            rules: file.rules,
            global: file.allowlist,
        })
    }

    /// Merge `other` into `self`: a rule with the same id replaces ours, new ids are added.
    /// Global allowlist entries are appended.
    pub fn extend(&mut self, other: Ruleset) {
        for r in other.rules {
            match self.rules.iter_mut().find(|x| x.id == r.id) {
                Some(slot) => *slot = r,
                None => self.rules.push(r),
            }
        }
        self.global.regexes.extend(other.global.regexes);
        self.global.stopwords.extend(other.global.stopwords);
        self.global
            .match_stopwords
            .extend(other.global.match_stopwords);
    }

    /// Rule ids, in file order.
    pub fn ids(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.id.as_str()).collect()
    }

    /// Human description of a rule (for SARIF).
    pub fn describe(&self, id: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.description.as_str())
    }
}
