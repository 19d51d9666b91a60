//! Bash command risk classifier.
//!
//! Owns the decision "how risky is this shell command line?" for plangate:
//! [`classify_bash`] parses the command with `brush-parser`, walks every simple
//! command it can find (pipelines, lists, compound commands, functions, command
//! and process substitutions, `bash -c`/`eval` strings, here-docs) and returns the
//! highest risk found, whether the command is blocked outright, or whether it
//! could not be read at all (fail-closed).
//!
//! This module is a pure function of its inputs: it does no I/O, spawns no
//! processes, reads no environment variables and never touches the filesystem
//! (paths are resolved lexically against [`ClassifyContext`]).

mod braces;
mod builtins;
mod commands;
mod effects;
mod files;
mod infra;
mod nesting;
mod paths;
pub mod rules;
mod shells;
mod tools;
mod vars;
mod walk;
mod words;
mod wrappers;
mod writers;

use crate::model::Risk;

/// Where a command runs; all paths are absolute.
pub struct ClassifyContext<'a> {
    /// The repository the plan works on.
    pub workspace: &'a std::path::Path,
    /// Where the command runs (inside workspace).
    pub working_dir: &'a std::path::Path,
    /// `$HOME`, for resolving `~`.
    pub home: Option<&'a std::path::Path>,
}

/// The verdict on one command line: judged at a risk, blocked (never runs)
/// or unclassifiable (cannot be read: an explicit approval is required).
/// Blocked and unclassifiable commands are dangerous by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classification {
    /// Read and judged: the highest risk found and the first reason at it,
    /// e.g. "`rm -rf build` deletes recursively inside the workspace".
    Judged { risk: Risk, reason: String },
    /// Must never run, whatever the approvals.
    Blocked { reason: String },
    /// The parser could not read the command (syntax error, unsupported
    /// construct): fail-close.
    Unclassifiable { reason: String },
}

impl Classification {
    /// The risk: dangerous when blocked or unclassifiable.
    pub fn risk(&self) -> Risk {
        match self {
            Classification::Judged { risk, .. } => *risk,
            Classification::Blocked { .. } | Classification::Unclassifiable { .. } => {
                Risk::Dangerous
            }
        }
    }

    /// One line naming what decided the verdict.
    pub fn reason(&self) -> &str {
        match self {
            Classification::Judged { reason, .. }
            | Classification::Blocked { reason }
            | Classification::Unclassifiable { reason } => reason,
        }
    }

    /// Why the command must never run, when it is blocked.
    pub fn blocked(&self) -> Option<&str> {
        match self {
            Classification::Blocked { reason } => Some(reason),
            _ => None,
        }
    }

    /// Why the command cannot be read, when it is unclassifiable.
    pub fn unclassifiable(&self) -> Option<&str> {
        match self {
            Classification::Unclassifiable { reason } => Some(reason),
            _ => None,
        }
    }

    /// The label fixtures and rule examples write: `blocked`,
    /// `unclassifiable` or the risk.
    pub fn label(&self) -> &'static str {
        match self {
            Classification::Judged { risk, .. } => risk.as_str(),
            Classification::Blocked { .. } => "blocked",
            Classification::Unclassifiable { .. } => "unclassifiable",
        }
    }
}

/// Classifies one bash command line. Never panics, does no I/O. Every
/// command is unclassifiable when a rules file (`crates/policy/src/rules/`) does
/// not load.
pub fn classify_bash(command: &str, ctx: &ClassifyContext<'_>) -> Classification {
    let c = classify_unchecked(command, ctx);
    match rules::checked() {
        Err(e) if c.blocked().is_none() => Classification::Unclassifiable {
            reason: e.to_owned(),
        },
        _ => c,
    }
}

/// [`classify_bash`] without the check of the rules file (its examples use it).
fn classify_unchecked(command: &str, ctx: &ClassifyContext<'_>) -> Classification {
    let mut walker = walk::Walker::new(ctx, true);
    walker.script(command);
    if walker.scratch_named() {
        // The script may change `$PLANGATE_STEP_ARTIFACTS` or `$TMPDIR`:
        // judge it again with their values unknown.
        walker = walk::Walker::new(ctx, false);
        walker.script(command);
    }
    walker.into_findings().finish()
}

