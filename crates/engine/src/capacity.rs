//! Memory checked before it is spent: a brain whose build would not fit the host's memory is
//! refused before the build starts, with what it needs, what there is, and the largest brain of
//! its shape that would fit (instead of the kernel's OOM killer ending the process mid-build).
//!
//! What a build needs at its peak was measured (`/usr/bin/time -v`, `bench --backend cpu`): W(1M,
//! 100) 1.10 GB, W(3M, 100) 3.28 GB, W(3M, 20) 0.71 GB, i.e. 10.8 bytes per synapse (the drawn rows,
//! target and code, beside the assembled part's 6) and ~20 per neuron. The GPU's brain is cut into
//! one part once more on the host (6 bytes per synapse more). Neuron state and fixed costs are
//! taken generously.

use crate::genome::Genome;
use crate::model::Layout;

/// Host bytes per synapse at a build's peak, for the CPU backends and for a GPU.
const PEAK_PER_SYNAPSE_CPU: f64 = 11.0;
const PEAK_PER_SYNAPSE_GPU: f64 = 14.0;
/// Host bytes per neuron (layout, state, injections) and fixed (the process itself).
const PEAK_PER_NEURON: f64 = 64.0;
const PEAK_FIXED: u64 = 128 << 20;

pub use crate::memory::{host_available, Available};

/// How many synapses may be stored: what the host's build can hold at its peak, and on a GPU
/// (`gpu`: its free bytes and bytes per stored synapse), what the device can hold beside the state
/// of `neurons` neurons (`state_per_neuron` bytes each) and its reserve.
pub fn synapse_budget(neurons: u64, host: &Available, gpu: Option<(u64, f64, u64)>) -> crate::connectome::storage::Budget {
    let per_synapse = if gpu.is_some() { PEAK_PER_SYNAPSE_GPU } else { PEAK_PER_SYNAPSE_CPU };
    let fixed = PEAK_FIXED + (neurons as f64 * PEAK_PER_NEURON) as u64;
    let on_host = (host.bytes.saturating_sub(fixed) as f64 / per_synapse) as u64;
    let mut budget = crate::connectome::storage::Budget { synapses: on_host, from: format!("{} (the build's peak)", host.from) };
    if let Some((free, bytes_per_synapse, state)) = gpu {
        let on_gpu = (free.saturating_sub(state) as f64 / bytes_per_synapse) as u64;
        if on_gpu < on_host {
            budget = crate::connectome::storage::Budget { synapses: on_gpu, from: "the GPU's free memory".into() };
        }
    }
    budget
}

/// Host bytes a build of `synapses` and `neurons` takes at its peak.
pub fn build_peak(synapses: u64, neurons: u64, gpu: bool) -> u64 {
    let per_synapse = if gpu { PEAK_PER_SYNAPSE_GPU } else { PEAK_PER_SYNAPSE_CPU };
    PEAK_FIXED + (synapses as f64 * per_synapse + neurons as f64 * PEAK_PER_NEURON) as u64
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Refuse, before building, a brain whose build would not fit `available`: an error that gives
/// both numbers and the largest brain of this shape (neurons and synapses scaled together) that
/// fits. Counts the synapses (drawing them without keeping them) only when a quick bound does not
/// already fit.
pub fn check_build(genome: &Genome, layout: &Layout, gpu: bool, available: &Available) -> Result<(), String> {
    check_share(genome, layout, 1.0, gpu, available)
}

/// As [`check_build`] for a process that keeps about `share` of the brain's neurons and synapses
/// (one shard of several: `1 / shards`).
pub fn check_share(genome: &Genome, layout: &Layout, share: f64, gpu: bool, available: &Available) -> Result<(), String> {
    let kept = |x: u64| (x as f64 * share).ceil() as u64;
    let neurons = layout.neurons as u64;
    let (bound, exact) = crate::connectome::synapse_bound(genome, layout);
    if build_peak(kept(bound), kept(neurons), gpu) <= available.bytes {
        return Ok(());
    }
    // Neurons alone too many: refused without counting the synapses (drawing them takes a
    // while for a brain this large; what fits is then said of the neurons).
    let neurons_alone = build_peak(0, kept(neurons), gpu) > available.bytes;
    let synapses = if exact {
        bound
    } else if neurons_alone {
        0
    } else {
        crate::connectome::count(genome, layout)
    };
    let need = build_peak(kept(synapses), kept(neurons), gpu);
    if need <= available.bytes {
        return Ok(());
    }
    let scale = available.bytes.saturating_sub(PEAK_FIXED) as f64 / need.saturating_sub(PEAK_FIXED).max(1) as f64;
    let (fit_n, fit_s) = ((neurons as f64 * scale) as u64, (synapses as f64 * scale) as u64);
    let part = if share < 1.0 { format!(" (this process keeps about {:.0}% of it)", share * 100.0) } else { String::new() };
    let counted = if neurons_alone && !exact { "its synapses not counted".to_string() } else { format!("{synapses} synapses") };
    Err(format!(
        "the brain ({neurons} neurons, {counted}){part} needs {}about {need} bytes ({}) of host memory at its build's peak, \
         but {} is {} bytes ({}): the largest brain of this shape that fits has about {fit_n} neurons and {fit_s} synapses",
        if neurons_alone && !exact { "at least " } else { "" },
        gib(need),
        available.from,
        available.bytes,
        gib(available.bytes)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    #[test]
    fn a_brain_too_big_is_refused_with_both_numbers_and_what_fits() {
        let g = Workload { neurons: 1_000_000, fanout: 100, rate: 0.01, seed: 1 }.genome();
        let layout = Layout::from_genome(&g);
        let small = Available { bytes: 500 << 20, from: "a test's limit".into() };
        let e = check_build(&g, &layout, false, &small).unwrap_err();
        assert!(e.contains("100000000 synapses") && e.contains(&(500u64 << 20).to_string()) && e.contains("a test's limit"), "{e}");
        // what it says fits does fit
        let fit: u64 = e.split("about ").nth(2).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!(fit > 200_000 && fit < 400_000, "{e}");
        assert!(build_peak(fit * 100, fit, false) <= small.bytes);
        let big = Available { bytes: 4 << 30, from: "plenty".into() };
        assert!(check_build(&g, &layout, false, &big).is_ok());
    }
}
