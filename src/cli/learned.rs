//! What a brain learned: `neuroburst export` (a checkpoint's learned synapses written into the
//! genome, docs/plasticity.md) and the plastic mappings' table of `inspect`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::table;
use crate::checkpoint::Checkpoint;
use crate::genome::Genome;
use crate::model::plasticity::Learned;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The checkpoint of a brain that learned (written by the node, `neuroburst shard` or a replay).
    #[arg(long, value_name = "FILE")]
    pub checkpoint: PathBuf,
    /// The genome the checkpoint belongs to.
    #[arg(long, value_name = "FILE")]
    pub genome: PathBuf,
    /// Where to write the learned genome (YAML): it loads and runs like any genome, its plastic
    /// mappings holding the learned synapses and weights.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The format: YAML (default; `.json`: FEAGI), or `feagi`: a FEAGI 3.0 genome, which holds
    /// the brain's structure and rules but no synapses (a warning says how many learned ones stay
    /// behind in the checkpoint).
    #[arg(long, value_enum)]
    pub to: Option<super::convert::Format>,
}

pub fn export(a: ExportArgs) -> anyhow::Result<()> {
    super::init(&Default::default());
    let genome = Genome::load(&a.genome)?;
    let c = Checkpoint::load(&a.checkpoint, &genome)?;
    let learned = &c.state.learned;
    anyhow::ensure!(
        !learned.is_empty(),
        "{}: the checkpoint holds no learned synapses (the genome has no plastic mapping, or an older neuroburst wrote it)",
        a.checkpoint.display()
    );
    let out = crate::genome::learned_genome(&genome, learned, c.state.burst);
    let origin = format!(
        "learned by neuroburst {}: {} at burst {} (checkpoint {})",
        env!("CARGO_PKG_VERSION"),
        a.genome.display(),
        c.state.burst,
        a.checkpoint.display(),
    );
    let text = super::convert::write(&out, super::convert::Format::pick(a.to, Some(&a.out)), &origin);
    std::fs::write(&a.out, text).with_context(|| format!("{}: cannot write the learned genome", a.out.display()))?;
    let rows = stats(&genome, Some(learned));
    print!("{}", table::render(&table_rows(&rows)));
    println!("learned genome written to {}", a.out.display());
    Ok(())
}

/// What one plastic mapping holds.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MappingLearned {
    pub index: usize,
    pub mapping: String,
    pub associative: bool,
    /// Existing synapses (an associative mapping: grown).
    pub synapses: u64,
    pub min: u8,
    pub mean: f64,
    pub max: u8,
    /// Synapses of weight 0 (they stay, and can grow back).
    pub zero: u64,
}

/// Per plastic mapping of `genome`: its synapses and weights, from `learned` (or, without one, as
/// the genome builds them).
pub fn stats(genome: &Genome, learned: Option<&Learned>) -> Vec<MappingLearned> {
    let built;
    let learned = match learned {
        Some(l) => l,
        None => {
            let brain = crate::brain::Brain::build(genome, 1, false);
            let mut b = crate::backend::cpu::CpuBackend::new(brain, crate::backend::Readback::Ranges(vec![]));
            built = crate::backend::Backend::snapshot(&mut b).map(|s| s.learned).unwrap_or_default();
            &built
        }
    };
    genome
        .mappings
        .iter()
        .enumerate()
        .filter(|(_, m)| m.plasticity.is_some())
        .map(|(index, m)| {
            let w: Vec<u8> = learned.synapses.iter().filter(|s| s.mapping == index as u32).map(|s| s.weight).collect();
            MappingLearned {
                index,
                mapping: format!("{} -> {}", m.source, m.destination),
                associative: m.morphology == "associative_memory",
                synapses: w.len() as u64,
                min: w.iter().copied().min().unwrap_or(0),
                mean: w.iter().map(|&x| x as f64).sum::<f64>() / w.len().max(1) as f64,
                max: w.iter().copied().max().unwrap_or(0),
                zero: w.iter().filter(|&&x| x == 0).count() as u64,
            }
        })
        .collect()
}

pub fn table_rows(rows: &[MappingLearned]) -> Vec<Vec<String>> {
    let mut out = vec![["#", "plastic mapping", "synapses", "weight min / mean / max", "weight 0"].map(String::from).to_vec()];
    for r in rows {
        let kind = if r.associative { " (associative: grown)" } else { "" };
        out.push(vec![
            r.index.to_string(),
            format!("{}{kind}", r.mapping),
            r.synapses.to_string(),
            format!("{} / {:.2} / {}", r.min, r.mean, r.max),
            r.zero.to_string(),
        ]);
    }
    out
}
