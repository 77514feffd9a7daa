//! The QoS of a topic: what the transports offer and request, and what a bag records
//! (`offered_qos_profiles`, rosbag2's YAML, Jazzy's string form).

/// Reliability of a publisher or subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reliability {
    /// Reliable delivery.
    Reliable,
    /// Best effort (sensor data).
    BestEffort,
}

/// The QoS the node uses: keep-last `depth`, volatile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Qos {
    /// Reliable or best effort.
    pub reliability: Reliability,
    /// History depth.
    pub depth: usize,
}

impl Qos {
    /// Sensor subscriptions: best effort, depth 5 (sensor drivers publish best effort).
    pub const SENSOR: Qos = Qos { reliability: Reliability::BestEffort, depth: 5 };
    /// Motor commands and our own topics: reliable, depth 10.
    pub const COMMAND: Qos = Qos { reliability: Reliability::Reliable, depth: 10 };
    /// `/clock` under `use_sim_time`: best effort, depth 1 (rclcpp's ClockQoS; hears reliable
    /// publishers too).
    pub const CLOCK: Qos = Qos { reliability: Reliability::BestEffort, depth: 1 };
    /// `/parameter_events`: reliable, depth 1000 (rclcpp's ParameterEventsQoS).
    pub const PARAMETER_EVENTS: Qos = Qos { reliability: Reliability::Reliable, depth: 1000 };

    /// The `offered_qos_profiles` YAML: a list with one profile.
    pub fn to_yaml(self) -> String {
        let inf = "\n    sec: 9223372036\n    nsec: 854775807";
        format!(
            "- history: keep_last\n  depth: {}\n  reliability: {}\n  durability: volatile\n  deadline:{inf}\n  lifespan:{inf}\n  liveliness: automatic\n  liveliness_lease_duration:{inf}\n  avoid_ros_namespace_conventions: false\n",
            self.depth,
            if self.reliability == Reliability::Reliable { "reliable" } else { "best_effort" }
        )
    }
}
