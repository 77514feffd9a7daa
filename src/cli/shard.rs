//! `neuroburst shard`: one shard of a brain spread over processes or hosts (docs/distributed.md).
//! The burst loop runs on its own thread; this one waits for SIGINT/SIGTERM (stop after the
//! current burst). Prints one JSON summary line on stdout at the end. Exit status: 0 done or
//! stopped by a signal, 2 error, 3 stopped because a shard was lost, 4 left behind by the others.
//!
//! The io shard's input and output: `--workload` (W's input), `--bag` (a replay, as
//! `neuroburst replay`), `--transport` (the live node's topics, as `neuroburst node`), or none.
//! The other shards ignore `--bag` and `--transport`, so every host can run the same command.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use clap::Args;
use serde_json::json;

use crate::bench::percentile;
use crate::cluster::io::WorkloadIo;
use crate::cluster::{run, Outcome, ShardOptions};
use crate::config::Config;
use crate::genome::Genome;
use crate::model::Layout;
use crate::node::topics::LiveTopics;
use crate::replay::BagIo;
use crate::run::Io;
use crate::transport::TransportKind;
use crate::workload::Workload;

#[derive(Args, Debug)]
pub struct ShardArgs {
    /// This shard's index: it listens on cluster.endpoints[INDEX].
    #[arg(long)]
    pub index: usize,
    /// Genome: the project's YAML or a FEAGI JSON genome.
    #[arg(long, value_name = "FILE", conflicts_with = "workload", required_unless_present = "workload")]
    pub genome: Option<PathBuf>,
    /// The benchmark brain W(N, K, RHO) with seed SEED (default 1) instead of a genome; the io
    /// shard injects W's input every burst.
    #[arg(long, value_name = "N,K,RHO[,SEED]")]
    pub workload: Option<String>,
    /// Stop after this burst; 0 = until SIGINT/SIGTERM.
    #[arg(long, default_value_t = 0)]
    pub bursts: u64,
    /// Start from this shard's latest checkpoint (and rejoin a running cluster). Without it old
    /// checkpoints of this shard are removed.
    #[arg(long)]
    pub resume: bool,
    /// On the io shard (repeatable): `OUT.mcap` records what `neuroburst replay --out` does (the
    /// decoders' motor topics and the activity topic, at bag time; needs --bag); any other FILE
    /// gets one text line per burst appended: epoch, burst, fired, hash, per shard, motor.
    #[arg(long, value_name = "FILE")]
    pub record: Vec<PathBuf>,
    /// On the io shard: replay this bag through the brain, lock-stepped to bag time as
    /// `neuroburst replay` does (the configuration's encoders, decoders and `replay` section).
    #[arg(long, value_name = "BAG", conflicts_with_all = ["workload", "transport"])]
    pub bag: Option<PathBuf>,
    /// On the io shard: the live node's topics over this transport (the configuration's encoders
    /// and decoders, its `node` and `zenoh` sections), as `neuroburst node`.
    #[arg(long, value_enum, conflicts_with = "workload")]
    pub transport: Option<TransportKind>,
    /// On the io shard with --transport: how it reaches the robot.
    #[command(flatten)]
    pub link: super::RobotLinkArgs,
    /// Compute the whole run's input before the start (benchmarks).
    #[arg(long)]
    pub precompute_input: bool,
    /// Bursts after each (re)start left out of the timings.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    #[command(flatten)]
    pub runtime: super::RuntimeArgs,
}

/// `N,K,RHO[,SEED]`.
pub fn parse_workload(s: &str) -> anyhow::Result<Workload> {
    let f: Vec<&str> = s.split(',').map(str::trim).collect();
    let bad = || anyhow!("--workload {s:?}: expected N,K,RHO[,SEED], e.g. 20000,50,0.01,1");
    if !(3..=4).contains(&f.len()) {
        return Err(bad());
    }
    let w = Workload {
        neurons: f[0].parse().map_err(|_| bad())?,
        fanout: f[1].parse().map_err(|_| bad())?,
        rate: f[2].parse().map_err(|_| bad())?,
        seed: f.get(3).map_or(Ok(1), |x| x.parse()).map_err(|_| bad())?,
    };
    w.check().map_err(|e| anyhow::anyhow!("--workload {s:?}: {e}"))?;
    Ok(w)
}

