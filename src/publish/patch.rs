//! The patch policy: what a pull request plangate publishes may change. A pure
//! function over the run's changed files (the diff summary's list, with each
//! file's new size): protected paths (built-in, always on, and the policy's
//! own), `allowed_files`, `excluded_files`, `max_files`, `max_bytes`.
//!
//! Paths are compared after normalisation, as an attacker would vary them:
//! `\` and repeated `/` are separators, `.` segments go, `..` is resolved (a
//! path that climbs out of the workspace is a violation), trailing dots and
//! spaces of a segment go (Windows drops them), and protected and excluded
//! paths match whatever the case (`.GitHub/` is `.github/` on macOS and
//! Windows). A path holding an invisible, bidirectional or control character
//! is a violation in itself.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::model::publish::{PatchAction, PatchPolicy};

/// The built-in protected paths (matched lower-cased, `**/` = in any folder):
/// CI configuration, agent instruction files, dependency manifests and
/// lockfiles, code owners. Every top-level dot-folder is protected besides.
pub(crate) const PROTECTED: &[&str] = &[
    ".github/**",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".gitmodules",
    ".gitattributes",
    ".pre-commit-config.yaml",
    ".travis.yml",
    "**/agents.md",
    "**/claude.md",
    "**/gemini.md",
    "**/.cursorrules",
    "**/.claude/**",
    "**/.codex/**",
    "**/.gemini/**",
    "**/codeowners",
    "**/cargo.toml",
    "**/cargo.lock",
    "**/rust-toolchain",
    "**/rust-toolchain.toml",
    "**/build.rs",
    "**/package.json",
    "**/package-lock.json",
    "**/npm-shrinkwrap.json",
    "**/yarn.lock",
    "**/pnpm-lock.yaml",
    "**/pnpm-workspace.yaml",
    "**/bun.lockb",
    "**/bun.lock",
    "**/.npmrc",
    "**/.yarnrc",
    "**/.yarnrc.yml",
    "**/go.mod",
    "**/go.sum",
    "**/go.work",
    "**/requirements*.txt",
    "**/constraints*.txt",
    "**/pyproject.toml",
    "**/poetry.lock",
    "**/pipfile",
    "**/pipfile.lock",
    "**/uv.lock",
    "**/setup.py",
    "**/setup.cfg",
    "**/gemfile",
    "**/gemfile.lock",
    "**/*.gemspec",
    "**/composer.json",
    "**/composer.lock",
    "**/pom.xml",
    "**/build.gradle",
    "**/build.gradle.kts",
    "**/settings.gradle",
    "**/settings.gradle.kts",
    "**/gradle.lockfile",
    "**/gradle-wrapper.properties",
    "**/packages.lock.json",
    "**/directory.packages.props",
    "**/*.csproj",
    "**/mix.exs",
    "**/mix.lock",
    "**/pubspec.yaml",
    "**/pubspec.lock",
    "**/package.swift",
    "**/package.resolved",
    "**/podfile",
    "**/podfile.lock",
    "**/flake.nix",
    "**/flake.lock",
];

/// CI configuration that runs on push (matched lower-cased like
/// [`PROTECTED`], and protected too): a branch holding a change to one runs that code with the
/// repository's secrets as soon as it is pushed, draft or not. A `draft`
/// verdict on such a path becomes `issue` (nothing pushed); `block` stays.
pub(crate) const RUNS_ON_PUSH: &[&str] = &[
    ".github/workflows/**",
    ".github/actions/**",
    "**/action.yml",
    "**/action.yaml",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".gitea/**",
    ".forgejo/**",
    ".travis.yml",
    ".circleci/**",
    ".buildkite/**",
    ".drone.yml",
    ".drone.yaml",
    ".drone.star",
    ".woodpecker.yml",
    ".woodpecker.yaml",
    ".woodpecker/**",
    ".cirrus.yml",
    ".cirrus.star",
    ".semaphore/**",
    ".appveyor.yml",
    "appveyor.yml",
    "azure-pipelines.yml",
    "azure-pipelines.yaml",
    ".azure-pipelines/**",
    ".azuredevops/**",
    "bitbucket-pipelines.yml",
    "**/jenkinsfile",
    "cloudbuild.yaml",
    "cloudbuild.yml",
    ".pre-commit-config.yaml",
];

/// One changed file as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub(crate) struct PatchFile {
    /// Its path, relative to the workspace.
    pub path: String,
    /// Where a renamed file was (checked too).
    #[serde(default)]
    pub old_path: Option<String>,
    /// Its new size in bytes (0 when deleted).
    #[serde(default)]
    pub bytes: u64,
}

/// One reason the patch may not be published as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// The rule, in words, naming the path.
    pub why: String,
    /// What it does to the pull request.
    pub action: PatchAction,
}

/// A path as compared: separators unified, `.` and empty segments dropped,
/// `..` resolved, trailing dots and spaces of each segment dropped. Err: the
/// path climbs out, is empty, or holds a character that hides what it is.
pub(crate) fn normalise(path: &str) -> Result<String, String> {
    if let Some(c) = path.chars().find(|c| hidden(*c)) {
        return Err(format!(
            "path {path:?} holds the invisible or control character U+{:04X}",
            u32::from(c)
        ));
    }
    let mut resolved: Vec<&str> = Vec::new();
    for seg in path.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => {
                if resolved.pop().is_none() {
                    return Err(format!("path {path:?} climbs out of the workspace"));
                }
            }
            s => {
                let s = s.trim_end_matches(['.', ' ']);
                if s.is_empty() {
                    return Err(format!(
                        "path {path:?} has a segment of only dots and spaces"
                    ));
                }
                resolved.push(s);
            }
        }
    }
    if resolved.is_empty() {
        return Err(format!("path {path:?} names no file"));
    }
    Ok(resolved.join("/"))
}

