//! The git rules as data: `crates/policy/src/rules/git.toml`, compiled in, read
//! once per process. It lists the global options, the configuration keys,
//! and for each subcommand its options and its rule; each entry carries
//! examples that the real classifier must decide as written. A file that does
//! not parse, a malformed entry or an example decided otherwise is an error
//! naming the file and the entry ([`checked`]): the callers then judge every
//! git command unclassifiable (fail-close), and `cargo test` fails.

use crate::model::Risk;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// A flag.
    No,
    /// A required value: attached (`--x=v`, `-xV`) or the next argument.
    Value,
    /// An optional value, attached only (`--x=v`, `-xV`).
    Attached,
    /// An optional value: attached, or the next argument when there is one
    /// (`git branch --contains [<commit>]`).
    LastArg,
}

/// What an option means to the risk rules: its list's key in the rules
/// file, whose header says what each means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tag {
    Plain,
    Force,
    DryRun,
    Delete,
    AllRefs,
    Tags,
    AddAll,
    Integrate,
    Hard,
    ResetMerge,
    ResetMode,
    BranchDelete,
    BranchForceDelete,
    BranchMove,
    BranchForceMove,
    BranchList,
    BranchUpstream,
    NewBranch,
    ResetBranch,
    Message,
    RunsProgram,
    WritesPath,
    OutsideRepo,
    Discards,
    Config,
}

/// Why the `git` tool refuses an option (a plan error): its key in the
/// rules file (`refused.NAME`, `[refusals]`), which gives its reason
/// ([`Refusal::why`]) and its weight in a bash step ([`Refusal::in_bash`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Refusal {
    Gpg,
    Interactive,
    ExtDiff,
    Textconv,
    WritesFile,
    NoIndex,
    OrderFile,
    Message,
    MessageFile,
    TemplateFile,
    RemoteProgram,
    Editor,
    Pager,
    /// An argument holds a NUL byte.
    Nul,
}

/// What a refused option of the tool amounts to in a bash step, where git
/// runs as written and the tool's restrictions do not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InBash {
    /// Nothing more than the subcommand's own risk (reads a file, sets the message).
    Plain,
    /// Runs programs the repository's configuration names (like its hooks): at least moderate.
    RunsConfigured,
    /// Runs a program written on the command line: unclassifiable.
    RunsProgram,
    /// Writes a file named on the command line: dangerous.
    WritesFile,
}

/// A `[refusals]` row.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RefusalRule {
    why: String,
    in_bash: InBash,
}

impl Refusal {
    /// Why the tool refuses it (fail-close when the rules do not load).
    pub fn why(self) -> &'static str {
        raw().refusals.get(&self).map_or("is refused", |r| &r.why)
    }

    /// What it amounts to in a bash step.
    pub fn in_bash(self) -> InBash {
        raw()
            .refusals
            .get(&self)
            .map_or(InBash::RunsProgram, |r| r.in_bash)
    }
}

/// The file, for error messages.
pub const FILE: &str = "crates/policy/src/rules/git.toml";
const TEXT: &str = include_str!("../rules/git.toml");

/// What an option means: a tag the risk rules read, or why the tool refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    Known(Tag),
    Refused(Refusal),
}

/// One option of a subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptSpec {
    /// The full name (`--force`, `-f`).
    pub name: String,
    /// How it takes a value.
    pub takes: Takes,
    /// What it means.
    pub meaning: Meaning,
}

/// What a subcommand does: the key of its implied cases in the rules
/// file's `[rules]`, whose header says what each means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
pub enum Rule {
    Operation,
    Reads,
    Network,
    Writes,
    Dangerous,
    RunsCommands,
    Cases,
    Custom,
}

/// A fact a case's condition tests (written as in the rules file's header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// An option with this tag (`force` and `dry-run` also by the tool's parameters).
    Tag(Tag),
    /// An option of this full name, with this value when one is written (`--prune=now`).
    Name(String, Option<String>),
    /// The number of positionals compared (`<`, `=`, `>`) with a number.
    Args(char, usize),
    /// Paths after `--`.
    Paths,
    /// Paths given outside the arguments (the tool's `files`).
    Files,
    /// A refspec after the repository starts with `+`.
    PlusRefspec,
    /// [`super::PushTarget`]: a forced refspec, a deletion, an unknown
    /// destination, a default branch among the destinations, any branch.
    PushForced,
    PushDeletes,
    PushUnknown,
    PushDefault,
    PushBranches,
}

