//! Burst latency of the CUDA backend on the standard workload W(N, K, rho) (`crates/engine/src/workload.rs`), with
//! a per-phase trace and a CPU check of the first bursts; `neuroburst bench --backend cuda` is the
//! user-facing benchmark.
//!
//! cuda_bench [--sizes 100000,1000000,5000000] [--k 100] [--rho 0.01] [--bursts 2000] [--warmup 200]
//!            [--check 30] [--device 0]

use std::time::Instant;

use neuroburst::backend::cpu::CpuBackend;
use neuroburst::backend::cuda::{self, CudaBackend, MemoryPlan};
use neuroburst::backend::{Backend, GpuProbe, Readback};
use neuroburst::brain::Brain;
use neuroburst::model::Injections;
use neuroburst::workload::Workload;

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: &str| -> String {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
    };
    let sizes: Vec<u32> = arg("--sizes", "100000,1000000,5000000").split(',').map(|s| s.trim().parse().unwrap()).collect();
    let k: u32 = arg("--k", "100").parse().unwrap();
    let rho: f64 = arg("--rho", "0.01").parse().unwrap();
    let bursts: usize = arg("--bursts", "2000").parse().unwrap();
    let warmup: usize = arg("--warmup", "200").parse().unwrap();
    let check: u64 = arg("--check", "30").parse().unwrap();
    let device: usize = arg("--device", "0").parse().unwrap();

    let gpu = match cuda::probe(device) {
        GpuProbe::Available(name) => name,
        GpuProbe::Unavailable(why) => {
            println!("skipping: {why}");
            return;
        }
    };
    println!("device: {gpu}");
    let mut rows = Vec::new();
    for &n in &sizes {
        let w = Workload { neurons: n, fanout: k, rate: rho, seed: 42 };
        let genome = w.genome();
        let t0 = Instant::now();
        let brain = Brain::build(&genome, 1, false);
        let build_s = t0.elapsed().as_secs_f64();
        let synapses = brain.connectome.synapses();
        let plan = MemoryPlan::of(&brain);
        let motor = 0..(n / 100).max(1);
        let cpu_brain = (check > 0 && n <= 1_000_000).then(|| Brain {
            name: brain.name.clone(),
            burst_rate_hz: 1.0,
            layout: brain.layout.clone(),
            connectome: brain.connectome.clone(),
        });
        let t1 = Instant::now();
        let mut gpu_b = match CudaBackend::new(brain, Readback::Ranges(vec![motor.clone()]), device) {
            Ok(b) => b,
            Err(e) => {
                println!("N={n}: the CUDA backend refused: {e}");
                continue;
            }
        };
        let upload_s = t1.elapsed().as_secs_f64();
        let info = gpu_b.info();
        eprintln!(
            "N={n}: {synapses} synapses, host build {build_s:.2} s, device build {upload_s:.2} s, {} bytes on the device, {:.3} B/synapse, wide accumulators: {}",
            plan.total_bytes,
            plan.bytes_per_synapse(),
            gpu_b.wide_accumulators()
        );
        let mut inj = Injections::new();
        // correctness: the first bursts against the CPU reference
        let mut checked = 0;
        if let Some(cb) = cpu_brain {
            let mut cpu = CpuBackend::new(cb, Readback::Ranges(vec![motor.clone()]));
            for t in 1..=check {
                w.injection(t, &mut inj);
                let a = cpu.burst(inj.as_slice()).unwrap();
                let (af, av, at) = (a.fired.to_vec(), a.potentials.to_vec(), a.fired_total);
                let b = gpu_b.burst(inj.as_slice()).unwrap();
                assert_eq!((&af[..], &av[..], at), (b.fired, b.potentials, b.fired_total), "N={n} burst {t}: CUDA differs from the CPU");
                checked += 1;
            }
            let sa = cpu.snapshot().unwrap();
            let sb = gpu_b.snapshot().unwrap();
            assert!(sa == sb, "N={n}: state after {check} bursts differs from the CPU");
        }
        let start_t = checked + 1;
        let mut lat = Vec::with_capacity(bursts);
        let mut fired_sum = 0u64;
        let mut motor_sum = 0u64;
        let mut prev_fired = 0u64;
        let mut events = 0u64;
        for i in 0..(warmup + bursts) as u64 {
            w.injection(start_t + i, &mut inj);
            let t = Instant::now();
            let out = gpu_b.burst(inj.as_slice()).unwrap();
            let dt = t.elapsed().as_secs_f64();
            if i as usize >= warmup {
                lat.push(dt * 1e6);
                fired_sum += out.fired_total;
                motor_sum += out.fired.len() as u64;
                events += prev_fired * k as u64;
            }
            prev_fired = out.fired_total;
        }
        if let Some(tr) = gpu_b.trace_summary() {
            eprintln!("N={n}: {tr}");
        }
        let mean = lat.iter().sum::<f64>() / lat.len() as f64;
        let mut s = lat.clone();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (p50, p99, max) = (pct(&s, 0.5), pct(&s, 0.99), s[s.len() - 1]);
        let ev_s = events as f64 / (lat.iter().sum::<f64>() * 1e-6);
        eprintln!(
            "N={n}: p50 {p50:.1} us, p99 {p99:.1} us, max {max:.1} us, mean {mean:.1} us, {:.0} fired/burst, {:.1} motor/burst, {ev_s:.3e} events/s, checked {checked} bursts vs CPU",
            fired_sum as f64 / bursts as f64,
            motor_sum as f64 / bursts as f64
        );
        rows.push((
            n,
            synapses,
            build_s,
            upload_s,
            plan.bytes_per_synapse(),
            p50,
            p99,
            ev_s,
            fired_sum as f64 / bursts as f64,
            checked,
            info.device,
        ));
    }
    println!();
    println!("| N | synapses | host build s | device build s | B/synapse | p50 us | p99 us | p99/p50 | events/s | fired/burst | vs CPU |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.3} | {:.1} | {:.1} | {:.2} | {:.3e} | {:.0} | {} bursts |",
            r.0,
            r.1,
            r.2,
            r.3,
            r.4,
            r.5,
            r.6,
            r.6 / r.5,
            r.7,
            r.8,
            r.9
        );
    }
    if let Some(r) = rows.first() {
        println!("device: {}; W(N, {k}, {rho}), {bursts} bursts after {warmup} warm-up", r.10);
    }
}
