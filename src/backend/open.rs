//! Opening a backend for a genome: probe, choose (pure, see [`super::select`]), build the
//! connectome in the shape that backend wants, and hand it over.

use super::cpu::CpuBackend;
use super::select::{choose, BackendKind, Choice, GpuProbe};
use super::{Backend, Readback};
use crate::brain::Brain;
use crate::config::BackendConfig;
use crate::genome::Genome;
use crate::model::Layout;

/// A running backend and how it came to be.
pub struct Opened {
    pub backend: Box<dyn Backend>,
    pub choice: Choice,
    pub synapses: u64,
    pub build_seconds: f64,
}

/// Probe GPU `device`; never panics.
pub fn probe(device: usize) -> GpuProbe {
    super::gpu_probe(device)
}

/// Choose and start the backend for `genome`.
pub fn open(genome: &Genome, cfg: &BackendConfig, readback: Readback, progress: bool) -> Result<Opened, String> {
    let neurons = Layout::from_genome(genome).neurons as u64;
    let probe = match cfg.kind {
        BackendKind::Cpu => GpuProbe::Unavailable("not probed".into()),
        _ => probe(cfg.device),
    };
    let choice = choose(cfg.kind, &probe, neurons, cfg.gpu_min_neurons)?;
    tracing::info!("{}", choice.reason);
    let parts = match choice.kind {
        BackendKind::Cuda => 1,
        _ => rayon::current_num_threads(),
    };
    let brain = Brain::build(genome, parts, progress);
    let synapses = brain.connectome.synapses();
    let build_seconds = brain.connectome.build_seconds;
    let backend: Box<dyn Backend> = match choice.kind {
        BackendKind::Cuda => super::open_cuda(brain, readback, cfg.device).map_err(|e| e.to_string())?,
        _ => Box::new(CpuBackend::new(brain, readback)),
    };
    Ok(Opened { backend, choice, synapses, build_seconds })
}
