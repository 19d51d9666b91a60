//! plangate's entry point: parse the command line, run, exit with SPEC's code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = plangate::cli::Cli::parse();
    std::process::ExitCode::from(plangate::run(cli))
}