/// Accumulates what the walk found: the highest risk (first reason at that level),
/// the first blocking reason and the first reason the command could not be read.
#[derive(Debug, Default)]
pub struct Findings {
    top: Option<(Risk, String)>,
    blocked: Option<String>,
    unclassifiable: Option<String>,
}

impl Findings {
    /// Records a use of the network: at least moderate.
    pub fn network(&mut self, reason: String) {
        self.note(Risk::Moderate, reason);
    }

    /// Records a command's risk; keeps the first reason at the highest level.
    pub fn note(&mut self, risk: Risk, reason: String) {
        let higher = self.top.as_ref().is_none_or(|(r, _)| risk > *r);
        if higher {
            self.top = Some((risk, one_line(&reason)));
        }
    }

    /// Records that the command must never run.
    pub fn block(&mut self, reason: String) {
        if self.blocked.is_none() {
            self.blocked = Some(one_line(&reason));
        }
    }

    /// Records that part of the command could not be read.
    pub fn unclassifiable(&mut self, reason: String) {
        if self.unclassifiable.is_none() {
            self.unclassifiable = Some(one_line(&reason));
        }
    }

    fn finish(self) -> Classification {
        if let Some(reason) = self.blocked {
            Classification::Blocked { reason }
        } else if let Some(reason) = self.unclassifiable {
            Classification::Unclassifiable { reason }
        } else {
            let (risk, reason) = self
                .top
                .unwrap_or((Risk::Safe, "empty command does nothing".to_string()));
            Classification::Judged { risk, reason }
        }
    }
}

