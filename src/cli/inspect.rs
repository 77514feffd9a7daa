//! `neuroburst inspect`: what a genome builds into.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::table;
use crate::brain::Brain;
use crate::connectome::storage::Storage;
use crate::genome::Genome;
use crate::model::neuron::STATE_BYTES_PER_NEURON;

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Genome: the project's YAML or a FEAGI JSON genome.
    #[arg(long, value_name = "FILE")]
    pub genome: PathBuf,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Show the shard plan for this many shards (GPUs or CPU shards).
    #[arg(long, default_value_t = 1)]
    pub shards: usize,
    /// Sharding strategy of the plan.
    #[arg(long, value_enum, default_value_t = crate::partition::Strategy::RoundRobin)]
    pub strategy: crate::partition::Strategy,
    /// A checkpoint of this genome: report what its plastic mappings learned (synapses, grown
    /// pairs, weights) instead of what the genome builds.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Where the synapses live: `stored` (as the genome marks them), `procedural` (every mapping
    /// that can be is drawn again), `auto` (what fits this host is stored).
    #[arg(long, value_enum, default_value_t = ConnectomeKind::Stored)]
    pub connectome: ConnectomeKind,
}

/// `--connectome`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ConnectomeKind {
    Auto,
    Stored,
    Procedural,
}

/// Bytes a stored synapse takes (target and a 16-bit code), the measure of what a procedural
/// mapping saves.
const STORED_SYNAPSE_BYTES: u64 = 6;

