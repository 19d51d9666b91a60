//! Rule definitions: the TOML data format, parsing, validation and merging.
//!
//! A rules file holds an optional global `[allowlist]` (applied to every rule) and a list of
//! `[[rules]]`. Each rule names the keywords that trigger it (lowercase literals, matched
//! ASCII-case-insensitively by the Aho-Corasick prefilter), a regex with a capture group
//! `secret` (or any group whose name starts with `secret`, or group 1), optionally a group
//! `key` (any name starting with `key`) holding the name the value is assigned to, and
//! optional filters.
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
    /// Drop values that are names, not secrets: a value repeating the name it
    /// is assigned to (the regex's `key` group: `x=x`, `self.x = x`), or an
    /// identifier of at least this many words (`Ec2SubnetIds`,
    /// `prod/db-password-v2`; see `names.rs`), and the values of a name that
    /// ends a quoted type path (`"AWS::IAM::AccessKey": "62d91b17309e76c8"`).
    pub skip_names: Option<usize>,
    /// Drop (decoded) values that are plain data (a number, boolean, host,
    /// address, e-mail, URL without credentials, a name) unless the `key`
    /// group matches `credential_key`: a Kubernetes Secret's `username` or
    /// `host` beside its `password`.
    #[serde(default)]
    pub skip_plain: bool,
    /// Regex of key names whose values are always secret material (with `skip_plain`).
    pub credential_key: Option<String>,
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

const BUILTIN: &str = include_str!("../../../rules/default.toml");

/// Why a rules file was refused. Every variant names the rule it is about.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RulesError {
    /// Not TOML, or not the rules format.
    #[error("rules file: invalid TOML: {0}")]
    Toml(#[from] toml::de::Error),
    /// Two rules share an id.
    #[error("rule `{id}`: duplicate id")]
    DuplicateId { id: String },
    /// A regex does not parse.
    #[error("rule `{id}`: invalid {what} regex: {source}")]
    Regex {
        id: String,
        what: &'static str,
        #[source]
        source: Box<regex_syntax::Error>,
    },
    /// A field of the rule is out of range or unknown.
    #[error("rule `{id}`: {problem}")]
    Invalid { id: String, problem: RuleProblem },
}

/// What is wrong with one rule (beyond its regexes).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleProblem {
    #[error("id must be non-empty lowercase letters, digits and '-'")]
    BadId,
    #[error("empty description")]
    EmptyDescription,
    #[error("at least one keyword is required")]
    NoKeyword,
    #[error("keyword `{0}` is too short (min 2 bytes)")]
    ShortKeyword(String),
    #[error("keyword `{0}` must be lowercase")]
    UppercaseKeyword(String),
    #[error("regex needs a capture group (`(?P<secret>...)` or group 1)")]
    NoCaptureGroup,
    #[error("entropy {0} out of range 0..8")]
    Entropy(f64),
    #[error("confidence {0} out of range 0..1")]
    Confidence(f32),
    #[error("unknown checksum `{0}` (github, npm)")]
    Checksum(String),
    #[error("unknown validate `{0}` (jwt)")]
    Validate(String),
    #[error("unknown decode `{0}` (base64)")]
    Decode(String),
    #[error("unknown window `{0}` (line, block)")]
    Window(String),
    #[error("min_len > max_len")]
    MinOverMax,
}

/// Replace the `{lb}` / `{rb}` shorthands (token boundaries) and `{assign}`
/// (a name's closing quotes or bracket, escaped or not, then `=`, `:`, `:=`,
/// `=>`, `||=` or `??=`, then an opening quote) in a rule regex.
pub(crate) fn expand_regex(re: &str) -> String {
    re.replace("{lb}", r"(?:^|[^0-9A-Za-z]|\\[nrt])")
        .replace("{rb}", r"(?:[^0-9A-Za-z]|$)")
        .replace(
            "{assign}",
            r#"(?:\\?["'\]])*\s*(?:\|\|=|\?\?=|:=|=>|=|:)\s*\\?["']?"#,
        )
}

