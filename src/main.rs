//! plangate's entry point: parse the command line, run, exit with SPEC's code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match plangate::Cli::try_parse_from(&argv) {
        Ok(cli) => plangate::run(cli),
        Err(e) => plangate::refuse_usage(&e, &argv),
    }
}
