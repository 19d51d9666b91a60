//! Reading `git status --porcelain=v2 --branch -z` (pure): the branch, its
//! upstream and the counts the result reports, plus one line per path so two
//! readings can be compared to find the paths an operation changed.

use std::collections::BTreeMap;

use serde::Serialize;

/// The repository's state, as the result reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct RepoStatus {
    /// The current branch (None when HEAD is detached).
    pub branch: Option<String>,
    /// The commit HEAD points at (None before the first commit).
    pub head: Option<String>,
    /// HEAD is detached.
    pub detached: bool,
    /// The upstream branch, e.g. `origin/main`.
    pub upstream: Option<String>,
    /// Commits the branch has that its upstream does not.
    pub ahead: u64,
    /// Commits the upstream has that the branch does not.
    pub behind: u64,
    /// Paths with staged changes.
    pub staged: u64,
    /// Tracked paths with unstaged changes.
    pub unstaged: u64,
    /// Untracked paths (each file, not each directory).
    pub untracked: u64,
    /// Paths with merge conflicts.
    pub conflicted: u64,
    /// Nothing staged, unstaged, untracked or conflicted.
    pub clean: bool,
}

/// A parsed status: the summary and, per path, its entry without the path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The summary.
    pub status: RepoStatus,
    /// path → the entry's other fields (type, XY, modes, hashes).
    pub entries: BTreeMap<String, String>,
}

/// Parse `git status --porcelain=v2 --branch -z` output.
pub(crate) fn parse(out: &[u8]) -> Reading {
    let mut r = Reading::default();
    let mut records = out.split(|b| *b == 0).map(String::from_utf8_lossy);
    while let Some(rec) = records.next() {
        if rec.is_empty() {
            continue;
        }
        if let Some(h) = rec.strip_prefix("# ") {
            header(&mut r.status, h);
            continue;
        }
        let (kind, rest) = rec.split_at(1);
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        // Fields before the path: 1 → 7, 2 → 8 (then the original path in the
        // next record), u → 9; `?` and `!` are followed by the path alone.
        let fields = match kind {
            "1" => 7,
            "2" => 8,
            "u" => 9,
            "?" | "!" => 0,
            _ => continue,
        };
        let mut parts = rest.splitn(fields + 1, ' ');
        let meta: Vec<&str> = parts.by_ref().take(fields).collect();
        let Some(path) = parts.next() else { continue };
        let xy = meta.first().copied().unwrap_or("");
        let mut chars = xy.chars();
        let (x, y) = (chars.next().unwrap_or('.'), chars.next().unwrap_or('.'));
        match kind {
            "?" => r.status.untracked += 1,
            "!" => {}
            "u" => r.status.conflicted += 1,
            _ => {
                if x != '.' {
                    r.status.staged += 1;
                }
                if y != '.' {
                    r.status.unstaged += 1;
                }
            }
        }
        r.entries
            .insert(path.to_owned(), format!("{kind} {}", meta.join(" ")));
        if kind == "2"
            && let Some(orig) = records.next()
        {
            // The rename's source changed too.
            r.entries
                .entry(orig.into_owned())
                .or_insert_with(|| "renamed away".to_owned());
        }
    }
    let s = &mut r.status;
    s.clean = s.staged == 0 && s.unstaged == 0 && s.untracked == 0 && s.conflicted == 0;
    r
}

fn header(s: &mut RepoStatus, h: &str) {
    let (key, value) = h.split_once(' ').unwrap_or((h, ""));
    match key {
        "branch.oid" => s.head = (value != "(initial)").then(|| value.to_owned()),
        "branch.head" => {
            s.detached = value == "(detached)";
            s.branch = (!s.detached).then(|| value.to_owned());
        }
        "branch.upstream" => s.upstream = Some(value.to_owned()),
        "branch.ab" => {
            for part in value.split(' ') {
                if let Some(n) = part.strip_prefix('+') {
                    s.ahead = n.parse().unwrap_or(0);
                } else if let Some(n) = part.strip_prefix('-') {
                    s.behind = n.parse().unwrap_or(0);
                }
            }
        }
        _ => {}
    }
}

/// Paths whose entry differs between two readings (sorted).
pub(crate) fn changed_paths(before: &Reading, after: &Reading) -> Vec<String> {
    let mut out: Vec<String> = before
        .entries
        .iter()
        .filter(|(p, e)| after.entries.get(*p) != Some(*e))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(
        after
            .entries
            .keys()
            .filter(|p| !before.entries.contains_key(*p))
            .cloned(),
    );
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"# branch.oid 1234567890abcdef1234567890abcdef12345678\0# branch.head main\0# branch.upstream origin/main\0# branch.ab +2 -1\0\
1 M. N... 100644 100644 100644 aaaa bbbb src/a.rs\0\
1 .M N... 100644 100644 100644 cccc cccc src/b rs.txt\0\
1 MM N... 100644 100644 100644 dddd eeee c.txt\0\
2 R. N... 100644 100644 100644 ffff ffff R100 new.txt\0old.txt\0\
u UU N... 100644 100644 100644 100644 1111 2222 3333 conflict.txt\0\
? untracked/file.txt\0? other\0! ignored.log\0";

    #[test]
    fn counts_and_branch() {
        let r = parse(SAMPLE);
        let s = &r.status;
        assert_eq!(s.branch.as_deref(), Some("main"));
        assert_eq!(
            s.head.as_deref(),
            Some("1234567890abcdef1234567890abcdef12345678")
        );
        assert!(!s.detached);
        assert_eq!(s.upstream.as_deref(), Some("origin/main"));
        assert_eq!((s.ahead, s.behind), (2, 1));
        assert_eq!(s.staged, 3, "M., MM and R.");
        assert_eq!(s.unstaged, 2, ".M and MM");
        assert_eq!(s.untracked, 2);
        assert_eq!(s.conflicted, 1);
        assert!(!s.clean);
        assert!(r.entries.contains_key("src/b rs.txt"), "spaces in paths");
        assert!(r.entries.contains_key("old.txt"), "a rename's source");
        assert!(r.entries.contains_key("ignored.log"));
    }

    #[test]
    fn detached_initial_and_clean() {
        let r = parse(b"# branch.oid (initial)\0# branch.head (detached)\0");
        assert_eq!(r.status.head, None);
        assert_eq!(r.status.branch, None);
        assert!(r.status.detached);
        assert!(r.status.clean);
        assert_eq!(r.status.upstream, None);
    }

    #[test]
    fn changed_paths_compares_entries() {
        let before = parse(b"1 .M N... 100644 100644 100644 aa aa a.txt\0? b.txt\0? same.txt\0");
        let after = parse(
            b"1 M. N... 100644 100644 100644 aa bb a.txt\x001 A. N... 000000 100644 100644 00 cc b.txt\0? same.txt\0? new.txt\0",
        );
        assert_eq!(
            changed_paths(&before, &after),
            ["a.txt", "b.txt", "new.txt"]
        );
        assert!(changed_paths(&after, &after).is_empty());
        assert_eq!(changed_paths(&after, &Reading::default()).len(), 4);
    }

    #[test]
    fn garbage_is_ignored() {
        let r = parse(b"\0\0zzz\x001 short\0# branch.ab nonsense\0");
        assert!(r.entries.is_empty());
        assert!(r.status.clean);
    }
}
