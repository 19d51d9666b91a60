//! The git rules as data: `crates/policy/src/rules/git.toml`, compiled in, read
//! once per process. It lists the global options, the configuration keys,
//! and for each subcommand its options and its rule; each entry carries
//! examples that the real classifier must decide as written. A file that does
//! not parse, a malformed entry or an example decided otherwise is an error
//! naming the file and the entry ([`super::checked`]): the callers then judge
//! every git command unclassifiable (fail-close), and `cargo test` fails.
//! serde reads the file into these types; [`parse`] then joins each
//! subcommand's option groups and its rule's cases, and checks what serde cannot.

use crate::model::Risk;
use serde::{Deserialize, Deserializer};
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
#[allow(missing_docs)]
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
    Info,
    Repo,
}

/// A `[refusals]` row: why the `git` tool refuses the options of a
/// `refused.NAME` list (a plan error), and how they raise a bash step's
/// verdict, where git runs as written (none: the subcommand's own risk).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Refusal {
    why: String,
    #[serde(default)]
    in_bash: Option<Case>,
}

/// Why the tool refuses the options of `refused.NAME` (`nul`: an argument
/// with a NUL byte), and how they raise a bash step's verdict.
pub fn refusal(name: &str) -> (&'static str, Option<&'static Case>) {
    let r = raw().refusals.get(name);
    r.map_or(("is refused", None), |r| (&r.why, r.in_bash.as_ref()))
}

/// The file, for error messages.
pub const FILE: &str = "crates/policy/src/rules/git.toml";
const TEXT: &str = include_str!("../rules/git.toml");

/// What an option means: a tag the risk rules read, or the `[refusals]` row
/// that says why the tool refuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meaning {
    Known(Tag),
    Refused(String),
}

/// One option of a subcommand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptSpec {
    /// The full name (`--force`, `-f`).
    pub name: String,
    pub takes: Takes,
    pub meaning: Meaning,
}

/// The facts about the arguments a condition may name besides options and
/// counts (the rules file's header says what each means).
pub const FACTS: &[&str] = &[
    "paths",
    "files",
    "plus-refspec",
    "push-forced",
    "push-deletes",
    "push-unknown",
    "push-default",
    "push-branches",
    "key-runtime",
    "key-problem",
    "config-problem",
];

/// A fact a case's condition tests (written as in the rules file's header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// An option with this tag (`force` and `dry-run` also by the tool's parameters).
    Tag(Tag),
    /// An option of this full name, with this value when one is written (`--prune=now`).
    Name(String, Option<String>),
    /// The number of positionals compared (`<`, `=`, `>`) with a number.
    Args(char, usize),
    /// One of [`FACTS`].
    Fact(&'static str),
}

/// One case of a subcommand: when any group of its condition holds (each
/// group all of its atoms, `true` when negated), this risk and reason. An
/// empty condition always holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    #[serde(rename = "if", default, deserialize_with = "condition")]
    pub when: Vec<Vec<(bool, Atom)>>,
    pub risk: Risk,
    /// The reason; `{name}`, `{key}` (the first positional), `{TAG}` (the
    /// option's full name) and `{FACT}` (`{push-unknown}`, `{key-problem}`,
    /// ...: what the fact found) are filled in.
    pub why: String,
    /// Set when the verdict is unclassifiable: why (filled in the same way).
    #[serde(default)]
    pub unclassifiable: Option<String>,
}

/// A tag of the rules file by its name (`dry-run`).
pub fn tag_named(s: &str) -> Option<Tag> {
    use serde::de::{IntoDeserializer, value::Error};
    Tag::deserialize(IntoDeserializer::<Error>::into_deserializer(s)).ok()
}

/// Reads an `if`: `A & !B | C`.
fn condition<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<(bool, Atom)>>, D::Error> {
    let s = String::deserialize(d)?;
    let atom = |a: &str| {
        let a = a.trim();
        let (neg, s) = a.strip_prefix('!').map_or((false, a), |x| (true, x));
        let args = s.strip_prefix("args").and_then(|r| {
            let op = r.chars().next().filter(|o| "<=>".contains(*o))?;
            Some(Atom::Args(op, r[1..].parse().ok()?))
        });
        let atom = match FACTS.iter().find(|f| **f == s) {
            Some(f) => Some(Atom::Fact(f)),
            None if s.starts_with('-') => Some(match s.split_once('=') {
                Some((n, v)) => Atom::Name(n.to_owned(), Some(v.to_owned())),
                None => Atom::Name(s.to_owned(), None),
            }),
            None => args.or_else(|| tag_named(s).map(Atom::Tag)),
        };
        atom.map(|x| (neg, x)).ok_or_else(|| {
            format!("`{s}` is not a condition (a tag, `-x`, `--name[=v]`, `args<N`, `paths`, ...)")
        })
    };
    s.split('|')
        .filter(|_| !s.trim().is_empty())
        .map(|any| any.split('&').map(atom).collect())
        .collect::<Result<_, String>>()
        .map_err(serde::de::Error::custom)
}

