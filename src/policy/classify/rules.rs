//! The bash classifier's command tables as data: `src/policy/rules/bash.toml`,
//! compiled in, read once per process. Each entry carries examples that the
//! real classifier must decide as written; a file that does not parse, a
//! malformed entry or an example decided otherwise is an error naming the
//! file and the entry ([`checked`]): [`super::classify_bash`] then judges
//! every command unclassifiable (fail-close), and `cargo test` fails.

use crate::model::Risk;
use serde::Deserialize;
use std::sync::OnceLock;

/// The file, for error messages.
pub(crate) const FILE: &str = "src/policy/rules/bash.toml";
const TEXT: &str = include_str!("../rules/bash.toml");

/// A list of command names (or words).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(transparent)]
pub(crate) struct Names(Vec<String>);

impl Names {
    /// Whether `name` is in the list.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.0.iter().any(|n| n == name)
    }

    /// Whether one of the list is a prefix of `word`.
    pub(crate) fn prefixes(&self, word: &str) -> bool {
        self.0.iter().any(|p| word.starts_with(p.as_str()))
    }

    /// The names, for options parsing.
    pub(crate) fn strs(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}

/// A list of commands with its examples.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct List {
    pub names: Names,
    #[serde(default)]
    examples: Vec<String>,
}

/// Cloud and cluster CLIs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Cloud {
    pub names: Names,
    /// Subcommands (any word) that only read.
    pub reads: Names,
    /// Verb prefixes of aws/gcloud/az operations that only read.
    pub read_verbs: Names,
    /// Options that take the next word.
    pub value_flags: Names,
    #[serde(default)]
    examples: Vec<String>,
}

/// Local container engines.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Containers {
    pub names: Names,
    /// Subcommands that only read.
    pub reads: Names,
    /// Subcommands that remove containers, images or volumes.
    pub destroys: Names,
    #[serde(default)]
    examples: Vec<String>,
}

/// The risk a wrapper adds, as written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RiskName {
    Moderate,
    Dangerous,
}

/// A command that runs the command given in its arguments.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Wrapper {
    pub names: Names,
    /// Options taking the next word as their value.
    #[serde(default)]
    pub with_value: Names,
    /// Positional words before the command (timeout's duration, flock's file).
    #[serde(default)]
    pub skip: usize,
    /// Whether the words after the skipped ones are a command (false for `su`).
    #[serde(default = "yes")]
    pub command: bool,
    /// Options after which no command follows (`taskset -p`, `busybox --list`).
    #[serde(default)]
    pub no_command: Names,
    /// Options whose value is a shell command line (`su -c`, `flock -c`).
    #[serde(default)]
    pub script: Names,
    /// Options whose value is a file written (`strace -o`).
    #[serde(default)]
    pub writes: Names,
    /// Runs the command as another user (dangerous; a root shell reads its
    /// standard input when no command is given).
    #[serde(default)]
    pub as_root: bool,
    #[serde(default)]
    risk: Option<RiskName>,
    #[serde(default)]
    why: Option<String>,
    #[serde(default)]
    examples: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Wrapper {
    /// The wrapper's own risk and why.
    pub(crate) fn risk(&self) -> Option<(Risk, &str)> {
        if self.as_root {
            return Some((Risk::Dangerous, "runs a command as another user"));
        }
        let risk = match self.risk? {
            RiskName::Moderate => Risk::Moderate,
            RiskName::Dangerous => Risk::Dangerous,
        };
        Some((risk, self.why.as_deref().unwrap_or_default()))
    }
}

/// The loaded tables.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Rules {
    pub read_only: List,
    pub system_admin: List,
    pub disk_destroyers: List,
    pub partitioners: List,
    pub network_clients: List,
    pub package_managers: List,
    pub build_runners: List,
    pub cloud: Cloud,
    pub containers: Containers,
    pub wrappers: Vec<Wrapper>,
}

impl Rules {
    /// The wrapper named `name`.
    pub(crate) fn wrapper(&self, name: &str) -> Option<&Wrapper> {
        self.wrappers.iter().find(|w| w.names.has(name))
    }

    /// (entry, its names, its examples), for the checks.
    fn entries(&self) -> Vec<(String, &Names, &[String])> {
        let mut out: Vec<(String, &Names, &[String])> = vec![
            (
                "read-only".into(),
                &self.read_only.names,
                &self.read_only.examples,
            ),
            (
                "system-admin".into(),
                &self.system_admin.names,
                &self.system_admin.examples,
            ),
            (
                "disk-destroyers".into(),
                &self.disk_destroyers.names,
                &self.disk_destroyers.examples,
            ),
            (
                "partitioners".into(),
                &self.partitioners.names,
                &self.partitioners.examples,
            ),
            (
                "network-clients".into(),
                &self.network_clients.names,
                &self.network_clients.examples,
            ),
            (
                "package-managers".into(),
                &self.package_managers.names,
                &self.package_managers.examples,
            ),
            (
                "build-runners".into(),
                &self.build_runners.names,
                &self.build_runners.examples,
            ),
            ("cloud".into(), &self.cloud.names, &self.cloud.examples),
            (
                "containers".into(),
                &self.containers.names,
                &self.containers.examples,
            ),
        ];
        for w in &self.wrappers {
            let first = w.names.0.first().map_or("?", String::as_str);
            out.push((format!("wrapper `{first}`"), &w.names, &w.examples));
        }
        out
    }
}

