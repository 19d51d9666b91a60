//! Text helpers of the git tool: the telling line of git's stderr, one
//! line saying why git failed, credentials hidden in URLs, and bounded reads
//! of the captured output.

use std::path::Path;

use crate::tools::params::git::GitAction;
use crate::tools::params::git::GitOperation;

/// The most telling line of git's stderr (`fatal:`/`error:` first), without the prefix noise.
pub(super) fn first_error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
        .collect();
    let pick = lines
        .iter()
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or_else(|| lines.first())
        .copied()
        .unwrap_or("");
    let pick = pick
        .strip_prefix("fatal: ")
        .or_else(|| pick.strip_prefix("error: "))
        .unwrap_or(pick);
    cut(pick, 300)
}

/// `s` redacted, then cut to `max` characters.
pub(super) fn cut(s: &str, max: usize) -> String {
    let s = crate::redact::clean_str(s);
    if s.chars().count() <= max {
        s.into_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// `scheme://user:password@host/...` → `scheme://***@host/...` (anywhere in the text).
pub(super) fn hide_userinfo(s: &str) -> String {
    let Some(i) = s.find("://") else {
        return s.to_owned();
    };
    let rest = &s[i + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{}://***{}", &s[..i], &rest[at..]),
        None => s.to_owned(),
    }
}

/// At most `limit` bytes from the start of a file.
pub(super) fn read_prefix(path: &Path, limit: u64) -> Vec<u8> {
    use std::io::Read;
    let mut buf = Vec::new();
    if let Ok(f) = crate::regular::open(path) {
        let _ = f.take(limit).read_to_end(&mut buf);
    }
    buf
}

pub(super) fn shown(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.display().to_string()
    }
}

/// One line saying why git failed.
pub(super) fn failure_message(
    a: &GitAction,
    code: i32,
    stdout: &str,
    stderr: &str,
    warnings: &mut Vec<String>,
) -> String {
    let op = a.params.operation;
    if op == GitOperation::Commit
        && [
            "nothing to commit",
            "nothing added to commit",
            "no changes added to commit",
        ]
        .iter()
        .any(|m| stdout.contains(m))
    {
        warnings.push("nothing to commit".to_owned());
        return "nothing to commit: no changes are staged (stage them with an `add` step, list them in `files`, or pass `args: [--all]`)".to_owned();
    }
    if op == GitOperation::Diff && code == 1 && stderr.trim().is_empty() {
        return "git diff found differences (exit 1 with --exit-code/--quiet)".to_owned();
    }
    let why = first_error_line(stderr);
    let why = if why.is_empty() {
        first_error_line(stdout)
    } else {
        why
    };
    format!("git {} failed (exit {code}): {why}", op.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_hidden() {
        assert_eq!(
            hide_userinfo("https://x-access-token:ghp_abc@github.com/o/r.git"),
            "https://***@github.com/o/r.git"
        );
        assert_eq!(
            hide_userinfo("--repo=https://tok@h/r"),
            "--repo=https://***@h/r"
        );
        assert_eq!(hide_userinfo("https://h/r@x"), "https://h/r@x");
        assert_eq!(
            hide_userinfo("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert_eq!(hide_userinfo("main"), "main");
    }

    #[test]
    fn first_error_line_prefers_fatal() {
        assert_eq!(
            first_error_line("hint: x\nwarning: w\nfatal: not a git repository\n"),
            "not a git repository"
        );
        assert_eq!(first_error_line("\n\nsomething\n"), "something");
        assert_eq!(first_error_line(""), "");
    }
}