/// Checks that every `{…}` of a reason is a placeholder [`Case::why`] names.
fn placeholders(text: &str) -> Result<(), String> {
    let keys = text.split('{').skip(1).map(|t| t.split('}').next());
    let known =
        |k: &str| FACTS.contains(&k) || ["name", "key"].contains(&k) || tag_named(k).is_some();
    match keys.flatten().find(|k| !known(k)) {
        Some(k) => Err(format!("`{{{k}}}` in `{text}` is not a placeholder")),
        None => Ok(()),
    }
}

/// Option lists keyed by meaning, as written in the file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Lists {
    #[serde(default)]
    refused: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(flatten)]
    tags: BTreeMap<Tag, Vec<String>>,
}

fn yes() -> bool {
    true
}

/// One subcommand (or `subcommand verb`), or git's global options, and how to read it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Sub {
    /// `rebase`, or `remote add` (empty for the global options).
    #[serde(default)]
    pub name: String,
    /// A key of `[rules]`, whose cases follow the entry's own.
    #[serde(default)]
    pub rule: String,
    /// Completes the reason (`{why}` in its rule's cases).
    #[serde(default)]
    pub why: String,
    /// The option groups it names.
    #[serde(default, rename = "options")]
    groups: Vec<String>,
    /// Whether git accepts abbreviated long options.
    #[serde(default = "yes")]
    pub abbrev: bool,
    /// Whether `-<n>` means `-n <n>`.
    #[serde(default)]
    pub counts: bool,
    /// Whether `--` introduces paths.
    #[serde(default = "yes")]
    pub paths: bool,
    /// Its own cases, then (once loaded) its rule's.
    #[serde(default)]
    pub cases: Vec<Case>,
    /// How many of them are its own (each must decide one of its examples).
    #[serde(skip)]
    pub own: usize,
    #[serde(default)]
    not_examples: Vec<String>,
    #[serde(flatten)]
    lists: Lists,
    /// Its options (once loaded): those of its groups, then its own.
    #[serde(skip)]
    pub options: Vec<OptSpec>,
    /// Whether its options end at the first positional (the global options).
    #[serde(skip)]
    pub stops: bool,
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
    examples: Vec<String>,
    #[serde(default)]
    pub(super) stored_examples: Vec<String>,
}

/// The rules file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Git's global options (before the subcommand).
    pub globals: Sub,
    /// The cases each rule adds after a subcommand's own.
    rules: BTreeMap<String, Vec<Case>>,
    /// The rows that raise the verdict of a subcommand the tool does not run.
    pub raise: Vec<Case>,
    refusals: BTreeMap<String, Refusal>,
    pub config: Config,
    groups: BTreeMap<String, Lists>,
    #[serde(rename = "subcommands")]
    pub subs: Vec<Sub>,
    /// (entry, examples, not_examples) to check after loading.
    #[serde(skip)]
    pub(super) examples: Vec<(String, Vec<String>, Vec<String>)>,
}

impl Rules {
    /// The entry named `name` (`stash push`, `remote add`).
    pub fn sub(&self, name: &str) -> Option<&Sub> {
        self.subs.iter().find(|s| s.name == name)
    }
}

/// The options of a list: `"--unified <v>"` takes a value, `"--stat[=v]"` an
/// attached one, `"--contains [v]"` the next word too; `"--patch"` none.
fn options_of(lists: &Lists) -> Result<Vec<OptSpec>, String> {
    let tagged = lists.tags.iter().map(|(t, v)| (Meaning::Known(*t), v));
    let refused = lists.refused.iter();
    let refused = refused.map(|(r, v)| (Meaning::Refused(r.clone()), v));
    let mut out = Vec::new();
    for (meaning, list) in tagged.chain(refused) {
        for s in list {
            let ends = [(" <v>", Takes::Value), ("[=v]", Takes::Attached)];
            let (name, takes) = (ends.into_iter().chain([(" [v]", Takes::LastArg)]))
                .find_map(|(end, t)| Some((s.strip_suffix(end)?, t)))
                .unwrap_or((s, Takes::No));
            let short = name.len() == 2 && name.starts_with('-') && name != "--";
            let word = |c: char| c.is_ascii_alphanumeric() || c == '-';
            let long = name.len() > 2 && name.starts_with("--") && name[2..].chars().all(word);
            if !short && !long {
                return Err(format!(
                    "`{s}` is not an option spelling (`-x`, `--name`, `--name <v>`, `--name[=v]`, `--name [v]`)"
                ));
            }
            let (name, meaning) = (name.to_owned(), meaning.clone());
            out.push(OptSpec {
                name,
                takes,
                meaning,
            });
        }
    }
    Ok(out)
}

