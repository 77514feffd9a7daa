//! The command line. Interfaces kept stable because other tools read them: `run --spikes-out`
//! JSON lines, `inspect --json`, `bench --json`.

mod bench;
mod bench_cluster;
mod bench_loop;
mod convert;
mod inspect;
mod kernels;
mod learned;
mod node;
mod parameters;
mod replay;
pub mod ros_args;
mod run;
mod selftest;
mod shard;
mod table;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::backend::BackendKind;
use crate::config::Config;

#[derive(Parser, Debug)]
#[command(name = "neuroburst", version, about = "A spiking brain in FEAGI's burst model, on NVIDIA GPUs or the CPU")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run bursts with no external input (the `_power` drive only) and summarise the firing.
    Run(run::RunArgs),
    /// Describe a genome: areas, synapses per mapping, memory.
    Inspect(inspect::InspectArgs),
    /// Time the standard workload W(N, K, rho) of docs/performance.md.
    Bench(bench::BenchArgs),
    /// Write a genome (a FEAGI JSON genome, or YAML) in the project's YAML format.
    Convert(convert::ConvertArgs),
    /// Write what a brain learned (a checkpoint) into its genome: a learned genome (YAML).
    Export(learned::ExportArgs),
    /// Replay a rosbag2 bag through the brain, lock-stepped to bag time; record the motor topics.
    Replay(replay::ReplayArgs),
    /// Check a backend against the CPU reference on random brains, bit for bit.
    Selftest(selftest::SelftestArgs),
    /// The live ROS 2 node: sensor topics in, bursts at the configured rate, motor topics out.
    Node(node::NodeArgs),
    /// One shard of a brain spread over processes or hosts (the `cluster` configuration section).
    Shard(shard::ShardArgs),
    /// The closed loop over the wire: a robot on Zenoh loopback times a reflex through the live
    /// node running W(N, K, rho) or a genome (sensor -> motor latency, deadlines, phases).
    BenchLoop(bench_loop::BenchLoopArgs),
    /// Time W(N, K, rho) in one process and over 2 and 4 shard processes (loopback, namespaces).
    BenchCluster(bench_cluster::BenchClusterArgs),
    /// One side of bench-cluster's link probe (started by bench-cluster).
    #[command(hide = true)]
    BenchLink(bench_cluster::BenchLinkArgs),
    /// Compile the CUDA kernels with NVRTC for a GPU architecture (no GPU needed): checks the
    /// NVRTC install and fills the PTX cache that start-up reads.
    Kernels(kernels::KernelsArgs),
}

/// Options shared by the commands that run a brain.
#[derive(Args, Debug, Clone)]
pub struct RuntimeArgs {
    /// Configuration file (YAML); defaults are those of config/neuroburst.yaml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override a configuration key, e.g. `--set backend.cpu_threads=2` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Backend: auto | cpu | cuda | wgpu (overrides backend.kind).
    #[arg(long, value_enum)]
    pub backend: Option<BackendKind>,
    /// CUDA device ordinal (overrides backend.device).
    #[arg(long)]
    pub device: Option<usize>,
    /// Shards: a count or `auto`: GPUs with the CUDA backend, CPU shards with the CPU backend
    /// (overrides backend.shards).
    #[arg(long, value_name = "N|auto")]
    pub shards: Option<crate::partition::ShardCount>,
    /// Sharding strategy (overrides backend.strategy).
    #[arg(long, value_enum)]
    pub strategy: Option<crate::partition::Strategy>,
}

/// How the node (or the io shard of a distributed brain) reaches the robot: overrides of the
/// `zenoh` and `node` sections.
#[derive(Args, Debug, Clone, Default)]
pub struct RobotLinkArgs {
    /// Zenoh endpoint to connect to, e.g. tcp/127.0.0.1:7447 (repeatable; overrides zenoh.connect).
    #[arg(long, value_name = "ENDPOINT")]
    pub zenoh_connect: Vec<String>,
    /// Zenoh endpoint to listen on in peer mode (repeatable; overrides zenoh.listen).
    #[arg(long, value_name = "ENDPOINT")]
    pub zenoh_listen: Vec<String>,
    /// Zenoh mode: peer | client (overrides zenoh.mode).
    #[arg(long, value_enum)]
    pub zenoh_mode: Option<crate::transport::zenoh::ZenohMode>,
    /// Zenoh key format: rmw | ros2dds (overrides zenoh.format).
    #[arg(long, value_enum)]
    pub zenoh_format: Option<crate::transport::zenoh::KeyFormat>,
    /// ROS domain id (overrides node.domain and the environment's ROS_DOMAIN_ID).
    #[arg(long)]
    pub domain: Option<u32>,
    /// ROS namespace (overrides node.namespace).
    #[arg(long)]
    pub namespace: Option<String>,
}

