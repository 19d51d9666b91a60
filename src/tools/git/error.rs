//! Why a git step failed before or around the git call itself: the
//! repository or a `files` entry leads outside the workspace, the step's
//! environment or the repository's configuration would make git run a
//! program, git could not be run, or a helper call failed.

use thiserror::Error;

/// A git step's failure (one line, shown as the step's error).
#[derive(Debug, Error)]
pub(crate) enum GitError {
    /// The permission rules deny a path the operation reaches.
    #[error("{0}")]
    Denied(String),
    /// The artifacts folder could not be made.
    #[error("cannot create {rel}: {source}")]
    ArtifactsDir { rel: String, source: std::io::Error },
    /// `repository_path` does not resolve.
    #[error("repository_path `{shown}` is not usable: {source}")]
    RepoUnusable {
        shown: String,
        source: std::io::Error,
    },
    /// `repository_path` resolves outside the workspace.
    #[error("repository_path `{shown}` resolves to `{real}`, outside the workspace")]
    RepoOutside { shown: String, real: String },
    /// `repository_path` is a file.
    #[error("repository_path `{shown}` is not a directory")]
    RepoNotDir { shown: String },
    /// `repository_path` is not in a work tree.
    #[error("repository_path `{shown}` is not inside a git work tree: {why}")]
    NotAWorkTree { shown: String, why: String },
    /// A part of the repository is outside the workspace.
    #[error(
        "the repository's {what} `{real}` is outside the workspace; plangate only runs git on repositories inside it"
    )]
    PartOutside { what: &'static str, real: String },
    /// A `files` entry cannot be resolved.
    #[error("`files` entry `{file}` is not usable: {source}")]
    FileUnusable {
        file: String,
        source: std::io::Error,
    },
    /// A `files` entry leads outside the workspace.
    #[error("`files` entry `{file}` resolves outside the workspace (through `{real}`)")]
    FileOutside { file: String, real: String },
    /// A `files` entry has no existing ancestor.
    #[error("`files` entry `{file}` is not usable")]
    FileMissing { file: String },
    /// The step's `env` sets a `GIT_*` variable.
    #[error("step env `{key}` would change how plangate runs git; only {kept} may be set")]
    StepEnv { key: String, kept: String },
    /// The repository names a program for fetching refs.
    #[error(
        "the repository sets core.alternateRefsCommand, a program git would run; plangate refuses to push or pull here"
    )]
    AlternateRefs,
    /// The repository names a trailer command and the commit uses `--trailer`.
    #[error(
        "the repository sets trailer.{name}.{var}, a program `git commit --trailer` would run; plangate refuses"
    )]
    TrailerCommand { name: String, var: String },
    /// A remote names a program.
    #[error(
        "remote `{name}` sets remote.{name}.{var}, a program git would run; plangate refuses to push or pull with it"
    )]
    RemoteProgram { name: String, var: String },
    /// The push URLs mix local and network repositories.
    #[error(
        "the push URLs mix repositories on this machine and on the network; plangate cannot switch off the local ones' hooks alone"
    )]
    MixedPushUrls,
    /// The process runner could not start git.
    #[error("could not run git: {0}")]
    Spawn(#[source] std::io::Error),
    /// `git` is not on PATH.
    #[error("git is not installed (not found on PATH)")]
    NotInstalled,
    /// A helper call printed too much.
    #[error("`git {command}` printed more than {mib} MiB")]
    TooMuchOutput { command: String, mib: u64 },
    /// A helper call failed.
    #[error("git {command} failed: {why}")]
    HelperFailed { command: String, why: String },
    /// git died of a signal.
    #[error("git was killed by signal {0}")]
    Signaled(i32),
}

/// Why a git step stopped early.
#[derive(Debug)]
pub(crate) enum Halt {
    /// The step's timeout.
    TimedOut,
    /// The run is stopping.
    Stopped,
    /// Anything else.
    Failed(GitError),
}

impl From<GitError> for Halt {
    fn from(e: GitError) -> Self {
        Halt::Failed(e)
    }
}
