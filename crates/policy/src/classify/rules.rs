//! The bash classifier's command tables as data: `crates/policy/src/rules/bash.toml`,
//! compiled in, read once per process. Each entry carries examples that the
//! real classifier must decide as written; a file that does not parse, a
//! malformed entry or an example decided otherwise is an error naming the
//! file and the entry ([`checked`]): [`super::classify_bash`] then judges
//! every command unclassifiable (fail-close), and `cargo test` fails.

use crate::model::Risk;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The file, for error messages.
pub const FILE: &str = "crates/policy/src/rules/bash.toml";
const TEXT: &str = include_str!("../rules/bash.toml");

/// A list of command names (or words).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct Names(Vec<String>);

impl Names {
    /// Whether `name` is in the list.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|n| n == name)
    }

    /// Whether one of the list is a prefix of `word`.
    pub fn prefixes(&self, word: &str) -> bool {
        self.0.iter().any(|p| word.starts_with(p.as_str()))
    }

    /// Whether a pattern of the list (`BASH_*`, `CARGO_TARGET_*_RUNNER`)
    /// matches `name`: `*` stands for any part (of at least nothing).
    pub fn pattern_matches(&self, name: &str) -> bool {
        let fits = |(pre, suf): (&str, &str)| {
            name.len() >= pre.len() + suf.len() && name.starts_with(pre) && name.ends_with(suf)
        };
        self.0.iter().filter_map(|p| p.split_once('*')).any(fits)
    }

    /// Whether there are words and every one is a known word of the list
    /// (`--version`, `-h`: only prints its version or help).
    pub fn all_of<'a>(&self, words: impl ExactSizeIterator<Item = Option<&'a str>>) -> bool {
        words.len() > 0 && words.into_iter().all(|w| w.is_some_and(|w| self.has(w)))
    }

    /// Whether `name` is in the list or matches one of its patterns.
    pub fn matches(&self, name: &str) -> bool {
        self.has(name) || self.pattern_matches(name)
    }

    /// The names.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// The names, for options parsing.
    pub fn strs(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}

/// A section of word lists (`names`, `reads`, ...; the keys of [`TABLES`]).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Table {
    #[serde(default)]
    examples: Vec<String>,
    #[serde(flatten)]
    lists: BTreeMap<String, Names>,
}

/// The sections made of word lists, and the lists each holds (all of them):
/// one section a line, `section: list list ...`.
const TABLES: &str = "network-clients: names
shells: names with_value
cloud: names info reads changes read_verbs value_flags read_pairs by-first by-first-not by-verb by-any-verb any-verb-reads by-flags check_flags
containers: names info reads destroys runs groups registry host_flags host_options host_prefixes
shell-options: shopt set_o
words: find-tests git-remote netcat-exec netcat-exec-prefixes ssh-runs ssh-loads tar-extracts tar-writes cmake-tools cmake-reads declare
places: tmp protected system dev-sinks dev-net dev-disks";

/// The sections of [`TABLES`] and their lists.
fn tables() -> impl Iterator<Item = (&'static str, Vec<&'static str>)> {
    let line = |l: &'static str| l.split_once(": ").map(|(s, k)| (s, k.split(' ').collect()));
    TABLES.lines().filter_map(line)
}

/// One `[[options]]`, `[[wrappers]]` or `[[interpreters]]` row (the keys:
/// the comments of the rules file). With `risk` or an act ([`Program::acts`]),
/// the row alone judges its program ([`super::files`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Program {
    pub names: Names,
    pub with_value: Names,
    pub output_at: Option<usize>,
    pub writes: Names,
    pub runs: Names,
    pub config: Names,
    pub scripts: Names,
    pub ssh_options: Names,
    pub templates: Names,
    pub when: Vec<Verdict>,
    pub operands: Option<String>,
    pub operands_with: Names,
    pub skip: usize,
    pub skip_unless: Names,
    pub recursive: Names,
    pub dir: Names,
    pub dir_with: Names,
    pub operand_prefix: Option<String>,
    pub not_operands: Names,
    pub operand: Option<Verdict>,
    pub output_missing: Option<String>,
    pub empty: Option<Verdict>,
    pub info: Names,
    pub risk: Option<Outcome>,
    pub why: String,
    pub script: Names,
    pub no_command: Names,
    pub chdir: Names,
    pub split_string: Names,
    pub joined_unless: Names,
    pub script_only: bool,
    pub pipe_script: bool,
    pub as_root: bool,
    pub code: Names,
    pub code_subcommands: Names,
    pub run_subcommands: Names,
    pub preload: Names,
    pub module: Names,
    pub file: Names,
    examples: Vec<String>,
}

