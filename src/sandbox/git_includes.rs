//! The configuration files git includes from the workspace: what
//! `include.path` and `includeIf.*.path` (whatever their condition) lead
//! to, recursively, from every configuration file git reads for the
//! workspace's repository and its nested ones (and from the user's global
//! and system files). A step below dangerous may change none of them, as it
//! may not change `.git/config` ([`super::git_guard`] records them with
//! `.git` and puts them back): otherwise a step that appends
//! `core.fsmonitor` to an included `shared.gitconfig` has the user's next
//! `git status` run it.
//!
//! Each include is resolved as the kernel would resolve git's path: a
//! relative one against the folder of the including file's path, `~/`
//! against `$HOME`, every symbolic link on the way followed. The file it
//! leads to (present or not: git skips a missing one, so creating it counts)
//! is kept when it lies inside the workspace, and so is every link on the
//! way inside it (pointing one elsewhere counts).

use std::path::{Component, Path, PathBuf};

/// How deep includes are followed (git stops at 10).
const MAX_DEPTH: usize = 10;
/// Most configuration files read; beyond, the step is refused (fail-close).
const MAX_FILES: usize = 4096;
/// Largest configuration file read; a larger one refuses the step.
const MAX_CONFIG: u64 = 1024 * 1024;
/// Most links followed resolving one path (the kernel's limit).
const MAX_LINKS: usize = 40;

