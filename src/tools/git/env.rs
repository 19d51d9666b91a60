//! The environment and command-scope configuration of every git call:
//! hooks, pagers, editors, prompts, credential helpers, fsmonitor, gpg and
//! auto-gc off; `GIT_*` variables of plangate's environment removed (except
//! the identity ones), and a step `env` setting another one refused.

use std::path::Path;

use super::error::GitError;
use crate::tools::StepContext;
use crate::tools::step::Step;

/// Whether `name` is a `GIT_*` variable that may reach git: one of the
/// child environment's allow-list (who made a commit, which global
/// configuration file is read), the one list of them.
fn kept_git_var(name: &str) -> bool {
    name.starts_with("GIT_") && crate::policy::env::ALLOW_LIST.contains(&name)
}

/// The `GIT_*` variables that may reach git, for a message.
fn kept_git_vars() -> String {
    let kept: Vec<&str> = crate::policy::env::ALLOW_LIST
        .iter()
        .copied()
        .filter(|n| kept_git_var(n))
        .collect();
    kept.join(", ")
}

/// Command-scope configuration of every git call.
pub(super) const CONFIG: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "ssh -o BatchMode=yes"),
    ("core.quotePath", "false"),
    ("credential.helper", ""),
    ("color.ui", "never"),
    ("gc.auto", "0"),
    ("gc.autoDetach", "false"),
    ("maintenance.auto", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    // Signature checks (`%G?` in a format, merging a signed tag) run `false`, not a configured program.
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("merge.verifySignatures", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    ("safe.bareRepository", "explicit"),
];

/// Environment of every git call (on top of the step's).
pub(super) fn fixed_env(ceiling: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = [
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_ASKPASS", ""),
        ("SSH_ASKPASS", ""),
        ("SSH_ASKPASS_REQUIRE", "never"),
        ("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"),
        ("GIT_PAGER", "cat"),
        ("PAGER", "cat"),
        ("GIT_EDITOR", "true"),
        ("GIT_SEQUENCE_EDITOR", "true"),
        ("GIT_MERGE_AUTOEDIT", "no"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_ALLOW_PROTOCOL", "file:http:https:ssh"),
        ("GIT_PROXY_COMMAND", ""),
        ("GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS", "true"),
        ("LC_ALL", "C"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    v.push((
        "GIT_CEILING_DIRECTORIES".to_owned(),
        ceiling.display().to_string(),
    ));
    v
}

/// The step's own environment: `GIT_*` variables other than identity ones are refused.
pub(super) fn step_env(ctx: &StepContext, step: &Step) -> Result<Vec<(String, String)>, GitError> {
    let env = ctx.child_env(step);
    if let Some((k, _)) = env
        .iter()
        .find(|(k, _)| k.starts_with("GIT_") && !kept_git_var(k))
    {
        return Err(GitError::StepEnv {
            key: k.clone(),
            kept: kept_git_vars(),
        });
    }
    Ok(env)
}

/// Inherited `GIT_*` variables that must not reach git (those plangate sets itself are
/// replaced, not removed: see [`super::runner::Git::spec`]).
pub(super) fn inherited_git_vars() -> Vec<String> {
    let mut v: Vec<String> = crate::environ::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("GIT_") && !kept_git_var(k))
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::{kept_git_var, kept_git_vars};

    #[test]
    fn only_the_identity_and_global_configuration_variables_reach_git() {
        assert_eq!(
            kept_git_vars(),
            "GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_AUTHOR_DATE, GIT_COMMITTER_NAME, \
             GIT_COMMITTER_EMAIL, GIT_COMMITTER_DATE, GIT_CONFIG_GLOBAL"
        );
        for refused in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_SSH_COMMAND",
            "GIT_CONFIG_COUNT",
            "GIT_EXEC_PATH",
            "HOME",
            "git_author_name",
        ] {
            assert!(!kept_git_var(refused), "{refused}");
        }
    }
}