pub fn main(a: InspectArgs) -> anyhow::Result<()> {
    super::init(&Default::default());
    let genome = Genome::load(&a.genome)?;
    let layout = crate::model::Layout::from_genome(&genome);
    let storage = match a.connectome {
        ConnectomeKind::Auto => Storage::Auto,
        ConnectomeKind::Stored => Storage::Stored,
        ConnectomeKind::Procedural => Storage::Procedural,
    };
    let budget = crate::capacity::synapse_budget(layout.neurons as u64, &crate::capacity::host_available(), None);
    let (genome, notes) = crate::connectome::storage::apply(&genome, &layout, storage, false, &budget);
    for n in notes {
        eprintln!("{n}");
    }
    crate::capacity::check_build(&genome, &layout, false, &crate::capacity::host_available()).map_err(anyhow::Error::msg)?;
    let checkpoint = a.checkpoint.as_ref().map(|p| crate::checkpoint::Checkpoint::load(p, &genome)).transpose()?;
    let plastic = super::learned::stats(&genome, checkpoint.as_ref().map(|c| &c.state.learned));
    let brain = Brain::build(&genome, 1, !a.json);
    let c = &brain.connectome;
    let neurons = brain.layout.neurons as u64;
    let state_bytes = neurons * STATE_BYTES_PER_NEURON;
    let total = c.bytes() + state_bytes;
    let gpu_bytes = crate::backend::gpu_bytes_needed(&brain);
    let incoming = crate::partition::incoming_per_area(&brain.layout, &c.mappings);
    let plan = crate::partition::ShardPlan::new(&brain.layout, &incoming, a.shards, a.strategy)?;
    let per_gpu: Vec<u64> = plan
        .ranges
        .iter()
        .zip(&plan.synapses)
        .map(|(r, &s)| crate::backend::cuda::MemoryPlan::estimate(r.len() as u64, neurons, s, plan.len() > 1).total_bytes)
        .collect();

    if a.json {
        let areas: Vec<_> = brain
            .layout
            .meta
            .iter()
            .zip(&brain.layout.params)
            .map(|(m, p)| {
                json!({"id": m.id, "name": m.name, "kind": m.kind, "dims": p.dims,
                       "neurons_per_voxel": p.neurons_per_voxel, "neurons": p.count, "first_neuron": p.first})
            })
            .collect();
        let obj = json!({
            "genome": genome.name,
            "burst_rate_hz": genome.burst_rate_hz,
            "areas": areas,
            "mappings": c.mappings,
            "neurons": neurons,
            "synapses": c.synapses(),
            "procedural_synapses": c.procedural_synapses(),
            "procedural_bytes_saved": c.procedural_synapses() * STORED_SYNAPSE_BYTES,
            "distinct_contributions": c.contributions.len(),
            "connectome_bytes": c.bytes(),
            "state_bytes": state_bytes,
            "memory_bytes": total,
            "bytes_per_synapse": c.bytes_per_synapse(),
            "gpu_bytes_needed": gpu_bytes,
            "plan": plan,
            "plan_gpu_bytes": per_gpu,
            "build_s": c.build_seconds,
            "plastic": plastic,
            "learned_at_burst": checkpoint.as_ref().map(|c| c.state.burst),
        });
        println!("{}", serde_json::to_string_pretty(&obj)?);
        return Ok(());
    }

    println!("genome {} ({} bursts/s, seed {})", genome.name, genome.burst_rate_hz, genome.seed);
    let mut rows = vec![vec!["area".into(), "kind".into(), "dims".into(), "per voxel".into(), "neurons".into(), "name".into()]];
    for (m, p) in brain.layout.meta.iter().zip(&brain.layout.params) {
        rows.push(vec![
            m.id.clone(),
            format!("{:?}", m.kind).to_lowercase(),
            format!("{}x{}x{}", p.dims[0], p.dims[1], p.dims[2]),
            p.neurons_per_voxel.to_string(),
            p.count.to_string(),
            m.name.clone(),
        ]);
    }
    print!("{}", table::render(&rows));
    println!();
    let head = ["#", "source", "destination", "morphology", "synapses", "dead", "kept", "memory saved"];
    let mut rows = vec![head.map(String::from).to_vec()];
    for m in &c.mappings {
        rows.push(vec![
            m.index.to_string(),
            m.source.clone(),
            m.destination.clone(),
            m.morphology.clone(),
            m.synapses.to_string(),
            m.dead.to_string(),
            if m.procedural { "procedural" } else { "stored" }.into(),
            if m.procedural { table::bytes(m.synapses * STORED_SYNAPSE_BYTES) } else { "-".into() },
        ]);
    }
    print!("{}", table::render(&rows));
    println!();
    if !plastic.is_empty() {
        match &checkpoint {
            Some(c) => println!("learned (checkpoint at burst {}):", c.state.burst),
            None => println!("plastic mappings (as built; --checkpoint FILE shows what a brain learned):"),
        }
        print!("{}", table::render(&super::learned::table_rows(&plastic)));
        println!();
    }
    println!("neurons            {neurons}");
    println!("synapses           {} stored ({} distinct contributions)", c.synapses(), c.contributions.len());
    if c.procedural_synapses() > 0 {
        let saved = c.procedural_synapses() * STORED_SYNAPSE_BYTES;
        println!(
            "procedural         {} synapses drawn again when their sources fire ({} not stored)",
            c.procedural_synapses(),
            table::bytes(saved)
        );
    }
    println!("connectome         {} ({:.2} bytes per synapse, row pointers included)", table::bytes(c.bytes()), c.bytes_per_synapse());
    println!("neuron state       {} ({STATE_BYTES_PER_NEURON} bytes per neuron)", table::bytes(state_bytes));
    println!("memory (CPU)       {}", table::bytes(total));
    println!("memory (one GPU)   {}", table::bytes(gpu_bytes));
    println!("built in           {:.3} s", c.build_seconds);
    if plan.len() > 1 {
        println!();
        println!("shard plan: {} shards, {}", plan.len(), plan.strategy);
        let mut rows = vec![vec!["shard".into(), "neurons".into(), "ids".into(), "synapses".into(), "GPU memory".into(), "areas".into()]];
        for (k, r) in plan.ranges.iter().enumerate() {
            rows.push(vec![
                k.to_string(),
                r.len().to_string(),
                format!("{}..{}", r.start, r.end),
                plan.synapses[k].to_string(),
                table::bytes(per_gpu[k]),
                plan.areas[k].join(" "),
            ]);
        }
        print!("{}", table::render(&rows));
        let (n, s) = plan.imbalance();
        println!("largest shard over the mean: neurons {n:.2}, synapses {s:.2}");
    }
    Ok(())
}