/// Parses the file and checks each entry's shape (not yet its examples).
fn parse(text: &str) -> Result<Rules, String> {
    let mut r: Rules = toml::from_str(text).map_err(|e| format!("{FILE}: {e}"))?;
    let mut groups = BTreeMap::new();
    for (name, lists) in &r.groups {
        let opts = options_of(lists).map_err(|e| format!("{FILE}: group `{name}`: {e}"))?;
        groups.insert(name.as_str(), opts);
        let entry = format!("group `{name}`");
        r.examples.push((entry, lists.examples.clone(), Vec::new()));
    }
    for i in 0..r.subs.len() {
        let name = &r.subs[i].name;
        if name.is_empty() || r.subs[..i].iter().any(|x| &x.name == name) {
            let e = "no name, or a second entry of that name";
            return Err(format!("{FILE}: subcommand `{name}`: {e}"));
        }
        let s = &mut r.subs[i];
        let at = |e: String| format!("{FILE}: subcommand `{}`: {e}", s.name);
        for g in &s.groups {
            let opts = groups.get(g.as_str());
            s.options
                .extend(opts.ok_or_else(|| at(format!("no group `{g}`")))?.clone());
        }
        s.options.extend(options_of(&s.lists).map_err(at)?);
        // Two rows of one name must say the same (git reads an option one way).
        for (k, o) in s.options.iter().enumerate() {
            if s.options[..k].iter().any(|p| p.name == o.name && p != o) {
                let twice = format!("`{}` is listed twice with different meanings", o.name);
                return Err(at(twice));
            }
        }
        let refused = s.options.iter().filter_map(|o| match &o.meaning {
            Meaning::Refused(why) => Some(why.as_str()),
            Meaning::Known(_) => None,
        });
        if let Some(w) = refused
            .chain(["nul"])
            .find(|w| !r.refusals.contains_key(*w))
        {
            return Err(at(format!("no [refusals] row `{w}`")));
        }
        let implied = r.rules.get(&s.rule);
        let implied = implied.ok_or_else(|| at(format!("no rule `{}` in [rules]", s.rule)))?;
        let needs_why = implied.iter().any(|c| c.why.contains("{why}"));
        if needs_why == s.why.is_empty() {
            let need = if needs_why { "required" } else { "not read" };
            return Err(at(format!("`why` is {need} for rule `{}`", s.rule)));
        }
        s.own = s.cases.len();
        for c in implied {
            let fill = |t: &String| t.replace("{why}", &s.why);
            let (why, unclassifiable) = (fill(&c.why), c.unclassifiable.as_ref().map(fill));
            s.cases.push(Case {
                why,
                unclassifiable,
                ..c.clone()
            });
        }
        for c in &s.cases {
            placeholders(&c.why).map_err(at)?;
            c.unclassifiable
                .as_deref()
                .map_or(Ok(()), placeholders)
                .map_err(at)?;
        }
        if s.cases.last().is_none_or(|c| !c.when.is_empty()) {
            return Err(at("its last case must have no `if`".to_owned()));
        }
        if s.lists.examples.is_empty() {
            return Err(at("no examples".to_owned()));
        }
        let (entry, examples) = (format!("subcommand `{}`", s.name), s.lists.examples.clone());
        r.examples.push((entry, examples, s.not_examples.clone()));
    }
    let in_bash = r.refusals.values().filter_map(|r| r.in_bash.as_ref());
    for c in r.raise.iter().chain(in_bash) {
        placeholders(&c.why).map_err(|e| format!("{FILE}: [[raise]], [refusals]: {e}"))?;
        let u = c.unclassifiable.as_deref().map_or(Ok(()), placeholders);
        u.map_err(|e| format!("{FILE}: [[raise]], [refusals]: {e}"))?;
    }
    let g = &mut r.globals;
    g.options = options_of(&g.lists).map_err(|e| format!("{FILE}: globals: {e}"))?;
    g.stops = true;
    let globals = (g.lists.examples.clone(), g.not_examples.clone());
    r.examples
        .push(("globals".to_owned(), globals.0, globals.1));
    r.examples
        .push(("config".to_owned(), r.config.examples.clone(), vec![]));
    Ok(r)
}

pub(super) fn loaded() -> &'static Result<Rules, String> {
    static R: OnceLock<Result<Rules, String>> = OnceLock::new();
    R.get_or_init(|| parse(TEXT))
}

/// The rules as parsed, examples not checked (empty when the file does not
/// parse, so every option and subcommand is unknown): for the rules' own use
/// below the entry points, which call [`super::checked`].
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
