//! `neuroburst bench-cluster`: the per-burst cost of spreading W(N, K, rho) over shard processes.
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
use clap::Args;
use serde_json::{json, Value};

use super::bench::percentile;
use super::table;
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, Readback};
use crate::brain::Brain;
use crate::cluster::netns::Hosts;
use crate::model::Injections;
use crate::workload::Workload;

#[derive(Args, Debug)]
pub struct BenchClusterArgs {
    /// Neurons N.
    #[arg(long, default_value_t = 1_000_000)]
    pub neurons: u32,
    /// Synapses per neuron K.
    #[arg(long, default_value_t = 100)]
    pub fanout: u32,
    /// Fraction of neurons injected per burst, rho.
    #[arg(long, default_value_t = 0.01)]
    pub rate: f64,
    /// Measured bursts (after warm-up).
    #[arg(long, default_value_t = 1000)]
    pub bursts: u64,
    /// Warm-up bursts, not measured.
    #[arg(long, default_value_t = 100)]
    pub warmup: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Shard counts to run, e.g. 2,4.
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    pub shards: Vec<usize>,
    /// Networks: loopback, netns (network namespaces; needs root; skipped with the reason where
    /// they cannot be made).
    #[arg(long, value_delimiter = ',', default_value = "loopback,netns")]
    pub net: Vec<String>,
    /// CPU threads per shard process; 0 = the machine's cores / shards (at least 1).
    #[arg(long, default_value_t = 0)]
    pub threads_per_shard: usize,
    /// Backend of every shard process: cpu, or cuda (shard k on GPU k mod the GPUs).
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: ShardBackend,
    /// Bursts the link probe times (after 100 not timed); 0: no probe.
    #[arg(long, default_value_t = 1000)]
    pub link_probes: u64,
    /// Seconds one cluster run may take.
    #[arg(long, default_value_t = 900)]
    pub timeout_s: u64,
    /// Write the JSON here too.
    #[arg(long, value_name = "FILE")]
    pub json_out: Option<std::path::PathBuf>,
}

/// Where `bench-cluster` puts each shard's brain.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardBackend {
    Cpu,
    Cuda,
}

/// `neuroburst bench-link` (hidden; `bench-cluster` starts it): one side of the link probe of
/// [`crate::cluster::probe`], between shards 0 and 1 of the configuration's `cluster` section.
#[derive(Args, Debug)]
pub struct BenchLinkArgs {
    /// 0: send and time; 1: answer.
    #[arg(long)]
    pub index: usize,
    /// Bytes a message.
    #[arg(long)]
    pub bytes: usize,
    /// Round trips timed (after `--warmup`).
    #[arg(long, default_value_t = 1000)]
    pub count: u64,
    #[arg(long, default_value_t = 100)]
    pub warmup: u64,
    #[command(flatten)]
    pub runtime: super::RuntimeArgs,
}

