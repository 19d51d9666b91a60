//! Lexical path resolution: where an argument points relative to the workspace.
//! No filesystem access: `.`/`..` are folded textually, symlinks are not followed.

use super::words::Arg;
use std::path::{Component, Path, PathBuf};

/// What kind of place a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc {
    /// `/dev/null`, `/dev/stdout`, `/dev/fd/N`, ...: harmless sinks.
    DevSink,
    /// A disk device (`/dev/sda`, `/dev/nvme0n1`, ...).
    DevDisk,
    /// bash's `/dev/tcp/...` and `/dev/udp/...` network pseudo-files.
    DevNet,
    /// Any other device.
    DevOther,
    /// `/etc` and `/boot`: writes are blocked.
    Protected,
    /// System directories (`/usr`, `/var`, `/opt`, `/lib`, `/bin`, `/sbin`, ...).
    System,
    /// `/` itself.
    FsRoot,
    /// The home directory itself.
    Home,
    /// The workspace root itself.
    WsRoot,
    /// Strictly inside the workspace.
    Inside,
    /// A strict ancestor of the workspace other than `/`.
    WsAncestor,
    /// `/tmp` or below.
    Tmp,
    /// Anywhere else.
    Outside,
    /// Not known statically.
    Unknown,
}

/// A resolved argument: either one path, or "some entries below `base`" for globs.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub loc: Loc,
    /// True when this is a glob matching entries below `loc`'s directory.
    pub under: bool,
    /// True for a glob made only of wildcards (`dir/*`): it covers the whole directory.
    pub covers_all: bool,
    /// The normalised path, for reasons.
    pub shown: String,
}

/// Static facts needed to resolve paths.
pub(crate) struct Places {
    pub workspace: PathBuf,
    pub home: Option<PathBuf>,
}

impl Places {
    /// Resolves `arg` against `cwd` (None when the working directory is unknown).
    pub(crate) fn resolve(&self, arg: &Arg, cwd: Option<&Path>) -> Target {
        let unknown = Target {
            loc: Loc::Unknown,
            under: false,
            covers_all: false,
            shown: arg.raw.clone(),
        };
        let Some(text) = arg.lit() else {
            return unknown;
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
        match glob_at {
            None => {
                let p = normalize(Path::new(&full));
                Target {
                    loc: self.locate(&p),
                    under: false,
                    covers_all: false,
                    shown: p.to_string_lossy().into_owned(),
                }
            }
            Some(g) => self.resolve_glob(&full, g).unwrap_or(unknown),
        }
    }

    fn resolve_glob(&self, full: &str, glob_at: usize) -> Option<Target> {
        let head = full.get(..glob_at)?;
        let cut = head.rfind('/')?;
        let dir = full.get(..cut)?;
        let rest = full.get(cut + 1..)?;
        let (component, tail) = rest.split_once('/').unwrap_or((rest, ""));
        if tail.split('/').any(|c| c == "..") {
            return None;
        }
        let base = normalize(Path::new(if dir.is_empty() { "/" } else { dir }));
        let covers_all = tail.trim_matches('/').is_empty() && wildcards_only(component);
        Some(Target {
            loc: self.locate(&base),
            under: true,
            covers_all,
            shown: full.to_string(),
        })
    }

    /// Classifies a normalised absolute path.
    pub(crate) fn locate(&self, p: &Path) -> Loc {
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
    const PROTECTED: [&str; 2] = ["/etc", "/boot"];
    const SYSTEM: [&str; 12] = [
        "/usr", "/var", "/opt", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/sys", "/proc",
        "/root", "/srv",
    ];
    if p.starts_with("/tmp") || p.starts_with("/var/tmp") {
        return Loc::Tmp;
    }
    if PROTECTED.iter().any(|d| p.starts_with(d)) {
        return Loc::Protected;
    }
    if SYSTEM.iter().any(|d| p.starts_with(d)) {
        return Loc::System;
    }
    Loc::Outside
}

fn device(rel: &Path) -> Loc {
    const SINKS: [&str; 10] = [
        "null", "zero", "stdout", "stderr", "stdin", "tty", "fd", "full", "random", "urandom",
    ];
    const DISKS: [&str; 10] = [
        "sd", "nvme", "hd", "vd", "mmcblk", "xvd", "disk", "dm-", "md", "loop",
    ];
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    if SINKS.contains(&first.as_str()) {
        Loc::DevSink
    } else if first == "tcp" || first == "udp" {
        Loc::DevNet
    } else if DISKS.iter().any(|d| first.starts_with(d)) {
        Loc::DevDisk
    } else {
        Loc::DevOther
    }
}

/// Folds `.` and `..` lexically; `..` at the root stays at the root.
pub(crate) fn normalize(p: &Path) -> PathBuf {
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
mod tests {
    use super::*;

    fn places() -> Places {
        Places {
            workspace: PathBuf::from("/work/ws"),
            home: Some(PathBuf::from("/home/ci")),
        }
    }

    #[test]
    fn locates() {
        let p = places();
        let l = |s: &str| p.locate(&normalize(Path::new(s)));
        assert_eq!(l("/work/ws/a/.."), Loc::WsRoot);
        assert_eq!(l("/work/ws/a"), Loc::Inside);
        assert_eq!(l("/work"), Loc::WsAncestor);
        assert_eq!(l("/etc/passwd"), Loc::Protected);
        assert_eq!(l("/dev/sda1"), Loc::DevDisk);
        assert_eq!(l("/dev/null"), Loc::DevSink);
        assert_eq!(l("/../.."), Loc::FsRoot);
    }
}
