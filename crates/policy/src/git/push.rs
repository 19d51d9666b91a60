//! Where a push goes (remote, destination branches, forced or deleting
//! refspecs, a destination that is not written down: no refspec, `HEAD`, a
//! commit, a pattern, a word only known at run time); the `push` entry of the
//! rules file says how risky each is.

use super::parse::Parsed;
use super::rules::Tag;

/// Branch names taken as a remote's default branch when the remote's own is unknown.
pub const DEFAULT_BRANCHES: &[&str] = &["main", "master"];

/// Where a push goes, as far as `args` say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    let remote = p.positionals.first().cloned();
    let mut t = PushTarget {
        remote,
        ..PushTarget::default()
    };
    let refspecs = p.positionals.get(1..).unwrap_or(&[]);
    if refspecs.is_empty() && !p.has(Tag::Tags) {
        let why =
            "pushes without an explicit refspec, so it may update the remote's default branch";
        t.unknown = Some(why.to_owned());
    }
    for (k, spec) in refspecs.iter().enumerate() {
        if p.runtime_positionals.contains(&(k + 1)) {
            t.unknown = Some(format!(
                "refspec `{spec}` is only known at run time, so it may update the remote's default branch"
            ));
            continue;
        }
        let spec = spec
            .strip_prefix('+')
            .inspect(|_| t.forced = true)
            .unwrap_or(spec);
        let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
        t.deletes |= src.is_empty() && !dst.is_empty();
        let bare = dst.strip_prefix("refs/heads/").unwrap_or(dst);
        let symbolic = matches!(bare, "HEAD" | "@") || bare.contains(['~', '^', '@']);
        let sha_like = bare.len() >= 7 && bare.chars().all(|c| c.is_ascii_hexdigit());
        if dst.is_empty() || dst.contains('*') {
            t.unknown = Some(format!(
                "refspec `{spec}` names no single destination branch"
            ));
        } else if dst.starts_with("refs/") && !dst.starts_with("refs/heads/") {
            // Tags and other namespaces are not branches.
        } else if symbolic || sha_like {
            t.unknown = Some(format!(
                "refspec `{spec}` does not name its destination branch (write `SRC:BRANCH`)"
            ));
        } else {
            t.branches.push(bare.to_owned());
        }
    }
    t
}
