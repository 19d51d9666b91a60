//! Build script: records the commit plangate was built from, so that
//! `plangate --version` and every report's `plangate_version` say which code
//! produced them (`0.1.0+1a2b3c4d5e6f`, semver build metadata).
//!
//! Where the commit comes from, first match wins:
//! 1. `PLANGATE_BUILD_COMMIT` (a build without `.git`, e.g. a container build);
//! 2. `git rev-parse`, only when this crate's own directory is the top of a git
//!    checkout (a crate unpacked inside someone else's repository must not
//!    pick up that repository's commit);
//! 3. `.cargo_vcs_info.json`, which `cargo package` writes into the crate
//!    tarball (so `cargo install plangate` knows its commit too);
//! 4. none: the version is the bare package version.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PLANGATE_BUILD_COMMIT");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let dir = Path::new(&dir);
    let commit = from_env()
        .or_else(|| from_git(dir))
        .or_else(|| from_vcs_info(dir));
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let full = match &commit {
        Some(c) => format!("{version}+{c}"),
        None => version,
    };
    println!(
        "cargo:rustc-env=PLANGATE_COMMIT={}",
        commit.unwrap_or_default()
    );
    println!("cargo:rustc-env=PLANGATE_FULL_VERSION={full}");
}

/// A commit id as build metadata: 12 lowercase hex digits, or nothing.
fn short(s: &str) -> Option<String> {
    let s = s.trim();
    (s.len() >= 12 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| s[..12].to_ascii_lowercase())
}

fn from_env() -> Option<String> {
    short(&std::env::var("PLANGATE_BUILD_COMMIT").ok()?)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn from_git(dir: &Path) -> Option<String> {
    // `.git` is a directory in a clone and a file in a worktree.
    if !dir.join(".git").exists() {
        return None;
    }
    // Rebuild when HEAD moves: HEAD itself, and the branch file it points at.
    for rel in ["HEAD", "packed-refs"] {
        if let Some(p) = git(dir, &["rev-parse", "--git-path", rel]) {
            println!("cargo:rerun-if-changed={}", dir.join(p).display());
        }
    }
    if let Some(p) = git(dir, &["symbolic-ref", "-q", "HEAD"])
        .and_then(|r| git(dir, &["rev-parse", "--git-path", &r]))
    {
        println!("cargo:rerun-if-changed={}", dir.join(p).display());
    }
    short(&git(dir, &["rev-parse", "HEAD"])?)
}

fn from_vcs_info(dir: &Path) -> Option<String> {
    let p = dir.join(".cargo_vcs_info.json");
    println!("cargo:rerun-if-changed={}", p.display());
    let text = std::fs::read_to_string(p).ok()?;
    // {"git": {"sha1": "…"}, "path_in_vcs": ""}: no JSON parser in a build script for one field.
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + 6..];
    let start = rest.find('"')? + 1;
    let end = start + rest[start..].find('"')?;
    short(&rest[start..end])
}
