//! Lexical path resolution: where an argument points relative to the workspace.
//! No filesystem access: `.`/`..` are folded textually, symlinks are not followed.

use super::words::{Arg, Scratch, ScratchVar};
use std::path::{Component, Path, PathBuf};

pub(super) use super::rules::Loc;

/// A resolved argument: either one path, or "some entries below `base`" for globs.
#[derive(Debug, Clone, Default)]
pub(super) struct Target {
    pub loc: Loc,
    /// True when this is a glob matching entries below `loc`'s directory.
    pub under: bool,
    /// True for a glob made only of wildcards (`dir/*`): it covers the whole directory.
    pub covers_all: bool,
    /// The normalised path, for reasons.
    pub shown: String,
    /// True when `shown` is the absolute path itself (not a variable or a
    /// worst case), so a `cd` there can be followed.
    pub exact: bool,
    /// The step-private folder, when `loc` is [`Loc::Scratch`].
    pub scratch: Option<ScratchVar>,
}

impl Target {
    /// A path not known statically, shown as written.
    fn unknown(shown: &str) -> Self {
        Target {
            shown: shown.to_string(),
            ..Target::default()
        }
    }

    /// Whether this is one directory whose path the classifier knows (a
    /// working directory it can follow `cd` into).
    pub(super) fn fixed(&self) -> bool {
        self.exact && !self.under && !matches!(self.loc, Loc::Unknown | Loc::Scratch)
    }
}

/// Static facts needed to resolve paths.
#[derive(Default)]
pub(super) struct Places {
    pub workspace: PathBuf,
    pub home: Option<PathBuf>,
    /// Whether `$PLANGATE_STEP_ARTIFACTS` and `$TMPDIR` hold plangate's
    /// values (false when the script may change them).
    pub scratch: bool,
}

impl Places {
    /// Resolves `arg` against `cwd` (None when the working directory is unknown).
    pub(super) fn resolve(&self, arg: &Arg, cwd: Option<&Path>) -> Target {
        let unknown = Target::unknown(&arg.raw);
        let Some(text) = arg.lit() else {
            return match &arg.scratch {
                Some(s) if self.scratch => self.resolve_scratch(s, &arg.raw).unwrap_or(unknown),
                _ => self.resolve_prefixed(&arg.raw).unwrap_or(unknown),
            };
        };
        let (full, glob_at) = match (text.starts_with('/'), cwd) {
            (true, _) => (text.to_string(), arg.glob_at),
            (false, Some(dir)) => {
                let base = dir.to_string_lossy().trim_end_matches('/').to_string();
                let shift = base.len() + 1;
                (format!("{base}/{text}"), arg.glob_at.map(|g| g + shift))
            }
            (false, None) => return unknown,
        };
        let Some(g) = glob_at else {
            let p = normalize(Path::new(&full));
            return Target {
                loc: self.locate(&p),
                exact: true,
                ..Target::unknown(&p.to_string_lossy())
            };
        };
        let Some((dir, covers_all)) = glob_below(&full, g) else {
            return unknown;
        };
        Target {
            loc: self.locate(&normalize(Path::new(dir))),
            under: true,
            covers_all,
            exact: true,
            ..Target::unknown(&full)
        }
    }

    /// A path that starts with a step-private folder's variable: inside it
    /// (`$TMPDIR/a/../b`), or, when it climbs out (`$TMPDIR/../x`), judged at
    /// the worst place it can land: the folder's depth is not known, so as if
    /// it were `/` when that is worse than an unknown path, else unknown.
    fn resolve_scratch(&self, s: &Scratch, raw: &str) -> Option<Target> {
        let var = format!("${}", s.var.name());
        if !(s.rest.is_empty() || s.rest.starts_with('/')) {
            return None;
        }
        let inside = Target {
            loc: Loc::Scratch,
            scratch: Some(s.var),
            ..Target::unknown(&format!("{var}{}", s.rest))
        };
        if let Some(g) = s.glob_at {
            // A glob below the folder: only when no `..` can climb out.
            if s.rest.split('/').any(|c| c == "..") {
                return None;
            }
            let (_, covers_all) = glob_below(&s.rest, g)?;
            return Some(Target {
                under: true,
                covers_all,
                ..inside
            });
        }
        let mut kept: Vec<&str> = Vec::new();
        let mut escaped = false;
        for c in s.rest.split('/') {
            match c {
                "" | "." => {}
                ".." => escaped |= kept.pop().is_none(),
                c => kept.push(c),
            }
        }
        let landed = format!("/{}", kept.join("/"));
        if !escaped {
            let shown = format!("{var}{}", landed.trim_end_matches('/'));
            return Some(Target { shown, ..inside });
        }
        let landed = normalize(Path::new(&landed));
        let loc = match self.locate(&landed) {
            Loc::Inside | Loc::Outside | Loc::DevSink => Loc::Unknown,
            other => other,
        };
        let shown = format!(
            "{raw} (outside {var}, which can reach {})",
            landed.display()
        );
        Some(Target {
            loc,
            ..Target::unknown(&shown)
        })
    }

