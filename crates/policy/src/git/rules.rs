//! The git rules as data: `crates/policy/src/rules/git.toml` (its header says
//! what the rows mean), compiled in, read once per process. A file that does
//! not parse, a malformed entry or an example decided otherwise is an error
//! naming the file and the entry ([`super::checked`]): the callers then judge
//! every git command unclassifiable (fail-close), and `cargo test` fails.
//! serde reads the file; [`parse`] joins each subcommand's option groups and
//! its rule's cases, and checks what serde cannot.

use crate::model::Risk;
use serde::Deserialize;
use serde::de::{Deserializer, IntoDeserializer, value::Error};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The file, for error messages.
pub const FILE: &str = "crates/policy/src/rules/git.toml";
const TEXT: &str = include_str!("../rules/git.toml");

/// How an option takes its value (the spellings of the file's header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// `--patch`: a flag.
    No,
    /// `--unified <v>`: attached (`--x=v`, `-xV`) or the next argument.
    Value,
    /// `--stat[=v]`: optional, attached only.
    Attached,
    /// `--contains [v]`: optional, attached or the next argument when there is one.
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

/// A tag (`dry-run`) or an operation of the tool (`push`) by its name.
pub fn named<T: serde::de::DeserializeOwned>(s: &str) -> Option<T> {
    T::deserialize(IntoDeserializer::<Error>::into_deserializer(s)).ok()
}

/// A `[refusals]` row: why the `git` tool refuses the options of a
/// `refused.NAME` list (a plan error), and how they raise a bash step's
/// verdict, where git runs as written (none: the subcommand's own risk).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Refusal {
    why: String,
    in_bash: Option<Case>,
}

/// Why the tool refuses the options of `refused.NAME` (`nul`: an argument
/// with a NUL byte), and how they raise a bash step's verdict.
pub fn refusal(name: &str) -> (&'static str, Option<&'static Case>) {
    let r = raw().refusals.get(name);
    r.map_or(("is refused", None), |r| (&r.why, r.in_bash.as_ref()))
}

/// What an option means: a tag the risk rules read, or the `[refusals]` row
/// that says why the tool refuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meaning {
    Known(Tag),
    Refused(String),
}

/// One option of a subcommand, read from its spelling (`"--unified <v>"`);
/// its meaning is its list's.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct OptSpec {
    /// The full name (`--force`, `-f`).
    pub name: String,
    pub takes: Takes,
    pub meaning: Meaning,
}

impl TryFrom<String> for OptSpec {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let ends = [(" <v>", Takes::Value), ("[=v]", Takes::Attached)];
        let (name, takes) = (ends.into_iter().chain([(" [v]", Takes::LastArg)]))
            .find_map(|(end, t)| Some((s.strip_suffix(end)?, t)))
            .unwrap_or((&s, Takes::No));
        let short = name.len() == 2 && name.starts_with('-') && name != "--";
        let word = |c: char| c.is_ascii_alphanumeric() || c == '-';
        let long = name.len() > 2 && name.starts_with("--") && name[2..].chars().all(word);
        if !short && !long {
            return Err(format!(
                "`{s}` is not an option spelling (`-x`, `--name`, `--name <v>`, `--name[=v]`, `--name [v]`)"
            ));
        }
        let (name, meaning) = (name.to_owned(), Meaning::Known(Tag::Plain));
        Ok(OptSpec {
            name,
            takes,
            meaning,
        })
    }
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
    pub unclassifiable: Option<String>,
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
            None => args.or_else(|| named(s).map(Atom::Tag)),
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

/// Checks that every `{…}` of a case's reasons is a placeholder [`Case::why`] names.
fn placeholders(c: &Case) -> Result<(), String> {
    for text in std::iter::once(&c.why).chain(&c.unclassifiable) {
        let keys = text.split('{').skip(1).map(|t| t.split('}').next());
        let known = |k: &str| {
            FACTS.contains(&k) || ["name", "key"].contains(&k) || named::<Tag>(k).is_some()
        };
        if let Some(k) = keys.flatten().find(|k| !known(k)) {
            return Err(format!("`{{{k}}}` in `{text}` is not a placeholder"));
        }
    }
    Ok(())
}