fn check_regex(id: &str, what: &'static str, re: &str) -> Result<usize, RulesError> {
    let expanded = expand_regex(re);
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(&expanded)
        .map_err(|e| RulesError::Regex {
            id: id.to_owned(),
            what,
            source: Box::new(e),
        })?;
    Ok(hir.properties().explicit_captures_len())
}

fn problem(rule: &Rule, global: &Allowlist) -> Result<Option<RuleProblem>, RulesError> {
    use RuleProblem as P;
    let id = rule.id.as_str();
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Ok(Some(P::BadId));
    }
    if rule.description.trim().is_empty() {
        return Ok(Some(P::EmptyDescription));
    }
    if rule.keywords.is_empty() {
        return Ok(Some(P::NoKeyword));
    }
    for k in &rule.keywords {
        if k.len() < 2 {
            return Ok(Some(P::ShortKeyword(k.clone())));
        }
        if k.bytes().any(|b| b.is_ascii_uppercase()) {
            return Ok(Some(P::UppercaseKeyword(k.clone())));
        }
    }
    if check_regex(id, "main", &rule.regex)? == 0 {
        return Ok(Some(P::NoCaptureGroup));
    }
    for r in &rule.allowlist.regexes {
        check_regex(id, "allowlist", r)?;
    }
    if let Some(r) = &rule.decoded_regex {
        check_regex(id, "decoded_regex", r)?;
    }
    if let Some(r) = &rule.credential_key {
        check_regex(id, "credential_key", r)?;
    }
    if let Some(e) = rule.entropy
        && !(0.0..=8.0).contains(&e)
    {
        return Ok(Some(P::Entropy(e)));
    }
    if let Some(c) = rule.confidence
        && !(0.0..=1.0).contains(&c)
    {
        return Ok(Some(P::Confidence(c)));
    }
    let unknown = [
        (
            rule.checksum.as_deref(),
            &["github", "npm"][..],
            P::Checksum as fn(String) -> P,
        ),
        (rule.validate.as_deref(), &["jwt"][..], P::Validate),
        (rule.decode.as_deref(), &["base64"][..], P::Decode),
        (rule.window.as_deref(), &["line", "block"][..], P::Window),
    ];
    for (value, known, make) in unknown {
        if let Some(v) = value
            && !known.contains(&v)
        {
            return Ok(Some(make(v.to_owned())));
        }
    }
    if let (Some(a), Some(b)) = (rule.min_len, rule.max_len)
        && a > b
    {
        return Ok(Some(P::MinOverMax));
    }
    for r in &global.regexes {
        check_regex("<global allowlist>", "allowlist", r)?;
    }
    Ok(None)
}

fn validate(rule: &Rule, global: &Allowlist) -> Result<(), RulesError> {
    match problem(rule, global)? {
        None => Ok(()),
        Some(problem) => Err(RulesError::Invalid {
            id: rule.id.clone(),
            problem,
        }),
    }
}

impl Ruleset {
    /// The compiled-in rules (`rules/default.toml`), parsed and regex-checked once per
    /// process. A broken built-in file is an error (the redaction layer refuses to start
    /// on it: `redact::init`), never an empty rule set.
    pub fn builtin_checked() -> Result<&'static Ruleset, &'static RulesError> {
        static B: std::sync::OnceLock<Result<Ruleset, RulesError>> = std::sync::OnceLock::new();
        B.get_or_init(|| Ruleset::from_toml(BUILTIN)).as_ref()
    }

    /// The compiled-in rules. `plangate` checks them at startup
    /// (`redact::init`), so this never fails in the binary; a library caller that
    /// skipped that check gets a panic on a broken built-in file, never a silent empty set.
    pub fn builtin() -> Ruleset {
        match Ruleset::builtin_checked() {
            Ok(r) => r.clone(),
            Err(e) => panic!("the built-in secret rules are broken: {e}"),
        }
    }

    /// Parse and validate a rules file. Errors name the rule id and what is wrong.
    pub fn from_toml(text: &str) -> Result<Ruleset, RulesError> {
        let file: RulesFile = toml::from_str(text)?;
        let mut seen = std::collections::HashSet::new();
        for r in &file.rules {
            validate(r, &file.allowlist)?;
            if !seen.insert(r.id.as_str()) {
                return Err(RulesError::DuplicateId { id: r.id.clone() });
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
