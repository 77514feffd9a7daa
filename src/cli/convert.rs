//! `neuroburst convert`: any genome we can load, written in the project's YAML format or as a FEAGI
//! 3.0 genome (JSON) that FEAGI's own loader reads.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};

use crate::genome::{feagi, Genome};

/// A genome file format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// neuroburst's YAML (docs/genome.md).
    Yaml,
    /// FEAGI genome 3.0 JSON (flat gene keys, base64 cortical ids).
    Feagi,
}

impl Format {
    /// `--to`, or from the output's extension (`.json`: FEAGI), else YAML.
    pub fn pick(to: Option<Format>, out: Option<&Path>) -> Format {
        to.unwrap_or_else(|| match out.and_then(|p| p.extension()) {
            Some(e) if e.eq_ignore_ascii_case("json") => Format::Feagi,
            _ => Format::Yaml,
        })
    }
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Genome to read: a FEAGI JSON genome (2.x or 3.0) or the project's YAML.
    #[arg(long, value_name = "FILE")]
    pub genome: PathBuf,
    /// Where to write the genome; standard output if absent.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The format to write; default: FEAGI when `--out` ends in `.json`, else YAML.
    #[arg(long, value_enum)]
    pub to: Option<Format>,
}

pub fn main(a: ConvertArgs) -> anyhow::Result<()> {
    super::init(&Default::default());
    let genome = Genome::load(&a.genome)?;
    let origin = format!("converted by neuroburst {} from {}", env!("CARGO_PKG_VERSION"), a.genome.display());
    let text = write(&genome, Format::pick(a.to, a.out.as_deref()), &origin);
    match a.out {
        Some(path) => std::fs::write(&path, text).with_context(|| format!("{}: cannot write the genome", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// The genome's text in `format`; `origin` heads a YAML file as a comment (JSON has none, FEAGI's
/// `genome_description` keeps the genome's own). What a FEAGI genome cannot hold is logged.
pub fn write(genome: &Genome, format: Format, origin: &str) -> String {
    match format {
        Format::Yaml => format!("# {origin}\n{}", genome.to_yaml()),
        Format::Feagi => {
            let out = feagi::export::export(genome);
            for w in &out.warnings {
                tracing::warn!("FEAGI genome: {w}");
            }
            let mut text = serde_json::to_string_pretty(&out.json).expect("a JSON value always serialises");
            text.push('\n');
            text
        }
    }
}
