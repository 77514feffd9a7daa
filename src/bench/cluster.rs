//! `neuroburst bench-cluster`'s runs: the per-burst cost of spreading W(N, K, rho) over shard processes.
//! First the brain in this process (`neuroburst bench`'s measure: the time of one burst, the
//! input computed beforehand); then, for every shard count and network, that many
//! `neuroburst shard` processes on 127.0.0.1 (`loopback`) or each in a network namespace of its
//! own on a private bridge (`netns`, needs root), the input precomputed at the io shard. The
//! figure per burst is the io shard's burst period: from holding the whole brain's fired list of
//! one burst to holding the next one's (exchange included). Overhead = that minus one process.
//! Also per burst at the io shard: the time in its own engine, the time waiting for the
//! others' spikes (their compute, imbalance and the network) and the bytes it put on its links;
//! beside them, what a message of those bytes costs on that link alone (`bench-link` between
//! shards 0 and 1 over the same sessions: half its round trip).
//!
//! `--backend cuda`: every shard process on a GPU of its own (shard k on GPU k mod the GPUs;
//! several share one where there are fewer), and the one-process figure is `neuroburst bench
//! --backend cuda` on GPU 0 with the same workload.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use serde_json::{json, Value};

use super::percentile;
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, Readback};
use crate::brain::Brain;
use crate::cluster::netns::Hosts;
use crate::model::Injections;
use crate::workload::Workload;

/// Where `bench-cluster` puts each shard's brain.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardBackend {
    Cpu,
    Cuda,
}

