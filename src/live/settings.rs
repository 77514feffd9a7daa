//! The `node` section of the configuration: who the node is on the ROS graph, its transport,
//! its clock, its topics.

use serde::{Deserialize, Serialize};

/// Which transport carries the node's topics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// A Zenoh session (see the `zenoh` section); no ROS install needed.
    #[default]
    Zenoh,
    /// The robot's ROS 2 through r2r (needs the `ros2` cargo feature and a sourced ROS 2).
    Ros2,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// ROS node name.
    pub name: String,
    /// ROS namespace (`/` or `/robot1`); relative topics resolve inside it.
    pub namespace: String,
    /// ROS domain id (the first segment of rmw_zenoh keys; ROS_DOMAIN_ID for r2r).
    pub domain: u32,
    /// zenoh | ros2
    pub transport: TransportKind,
    /// Bursts per second; 0 = the genome's burst_rate_hz.
    pub rate_hz: f64,
    /// Topic of neuroburst/msg/BurstStats; empty = none.
    pub stats_topic: String,
    /// BurstStats messages per second.
    pub stats_rate_hz: f64,
    /// Seconds between two log lines about the same problem on the same topic.
    pub log_interval_s: f64,
    /// Sensor topics and the sensor areas they drive.
    pub inputs: Vec<InputConfig>,
    /// Motor areas and the topics they command.
    pub outputs: Vec<OutputConfig>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            name: "neuroburst".into(),
            namespace: "/".into(),
            domain: 0,
            transport: TransportKind::Zenoh,
            rate_hz: 0.0,
            stats_topic: "~/stats".into(),
            stats_rate_hz: 1.0,
            log_interval_s: 5.0,
            inputs: vec![],
            outputs: vec![],
        }
    }
}

/// One subscribed sensor topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputConfig {
    /// Topic name (relative names resolve in the namespace).
    pub topic: String,
    /// ROS type, `pkg/msg/Type`: sensor_msgs/msg/LaserScan or sensor_msgs/msg/Image.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Id of the sensor area it drives.
    pub area: String,
    /// Potential injected for the strongest reading (closest range, brightest pixel).
    #[serde(default = "one")]
    pub gain: f64,
    /// Inject the latest message again every burst until a newer one arrives (false: once).
    #[serde(default)]
    pub hold: bool,
}

/// One published motor topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Topic name.
    pub topic: String,
    /// ROS type: geometry_msgs/msg/Twist.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Id of the motor area it reads.
    pub area: String,
    /// linear.x when the whole area fires (m/s).
    #[serde(default = "one")]
    pub max_linear: f64,
    /// angular.z when the whole right half fires and the left half is silent (rad/s).
    #[serde(default = "one")]
    pub max_angular: f64,
}

fn one() -> f64 {
    1.0
}
