//! Parity of the CUDA backend with the CPU reference on random brains. Skips, saying why, when no
//! usable GPU is there. NEUROBURST_PARITY_BRAINS / _BURSTS / _SEED override the size.

use crate::common;

use neuroburst::backend::cuda;
use neuroburst::backend::GpuProbe;
use neuroburst::selftest::{cuda_candidate, parity, ParityConfig};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The GPU to test (NEUROBURST_DEVICE, default 0) and its name; None, having said why, when it is
/// not usable.
fn gpu() -> Option<(usize, String)> {
    if !common::gpus(1) {
        return None;
    }
    let device = common::test_device();
    match cuda::probe(device) {
        GpuProbe::Available(name) => Some((device, name)),
        GpuProbe::Unavailable(why) => panic!("GPU {device} was usable a moment ago: {why}"),
    }
}

#[test]
fn cuda_matches_cpu_on_random_brains() {
    let Some((device, name)) = gpu() else { return };
    println!("GPU: {name}");
    let cfg = ParityConfig {
        brains: env_or("NEUROBURST_PARITY_BRAINS", 20) as usize,
        bursts: env_or("NEUROBURST_PARITY_BURSTS", 2000),
        seed: env_or("NEUROBURST_PARITY_SEED", 1),
        max_neurons: env_or("NEUROBURST_PARITY_MAX_NEURONS", 4000) as u32,
        candidate_parts: 1,
    };
    let cand = cuda_candidate(device);
    match parity(&cfg, &cand) {
        Ok(report) => {
            for b in &report.brains {
                println!(
                    "  seed {:>4} {:<17} {:>2} areas {:>6} neurons {:>8} synapses {:>9} fired, readback {}",
                    b.seed, b.shape, b.areas, b.neurons, b.synapses, b.fired, b.readback
                );
            }
            println!("{report}");
        }
        Err(diff) => panic!("CUDA parity failed: {diff}"),
    }
}

#[test]
fn cuda_parity_with_several_shards_in_the_brain() {
    // The backend merges a brain built in several target parts into one CSR.
    let Some((device, _)) = gpu() else { return };
    let cfg = ParityConfig { brains: 3, bursts: 300, seed: 900, max_neurons: 3000, candidate_parts: 3 };
    let report = parity(&cfg, &cuda_candidate(device)).unwrap_or_else(|d| panic!("CUDA parity failed: {d}"));
    println!("{report}");
}

#[test]
fn probe_without_gpu_never_panics() {
    // Whatever the machine, probing gives an answer (a reason when unusable).
    match cuda::probe(usize::MAX / 2) {
        GpuProbe::Unavailable(why) => assert!(!why.is_empty()),
        GpuProbe::Available(name) => panic!("device {} cannot exist, got {name}", usize::MAX / 2),
    }
}

#[test]
fn several_gpus_match_cpu_for_every_gpu_count_and_strategy() {
    use neuroburst::partition::Strategy;
    use neuroburst::selftest::sharded_candidate;
    if !common::gpus(2) {
        return;
    }
    let brains = env_or("NEUROBURST_PARITY_BRAINS", 20) as usize;
    let bursts = env_or("NEUROBURST_PARITY_BURSTS", 2000);
    let available = neuroburst::backend::gpu_count();
    let mut k = 2;
    while k <= available {
        for strategy in [Strategy::RoundRobin, Strategy::ByCorticalArea] {
            let cfg = ParityConfig { brains, bursts, seed: env_or("NEUROBURST_PARITY_SEED", 1), max_neurons: 4000, candidate_parts: 1 };
            let report = parity(&cfg, &sharded_candidate(k, strategy, (0..k).collect()))
                .unwrap_or_else(|d| panic!("{k} GPUs, {strategy}: parity failed: {d}"));
            println!("{k} GPUs, {strategy}: {report}");
        }
        k *= 2;
    }
}

