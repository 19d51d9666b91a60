//! Artifact path safety: a path must name a file inside the workspace and
//! never touch `.git`. Every problem of a path is reported, not only the first.

/// Every reason `path` is unsafe (empty when it is safe).
pub(crate) fn path_problems(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    if path.is_empty() {
        out.push("the path is empty: give a relative file path such as src/main.rs".to_string());
        return out;
    }
    if path.contains('\0') {
        out.push("the path contains a NUL byte".to_string());
    }
    if path.chars().any(|c| c.is_control() && c != '\0') {
        out.push("the path contains control characters".to_string());
    }
    if path.contains('\\') {
        out.push("the path contains a backslash: use '/' between directories".to_string());
    }
    if path.starts_with('/') || path.starts_with('\\') {
        out.push("the path is absolute: make it relative to the workspace root".to_string());
    }
    if path.starts_with('~') {
        out.push(
            "the path starts with '~' (home directory): make it relative to the workspace root"
                .to_string(),
        );
    }
    let mut chars = path.chars();
    if let (Some(d), Some(':')) = (chars.next(), chars.next())
        && d.is_ascii_alphabetic()
    {
        out.push(
            "the path starts with a Windows drive letter: make it relative to the workspace root"
                .to_string(),
        );
    }
    if path.ends_with('/') {
        out.push("the path ends with '/' (a directory): name a file".to_string());
    }
    let mut dotdot = false;
    let mut git = false;
    for seg in path.split(['/', '\\']) {
        // Windows ignores trailing dots and spaces: ".. " is "..", ".git." is ".git".
        let trimmed = seg.trim_end_matches([' ', '.']);
        if seg.trim_end_matches(' ') == ".."
            || (trimmed.is_empty() && seg.len() >= 2 && seg.contains(".."))
        {
            dotdot = true;
        }
        let lower = trimmed.to_ascii_lowercase();
        if lower == ".git" || lower == "git~1" {
            git = true;
        }
    }
    if dotdot {
        out.push("the path has a '..' segment: it must stay inside the workspace".to_string());
    }
    if git {
        out.push(
            "the path is inside .git: artifacts may not touch the repository metadata".to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::path_problems;

    #[test]
    fn safe_paths() {
        for p in [
            "a.txt",
            "src/main.rs",
            ".github/workflows/ci.yml",
            "a/.gitignore",
            "docs/..md",
            "./x",
            "a..b/c",
        ] {
            assert!(path_problems(p).is_empty(), "{p}: {:?}", path_problems(p));
        }
    }

    #[test]
    fn unsafe_paths() {
        for p in [
            "",
            "/etc/passwd",
            "\\x",
            "~/.ssh/id",
            "C:foo",
            "c:/x",
            "a\0b",
            "dir/",
            ".git",
            ".git/config",
            "a/.git/hooks/x",
            "a/.GIT/x",
            "../x",
            "a/../../b",
            "a\\b",
            "a\nb",
            "x/.. /y",
        ] {
            assert!(!path_problems(p).is_empty(), "{p:?} should be unsafe");
        }
    }
}
