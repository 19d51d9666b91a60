//! A command line clap refused (an unknown flag, a flag's or its
//! `PLANGATE_*` variable's value it cannot take): the message names the
//! variable when the value came from there, and `run` still writes its
//! `invalid` report (exit 2), as for any other usage problem.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command};
use crate::model::RunStatus;

/// Say why `e` refused the command line `argv`; for `run`, write the
/// `invalid` report where the report would go. Help and version are not
/// errors: clap prints them.
pub(crate) fn refuse(e: &clap::Error, argv: &[OsString]) -> ExitCode {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let why = message(e, argv);
    if let Err(broken) = crate::redact::init() {
        crate::output::line(format_args!("plangate: internal error: {broken}"));
        return ExitCode::from(RunStatus::Failed.code());
    }
    // `run` with what can be read of its command line: the report goes
    // where it would have gone (`--out`, `PLANGATE_OUT`, else the default).
    if let Some(Command::Run(args)) = lenient(e, argv).map(|c| c.command) {
        let status = super::run::refused_usage(&args, &why);
        return ExitCode::from(status.code());
    }
    crate::output::error(format_args!("{why}"));
    ExitCode::from(RunStatus::Invalid.code())
}

/// The command line parsed as far as it goes: each value clap refused
/// left out (a flag's, with its value; a variable's, as if unset), each
/// argument it did not know dropped. `None` when that does not lead to a
/// command line it takes.
fn lenient(e: &clap::Error, argv: &[OsString]) -> Option<Cli> {
    let mut argv = argv.to_vec();
    let mut cmd = Cli::command();
    leave_out(e, &mut cmd, &mut argv)?;
    // Each round leaves one thing out; a command line has few.
    for _ in 0..16 {
        match cmd.clone().try_get_matches_from(&argv) {
            Ok(m) => return Cli::from_arg_matches(&m).ok(),
            Err(e) => leave_out(&e, &mut cmd, &mut argv)?,
        }
    }
    None
}

/// Leave out what `e` refused; `None` when it cannot be told.
fn leave_out(e: &clap::Error, cmd: &mut clap::Command, argv: &mut Vec<OsString>) -> Option<()> {
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let token = arg.split_whitespace().next()?.to_owned();
    if e.kind() == ErrorKind::UnknownArgument {
        let at = argv
            .iter()
            .skip(1)
            .position(|a| a.to_str() == Some(token.as_str()))?
            + 1;
        argv.remove(at);
        return Some(());
    }
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue
            | ErrorKind::ValueValidation
            | ErrorKind::InvalidUtf8
            | ErrorKind::NoEquals
            | ErrorKind::WrongNumberOfValues
            | ErrorKind::TooManyValues
            | ErrorKind::TooFewValues
    ) {
        return None;
    }
    let long = token.strip_prefix("--")?;
    let bare = format!("--{long}");
    let joined = format!("--{long}=");
    let before = argv.len();
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].to_str().unwrap_or_default().to_owned();
        if a.starts_with(&joined) {
            argv.remove(i);
        } else if a == bare {
            argv.remove(i);
            if argv
                .get(i)
                .and_then(|v| v.to_str())
                .is_some_and(|v| !v.starts_with('-'))
            {
                argv.remove(i);
            }
        } else {
            i += 1;
        }
    }
    if argv.len() < before {
        return Some(());
    }
    // Not on the line: from its variable, which is now left unread.
    let sub = argv.get(1)?.to_str()?.to_owned();
    let id = cmd
        .find_subcommand(&sub)?
        .get_arguments()
        .find(|a| a.get_long() == Some(long) && a.get_env().is_some())?
        .get_id()
        .clone();
    let taken = std::mem::take(cmd);
    *cmd = taken.mut_subcommand(sub, |s| s.mut_arg(id, |a| a.env(None::<&'static str>)));
    Some(())
}

/// clap's message, one paragraph (no "error:", no usage line); when the
/// refused value came from a flag's variable, the variable named with it.
fn message(e: &clap::Error, argv: &[OsString]) -> String {
    let text = e.render().to_string();
    let body: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let body = body.join(" ");
    let body = body.strip_prefix("error: ").unwrap_or(&body).to_owned();
    match from_variable(e, argv) {
        Some((var, long)) => format!(
            "the environment variable `{var}` (the same as `--{long}`): {body}; set it to an accepted value or unset it"
        ),
        None => body,
    }
}

/// `(variable, flag)` when the flag clap refused was not on the command
/// line and its variable is set: the value came from there.
fn from_variable(e: &clap::Error, argv: &[OsString]) -> Option<(String, String)> {
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = arg
        .split_whitespace()
        .next()?
        .strip_prefix("--")?
        .to_owned();
    let on_line = argv.iter().skip(1).any(|a| {
        a.to_str()
            .is_some_and(|a| a == format!("--{long}") || a.starts_with(&format!("--{long}=")))
    });
    if on_line {
        return None;
    }
    let cmd = Cli::command();
    let var = cmd
        .get_subcommands()
        .flat_map(clap::Command::get_arguments)
        .chain(cmd.get_arguments())
        .find(|a| a.get_long() == Some(long.as_str()))
        .and_then(|a| a.get_env())
        .and_then(|v| v.to_str())?
        .to_owned();
    crate::environ::var_os(&var).map(|_| (var, long))
}