#[test]
fn several_shards_sharing_one_gpu_match_cpu() {
    // The multi-GPU path (own lists, the gather over peers, no early step) on one GPU: every shard
    // on device 0, so it is checked on machines with a single GPU too.
    use neuroburst::partition::Strategy;
    use neuroburst::selftest::sharded_candidate;
    let Some((device, _)) = gpu() else { return };
    for strategy in [Strategy::RoundRobin, Strategy::ByCorticalArea] {
        let cfg = ParityConfig { brains: 4, bursts: 500, seed: 77, max_neurons: 4000, candidate_parts: 1 };
        let report = parity(&cfg, &sharded_candidate(2, strategy, vec![device; 2]))
            .unwrap_or_else(|d| panic!("2 shards on GPU {device}, {strategy}: parity failed: {d}"));
        println!("2 shards on GPU {device}, {strategy}: {report}");
    }
}

/// Injections over the size the resident kernel always reads where they lie (16 KB), handed over
/// back to back: the copy engine sends them into device memory while the kernel still works ahead
/// (from the pinned buffer, and from a page-locked column); then paced, so that the kernel is
/// idle: `inject` and `fix` read them where they lie. Every burst's output is the CPU's.
#[test]
fn injections_sent_ahead_by_the_copy_engine_fire_as_the_cpu() {
    use neuroburst::backend::cpu::CpuBackend;
    use neuroburst::backend::cuda::CudaBackend;
    use neuroburst::backend::{Backend, Readback};
    use neuroburst::brain::Brain;
    use neuroburst::model::Injections;
    use neuroburst::workload::Workload;
    let Some((device, _)) = gpu() else { return };
    // 8000 ids a burst (32 KB); its propagation and early step (1.6M pairs) outlast the host's
    // turn (with 50 synapses a neuron, two test threads on one GPU: 38 of 200 sent)
    let w = Workload { neurons: 400_000, fanout: 200, rate: 0.02, seed: 17 };
    let genome = w.genome();
    let readback = || Readback::Ranges(vec![w.motor()]);
    let mut gpu = CudaBackend::new(Brain::build(&genome, 1, false), readback(), device).unwrap();
    let bursts = 300u64;
    // the last 100 paced: the kernel idle when the command comes
    let paced = 200u64;
    // made before: the host's turn between bursts is a copy, as a node's
    let pool: Vec<Injections> = (1..=bursts)
        .map(|t| {
            let mut inj = Injections::new();
            w.injection(t, &mut inj);
            inj
        })
        .collect();
    let mut locked = Injections::new();
    gpu.prepare_input(&mut locked);
    let mut plain = Injections::new();
    let mut got = Vec::new();
    for (t, drive) in (1..=bursts).zip(&pool) {
        // odd bursts from the page-locked column, even ones through the pinned buffer
        let inj = if t % 2 == 1 { &mut locked } else { &mut plain };
        inj.clear();
        inj.extend_from(drive.as_slice());
        if t > paced {
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        let out = gpu.burst(inj.as_slice()).unwrap();
        got.push((out.fired.to_vec(), out.potentials.to_vec(), out.fired_total));
    }
    let (sent, lie) = (gpu.injections_sent_ahead(), gpu.injections_read_where_they_lie());
    println!("{sent} of {bursts} injections sent ahead, {lie} read where they lie");
    assert!(sent > paced / 4, "the copy engine sent {sent} of {paced} injections: the path is not exercised");
    assert!(lie >= (bursts - paced) / 2, "{lie} of {} paced injections read where they lie", bursts - paced);
    let mut cpu = CpuBackend::new(Brain::build(&genome, 1, false), readback());
    for ((t, want_gpu), drive) in (1..=bursts).zip(&got).zip(&pool) {
        let out = cpu.burst(drive.as_slice()).unwrap();
        let want = (out.fired.to_vec(), out.potentials.to_vec(), out.fired_total);
        assert_eq!(want_gpu, &want, "burst {t}: the GPU's output differs from the CPU's");
    }
}
