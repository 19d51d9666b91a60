//! Entry names and exclude patterns (public for the fuzz target; pure but
//! for `shown`, which redacts): what an archive entry may be called before
//! plangate writes anything under that name.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Longest entry name shown in a message, in characters.
const SHOWN_CHARS: usize = 200;

/// An entry name as it may appear in a one-line message: lossy UTF-8,
/// control characters escaped, cut at 200 characters. A name that is cut
/// or escaped is redacted first (`redact::clean_str`, which also sees a
/// secret split by control bytes): a cut would keep a secret's prefix and
/// an escape (`\u{1b}`) would split it, where no later scan recognises
/// either. Other names are left whole for the sweep, which reports what it
/// masks.
pub fn shown(raw: &[u8]) -> String {
    let lossy = String::from_utf8_lossy(raw);
    let text = if lossy.chars().any(char::is_control) || lossy.chars().nth(SHOWN_CHARS).is_some() {
        crate::redact::clean_str(&lossy).into_owned()
    } else {
        lossy.into_owned()
    };
    let mut s = String::new();
    for (i, c) in text.chars().enumerate() {
        if i >= SHOWN_CHARS {
            s.push('…');
            break;
        }
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    s
}

/// A path as shown in messages and in `files` (`/`-separated).
pub(crate) fn show_path(p: &Path) -> String {
    shown(p.as_os_str().as_bytes())
}

/// Why an entry name is refused (the text follows "entry `NAME` ").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// A NUL byte.
    #[error("has a NUL byte in its name")]
    Nul,
    /// A backslash.
    #[error(
        "has a backslash in its name (a Windows path separator: refused so `..\\` tricks cannot work)"
    )]
    Backslash,
    /// Starts with `/`.
    #[error("has an absolute name: it would leave the destination")]
    Absolute,
    /// `C:` and the like.
    #[error("has a Windows drive prefix: it would leave the destination")]
    Drive,
    /// A `..` component.
    #[error("leaves the destination (`..` in its name)")]
    DotDot,
    /// A `.git` component.
    #[error(
        "writes into a `.git` directory (it could plant hooks or config that a later git step would run)"
    )]
    Git,
}

/// Why `exclude_patterns` do not compile.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExcludeError {
    /// One pattern.
    #[error("exclude pattern `{pattern}`: {source}")]
    Pattern {
        /// The pattern as written.
        pattern: String,
        /// The glob error.
        #[source]
        source: globset::Error,
    },
    /// The set.
    #[error("{0}")]
    Set(#[source] globset::Error),
    /// One pattern nested too deeply.
    #[error("exclude pattern `{pattern}`: {why}")]
    Nested {
        /// The pattern as written.
        pattern: String,
        /// Why.
        why: String,
    },
}

/// The relative path an entry name stands for, or why it is refused. `Ok(None)`
/// is the archive's root (``, `.`, `./`). The rules: no NUL byte, no backslash
/// (a Windows separator that would make `..\..\x` a `..` on the host that
/// reads it), no absolute name, no Windows drive (`C:`), no `..` component
/// (even one that would stay inside: an archive that needs one is hostile), no
/// `.git` component (hooks and config planted there would run in a later git step).
/// `.` and empty components are dropped (`./a//b` is `a/b`).
pub fn normalize(raw: &[u8]) -> Result<Option<PathBuf>, NameError> {
    if raw.contains(&0) {
        return Err(NameError::Nul);
    }
    if raw.contains(&b'\\') {
        return Err(NameError::Backslash);
    }
    if raw.first() == Some(&b'/') {
        return Err(NameError::Absolute);
    }
    if raw.len() >= 2 && raw[0].is_ascii_alphabetic() && raw[1] == b':' {
        return Err(NameError::Drive);
    }
    let mut out = PathBuf::new();
    for part in raw.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(NameError::DotDot),
            name if name.eq_ignore_ascii_case(b".git") => {
                return Err(NameError::Git);
            }
            name => out.push(OsStr::from_bytes(name)),
        }
    }
    Ok(if out.as_os_str().is_empty() {
        None
    } else {
        Some(out)
    })
}

/// Where a relative symlink target lands, resolved by name only against the
/// link's directory (`dir`, relative to the destination); `None` if it climbs
/// above the destination or is absolute.
pub fn lexical_target(dir: &Path, target: &[u8]) -> Option<PathBuf> {
    if target.first() == Some(&b'/') {
        return None;
    }
    let mut stack: Vec<OsString> = dir.iter().map(OsStr::to_owned).collect();
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                stack.pop()?;
            }
            name => stack.push(OsStr::from_bytes(name).to_owned()),
        }
    }
    Some(stack.iter().collect())
}

/// The `exclude_patterns` of a step. A path is left out when a pattern matches
/// the path itself, one of its parent directories, or any one component's
/// name: `*.log`, `node_modules`, `build/**` and `docs/*.tmp` all do what
/// they say (`*` crosses `/`).
#[derive(Debug, Clone)]
pub(crate) struct Excludes {
    set: GlobSet,
}

