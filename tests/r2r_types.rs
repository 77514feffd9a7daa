//! The message types the node asks a transport for, with every encoder kind, every decoder kind
//! and every optional topic on: through r2r, each must come from a package every ROS 2 install
//! has, except neuroburst_msgs/msg/BurstStats, which is optional (a ROS 2 build without the
//! neuroburst_msgs package refuses it and the node goes on with /diagnostics). A transport that
//! refuses it, as r2r does then, must not stop the node, and every command topic gets its stop
//! command when the node stops.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use neuroburst::config::Config;
use neuroburst::genome::Genome;
use neuroburst::node::{self, Control};
use neuroburst::transport::{CallHandler, Publisher, SampleHandler, Subscription, TopicSpec, Transport, TransportError};

/// The packages of ROS 2's `ros_core`/`ros_base` that the node's types come from.
const STANDARD: [&str; 7] =
    ["std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "diagnostic_msgs", "rosgraph_msgs", "builtin_interfaces"];

const GENOME: &str = "name: every_kind
burst_rate_hz: 100
areas:
  - {id: cam, kind: sensor, dims: [2, 2, 3]}
  - {id: scan, kind: sensor, dims: [4, 1, 4]}
  - {id: imu, kind: sensor, dims: [6, 1, 4]}
  - {id: joints, kind: sensor, dims: [2, 1, 4]}
  - {id: range, kind: sensor, dims: [1, 1, 4]}
  - {id: floats, kind: sensor, dims: [3, 1, 4]}
  - {id: cloud, kind: sensor, dims: [2, 2, 2]}
  - {id: depth, kind: sensor, dims: [2, 2, 4]}
  - {id: odom, kind: sensor, dims: [12, 1, 4]}
  - {id: mot, kind: motor, dims: [4, 1, 4]}
";

const CONFIG: &str = "
node:
  name: brain
  transport: zenoh
  use_sim_time: true
  input_types: {cam2: sensor_msgs/msg/CompressedImage, f64s: std_msgs/msg/Float64MultiArray}
encoders:
  - {kind: image, topic: cam, area: cam}
  - {kind: image, topic: cam2, area: cam}
  - {kind: laser_scan, topic: scan, area: scan, max_range: 5.0}
  - {kind: imu, topic: imu, angular_velocity_area: imu}
  - {kind: joint_state, topic: joint_states, area: joints, min: -1.0, max: 1.0}
  - {kind: range, topic: range, area: range, max_range: 4.0}
  - {kind: float_array, topic: floats, area: floats, min: 0.0, max: 1.0}
  - {kind: float_array, topic: f64s, area: floats, min: 0.0, max: 1.0}
  - {kind: point_cloud, topic: points, area: cloud, min: [0, -1, -1], max: [2, 1, 1]}
  - {kind: depth_image, topic: depth, area: depth, max_range: 3.0}
  - {kind: odometry, topic: odom, area: odom}
decoders:
  - {kind: twist, area: mot, topic: cmd_vel, axes: [{axis: linear_x, scale: 1.0, limit: 1.0}]}
  - {kind: twist, area: mot, topic: cmd_vel_stamped, stamped: true, axes: [{axis: angular_z, scale: 1.0, limit: 1.0}]}
  - {kind: joints, area: mot, topic: joint_command, joints: [a, b, c, d], min: [0.0], max: [1.0]}
  - {kind: joints, area: mot, topic: joint_array, message: float64_multi_array, joints: [a, b, c, d], min: [0.0], max: [1.0]}
  - {kind: float_array, area: mot, topic: f32_out, min: [0.0], max: [1.0]}
  - {kind: float_array, area: mot, topic: f64_out, precision: float64, min: [0.0], max: [1.0]}
checkpoint:
  trigger_topic: save
  on_shutdown: false
backend: {kind: cpu, cpu_threads: 1}
";

/// What the node asked for, and what it published where.
#[derive(Default)]
struct Log {
    publishers: Vec<(String, String)>,
    subscriptions: Vec<(String, String)>,
    published: Vec<String>,
}

/// A transport that records, and refuses the types of the packages in `missing` as r2r does for
/// a package it cannot find.
struct Recorder {
    log: Arc<Mutex<Log>>,
    missing: Vec<&'static str>,
}

struct Rec {
    topic: String,
    log: Arc<Mutex<Log>>,
}

impl Publisher for Rec {
    fn publish(&mut self, _cdr: &[u8]) -> Result<(), TransportError> {
        self.log.lock().unwrap().published.push(self.topic.clone());
        Ok(())
    }
}

impl Recorder {
    fn check(&self, t: &TopicSpec) -> Result<(), TransportError> {
        match self.missing.iter().find(|p| t.type_name.starts_with(&format!("{p}/"))) {
            Some(_) => Err(TransportError::Ros2(format!("No typesupport built for the message type: {}", t.type_name))),
            None => Ok(()),
        }
    }
}

impl Transport for Recorder {
    fn describe(&self) -> String {
        "recorder".into()
    }
    fn publisher(&mut self, t: &TopicSpec) -> Result<Box<dyn Publisher>, TransportError> {
        self.check(t)?;
        self.log.lock().unwrap().publishers.push((t.name.clone(), t.type_name.clone()));
        Ok(Box::new(Rec { topic: t.name.clone(), log: self.log.clone() }))
    }
    fn subscribe(&mut self, t: &TopicSpec, _handler: SampleHandler) -> Result<Subscription, TransportError> {
        self.check(t)?;
        self.log.lock().unwrap().subscriptions.push((t.name.clone(), t.type_name.clone()));
        Ok(Subscription::new(()))
    }
    fn serve(&mut self, t: &TopicSpec, _handler: CallHandler) -> Result<(), TransportError> {
        self.check(t)?;
        Ok(())
    }
}

fn run(missing: Vec<&'static str>) -> (anyhow::Result<node::Summary>, Log) {
    let genome: Genome = serde_yaml::from_str(GENOME).unwrap();
    let config: Config = serde_yaml::from_str(CONFIG).unwrap();
    let log = Arc::new(Mutex::new(Log::default()));
    let mut transport = Recorder { log: log.clone(), missing };
    let control = Arc::new(Control::default());
    control.request_stop();
    let result = node::run(&genome, config.node_setup(), false, &mut transport, control, None);
    drop(transport);
    let log = Arc::try_unwrap(log).ok().unwrap().into_inner().unwrap();
    (result, log)
}

#[test]
fn every_type_is_standard_but_the_optional_burst_stats() {
    let (result, log) = run(vec![]);
    result.unwrap();
    let types: BTreeSet<&str> = log.publishers.iter().chain(&log.subscriptions).map(|(_, t)| t.as_str()).collect();
    let mut own = vec![];
    for t in &types {
        let package = t.split('/').next().unwrap();
        if package == "neuroburst_msgs" {
            own.push(*t);
        } else {
            assert!(STANDARD.contains(&package), "{t} is not from a package every ROS 2 install has");
        }
    }
    assert_eq!(own, ["neuroburst_msgs/msg/BurstStats"], "the only own type, and it is optional");
    // what this configuration names is all there
    for t in [
        "sensor_msgs/msg/Image",
        "sensor_msgs/msg/CompressedImage",
        "sensor_msgs/msg/LaserScan",
        "sensor_msgs/msg/Imu",
        "sensor_msgs/msg/JointState",
        "sensor_msgs/msg/Range",
        "std_msgs/msg/Float32MultiArray",
        "std_msgs/msg/Float64MultiArray",
        "sensor_msgs/msg/PointCloud2",
        "nav_msgs/msg/Odometry",
        "geometry_msgs/msg/Twist",
        "geometry_msgs/msg/TwistStamped",
        "diagnostic_msgs/msg/DiagnosticArray",
        "rosgraph_msgs/msg/Clock",
        "std_msgs/msg/Empty",
    ] {
        assert!(types.contains(t), "{t} missing from {types:?}");
    }
    println!("types the node asks for: {types:#?}");
}

#[test]
fn without_neuroburst_msgs_the_node_runs_and_stops_safely() {
    let (result, log) = run(vec!["neuroburst_msgs"]);
    let summary = result.expect("a transport without neuroburst_msgs must not stop the node");
    assert_eq!(summary.malformed_messages, 0);
    assert!(log.publishers.iter().any(|(n, t)| n == "/diagnostics" && t == "diagnostic_msgs/msg/DiagnosticArray"));
    assert!(!log.publishers.iter().any(|(_, t)| t.starts_with("neuroburst_msgs/")));
    // the stop: every zero-stop command topic got its zero command, and /diagnostics said so;
    // the joints hold, and hold nothing before their first command
    for topic in ["/cmd_vel", "/cmd_vel_stamped", "/f32_out", "/f64_out", "/diagnostics"] {
        assert!(log.published.iter().any(|p| p == topic), "nothing published on {topic} at the stop: {:?}", log.published);
    }
    assert!(!log.published.iter().any(|p| p.starts_with("/joint_")), "{:?}", log.published);
}

#[test]
fn a_missing_standard_package_is_an_error_naming_it() {
    let (result, _) = run(vec!["nav_msgs"]);
    let e = format!("{:#}", result.unwrap_err());
    assert!(e.contains("/odom") && e.contains("nav_msgs/msg/Odometry"), "{e}");
}