/// One case of a subcommand: when any group of its condition holds (each
/// group all of its atoms, `true` when negated), this risk and reason. An
/// empty condition always holds.
#[derive(Debug, Clone)]
pub struct Case {
    pub when: Vec<Vec<(bool, Atom)>>,
    pub risk: Risk,
    /// The reason; `{name}`, `{TAG}` (the option's full name), `{push-unknown}`,
    /// `{push-default}` and `{push-branches}` are filled in.
    pub why: String,
    /// Set when the verdict is unclassifiable: why (filled in the same way).
    pub unclassifiable: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[serde(rename = "if", default)]
    when: String,
    risk: Risk,
    why: String,
    #[serde(default)]
    unclassifiable: Option<String>,
}

/// A tag of the rules file by its name (`dry-run`).
pub fn tag_named(s: &str) -> Option<Tag> {
    use serde::de::{IntoDeserializer, value::Error};
    Tag::deserialize(IntoDeserializer::<Error>::into_deserializer(s)).ok()
}

fn atom(s: &str) -> Result<Atom, String> {
    let push = [
        ("push-forced", Atom::PushForced),
        ("push-deletes", Atom::PushDeletes),
        ("push-unknown", Atom::PushUnknown),
        ("push-default", Atom::PushDefault),
        ("push-branches", Atom::PushBranches),
        ("paths", Atom::Paths),
        ("files", Atom::Files),
        ("plus-refspec", Atom::PlusRefspec),
    ];
    if let Some((_, a)) = push.into_iter().find(|(n, _)| *n == s) {
        return Ok(a);
    }
    if s.starts_with('-') {
        let (name, value) = s.split_once('=').map_or((s, None), |(n, v)| (n, Some(v)));
        return Ok(Atom::Name(name.to_owned(), value.map(str::to_owned)));
    }
    let bad =
        || format!("`{s}` is not a condition (a tag, `-x`, `--name[=v]`, `args<N`, `paths`, ...)");
    if let Some(rest) = s.strip_prefix("args") {
        let mut c = rest.chars();
        let op = c.next().filter(|o| "<=>".contains(*o)).ok_or_else(bad)?;
        return Ok(Atom::Args(op, c.as_str().parse().map_err(|_| bad())?));
    }
    tag_named(s).map(Atom::Tag).ok_or_else(bad)
}

/// Reads a case; `why` is the entry's, for `{why}`.
fn case(c: &CaseFile, why: &str) -> Result<Case, String> {
    let when = c
        .when
        .split('|')
        .filter(|_| !c.when.trim().is_empty())
        .map(|any| {
            any.split('&')
                .map(|a| {
                    let a = a.trim();
                    let (neg, a) = a.strip_prefix('!').map_or((false, a), |x| (true, x));
                    Ok((neg, atom(a)?))
                })
                .collect()
        })
        .collect::<Result<_, String>>()?;
    let fill = |text: &String| {
        let text = text.replace("{why}", why);
        let mut rest = text.as_str();
        while let Some((_, tail)) = rest.split_once('{') {
            let (key, after) = tail.split_once('}').unwrap_or((tail, ""));
            let known = ["name", "push-unknown", "push-default", "push-branches"];
            if !known.contains(&key) && tag_named(key).is_none() {
                return Err(format!("`{{{key}}}` in `{text}` is not a placeholder"));
            }
            rest = after;
        }
        Ok(text)
    };
    Ok(Case {
        when,
        risk: c.risk,
        why: fill(&c.why)?,
        unclassifiable: c.unclassifiable.as_ref().map(fill).transpose()?,
    })
}

/// One subcommand (or `subcommand verb`) and how to read it.
#[derive(Debug, Clone)]
pub struct Sub {
    /// `rebase`, or `remote add`.
    pub name: String,
    /// The rule.
    pub rule: Rule,
    /// Completes the reason.
    pub why: String,
    /// Its options: those of its groups, then its own.
    pub options: Vec<OptSpec>,
    /// Its cases, then its rule's.
    pub cases: Vec<Case>,
    /// How many of them are its own (each must decide one of its examples).
    pub own: usize,
    /// Whether git accepts abbreviated long options.
    pub abbrev: bool,
    /// Whether `-<n>` means `-n <n>`.
    pub counts: bool,
    /// Whether `--` introduces paths.
    pub paths: bool,
}

/// Git's global options (before the subcommand).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Globals {
    /// Options that take the next word (or `=value` for the long ones).
    pub with_value: Vec<String>,
    /// Options that only print.
    pub info: Vec<String>,
    /// Flags that change nothing plangate judges.
    pub flags: Vec<String>,
    #[serde(default)]
    pub(super) examples: Vec<String>,
    #[serde(default)]
    not_examples: Vec<String>,
}