pub fn main(a: ShardArgs) -> anyhow::Result<()> {
    let config = a.runtime.config()?;
    super::init(&config);
    config.cluster.validate(Some(a.index))?;

    let (genome, input) = match (&a.genome, &a.workload) {
        (Some(p), _) => (Genome::load(p)?, None),
        (None, Some(w)) => {
            let w = parse_workload(w)?;
            (w.genome(), Some(w))
        }
        (None, None) => return Err(anyhow!("pass --genome FILE or --workload N,K,RHO")),
    };
    // backend.kind cuda: this shard's neurons on GPU `backend.device`, or split over `backend.gpus`
    // (a clear error when one is not usable); auto: the GPU when one is usable and the shard holds
    // at least gpu_min_neurons neurons, else the CPU, saying why
    use crate::backend::{cuda::probe, BackendKind, GpuProbe};
    let per_shard = crate::model::Layout::from_genome(&genome).neurons as u64 / config.cluster.shards().max(1) as u64;
    let device = config.backend.device;
    let gpus: Vec<usize> = match config.backend.kind {
        BackendKind::Cpu => vec![],
        BackendKind::Wgpu => {
            return Err(anyhow!("backend.kind: wgpu: a cluster's shards run on the CPU or CUDA (wgpu runs a whole brain)"))
        }
        BackendKind::Cuda => {
            let list = if config.backend.gpus.is_empty() { vec![device] } else { config.backend.gpus.clone() };
            for &d in &list {
                if let GpuProbe::Unavailable(why) = probe(d) {
                    return Err(anyhow!("backend.kind: cuda: GPU {d} (backend.gpus / backend.device) is not usable: {why}"));
                }
            }
            let count = crate::backend::cuda::device_count();
            if let Some(&d) = list.iter().find(|&&d| d >= count) {
                return Err(anyhow!("backend.gpus: GPU {d} is not there ({count} GPUs)"));
            }
            list
        }
        BackendKind::Auto if per_shard < config.backend.gpu_min_neurons => {
            tracing::info!("backend.kind auto: ~{per_shard} neurons per shard < gpu_min_neurons {}: CPU", config.backend.gpu_min_neurons);
            vec![]
        }
        BackendKind::Auto => match probe(device) {
            GpuProbe::Available(name) => {
                tracing::info!("backend.kind auto: this shard runs on GPU {device} ({name})");
                vec![device]
            }
            GpuProbe::Unavailable(why) => {
                tracing::info!("backend.kind auto: this shard runs on the CPU ({why})");
                vec![]
            }
        },
    };
    let (text_record, bag_record) = records(&a.record)?;
    let is_io = a.index == config.cluster.io_shard;
    let mut config = config;
    let stop = Arc::new(AtomicBool::new(false));
    let io: Option<Box<dyn Io>> = if is_io {
        Some(io_side(&a, &mut config, &genome, input, bag_record.as_deref(), &stop)?)
    } else {
        if a.bag.is_some() || a.transport.is_some() {
            tracing::info!("--bag / --transport: shard {} is not the io shard ({}): ignored here", a.index, config.cluster.io_shard);
        }
        None
    };
    let options = ShardOptions {
        genome,
        cluster: config.cluster.clone(),
        strategy: config.backend.strategy,
        index: a.index,
        gpus,
        bursts: a.bursts,
        resume: a.resume,
        learning: config.backend.learning,
        io,
        motor: input.map(|w| vec![w.motor()]),
        record: text_record,
        warmup: a.warmup,
        progress: config.log.progress,
        stop: stop.clone(),
    };
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let worker = std::thread::Builder::new()
        .name("burst".into())
        .spawn(move || {
            let r = run(options);
            d.store(true, Ordering::Relaxed);
            r
        })
        .context("cannot start the burst thread")?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(20));
        loop {
            tokio::select! {
                _ = term.recv() => { tracing::info!("SIGTERM: stopping after this burst"); break; }
                _ = int.recv() => { tracing::info!("SIGINT: stopping after this burst"); break; }
                _ = tick.tick() => if done.load(Ordering::Relaxed) { break; },
            }
        }
        stop.store(true, Ordering::Relaxed);
        anyhow::Ok(())
    })?;
    let report = worker.join().map_err(|_| anyhow!("the burst thread panicked"))??;
    let sorted = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    let (p, c, w) = (sorted(&report.period_us), sorted(&report.compute_us), sorted(&report.wait_us));
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let (outcome, code) = match &report.outcome {
        Outcome::Completed => ("completed".to_string(), 0),
        Outcome::Interrupted => ("interrupted".to_string(), 0),
        Outcome::ShardLost { shards, burst, reason } => {
            (format!("stopped: shard(s) {} lost at burst {burst}: {reason}", crate::cluster::wire::list(*shards)), 3)
        }
        Outcome::Excluded { reason } => (format!("left behind: {reason}"), 4),
    };
    let summary = json!({
        "shard": report.index,
        "shards": report.shards,
        "neurons": [report.neurons.start, report.neurons.end],
        "outcome": outcome,
        "epochs": report.epochs,
        "bursts_run": report.bursts_run,
        "last_burst": report.last_burst,
        "malformed_messages": report.malformed,
        "stray_messages": report.stray,
        "forged_directives": report.forged,
        "timed_bursts": p.len(),
        "p50_us": percentile(&p, 0.5),
        "p99_us": percentile(&p, 0.99),
        "mean_us": mean(&p),
        "compute_p50_us": percentile(&c, 0.5),
        "compute_p99_us": percentile(&c, 0.99),
        "wait_p50_us": percentile(&w, 0.5),
        "wait_p99_us": percentile(&w, 0.99),
        "sent_bytes_per_burst": if report.sent_bytes.is_empty() { 0.0 } else { report.sent_bytes.iter().sum::<u64>() as f64 / report.sent_bytes.len() as f64 },
        "threads": rayon::current_num_threads(),
        "io": report.io,
    });
    println!("{summary}");
    if code != 0 {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        eprintln!("neuroburst shard {}: {outcome}", a.index);
        std::process::exit(code);
    }
    Ok(())
}

