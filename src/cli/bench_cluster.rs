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

use anyhow::Context;
use clap::Args;
use serde_json::{json, Value};

use super::table;
use crate::bench::cluster::{cluster, loadavg, one_gpu, one_process, Settings, ShardBackend};
use crate::bench::percentile;
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

pub fn main(a: BenchClusterArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.bursts >= 1, "--bursts must be at least 1");
    Workload { neurons: a.neurons, fanout: a.fanout, rate: a.rate, seed: a.seed }
        .check()
        .map_err(|e| anyhow::anyhow!("--neurons {} --fanout {} --rate {}: {e}", a.neurons, a.fanout, a.rate))?;
    anyhow::ensure!(a.shards.iter().all(|&s| (1..=64).contains(&s)), "--shards: counts between 1 and 64");
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter("warn").try_init();
    let w = Workload { neurons: a.neurons, fanout: a.fanout, rate: a.rate, seed: a.seed };
    let s = Settings {
        neurons: a.neurons,
        fanout: a.fanout,
        rate: a.rate,
        seed: a.seed,
        bursts: a.bursts,
        warmup: a.warmup,
        backend: a.backend,
        link_probes: a.link_probes,
        timeout_s: a.timeout_s,
    };
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let load_start = loadavg();
    eprintln!("W({}, {}, {}): one process ...", a.neurons, a.fanout, a.rate);
    let single = match a.backend {
        ShardBackend::Cpu => one_process(&w, &s),
        ShardBackend::Cuda => one_gpu(&s)?,
    };
    let (p50, p99) = (single["p50_us"].as_f64().unwrap_or(0.0), single["p99_us"].as_f64().unwrap_or(0.0));
    let dir = std::env::temp_dir().join(format!("neuroburst-bench-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let mut rows = vec![single.clone()];
    for net in &a.net {
        for &n in &a.shards {
            let threads = if a.threads_per_shard > 0 { a.threads_per_shard } else { (cores / n).max(1) };
            eprintln!("{n} shards on {net}, {threads} thread(s) each ...");
            let mut row = match cluster(&w, &s, n, net, threads, &dir) {
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