/// Configuration keys (lowercase patterns; `*` is any part).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Harmless to set.
    pub harmless: Vec<String>,
    /// Make git run a program.
    pub runs_programs: Vec<String>,
    /// Written by `git init` and `git clone` into a repository's own file.
    pub layout: Vec<String>,
    #[serde(default)]
    pub(super) examples: Vec<String>,
    #[serde(default)]
    pub(super) stored_examples: Vec<String>,
}

/// The loaded rules.
#[derive(Debug, Default)]
pub struct Rules {
    pub globals: Globals,
    pub refusals: BTreeMap<Refusal, RefusalRule>,
    pub config: Config,
    pub subs: Vec<Sub>,
    /// (entry, examples, not_examples) to check after loading.
    pub(super) examples: Vec<(String, Vec<String>, Vec<String>)>,
}

impl Rules {
    /// The entry named `name` (`stash push`, `remote add`).
    pub fn sub(&self, name: &str) -> Option<&Sub> {
        self.subs.iter().find(|s| s.name == name)
    }
}

/// Option lists keyed by meaning, as written in the file.
#[derive(Debug, Default, Deserialize)]
struct Lists {
    #[serde(default)]
    refused: BTreeMap<Refusal, Vec<String>>,
    #[serde(default)]
    pub(super) examples: Vec<String>,
    #[serde(flatten)]
    tags: BTreeMap<Tag, Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct SubFile {
    name: String,
    rule: Rule,
    #[serde(default)]
    why: Option<String>,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default = "yes")]
    abbrev: bool,
    #[serde(default)]
    counts: bool,
    #[serde(default = "yes")]
    paths: bool,
    #[serde(default)]
    cases: Vec<CaseFile>,
    #[serde(default)]
    not_examples: Vec<String>,
    #[serde(flatten)]
    lists: Lists,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    globals: Globals,
    rules: BTreeMap<Rule, Vec<CaseFile>>,
    refusals: BTreeMap<Refusal, RefusalRule>,
    config: Config,
    groups: BTreeMap<String, Lists>,
    subcommands: Vec<SubFile>,
}

