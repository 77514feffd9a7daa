//! Opening a backend for a genome: probe, choose (pure, see [`super::select`]), build the
//! connectome in the shape that backend wants, and hand it over.

use super::cpu::CpuBackend;
use super::select::{choose, BackendKind, Choice, GpuProbe, Probes};
use super::{Backend, Readback};
use super::{BackendConfig, CudaLaunch};
use crate::brain::Brain;
use crate::connectome::storage;
use crate::genome::Genome;
use crate::model::Layout;
use crate::partition::{ShardCount, ShardPlan};

/// A running backend and how it came to be.
pub struct Opened {
    /// The backend, ready for its first burst.
    pub backend: Box<dyn Backend>,
    /// Which backend, and why.
    pub choice: Choice,
    /// Synapses stored.
    pub synapses: u64,
    /// Synapses of the procedural mappings (drawn again, not stored).
    pub drawn: u64,
    /// Seconds the build took.
    pub build_seconds: f64,
    /// The shard plan, when sharded.
    pub plan: Option<ShardPlan>,
}

/// A backend made, before it is an [`Opened`] (which adds the choice).
struct Made {
    backend: Box<dyn Backend>,
    synapses: u64,
    drawn: u64,
    build_seconds: f64,
    plan: Option<ShardPlan>,
}

impl Made {
    fn opened(self, choice: Choice) -> Opened {
        let Made { backend, synapses, drawn, build_seconds, plan } = self;
        Opened { backend, choice, synapses, drawn, build_seconds, plan }
    }
}

/// Probe GPU `device`; never panics.
pub fn probe(device: usize) -> GpuProbe {
    super::gpu_probe(device)
}

/// Choose and start the backend for `genome`, sharded as configured.
pub fn open(genome: &Genome, cfg: &BackendConfig, readback: Readback, progress: bool) -> Result<Opened, String> {
    let mut opened = open_learning(genome, cfg, readback, progress)?;
    if !cfg.learning && genome.mappings.iter().any(|m| m.plasticity.is_some()) {
        opened.backend.set_learning(false).map_err(|e| format!("cannot switch learning off: {e}"))?;
        tracing::info!("learning off (backend.learning): the plastic mappings' weights stay as they are");
    }
    Ok(opened)
}