impl Excludes {
    /// Compile the patterns; `None` when there are none.
    pub(crate) fn new(patterns: &[String]) -> Result<Option<Excludes>, ExcludeError> {
        let mut b = GlobSetBuilder::new();
        let mut any = false;
        for p in patterns.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
            crate::policy::glob::check_depth(p).map_err(|why| ExcludeError::Nested {
                pattern: p.to_owned(),
                why,
            })?;
            b.add(Glob::new(p).map_err(|source| ExcludeError::Pattern {
                pattern: p.to_owned(),
                source,
            })?);
            any = true;
        }
        if !any {
            return Ok(None);
        }
        b.build()
            .map(|set| Some(Excludes { set }))
            .map_err(ExcludeError::Set)
    }

    /// Whether `rel` (relative, normalised) is left out.
    pub(crate) fn matches(&self, rel: &Path) -> bool {
        rel.ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .any(|a| self.set.is_match(a))
            || rel.iter().any(|c| self.set.is_match(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> String {
        match normalize(raw.as_bytes()) {
            Ok(Some(p)) => p.to_string_lossy().into_owned(),
            Ok(None) => "<root>".to_owned(),
            Err(e) => panic!("{raw}: {e}"),
        }
    }

    fn bad(raw: &[u8]) -> String {
        match normalize(raw) {
            Err(e) => e.to_string(),
            Ok(p) => panic!("{} accepted as {p:?}", shown(raw)),
        }
    }

    #[test]
    fn ordinary_names_are_normalised() {
        assert_eq!(ok("a/b.txt"), "a/b.txt");
        assert_eq!(ok("./a//b/"), "a/b");
        assert_eq!(ok("dir/"), "dir");
        assert_eq!(ok("."), "<root>");
        assert_eq!(ok("./"), "<root>");
        assert_eq!(ok(""), "<root>");
        assert_eq!(ok("a..b/..c"), "a..b/..c");
        assert_eq!(ok("ação/ñ.txt"), "ação/ñ.txt");
    }

    #[test]
    fn hostile_names_are_refused_with_their_rule() {
        assert!(bad(b"../etc/passwd").contains("leaves the destination"));
        assert!(bad(b"a/../../b").contains("`..`"));
        assert!(bad(b"a/..").contains("`..`"));
        assert!(bad(b"/etc/passwd").contains("absolute"));
        assert!(bad(b"//x").contains("absolute"));
        assert!(bad(b"C:/Windows/x").contains("drive"));
        assert!(bad(b"c:x").contains("drive"));
        assert!(bad(b"..\\..\\x").contains("backslash"));
        assert!(bad(b"a\\b").contains("backslash"));
        assert!(bad(b"a\0b").contains("NUL"));
    }

    #[test]
    fn names_in_messages_stay_on_one_line() {
        assert_eq!(shown(b"a\nb"), "a\\nb");
        assert_eq!(shown(b"\x1b[31m"), "\\u{1b}[31m");
        assert_eq!(shown(&[b'x'; 300]).chars().count(), SHOWN_CHARS + 1);
        assert_eq!(shown(b"\xff"), "\u{fffd}");
        // Cut or escaped: redacted first, so no prefix of the key is left.
        let key = "AKIAZ7Q4NX2LMRBT5KPW";
        let long = format!("{}-{key}", "x".repeat(190));
        assert!(shown(long.as_bytes()).contains("[REDACTED"));
        let split = format!("a-{}\x1b[0m{}", &key[..12], &key[12..]);
        assert!(!shown(split.as_bytes()).contains(&key[..12]));
    }

    #[test]
    fn symlink_targets_resolve_by_name() {
        let t = |dir: &str, target: &str| {
            lexical_target(Path::new(dir), target.as_bytes())
                .map(|p| p.to_string_lossy().into_owned())
        };
        assert_eq!(t("a/b", "../c").as_deref(), Some("a/c"));
        assert_eq!(t("a", "..").as_deref(), Some(""));
        assert_eq!(t("a", "../.."), None);
        assert_eq!(t("", "x/../../y"), None);
        assert_eq!(t("a", "/etc"), None);
        assert_eq!(t("", "./x//y").as_deref(), Some("x/y"));
    }

    #[test]
    fn excludes_match_paths_parents_and_names() {
        let x = Excludes::new(&[
            "*.log".to_owned(),
            "node_modules".to_owned(),
            "build/**".to_owned(),
            " ".to_owned(),
        ])
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("patterns"));
        for p in [
            "a.log",
            "deep/dir/a.log",
            "node_modules",
            "web/node_modules/x/y.js",
            "build/out.o",
        ] {
            assert!(x.matches(Path::new(p)), "{p}");
        }
        for p in [
            "a.txt",
            "logs/a.txt",
            "build",
            "rebuild/x",
            "node_modules2/a",
        ] {
            assert!(!x.matches(Path::new(p)), "{p}");
        }
        assert!(matches!(Excludes::new(&[]), Ok(None)));
        assert!(
            Excludes::new(&["a[".to_owned()])
                .err()
                .is_some_and(|e| e.to_string().contains("a["))
        );
    }
}

#[cfg(test)]
mod git_dir_tests {
    use super::normalize;

    #[test]
    fn entries_inside_a_git_directory_are_refused() {
        for name in [
            ".git/hooks/pre-commit",
            "sub/.git/config",
            ".GIT/config",
            ".git",
        ] {
            let why = normalize(name.as_bytes())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(why.contains("`.git`"), "{name}: {why}");
        }
        assert!(normalize(b".github/workflows/ci.yml").is_ok());
        assert!(normalize(b"docs/.gitignore").is_ok());
    }
}
