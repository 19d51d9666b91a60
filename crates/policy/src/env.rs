//! The environment a step's processes get: the one place that decides it.
//!
//! A child process (a bash step, its rollback, git, an agent's `command`
//! CLI) starts from an empty environment and gets exactly:
//!
//! 1. the variables of plangate's environment named in [`ALLOW_LIST`] (or
//!    starting with one of [`ALLOW_PREFIXES`]) or in the policy's
//!    `env_passthrough`, unless the name [`looks_secret`] or is one of
//!    [`PLANGATE_OWNED`];
//! 2. the secrets the step declares (`secrets:`, its agent's `secrets:` and
//!    `api_key_env`), read from plangate's environment; a declared secret that
//!    is unset or empty refuses the step before the run starts;
//! 3. plangate's run variables (`PLANGATE_RUN_ID`, ...) and the step's `env`.
//!
//! Nothing else: no token of the CI system, no cloud credential, no
//! workflow-command file. Pure: the caller hands in plangate's environment
//! ([`Scope::new`]); the caller also registers [`Scope::secret_values`] with
//! the redaction layer.

use std::collections::{BTreeMap, BTreeSet};

/// Variables of plangate's environment every child gets (when set): the
/// basics of a Unix process, git's identity, and the non-secret context of
/// GitHub Actions and GitLab CI. None of them looks secret (a test checks).
///
/// Left out on purpose: `RUNNER_TEMP` (holds the runner's workflow-command
/// files), `GITHUB_EVENT_PATH`, the proxy variables (they may carry
/// credentials: pass them with `env_passthrough`, or `secrets:` when they
/// do), `LD_*`, `SSH_AUTH_SOCK` (a credential: declare it as a secret).
pub const ALLOW_LIST: &[&str] = &[
    // A Unix process.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "TMP",
    "TEMP",
    "CI",
    // git's identity and global configuration file: the only `GIT_*` variables
    // the `git` tool lets reach git (`tools::git::env`).
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG_GLOBAL",
    // GitHub Actions.
    "GITHUB_ACTIONS",
    "GITHUB_REPOSITORY",
    "GITHUB_REPOSITORY_ID",
    "GITHUB_REPOSITORY_OWNER",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
    "GITHUB_REF_TYPE",
    "GITHUB_SHA",
    "GITHUB_HEAD_REF",
    "GITHUB_BASE_REF",
    "GITHUB_EVENT_NAME",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_NUMBER",
    "GITHUB_RUN_ATTEMPT",
    "GITHUB_WORKFLOW",
    "GITHUB_JOB",
    "GITHUB_ACTOR",
    "GITHUB_WORKSPACE",
    "GITHUB_SERVER_URL",
    "GITHUB_API_URL",
    "GITHUB_GRAPHQL_URL",
    "RUNNER_OS",
    "RUNNER_ARCH",
    // GitLab CI.
    "GITLAB_CI",
    "CI_SERVER",
    "CI_SERVER_URL",
    "CI_SERVER_HOST",
    "CI_API_V4_URL",
    "CI_PROJECT_ID",
    "CI_PROJECT_PATH",
    "CI_PROJECT_NAME",
    "CI_PROJECT_NAMESPACE",
    "CI_PROJECT_URL",
    "CI_PROJECT_DIR",
    "CI_DEFAULT_BRANCH",
    "CI_COMMIT_SHA",
    "CI_COMMIT_SHORT_SHA",
    "CI_COMMIT_REF_NAME",
    "CI_COMMIT_REF_SLUG",
    "CI_COMMIT_BRANCH",
    "CI_COMMIT_TAG",
    "CI_PIPELINE_ID",
    "CI_PIPELINE_IID",
    "CI_PIPELINE_SOURCE",
    "CI_PIPELINE_URL",
    "CI_JOB_ID",
    "CI_JOB_NAME",
    "CI_JOB_STAGE",
    "CI_JOB_URL",
    "CI_MERGE_REQUEST_IID",
    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
    "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
    "GITLAB_USER_LOGIN",
];

