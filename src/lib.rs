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

pub(crate) mod atomic;
pub(crate) mod cli;
pub(crate) mod commands;
pub(crate) mod denied;
pub(crate) mod diff;
pub(crate) mod draft;
pub(crate) mod egress;
pub(crate) mod engine;
pub(crate) mod environ;
pub(crate) mod error;
pub(crate) mod format;
pub(crate) mod github;
pub(crate) mod gitlab;
pub mod guard;
pub(crate) mod integrations;
pub(crate) mod location;
pub(crate) mod markdown;
pub(crate) mod merge;
/// The run's vocabulary: the `plangate-model` crate (crates/model), under
/// its old name so that `crate::model::X` reads as before.
pub(crate) use plangate_model as model;
pub(crate) mod outdir;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) use plangate_policy as policy;
pub(crate) mod process;
pub(crate) mod publish;
pub(crate) mod redact;
pub(crate) mod regular;
pub(crate) mod report;
pub(crate) mod resume;
pub(crate) mod sandbox;
pub(crate) mod scan;
/// Secret detection: the `plangate-secrets` crate (crates/secrets).
pub use plangate_secrets as secrets;
pub(crate) mod selection;
pub(crate) mod settings;
pub(crate) mod shard;
pub(crate) mod tools;
pub(crate) mod version;

use std::process::ExitCode;

use cli::Command;
use error::Error;

pub use cli::Cli;
pub use commands::GITLAB_SECRETS_FILE;

// The library surface. plangate is a program; these few entry points exist for
// the fuzz targets (fuzz/properties.rs), the examples/ benches and the
// data-driven guard and rule tests. `guard` (the fail-close parsers) and
// `secrets` (the detection engine) are public whole; everything else is
// crate-private (`unreachable_pub` is denied), so the compiler reports dead code.
pub use plan::load_plan_str;

/// The bash classifier (the `classify` fuzz target).
pub mod classify {
    pub use crate::model::risk::Risk;
    pub use crate::policy::classify::{ClassifyContext, classify_bash};
}

/// Archive entry-name checks (the `archive_names` fuzz target).
pub mod archive_names {
    pub use crate::tools::archive::names::{lexical_target, normalize, shown};
}

/// The output redaction layer (the `redact` fuzz target).
pub mod redaction {
    pub use crate::redact::{builtin_scanner, clean, remember_secrets};
}

/// The workspace diff tracker (`examples/diff_cost.rs`).
pub mod workspace_diff {
    pub use crate::diff::Tracker;
}

/// Run a parsed command line; returns the process exit code (SPEC's table).
///
/// The built-in secret rules are checked first: if they are broken nothing
/// can be redacted, so plangate stops with an internal error before it
/// writes anything else.
pub fn run(cli: Cli) -> ExitCode {
    // The sandbox helper restricts itself and execs the step's command at
    // once (it is on every sandboxed step's path): the rule set is built only
    // if it fails and has something to say.
    let command = cli.command;
    let result = if let Command::SandboxExec(args) = &command {
        let why = sandbox::exec(args);
        redact::init()
            .map_err(Error::Internal)
            .and(Err(Error::SandboxExec(why)))
    } else if let Command::SandboxLane = &command {
        // A resident step supervisor (`process::lane`): as cheap as the helper.
        let why = sandbox::serve_lane();
        redact::init()
            .map_err(Error::Internal)
            .and(Err(Error::SandboxExec(why)))
    } else if let Command::SandboxProbe(args) = &command {
        // The self-test's probe: as cheap as the helper.
        let why = sandbox::probe_main(args);
        redact::init()
            .map_err(Error::Internal)
            .and(Err(Error::SandboxExec(why)))
    } else if let Command::EgressForward(args) = &command {
        let why = egress::forward::main(args);
        redact::init()
            .map_err(Error::Internal)
            .and(Err(Error::SandboxExec(why)))
    } else {
        output::install_panic_hook();
        match redact::init() {
            Err(e) => Err(Error::Internal(e)),
            // A panic anywhere is caught here (the hook printed it, redacted):
            // an internal error, exit 1 (`failed`) as SPEC's table says.
            Ok(_) => {
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(command)))
                        .unwrap_or(Ok(model::RunStatus::Failed));
                // The steps' emptied temporary folders kept for reuse go.
                tools::temp::close_all();
                outcome
            }
        }
    };
    ExitCode::from(match result {
        Ok(status) => status.code(),
        Err(e) => {
            e.display_to_stderr();
            e.process_exit_code()
        }
    })
}

/// A command line clap refused: the message (naming a `PLANGATE_*`
/// variable whose value it was), `run`'s `invalid` report, exit 2.
pub fn refuse_usage(e: &clap::Error, argv: &[std::ffi::OsString]) -> ExitCode {
    commands::usage::refuse(e, argv)
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
        Command::SandboxProbe(args) => Err(Error::SandboxExec(sandbox::probe_main(&args))),
        Command::EgressForward(args) => Err(Error::SandboxExec(egress::forward::main(&args))),
        Command::SandboxLane => Err(Error::SandboxExec(sandbox::serve_lane())),
        Command::Shard(args) => commands::shard::run(&args),
        Command::Merge(args) => commands::merge::run(&args),
    }
}