/// Reads `"--unified <v>"`, `"--stat[=v]"`, `"--contains [v]"` or `"--patch"`.
fn spelling(s: &str) -> Result<(String, Takes), String> {
    let (name, takes) = if let Some(n) = s.strip_suffix(" <v>") {
        (n, Takes::Value)
    } else if let Some(n) = s.strip_suffix("[=v]") {
        (n, Takes::Attached)
    } else if let Some(n) = s.strip_suffix(" [v]") {
        (n, Takes::LastArg)
    } else {
        (s, Takes::No)
    };
    let short = name.len() == 2 && name.starts_with('-') && name != "--";
    let long = name.len() > 2
        && name.starts_with("--")
        && name[2..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    if short || long {
        Ok((name.to_owned(), takes))
    } else {
        Err(format!(
            "`{s}` is not an option spelling (`-x`, `--name`, `--name <v>`, `--name[=v]`, `--name [v]`)"
        ))
    }
}

fn options_of(lists: &Lists) -> Result<Vec<OptSpec>, String> {
    let tagged = lists
        .tags
        .iter()
        .flat_map(|(t, v)| v.iter().map(move |s| (s, Meaning::Known(*t))));
    let refused = lists
        .refused
        .iter()
        .flat_map(|(r, v)| v.iter().map(move |s| (s, Meaning::Refused(*r))));
    tagged
        .chain(refused)
        .map(|(s, meaning)| {
            let (name, takes) = spelling(s)?;
            Ok(OptSpec {
                name,
                takes,
                meaning,
            })
        })
        .collect()
}

/// Parses the file and checks each entry's shape (not yet its examples).
fn parse(text: &str) -> Result<Rules, String> {
    let file: File = toml::from_str(text).map_err(|e| format!("{FILE}: {e}"))?;
    let mut groups = BTreeMap::new();
    let mut examples = Vec::new();
    for (name, lists) in &file.groups {
        let opts = options_of(lists).map_err(|e| format!("{FILE}: group `{name}`: {e}"))?;
        groups.insert(name.as_str(), opts);
        examples.push((
            format!("group `{name}`"),
            lists.examples.clone(),
            Vec::new(),
        ));
    }
    for (rule, cases) in &file.rules {
        for c in cases {
            case(c, "").map_err(|e| format!("{FILE}: rule {rule:?}: {e}"))?;
        }
    }
    let mut subs: Vec<Sub> = Vec::new();
    for s in &file.subcommands {
        let at = format!("{FILE}: subcommand `{}`", s.name);
        if subs.iter().any(|x| x.name == s.name) {
            return Err(format!("{at}: a second entry of that name"));
        }
        let mut options = Vec::new();
        for g in &s.options {
            let opts = groups
                .get(g.as_str())
                .ok_or_else(|| format!("{at}: no group `{g}`"))?;
            options.extend(opts.iter().cloned());
        }
        options.extend(options_of(&s.lists).map_err(|e| format!("{at}: {e}"))?);
        check_options(&options).map_err(|e| format!("{at}: {e}"))?;
        let refused = options.iter().filter_map(|o| match o.meaning {
            Meaning::Refused(r) => Some(r),
            Meaning::Known(_) => None,
        });
        if let Some(r) = refused
            .chain([Refusal::Nul])
            .find(|r| !file.refusals.contains_key(r))
        {
            return Err(format!("{at}: no [refusals] row for {r:?}"));
        }
        let why = s.why.clone().unwrap_or_default();
        let own = s.cases.len();
        let implied = file.rules.get(&s.rule).map_or(&[][..], Vec::as_slice);
        let needs_why = implied.iter().any(|c| c.why.contains("{why}"));
        if needs_why == why.is_empty() {
            return Err(format!(
                "{at}: `why` is {} for rule {:?}",
                if needs_why { "required" } else { "not read" },
                s.rule
            ));
        }
        let cases = s
            .cases
            .iter()
            .chain(implied)
            .map(|c| case(c, &why))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{at}: {e}"))?;
        if s.rule != Rule::Custom && cases.last().is_none_or(|c| !c.when.is_empty()) {
            return Err(format!("{at}: its last case must have no `if`"));
        }
        if s.lists.examples.is_empty() {
            return Err(format!("{at}: no examples"));
        }
        examples.push((
            format!("subcommand `{}`", s.name),
            s.lists.examples.clone(),
            s.not_examples.clone(),
        ));
        subs.push(Sub {
            name: s.name.clone(),
            rule: s.rule,
            why,
            options,
            cases,
            own,
            abbrev: s.abbrev,
            counts: s.counts,
            paths: s.paths,
        });
    }
    for (what, list) in [
        ("globals", &file.globals.with_value),
        ("globals", &file.globals.info),
        ("globals", &file.globals.flags),
    ] {
        if let Some(bad) = list.iter().find(|o| !o.starts_with('-')) {
            return Err(format!("{FILE}: {what}: `{bad}` is not an option"));
        }
    }
    examples.push((
        "globals".to_owned(),
        file.globals.examples.clone(),
        file.globals.not_examples.clone(),
    ));
    examples.push(("config".to_owned(), file.config.examples.clone(), vec![]));
    Ok(Rules {
        globals: file.globals,
        refusals: file.refusals,
        config: file.config,
        subs,
        examples,
    })
}

pub(super) fn first_word(s: &str) -> &str {
    s.split(' ').next().unwrap_or(s)
}

/// Two rows of one name must say the same (git reads an option one way).
fn check_options(options: &[OptSpec]) -> Result<(), String> {
    for (i, o) in options.iter().enumerate() {
        if let Some(other) = options[..i].iter().find(|p| p.name == o.name)
            && other != o
        {
            return Err(format!(
                "`{}` is listed twice with different meanings",
                o.name
            ));
        }
    }
    Ok(())
}

pub(super) fn loaded() -> &'static Result<Rules, String> {
    static R: OnceLock<Result<Rules, String>> = OnceLock::new();
    R.get_or_init(|| parse(TEXT))
}

/// The rules as parsed, examples not checked (empty when the file does not
/// parse, so every option and subcommand is unknown): for the rules' own use
/// below the entry points, which call [`checked`].
pub fn raw() -> &'static Rules {
    static EMPTY: OnceLock<Rules> = OnceLock::new();
    match loaded() {
        Ok(r) => r,
        Err(_) => EMPTY.get_or_init(Rules::default),
    }
}

/// The names of the subcommands of `git NAME` (`stash` → push, save, ...).
pub fn verbs(name: &str) -> Vec<&'static str> {
    raw()
        .subs
        .iter()
        .filter_map(|s| s.name.strip_prefix(name)?.strip_prefix(' '))
        .collect()
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