/// Makes a reason printable on one line: control characters become spaces.
fn one_line(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if cleaned.trim().is_empty() {
        "unnamed reason".to_string()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn ctx() -> ClassifyContext<'static> {
        ClassifyContext {
            workspace: Path::new("/work/ws"),
            working_dir: Path::new("/work/ws"),
            home: Some(Path::new("/home/ci")),
        }
    }

    /// Both fixture files: `commands.tsv` (line numbers as is) and
    /// `families.tsv` (one group per `# family:` comment; line numbers + 10000).
    fn fixture() -> Vec<(usize, &'static str, &'static str)> {
        let files = [
            (
                0,
                include_str!("../../../tests/fixtures/classifier/commands.tsv"),
            ),
            (
                10_000,
                include_str!("../../../tests/fixtures/classifier/families.tsv"),
            ),
        ];
        files
            .into_iter()
            .flat_map(|(base, text)| {
                text.lines()
                    .enumerate()
                    .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
                    .filter_map(move |(i, l)| l.split_once('\t').map(|(e, c)| (base + i + 1, e, c)))
            })
            .collect()
    }

    #[test]
    fn fixture_cases_match() {
        let cases = fixture();
        assert!(cases.len() >= 230, "only {} cases", cases.len());
        let mut failures = Vec::new();
        for (line, expected, command) in &cases {
            let got = classify_bash(command, &ctx());
            if got.label() != *expected {
                failures.push(format!(
                    "line {line}: `{command}` expected {expected}, got {} ({})",
                    got.label(),
                    got.reason()
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} cases failed:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }

    #[test]
    fn fixture_labels_are_known() {
        let known = ["safe", "moderate", "dangerous", "blocked", "unclassifiable"];
        for (line, expected, _) in fixture() {
            assert!(
                known.contains(&expected),
                "line {line}: bad label {expected}"
            );
        }
    }

    #[test]
    fn reasons_are_one_line() {
        for (_, _, command) in fixture() {
            let c = classify_bash(command, &ctx());
            let reason = c.reason();
            assert!(!reason.trim().is_empty(), "empty reason for `{command}`");
            assert!(!reason.contains('\n'), "multi-line reason for `{command}`");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut inputs: Vec<String> = [
            "",
            " ",
            "\t\n",
            "'",
            "\"",
            "`",
            "$(",
            "${",
            "$((",
            "(((",
            ")))",
            "{",
            "}",
            ";;",
            "&&",
            "||",
            "|",
            "&",
            "<<",
            "<<EOF",
            "cat <<EOF\nno end",
            "cat <<'EOF'\nx\nEOF\n",
            "\0",
            "ls\0-la",
            "rm -rf \0/",
            "$'\\x'",
            "$'\\u{zz}'",
            "echo ${!}",
            "${x:-$(}",
            "`echo",
            "!",
            "! !",
            "[[",
            "[[ ! ]]",
            "case",
            "case x in",
            "if",
            "fi",
            "for",
            "for ((;;",
            "(( 1 +",
            "f() {",
            "function",
            "a=(",
            "<(",
            ">(ls",
            "ls >",
            "ls 2>&",
            "\\",
            "echo \\",
            "x=$'\\377'",
            "🦀 rm -rf /",
            "ls \u{202e}",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        inputs.push("(".repeat(10_000));
        inputs.push(format!("{}ls{}", "(".repeat(10_000), ")".repeat(10_000)));
        inputs.push(format!(
            "echo {}x{}",
            "$(".repeat(10_000),
            ")".repeat(10_000)
        ));
        inputs.push(format!("{}ls;{}", "{ ".repeat(5_000), "} ".repeat(5_000)));
        inputs.push(format!(
            "{}ls;{}",
            "if true; then ".repeat(3_000),
            "fi; ".repeat(3_000)
        ));
        inputs.push(format!("[[ {}x ]]", "! ".repeat(10_000)));
        inputs.push(format!("echo {}", "`echo ".repeat(1_000)));
        inputs.push("ls | ".repeat(5_000) + "ls");
        inputs.push("x".repeat(200_000));
        let nested_bash = (0..6).fold("ls".to_string(), |acc, _| {
            format!("bash -c {}", shell_quote(&acc))
        });
        inputs.push(nested_bash);
        inputs.push("eval ".repeat(1_000) + "ls");
        for input in &inputs {
            let start = std::time::Instant::now();
            let c = classify_bash(input, &ctx());
            assert!(!c.reason().is_empty());
            let took = start.elapsed();
            assert!(
                took.as_secs() < 5,
                "too slow ({took:?}) on {:?}",
                short(input)
            );
        }
    }

    fn short(s: &str) -> String {
        s.chars().take(40).collect()
    }

    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', "'\\''"))
    }

    /// Every program the Rust judges with an option table has one in the
    /// rules file (without it the program is unclassifiable).
    #[test]
    fn programs_judged_in_rust_have_option_tables() {
        let names = [
            "sed",
            "gsed",
            "awk",
            "gawk",
            "mawk",
            "nawk",
            "busybox-awk",
            "date",
            "split",
            "csplit",
            "patch",
            "less",
            "more",
            "most",
            "man",
            "rg",
            "cp",
            "mv",
            "ln",
            "install",
            "scp",
            "rsync",
            "touch",
            "mkdir",
            "truncate",
            "tee",
            "mkfifo",
            "mknod",
            "sponge",
            "tar",
            "unzip",
            "7z",
            "7za",
            "zip",
            "ssh",
            "curl",
            "wget",
            "gzip",
            "shred",
            "chmod",
        ];
        for name in names {
            assert!(rules::raw().program(name).is_some(), "no table for {name}");
        }
        let c = classify_bash("nosuchprogram-x -o /etc/x", &ctx());
        assert_ne!(c.label(), "safe");
    }

    #[test]
    fn home_unknown_makes_tilde_unknown() {
        let c = ClassifyContext {
            home: None,
            ..ctx()
        };
        assert_eq!(classify_bash("rm -rf ~/x", &c).risk(), Risk::Dangerous);
        assert_eq!(classify_bash("ls ~", &c).risk(), Risk::Safe);
    }
}