impl RobotLinkArgs {
    /// Apply the overrides given; `namespace` (e.g. from `--ros-args`) wins over `--namespace`.
    /// The domain is `--domain`, else the environment's ROS_DOMAIN_ID, else node.domain.
    pub fn apply(&self, c: &mut Config, namespace: Option<String>) -> anyhow::Result<()> {
        let env = std::env::var("ROS_DOMAIN_ID").ok().filter(|v| !v.trim().is_empty());
        match (self.domain, env) {
            (Some(d), _) => c.node.domain = d,
            (None, Some(v)) => {
                c.node.domain = v.trim().parse().map_err(|_| anyhow::anyhow!("ROS_DOMAIN_ID={v:?} is not a ROS domain id (0 to 232)"))?
            }
            (None, None) => {}
        }
        if c.node.domain > 232 {
            anyhow::bail!("ROS domain id {} is out of range (0 to 232)", c.node.domain);
        }
        if let Some(ns) = namespace.or(self.namespace.clone()) {
            c.node.namespace = ns;
        }
        let z = &mut c.zenoh;
        if !self.zenoh_connect.is_empty() {
            z.connect = self.zenoh_connect.clone();
        }
        if !self.zenoh_listen.is_empty() {
            z.listen = self.zenoh_listen.clone();
        }
        if let Some(m) = self.zenoh_mode {
            z.mode = m;
        }
        if let Some(f) = self.zenoh_format {
            z.format = f;
        }
        Ok(())
    }
}

impl RuntimeArgs {
    pub fn config(&self) -> anyhow::Result<Config> {
        let mut config = Config::load(self.config.as_deref(), &self.set)?;
        if let Some(kind) = self.backend {
            config.backend.kind = kind;
        }
        if let Some(device) = self.device {
            config.backend.device = device;
        }
        if let Some(shards) = self.shards {
            config.backend.shards = shards;
        }
        if let Some(strategy) = self.strategy {
            config.backend.strategy = strategy;
        }
        Ok(config)
    }
}

/// Set up logging and the CPU thread pool from the configuration.
/// Sets the log level of the running process (the parameter `log.level`).
type SetLevel = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;
static LOG_LEVEL: std::sync::OnceLock<SetLevel> = std::sync::OnceLock::new();

/// Log at `level` from now on (when [`init`] set the logger up).
pub fn set_log_level(level: &str) -> Result<(), String> {
    LOG_LEVEL.get().map_or(Ok(()), |set| set(level))
}

pub fn init(config: &Config) {
    use crate::transport::zenoh::refused;
    use tracing_subscriber::filter::FilterExt;
    use tracing_subscriber::prelude::*;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log.level));
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_target(false);
    if tracing_subscriber::registry().with(fmt.with_filter(filter.and(refused::hide()))).with(refused::layer()).try_init().is_ok() {
        let _ = LOG_LEVEL.set(Box::new(move |level: &str| handle.reload(EnvFilter::new(level)).map_err(|e| e.to_string())));
    }
    if config.backend.cpu_threads > 0 {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(config.backend.cpu_threads).build_global();
    }
}

pub fn main(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(a) => run::main(a),
        Command::Inspect(a) => inspect::main(a),
        Command::Bench(a) => bench::main(a),
        Command::Convert(a) => convert::main(a),
        Command::Export(a) => learned::export(a),
        Command::Replay(a) => replay::main(a),
        Command::Selftest(a) => selftest::main(a),
        Command::Node(a) => node::main(a),
        Command::Shard(a) => shard::main(a),
        Command::BenchCluster(a) => bench_cluster::main(a),
        Command::BenchLink(a) => bench_cluster::link_main(a),
        Command::BenchLoop(a) => bench_loop::main(a),
        Command::Kernels(a) => kernels::main(a),
    }
}
