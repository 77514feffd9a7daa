//! The `node` section of the configuration: who the node is on the ROS graph, its transport,
//! its clock, its stats. Its sensor and motor topics are the `encoders` and `decoders` of the
//! configuration, the same as a replay's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::run::pace::{Mode, ReflexConfig};
use anyhow::anyhow;

use crate::backend::BackendConfig;
use crate::checkpoint::CheckpointConfig;
use crate::decode::DecoderConfig;
use crate::encode::EncoderConfig;
use crate::ros::registry;
use crate::run::Intake;
use crate::transport::{names, Qos, TopicSpec, TransportKind};
use crate::view::ViewConfig;

/// Real-time settings of the burst thread, applied when the process is permitted to (root, or
/// CAP_SYS_NICE / CAP_IPC_LOCK, or an rtprio / memlock limit), logged when not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RealtimeConfig {
    /// The CPU core to pin the burst thread to (none when absent).
    pub cpu: Option<usize>,
    /// SCHED_FIFO priority of the burst thread, 1..=99 (0: the default scheduler).
    pub priority: u8,
    /// Lock the process's memory (mlockall), so no page of the brain is ever paged out.
    pub lock_memory: bool,
    /// Hand-offs by polling instead of sleeping: the burst thread spins to its next burst, each
    /// sensor topic's encoder thread and the publisher thread spin for their next item. Saves the
    /// wake-up of a sleeping thread on every hop (tens to hundreds of microseconds on a virtual
    /// machine) at the price of one busy core per thread (topics + 2): for machines with cores
    /// to spare and a reflex to answer fast (docs/realtime.md).
    pub busy_poll: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// ROS node name.
    pub name: String,
    /// ROS namespace (`/` or `/robot1`); relative topics resolve inside it.
    pub namespace: String,
    /// ROS domain id (the first segment of rmw_zenoh keys; the DDS domain for r2r). `--domain`
    /// overrides it, and so does the environment's ROS_DOMAIN_ID when `--domain` is not given.
    pub domain: u32,
    /// zenoh | ros2
    pub transport: TransportKind,
    /// Bursts per second; 0 = the genome's burst_rate_hz.
    pub rate_hz: f64,
    /// clock | reflex: when the bursts run (docs/realtime.md).
    pub mode: Mode,
    /// Reflex mode's settings.
    pub reflex: ReflexConfig,
    /// The burst thread's real-time settings.
    pub realtime: RealtimeConfig,
    /// Topic of neuroburst_msgs/msg/BurstStats; empty = none.
    pub stats_topic: String,
    /// Topic of the node's health (diagnostic_msgs/msg/DiagnosticArray); empty = none.
    pub diagnostics_topic: String,
    /// BurstStats and diagnostics messages per second.
    pub stats_rate_hz: f64,
    /// Burst on simulated time: `/clock` (rosgraph_msgs/msg/Clock) instead of the system clock,
    /// lock-stepped like a replay (the ROS parameter `use_sim_time`).
    pub use_sim_time: bool,
    /// Seconds between two log lines about the same problem on the same topic.
    pub log_interval_s: f64,
    /// A managed (lifecycle) node: it starts unconfigured and bursts once a lifecycle manager
    /// has configured and activated it (`~/change_state`).
    pub lifecycle: bool,
    /// The directory inside which a client of the parameter services may point the parameters
    /// that name files (`genome`, `checkpoint.path`, `cluster.checkpoint_dir`); empty: they are
    /// read-only over the services (set in the configuration, with `--set`, or as launch
    /// parameters). Fixed when the node starts.
    pub parameter_files_dir: std::path::PathBuf,
    /// The largest message (bytes) a sensor topic takes (and the Zenoh session, of any topic);
    /// 0: by the topics' message types ([`crate::encode::default_max_message_bytes`]).
    pub max_message_size: u64,
    /// The message type to subscribe with, per encoder topic, where the encoder accepts several
    /// (image: sensor_msgs/msg/Image by default, or CompressedImage; float_array:
    /// std_msgs/msg/Float32MultiArray by default, or Float64MultiArray).
    pub input_types: BTreeMap<String, String>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            name: "neuroburst".into(),
            namespace: "/".into(),
            domain: 0,
            transport: TransportKind::Zenoh,
            rate_hz: 0.0,
            mode: Mode::Clock,
            reflex: ReflexConfig::default(),
            realtime: RealtimeConfig::default(),
            stats_topic: "~/stats".into(),
            diagnostics_topic: "/diagnostics".into(),
            stats_rate_hz: 1.0,
            use_sim_time: false,
            log_interval_s: 5.0,
            lifecycle: false,
            parameter_files_dir: std::path::PathBuf::new(),
            max_message_size: 0,
            input_types: BTreeMap::new(),
        }
    }
}