/// What one run of the cluster bench is (the workload's size is its [`Workload`]).
#[derive(Clone, Debug)]
pub struct Settings {
    pub neurons: u32,
    pub fanout: u32,
    pub rate: f64,
    pub seed: u64,
    /// Measured bursts, after `warmup` not measured.
    pub bursts: u64,
    pub warmup: u64,
    pub backend: ShardBackend,
    /// Bursts the link probe times; 0: no probe.
    pub link_probes: u64,
    /// Seconds one cluster run may take.
    pub timeout_s: u64,
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

/// The one-process figure on GPU 0: `neuroburst bench --backend cuda` (its drive made before it
/// starts, back to back: the burst period, as the io shard's).
pub fn one_gpu(a: &Settings) -> anyhow::Result<Value> {
    let exe = std::env::current_exe().context("cannot find this program")?;
    let out = std::process::Command::new(exe)
        .args(["bench", "--backend", "cuda", "--device", "0", "--shards", "1", "--json"])
        .args(["--neurons", &a.neurons.to_string(), "--fanout", &a.fanout.to_string(), "--rate", &a.rate.to_string()])
        .args(["--bursts", &a.bursts.to_string(), "--warmup", &a.warmup.to_string(), "--seed", &a.seed.to_string()])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .context("cannot run neuroburst bench")?;
    anyhow::ensure!(out.status.success(), "neuroburst bench --backend cuda: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).context("neuroburst bench printed no JSON")?;
    Ok(json!({
        "net": "-", "shards": 1, "device": v["device"], "synapses": v["synapses"],
        "p50_us": v["p50_us"], "p99_us": v["p99_us"], "fired_per_burst": v["fired_per_burst"],
    }))
}

pub fn one_process(w: &Workload, a: &Settings) -> Value {
    let brain = Brain::build(&w.genome(), rayon::current_num_threads(), false);
    let synapses = brain.connectome.synapses();
    let mut backend = CpuBackend::new(brain, Readback::Ranges(vec![w.motor()]));
    let mut inj = Injections::new();
    let mut lat = Vec::with_capacity(a.bursts as usize);
    let mut fired = 0u64;
    for t in 1..=a.warmup + a.bursts {
        w.injection(t, &mut inj);
        let start = Instant::now();
        let out = backend.burst(inj.as_slice()).expect("burst");
        let dt = start.elapsed();
        if t > a.warmup {
            lat.push(dt.as_secs_f64() * 1e6);
            fired += out.fired_total;
        }
    }
    lat.sort_by(f64::total_cmp);
    json!({
        "net": "-", "shards": 1, "threads_per_shard": rayon::current_num_threads(), "synapses": synapses,
        "p50_us": percentile(&lat, 0.5), "p99_us": percentile(&lat, 0.99),
        "fired_per_burst": fired as f64 / a.bursts as f64,
    })
}

pub fn cluster(w: &Workload, a: &Settings, n: usize, net: &str, threads: usize, dir: &Path) -> anyhow::Result<Value> {
    let hosts = match net {
        "loopback" => Hosts::loopback(n),
        "netns" => Hosts::netns(n, &format!("b{n}")).map_err(|e| anyhow!("network namespaces cannot be made here: {e}"))?,
        other => return Err(anyhow!("--net {other:?}: expected loopback or netns")),
    };
    let eps: Vec<String> = (0..n).map(|i| hosts.endpoint(i)).collect();
    let cfg = dir.join(format!("cluster-{net}-{n}.yaml"));
    std::fs::write(
        &cfg,
        format!(
            "backend:\n  kind: {}\n  cpu_threads: {threads}\nlog:\n  progress: false\ncluster:\n  name: bench{n}{net}\n  endpoints: [{}]\n  burst_timeout_ms: 60000\n  startup_timeout_s: 600\n  checkpoint_dir: {}\n",
            if a.backend == ShardBackend::Cuda { "cuda" } else { "cpu" },
            eps.join(", "),
            dir.join("ckpt").display()
        ),
    )?;
    let exe = std::env::current_exe().context("cannot find this program")?;
    let spec = format!("{},{},{},{}", w.neurons, w.fanout, w.rate, w.seed);
    let gpus = crate::backend::cuda::device_count();
    anyhow::ensure!(a.backend == ShardBackend::Cpu || gpus > 0, "--backend cuda: no usable GPU here");
    let shard_args = |k: usize| {
        let mut v: Vec<String> = ["shard", "--index", &k.to_string(), "--workload", &spec, "--precompute-input"].map(String::from).into();
        v.extend(["--bursts".into(), (a.warmup + a.bursts).to_string(), "--warmup".into(), a.warmup.to_string()]);
        if a.backend == ShardBackend::Cuda {
            v.extend(["--device".into(), (k % gpus).to_string()]);
        }
        v
    };
    let end = Instant::now() + Duration::from_secs(a.timeout_s);
    run_all(&hosts, &exe, &cfg, dir, &format!("{net}-{n}"), (0..n).map(shard_args).collect(), end)?;
    let mut shards = vec![];
    for k in 0..n {
        let text = std::fs::read_to_string(dir.join(format!("{net}-{n}-{k}.out")))?;
        let v: Value =
            text.lines().rev().find_map(|l| serde_json::from_str(l).ok()).ok_or_else(|| anyhow!("shard {k} printed no summary"))?;
        shards.push(v);
    }
    let io = &shards[0];
    let mut row = json!({
        "net": net, "shards": n, "threads_per_shard": threads, "hosts": hosts.describe(),
        "gpus": if a.backend == ShardBackend::Cuda { (0..n).map(|k| k % gpus).collect::<Vec<_>>() } else { vec![] },
        "p50_us": io["p50_us"], "p99_us": io["p99_us"],
        "io_compute_p50_us": io["compute_p50_us"], "io_wait_p50_us": io["wait_p50_us"], "io_wait_p99_us": io["wait_p99_us"],
        "io_sent_bytes_per_burst": io["sent_bytes_per_burst"],
        "compute_p50_us": shards.iter().map(|s| s["compute_p50_us"].clone()).collect::<Vec<_>>(),
        "wait_p50_us": shards.iter().map(|s| s["wait_p50_us"].clone()).collect::<Vec<_>>(),
        "sent_bytes_per_burst": shards.iter().map(|s| s["sent_bytes_per_burst"].clone()).collect::<Vec<_>>(),
    });
    // the same bytes on that link alone: what the io shard sends one peer in a burst
    let per_peer = io["sent_bytes_per_burst"].as_f64().unwrap_or(0.0) / (n - 1) as f64;
    if a.link_probes > 0 {
        let bytes = (per_peer.round() as usize).max(8).to_string();
        let probe = |k: usize| -> Vec<String> {
            let c = a.link_probes.to_string();
            ["bench-link", "--index", &k.to_string(), "--bytes", &bytes, "--count", &c].map(String::from).into()
        };
        let end = Instant::now() + Duration::from_secs(a.timeout_s);
        match run_all(&hosts, &exe, &cfg, dir, &format!("{net}-{n}-link"), vec![probe(0), probe(1)], end) {
            Ok(()) => {
                let text = std::fs::read_to_string(dir.join(format!("{net}-{n}-link-0.out")))?;
                let v: Value = serde_json::from_str(text.trim()).context("the link probe printed no summary")?;
                row["link_bytes"] = v["bytes"].clone();
                row["link_one_way_p50_us"] = json!(v["rtt_p50_us"].as_f64().unwrap_or(0.0) / 2.0);
                row["link_one_way_p99_us"] = json!(v["rtt_p99_us"].as_f64().unwrap_or(0.0) / 2.0);
            }
            Err(e) => row["link_skipped"] = json!(crate::errors::said_once(&e)),
        }
    }
    Ok(row)
}

/// Start one process per argument list, process k as host k (`dir/<tag>-<k>.out` and `.log`
/// take its output), and wait for them all; an error names the first that failed, with its log.
fn run_all(hosts: &Hosts, exe: &Path, cfg: &Path, dir: &Path, tag: &str, args: Vec<Vec<String>>, end: Instant) -> anyhow::Result<()> {
    let mut children = vec![];
    for (k, args) in args.iter().enumerate() {
        let out = std::fs::File::create(dir.join(format!("{tag}-{k}.out")))?;
        let err = std::fs::File::create(dir.join(format!("{tag}-{k}.log")))?;
        let mut cmd = hosts.command(k, exe);
        cmd.args(args).arg("--config").arg(cfg).env("RUST_LOG", "warn").stdin(Stdio::null()).stdout(out).stderr(err);
        children.push(cmd.spawn().with_context(|| format!("cannot start {}", args[0]))?);
    }
    let mut failed = None;
    for (k, c) in children.iter_mut().enumerate() {
        loop {
            if let Some(s) = c.try_wait()? {
                if !s.success() && failed.is_none() {
                    failed = Some(k);
                }
                break;
            }
            if Instant::now() > end {
                let _ = c.kill();
                failed.get_or_insert(k);
                continue;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    match failed {
        None => Ok(()),
        Some(k) => {
            let log = std::fs::read_to_string(dir.join(format!("{tag}-{k}.log"))).unwrap_or_default();
            Err(anyhow!("{} {k} failed or ran too long; its log:\n{log}", args[k][0]))
        }
    }
}