/// Characters that make a path read as something it is not.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(u32::from(c),
            0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180E
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164
            | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB
            | 0xE0000..=0xE0FFF)
}

fn globs<'a>(
    patterns: impl IntoIterator<Item = &'a str>,
    fold: bool,
) -> Result<Option<GlobSet>, String> {
    let mut b = GlobSetBuilder::new();
    let mut any = false;
    for p in patterns {
        crate::policy::glob::check_depth(p).map_err(|why| format!("`{p}`: {why}"))?;
        let p = if fold { p.to_lowercase() } else { p.to_owned() };
        let g = GlobBuilder::new(&p)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("`{p}`: {}", e.kind()))?;
        b.add(g);
        any = true;
    }
    if !any {
        return Ok(None);
    }
    b.build().map(Some).map_err(|e| e.kind().to_string())
}

/// Is `norm` (normalised) protected by the built-in list or `extra`?
fn protected(norm: &str, extra: Option<&GlobSet>, builtin: &GlobSet) -> bool {
    let folded = norm.to_lowercase();
    let top_dot_folder = folded.starts_with('.') && folded.contains('/');
    top_dot_folder || builtin.is_match(&folded) || extra.is_some_and(|g| g.is_match(&folded))
}

/// What a change to protected `norm` does under `action`: `draft` becomes
/// `issue` for CI configuration that runs on push ([`RUNS_ON_PUSH`]), with why.
fn protected_violation(raw: &str, norm: &str, action: PatchAction, ci: &GlobSet) -> Violation {
    if action == PatchAction::Draft && ci.is_match(norm.to_lowercase()) {
        return Violation {
            why: format!(
                "`{raw}` is CI configuration that runs with the repository's secrets as soon as it is pushed, even on a draft"
            ),
            action: PatchAction::Issue,
        };
    }
    Violation {
        why: format!("`{raw}` is a protected path"),
        action,
    }
}

/// Every violation of `files` against the built-in protected paths and each
/// policy of `policies` (each must pass). A glob that does not compile is a
/// violation (block): a broken rule never lets a patch through.
pub(crate) fn evaluate(files: &[PatchFile], policies: &[PatchPolicy]) -> Vec<Violation> {
    let mut out = Vec::new();
    let block = |why: String| Violation {
        why,
        action: PatchAction::Block,
    };
    let builtin = match globs(PROTECTED.iter().chain(RUNS_ON_PUSH).copied(), true) {
        Ok(Some(g)) => g,
        Ok(None) | Err(_) => {
            return vec![block("the built-in protected paths do not compile".into())];
        }
    };
    let ci = match globs(RUNS_ON_PUSH.iter().copied(), true) {
        Ok(Some(g)) => g,
        Ok(None) | Err(_) => {
            return vec![block("the built-in CI paths do not compile".into())];
        }
    };
    let default_policy = PatchPolicy::default();
    let all: Vec<&PatchPolicy> = if policies.is_empty() {
        vec![&default_policy]
    } else {
        policies.iter().collect()
    };
    let mut paths: Vec<(String, String)> = Vec::new();
    for f in files {
        for raw in std::iter::once(&f.path).chain(f.old_path.as_ref()) {
            match normalise(raw) {
                Ok(n) => paths.push((raw.clone(), n)),
                Err(why) => out.push(block(why)),
            }
        }
    }
    for p in all {
        let protected_action = p.protected.unwrap_or(PatchAction::Block);
        let other = p.on_violation.unwrap_or(PatchAction::Block);
        let sets = (
            globs(p.protected_paths.iter().map(String::as_str), true),
            globs(p.excluded_files.iter().map(String::as_str), true),
            p.allowed_files
                .as_ref()
                .map(|a| globs(a.iter().map(String::as_str), false)),
        );
        let (extra, excluded, allowed) = match sets {
            (Ok(e), Ok(x), None) => (e, x, None),
            (Ok(e), Ok(x), Some(Ok(a))) => (e, x, Some(a)),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Some(Err(e))) => {
                out.push(block(format!("the patch policy's glob {e}")));
                continue;
            }
        };
        for (raw, norm) in &paths {
            if protected(norm, extra.as_ref(), &builtin) {
                out.push(protected_violation(raw, norm, protected_action, &ci));
            }
            if excluded
                .as_ref()
                .is_some_and(|g| g.is_match(norm.to_lowercase()))
            {
                out.push(Violation {
                    why: format!("`{raw}` is in excluded_files"),
                    action: other,
                });
            }
            if let Some(allowed) = &allowed
                && !allowed.as_ref().is_some_and(|g| g.is_match(norm))
            {
                out.push(Violation {
                    why: format!("`{raw}` is not in allowed_files"),
                    action: other,
                });
            }
        }
        let count = u64::try_from(files.len()).unwrap_or(u64::MAX);
        if let Some(max) = p.max_files
            && count > max
        {
            out.push(Violation {
                why: format!("{count} files changed, more than max_files {max}"),
                action: other,
            });
        }
        let bytes: u64 = files.iter().map(|f| f.bytes).fold(0, u64::saturating_add);
        if let Some(max) = p.max_bytes
            && bytes > max
        {
            out.push(Violation {
                why: format!("{bytes} bytes changed, more than max_bytes {max}"),
                action: other,
            });
        }
    }
    out.dedup();
    out
}

/// The strictest action of `violations` (None: the patch passes).
pub(crate) fn verdict(violations: &[Violation]) -> Option<PatchAction> {
    violations.iter().map(|v| v.action).max()
}

#[cfg(test)]
#[path = "patch_tests.rs"]
mod tests;