/// A risk and why; in `when`, when one of the flags `with` is given.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    #[serde(default)]
    pub with: Names,
    pub risk: Outcome,
    pub why: String,
}

/// A developer tool judged by subcommand (the keys: the rules file's
/// `[[subcommands]]` comment; `other` is required).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Subcommands {
    pub names: Names,
    pub with_value: Names,
    pub at: SubAt,
    pub network: Names,
    pub runs: Names,
    pub runs_with_value: Names,
    groups: Vec<SubGroup>,
    other: String,
    examples: Vec<String>,
}

/// Where a `[[subcommands]]` entry finds the subcommand.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubAt {
    #[default]
    FirstNonOption,
    FirstWord,
    FirstTwo,
    AfterGlobals,
}

/// Subcommands of one risk; with `with`, only when an argument is one of
/// them; with `unless`, only when none is.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubGroup {
    risk: Risk,
    why: String,
    subs: Names,
    #[serde(default)]
    with: Names,
    #[serde(default)]
    unless: Names,
}

impl Subcommands {
    /// The risk of `sub` (`sub second` first, for `go mod verify`) given
    /// the words `args`, and why: the first group that holds it and whose
    /// conditions hold; moderate (`other`) when none does.
    pub fn judge(&self, sub: &str, second: &str, args: &[Option<&str>]) -> (Risk, &str) {
        let has = |n: &Names| args.iter().flatten().any(|a| n.has(a));
        let holds = |g: &SubGroup| (g.with.0.is_empty() || has(&g.with)) && !has(&g.unless);
        let pair = format!("{sub} {second}");
        let named = |g: &SubGroup, s: &str| g.subs.has(s) || g.subs.has("*");
        let group = |s: &&str| self.groups.iter().find(|g| named(g, s) && holds(g));
        let found = [pair.as_str(), sub].iter().find_map(group);
        found.map_or((Risk::Moderate, &self.other), |g| (g.risk, &g.why))
    }
}

/// Variables that change what runs, by how (see vars.rs).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Variables {
    pub search_path: Names,
    pub files: Names,
    pub command: Names,
    pub plain: Names,
    pub shell: Names,
    pub output_file: Names,
    pub git_key: Names,
    /// Options of an interpreter or compiler.
    pub options: Vec<VarOptions>,
    examples: Vec<String>,
}

/// Variables holding options, and the options that load code.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VarOptions {
    pub names: Names,
    pub loads: Names,
}

impl Program {
    /// Whether the entry says what the program does (the keys files.rs reads).
    fn acts(&self) -> bool {
        let verdicts = self.empty.is_some() || self.operand.is_some() || !self.when.is_empty();
        let outputs = self.operands.is_some() || self.output_at.is_some() || !self.dir.0.is_empty();
        verdicts || outputs || !self.info.0.is_empty()
    }

    /// The options that take the next word (of every kind of row; in this
    /// order: an abbreviated long option names the first it prefixes).
    pub fn valued(&self) -> Vec<&str> {
        let code = [&self.code, &self.with_value, &self.module, &self.file];
        let values = [&self.preload, &self.script, &self.writes, &self.runs];
        let more = [&self.config, &self.scripts, &self.dir, &self.chdir];
        let last = [&self.split_string, &self.ssh_options, &self.templates];
        let all = code.into_iter().chain(values).chain(more).chain(last);
        all.flat_map(Names::iter).collect()
    }

    /// A wrapper's own risk and why.
    pub fn own_risk(&self) -> Option<(Outcome, &str)> {
        if self.as_root {
            return Some((Outcome::Dangerous, "runs a command as another user"));
        }
        self.risk.map(|r| (r, self.why.as_str()))
    }
}