/// Prefixes of allowed names (the locale).
pub const ALLOW_PREFIXES: &[&str] = &["LC_"];

/// GitHub's workflow-command files: whoever writes them sets variables, the
/// `PATH` and outputs of the job's later steps. plangate writes them itself
/// (after the run); they never reach a child, declared or not, and a plan or
/// policy naming one is refused.
pub const PLANGATE_OWNED: &[&str] = &[
    "GITHUB_ENV",
    "GITHUB_OUTPUT",
    "GITHUB_PATH",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_STATE",
];

/// The CI platforms' repository write tokens. Each looks secret (never reaches a
/// step unless declared); a step that declares one gets a warning in the report.
pub const WRITE_TOKENS: &[&str] = &["GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "CI_JOB_TOKEN"];

/// Name prefixes that mark a credential (after upper-casing).
const SECRET_PREFIXES: &[&str] = &["ACTIONS_", "AWS_"];
/// Words (between `_`) that mark a credential.
const SECRET_WORDS: &[&str] = &[
    "KEY", "KEYS", "PAT", "JWT", "AUTH", "PASS", "PWD", "CREDS", "DSN", "COOKIE", "PRIVATE",
];
/// Pieces that mark a credential anywhere in a name.
const SECRET_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "APIKEY",
];

/// Whether a variable's name marks it as a credential: one of
/// [`SECRET_PREFIXES`] (`ACTIONS_*`, `AWS_*`), one of [`SECRET_WORDS`]
/// between underscores (`*_KEY`, `*_PAT`, `*_JWT*`, `*_AUTH*`, `*_PWD`, ...), or one of [`SECRET_PARTS`] anywhere
/// (`*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, ...); case does not
/// matter. Such a variable reaches a child only through `secrets:`, and its
/// value is masked everywhere whether declared or not.
pub fn looks_secret(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    // The shell's working directories, not passwords.
    if matches!(up.as_str(), "PWD" | "OLDPWD") {
        return false;
    }
    SECRET_PREFIXES.iter().any(|p| up.starts_with(p))
        || SECRET_PARTS.iter().any(|p| up.contains(p))
        || up.split('_').any(|w| SECRET_WORDS.contains(&w))
}

/// Why a variable name cannot be listed where it is (`None`: it can).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A workflow-command file plangate owns.
    Owned,
    /// One of plangate's own variables.
    Plangate,
    /// Looks like a credential (only in `env_passthrough`).
    LooksSecret,
}

impl Refusal {
    /// The diagnostic's message for `name` in `place` (e.g. "`secrets` of step `a`").
    pub fn message(self, name: &str, place: &str) -> String {
        match self {
            Refusal::Owned => format!(
                "`{name}` in {place} is a workflow-command file that plangate owns: it never reaches a step, declared or not"
            ),
            Refusal::Plangate => {
                format!("`{name}` in {place} is one of plangate's own variables")
            }
            Refusal::LooksSecret => format!(
                "`{name}` in {place} looks like a secret, and `env_passthrough` passes variables in the clear to every step"
            ),
        }
    }

    /// What to do instead.
    pub fn help(self) -> &'static str {
        match self {
            Refusal::Owned => {
                "remove it: plangate writes $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY itself after the run; a step must not set variables, PATH or outputs of the job's later steps"
            }
            Refusal::Plangate => {
                "remove it: PLANGATE_* variables never reach a step, plangate sets its run variables itself"
            }
            Refusal::LooksSecret => {
                "declare it under `secrets:` of the steps (or agents) that need it: then only they get it, and its value is masked"
            }
        }
    }
}

/// Why `name` cannot be declared as a secret (step or agent `secrets:`, `api_key_env`).
pub fn secret_refusal(name: &str) -> Option<Refusal> {
    if PLANGATE_OWNED.contains(&name) {
        Some(Refusal::Owned)
    } else if name.starts_with("PLANGATE_") {
        Some(Refusal::Plangate)
    } else {
        None
    }
}

