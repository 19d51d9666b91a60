//! The scanner behind `plangate scan` and the `secrets_scan` tool: walk paths,
//! scan every text file for secrets in parallel, optionally redact in place,
//! and render the findings as SARIF 2.1.0 (the command's text and JSON
//! renderers are in `commands/scan.rs`).
//!
//! Hidden files are scanned (secrets love `.env` and `.github/`); `.git/`
//! internals are not (objects are compressed); `.gitignore` does not hide
//! anything (an ignored `.env` is exactly what must be caught). Binary files
//! are skipped. Findings never carry the secret, only its fingerprint.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::secrets::{Finding, Ruleset, Scanner, looks_binary, redact};

/// Files larger than this are skipped (and said so).
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// One finding in a file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FileFinding {
    /// Relative to the scanned directory.
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, bytes.
    pub column: usize,
    /// The rule id.
    #[serde(rename = "type")]
    pub rule: String,
    /// What the rule detects.
    pub description: String,
    /// 0..1.
    pub confidence: f64,
    /// Stable fingerprint of the secret (never the secret).
    pub fingerprint: String,
    /// Whether the file was rewritten with the secret replaced.
    pub redacted: bool,
    /// The file on disk (as walked: relative to the current directory, or
    /// absolute), from which SARIF and GitLab locations are made
    /// repository-relative (`location`); not serialized.
    #[serde(skip)]
    pub path: PathBuf,
}

/// What a scan found.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScanOutcome {
    /// Findings, sorted by file, line, column.
    pub findings: Vec<FileFinding>,
    /// Text files scanned.
    pub files_scanned: u64,
    /// Bytes of the text files scanned.
    pub bytes_scanned: u64,
    /// Binary files skipped.
    pub binary_skipped: u64,
    /// Files and folders that could not be read or rewritten, and why:
    /// `plangate scan` fails (exit 4) when there is any.
    pub errors: Vec<String>,
    /// Findings suppressed by the baseline.
    pub baselined: u64,
    /// Wall time.
    pub scan_time: Duration,
}

/// How to scan.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScanOptions {
    /// Rewrite files with secrets replaced.
    pub redact: bool,
    /// Fingerprints to suppress.
    pub baseline: HashSet<String>,
    /// Only paths matching one of these globs (empty: all).
    pub include: Vec<String>,
    /// Leave out paths matching these globs.
    pub exclude: Vec<String>,
    /// Only these rule ids (None: all).
    pub only_rules: Option<HashSet<String>>,
}

/// A glob of `include`/`exclude` that does not parse.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PatternError {
    #[error("bad file pattern `{glob}`: {source}")]
    Include {
        glob: String,
        #[source]
        source: ignore::Error,
    },
    #[error("bad exclude pattern `{glob}`: {source}")]
    Exclude {
        glob: String,
        #[source]
        source: ignore::Error,
    },
    #[error("{0}")]
    Build(#[source] ignore::Error),
}

fn overrides(root: &Path, opts: &ScanOptions) -> Result<ignore::overrides::Override, PatternError> {
    let base = if root.is_dir() {
        root
    } else {
        root.parent().unwrap_or(Path::new("."))
    };
    let mut b = ignore::overrides::OverrideBuilder::new(base);
    for g in &opts.include {
        b.add(g).map_err(|source| PatternError::Include {
            glob: g.clone(),
            source,
        })?;
    }
    for g in &opts.exclude {
        b.add(&format!("!{g}"))
            .map_err(|source| PatternError::Exclude {
                glob: g.clone(),
                source,
            })?;
    }
    b.build().map_err(PatternError::Build)
}

/// Why `plangate scan` cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScanError {
    #[error("cannot read rules file {}: {source}", path.display())]
    ReadRules {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Rules {
        path: PathBuf,
        #[source]
        source: crate::secrets::RulesError,
    },
    /// The scanner refused the merged rules (`secrets::Scanner::new` reports text).
    #[error("{0}")]
    Compile(String),
    #[error("{}: no such file or directory", .0.display())]
    NoSuchPath(PathBuf),
    #[error("cannot read baseline {}: {source}", path.display())]
    ReadBaseline {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("baseline {} is not JSON: {source}", path.display())]
    BaselineJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "baseline {} is not a scan report, a SARIF file or a list of fingerprints",
        .0.display()
    )]
    BaselineShape(PathBuf),
}