impl NodeConfig {
    pub fn mode_name(&self) -> &'static str {
        match self.mode {
            Mode::Clock => "clock",
            Mode::Reflex => "reflex",
        }
    }
}

/// The sections of the configuration the live node reads, owned (what a managed node reads
/// again at every configure).
#[derive(Clone, Debug, Default)]
pub struct NodeSections {
    pub node: NodeConfig,
    pub encoders: Vec<EncoderConfig>,
    pub decoders: Vec<DecoderConfig>,
    pub backend: BackendConfig,
    pub checkpoint: CheckpointConfig,
    pub view: ViewConfig,
}

impl NodeSections {
    pub fn setup(&self) -> NodeSetup<'_> {
        NodeSetup {
            node: &self.node,
            encoders: &self.encoders,
            decoders: &self.decoders,
            backend: &self.backend,
            checkpoint: &self.checkpoint,
            view: &self.view,
        }
    }
}

/// The sections of the configuration the live node reads.
#[derive(Clone, Copy)]
pub struct NodeSetup<'a> {
    pub node: &'a NodeConfig,
    pub encoders: &'a [EncoderConfig],
    pub decoders: &'a [DecoderConfig],
    pub backend: &'a BackendConfig,
    pub checkpoint: &'a CheckpointConfig,
    pub view: &'a ViewConfig,
}

/// The transport's view of topic `name` of type `type_name` (a type of [`registry`]).
pub fn topic_spec(name: &str, config: &NodeConfig, type_name: &str, qos: Qos) -> anyhow::Result<TopicSpec> {
    let resolved = names::resolve(name, &config.namespace, &config.name).map_err(anyhow::Error::msg)?;
    let hash = registry::type_hash(type_name)
        .ok_or_else(|| anyhow!("topic {name}: unknown message type {type_name:?} (known: {})", registry::type_names().join(", ")))?;
    Ok(TopicSpec::new(resolved, type_name, hash, qos))
}

/// The largest message topic `topic` (of type `type_name`) takes: `node.max_message_size`, or
/// its type's default.
pub fn topic_max_bytes(nc: &NodeConfig, type_name: &str) -> u64 {
    match nc.max_message_size {
        0 => crate::encode::default_max_message_bytes(type_name),
        n => n,
    }
}

/// The largest message any of the node's topics takes (the Zenoh session's limit): the largest
/// of its sensor and view topics', at least 1 MiB (services, parameters, `/clock`).
pub fn max_message_size(setup: &NodeSetup<'_>) -> u64 {
    let nc = setup.node;
    let types = setup.encoders.iter().filter_map(|e| {
        let topic = e.topic();
        nc.input_types.get(topic).map(String::as_str).or_else(|| e.message_types().first().copied())
    });
    let view = setup.view.topics.iter().map(|t| t.type_name.as_str());
    types.chain(view).map(|t| topic_max_bytes(nc, t)).fold(1 << 20, u64::max)
}

/// The message type to subscribe to `topic` with: `node.input_types`, or the first type its
/// encoder accepts.
pub fn input_type(nc: &NodeConfig, intake: &Intake, topic: &str) -> anyhow::Result<&'static str> {
    let accepted = intake.message_types(topic);
    match nc.input_types.get(topic) {
        Some(t) => accepted.iter().copied().find(|a| a == t).ok_or_else(|| {
            anyhow!("node.input_types: topic {topic}: its encoder does not accept {t} (it accepts {})", accepted.join(", "))
        }),
        None => accepted.first().copied().ok_or_else(|| anyhow!("topic {topic}: no encoder")),
    }
}