/// Why `name` cannot be listed in `env_passthrough`.
pub fn passthrough_refusal(name: &str) -> Option<Refusal> {
    secret_refusal(name).or_else(|| looks_secret(name).then_some(Refusal::LooksSecret))
}

/// Whether a variable of plangate's environment reaches every child by the
/// built-in allow-list alone.
pub fn allow_listed(name: &str) -> bool {
    ALLOW_LIST.contains(&name) || ALLOW_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// plangate's environment and the policy's `env_passthrough`: what every
/// child environment is computed from. Its `Debug` shows names, never values.
#[derive(Clone, Default)]
pub struct Scope {
    parent: BTreeMap<String, String>,
    passthrough: BTreeSet<String>,
    /// The variables of `parent` that pass (see [`Scope::passes`]), picked
    /// once: every step's child environment starts from them.
    passing: BTreeMap<String, String>,
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("parent", &self.parent.keys().collect::<Vec<_>>())
            .field("passthrough", &self.passthrough)
            .finish()
    }
}

/// A child's environment: every variable, and the names for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnv {
    /// Exactly what the child gets.
    pub vars: BTreeMap<String, String>,
    /// Names of the variables passed in the clear (allow-list, passthrough, run variables, `env`).
    pub variables: Vec<String>,
    /// Names of the declared secrets passed.
    pub secrets: Vec<String>,
}

impl Scope {
    /// plangate's environment (`parent`) and the `env_passthrough` in force.
    pub fn new(parent: BTreeMap<String, String>, passthrough: &[String]) -> Scope {
        let mut scope = Scope {
            parent,
            passthrough: passthrough.iter().cloned().collect(),
            passing: BTreeMap::new(),
        };
        scope.passing = scope
            .parent
            .iter()
            .filter(|(k, _)| scope.passes(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        scope
    }

    /// Whether plangate's variable `name` reaches every child in the clear.
    fn passes(&self, name: &str) -> bool {
        (allow_listed(name) || self.passthrough.contains(name))
            && !looks_secret(name)
            && secret_refusal(name).is_none()
    }

    /// The value of a declared secret: set, not empty, and allowed at all.
    fn secret(&self, name: &str) -> Option<&String> {
        self.parent
            .get(name)
            .filter(|v| !v.is_empty() && secret_refusal(name).is_none())
    }

    /// The value of the declared secret `name` (an HTTP provider's key or
    /// header): set, not empty, and allowed at all.
    pub fn secret_value(&self, name: &str) -> Option<&str> {
        self.secret(name).map(String::as_str)
    }

    /// The declared secrets that are unset or empty in plangate's environment.
    pub fn missing<'a>(&self, secrets: impl IntoIterator<Item = &'a String>) -> Vec<&'a str> {
        secrets
            .into_iter()
            .filter(|n| self.secret(n).is_none())
            .map(String::as_str)
            .collect()
    }

    /// The environment of a child that declares `secrets` and gets `explicit`
    /// (plangate's run variables, the step's `env`: set last, they win).
    pub fn child<'a>(
        &self,
        secrets: &BTreeSet<String>,
        explicit: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> ChildEnv {
        let mut vars = self.passing.clone();
        let mut passed_secrets = Vec::new();
        for name in secrets {
            if let Some(v) = self.secret(name) {
                vars.insert(name.clone(), v.clone());
                passed_secrets.push(name.clone());
            }
        }
        let mut explicit_names = BTreeSet::new();
        for (k, v) in explicit {
            vars.insert(k.clone(), v.clone());
            explicit_names.insert(k.clone());
        }
        let variables = vars
            .keys()
            .filter(|k| explicit_names.contains(*k) || !passed_secrets.contains(*k))
            .cloned()
            .collect();
        passed_secrets.retain(|s| !explicit_names.contains(s));
        ChildEnv {
            vars,
            variables,
            secrets: passed_secrets,
        }
    }

