//! Opening a backend for a genome: probe, choose (pure, see [`super::select`]), build the
//! connectome in the shape that backend wants, and hand it over.

use super::cpu::CpuBackend;
use super::select::{choose, BackendKind, Choice, GpuProbe};
use super::{Backend, Readback};
use crate::brain::Brain;
use crate::config::BackendConfig;
use crate::connectome::storage;
use crate::genome::Genome;
use crate::model::Layout;
use crate::shard::{ShardCount, ShardPlan};

/// A running backend and how it came to be.
pub struct Opened {
    pub backend: Box<dyn Backend>,
    pub choice: Choice,
    /// Synapses stored.
    pub synapses: u64,
    /// Synapses of the procedural mappings (drawn again, not stored).
    pub drawn: u64,
    pub build_seconds: f64,
    /// The shard plan, when sharded.
    pub plan: Option<ShardPlan>,
}

/// Probe GPU `device`; never panics.
pub fn probe(device: usize) -> GpuProbe {
    super::gpu_probe(device)
}

/// Choose and start the backend for `genome`, sharded as configured.
pub fn open(genome: &Genome, cfg: &BackendConfig, readback: Readback, progress: bool) -> Result<Opened, String> {
    let neurons = Layout::from_genome(genome).neurons as u64;
    let probe = match cfg.kind {
        BackendKind::Cpu => GpuProbe::Unavailable("not probed".into()),
        _ => probe(cfg.device),
    };
    let choice = choose(cfg.kind, &probe, neurons, cfg.gpu_min_neurons)?;
    tracing::info!("{}", choice.reason);
    let gpu = choice.kind == BackendKind::Cuda;
    let devices = if gpu { Some(gpu_devices(cfg, neurons, super::gpu_count())?) } else { None };
    let genome = &placed(genome, cfg, devices.as_ref().map(|(d, _)| &d[..]));
    let layout = Layout::from_genome(genome);
    // one GPU and every mapping in closed form: the GPU builds the synapses, the host holds none;
    // otherwise, a brain that does not learn: the host draws the synapses a few chunks at a time
    // as it copies them to the GPUs (a brain that learns is built on the host: its learning
    // indexes its synapses there)
    let one_gpu = matches!(&devices, Some((d, _)) if d.len() == 1);
    let on_gpu = one_gpu && storage::gpu_buildable(genome, &layout, super::cuda::GPU_BUILD_LONGEST_ROW as u64);
    let learns = crate::connectome::learns(genome, &layout);
    let streams = gpu && !on_gpu && !learns;
    let host_built = if on_gpu { storage::all_marked(genome) } else { genome.clone() };
    if !streams {
        crate::capacity::check_build(&host_built, &layout, gpu, &crate::capacity::host_available())?;
    }
    if let Some((devices, why)) = devices {
        if let Some(why) = why {
            tracing::info!("{why}");
        }
        if devices.len() > 1 {
            let start = std::time::Instant::now();
            // a brain that does not learn is streamed to its GPUs; one that learns is built here
            let planned = Brain::planned_sharded(genome, devices.len(), cfg.strategy, progress).map_err(|e| e.to_string())?;
            let (brain, plan, streamed) = match planned {
                Some((brain, plan, streamed)) => (brain, plan, Some(streamed)),
                None => {
                    let (brain, plan) =
                        Brain::build_sharded(genome, devices.len(), cfg.strategy, 1, progress).map_err(|e| e.to_string())?;
                    (brain, plan, None)
                }
            };
            log_plan(&plan);
            let drawn = brain.connectome.procedural_synapses();
            let synapses = match &streamed {
                Some(st) => (0..plan.len()).map(|k| st.synapses(k)).sum(),
                None => brain.connectome.synapses(),
            };
            let opened = match streamed {
                Some(st) => {
                    tracing::info!("connectome: {synapses} synapses drawn on the host a few chunks at a time, copied to the GPUs as drawn");
                    super::cuda::MultiGpu::streamed(brain, &plan, st, readback.clone(), &devices)
                        .map(|b| Box::new(b) as Box<dyn super::Backend>)
                }
                None => super::open_multi_cuda(brain, &plan, readback.clone(), &devices),
            };
            let build_seconds = start.elapsed().as_secs_f64();
            match opened {
                Ok(backend) => return Ok(Opened { backend, choice, synapses, drawn, build_seconds, plan: Some(plan) }),
                Err(e) if cfg.kind == BackendKind::Auto => {
                    tracing::warn!("auto: one GPU instead of {}: {e}", devices.len());
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        let start = std::time::Instant::now();
        let planned = if streams { Brain::planned(genome, progress) } else { None };
        let (backend, synapses, drawn) = if let Some((brain, streamed)) = planned {
            let (synapses, drawn) = (streamed.synapses(0), brain.connectome.procedural_synapses());
            tracing::info!("connectome: {synapses} synapses drawn on the host a few chunks at a time, copied to the GPU as drawn");
            let backend = super::cuda::CudaBackend::streamed(brain, streamed, readback, devices[0]).map_err(|e| e.to_string())?;
            (Box::new(backend) as Box<dyn super::Backend>, synapses, drawn)
        } else {
            let brain = Brain::build(&host_built, 1, progress);
            let (synapses, drawn) = (brain.connectome.synapses(), brain.connectome.procedural_synapses());
            if on_gpu {
                tracing::info!("connectome: every mapping is a fanout in closed form: the GPU builds its {drawn} synapses");
                let b = super::cuda::CudaBackend::built_on_gpu(brain, readback, devices[0], progress).map_err(|e| e.to_string())?;
                (Box::new(b) as Box<dyn super::Backend>, drawn, 0)
            } else {
                (super::open_cuda(brain, readback, devices[0]).map_err(|e| e.to_string())?, synapses, drawn)
            }
        };
        // the build on the host, and on the GPU (with the backend's start) when it builds there
        let build_seconds = start.elapsed().as_secs_f64();
        return Ok(Opened { backend, choice, synapses, drawn, build_seconds, plan: None });
    }
    let shards = match cfg.shards {
        ShardCount::Count(n) => n,
        ShardCount::Auto => 1,
    };
    if shards > 1 {
        let threads = rayon::current_num_threads();
        let (brain, plan) =
            Brain::build_sharded(genome, shards, cfg.strategy, threads.div_ceil(shards).max(1), progress).map_err(|e| e.to_string())?;
        log_plan(&plan);
        let (synapses, drawn) = (brain.connectome.synapses(), brain.connectome.procedural_synapses());
        let build_seconds = brain.connectome.build_seconds;
        let backend = Box::new(CpuBackend::with_plan(brain, &plan, readback));
        return Ok(Opened { backend, choice, synapses, drawn, build_seconds, plan: Some(plan) });
    }
    let brain = Brain::build(genome, rayon::current_num_threads(), progress);
    let (synapses, drawn) = (brain.connectome.synapses(), brain.connectome.procedural_synapses());
    let build_seconds = brain.connectome.build_seconds;
    Ok(Opened { backend: Box::new(CpuBackend::new(brain, readback)), choice, synapses, drawn, build_seconds, plan: None })
}

/// `genome` with the mappings that `backend.connectome` draws again marked procedural (logged);
/// `gpus`: the GPUs that will hold it (their free memory together is `auto`'s budget).
fn placed(genome: &Genome, cfg: &BackendConfig, gpus: Option<&[usize]>) -> Genome {
    let layout = Layout::from_genome(genome);
    let neurons = layout.neurons as u64;
    let gpu = gpus.is_some();
    let on_gpu = gpus.map(|devices| {
        // each GPU holds the state of its share of the neurons (and, when several, the row
        // pointers of every source and the gathered fired lists)
        let (k, sharded) = (devices.len().max(1) as u64, devices.len() > 1);
        let share = neurons.div_ceil(k);
        let mut distinct = devices.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let free: u64 = distinct.iter().map(|&d| super::cuda::free_memory(d).unwrap_or(0)).sum();
        let state = k * (super::cuda::MemoryPlan::estimate(share, neurons, 0, sharded).total_bytes + super::cuda::memory::RESERVE_BYTES);
        (free, 6.0, state)
    });
    // a brain the GPU builds itself, or one streamed to one GPU, takes no host memory for its
    // synapses
    let host = crate::capacity::host_available();
    let gpu_builds = gpu && storage::gpu_buildable(genome, &layout, super::cuda::GPU_BUILD_LONGEST_ROW as u64);
    let streams = gpu && !crate::connectome::learns(genome, &layout);
    let host = if gpu_builds || streams { crate::capacity::Available { bytes: u64::MAX, from: host.from } } else { host };
    let budget = crate::capacity::synapse_budget(neurons, &host, on_gpu);
    let (placed, notes) = crate::connectome::storage::apply(genome, &layout, cfg.connectome, gpu, &budget);
    for n in notes {
        tracing::info!("{n}");
    }
    placed
}

fn log_plan(plan: &ShardPlan) {
    let (n, s) = plan.imbalance();
    tracing::info!(
        "{} shards ({}): {}; largest over mean: neurons {n:.2}, synapses {s:.2}",
        plan.len(),
        plan.strategy,
        plan.ranges.iter().map(|r| format!("{}..{}", r.start, r.end)).collect::<Vec<_>>().join(", ")
    );
}

/// The GPUs to use (device ordinals) and, for `auto`, why that many. Pure: `available` is the
/// driver's GPU count.
pub fn gpu_devices(cfg: &BackendConfig, neurons: u64, available: usize) -> Result<(Vec<usize>, Option<String>), String> {
    let pool: Vec<usize> = if cfg.gpus.is_empty() { (cfg.device..available.max(cfg.device + 1)).collect() } else { cfg.gpus.clone() };
    if let Some(&bad) = pool.iter().find(|&&d| d >= available) {
        if !cfg.gpus.is_empty() || cfg.shards != ShardCount::Count(1) {
            return Err(format!("backend.gpus names GPU {bad}, but the machine has {available} GPU(s)"));
        }
    }
    let (count, why) = match cfg.shards {
        ShardCount::Count(n) => (n, None),
        ShardCount::Auto => {
            let (k, why) = crate::shard::auto_count(neurons, pool.len(), cfg.shard_min_neurons);
            (k, Some(why))
        }
    };
    if count > pool.len() {
        let msg = format!(
            "{count} GPU shards were asked for, but {} GPU(s) are there to use{}",
            pool.len(),
            if cfg.gpus.is_empty() {
                format!(" (the machine has {available}, from device {})", cfg.device)
            } else {
                " (backend.gpus)".into()
            }
        );
        if cfg.kind == BackendKind::Auto {
            let k = pool.len().max(1);
            return Ok((pool[..k].to_vec(), Some(format!("auto: {msg}; using {k}"))));
        }
        return Err(msg);
    }
    // a GPU named twice holds two shards (slower than one; useful to check the exchange on one GPU)
    Ok((pool[..count.max(1)].to_vec(), why))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(shards: ShardCount, gpus: Vec<usize>, kind: BackendKind) -> BackendConfig {
        BackendConfig { shards, gpus, kind, ..Default::default() }
    }

    #[test]
    fn gpu_choice() {
        let c = cfg(ShardCount::Count(2), vec![], BackendKind::Cuda);
        assert_eq!(gpu_devices(&c, 1000, 4).unwrap().0, vec![0, 1]);
        let c = cfg(ShardCount::Count(4), vec![], BackendKind::Cuda);
        let e = gpu_devices(&c, 1000, 2).unwrap_err();
        assert!(e.contains("4 GPU shards") && e.contains("has 2"), "{e}");
        // auto falls back to what is there and says so
        let c = cfg(ShardCount::Count(4), vec![], BackendKind::Auto);
        let (d, why) = gpu_devices(&c, 1000, 2).unwrap();
        assert_eq!(d, vec![0, 1]);
        assert!(why.unwrap().contains("using 2"));
        let c = cfg(ShardCount::Count(2), vec![3, 1], BackendKind::Cuda);
        assert_eq!(gpu_devices(&c, 1000, 4).unwrap().0, vec![3, 1]);
        let c = cfg(ShardCount::Count(2), vec![5, 1], BackendKind::Cuda);
        assert!(gpu_devices(&c, 1000, 4).unwrap_err().contains("GPU 5"));
        // auto count: a small brain stays on one GPU
        let c = cfg(ShardCount::Auto, vec![], BackendKind::Auto);
        let (d, why) = gpu_devices(&c, 100_000, 4).unwrap();
        assert_eq!(d, vec![0]);
        assert!(why.unwrap().contains("1 of 4"));
        let (d, _) = gpu_devices(&c, 20_000_000, 4).unwrap();
        assert_eq!(d, vec![0], "one GPU is faster than several up to 80M neurons (docs/sharding.md)");
        let (d, _) = gpu_devices(&c, 400_000_000, 4).unwrap();
        assert_eq!(d, vec![0, 1, 2, 3]);
        // one GPU, the default
        let c = cfg(ShardCount::Count(1), vec![], BackendKind::Cuda);
        assert_eq!(gpu_devices(&c, 10, 1).unwrap().0, vec![0]);
        let c = BackendConfig { device: 2, ..cfg(ShardCount::Count(1), vec![], BackendKind::Cuda) };
        assert_eq!(gpu_devices(&c, 10, 4).unwrap().0, vec![2]);
    }
}
