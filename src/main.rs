use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = neuroburst::cli::Cli::parse_from(neuroburst::cli::ros_args::strip(std::env::args_os()));
    match neuroburst::cli::main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", neuroburst::errors::said_once(&e));
            ExitCode::from(2)
        }
    }
}