    /// The values the redaction layer must know before the first step: every
    /// declared secret's, and every variable's of plangate's environment whose
    /// name looks secret (declared or not). Empty values are left out.
    pub fn secret_values<'a>(
        &'a self,
        declared: impl IntoIterator<Item = &'a String>,
    ) -> Vec<&'a str> {
        let mut names: BTreeSet<&str> = declared.into_iter().map(String::as_str).collect();
        names.extend(
            self.parent
                .keys()
                .filter(|k| looks_secret(k))
                .map(String::as_str),
        );
        names
            .into_iter()
            .filter_map(|n| self.parent.get(n))
            .filter(|v| !v.is_empty())
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(vars: &[(&str, &str)], passthrough: &[&str]) -> Scope {
        Scope::new(
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            &passthrough
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>(),
        )
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn credentials_look_secret() {
        for n in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "CI_JOB_TOKEN",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "CI_REGISTRY_PASSWORD",
            "CI_DEPLOY_PASSWORD",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "ACTIONS_CACHE_URL",
            "FOO_API_KEY",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_REGION",
            "AZURE_CLIENT_SECRET",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "NPM_TOKEN",
            "NODE_AUTH_TOKEN",
            "DOCKER_AUTH_CONFIG",
            "SSH_AUTH_SOCK",
            "MY_PAT",
            "DB_PASS",
            "DB_PWD",
            "MYSQL_ROOT_PASSWORD",
            "GPG_PASSPHRASE",
            "SENTRY_DSN",
            "SSH_PRIVATE_KEY",
            "SIGNING_KEY",
            "VAULT_TOKEN",
            "HF_TOKEN",
            "github_token",
            "TOKEN",
            "SECRET",
            "APIKEY",
            "MYAPIKEY",
        ] {
            assert!(looks_secret(n), "{n}");
        }
    }

    #[test]
    fn ordinary_names_do_not_look_secret() {
        for n in [
            "PATH",
            "PWD",
            "OLDPWD",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "KEYBOARD_LAYOUT",
            "MONKEY",
            "CARGO_TERM_COLOR",
            "RUST_LOG",
            "NODE_OPTIONS",
            "GITHUB_ENV",
        ] {
            assert!(!looks_secret(n), "{n}");
        }
    }

    #[test]
    fn no_allow_listed_name_looks_secret_or_is_owned() {
        for n in ALLOW_LIST {
            assert!(!looks_secret(n), "{n}");
            assert!(passthrough_refusal(n).is_none(), "{n}");
            assert!(!n.starts_with("PLANGATE_"), "{n}");
        }
        let mut sorted = ALLOW_LIST.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ALLOW_LIST.len(), "a name is listed twice");
        for n in PLANGATE_OWNED {
            assert!(!allow_listed(n), "{n}");
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(secret_refusal("GITHUB_ENV"), Some(Refusal::Owned));
        assert_eq!(secret_refusal("GITHUB_STEP_SUMMARY"), Some(Refusal::Owned));
        assert_eq!(secret_refusal("PLANGATE_APPROVE"), Some(Refusal::Plangate));
        assert_eq!(secret_refusal("GITHUB_TOKEN"), None);
        assert_eq!(
            passthrough_refusal("GITHUB_TOKEN"),
            Some(Refusal::LooksSecret)
        );
        assert_eq!(passthrough_refusal("GITHUB_OUTPUT"), Some(Refusal::Owned));
        assert_eq!(passthrough_refusal("RUST_LOG"), None);
        assert!(Refusal::Owned.message("GITHUB_ENV", "x").contains("owns"));
    }

    #[test]
    fn a_child_gets_the_allow_list_passthrough_secrets_and_explicit_values_only() {
        let s = scope(
            &[
                ("PATH", "/usr/bin"),
                ("HOME", "/home/u"),
                ("LC_ALL", "C"),
                ("GITHUB_SHA", "abc"),
                ("GITHUB_TOKEN", "ghs_fake"),
                ("GITHUB_ENV", "/tmp/env"),
                ("FOO_API_KEY", "k-123456"),
                ("RUST_LOG", "debug"),
                ("NODE_OPTIONS", "--require evil"),
                ("PLANGATE_APPROVE", "x"),
                // A passthrough naming a secret-looking variable is refused at
                // load; here too it is never passed.
                ("MY_TOKEN", "t-123456"),
            ],
            &["RUST_LOG", "MY_TOKEN", "GITHUB_ENV"],
        );
        let (rid, sid) = ("PLANGATE_RUN_ID".to_owned(), "r1".to_owned());
        let c = s.child(&set(&["FOO_API_KEY", "GITHUB_ENV"]), [(&rid, &sid)]);
        let names: Vec<&str> = c.vars.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "FOO_API_KEY",
                "GITHUB_SHA",
                "HOME",
                "LC_ALL",
                "PATH",
                "PLANGATE_RUN_ID",
                "RUST_LOG"
            ]
        );
        assert_eq!(c.secrets, ["FOO_API_KEY"]);
        assert_eq!(
            c.variables,
            [
                "GITHUB_SHA",
                "HOME",
                "LC_ALL",
                "PATH",
                "PLANGATE_RUN_ID",
                "RUST_LOG"
            ]
        );
    }

    #[test]
    fn missing_and_empty_secrets_are_named() {
        let s = scope(&[("A_TOKEN", "x-123456"), ("B_TOKEN", "")], &[]);
        let declared = set(&["A_TOKEN", "B_TOKEN", "C_TOKEN"]);
        assert_eq!(s.missing(&declared), ["B_TOKEN", "C_TOKEN"]);
    }

    #[test]
    fn secret_values_cover_declared_and_secret_looking_names() {
        let s = scope(
            &[
                ("GITHUB_TOKEN", "ghs_fake_1"),
                ("PLAIN", "plain-value"),
                ("DECLARED", "declared-value"),
                ("EMPTY_TOKEN", ""),
            ],
            &[],
        );
        let declared = set(&["DECLARED"]);
        let mut v = s.secret_values(&declared);
        v.sort_unstable();
        assert_eq!(v, ["declared-value", "ghs_fake_1"]);
        assert!(!format!("{s:?}").contains("ghs_fake_1"));
    }

    /// SPEC's allow-list ("Step environment", item 1) names exactly
    /// `ALLOW_LIST` and `ALLOW_PREFIXES` (`LC_*`); `A_B/C/D` there stands for
    /// `A_B`, `A_C`, `A_D`.
    #[test]
    fn specs_allow_list_is_allow_list() {
        let spec = include_str!("../../../docs/SPEC.md");
        let start = spec
            .find("1. the variables of plangate's environment on the built-in allow-list")
            .expect("SPEC's allow-list item");
        let end = start
            + spec[start..]
                .find("and the names of")
                .expect("the end of SPEC's allow-list item");
        let mut named = BTreeSet::new();
        for span in spec[start..end].split('`').skip(1).step_by(2) {
            for word in span.split_whitespace() {
                let mut parts = word.split('/');
                let first = parts.next().unwrap_or("");
                named.insert(first.to_owned());
                let stem = first.rsplit_once('_').map_or("", |(stem, _)| stem);
                for rest in parts {
                    named.insert(format!("{stem}_{rest}"));
                }
            }
        }
        let want: BTreeSet<String> = ALLOW_LIST
            .iter()
            .map(|n| (*n).to_owned())
            .chain(ALLOW_PREFIXES.iter().map(|p| format!("{p}*")))
            .collect();
        assert_eq!(named, want, "SPEC's allow-list and policy::env::ALLOW_LIST");
    }
}