/// `--record` files: at most one text record and one `.mcap` output bag.
fn records(files: &[PathBuf]) -> anyhow::Result<(Option<PathBuf>, Option<PathBuf>)> {
    let (mut text, mut bag) = (None, None);
    for f in files {
        let is_bag = f.extension().is_some_and(|e| e.eq_ignore_ascii_case("mcap"));
        let slot: &mut Option<PathBuf> = if is_bag { &mut bag } else { &mut text };
        if let Some(old) = slot.replace(f.clone()) {
            return Err(anyhow!(
                "--record {} and --record {}: one {} record at most",
                old.display(),
                f.display(),
                if is_bag { ".mcap" } else { "text" }
            ));
        }
    }
    Ok((text, bag))
}

/// The io shard's input and output, from the options and the configuration.
fn io_side(
    a: &ShardArgs,
    config: &mut Config,
    genome: &Genome,
    workload: Option<Workload>,
    bag_record: Option<&std::path::Path>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Box<dyn Io>> {
    let cluster = &config.cluster;
    if let (Some(p), None) = (bag_record, &a.bag) {
        return Err(anyhow!("--record {}: an .mcap record holds a replay's motor topics: it needs --bag", p.display()));
    }
    if let Some(path) = &a.bag {
        if a.resume {
            return Err(anyhow!(
                "--resume with --bag on the io shard: a replay starts from the bag's beginning; start the io shard without --resume \
                 (the others may keep it: the cluster then starts from burst 0)"
            ));
        }
        if cluster.rate_hz > 0.0 {
            tracing::info!("cluster.rate_hz is not used with --bag: replay.pace paces a replay");
        }
        let bag = crate::bag::open(path)?;
        if bag.messages.is_empty() {
            return Err(anyhow!("--bag {}: the bag holds no messages: nothing to replay", path.display()));
        }
        let keep_back = cluster.on_shard_loss == crate::cluster::OnShardLoss::Degraded;
        let layout = Layout::from_genome(genome);
        let io = BagIo::new(bag, path, layout, config.replay_setup(), genome.burst_rate_hz, bag_record, keep_back, None)?;
        if config.replay.pace > 0.0 {
            check_period(cluster, genome.burst_rate_hz * config.replay.pace, "replay.pace")?;
        }
        return Ok(Box::new(io));
    }
    if let Some(kind) = a.transport {
        let n = &mut config.node;
        n.transport = kind;
        a.link.apply(config, None)?;
        let (rate, from) = if config.cluster.rate_hz > 0.0 {
            (config.cluster.rate_hz, "cluster.rate_hz")
        } else if config.node.rate_hz > 0.0 {
            (config.node.rate_hz, "node.rate_hz")
        } else {
            (genome.burst_rate_hz, "the genome's burst_rate_hz")
        };
        check_period(&config.cluster, rate, from)?;
        config.zenoh.max_message_size = crate::node::max_message_size(&config.node_setup());
        let mut transport = crate::transport::select::open(
            config.node.transport,
            &config.zenoh,
            &config.node.name,
            &config.node.namespace,
            config.node.domain,
        )
        .context("cannot open the transport")?;
        let layout = Layout::from_genome(genome);
        let fatal = Arc::new(crate::node::fatal::Fatal::new(stop.clone()));
        let mut topics = LiveTopics::open(&config.node_setup(), &layout, transport.as_mut(), rate, "the io shard", fatal)
            .map_err(|e| anyhow!("live topics: {}", crate::errors::said_once(&e)))?;
        topics.keep(transport);
        return Ok(Box::new(topics));
    }
    let precompute = if a.precompute_input { a.bursts } else { 0 };
    Ok(Box::new(WorkloadIo::new(workload, cluster.rate_hz, precompute)))
}

/// A burst period at `rate` must be shorter than `cluster.burst_timeout_ms`.
fn check_period(cluster: &crate::cluster::ClusterConfig, rate: f64, from: &str) -> anyhow::Result<()> {
    if rate > 0.0 && cluster.burst_timeout().as_secs_f64() <= 1.0 / rate {
        return Err(anyhow!(
            "cluster.burst_timeout_ms: {} ms is not longer than a burst period at {rate} bursts/s ({from}: {:.1} ms)",
            cluster.burst_timeout_ms,
            1000.0 / rate
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_and_errors_name_the_option() {
        let w = parse_workload("20000,50,0.01").unwrap();
        assert_eq!((w.neurons, w.fanout, w.rate, w.seed), (20000, 50, 0.01, 1));
        assert_eq!(parse_workload("10, 5, 0.5, 9").unwrap().seed, 9);
        assert!(parse_workload("10,5").unwrap_err().to_string().contains("--workload"));
        let e = parse_workload("10,5,2").unwrap_err().to_string();
        assert!(e.contains("--workload") && e.contains("rho"), "{e}");
        let e = parse_workload("10,4294967295,0.1").unwrap_err().to_string();
        assert!(e.contains("random.fanout"), "{e}");
        assert!(parse_workload("0,5,0.1").is_err());
    }

    #[test]
    fn records_split_by_extension_and_one_of_each() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(records(&[p("a.txt"), p("b.MCAP")]).unwrap(), (Some(p("a.txt")), Some(p("b.MCAP"))));
        assert_eq!(records(&[]).unwrap(), (None, None));
        assert!(records(&[p("a.mcap"), p("b.mcap")]).unwrap_err().to_string().contains("--record a.mcap"));
    }
}
