//! Abbreviated long options, resolved the way git's parse-options library
//! resolves them: an exact name wins; otherwise a name that is the prefix of
//! exactly one option means that option; a prefix of several is ambiguous
//! (git refuses it and does nothing; plangate calls it unclassifiable).
//! Prefixes of `--no-` (`--n`, `--no`, `--no-`) are always ambiguous: git
//! reads them as the negation of every option.

/// What a long option name (`--name`, without `=value`) resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// This option (its full name).
    Option(&'static str),
    /// The prefix of several options.
    Ambiguous(Vec<&'static str>),
    /// Nothing the tables know.
    Unknown,
}

/// Resolves `name` (`--forc`) against the full names `candidates` (which may
/// hold short options and duplicates: they are ignored). `abbrev` says whether
/// the subcommand accepts abbreviations at all.
pub fn resolve(
    name: &str,
    candidates: impl Iterator<Item = &'static str>,
    abbrev: bool,
) -> Resolved {
    let mut matches: Vec<&'static str> = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;

    const PUSH: &[&str] = &[
        "-f",
        "--force",
        "--force-with-lease",
        "--force-if-includes",
        "--delete",
        "--dry-run",
        "--no-verify",
        "--no-thin",
    ];

    fn r(name: &str) -> Resolved {
        resolve(name, PUSH.iter().copied(), true)
    }

    #[test]
    fn exact_prefix_and_ambiguous() {
        assert_eq!(r("--force"), Resolved::Option("--force"));
        assert_eq!(r("--delet"), Resolved::Option("--delete"));
        assert_eq!(r("--force-w"), Resolved::Option("--force-with-lease"));
        assert_eq!(r("--no-v"), Resolved::Option("--no-verify"));
        assert!(matches!(r("--forc"), Resolved::Ambiguous(v) if v.len() == 3));
        assert!(matches!(r("--force-"), Resolved::Ambiguous(v) if v.len() == 2));
        assert!(matches!(r("--no"), Resolved::Ambiguous(_)));
        assert!(matches!(r("--n"), Resolved::Ambiguous(_)));
        assert!(matches!(r("--no-"), Resolved::Ambiguous(_)));
        assert_eq!(r("--mirror"), Resolved::Unknown);
        assert_eq!(r("--"), Resolved::Unknown);
    }

    #[test]
    fn no_abbreviation_where_git_takes_none() {
        assert_eq!(
            resolve("--delet", PUSH.iter().copied(), false),
            Resolved::Unknown
        );
        assert_eq!(
            resolve("--delete", PUSH.iter().copied(), false),
            Resolved::Option("--delete")
        );
    }
}
