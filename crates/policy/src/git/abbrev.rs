//! Abbreviated long options, resolved the way git's parse-options library
//! resolves them: an exact name wins; otherwise a name that is the prefix of
//! exactly one option means that option; a prefix of several is ambiguous
//! (git refuses it and does nothing; plangate calls it unclassifiable).
//! Prefixes of `--no-` (`--n`, `--no`, `--no-`) are always ambiguous: git
//! reads them as the negation of every option.

/// What a long option name (`--name`, without `=value`) resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved<'a> {
    /// This option (its full name).
    Option(&'a str),
    /// The prefix of several options.
    Ambiguous(Vec<&'a str>),
    /// Nothing the tables know.
    Unknown,
}

/// Resolves `name` (`--forc`) against the full names `candidates` (which may
/// hold short options and duplicates: they are ignored). `abbrev` says whether
/// the subcommand accepts abbreviations at all.
pub fn resolve<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
    abbrev: bool,
) -> Resolved<'a> {
    let mut matches: Vec<&'a str> = Vec::new();
    for c in candidates {
        if !c.starts_with("--") {
            continue;
        }
        if c == name {
            return Resolved::Option(c);
        }
        if abbrev && c.starts_with(name) && !matches.contains(&c) {
            matches.push(c);
        }
    }
    // Sorted, so a reason lists them the same way whatever the file's order.
    matches.sort_unstable();
    if !abbrev || name.len() <= 2 {
        return Resolved::Unknown;
    }
    if "--no-".starts_with(name) {
        return Resolved::Ambiguous(matches);
    }
    match matches.len() {
        0 => Resolved::Unknown,
        1 => Resolved::Option(matches[0]),
        _ => Resolved::Ambiguous(matches),
    }
}