/// The built-in rules plus an optional user rules file.
pub(crate) fn scanner_with(user_rules: Option<&Path>) -> Result<(Ruleset, Scanner), ScanError> {
    let mut rules = Ruleset::builtin();
    if let Some(p) = user_rules {
        let text = std::fs::read_to_string(p).map_err(|source| ScanError::ReadRules {
            path: p.to_owned(),
            source,
        })?;
        let extra = Ruleset::from_toml(&text).map_err(|source| ScanError::Rules {
            path: p.to_owned(),
            source,
        })?;
        rules.extend(extra);
    }
    let scanner = Scanner::new(&rules).map_err(ScanError::Compile)?;
    Ok((rules, scanner))
}

/// Scan paths (files or directories).
pub(crate) fn scan_paths(
    rules: &Ruleset,
    scanner: &Scanner,
    paths: &[PathBuf],
    opts: &ScanOptions,
) -> ScanOutcome {
    let started = Instant::now();
    let state = Mutex::new(ScanOutcome::default());
    let single_dir = paths.len() == 1 && paths[0].is_dir();
    for root in paths {
        if !root.exists() {
            if let Ok(mut s) = state.lock() {
                s.errors
                    .push(format!("{}: no such file or directory", root.display()));
            }
            continue;
        }
        let ov = match overrides(root, opts) {
            Ok(o) => o,
            Err(e) => {
                if let Ok(mut s) = state.lock() {
                    s.errors.push(e.to_string());
                }
                continue;
            }
        };
        let walker = ignore::WalkBuilder::new(root)
            .overrides(ov)
            .standard_filters(false)
            .hidden(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .threads(
                std::thread::available_parallelism()
                    .map_or(2, |n| n.get())
                    .min(8),
            )
            .build_parallel();
        walker.run(|| {
            Box::new(|entry| {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(e) => {
                        // A folder it cannot list, a path too long to
                        // reach: never skipped in silence (it fails the scan).
                        if let Ok(mut s) = state.lock() {
                            s.errors.push(format!("cannot read: {e}"));
                        }
                        return ignore::WalkState::Continue;
                    }
                };
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    let path = entry.path();
                    let shown = display_path(root, path, single_dir);
                    let result = scan_file(rules, scanner, path, &shown, opts);
                    if let Ok(mut s) = state.lock() {
                        merge(&mut s, result);
                    }
                }
                ignore::WalkState::Continue
            })
        });
    }
    let mut out = state.into_inner().unwrap_or_default();
    out.findings
        .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    out.errors.sort();
    out.scan_time = started.elapsed();
    out
}

enum FileResult {
    Scanned {
        bytes: u64,
        findings: Vec<FileFinding>,
        baselined: u64,
        error: Option<String>,
    },
    Binary,
    Error(String),
}

fn merge(s: &mut ScanOutcome, r: FileResult) {
    match r {
        FileResult::Scanned {
            bytes,
            findings,
            baselined,
            error,
        } => {
            s.files_scanned += 1;
            s.bytes_scanned += bytes;
            s.findings.extend(findings);
            s.baselined += baselined;
            s.errors.extend(error);
        }
        FileResult::Binary => s.binary_skipped += 1,
        FileResult::Error(e) => s.errors.push(e),
    }
}

fn display_path(root: &Path, path: &Path, single_dir: bool) -> String {
    let rel = if single_dir {
        path.strip_prefix(root).unwrap_or(path)
    } else {
        path
    };
    let s = rel.to_string_lossy().into_owned();
    if s.is_empty() {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        s
    }
}

fn scan_file(
    rules: &Ruleset,
    scanner: &Scanner,
    path: &Path,
    shown: &str,
    opts: &ScanOptions,
) -> FileResult {
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) => return FileResult::Error(format!("{shown}: {e}")),
    };
    if len > MAX_FILE_BYTES {
        return FileResult::Error(format!(
            "{shown}: skipped, larger than {MAX_FILE_BYTES} bytes"
        ));
    }
    let bytes = match crate::regular::read(path) {
        Ok(b) => b,
        Err(e) => return FileResult::Error(format!("{shown}: {e}")),
    };
    if looks_binary(&bytes) {
        return FileResult::Binary;
    }
    let mut all = scanner.scan_shown(&bytes);
    if let Some(only) = &opts.only_rules {
        all.retain(|f| only.contains(&f.rule));
    }
    let (kept, dropped): (Vec<Finding>, Vec<Finding>) = all
        .into_iter()
        .partition(|f| !opts.baseline.contains(&f.fingerprint));
    let mut error = None;
    let mut redacted = false;
    if opts.redact && !kept.is_empty() {
        match crate::atomic::write_bytes(path, crate::atomic::Mode::Keep, &redact(&bytes, &kept)) {
            Ok(()) => redacted = true,
            Err(e) => error = Some(format!("{shown}: cannot redact: {e}")),
        }
    }
    let findings = kept
        .into_iter()
        .map(|f| FileFinding {
            file: shown.to_owned(),
            line: f.line,
            column: f.column,
            description: rules.describe(&f.rule).unwrap_or("").to_owned(),
            rule: f.rule,
            confidence: (f64::from(f.confidence) * 100.0).round() / 100.0,
            fingerprint: f.fingerprint,
            redacted,
            path: path.to_path_buf(),
        })
        .collect();
    FileResult::Scanned {
        bytes: bytes.len() as u64,
        findings,
        baselined: dropped.len() as u64,
        error,
    }
}

