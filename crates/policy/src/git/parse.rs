//! Reads a git subcommand's arguments with its option table, as git does
//! (bundled short options, attached values, abbreviations). A word of a bash
//! command line only known at run time is read as a positional, and noted as
//! a possible option when nothing written before it rules that out.

use super::rules::{OptSpec, Sub, Tag, Takes};

/// One argument: its value when known (None: only at run time), and how it is written.
#[derive(Debug, Clone, Copy)]
pub struct Word<'a> {
    pub text: Option<&'a str>,
    pub raw: &'a str,
}

impl<'a> Word<'a> {
    /// A literal word.
    pub fn lit(s: &'a str) -> Self {
        Word {
            text: Some(s),
            raw: s,
        }
    }

    /// Whether a run-time value could start with `-`: nothing literal precedes the expansion.
    fn may_be_option(&self) -> bool {
        // Double quotes hide nothing: `"refs/heads/$B"` starts with `r`.
        let first = self.raw.trim_start_matches('"').chars().next();
        !first.is_some_and(|c| c.is_ascii_alphanumeric() || "./:_+@~^%,=".contains(c))
    }
}

/// One known option as read, with its tokens (an abbreviated name written in
/// full; a bundle of short options is on its last option) and the index of its word.
#[derive(Debug, Clone)]
pub struct Opt {
    pub name: String,
    pub value: Option<String>,
    pub tag: Tag,
    pub tokens: Vec<String>,
    pub at: usize,
}

/// What `args` says, read with a table: positionals before `--` (the word
/// index of the first; indexes of those only known at run time), paths after
/// it, refused options (word index, `[refusals]` row), ...
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub stash_sub: Option<String>,
    pub options: Vec<Opt>,
    pub positionals: Vec<String>,
    pub first_at: Option<usize>,
    pub runtime_positionals: Vec<usize>,
    pub paths: Vec<String>,
    pub dashdash: bool,
    pub unknown: Vec<String>,
    pub ambiguous: Vec<(String, Vec<String>)>,
    pub runtime_options: Vec<String>,
    pub refused: Vec<(usize, String)>,
}

impl Parsed {
    /// Whether an option with this tag was given.
    pub fn has(&self, tag: Tag) -> bool {
        self.named(tag).is_some()
    }

    /// The full name of the first option with this tag.
    pub fn named(&self, tag: Tag) -> Option<&str> {
        let o = self.options.iter().find(|o| o.tag == tag);
        o.map(|o| o.name.as_str())
    }

    /// Whether an option with this full name was given.
    pub fn has_name(&self, name: &str) -> bool {
        self.options.iter().any(|o| o.name == name)
    }

    /// `args` with every abbreviated long option written in full.
    pub fn canonical(&self, args: &[String]) -> Vec<String> {
        let mut out = args.to_vec();
        for o in self.options.iter().filter(|o| o.name.starts_with("--")) {
            if let (Some(slot), Some(full)) = (out.get_mut(o.at), o.tokens.first()) {
                slot.clone_from(full);
            }
        }
        out
    }

    /// The tokens of the known options, in order.
    pub fn option_tokens(&self) -> impl Iterator<Item = &String> {
        self.options.iter().flat_map(|o| o.tokens.iter())
    }

    /// Why the arguments cannot be judged (an unknown or ambiguous option).
    pub fn unreadable(&self) -> Option<String> {
        if let Some(u) = self.unknown.first() {
            return Some(format!("`{u}` is not an option plangate knows"));
        }
        let a = self.ambiguous.first();
        a.map(|(a, c)| format!("`{a}` abbreviates several options ({})", c.join(", ")))
    }
}

/// The option a long name (`--forc`) means, as git's parse-options resolves
/// it: an exact name wins, else (where the subcommand accepts abbreviations)
/// the only option it is a prefix of; a prefix of several is ambiguous (`Err`
/// with them; git refuses it), and so are `--n`, `--no`, `--no-` (git reads
/// them as the negation of every option).
fn resolve<'a>(t: &'a Sub, name: &str) -> Result<Option<&'a OptSpec>, Vec<String>> {
    let long = t.options.iter().filter(|o| o.name.starts_with("--"));
    if let Some(o) = long.clone().find(|o| o.name == name) {
        return Ok(Some(o));
    }
    if !t.abbrev || name.len() <= 2 {
        return Ok(None);
    }
    // An entry's options are sorted by name, one row each (see the loader).
    let found: Vec<&OptSpec> = long.filter(|o| o.name.starts_with(name)).collect();
    match found[..] {
        [o] if !"--no-".starts_with(name) => Ok(Some(o)),
        [] if !"--no-".starts_with(name) => Ok(None),
        _ => Err(found.iter().map(|o| o.name.clone()).collect()),
    }
}

