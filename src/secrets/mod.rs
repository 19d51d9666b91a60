//! TEMPORARY stand-in with the engine's API (two rules), replaced by the rule engine.
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Rules.
#[derive(Debug, Clone, Default)]
pub struct Ruleset {
    rules: Vec<(String, String, String)>,
}
impl Ruleset {
    /// Builtin.
    pub fn builtin() -> Ruleset {
        Ruleset {
            rules: vec![
                (
                    "github-pat".into(),
                    "GitHub token".into(),
                    r"\b(ghp_[A-Za-z0-9]{36})\b".into(),
                ),
                (
                    "aws-access-key-id".into(),
                    "AWS key id".into(),
                    r"\b((?:AKIA|ASIA)[A-Z0-9]{16})\b".into(),
                ),
            ],
        }
    }
    /// From toml.
    pub fn from_toml(_text: &str) -> Result<Ruleset, String> {
        Err("user rules are not supported by the stand-in".into())
    }
    /// Extend.
    pub fn extend(&mut self, other: Ruleset) {
        self.rules.extend(other.rules);
    }
    /// Ids.
    pub fn ids(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.0.as_str()).collect()
    }
    /// Describe.
    pub fn describe(&self, id: &str) -> Option<&str> {
        self.rules.iter().find(|r| r.0 == id).map(|r| r.1.as_str())
    }
}
/// Scanner.
#[derive(Debug, Clone)]
pub struct Scanner {
    rules: Vec<(String, regex::bytes::Regex)>,
}
impl Scanner {
    /// New.
    pub fn new(rules: &Ruleset) -> Result<Scanner, String> {
        let mut out = Vec::new();
        for (id, _, re) in &rules.rules {
            out.push((
                id.clone(),
                regex::bytes::Regex::new(re).map_err(|e| format!("{id}: {e}"))?,
            ));
        }
        Ok(Scanner { rules: out })
    }
    /// Scan.
    pub fn scan(&self, bytes: &[u8]) -> Vec<Finding> {
        let mut out = Vec::new();
        for (id, re) in &self.rules {
            for c in re.captures_iter(bytes) {
                if let Some(m) = c.get(1) {
                    let line = bytes[..m.start()].iter().filter(|b| **b == b'\n').count() + 1;
                    let col = m.start()
                        - bytes[..m.start()]
                            .iter()
                            .rposition(|b| *b == b'\n')
                            .map_or(0, |p| p + 1)
                        + 1;
                    out.push(Finding {
                        rule: id.clone(),
                        start: m.start(),
                        end: m.end(),
                        line,
                        column: col,
                        confidence: 0.9,
                        fingerprint: fingerprint(m.as_bytes()),
                    });
                }
            }
        }
        out.sort_by_key(|f| f.start);
        out
    }
}
/// Finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Rule.
    pub rule: String,
    /// Start.
    pub start: usize,
    /// End.
    pub end: usize,
    /// Line.
    pub line: usize,
    /// Column.
    pub column: usize,
    /// Confidence.
    pub confidence: f32,
    /// Fingerprint.
    pub fingerprint: String,
}
/// Fingerprint.
pub fn fingerprint(secret: &[u8]) -> String {
    hex::encode(Sha256::digest(secret))[..32].to_owned()
}
/// Redact.
pub fn redact(bytes: &[u8], findings: &[Finding]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for f in findings {
        if f.start < at {
            continue;
        }
        out.extend_from_slice(&bytes[at..f.start]);
        out.extend_from_slice(format!("[REDACTED:{}]", f.rule).as_bytes());
        at = f.end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}
/// Binary.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}
