//! The git rules as data: `crates/policy/src/rules/git.toml` (its header says
//! what the rows mean), compiled in, read once per process. A malformed file
//! or an example decided otherwise ([`super::checked`]) makes every git
//! command unclassifiable (fail-close), and `cargo test` fail.

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

/// What an option means to the risk rules: its list's key in the rules file.
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
    ResetMerge,
    ResetMode,
    BranchDelete,
    BranchMove,
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

/// A `[refusals]` row (the file's header says what it means).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Refusal {
    why: String,
    in_bash: Option<Case>,
}

/// Why the tool refuses the options of `refused.NAME`, and how they raise a bash step's verdict.
pub fn refusal(name: &str) -> (&'static str, Option<&'static Case>) {
    let r = raw().refusals.get(name);
    r.map_or(("is refused", None), |r| (&r.why, r.in_bash.as_ref()))
}

/// One option of a subcommand, read from its spelling (`"--unified <v>"`),
/// with its list's tag, or the `[refusals]` row of why the tool refuses it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct OptSpec {
    pub name: String,
    pub takes: Takes,
    pub tag: Tag,
    pub refused: Option<String>,
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
        let (name, tag, refused) = (name.to_owned(), Tag::Plain, None);
        Ok(OptSpec {
            name,
            takes,
            tag,
            refused,
        })
    }
}

/// The facts a condition may name (the rules file's header says what each means).
pub const FACTS: &str = "paths files plus-refspec push-forced push-deletes push-unknown \
    push-default push-branches key-runtime key-problem config-problem runtime-option unreadable";

/// The fact of that name.
pub fn fact(name: &str) -> Option<&'static str> {
    FACTS.split_whitespace().find(|f| *f == name)
}

/// What a case's condition tests (the rules file's header says how it is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    Tag(Tag),
    Name(String, Option<String>),
    Args(char, usize),
    Fact(&'static str),
}

/// One case: when any group of its condition holds (each group all of its
/// atoms, `true` when negated; an empty condition always holds), this risk
/// and reason, and why the verdict is unclassifiable when it is.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    #[serde(rename = "if", default, deserialize_with = "condition")]
    pub when: Vec<Vec<(bool, Atom)>>,
    pub risk: Risk,
    pub why: String,
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
        let atom = match fact(s) {
            Some(f) => Some(Atom::Fact(f)),
            None if s.starts_with('-') => {
                let (n, v) = s.split_once('=').map_or((s, None), |(n, v)| (n, Some(v)));
                Some(Atom::Name(n.to_owned(), v.map(str::to_owned)))
            }
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

/// Checks that every `{…}` of a case's reasons is a placeholder.
fn placeholders(c: &Case) -> Result<(), String> {
    for text in std::iter::once(&c.why).chain(&c.unclassifiable) {
        let keys = text.split('{').skip(1).map(|t| t.split('}').next());
        let known = |k: &str| {
            fact(k).is_some() || ["name", "key"].contains(&k) || named::<Tag>(k).is_some()
        };
        if let Some(k) = keys.flatten().find(|k| !known(k)) {
            return Err(format!("`{{{k}}}` in `{text}` is not a placeholder"));
        }
    }
    Ok(())
}

/// Option lists keyed by tag or refusal, as written in the file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Lists {
    refused: BTreeMap<String, Vec<OptSpec>>,
    pub(super) examples: Vec<String>,
    #[serde(flatten)]
    tags: BTreeMap<Tag, Vec<OptSpec>>,
}

impl Lists {
    /// The options of the lists, each with its list's tag or refusal.
    fn options(&self) -> impl Iterator<Item = OptSpec> + '_ {
        let tagged = self.tags.iter().map(|(t, v)| (*t, None, v));
        let refused = (self.refused.iter()).map(|(r, v)| (Tag::Plain, Some(r), v));
        tagged.chain(refused).flat_map(|(tag, refused, list)| {
            (list.iter()).map(move |o| OptSpec {
                tag,
                refused: refused.cloned(),
                ..o.clone()
            })
        })
    }
}

fn yes() -> bool {
    true
}

/// One `[[subcommands]]` entry (`rebase`, `remote add`) or `[globals]`. Once
/// loaded, `cases` are its own (the first `own`) then its rule's, and
/// `options` those of its groups and its own, by name (one row each).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Sub {
    pub name: String,
    pub rule: String,
    why: String,
    #[serde(rename = "options")]
    groups: Vec<String>,
    #[serde(default = "yes")]
    pub abbrev: bool,
    pub counts: bool,
    #[serde(default = "yes")]
    pub paths: bool,
    pub cases: Vec<Case>,
    #[serde(skip)]
    pub own: usize,
    pub(super) not_examples: Vec<String>,
    #[serde(flatten)]
    pub(super) lists: Lists,
    #[serde(skip)]
    pub options: Vec<OptSpec>,
    pub stops: bool,
}

/// `[config]`: configuration keys (lowercase patterns; `*` is any part).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub harmless: Vec<String>,
    pub runs_programs: Vec<String>,
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
    pub globals: Sub,
    rules: BTreeMap<String, Vec<Case>>,
    pub raise: Vec<Case>,
    refusals: BTreeMap<String, Refusal>,
    pub config: Config,
    pub(super) groups: BTreeMap<String, Lists>,
    #[serde(rename = "subcommands")]
    pub subs: Vec<Sub>,
}

/// Parses the file and checks each entry's shape (not yet its examples).
fn parse(text: &str) -> Result<Rules, String> {
    let mut r: Rules = toml::from_str(text).map_err(|e| format!("{FILE}: {e}"))?;
    let mut names = std::collections::BTreeSet::new();
    for s in &mut r.subs {
        let name = s.name.clone();
        let at = |e: String| format!("{FILE}: subcommand `{name}`: {e}");
        if name.is_empty() || !names.insert(name.clone()) {
            return Err(at("no name, or a second entry of that name".to_owned()));
        }
        for g in &s.groups {
            let group = (r.groups.get(g)).ok_or_else(|| at(format!("no group `{g}`")))?;
            s.options.extend(group.options());
        }
        s.options.extend(s.lists.options());
        s.options.sort_by(|a, b| a.name.cmp(&b.name));
        s.options.dedup();
        // Two rows of one name must say the same (git reads an option one way).
        if let Some(w) = s.options.windows(2).find(|w| w[0].name == w[1].name) {
            let twice = format!("`{}` is listed twice with different meanings", w[0].name);
            return Err(at(twice));
        }
        let mut refused = s.options.iter().filter_map(|o| o.refused.as_ref());
        if let Some(w) = refused.find(|w| !r.refusals.contains_key(*w)) {
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
        let fill = |t: &String| t.replace("{why}", &s.why);
        s.cases.extend(implied.iter().map(|c| Case {
            why: fill(&c.why),
            unclassifiable: c.unclassifiable.as_ref().map(fill),
            ..c.clone()
        }));
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
    Ok(r)
}

pub(super) fn loaded() -> &'static Result<Rules, String> {
    static R: OnceLock<Result<Rules, String>> = OnceLock::new();
    R.get_or_init(|| parse(TEXT))
}

/// The rules as parsed, examples not checked (empty when the file does not
/// parse): for use below the entry points, which call [`super::checked`].
pub fn raw() -> &'static Rules {
    static EMPTY: OnceLock<Rules> = OnceLock::new();
    (loaded().as_ref()).unwrap_or_else(|_| EMPTY.get_or_init(Rules::default))
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