/// What an effect decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Safe,
    Moderate,
    Dangerous,
    Blocked,
    Unclassifiable,
}

/// The effect table of one action on a path (effects.rs): the first row
/// naming the place (or `*`) whose conditions all hold decides.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effects {
    pub act: String,
    pub rows: Vec<EffectRow>,
    #[serde(default)]
    examples: Vec<String>,
}

/// What kind of place a path names; in the rules file's `[[effects]]` rows,
/// by its kebab-case name (`dev-sink`, `ws-root`) or `*` (any).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Loc {
    /// `/dev/null`, `/dev/stdout`, `/dev/fd/N`, ...: harmless sinks.
    DevSink,
    /// A disk device (`/dev/sda`, `/dev/nvme0n1`, ...).
    DevDisk,
    /// bash's `/dev/tcp/...` and `/dev/udp/...` network pseudo-files.
    DevNet,
    /// Any other device.
    DevOther,
    /// `/etc` and `/boot`: writes are blocked.
    Protected,
    /// System directories (`/usr`, `/var`, `/opt`, `/lib`, `/bin`, `/sbin`, ...).
    System,
    /// `/` itself.
    FsRoot,
    /// The home directory itself.
    Home,
    /// The workspace root itself.
    WsRoot,
    /// Strictly inside the workspace.
    Inside,
    /// A strict ancestor of the workspace other than `/`.
    WsAncestor,
    /// Anywhere else.
    Outside,
    /// A step-private folder (`$PLANGATE_STEP_ARTIFACTS`, `$TMPDIR`) or below:
    /// writable at every sandbox level (`paths::Target::scratch` says which).
    Scratch,
    /// Not known statically.
    #[default]
    Unknown,
    /// In an `[[effects]]` row only: every place.
    #[serde(rename = "*")]
    Any,
}

impl Loc {
    /// `/`, a system or protected folder, a device but a sink: a path there
    /// is worse than one only known at run time.
    pub(super) fn system(self) -> bool {
        use Loc::*;
        matches!(
            self,
            FsRoot | System | Protected | DevDisk | DevNet | DevOther
        )
    }
}

/// One row: places, conditions, outcome and why (`{p}`: the path,
/// `{scratch}`: the step folder).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectRow {
    pub(super) at: Vec<Loc>,
    #[serde(default)]
    pub(super) when: Vec<Condition>,
    pub risk: Outcome,
    pub why: String,
}

/// What must hold of the path for an `[[effects]]` row: a glob or not, a glob
/// of only wildcards, a top-level directory (`/usr`), a recursive act.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    Glob,
    NotGlob,
    CoversAll,
    TopLevel,
    Recursive,
}

/// The actions `[[effects]]` tables are for: each has one. The `operands`
/// of an `[[options]]` entry are one of them, or `delete` (as a tree, a glob
/// or a file).
const ACTS: &str = "overwrite partition write delete-tree delete-glob delete-file chmod shred";

fn acts() -> impl Iterator<Item = &'static str> {
    ACTS.split(' ')
}

/// The loaded tables.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Rules {
    pub effects: Vec<Effects>,
    /// Programs: option tables, and the rows that judge some of them.
    pub options: Vec<Program>,
    pub subcommands: Vec<Subcommands>,
    pub wrappers: Vec<Program>,
    pub interpreters: Vec<Program>,
    pub variables: Variables,
    /// The sections of [`TABLES`].
    #[serde(flatten)]
    tables: BTreeMap<String, Table>,
}

impl Rules {
    /// The list `key` of section `section` (empty when the file has none:
    /// a loaded file has every list of [`TABLES`]).
    pub fn list(&self, section: &str, key: &str) -> &Names {
        static NONE: Names = Names(Vec::new());
        let known = tables().any(|(s, keys)| s == section && keys.contains(&key));
        debug_assert!(
            known,
            "the Rust asks for list `{key}` of `{section}`, not in TABLES"
        );
        let t = self.tables.get(section);
        t.and_then(|t| t.lists.get(key)).unwrap_or(&NONE)
    }

