//! A whole `git …` command line as written in a bash step: git's global
//! options, then the subcommand, judged by its entry in the rules file (one
//! missing from the file is unclassifiable). `--exec-path=DIR` with a
//! subcommand makes git look for programs in DIR: unclassifiable.

use super::parse::{Parsed, Word, parse_words};
use super::risk::{self, Extra};
use super::rules::{self, Sub, Tag};
use super::{Op, Verdict, parse_op, verdict};
use crate::model::Risk;

/// The verdict on a `git` command line, and the values of `-C`, `--git-dir`
/// and `--work-tree` for the caller to check as write targets: the indexes
/// of their words, or the text after `=` when attached (`--git-dir=x`).
#[derive(Debug, Clone)]
pub struct CommandVerdict {
    pub verdict: Verdict,
    pub repo_words: Vec<usize>,
    pub repo_attached: Vec<String>,
}

/// Judges `git WORDS…` (the words after `git`); every command is
/// unclassifiable when the rules file does not load.
pub fn classify_command(words: &[Word<'_>]) -> CommandVerdict {
    let mut c = judge_words(words);
    let why = super::checked().err().map(str::to_owned);
    c.verdict = c.verdict.cannot_judge(why);
    c
}

/// [`classify_command`] without the check of the rules file (its examples use it).
pub(super) fn judge_words(words: &[Word<'_>]) -> CommandVerdict {
    let g = parse_words(&rules::raw().globals, words, 0);
    let rest = &words[g.first_at.unwrap_or(words.len())..];
    let exec = g.options.iter().find(|o| o.name == "--exec-path");
    let mut v = match rest.first() {
        _ if g.has(Tag::Info) || exec.is_some_and(|o| o.value.is_none()) => {
            verdict(Risk::Safe, "git only prints its version, help or paths")
        }
        None => verdict(Risk::Safe, "git without a subcommand only prints its usage"),
        Some(w) => match w.text {
            Some(sub) => subcommand(sub, &rest[1..]),
            None => verdict(
                Risk::Dangerous,
                format!("the git subcommand `{}` is only known at run time", w.raw),
            ),
        },
    };
    let dir = exec.and_then(|o| o.value.as_ref().filter(|_| !rest.is_empty()));
    let exec = dir.map(|d| format!("`--exec-path={d}` makes git run programs from that directory"));
    let nul = (g.refused.first()).map(|_| "an argument contains a NUL byte".to_owned());
    let runtime = (rest.first()).filter(|w| w.text.is_none() && w.raw.starts_with('-'));
    let runtime = runtime.map(|w| format!("`{}` is only known at run time", w.raw));
    let unknown = (g.unreadable()).map(|w| format!("{w} before the git subcommand"));
    for why in [exec, unknown, risk::config_problem(&g, "git"), nul, runtime] {
        v = v.cannot_judge(why);
    }
    // A value in its own word (`-C dir`) is given by its index; one attached, by its text.
    let repo = |own: bool| {
        (g.options.iter()).filter(move |o| o.tag == Tag::Repo && (o.tokens.len() == 2) == own)
    };
    CommandVerdict {
        verdict: v,
        repo_words: repo(true).map(|o| o.at + 1).collect(),
        repo_attached: repo(false).filter_map(|o| o.value.clone()).collect(),
    }
}

fn subcommand(sub: &str, words: &[Word<'_>]) -> Verdict {
    if let Some(op) = rules::named::<Op>(sub) {
        let p = parse_op(op, words);
        let extra = Extra {
            has_files: op == Op::Checkout && checkout_names_a_path(&p),
            ..Extra::default()
        };
        return risk::finish(risk::judge(op, &p, extra), sub, &p);
    }
    if let Some(v) = other(sub, words) {
        return v;
    }
    verdict(Risk::Moderate, format!("git {sub} is not judged")).cannot_judge(format!(
        "`git {sub}` is not a git subcommand plangate knows (it may be an alias or a `git-{sub}` program)"
    ))
}

/// In bash, `git checkout X` reads X as a path when it is not a branch: a
/// word that can only be a path (`.`, `./x`, `../x`, `:/x`, a glob, `x/`)
/// discards changes like `git checkout -- X`.
fn checkout_names_a_path(p: &Parsed) -> bool {
    let creates = p.has(Tag::NewBranch) || p.has(Tag::ResetBranch) || p.dashdash;
    let path = |w: &str| ["./", "../", ":/"].iter().any(|s| w.starts_with(s));
    let path = |w: &String| matches!(w.as_str(), "." | "..") || path(w) || w.ends_with('/');
    !creates && (p.positionals.first()).is_some_and(|w| path(w) || w.contains(['*', '?', '[']))
}

/// Judges `git NAME words...` for a subcommand the tool does not run (None
/// when the file does not know it). The entry of `NAME VERB` (`remote add`)
/// wins when VERB is the first word that is not an option, as git reads it:
/// the first word, or one after options of NAME's own entry (`git remote -v add`).
fn other(name: &str, words: &[Word<'_>]) -> Option<Verdict> {
    let entry = |n: &str| (rules::raw().subs.iter()).find(|s| s.name == n && s.rule != "operation");
    let parent = entry(name);
    let p = parse_words(parent.unwrap_or(&Sub::default()), words, 0);
    let at = p.first_at.filter(|&at| at == 0 || parent.is_some());
    let at = at.filter(|_| p.runtime_positionals.first() != Some(&0));
    let verb = at.and_then(|at| Some((at, entry(&format!("{name} {}", p.positionals.first()?))?)));
    let (sub, p) = match verb {
        Some((at, v)) => {
            let rest = (words.iter().enumerate()).filter(|(i, _)| *i != at);
            let rest: Vec<Word<'_>> = rest.map(|(_, w)| *w).collect();
            (v, parse_words(v, &rest, 0))
        }
        None => (parent?, p),
    };
    let shown = sub.name.as_str();
    // Every entry's last case holds (the loader checks it); None is fail-close.
    let (_, v) = risk::case(sub, shown, &p, Extra::default())?;
    Some(risk::finish(v, shown, &p))
}
