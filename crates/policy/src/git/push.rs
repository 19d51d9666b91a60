//! Where a push goes (remote, destination branches, forced or deleting
//! refspecs) and how risky that is: a forced push, a deletion, every branch
//! (`--all`, `--mirror`), a destination that is not written down (no refspec,
//! `HEAD`, a commit, a pattern, a word only known at run time) or a default
//! branch (`main`, `master`) is dangerous.

use super::options::Tag;
use super::parse::Parsed;
use super::{Verdict, verdict};
use crate::model::Risk;

/// Branch names taken as a remote's default branch when the remote's own is unknown.
pub const DEFAULT_BRANCHES: &[&str] = &["main", "master"];

/// Where a push goes, as far as `args` say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTarget {
    /// The repository argument (a remote name or URL), if written.
    pub remote: Option<String>,
    /// Destination branch names (`refs/heads/` stripped); empty when unknown.
    pub branches: Vec<String>,
    /// Why the destination cannot be known before the run, if it cannot.
    pub unknown: Option<String>,
    /// A forced update (`+refspec`).
    pub forced: bool,
    /// A deletion (`:dst`).
    pub deletes: bool,
}

/// Read a push's repository and refspecs.
pub fn push_target(p: &Parsed) -> PushTarget {
    let mut t = PushTarget {
        remote: p.positionals.first().cloned(),
        branches: Vec::new(),
        unknown: None,
        forced: false,
        deletes: false,
    };
    let refspecs = p.positionals.get(1..).unwrap_or(&[]);
    if refspecs.is_empty() {
        if !p.has(Tag::Tags) {
            t.unknown = Some(
                "pushes without an explicit refspec, so it may update the remote's default branch"
                    .to_owned(),
            );
        }
        return t;
    }
    for (k, spec) in refspecs.iter().enumerate() {
        if p.runtime_positionals.contains(&(k + 1)) {
            t.unknown = Some(format!(
                "refspec `{spec}` is only known at run time, so it may update the remote's default branch"
            ));
            continue;
        }
        let (forced, spec) = match spec.strip_prefix('+') {
            Some(s) => (true, s),
            None => (false, spec.as_str()),
        };
        t.forced |= forced;
        let (src, dst) = match spec.split_once(':') {
            Some((s, d)) => (s, d),
            None => (spec, spec),
        };
        if src.is_empty() && !dst.is_empty() {
            t.deletes = true;
        }
        if dst.is_empty() || dst.contains('*') {
            t.unknown = Some(format!(
                "refspec `{spec}` names no single destination branch"
            ));
            continue;
        }
        let bare = dst.strip_prefix("refs/heads/").unwrap_or(dst);
        if dst.starts_with("refs/") && !dst.starts_with("refs/heads/") {
            // Tags and other namespaces are not branches.
            continue;
        }
        let symbolic = matches!(bare, "HEAD" | "@") || bare.contains(['~', '^', '@']);
        let sha_like = bare.len() >= 7 && bare.chars().all(|c| c.is_ascii_hexdigit());
        if symbolic || sha_like {
            t.unknown = Some(format!(
                "refspec `{spec}` does not name its destination branch (write `SRC:BRANCH`)"
            ));
            continue;
        }
        t.branches.push(bare.to_owned());
    }
    t
}

pub(super) fn classify_push(p: &Parsed, dry: bool, force: bool) -> Verdict {
    let t = push_target(p);
    if dry {
        return verdict(
            Risk::Moderate,
            "git push --dry-run contacts the remote but changes nothing",
        );
    }
    if force || t.forced {
        return verdict(
            Risk::Dangerous,
            "a forced push rewrites the remote's history",
        );
    }
    if p.has(Tag::Delete) || t.deletes {
        return verdict(Risk::Dangerous, "git push --delete removes remote refs");
    }
    if let Some(flag) = p.named(Tag::AllRefs) {
        return verdict(
            Risk::Dangerous,
            format!("git push {flag} pushes every branch, the default branch included"),
        );
    }
    if let Some(why) = &t.unknown {
        return verdict(Risk::Dangerous, format!("git push {why}"));
    }
    if let Some(b) = t
        .branches
        .iter()
        .find(|b| DEFAULT_BRANCHES.contains(&b.as_str()))
    {
        return verdict(
            Risk::Dangerous,
            format!("git push updates `{b}`, a default branch"),
        );
    }
    if t.branches.is_empty() {
        verdict(Risk::Moderate, "git push sends tags to a remote")
    } else {
        verdict(
            Risk::Moderate,
            format!("git push updates `{}` on a remote", t.branches.join("`, `")),
        )
    }
}
