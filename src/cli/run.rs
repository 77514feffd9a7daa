//! `neuroburst run`: bursts with no external input; optional JSON-lines spike log.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use super::table;
use crate::backend::open::open;
use crate::backend::Readback;
use crate::genome::Genome;
use crate::model::{InjectionSlice, Layout};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Genome: the project's YAML or a FEAGI JSON genome.
    #[arg(long, value_name = "FILE")]
    pub genome: PathBuf,
    /// Number of bursts to run.
    #[arg(long)]
    pub bursts: u64,
    /// Write one JSON object per burst: {"burst": t, "fired": {"<area id>": [[x, y, z, k], ...]}}.
    #[arg(long, value_name = "FILE")]
    pub spikes_out: Option<PathBuf>,
    #[command(flatten)]
    pub runtime: super::RuntimeArgs,
}

pub fn main(a: RunArgs) -> anyhow::Result<()> {
    let config = a.runtime.config()?;
    super::init(&config);
    let genome = Genome::load(&a.genome)?;
    let layout = Layout::from_genome(&genome);
    let mut opened = open(&genome, &config.backend, Readback::All, config.log.progress).map_err(anyhow::Error::msg)?;
    let backend = opened.backend.as_mut();
    let mut writer = match &a.spikes_out {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("{}: cannot create the spike log", p.display()))?,
        )),
        None => None,
    };

    let mut per_area = vec![0u64; layout.params.len()];
    let start = Instant::now();
    for _ in 0..a.bursts {
        let out = backend.burst(InjectionSlice::EMPTY)?;
        let mut line: BTreeMap<&str, Vec<[u32; 4]>> = BTreeMap::new();
        for &n in out.fired {
            let c = layout.coord(n);
            per_area[c.area] += 1;
            if writer.is_some() {
                line.entry(layout.meta[c.area].id.as_str()).or_default().push(c.xyzk);
            }
        }
        if let Some(w) = writer.as_mut() {
            let obj = serde_json::json!({ "burst": out.burst, "fired": line });
            writeln!(w, "{obj}").with_context(|| format!("{}: cannot write the spike log", a.spikes_out.as_ref().unwrap().display()))?;
        }
    }
    if let Some(mut w) = writer {
        w.flush().with_context(|| format!("{}: cannot write the spike log", a.spikes_out.as_ref().unwrap().display()))?;
    }
    let elapsed = start.elapsed();

    let info = backend.info();
    println!(
        "{}: {} bursts on {} ({}) in {:.3} s ({:.1} us per burst); {} neurons, {} synapses (built in {:.2} s)",
        genome.name,
        a.bursts,
        info.backend,
        info.device,
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / a.bursts.max(1) as f64,
        layout.neurons,
        opened.synapses,
        opened.build_seconds
    );
    let mut rows = vec![vec!["area".into(), "kind".into(), "neurons".into(), "fired".into(), "per burst".into()]];
    for (i, m) in layout.meta.iter().enumerate() {
        rows.push(vec![
            m.id.clone(),
            format!("{:?}", m.kind).to_lowercase(),
            layout.params[i].count.to_string(),
            per_area[i].to_string(),
            format!("{:.2}", per_area[i] as f64 / a.bursts.max(1) as f64),
        ]);
    }
    print!("{}", table::render(&rows));
    if let Some(p) = &a.spikes_out {
        println!("spikes written to {}", p.display());
    }
    Ok(())
}
