//! QoS profiles as rosbag2 stores them (`offered_qos_profiles`, YAML, Jazzy's string form).

/// Reliability and depth of a recorded topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Qos {
    /// Reliable (else best effort).
    pub reliable: bool,
    /// History depth.
    pub depth: u32,
}

impl Qos {
    /// Motor commands: reliable, depth 10.
    pub const COMMANDS: Qos = Qos { reliable: true, depth: 10 };
    /// Sensor data: best effort, depth 5.
    pub const SENSORS: Qos = Qos { reliable: false, depth: 5 };

    /// The `offered_qos_profiles` YAML: a list with one profile.
    pub fn to_yaml(self) -> String {
        let inf = "\n    sec: 9223372036\n    nsec: 854775807";
        format!(
            "- history: keep_last\n  depth: {}\n  reliability: {}\n  durability: volatile\n  deadline:{inf}\n  lifespan:{inf}\n  liveliness: automatic\n  liveliness_lease_duration:{inf}\n  avoid_ros_namespace_conventions: false\n",
            self.depth,
            if self.reliable { "reliable" } else { "best_effort" }
        )
    }
}