/// The paths (relative to `workspace`) of the files the configuration files
/// `configs` (absolute paths as git names them) include from inside the
/// workspace, recursively, and of the links on the way there.
pub(crate) fn included(workspace: &Path, configs: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let Ok(ws) = workspace.canonicalize() else {
        return Ok(Vec::new());
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<(PathBuf, usize)> = configs.iter().map(|p| (p.clone(), 0)).collect();
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some((file, depth)) = queue.pop() {
        if depth > MAX_DEPTH || seen.contains(&file) {
            continue;
        }
        if seen.len() >= MAX_FILES {
            return Err(std::io::Error::other(format!(
                "more than {MAX_FILES} git configuration files include one another: too many to guard"
            )));
        }
        seen.push(file.clone());
        for value in include_values(&file)? {
            let Some(target) = target(&file, &value) else {
                continue;
            };
            let (real, links) = resolve(&target);
            for p in links.iter().chain(std::iter::once(&real)) {
                if let Ok(rel) = p.strip_prefix(&ws)
                    && !rel.as_os_str().is_empty()
                    && !out.iter().any(|o| o == rel)
                {
                    out.push(rel.to_path_buf());
                }
            }
            queue.push((target, depth + 1));
        }
    }
    out.sort();
    Ok(out)
}

/// The values of the include keys of the configuration file `file` (none
/// when it is missing or not a regular file: git reads nothing there). An
/// error when it is too large to read.
fn include_values(file: &Path) -> std::io::Result<Vec<String>> {
    let Ok(meta) = std::fs::metadata(file) else {
        return Ok(Vec::new());
    };
    if !meta.is_file() {
        return Ok(Vec::new());
    }
    if meta.len() > MAX_CONFIG {
        return Err(std::io::Error::other(format!(
            "the git configuration file `{}` is larger than {} MiB: too large to look for its includes",
            file.display(),
            MAX_CONFIG / 1024 / 1024
        )));
    }
    // Opened without blocking, regular files only: one swapped since is read as nothing.
    let Ok(bytes) = crate::regular::read(file) else {
        return Ok(Vec::new());
    };
    // What plangate's reader cannot take (continued lines...), git reads
    // (from the bytes read, never from the path again); a file git cannot
    // read makes git stop: it includes nothing.
    let entries = match std::str::from_utf8(&bytes)
        .ok()
        .and_then(super::git_config::config_entries)
    {
        Some(e) => e,
        None => git_entries(&bytes),
    };
    Ok(entries
        .into_iter()
        .filter(|(k, _)| super::git_creds::is_include(k))
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
        .collect())
}

/// The entries of configuration text as git reads them (`git config
/// --file - --list`, includes not followed); none when git cannot read it.
fn git_entries(bytes: &[u8]) -> Vec<(String, String)> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let child = Command::new(crate::environ::git())
        .args(["config", "--no-includes", "--null", "--list", "--file", "-"])
        .current_dir("/")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return Vec::new();
    };
    let input = bytes.to_vec();
    let stdin = child.stdin.take();
    // Written beside the read: a large answer never waits on a full pipe.
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            let _ = s.write_all(&input);
        }
    });
    let out = child.wait_with_output();
    let _ = writer.join();
    let Ok(out) = out else {
        return Vec::new();
    };
    if !out.status.success() {
        return Vec::new();
    }
    out.stdout
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| {
            let r = String::from_utf8_lossy(r);
            let (k, v) = r.split_once('\n').unwrap_or((&r, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// Where git looks for the include `value` of `file`: `~/` against
/// `$HOME`, a relative path against the folder of `file`'s path. An
/// `:(optional)` prefix is dropped.
fn target(file: &Path, value: &str) -> Option<PathBuf> {
    let value = value.strip_prefix(":(optional)").unwrap_or(value);
    if let Some(rest) = value.strip_prefix("~/") {
        return crate::environ::var_os("HOME").map(|h| PathBuf::from(h).join(rest));
    }
    if value.starts_with('~') || value.starts_with("%(prefix)") {
        return None;
    }
    Some(file.parent().unwrap_or(Path::new("/")).join(value))
}

/// `path` resolved as the kernel resolves it (links followed, `..` after
/// them), with every link met on the way; a missing part is taken as named.
fn resolve(path: &Path) -> (PathBuf, Vec<PathBuf>) {
    let mut links = Vec::new();
    let mut cur = PathBuf::from("/");
    // What is left to walk, last part first.
    let mut owned: Vec<PathBuf> = path
        .components()
        .rev()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut hops = 0usize;
    while let Some(part) = owned.pop() {
        match part.components().next() {
            Some(Component::RootDir) => cur = PathBuf::from("/"),
            Some(Component::ParentDir) => {
                cur.pop();
            }
            Some(Component::Normal(name)) => {
                let next = cur.join(name);
                match next.symlink_metadata() {
                    Ok(m) if m.is_symlink() && hops < MAX_LINKS => {
                        hops += 1;
                        links.push(next.clone());
                        if let Ok(t) = std::fs::read_link(&next) {
                            owned
                                .extend(t.components().rev().map(|c| PathBuf::from(c.as_os_str())));
                        }
                    }
                    _ => cur = next,
                }
            }
            _ => {}
        }
    }
    (cur, links)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_inside_the_workspace_are_found_through_links_and_nesting() {
        let t = tempfile::tempdir().expect("tmp");
        let ws = t.path().canonicalize().expect("canon");
        std::fs::create_dir_all(ws.join(".git")).expect("mkdir");
        std::fs::create_dir_all(ws.join("real")).expect("mkdir");
        std::fs::write(
            ws.join(".git/config"),
            "[core]\n\tbare = false\n[include]\n\tpath = ../shared.gitconfig\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = \"../missing.gitconfig\" ; c\n",
        )
        .expect("write");
        std::fs::write(
            ws.join("shared.gitconfig"),
            "[include]\n\tpath = lnk/deep.gitconfig\n\tpath = /etc/elsewhere\n",
        )
        .expect("write");
        std::os::unix::fs::symlink("real", ws.join("lnk")).expect("symlink");
        std::fs::write(
            ws.join("real/deep.gitconfig"),
            "[include]\n\tpath = ../shared.gitconfig\n",
        )
        .expect("write");
        // A continued line: plangate's reader refuses it, git reads it.
        std::fs::write(
            ws.join(".git/config.worktree"),
            "[include]\n\tpath = ../sha\\\nred.gitconfig\n",
        )
        .expect("write");
        assert_eq!(
            included(&ws, &[ws.join(".git/config.worktree")]).expect("included"),
            [
                PathBuf::from("lnk"),
                PathBuf::from("real/deep.gitconfig"),
                PathBuf::from("shared.gitconfig"),
            ]
        );
        let found = included(&ws, &[ws.join(".git/config")]).expect("included");
        assert_eq!(
            found,
            [
                PathBuf::from("lnk"),
                PathBuf::from("missing.gitconfig"),
                PathBuf::from("real/deep.gitconfig"),
                PathBuf::from("shared.gitconfig"),
            ]
        );
    }
}
