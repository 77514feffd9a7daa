//! `neuroburst convert`: any genome we can load, written in the project's YAML format.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::genome::Genome;

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Genome to read: a FEAGI JSON genome or the project's YAML.
    #[arg(long, value_name = "FILE")]
    pub genome: PathBuf,
    /// Where to write the YAML genome; standard output if absent.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn main(a: ConvertArgs) -> anyhow::Result<()> {
    super::init(&Default::default());
    let genome = Genome::load(&a.genome)?;
    let yaml = format!("# converted by neuroburst {} from {}\n{}", env!("CARGO_PKG_VERSION"), a.genome.display(), genome.to_yaml());
    match a.out {
        Some(path) => std::fs::write(&path, yaml).with_context(|| format!("{}: cannot write the genome", path.display()))?,
        None => print!("{yaml}"),
    }
    Ok(())
}
