//! neuroburst's own messages, the interface package `neuroburst_msgs` in `msg/` (its `.msg` files
//! are the source of truth for rosidl; a test checks that these definitions match them).

use super::builtin::Time;
use super::typesys::ros_message;

ros_message! {
    /// What one burst did (`msg/BurstActivity.msg`): published once per burst.
    BurstActivity = "neuroburst_msgs/msg/BurstActivity" {
        burst: u64,
        stamp: Time,
        fired_total: u64,
        area_ids: Vec<String>,
        fired: Vec<u32>,
    }
}

ros_message! {
    /// What the live node did since its previous BurstStats (`msg/BurstStats.msg`): published at
    /// `node.stats_rate_hz` on `node.stats_topic`.
    BurstStats = "neuroburst_msgs/msg/BurstStats" {
        /// Number of the last burst run (the first burst is 1).
        burst: u64,
        /// Bursts run since the previous BurstStats.
        bursts: u32,
        /// Duration of the last burst (microseconds).
        burst_duration_us: f32,
        /// Longest burst since the previous BurstStats (microseconds).
        burst_duration_max_us: f32,
        /// The motor areas read back, then "all".
        area_ids: Vec<String>,
        /// Neurons of each of them that fired in the last burst (same order).
        fired: Vec<u32>,
        /// Totals since the start: bursts that ended after their deadline.
        missed_deadlines: u64,
        /// Sensor messages dropped: replaced before a burst used them, malformed, or without a
        /// valid rmw_zenoh attachment.
        dropped_messages: u64,
        /// Of those, the ones that could not be decoded.
        malformed_messages: u64,
        /// The node's sensor -> motor latency since the previous BurstStats: messages measured.
        latency_samples: u32,
        /// From a message's arrival to the publication of the burst after its own (microseconds).
        latency_p50_us: f32,
        latency_p99_us: f32,
        latency_max_us: f32,
    }
}
