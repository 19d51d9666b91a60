//! Where a push goes, read from the repository at run time: a push to a
//! repository on this machine runs that repository's `receive-pack` (with
//! hooks off, or refused when the URLs mix local and network ones), and a
//! push to the remote's own default branch (`refs/remotes/<remote>/HEAD`)
//! must be declared dangerous by the step.

use super::args;
use super::error::{GitError, Halt};
use super::runner::Git;
use crate::model::Risk;
use crate::tools::params::git::GitAction;
use crate::tools::step::Step;

/// How git runs the receiving side of a push to a repository on this machine:
/// with that repository's hooks switched off too.
pub(super) const LOCAL_RECEIVE_PACK: &str =
    "--receive-pack=git -c core.hooksPath=/dev/null receive-pack";

/// Whether a remote URL is a path on this machine (git's own rule: `file://`, or no
/// `scheme://` and no `host:` before the first slash).
pub(super) fn is_local_url(url: &str) -> bool {
    if url.starts_with("file://") {
        return true;
    }
    if url.contains("://") {
        return false;
    }
    match (url.find(':'), url.find('/')) {
        (None, _) => true,
        (Some(c), Some(s)) => s < c,
        (Some(_), None) => false,
    }
}

/// The remote a push without a repository argument goes to (git's order:
/// `branch.<b>.pushRemote`, `remote.pushDefault`, `branch.<b>.remote`, `origin`).
pub(super) fn default_push_remote(dump: &[u8], branch: Option<&str>) -> String {
    let mut keys: Vec<(String, String)> = Vec::new();
    for rec in dump.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        if let Some((k, v)) = rec.split_once('\n') {
            keys.push((k.to_owned(), v.to_owned()));
        }
    }
    let get = |k: &str| {
        keys.iter()
            .rev()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    branch
        .and_then(|b| get(&format!("branch.{b}.pushremote")))
        .or_else(|| get("remote.pushdefault"))
        .or_else(|| branch.and_then(|b| get(&format!("branch.{b}.remote"))))
        .unwrap_or_else(|| "origin".to_owned())
}

/// A push to a repository on this machine runs that repository's
/// `receive-pack` here, hooks included: plangate runs it with hooks off
/// (the flag to add). A push that mixes local and network URLs is refused.
pub(super) async fn local_receive_pack(
    git: &Git<'_>,
    a: &GitAction,
    dump: &[u8],
    branch: Option<&str>,
) -> Result<Option<String>, Halt> {
    let t = args::push_target_of(&a.params);
    let remote = t
        .remote
        .unwrap_or_else(|| default_push_remote(dump, branch));
    let looks_like_url = remote.contains(['/', ':']) || remote.starts_with('.');
    let urls: Vec<String> = if looks_like_url {
        vec![remote]
    } else {
        let got = git
            .aux(&["remote", "get-url", "--push", "--all", &remote])
            .await?;
        if got.code == 0 {
            String::from_utf8_lossy(&got.stdout)
                .lines()
                .map(str::to_owned)
                .collect()
        } else {
            // Not a configured remote: git reads the name as a path.
            vec![remote]
        }
    };
    let local = urls.iter().filter(|u| is_local_url(u)).count();
    if local == 0 {
        return Ok(None);
    }
    if local < urls.len() {
        return Err(GitError::MixedPushUrls.into());
    }
    Ok(Some(LOCAL_RECEIVE_PACK.to_owned()))
}

/// A push to the remote's own default branch (`refs/remotes/<remote>/HEAD`) is
/// dangerous even when its name is not main/master; the classifier cannot read
/// the repository, so the step must say so itself (`risk_level: dangerous`).
pub(super) async fn default_branch_check(
    git: &Git<'_>,
    a: &GitAction,
    step: &Step,
) -> Result<Option<String>, Halt> {
    let v = args::classify(&a.params);
    if v.risk >= Risk::Dangerous
        || step.declared_risk >= Risk::Dangerous
        || args::is_dry_run(&a.params)
    {
        return Ok(None);
    }
    let t = args::push_target_of(&a.params);
    let Some(remote) = t.remote.as_deref() else {
        return Ok(None);
    };
    if remote.contains(['/', ':']) || remote.starts_with('.') {
        return Ok(None);
    }
    let head_ref = format!("refs/remotes/{remote}/HEAD");
    let sym = git.aux(&["symbolic-ref", "-q", &head_ref]).await?;
    if sym.code != 0 {
        return Ok(None);
    }
    let target = String::from_utf8_lossy(&sym.stdout).trim().to_owned();
    let prefix = format!("refs/remotes/{remote}/");
    let Some(default) = target.strip_prefix(&prefix) else {
        return Ok(None);
    };
    if t.branches.iter().any(|b| b == default) {
        return Ok(Some(format!(
            "this push updates `{default}`, the default branch of `{remote}` ({head_ref}): declare `risk_level: dangerous` on the step (then it needs --risk-tolerance high or --approve)"
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_urls_and_default_push_remote() {
        for u in [
            "/srv/r.git",
            "../r.git",
            "r.git",
            "file:///srv/r",
            "./a:b",
            "C",
        ] {
            assert!(is_local_url(u), "{u}");
        }
        for u in [
            "https://h/r.git",
            "ssh://h/r",
            "git@github.com:o/r.git",
            "h:r",
        ] {
            assert!(!is_local_url(u), "{u}");
        }
        let dump =
            b"remote.pushdefault\nmirror\0branch.dev.remote\nup\0branch.dev.pushremote\nfork\0";
        assert_eq!(default_push_remote(dump, Some("dev")), "fork");
        assert_eq!(default_push_remote(dump, Some("other")), "mirror");
        assert_eq!(
            default_push_remote(b"branch.dev.remote\nup\0", Some("dev")),
            "up"
        );
        assert_eq!(default_push_remote(b"", None), "origin");
    }
}
