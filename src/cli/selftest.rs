//! `neuroburst selftest`: the parity check on this machine. Random brains of several shapes run on
//! the CPU reference and on the chosen backend with the same injections; every burst's fired set and
//! the state must match bit for bit.

use clap::Args;

use crate::backend::{cuda, wgpu, BackendKind, GpuProbe};
use crate::selftest::{
    cpu_candidate, cuda_candidate, parity, procedural_candidate, sharded_candidate, wgpu_candidate, Candidate, ParityConfig,
};

#[derive(Args, Debug)]
pub struct SelftestArgs {
    /// Backend checked against the CPU reference: cuda, wgpu, cpu (the CPU split into --parts
    /// shards), or auto (cuda when a GPU is usable, else cpu).
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    pub backend: BackendKind,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Random brains.
    #[arg(long, default_value_t = 20)]
    pub brains: usize,
    /// Bursts per brain.
    #[arg(long, default_value_t = 2000)]
    pub bursts: u64,
    /// Seed of the first brain.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Largest brain, in neurons.
    #[arg(long, default_value_t = 4000)]
    pub max_neurons: u32,
    /// Target parts of the candidate's connectome (threads' pieces of the CPU candidate).
    #[arg(long, default_value_t = 3)]
    pub parts: usize,
    /// Shards of the candidate: GPUs (from --device on) with cuda, CPU shards with cpu.
    #[arg(long, default_value_t = 1)]
    pub shards: usize,
    /// GPUs of the shards (device ordinals, comma-separated; a GPU may repeat, to check the
    /// exchange on one GPU); default: --device and the next ones.
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<usize>,
    /// Sharding strategy of the candidate.
    #[arg(long, value_enum, default_value_t = crate::partition::Strategy::RoundRobin)]
    pub strategy: crate::partition::Strategy,
    /// The candidate runs the brains procedural (docs/capacity.md): every mapping that it can
    /// draw again (on a GPU: the closed forms) is drawn again, the reference stores them.
    #[arg(long)]
    pub procedural: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn main(a: SelftestArgs) -> anyhow::Result<()> {
    super::init(&Default::default());
    let on = match a.backend {
        BackendKind::Cpu => BackendKind::Cpu,
        BackendKind::Cuda => match cuda::probe(a.device) {
            GpuProbe::Available(_) => BackendKind::Cuda,
            GpuProbe::Unavailable(why) => anyhow::bail!("selftest --backend cuda: {why}"),
        },
        BackendKind::Wgpu => match wgpu::probe() {
            GpuProbe::Available(name) => {
                tracing::info!("checking the wgpu backend on {name}");
                BackendKind::Wgpu
            }
            GpuProbe::Unavailable(why) => anyhow::bail!("selftest --backend wgpu: {why}"),
        },
        BackendKind::Auto => match cuda::probe(a.device) {
            GpuProbe::Available(_) => BackendKind::Cuda,
            GpuProbe::Unavailable(why) => {
                tracing::info!("auto: checking the CPU split into {} shards, because {why}", a.parts);
                BackendKind::Cpu
            }
        },
    };
    if on == BackendKind::Wgpu && a.shards > 1 {
        anyhow::bail!("selftest --backend wgpu --shards {}: the wgpu backend runs a whole brain on one device", a.shards);
    }
    let gpu = on == BackendKind::Cuda;
    let cfg = ParityConfig {
        brains: a.brains,
        bursts: a.bursts,
        seed: a.seed,
        max_neurons: a.max_neurons,
        candidate_parts: if on == BackendKind::Cpu { a.parts.max(2) } else { 1 },
    };
    let check = |c: &Candidate<'_>| {
        if a.procedural {
            parity(&cfg, &procedural_candidate(c, gpu))
        } else {
            parity(&cfg, c)
        }
    };
    let result = match (on, a.shards) {
        (BackendKind::Wgpu, _) => check(&wgpu_candidate),
        (BackendKind::Cuda, 1) => check(&cuda_candidate(a.device)),
        (_, 1) => check(&cpu_candidate),
        (BackendKind::Cuda, k) => {
            let available = crate::backend::gpu_count();
            let gpus: Vec<usize> = if a.gpus.is_empty() { (a.device..a.device + k).collect() } else { a.gpus.clone() };
            if gpus.len() != k {
                anyhow::bail!("selftest --shards {k} --gpus {:?}: one GPU per shard", a.gpus);
            }
            if let Some(bad) = gpus.iter().find(|&&g| g >= available) {
                anyhow::bail!("selftest --shards {k}: GPU {bad} was asked for, the machine has {available}");
            }
            check(&sharded_candidate(k, a.strategy, gpus))
        }
        (_, k) => check(&sharded_candidate(k, a.strategy, vec![])),
    };
    let report = result.map_err(|diff| anyhow::anyhow!("parity FAILED: {diff}"))?;
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        for b in &report.brains {
            println!(
                "  seed {:>4} {:<17} {:>2} areas {:>6} neurons {:>9} synapses {:>9} fired, readback {}, {}",
                b.seed, b.shape, b.areas, b.neurons, b.synapses, b.fired, b.readback, b.on
            );
        }
        println!("{report}");
    }
    Ok(())
}