/// Fingerprints from a baseline file: a `plangate scan --format json` output,
/// a SARIF file from `plangate scan --format sarif`, or a JSON list of fingerprints.
pub(crate) fn load_baseline(path: &Path) -> Result<HashSet<String>, ScanError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScanError::ReadBaseline {
        path: path.to_owned(),
        source,
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|source| ScanError::BaselineJson {
        path: path.to_owned(),
        source,
    })?;
    let mut out = HashSet::new();
    let mut take = |s: Option<&str>| {
        if let Some(s) = s {
            out.insert(s.to_owned());
        }
    };
    if let Some(list) = v.as_array() {
        list.iter().for_each(|x| take(x.as_str()));
    } else if let Some(f) = v.get("findings").and_then(Value::as_array) {
        f.iter()
            .for_each(|x| take(x.get("fingerprint").and_then(Value::as_str)));
    } else if let Some(runs) = v.get("runs").and_then(Value::as_array) {
        for r in runs {
            for res in r
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                take(
                    res.pointer("/partialFingerprints/plangateSecret~1v1")
                        .and_then(Value::as_str),
                );
            }
        }
    } else {
        return Err(ScanError::BaselineShape(path.to_owned()));
    }
    Ok(out)
}

/// SARIF 2.1.0 for GitHub code scanning: stable rule ids, partial
/// fingerprints, no secret values; locations relative to the repository
/// (percent-encoded, `uriBaseId: %SRCROOT%`), rules with a PascalCase `name`
/// and `help`. Valid against the 2.1.0 schema and the SARIF Multitool's
/// SARIF and GitHub rule sets (tests/integration/formats.rs).
pub(crate) fn to_sarif(rules: &Ruleset, findings: &[FileFinding]) -> Value {
    let repo = crate::location::Repo::current();
    let mut used: Vec<&str> = findings.iter().map(|f| f.rule.as_str()).collect();
    used.sort_unstable();
    used.dedup();
    let rule_objs: Vec<Value> = used
        .iter()
        .map(|id| {
            let desc = rules.describe(id).unwrap_or(id);
            let help = "The value is never shown. Rotate the secret (it must be treated as leaked), \
                        remove it from the file and from the history, and load it from a secret store instead.";
            json!({
                "id": id,
                "name": pascal_case(id),
                "shortDescription": {"text": desc},
                "fullDescription": {"text": format!("{desc}. The value is never shown; rotate the secret and remove it from history.")},
                "help": {
                    "text": format!("{desc} ({id}). {help}"),
                    "markdown": format!("**{desc}** (`{id}`)\n\n{help}")
                },
                "defaultConfiguration": {"level": "error"},
                "properties": {"tags": ["security", "secret"], "security-severity": "8.0"}
            })
        })
        .collect();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let path = if f.path.as_os_str().is_empty() {
                PathBuf::from(&f.file)
            } else {
                f.path.clone()
            };
            json!({
                "ruleId": f.rule,
                "ruleIndex": used.iter().position(|r| *r == f.rule).unwrap_or(0),
                "level": "error",
                "message": {"text": format!("{} ({}); the value is redacted.", f.description, f.rule)},
                "locations": [{"physicalLocation": {
                    "artifactLocation": repo.sarif_location(&path),
                    "region": {"startLine": f.line.max(1), "startColumn": f.column.max(1)}
                }}],
                "partialFingerprints": {"plangateSecret/v1": f.fingerprint}
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "plangate",
                "semanticVersion": crate::version::VERSION,
                "informationUri": "https://github.com/plangate/plangate",
                "rules": rule_objs
            }},
            "originalUriBaseIds": repo.sarif_base(),
            "results": results
        }]
    })
}

/// A rule id as a SARIF rule `name`: `aws-access-key-id` → `AwsAccessKeyId`.
fn pascal_case(id: &str) -> String {
    id.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut cs = w.chars();
            cs.next()
                .map(|c| c.to_ascii_uppercase().to_string() + cs.as_str())
                .unwrap_or_default()
        })
        .collect()
}
