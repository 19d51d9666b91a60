//! Calling git: the argv (`env -u … git --no-pager …`) with the step's
//! environment and the command-scope configuration, through the engine's
//! process runner (so the step's timeout and the run's interruption stop
//! it), and the read-only helper calls whose output is read back.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::error::{GitError, Halt};
use super::status;
use super::text::first_error_line;
use crate::process::{self, Capture, ProcessSpec, Termination};
use crate::tools::StepContext;

/// Most bytes read back from a helper call (`status`, `diff --name-only`).
const AUX_CAP: u64 = 64 * 1024 * 1024;

/// A helper call's result.
pub(super) struct Aux {
    pub(super) code: i32,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: String,
}

impl Aux {
    pub(super) fn first_error(&self) -> String {
        first_error_line(&self.stderr)
    }
}

/// Everything one git step needs to call git.
pub(super) struct Git<'a> {
    pub(super) ctx: &'a StepContext,
    pub(super) cwd: PathBuf,
    pub(super) deadline: Instant,
    /// The step's environment, then plangate's.
    pub(super) env: Vec<(String, String)>,
    /// Command-scope configuration (fixed, then found in the repository's).
    pub(super) config: Vec<(String, String)>,
    /// Inherited `GIT_*` variables to remove.
    pub(super) unset: Vec<String>,
}

impl Git<'_> {
    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The argv after `env`: unsets, then `git --no-pager ARGS`.
    pub(super) fn spec(
        &self,
        git_args: &[String],
        stdout: Capture,
        stderr: Capture,
        read_only: bool,
    ) -> ProcessSpec {
        let mut env = self.env.clone();
        env.push(("GIT_CONFIG_COUNT".to_owned(), self.config.len().to_string()));
        for (i, (k, v)) in self.config.iter().enumerate() {
            env.push((format!("GIT_CONFIG_KEY_{i}"), k.clone()));
            env.push((format!("GIT_CONFIG_VALUE_{i}"), v.clone()));
        }
        env.push((
            "GIT_OPTIONAL_LOCKS".to_owned(),
            if read_only { "0" } else { "1" }.to_owned(),
        ));
        // `env -u` runs after the variables are set: never unset one plangate sets.
        let mut args: Vec<String> = Vec::new();
        for u in self
            .unset
            .iter()
            .filter(|u| !env.iter().any(|(k, _)| k == *u))
        {
            args.push("-u".to_owned());
            args.push(u.clone());
        }
        args.push(crate::environ::git().to_string_lossy().into_owned());
        args.push("--no-pager".to_owned());
        args.extend(git_args.iter().cloned());
        ProcessSpec {
            program: "env".to_owned(),
            args,
            cwd: self.cwd.clone(),
            env,
            stdout,
            stderr,
            timeout: self.remaining(),
            kill_grace: self.ctx.kill_grace,
            stdin: None,
            idle_timeout: None,
            lane: None,
        }
    }

    pub(super) async fn spawn(&self, spec: ProcessSpec) -> Result<process::ProcessOutcome, Halt> {
        if spec.timeout.is_zero() {
            return Err(Halt::TimedOut);
        }
        let out = process::run(spec, self.ctx.cancel.clone())
            .await
            .map_err(GitError::Spawn)?;
        match out.termination {
            Termination::TimedOut | Termination::IdleTimedOut => Err(Halt::TimedOut),
            Termination::Cancelled => Err(Halt::Stopped),
            Termination::Exited(127) => Err(GitError::NotInstalled.into()),
            _ => Ok(out),
        }
    }

    /// A read-only helper call whose output is read back.
    pub(super) async fn aux(&self, git_args: &[&str]) -> Result<Aux, Halt> {
        let out_path = self.ctx.artifacts_dir.join(".git-aux-stdout");
        let err_path = self.ctx.artifacts_dir.join(".git-aux-stderr");
        let args: Vec<String> = git_args.iter().map(|s| (*s).to_owned()).collect();
        let spec = self.spec(
            &args,
            Capture::File {
                path: out_path.clone(),
                cap: AUX_CAP,
            },
            Capture::File {
                path: err_path.clone(),
                cap: 64 * 1024,
            },
            true,
        );
        let res = self.spawn(spec).await;
        let stdout = crate::regular::read(&out_path).unwrap_or_default();
        let stderr = String::from_utf8_lossy(&crate::regular::read(&err_path).unwrap_or_default())
            .into_owned();
        let _ = std::fs::remove_file(&out_path);
        let _ = std::fs::remove_file(&err_path);
        let out = res?;
        if out.stdout.truncated {
            return Err(GitError::TooMuchOutput {
                command: git_args.first().copied().unwrap_or("").to_owned(),
                mib: AUX_CAP >> 20,
            }
            .into());
        }
        let code = match out.termination {
            Termination::Exited(c) => c,
            _ => -1,
        };
        Ok(Aux {
            code,
            stdout,
            stderr,
        })
    }

    pub(super) async fn status(&self) -> Result<status::Reading, Halt> {
        let a = self
            .aux(&[
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
                "--no-renames",
            ])
            .await?;
        if a.code != 0 {
            return Err(GitError::HelperFailed {
                command: "status".to_owned(),
                why: a.first_error(),
            }
            .into());
        }
        Ok(status::parse(&a.stdout))
    }

    /// NUL-separated names printed by a helper call.
    pub(super) async fn names(&self, git_args: &[&str]) -> Result<Vec<String>, Halt> {
        let a = self.aux(git_args).await?;
        if a.code != 0 {
            return Err(GitError::HelperFailed {
                command: git_args.first().copied().unwrap_or("").to_owned(),
                why: a.first_error(),
            }
            .into());
        }
        Ok(a.stdout
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect())
    }
}
