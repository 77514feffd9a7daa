//! The wgpu backend (docs/wgpu.md) against the CPU reference, on the machine's Vulkan, Metal or
//! DX12 device; in CI Mesa's lavapipe (a CPU pretending to be a GPU), which tests/run.sh installs.
//! Skips, saying why, where there is none; NEUROBURST_REQUIRE_WGPU=1 (.ci/run) fails instead.

use crate::common;

use neuroburst::backend::wgpu::{WgpuAccumulators, WgpuBackend};
use neuroburst::backend::{cuda, Backend, BackendError, GpuProbe, Readback};
use neuroburst::brain::Brain;
use neuroburst::genome::Genome;
use neuroburst::selftest::{parity, procedural_candidate, wgpu_candidate, ParityConfig};

use common::wgpu_device as device;

#[test]
fn wgpu_matches_cpu_on_random_brains_learning_included() {
    let Some(name) = device() else { return };
    println!("wgpu device: {name}");
    let cfg = ParityConfig { brains: 8, bursts: 600, seed: 11, max_neurons: 3000, candidate_parts: 1 };
    let report = parity(&cfg, &wgpu_candidate).unwrap_or_else(|diff| panic!("parity FAILED on {name}: {diff}"));
    println!("{report}");
    assert_eq!(report.bursts(), 8 * 600);
    assert!(report.brains.iter().any(|b| b.weights > 0), "no brain of the check learned: {report}");
    assert!(report.brains.iter().any(|b| b.readback == "ranges") && report.fired() > 0);
}

/// The accumulators added to as two 32-bit words and a carry (kernels/acc32.wgsl, a device without
/// 64-bit atomics: Metal) give the same, learning included, on a device that has both ways.
#[test]
fn wgpu_matches_cpu_with_32_bit_accumulators() {
    let Some(name) = device() else { return };
    let cfg = ParityConfig { brains: 4, bursts: 400, seed: 70, max_neurons: 3000, candidate_parts: 1 };
    fn words32(_: &Genome, brain: Brain, readback: Readback) -> Result<Box<dyn Backend>, BackendError> {
        Ok(Box::new(WgpuBackend::open_with(brain, readback, WgpuAccumulators::Words32)?))
    }
    let report = parity(&cfg, &words32).unwrap_or_else(|diff| panic!("parity FAILED on {name} (32-bit words): {diff}"));
    assert!(report.fired() > 0 && report.brains.iter().any(|b| b.weights > 0), "{report}");
}

/// The brains with every mapping that can be drawn again procedural (drawn on the host, summed on
/// the device).
#[test]
fn wgpu_matches_cpu_with_procedural_synapses() {
    let Some(name) = device() else { return };
    let cfg = ParityConfig { brains: 4, bursts: 400, seed: 40, max_neurons: 3000, candidate_parts: 1 };
    let report =
        parity(&cfg, &procedural_candidate(&wgpu_candidate, false)).unwrap_or_else(|diff| panic!("parity FAILED on {name}: {diff}"));
    assert!(report.fired() > 0, "{report}");
}

/// The README's two replays (diffdrive, and conditioning with its checkpoint) give the same bytes
/// on wgpu as on the CPU.
#[test]
fn the_readme_replays_are_byte_identical_on_wgpu() {
    let Some(_) = device() else { return };
    let dir = tempfile::tempdir().unwrap();
    for example in ["diffdrive", "conditioning"] {
        let bag = common::root().join("examples").join(example).join("input.mcap");
        let run = |backend: &str| {
            let (out, ckpt) = (dir.path().join(format!("{example}-{backend}.mcap")), dir.path().join(format!("{example}-{backend}.ckpt")));
            common::ok(common::replay_example(example, &bag, &out, &["--backend", backend, "--checkpoint", ckpt.to_str().unwrap()]));
            (std::fs::read(out).unwrap(), std::fs::read(ckpt).unwrap())
        };
        let (cpu, gpu) = (run("cpu"), run("wgpu"));
        assert!(cpu.0 == gpu.0, "{example}: the replay's output differs on wgpu");
        assert!(cpu.1 == gpu.1, "{example}: the checkpoint differs on wgpu");
    }
}

/// `auto` takes CUDA, then wgpu, then the CPU, and says which and why in one line.
#[test]
fn auto_takes_cuda_then_wgpu_then_the_cpu() {
    let Some(name) = device() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bag = common::root().join("examples/diffdrive/input.mcap");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["replay", "--bag", bag.to_str().unwrap(), "--out", dir.path().join("o.mcap").to_str().unwrap()])
        .args(["--genome", common::root().join("examples/diffdrive/genome.yaml").to_str().unwrap()])
        .args(["--config", common::root().join("examples/diffdrive/config.yaml").to_str().unwrap()])
        .args(["--backend", "auto", "--set", "backend.gpu_min_neurons=0", "--set", "log.progress=false"])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{log}");
    let line = log.lines().find(|l| l.contains("auto: using")).unwrap_or_else(|| panic!("no 'auto: using' line:\n{log}"));
    match cuda::probe(common::test_device()) {
        GpuProbe::Available(gpu) => assert!(line.contains(&gpu) && line.contains("CUDA"), "{line}"),
        GpuProbe::Unavailable(why) => {
            assert!(line.contains(&name) && line.contains("(wgpu)") && line.contains(&why), "{line}");
        }
    }
}

/// A brain whose synapses one buffer of the device cannot bind is refused with the numbers (W(400k):
/// 160 MB of targets; lavapipe binds 128 MiB); `auto` then runs it on the CPU, saying why.
#[test]
fn a_brain_larger_than_the_device_binds_is_refused_with_the_numbers() {
    let Some(name) = device() else { return };
    let bench = |backend: &str| {
        common::neuroburst(&["bench", "--backend", backend, "--neurons", "400000", "--fanout", "100", "--rate", "0.01", "--bursts", "3"])
    };
    let o = bench("wgpu");
    if o.status.success() {
        common::skip(&format!("{name} binds W(400k)'s 160 MB of targets: nothing to refuse"));
        return;
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("max_storage_buffer_binding_size") && err.contains("160000000") && err.contains("synapse targets"), "{err}");
    if matches!(cuda::probe(common::test_device()), GpuProbe::Unavailable(_)) {
        let o = bench("auto");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success() && err.contains("auto: using the CPU: the wgpu device cannot take the brain"), "{err}");
    }
}
