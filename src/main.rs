//! plangate's entry point: parse the command line, run, exit with SPEC's code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    plangate::run(plangate::Cli::parse())
}