    /// A path known only at run time whose literal start is an absolute
    /// folder (`/opt/$X`, `"/etc/${X}.conf"`): an entry below that folder.
    /// Judged there when the folder is worse than an unknown path (system,
    /// protected, `/`, a device), else unknown as before.
    fn resolve_prefixed(&self, raw: &str) -> Option<Target> {
        let prefix = literal_prefix(raw);
        let cut = prefix.rfind('/')?;
        if !prefix.starts_with('/') || prefix.split('/').any(|c| c == "..") {
            return None;
        }
        let base = normalize(Path::new(parent(&prefix, cut)));
        let loc = Some(self.locate(&base)).filter(|l| l.system())?;
        Some(Target {
            loc,
            under: true,
            ..Target::unknown(raw)
        })
    }

    /// Classifies a normalised absolute path.
    pub(super) fn locate(&self, p: &Path) -> Loc {
        if p == Path::new("/") {
            return Loc::FsRoot;
        }
        if let Ok(dev) = p.strip_prefix("/dev") {
            return device(dev);
        }
        if p == self.workspace {
            return Loc::WsRoot;
        }
        if p.starts_with(&self.workspace) {
            return Loc::Inside;
        }
        if self.workspace.starts_with(p) {
            return Loc::WsAncestor;
        }
        if self.home.as_deref() == Some(p) {
            return Loc::Home;
        }
        system_loc(p)
    }
}

/// For a glob whose first wildcard is at `glob_at` in `path`: the directory
/// it lists entries of (`/` for none), and whether it covers all of them;
/// None when the glob climbs out with `..` after its wildcard.
fn glob_below(path: &str, glob_at: usize) -> Option<(&str, bool)> {
    let cut = path.get(..glob_at)?.rfind('/')?;
    let rest = path.get(cut + 1..)?;
    let (component, tail) = rest.split_once('/').unwrap_or((rest, ""));
    if tail.split('/').any(|c| c == "..") {
        return None;
    }
    let covers_all = tail.trim_matches('/').is_empty() && wildcards_only(component);
    Some((parent(path, cut), covers_all))
}

/// The folder `path` names before the `/` at `cut` (`/` when that is the first).
fn parent(path: &str, cut: usize) -> &str {
    path.get(..cut).filter(|d| !d.is_empty()).unwrap_or("/")
}

/// The text a word surely starts with after quote removal, up to its first
/// expansion, glob or brace (`"/etc/${X}"` gives `/etc/`).
fn literal_prefix(raw: &str) -> String {
    let mut out = String::new();
    let mut single = false;
    let mut double = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ if single => out.push(c),
            '\\' => match chars.next() {
                Some(n) => out.push(n),
                None => break,
            },
            '$' | '`' => break,
            '*' | '?' | '[' | '{' | '~' if !double => break,
            _ => out.push(c),
        }
    }
    out
}

/// A glob component made only of wildcards and bracket expressions (`*`,
/// `?*`, `[!.]*`, `[a-z]*`) with at least one `*`: it matches (almost) every
/// entry of its directory.
fn wildcards_only(component: &str) -> bool {
    let mut rest = component;
    let mut star = false;
    while let Some(c) = rest.chars().next() {
        match c {
            '*' => {
                star = true;
                rest = &rest[1..];
            }
            '?' => rest = &rest[1..],
            '[' => match rest.find(']') {
                Some(end) if end > 1 => rest = &rest[end + 1..],
                _ => return false,
            },
            _ => return false,
        }
    }
    star || (!component.is_empty() && component.chars().all(|c| c == '?'))
}

fn system_loc(p: &Path) -> Loc {
    let under = |key| {
        let dirs = super::rules::raw().list("places", key);
        dirs.iter().any(|d| p.starts_with(d))
    };
    if under("tmp") {
        Loc::Outside
    } else if under("protected") {
        Loc::Protected
    } else if under("system") {
        Loc::System
    } else {
        Loc::Outside
    }
}

fn device(rel: &Path) -> Loc {
    let places = |key| super::rules::raw().list("places", key);
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    if places("dev-sinks").has(&first) {
        Loc::DevSink
    } else if places("dev-net").has(&first) {
        Loc::DevNet
    } else if places("dev-disks").prefixes(&first) {
        Loc::DevDisk
    } else {
        Loc::DevOther
    }
}

/// Folds `.` and `..` lexically; `..` at the root stays at the root.
pub(super) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