    /// The `[[interpreters]]` row of `name` (`python3.X` is `python3`).
    pub fn interpreter(&self, name: &str) -> Option<&Program> {
        let digits = |v: &&str| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.');
        let versioned = name.strip_prefix("python").filter(digits);
        let name = if versioned.is_some() { "python3" } else { name };
        self.interpreters.iter().find(|i| i.names.has(name))
    }

    /// The wrapper named `name`.
    pub fn wrapper(&self, name: &str) -> Option<&Program> {
        self.wrappers.iter().find(|w| w.names.has(name))
    }

    /// The `[[options]]` entry of `name` when it alone judges the program.
    pub fn judged(&self, name: &str) -> Option<&Program> {
        self.program(name).filter(|p| p.risk.is_some() || p.acts())
    }

    /// The `[[options]]` entry of `name` (its names may be patterns: `mkfs*`).
    pub fn program(&self, name: &str) -> Option<&Program> {
        self.options.iter().find(|p| p.names.matches(name))
    }

    /// The subcommand table of `name`.
    pub fn subcommands(&self, name: &str) -> Option<&Subcommands> {
        self.subcommands.iter().find(|t| t.names.has(name))
    }

    /// The three lists of [`Program`] rows, by kind.
    fn programs(&self) -> [(&'static str, &[Program]); 3] {
        let (o, w, i) = (&self.options, &self.wrappers, &self.interpreters);
        [("options", o), ("wrapper", w), ("interpreter", i)]
    }

    /// (entry, its names, its examples), for the checks.
    fn entries(&self) -> Vec<(String, Names, &[String])> {
        let mut out = Vec::new();
        for (section, t) in &self.tables {
            let names = match section.as_str() {
                "shell-options" => Names(vec!["shopt".into(), "set".into()]),
                "words" | "places" => Names(vec!["*".into()]),
                _ => self.list(section, "names").clone(),
            };
            out.push((section.clone(), names, t.examples.as_slice()));
        }
        let any = Names(vec!["*".into()]);
        out.push(("variables".into(), any.clone(), &self.variables.examples));
        let named = |kind: &str, names: &Names| {
            let first = names.0.first().map_or("?", String::as_str);
            format!("{kind} `{first}`")
        };
        for t in &self.subcommands {
            out.push((named("subcommands", &t.names), t.names.clone(), &t.examples));
        }
        for e in &self.effects {
            out.push((format!("effects `{}`", e.act), any.clone(), &e.examples));
        }
        for (kind, list) in self.programs() {
            for p in list {
                out.push((named(kind, &p.names), p.names.clone(), &p.examples));
            }
        }
        out
    }
}

/// Parses the file and checks each entry's shape (not yet its examples).
fn parse(text: &str) -> Result<Rules, String> {
    let r: Rules = toml::from_str(text).map_err(|e| format!("{FILE}: {e}"))?;
    for (section, t) in &r.tables {
        let Some((_, keys)) = tables().find(|(n, _)| n == section) else {
            return Err(format!("{FILE}: unknown section `{section}`"));
        };
        if let Some(k) = t.lists.keys().find(|k| !keys.contains(&k.as_str())) {
            return Err(format!("{FILE}: {section}: unknown list `{k}`"));
        }
        if let Some(k) = keys.iter().find(|k| !t.lists.contains_key(**k)) {
            return Err(format!("{FILE}: {section}: no list `{k}`"));
        }
    }
    if let Some((s, _)) = tables().find(|(s, _)| !r.tables.contains_key(*s)) {
        return Err(format!("{FILE}: no section `{s}`"));
    }
    for (entry, names, examples) in r.entries() {
        if names.0.is_empty() {
            return Err(format!("{FILE}: {entry}: no names"));
        }
        if examples.is_empty() {
            return Err(format!("{FILE}: {entry}: no examples"));
        }
    }
    if let Some(t) = r.subcommands.iter().find(|t| t.other.is_empty()) {
        let name = t.names.iter().next().unwrap_or("?");
        return Err(format!("{FILE}: subcommands `{name}`: no `other`"));
    }
    for act in acts() {
        if !r.effects.iter().any(|e| e.act == act) {
            return Err(format!("{FILE}: no `[[effects]]` table for `{act}`"));
        }
    }
    if let Some(e) = r.effects.iter().find(|e| !acts().any(|a| a == e.act)) {
        let (act, all) = (&e.act, ACTS.replace(' ', ", "));
        return Err(format!(
            "{FILE}: effects `{act}`: unknown act (one of {all})"
        ));
    }
    for (kind, list) in r.programs() {
        for p in list {
            let name = p.names.iter().next().unwrap_or("?");
            check_program(list, kind, p).map_err(|e| format!("{FILE}: {kind} `{name}`: {e}"))?;
        }
    }
    Ok(r)
}

/// Checks one `[[options]]` or `[[wrappers]]` entry.
fn check_program(list: &[Program], kind: &str, p: &Program) -> Result<(), String> {
    let first = |n: &str| list.iter().find(|q| q.names.matches(n));
    if let Some(n) = (p.names.iter()).find(|n| first(n).is_some_and(|q| !std::ptr::eq(p, q))) {
        return Err(format!("`{n}` has an earlier entry"));
    }
    let set = |lists: &[&Names]| lists.iter().any(|n| !n.0.is_empty());
    let wrapper_keys = [&p.script, &p.no_command, &p.chdir, &p.split_string];
    let wraps = p.as_root || p.script_only || p.pipe_script || set(&wrapper_keys);
    let wraps = wraps || set(&[&p.joined_unless]);
    let interprets = set(&[&p.code, &p.code_subcommands, &p.module, &p.file]);
    let foreign = match kind {
        "options" => wraps || interprets,
        // A wrapper reads no `scripts` (its options are read by `leading`).
        "wrapper" => p.acts() || interprets || !p.scripts.0.is_empty(),
        _ => wraps || !p.when.is_empty() || p.empty.is_some(),
    };
    let kinds = "([[options]], [[wrappers]], [[interpreters]])";
    if foreign {
        return Err(format!("a key of another kind of entry {kinds}"));
    }
    let unknown = |o: &&str| *o != "delete" && !acts().any(|a| a == *o);
    if let Some(o) = p.operands.as_deref().filter(unknown) {
        let all = ACTS.replace(' ', ", ");
        return Err(format!("unknown operands `{o}` (delete or one of {all})"));
    }
    if p.as_root && p.risk.is_some() {
        return Err("`as_root` already sets the risk".into());
    }
    if p.risk.is_some() == p.why.is_empty() {
        return Err("`risk` and `why` go together".into());
    }
    Ok(())
}

/// Runs every example of `r` through the classifier (which reads the loaded
/// tables: `r` is them, except in the tests of this checker).
fn check_examples(r: &Rules) -> Result<(), String> {
    let ws = std::path::Path::new("/work/ws");
    let home = Some(std::path::Path::new("/home/ci"));
    let ctx = super::ClassifyContext {
        workspace: ws,
        working_dir: ws,
        home,
    };
    for (entry, names, examples) in r.entries() {
        for e in examples {
            let at = |why: String| format!("{FILE}: {entry}: example `{e}`: {why}");
            let (want, line) = e
                .split_once(": ")
                .ok_or_else(|| at("write `LABEL: COMMAND`".to_owned()))?;
            let first = line.split_whitespace().next().unwrap_or_default();
            let named = names.has("*") || names.matches(first);
            if !named {
                return Err(at(format!("`{first}` is not one of the entry's names")));
            }
            let c = super::classify_unchecked(line, &ctx);
            let (label, reason) = (c.label(), c.reason());
            if label != want {
                return Err(at(format!("the classifier says {label} ({reason})")));
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
pub fn raw() -> &'static Rules {
    static EMPTY: OnceLock<Rules> = OnceLock::new();
    match loaded() {
        Ok(r) => r,
        Err(_) => EMPTY.get_or_init(Rules::default),
    }
}

/// Ok once the examples are checked (once per process), or why the tables
/// cannot be used.
pub fn checked() -> Result<(), &'static str> {
    static C: OnceLock<Result<(), String>> = OnceLock::new();
    let r = loaded().as_ref().map_err(String::as_str)?;
    let checked = C.get_or_init(|| check_examples(r));
    checked.as_ref().map(|_| ()).map_err(String::as_str)
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
