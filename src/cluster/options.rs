//! What a shard is given ([`ShardOptions`]) and what it returns ([`Report`], [`Outcome`],
//! [`ClusterError`]), and its Zenoh session's configuration; the loop is in `run.rs`.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::checkpoints::ShardCheckpointError;
use super::config::ClusterConfig;
use crate::backend::BackendError;
use crate::genome::Genome;
use crate::partition::{PlanError, Strategy};
use crate::transport::zenoh::{ZenohConfig, ZenohMode};

/// What a shard runs.
pub struct ShardOptions {
    pub genome: Genome,
    pub cluster: ClusterConfig,
    pub strategy: Strategy,
    /// This shard's index (its endpoint is `cluster.endpoints[index]`).
    pub index: usize,
    /// This shard's neurons run on these GPUs (CUDA; split evenly); empty: on the CPU.
    pub gpus: Vec<usize>,
    /// Run up to this burst and stop; 0 = until interrupted.
    pub bursts: u64,
    /// Start from the latest checkpoint (else: a fresh start, old checkpoints removed).
    pub resume: bool,
    /// Whether the plastic mappings learn (`backend.learning`, the same in every shard).
    pub learning: bool,
    /// The io shard's sensor input and motor output (unused on the other shards); None: no
    /// input, bursts at `cluster.rate_hz`.
    pub io: Option<Box<dyn crate::run::Io>>,
    /// The neurons the record counts as motor (None: the genome's motor areas).
    pub motor: Option<Vec<Range<u32>>>,
    /// The io shard writes its record here (see [`record`]).
    pub record: Option<PathBuf>,
    /// Bursts after each epoch's start that the timings leave out.
    pub warmup: u64,
    pub progress: bool,
    /// Set by a signal: stop after the current burst.
    pub stop: Arc<AtomicBool>,
}

/// How a shard ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Ran to the last burst.
    Completed,
    /// Stopped on a signal.
    Interrupted,
    /// Stopped because shards were lost (`on_shard_loss: stop`, or the io shard was lost).
    ShardLost { shards: u64, burst: u64, reason: String },
    /// The others went on without this shard (it stalled); restart it to rejoin.
    Excluded { reason: String },
}

/// What a shard did.
#[derive(Clone, Debug)]
pub struct Report {
    pub outcome: Outcome,
    pub index: usize,
    pub shards: usize,
    pub neurons: Range<u32>,
    pub epochs: u32,
    pub bursts_run: u64,
    pub last_burst: u64,
    pub malformed: u64,
    /// Well-formed messages for bursts outside the window, dropped (see `inbox`).
    pub stray: u64,
    /// Directives that were not the io shard's, dropped.
    pub forged: u64,
    /// Per timed burst: from the whole fired list of the last burst to that of this one (the
    /// burst period; at the io shard, the brain's burst latency), microseconds.
    pub period_us: Vec<f64>,
    /// Per timed burst: time in this shard's engine.
    pub compute_us: Vec<f64>,
    /// Per timed burst: time waiting for the peers' spikes (and the input).
    pub wait_us: Vec<f64>,
    /// Per timed burst: payload bytes this shard put on its links (its spikes, once per peer;
    /// on the io shard also the peers' input).
    pub sent_bytes: Vec<u64>,
    /// What the io shard's input and output did (null elsewhere).
    pub io: serde_json::Value,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Config(#[from] super::config::ClusterConfigError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Checkpoint(#[from] ShardCheckpointError),
    #[error("zenoh: {0}")]
    Zenoh(String),
    #[error("{0}")]
    Startup(String),
    #[error("io shard: {0}")]
    Io(String),
    #[error("{path}: {source}")]
    Record {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub(super) fn zerr(what: &str) -> impl Fn(::zenoh::Error) -> ClusterError + '_ {
    move |e| ClusterError::Zenoh(format!("{what}: {e}"))
}

/// The Zenoh session of shard `index`: a peer listening on its endpoint and connecting to every
/// other, multicast and gossip scouting off, connections retried every 0.1..1 s, a blocked put
/// waiting at most half of `burst_timeout_ms` for a peer's link before closing it, and no message
/// larger than `largest` bytes taken from a link ([`super::wire::largest_message`]).
pub fn session_config(cluster: &ClusterConfig, index: usize, largest: u64) -> Result<::zenoh::Config, ClusterError> {
    let z = ZenohConfig {
        mode: ZenohMode::Peer,
        listen: vec![cluster.endpoints[index].clone()],
        connect: cluster.endpoints.iter().enumerate().filter(|&(k, _)| k != index).map(|(_, e)| e.clone()).collect(),
        config_file: cluster.zenoh_config_file.clone(),
        max_message_size: largest,
        ..Default::default()
    };
    let mut c = z.session_config().map_err(|e| ClusterError::Zenoh(e.to_string()))?;
    let retry = r#"{"period_init_ms": 100, "period_max_ms": 1000, "period_increase_factor": 2}"#;
    c.insert_json5("connect/retry", retry).map_err(|e| ClusterError::Zenoh(format!("config connect/retry: {e}")))?;
    // Only the configured links: no peer learns (and dials) other addresses through gossip.
    c.insert_json5("scouting/gossip/enabled", "false").map_err(|e| ClusterError::Zenoh(format!("config scouting/gossip: {e}")))?;
    // A peer behind a dead link (a cut cable) takes no more bytes: once its queue is full, a
    // blocking put would wait 5 s for it, stalling this shard's burst for everyone. After half a
    // burst timeout its link is closed instead (it is late by then anyway) and the put goes on.
    let wait_us = (cluster.burst_timeout().as_micros() / 2).clamp(1000, 5_000_000);
    c.insert_json5("transport/link/tx/queue/congestion_control/block/wait_before_close", &wait_us.to_string())
        .map_err(|e| ClusterError::Zenoh(format!("config congestion_control/block: {e}")))?;
    Ok(c)
}
