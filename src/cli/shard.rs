//! `neuroburst shard`: one shard of a brain spread over processes or hosts (docs/distributed.md).
//! The burst loop runs on its own thread; this one waits for SIGINT/SIGTERM (stop after the
//! current burst). Prints one JSON summary line on stdout at the end. Exit status: 0 done or
//! stopped by a signal, 2 error, 3 stopped because a shard was lost, 4 left behind by the others.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use clap::Args;
use serde_json::json;

use super::bench::percentile;
use crate::cluster::{run, Outcome, ShardOptions};
use crate::genome::Genome;
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
    /// The io shard appends one line per burst here: epoch, burst, fired, hash, per shard, motor.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
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
    anyhow::ensure!(w.neurons >= 1, "--workload {s:?}: N must be at least 1");
    anyhow::ensure!(w.rate.is_finite() && (0.0..=1.0).contains(&w.rate), "--workload {s:?}: RHO must be within 0..1");
    Ok(w)
}

pub fn main(a: ShardArgs) -> anyhow::Result<()> {
    let config = a.runtime.config()?;
    super::init(&config);
    config.cluster.validate(Some(a.index))?;
    match config.backend.kind {
        crate::backend::BackendKind::Cuda => {
            return Err(anyhow!(
                "backend.kind: cuda: a shard runs the CPU engine only (a GPU engine per shard is not written yet); use cpu or auto"
            ))
        }
        crate::backend::BackendKind::Auto => tracing::info!("backend.kind auto: a shard runs the CPU engine"),
        crate::backend::BackendKind::Cpu => {}
    }
    let (genome, input) = match (&a.genome, &a.workload) {
        (Some(p), _) => (Genome::load(p)?, None),
        (None, Some(w)) => {
            let w = parse_workload(w)?;
            (w.genome(), Some(w))
        }
        (None, None) => return Err(anyhow!("pass --genome FILE or --workload N,K,RHO")),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let options = ShardOptions {
        genome,
        cluster: config.cluster.clone(),
        strategy: config.backend.strategy,
        index: a.index,
        bursts: a.bursts,
        resume: a.resume,
        input,
        precompute_input: a.precompute_input,
        record: a.record.clone(),
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
        "timed_bursts": p.len(),
        "p50_us": percentile(&p, 0.5),
        "p99_us": percentile(&p, 0.99),
        "mean_us": mean(&p),
        "compute_p50_us": percentile(&c, 0.5),
        "compute_p99_us": percentile(&c, 0.99),
        "wait_p50_us": percentile(&w, 0.5),
        "wait_p99_us": percentile(&w, 0.99),
        "threads": rayon::current_num_threads(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_and_errors_name_the_option() {
        let w = parse_workload("20000,50,0.01").unwrap();
        assert_eq!((w.neurons, w.fanout, w.rate, w.seed), (20000, 50, 0.01, 1));
        assert_eq!(parse_workload("10, 5, 0.5, 9").unwrap().seed, 9);
        assert!(parse_workload("10,5").unwrap_err().to_string().contains("--workload"));
        assert!(parse_workload("10,5,2").unwrap_err().to_string().contains("RHO"));
        assert!(parse_workload("0,5,0.1").is_err());
    }
}