pub fn link_main(a: BenchLinkArgs) -> anyhow::Result<()> {
    let config = a.runtime.config()?;
    super::init(&config);
    let mut rtt = crate::cluster::probe::round_trips(&config.cluster, a.index, a.bytes, a.warmup, a.count)?;
    if a.index == 0 {
        rtt.sort_by(f64::total_cmp);
        println!(
            "{}",
            json!({"bytes": a.bytes.max(8), "round_trips": rtt.len(), "rtt_p50_us": percentile(&rtt, 0.5), "rtt_p99_us": percentile(&rtt, 0.99)})
        );
    }
    Ok(())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

/// The one-process figure on GPU 0: `neuroburst bench --backend cuda` (its drive made before it
/// starts, back to back: the burst period, as the io shard's).
fn one_gpu(a: &BenchClusterArgs) -> anyhow::Result<Value> {
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

fn one_process(w: &Workload, a: &BenchClusterArgs) -> Value {
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

fn cluster(w: &Workload, a: &BenchClusterArgs, n: usize, net: &str, threads: usize, dir: &Path) -> anyhow::Result<Value> {
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

pub fn main(a: BenchClusterArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.neurons >= 1 && a.bursts >= 1, "--neurons and --bursts must be at least 1");
    anyhow::ensure!(a.rate.is_finite() && (0.0..=1.0).contains(&a.rate), "--rate {} must be within 0..1", a.rate);
    anyhow::ensure!(a.shards.iter().all(|&s| (1..=64).contains(&s)), "--shards: counts between 1 and 64");
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter("warn").try_init();
    let w = Workload { neurons: a.neurons, fanout: a.fanout, rate: a.rate, seed: a.seed };
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let load_start = loadavg();
    eprintln!("W({}, {}, {}): one process ...", a.neurons, a.fanout, a.rate);
    let single = match a.backend {
        ShardBackend::Cpu => one_process(&w, &a),
        ShardBackend::Cuda => one_gpu(&a)?,
    };
    let (p50, p99) = (single["p50_us"].as_f64().unwrap_or(0.0), single["p99_us"].as_f64().unwrap_or(0.0));
    let dir = std::env::temp_dir().join(format!("neuroburst-bench-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let mut rows = vec![single.clone()];
    for net in &a.net {
        for &n in &a.shards {
            let threads = if a.threads_per_shard > 0 { a.threads_per_shard } else { (cores / n).max(1) };
            eprintln!("{n} shards on {net}, {threads} thread(s) each ...");
            let mut row = match cluster(&w, &a, n, net, threads, &dir) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("{n} shards on {net}: skipped: {}", crate::errors::said_once(&e));
                    json!({"net": net, "shards": n, "skipped": crate::errors::said_once(&e)})
                }
            };
            if let (Some(q50), Some(q99)) = (row["p50_us"].as_f64(), row["p99_us"].as_f64()) {
                row["overhead_p50_us"] = json!(q50 - p50);
                row["overhead_p99_us"] = json!(q99 - p99);
            }
            rows.push(row);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let obj = json!({
        "workload": {"neurons": a.neurons, "fanout": a.fanout, "rate": a.rate, "seed": a.seed},
        "bursts": a.bursts, "warmup": a.warmup, "cores": cores, "backend": format!("{:?}", a.backend).to_lowercase(),
        "loadavg_start": load_start, "loadavg_end": loadavg(),
        "rows": rows,
    });
    let f = |v: &Value| v.as_f64().map_or("-".to_string(), |x| format!("{:.0}", x));
    let mut t = vec![vec![
        "run".to_string(),
        "threads/shard".into(),
        "p50 us".into(),
        "p99 us".into(),
        "overhead p50 us".into(),
        "overhead p99 us".into(),
        "io compute p50 us".into(),
        "io wait p50/p99 us".into(),
        "io sent B/burst".into(),
        "link B, one way p50 us".into(),
    ]];
    for r in obj["rows"].as_array().unwrap() {
        let name =
            if r["shards"] == 1 { "1 process".to_string() } else { format!("{} shards, {}", r["shards"], r["net"].as_str().unwrap_or("")) };
        if let Some(why) = r["skipped"].as_str() {
            let why: String = why.lines().next().unwrap_or("").chars().take(70).collect();
            t.push(vec![name, "-".into(), format!("skipped: {why}")]);
            continue;
        }
        let wait = if r["io_wait_p50_us"].is_null() {
            "-".to_string()
        } else {
            format!("{}/{}", f(&r["io_wait_p50_us"]), f(&r["io_wait_p99_us"]))
        };
        t.push(vec![
            name,
            r["threads_per_shard"].to_string(),
            f(&r["p50_us"]),
            f(&r["p99_us"]),
            f(&r["overhead_p50_us"]),
            f(&r["overhead_p99_us"]),
            f(&r["io_compute_p50_us"]),
            wait,
            f(&r["io_sent_bytes_per_burst"]),
            if r["link_bytes"].is_null() {
                "-".into()
            } else {
                format!("{}, {:.1}", r["link_bytes"], r["link_one_way_p50_us"].as_f64().unwrap_or(0.0))
            },
        ]);
    }
    println!(
        "W({}, {}, {}), {} bursts after {} warm-up, {cores} cores, load average {} at the start, {} at the end",
        a.neurons,
        a.fanout,
        a.rate,
        a.bursts,
        a.warmup,
        obj["loadavg_start"].as_str().unwrap_or(""),
        obj["loadavg_end"].as_str().unwrap_or("")
    );
    print!("{}", table::render(&t));
    println!("{obj}");
    if let Some(p) = &a.json_out {
        std::fs::write(p, format!("{obj}\n")).with_context(|| format!("{}: cannot write", p.display()))?;
    }
    Ok(())
}
