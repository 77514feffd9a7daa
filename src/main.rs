use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = neuroburst::cli::Cli::parse();
    match neuroburst::cli::main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
