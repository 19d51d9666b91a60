//! The repository's configuration, read before git runs: filter and merge
//! drivers are emptied (a `required` filter then makes git fail, an optional
//! one is skipped with a warning), and a push, pull or `commit --trailer`
//! is refused when the configuration names a program git would run for it.

use std::collections::BTreeSet;

use super::error::{GitError, Halt};
use super::runner::{Aux, Git};
use crate::policy::git as rules;
use crate::tools::params::git::{GitOperation, GitParams};

/// Reads the configuration keys that matter (drivers, remote programs,
/// push remotes, trailer commands) as NUL-separated `key\nvalue` records.
pub(super) async fn dump(git: &Git<'_>) -> Result<Aux, Halt> {
    git.aux(&[
        "config",
        "--null",
        "--get-regexp",
        r"^(filter|merge|remote)\.|^core\.alternaterefscommand$|^branch\..*\.(pushremote|remote)$|^trailer\..*\.(cmd|command)$",
    ])
    .await
}

/// Whether the step contacts a remote, and whether it is a commit with
/// `--trailer` (written in full or abbreviated: the rules resolve it).
pub(super) fn uses(p: &GitParams) -> (bool, bool) {
    let network = matches!(p.operation, GitOperation::Push | GitOperation::Pull);
    let trailers = p.operation == GitOperation::Commit
        && rules::parse(p.operation, &p.args).has_name("--trailer");
    (network, trailers)
}

/// Read the repository's configuration for drivers and remote programs.
/// Returns overrides, and an error when a push or pull would run a configured program.
pub(super) fn neutralise(
    dump: &[u8],
    network: bool,
    trailers: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<(String, String)>, GitError> {
    let mut overrides: Vec<(String, String)> = Vec::new();
    let mut filters: BTreeSet<String> = BTreeSet::new();
    let mut required: BTreeSet<String> = BTreeSet::new();
    let mut merges: BTreeSet<String> = BTreeSet::new();
    for rec in dump.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let rec = String::from_utf8_lossy(rec);
        let (key, value) = rec.split_once('\n').unwrap_or((&rec, "true"));
        let (Some(first), Some(last)) = (key.find('.'), key.rfind('.')) else {
            continue;
        };
        if first == last {
            if key == "core.alternaterefscommand" && network {
                return Err(GitError::AlternateRefs);
            }
            continue;
        }
        let (section, name, var) = (&key[..first], &key[first + 1..last], &key[last + 1..]);
        match (section, var) {
            ("filter", "clean" | "smudge" | "process") => {
                filters.insert(name.to_owned());
            }
            ("filter", "required") if matches!(value, "true" | "yes" | "on" | "1") => {
                required.insert(name.to_owned());
            }
            ("merge", "driver") => {
                merges.insert(name.to_owned());
            }
            ("trailer", "cmd" | "command") if trailers => {
                return Err(GitError::TrailerCommand {
                    name: name.to_owned(),
                    var: var.to_owned(),
                });
            }
            ("remote", "vcs" | "uploadpack" | "receivepack") if network => {
                return Err(GitError::RemoteProgram {
                    name: name.to_owned(),
                    var: var.to_owned(),
                });
            }
            _ => {}
        }
    }
    for name in &filters {
        for var in ["clean", "smudge", "process"] {
            overrides.push((format!("filter.{name}.{var}"), String::new()));
        }
        if !required.contains(name) {
            warnings.push(format!(
                "filter driver `{name}` is disabled (plangate runs no configured programs): files using it are read and written unfiltered"
            ));
        }
    }
    for name in &merges {
        overrides.push((format!("merge.{name}.driver"), String::new()));
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutralise_empties_drivers_and_refuses_remote_programs() {
        let dump = b"filter.lfs.clean\ngit-lfs clean -- %f\0filter.lfs.required\ntrue\0filter.strip.clean\nnbstripout\0merge.ours.driver\ntrue\0remote.origin.url\n/x\0";
        let mut w = Vec::new();
        let o = neutralise(dump, false, false, &mut w).unwrap_or_default();
        assert!(o.contains(&("filter.lfs.clean".to_owned(), String::new())));
        assert!(o.contains(&("filter.lfs.process".to_owned(), String::new())));
        assert!(o.contains(&("filter.strip.smudge".to_owned(), String::new())));
        assert!(o.contains(&("merge.ours.driver".to_owned(), String::new())));
        assert_eq!(w.len(), 1, "only the optional filter warns: {w:?}");
        assert!(w[0].contains("`strip`"));
        let bad = b"remote.origin.uploadpack\ntouch /tmp/x; git-upload-pack\0";
        assert!(neutralise(bad, true, false, &mut Vec::new()).is_err());
        assert!(
            neutralise(bad, false, false, &mut Vec::new()).is_ok(),
            "irrelevant without network"
        );
        assert!(
            neutralise(
                b"core.alternaterefscommand\nx\0",
                true,
                false,
                &mut Vec::new()
            )
            .is_err()
        );
        let t = b"trailer.sign.cmd\nsh x\0";
        assert!(neutralise(t, false, true, &mut Vec::new()).is_err());
        assert!(neutralise(t, false, false, &mut Vec::new()).is_ok());
        // Subsection names may hold dots.
        let o =
            neutralise(b"filter.a.b.clean\nx\0", false, false, &mut Vec::new()).unwrap_or_default();
        assert!(o.contains(&("filter.a.b.clean".to_owned(), String::new())));
    }
}
