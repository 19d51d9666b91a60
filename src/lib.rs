//! plangate: run agent plans in CI with nobody at the keyboard.
//!
//! The pipeline: **plan** (load, schema-check, validate) → **policy**
//! (classify each step's risk, decide: auto-approved, pre-approved, denied,
//! blocked) → **engine** (run the dependency graph: process groups,
//! timeouts, capped output, rollback) → **events** → **report**
//! (`report.json`, artifact manifest, `audit.jsonl`, console lines).
//!
//! Around it: `cli` (the flags), `settings` (flags, `PLANGATE_*`, the plan's
//! policy and the `--policy` cap resolved once), `commands` (one file per
//! subcommand), `error` (why a command failed, and its exit code),
//! `output` (the only writer of stdout and stderr) and `redact` (what every
//! written byte passes through).
//!
//! `plan` and `policy` are pure; `engine` and `tools` do the work; only
//! `output` writes to stdout or stderr.

pub mod cli;
pub mod commands;
pub mod diff;
pub mod draft;
pub mod engine;
pub mod error;
pub mod github;
pub mod guard;
pub mod integrations;
pub mod location;
pub mod markdown;
pub mod merge;
pub mod model;
pub mod output;
pub mod plan;
pub mod policy;
pub mod process;
pub mod redact;
pub mod report;
pub mod resume;
pub mod sandbox;
pub mod scan;
pub mod secrets;
pub mod selection;
pub mod settings;
pub mod shard;
pub mod tools;
pub mod version;

use std::process::ExitCode;

use cli::{Cli, Command};
use error::Error;

pub use commands::GITLAB_SECRETS_FILE;

/// Run a parsed command line; returns the process exit code (SPEC's table).
///
/// The built-in secret rules are checked first: if they are broken nothing
/// can be redacted, so plangate stops with an internal error before it
/// writes anything else.
pub fn run(cli: Cli) -> ExitCode {
    let result = match redact::init() {
        Err(e) => Err(Error::Internal(e)),
        Ok(_) => dispatch(cli.command),
    };
    ExitCode::from(match result {
        Ok(status) => status.code(),
        Err(e) => {
            e.display_to_stderr();
            e.process_exit_code()
        }
    })
}

fn dispatch(command: Command) -> commands::Outcome {
    match command {
        Command::Run(args) => commands::run::run(&args),
        Command::Validate(args) => commands::validate::run(&args),
        Command::Schema(args) => commands::schema::run(&args),
        Command::Draft(args) => commands::draft::run(&args),
        Command::Scan(args) => commands::scan::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::SandboxExec(args) => Err(Error::SandboxExec(sandbox::exec(&args))),
        Command::Shard(args) => commands::shard::run(&args),
        Command::Merge(args) => commands::merge::run(&args),
    }
}