/// [`open`], the brain learning.
fn open_learning(genome: &Genome, cfg: &BackendConfig, readback: Readback, progress: bool) -> Result<Opened, String> {
    // (placing a genome marks mappings procedural: its layout and its learning stay)
    let layout = Layout::from_genome(genome);
    let neurons = layout.neurons as u64;
    let not_probed = || GpuProbe::Unavailable("not probed".into());
    let cuda = match cfg.kind {
        BackendKind::Cpu | BackendKind::Wgpu => not_probed(),
        _ => probe(cfg.device),
    };
    let wgpu =
        if super::select::wants_wgpu_probe(cfg.kind, &cuda, neurons, cfg.gpu_min_neurons) { super::wgpu::probe() } else { not_probed() };
    let mut choice = choose(cfg.kind, &Probes { cuda, wgpu }, neurons, cfg.gpu_min_neurons)?;
    tracing::info!("{}", choice.reason);
    if choice.kind == BackendKind::Wgpu {
        match on_wgpu(genome, &layout, cfg, readback.clone(), progress) {
            Ok(made) => return Ok(made.opened(choice)),
            // (a brain larger than the device binds: auto runs it on the CPU, saying why)
            Err(e) if cfg.kind == BackendKind::Auto => {
                let reason = format!("auto: using the CPU: the wgpu device cannot take the brain: {e}");
                tracing::warn!("{reason}");
                choice = Choice { kind: BackendKind::Cpu, reason };
            }
            Err(e) => return Err(e),
        }
    }
    let gpu = choice.kind == BackendKind::Cuda;
    let devices = if gpu { Some(gpu_devices(cfg, neurons, super::gpu_count())?) } else { None };
    // a brain reaches its GPUs without the host holding its synapses (built on the GPU, or
    // streamed to it)
    let genome = &placed(genome, &layout, cfg, devices.as_ref().map(|(d, _)| &d[..]), gpu);
    if !gpu {
        crate::capacity::check_build(genome, &layout, gpu, &crate::capacity::host_available())?;
    }
    if let Some((devices, why)) = devices {
        if let Some(why) = why {
            tracing::info!("{why}");
        }
        if devices.len() > 1 {
            match on_gpus(genome, cfg, &readback, progress, &devices) {
                Ok(made) => return Ok(made.opened(choice)),
                Err(e) if cfg.kind == BackendKind::Auto => tracing::warn!("auto: one GPU instead of {}: {e}", devices.len()),
                Err(e) => return Err(e),
            }
        }
        return on_one_gpu(genome, &layout, readback, progress, devices[0], cfg.cuda_launch).map(|made| made.opened(choice));
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

/// The placed `genome` on several GPUs, one shard each: each GPU builds its part (every mapping a
/// closed form), or the parts are streamed to them.
fn on_gpus(genome: &Genome, cfg: &BackendConfig, readback: &Readback, progress: bool, devices: &[usize]) -> Result<Made, String> {
    // every GPU of the brain checked first, at once (each GPU's context made then, as the first
    // one's was by `open`)
    let probes: Vec<GpuProbe> = std::thread::scope(|sc| {
        let hs: Vec<_> = devices.iter().filter(|&&d| d != cfg.device).map(|&d| sc.spawn(move || probe(d))).collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| GpuProbe::Unavailable("its probe stopped".into()))).collect()
    });
    if let Some(GpuProbe::Unavailable(why)) = probes.into_iter().find(|p| matches!(p, GpuProbe::Unavailable(_))) {
        return Err(format!("a GPU of the brain cannot be used: {why}"));
    }
    let start = std::time::Instant::now();
    let layout = Layout::from_genome(genome);
    // no rows on the host: built on the GPUs (every mapping a closed form), or none stored
    let buildable = storage::gpu_buildable(genome, &layout, super::cuda::GPU_BUILD_LONGEST_ROW as u64);
    if buildable || nothing_stored(genome) {
        let marked = if buildable { storage::all_marked(genome) } else { genome.clone() };
        if buildable {
            crate::capacity::check_build(&marked, &layout, true, &crate::capacity::host_available())?;
        }
        let brain = Brain::without_rows(&marked, progress);
        let drawn = brain.connectome.procedural_synapses();
        let incoming = crate::partition::incoming_per_area(&layout, &brain.connectome.mappings);
        let plan = ShardPlan::new(&layout, &incoming, devices.len(), cfg.strategy).map_err(|e| e.to_string())?;
        log_plan(&plan);
        tracing::debug!(host_s = start.elapsed().as_secs_f64(), "the brain's layout and plan made on the host");
        let (backend, synapses, drawn) = if buildable {
            tracing::info!(
                "connectome: every mapping is a fanout in closed form: each of the {} GPUs builds its part of the {drawn} synapses",
                devices.len()
            );
            (super::cuda::MultiGpu::built_on_gpus(brain, &plan, readback.clone(), devices, progress), drawn, 0)
        } else {
            (super::cuda::MultiGpu::drawn_again(brain, &plan, readback.clone(), devices), 0, drawn)
        };
        let backend = backend.map_err(|e| e.to_string())?;
        let build_seconds = start.elapsed().as_secs_f64();
        return Ok(Made { backend: Box::new(backend), synapses, drawn, build_seconds, plan: Some(plan) });
    }
    let (brain, plan, st) = Brain::planned_sharded(genome, devices.len(), cfg.strategy, progress).map_err(|e| e.to_string())?;
    log_plan(&plan);
    let (synapses, drawn) = (st.total_synapses(), brain.connectome.procedural_synapses());
    if synapses > 0 {
        tracing::info!("connectome: {synapses} synapses drawn on the host a few chunks at a time, copied to the GPUs as drawn");
    }
    let backend = super::cuda::MultiGpu::streamed(brain, &plan, st, readback.clone(), devices).map_err(|e| e.to_string())?;
    let build_seconds = start.elapsed().as_secs_f64();
    Ok(Made { backend: Box::new(backend), synapses, drawn, build_seconds, plan: Some(plan) })
}