/// Reads `words[start..]` with the table.
pub fn parse_words(t: &Sub, words: &[Word<'_>], start: usize) -> Parsed {
    let mut p = Parsed::default();
    let (mut i, mut options_done) = (start, false);
    while i < words.len() {
        let w = words[i];
        let positional = (w.text).is_none_or(|a| options_done || !a.starts_with('-') || a == "-");
        if positional {
            p.first_at.get_or_insert(i);
            if t.stops {
                break; // the global options end at the subcommand
            }
        }
        // Git's global options are whole words: not `-pP`, `-Cdir`, `--`.
        let whole =
            |a: &str| matches!(a, "--" | "--end-of-options") || !a.starts_with("--") && a.len() > 2;
        match w.text {
            None => {
                if !options_done && w.may_be_option() {
                    p.runtime_options.push(w.raw.to_owned());
                }
                p.runtime_positionals.push(p.positionals.len());
                p.positionals.push(w.raw.to_owned());
            }
            Some(a) if a.contains('\0') => p.refused.push((i, "nul".to_owned())),
            Some(a) if t.stops && whole(a) => p.unknown.push(a.to_owned()),
            Some(a) if positional => match options_done && p.dashdash && t.paths {
                true => p.paths.push(a.to_owned()),
                false => p.positionals.push(a.to_owned()),
            },
            Some("--") => (p.dashdash, options_done) = (true, true),
            Some("--end-of-options") => options_done = true,
            Some(a) if t.counts && a[1..].chars().all(|c| c.is_ascii_digit()) => {
                p.options.push(Opt {
                    name: "-n".to_owned(),
                    value: Some(a[1..].to_owned()),
                    tag: Tag::Plain,
                    tokens: vec![a.to_owned()],
                    at: i,
                })
            }
            Some(_) => i = option(t, words, i, &mut p),
        }
        i += 1;
    }
    p
}

/// Reads the option at `words[i]`: a long one (`--name=v`, maybe abbreviated)
/// or bundled short ones (`-fu`, the last maybe with a value: `-n5`).
/// Returns the index of the last word used.
fn option(t: &Sub, words: &[Word<'_>], i: usize, p: &mut Parsed) -> usize {
    let a = words[i].text.unwrap_or_default();
    let long = a.starts_with("--");
    let mut rest = &a[1..];
    while let Some(c) = rest.chars().next() {
        let (spec, attached) = if long {
            rest = "";
            let (written, attached) = a.split_once('=').map_or((a, None), |(n, v)| (n, Some(v)));
            let spec = resolve(t, written).map_err(|c| p.ambiguous.push((a.to_owned(), c)));
            let Ok(spec) = spec else { return i };
            (spec, attached)
        } else {
            rest = &rest[c.len_utf8()..];
            let name = format!("-{c}");
            let spec = t.options.iter().find(|o| o.name == name);
            (spec, Some(rest).filter(|r| !r.is_empty()))
        };
        let Some(spec) = spec else {
            p.unknown.push(a.to_owned());
            return i;
        };
        let takes = spec.takes;
        if let Some(why) = &spec.refused {
            p.refused.push((i, why.clone()));
            return i + usize::from(takes == Takes::Value && attached.is_none());
        }
        let next = words.get(i + 1).filter(|n| {
            takes == Takes::Value
                || takes == Takes::LastArg && n.text.is_some_and(|n| !n.starts_with('-'))
        });
        let value = match (takes, attached) {
            (Takes::No, Some(_)) if long => {
                p.unknown.push(a.to_owned());
                return i;
            }
            (Takes::No, _) | (Takes::Attached, None) => None,
            (_, Some(v)) => Some(v.to_owned()),
            (_, None) => next.map(|n| n.text.unwrap_or(n.raw).to_owned()),
        };
        let last = i + usize::from(attached.is_none() && value.is_some());
        let ends = long || takes != Takes::No || rest.is_empty();
        let mut tokens: Vec<String> = (words[i..=last].iter())
            .filter(|_| ends)
            .map(|w| w.raw.to_owned())
            .collect();
        if long {
            let full = attached.map(|v| format!("{}={v}", spec.name));
            tokens[0] = full.unwrap_or_else(|| spec.name.clone());
        }
        p.options.push(Opt {
            name: spec.name.clone(),
            value,
            tag: spec.tag,
            tokens,
            at: i,
        });
        if ends {
            return last;
        }
    }
    i
}