/// Parses the file and checks each entry's shape (not yet its examples).
fn parse(text: &str) -> Result<Rules, String> {
    let r: Rules = toml::from_str(text).map_err(|e| format!("{FILE}: {e}"))?;
    for (entry, names, examples) in r.entries() {
        if names.0.is_empty() {
            return Err(format!("{FILE}: {entry}: no names"));
        }
        if examples.is_empty() {
            return Err(format!("{FILE}: {entry}: no examples"));
        }
    }
    for w in &r.wrappers {
        let first = w.names.0.first().map_or("?", String::as_str);
        if w.as_root && w.risk.is_some() {
            return Err(format!(
                "{FILE}: wrapper `{first}`: `as_root` already sets the risk"
            ));
        }
        if w.risk.is_some() != w.why.is_some() {
            return Err(format!(
                "{FILE}: wrapper `{first}`: `risk` and `why` go together"
            ));
        }
    }
    Ok(r)
}

/// The context examples are judged in.
fn example_context() -> super::ClassifyContext<'static> {
    super::ClassifyContext {
        workspace: std::path::Path::new("/work/ws"),
        working_dir: std::path::Path::new("/work/ws"),
        home: Some(std::path::Path::new("/home/ci")),
    }
}

/// The label of a verdict, as examples write it.
pub(crate) fn label(c: &super::Classification) -> &'static str {
    if c.blocked.is_some() {
        "blocked"
    } else if c.unclassifiable.is_some() {
        "unclassifiable"
    } else {
        c.risk.as_str()
    }
}

/// Runs every example of `r` through the classifier (which reads the loaded
/// tables: `r` is them, except in the tests of this checker).
fn check_examples(r: &Rules) -> Result<(), String> {
    let ctx = example_context();
    for (entry, names, examples) in r.entries() {
        for e in examples {
            let at = |why: String| format!("{FILE}: {entry}: example `{e}`: {why}");
            let (want, line) = e
                .split_once(": ")
                .ok_or_else(|| at("write `LABEL: COMMAND`".to_owned()))?;
            let first = line.split_whitespace().next().unwrap_or_default();
            let named =
                names.has(first) || (entry == "disk-destroyers" && first.starts_with("mkfs"));
            if !named {
                return Err(at(format!("`{first}` is not one of the entry's names")));
            }
            let c = super::classify_unchecked(line, &ctx);
            if label(&c) != want {
                return Err(at(format!(
                    "the classifier says {} ({})",
                    label(&c),
                    c.reason
                )));
            }
        }
    }
    Ok(())
}

fn loaded() -> &'static Result<Rules, String> {
    static R: OnceLock<Result<Rules, String>> = OnceLock::new();
    R.get_or_init(|| parse(TEXT))
}

/// The tables as parsed, examples not checked (empty when the file does not
/// parse: every command is then unknown, so moderate at least).
pub(crate) fn raw() -> &'static Rules {
    static EMPTY: OnceLock<Rules> = OnceLock::new();
    match loaded() {
        Ok(r) => r,
        Err(_) => EMPTY.get_or_init(Rules::default),
    }
}

/// Ok once the examples are checked (once per process), or why the tables
/// cannot be used.
pub(crate) fn checked() -> Result<(), &'static str> {
    static C: OnceLock<Result<(), String>> = OnceLock::new();
    let r = loaded().as_ref().map_err(String::as_str)?;
    C.get_or_init(|| check_examples(r))
        .as_ref()
        .map_err(String::as_str)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_load_and_every_example_holds() {
        if let Err(e) = checked() {
            panic!("{e}");
        }
        assert!(raw().read_only.names.has("ls"));
        assert!(raw().wrapper("sudo").is_some_and(|w| w.as_root));
    }

    #[test]
    fn a_bad_file_is_an_error_naming_the_entry() {
        let cut = TEXT.replacen("\"safe: ls\"", "\"moderate: ls\"", 1);
        assert_ne!(cut, TEXT);
        let e = check_examples(&parse(&cut).expect("parses")).expect_err("wrong label");
        assert!(
            e.starts_with(FILE) && e.contains("read-only") && e.contains("safe"),
            "{e}"
        );
        let cut = TEXT.replacen("\"safe: ls\"", "\"safe: curl\"", 1);
        let e = check_examples(&parse(&cut).expect("parses")).expect_err("wrong entry");
        assert!(e.contains("`curl` is not one"), "{e}");
        let cut = TEXT.replacen(
            "[[wrappers]]\nnames = [\"sudo\", \"doas\"]",
            "[[wrappers]]\nnames = [\"sudo\", \"doas\"]\nwith_values = []",
            1,
        );
        assert_ne!(cut, TEXT);
        let e = parse(&cut).expect_err("unknown key");
        assert!(e.starts_with(FILE) && e.contains("with_values"), "{e}");
        let cut = TEXT.replacen(
            "as_root = true",
            "as_root = true\nrisk = \"moderate\"\nwhy = \"x\"",
            1,
        );
        let e = parse(&cut).expect_err("two risks");
        assert!(e.contains("wrapper `sudo`"), "{e}");
    }
}