/// The placed `genome` on one GPU: built there (every mapping a closed form), or streamed to it.
fn on_one_gpu(
    genome: &Genome,
    layout: &Layout,
    readback: Readback,
    progress: bool,
    device: usize,
    launch: CudaLaunch,
) -> Result<Made, String> {
    use super::cuda::{CudaBackend, GpuBuild};
    let start = std::time::Instant::now();
    let open = |brain, build| CudaBackend::open(brain, readback, device, build, launch).map_err(|e| e.to_string());
    let (backend, synapses, drawn): (Box<dyn Backend>, _, _) =
        if storage::gpu_buildable(genome, layout, super::cuda::GPU_BUILD_LONGEST_ROW as u64) {
            let marked = storage::all_marked(genome);
            crate::capacity::check_build(&marked, layout, true, &crate::capacity::host_available())?;
            let brain = Brain::without_rows(&marked, progress);
            let drawn = brain.connectome.procedural_synapses();
            tracing::debug!(host_s = start.elapsed().as_secs_f64(), "the brain's layout made on the host");
            tracing::info!("connectome: every mapping is a fanout in closed form: the GPU builds its {drawn} synapses");
            (Box::new(open(brain, GpuBuild::OnGpu { progress })?), drawn, 0)
        } else if nothing_stored(genome) {
            // every mapping drawn again: no rows to count or copy
            let brain = Brain::without_rows(genome, progress);
            let drawn = brain.connectome.procedural_synapses();
            (Box::new(open(brain, GpuBuild::Host)?), 0, drawn)
        } else {
            let (brain, streamed) = Brain::planned(genome, progress);
            let (synapses, drawn) = (streamed.total_synapses(), brain.connectome.procedural_synapses());
            if synapses > 0 {
                tracing::info!("connectome: {synapses} synapses drawn on the host a few chunks at a time, copied to the GPU as drawn");
            }
            (Box::new(open(brain, GpuBuild::Streamed(Box::new(streamed)))?), synapses, drawn)
        };
    // the build on the host, and on the GPU (with the backend's start) when it builds there
    let build_seconds = start.elapsed().as_secs_f64();
    Ok(Made { backend, synapses, drawn, build_seconds, plan: None })
}

/// `genome` on the machine's wgpu device: built on the host in one part, copied there.
fn on_wgpu(genome: &Genome, layout: &Layout, cfg: &BackendConfig, readback: Readback, progress: bool) -> Result<Made, String> {
    let genome = &placed(genome, layout, cfg, None, false);
    crate::capacity::check_build(genome, layout, false, &crate::capacity::host_available())?;
    let brain = Brain::build(genome, 1, progress);
    let (synapses, drawn) = (brain.connectome.synapses(), brain.connectome.procedural_synapses());
    let build_seconds = brain.connectome.build_seconds;
    let backend = super::wgpu::WgpuBackend::open(brain, readback).map_err(|e| e.to_string())?;
    Ok(Made { backend: Box::new(backend), synapses, drawn, build_seconds, plan: None })
}

/// Whether every mapping of the placed `genome` is drawn again (none stored).
fn nothing_stored(genome: &Genome) -> bool {
    genome.mappings.iter().all(|m| m.procedural)
}

/// `genome` with the mappings that `backend.connectome` draws again marked procedural (logged);
/// `gpus`: the GPUs that will hold it (their free memory together is `auto`'s budget);
/// `host_free`: the host will not hold its synapses (built on a GPU or streamed there).
fn placed(genome: &Genome, layout: &Layout, cfg: &BackendConfig, gpus: Option<&[usize]>, host_free: bool) -> Genome {
    let neurons = layout.neurons as u64;
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
    let host = crate::capacity::host_available();
    let host = if host_free { crate::capacity::Available { bytes: u64::MAX, from: host.from } } else { host };
    let budget = crate::capacity::synapse_budget(neurons, &host, on_gpu);
    let (placed, notes) = crate::connectome::storage::apply(genome, layout, cfg.connectome, gpus.is_some(), &budget);
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
            let (k, why) = crate::partition::auto_count(neurons, pool.len(), cfg.shard_min_neurons);
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
        let (d, _) = gpu_devices(&c, 5_000_000, 4).unwrap();
        assert_eq!(d, vec![0], "at 5M neurons one GPU answers sooner when paced (docs/sharding.md)");
        let (d, _) = gpu_devices(&c, 10_000_000, 4).unwrap();
        assert_eq!(d, vec![0, 1]);
        let (d, _) = gpu_devices(&c, 20_000_000, 4).unwrap();
        assert_eq!(d, vec![0, 1, 2, 3], "W(20M): 4 GPUs 9x faster back to back than one (docs/sharding.md)");
        let (d, _) = gpu_devices(&c, 400_000_000, 4).unwrap();
        assert_eq!(d, vec![0, 1, 2, 3]);
        // one GPU, the default
        let c = cfg(ShardCount::Count(1), vec![], BackendKind::Cuda);
        assert_eq!(gpu_devices(&c, 10, 1).unwrap().0, vec![0]);
        let c = BackendConfig { device: 2, ..cfg(ShardCount::Count(1), vec![], BackendKind::Cuda) };
        assert_eq!(gpu_devices(&c, 10, 4).unwrap().0, vec![2]);
    }
}