/// Option lists keyed by meaning, as written in the file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Lists {
    #[serde(default)]
    refused: BTreeMap<String, Vec<OptSpec>>,
    #[serde(default)]
    pub(super) examples: Vec<String>,
    #[serde(flatten)]
    tags: BTreeMap<Tag, Vec<OptSpec>>,
}

impl Lists {
    /// The options of the lists, each with its list's meaning.
    fn options(&self) -> impl Iterator<Item = OptSpec> + '_ {
        let tagged = self.tags.iter().map(|(t, v)| (Meaning::Known(*t), v));
        let refused = (self.refused.iter()).map(|(r, v)| (Meaning::Refused(r.clone()), v));
        tagged.chain(refused).flat_map(|(meaning, list)| {
            list.iter().map(move |o| OptSpec {
                meaning: meaning.clone(),
                ..o.clone()
            })
        })
    }
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
    why: String,
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
    pub(super) not_examples: Vec<String>,
    #[serde(flatten)]
    pub(super) lists: Lists,
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
    pub(super) examples: Vec<String>,
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
    pub(super) groups: BTreeMap<String, Lists>,
    #[serde(rename = "subcommands")]
    pub subs: Vec<Sub>,
}

impl Rules {
    /// The entry named `name` (`stash push`, `remote add`).
    pub fn sub(&self, name: &str) -> Option<&Sub> {
        self.subs.iter().find(|s| s.name == name)
    }
}

/// Parses the file and checks each entry's shape (not yet its examples).
fn parse(text: &str) -> Result<Rules, String> {
    let mut r: Rules = toml::from_str(text).map_err(|e| format!("{FILE}: {e}"))?;
    for i in 0..r.subs.len() {
        let (done, rest) = r.subs.split_at_mut(i);
        let s = &mut rest[0];
        let name = s.name.clone();
        let at = |e: String| format!("{FILE}: subcommand `{name}`: {e}");
        if name.is_empty() || done.iter().any(|x| x.name == name) {
            return Err(at("no name, or a second entry of that name".to_owned()));
        }
        for g in &s.groups {
            let group = r
                .groups
                .get(g)
                .ok_or_else(|| at(format!("no group `{g}`")))?;
            s.options.extend(group.options());
        }
        s.options.extend(s.lists.options());
        // Two rows of one name must say the same (git reads an option one way).
        for (k, o) in s.options.iter().enumerate() {
            if s.options[..k].iter().any(|p| p.name == o.name && p != o) {
                let twice = format!("`{}` is listed twice with different meanings", o.name);
                return Err(at(twice));
            }
            if let Meaning::Refused(w) = &o.meaning
                && !r.refusals.contains_key(w)
            {
                return Err(at(format!("no [refusals] row `{w}`")));
            }
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
        s.cases.iter().try_for_each(placeholders).map_err(at)?;
        if s.cases.last().is_none_or(|c| !c.when.is_empty()) {
            return Err(at("its last case must have no `if`".to_owned()));
        }
        if s.lists.examples.is_empty() {
            return Err(at("no examples".to_owned()));
        }
    }
    let in_bash = r.refusals.values().filter_map(|r| r.in_bash.as_ref());
    (r.raise.iter().chain(in_bash))
        .try_for_each(placeholders)
        .map_err(|e| format!("{FILE}: [[raise]], [refusals]: {e}"))?;
    if !r.refusals.contains_key("nul") {
        return Err(format!("{FILE}: no [refusals] row `nul`"));
    }
    r.globals.options = r.globals.lists.options().collect();
    r.globals.stops = true;
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

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
