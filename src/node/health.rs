//! The node's health as `diagnostic_msgs/DiagnosticArray` on `/diagnostics` (the ROS convention:
//! rqt_robot_monitor, Foxglove's diagnostics panel and the diagnostic aggregator show it): one
//! status named after the node's fully qualified name, with what BurstStats carries as values.

use crate::ros::builtin::{Header, Time};
use crate::ros::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue, Level};
use crate::ros::neuroburst_msgs::BurstStats;

/// What one diagnostics period saw, beyond the stats.
pub struct Health<'a> {
    /// The node's fully qualified name (`/neuroburst`, `/robot1/brain1`).
    pub node: &'a str,
    /// The backend's device (`cpu (2 threads)`, `NVIDIA H100 ...`).
    pub hardware: &'a str,
    pub stats: &'a BurstStats,
    /// Missed deadlines and dropped messages in this period (not totals).
    pub new_missed: u64,
    pub new_dropped: u64,
    /// Messages received so far, per sensor topic.
    pub received: Vec<(&'a str, u64)>,
    /// Sensor topics silent for their `stale_after`.
    pub stale: Vec<&'a str>,
    /// Every sensor topic is stale: the decoders send their stop commands.
    pub blind: bool,
    /// The node stops (its last status); `fatal` says why when an error stops it.
    pub stopping: bool,
    /// A fatal error: the node stops.
    pub fatal: Option<&'a str>,
}

impl Health<'_> {
    /// The level and one-line message of this period.
    pub fn summary(&self) -> (Level, String) {
        if let Some(e) = self.fatal {
            return (Level::Error, format!("stopped: {e}"));
        }
        if self.stopping {
            return (Level::Warn, "stopped: stop commands sent".into());
        }
        let mut warn = vec![];
        if self.blind {
            warn.push("no sensor input: stop commands sent".to_string());
        } else if !self.stale.is_empty() {
            warn.push(format!("stale: {}", self.stale.join(", ")));
        }
        if self.new_missed > 0 {
            warn.push(format!("{} missed deadlines", self.new_missed));
        }
        if self.new_dropped > 0 {
            warn.push(format!("{} dropped messages", self.new_dropped));
        }
        if warn.is_empty() {
            (Level::Ok, "bursting".into())
        } else {
            (Level::Warn, warn.join("; "))
        }
    }

    pub fn message(&self, time_ns: u64) -> DiagnosticArray {
        let (level, message) = self.summary();
        let s = self.stats;
        let kv = |k: &str, v: String| KeyValue { key: k.into(), value: v };
        let mut values = vec![
            kv("burst", s.burst.to_string()),
            kv("bursts in period", s.bursts.to_string()),
            kv("burst duration (us)", format!("{:.1}", s.burst_duration_us)),
            kv("longest burst in period (us)", format!("{:.1}", s.burst_duration_max_us)),
            kv("missed deadlines", s.missed_deadlines.to_string()),
            kv("dropped messages", s.dropped_messages.to_string()),
            kv("malformed messages", s.malformed_messages.to_string()),
            kv("sensor -> motor p50 (us)", format!("{:.0}", s.latency_p50_us)),
            kv("sensor -> motor p99 (us)", format!("{:.0}", s.latency_p99_us)),
            kv("sensor -> motor max (us)", format!("{:.0}", s.latency_max_us)),
        ];
        values.extend(s.area_ids.iter().zip(&s.fired).map(|(a, n)| kv(&format!("fired {a}"), n.to_string())));
        values.extend(self.received.iter().map(|(t, n)| kv(&format!("received {t}"), n.to_string())));
        values.push(kv("stale inputs", self.stale.join(", ")));
        DiagnosticArray {
            header: Header { stamp: Time::from_nanos(time_ns), frame_id: String::new() },
            status: vec![DiagnosticStatus {
                level: level.into(),
                name: format!("neuroburst: {}", self.node),
                message,
                hardware_id: self.hardware.into(),
                values,
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        let stats = BurstStats { area_ids: vec!["all".into()], fired: vec![3], ..Default::default() };
        let mut h = Health {
            node: "/robot1/brain1",
            hardware: "cpu",
            stats: &stats,
            new_missed: 0,
            new_dropped: 0,
            received: vec![("/scan", 7)],
            stale: vec![],
            blind: false,
            stopping: false,
            fatal: None,
        };
        assert_eq!(h.summary(), (Level::Ok, "bursting".into()));
        h.stale = vec!["/scan"];
        h.new_missed = 2;
        assert_eq!(h.summary(), (Level::Warn, "stale: /scan; 2 missed deadlines".into()));
        h.blind = true;
        assert_eq!(h.summary().1, "no sensor input: stop commands sent; 2 missed deadlines");
        h.stopping = true;
        assert_eq!(h.summary(), (Level::Warn, "stopped: stop commands sent".into()));
        h.fatal = Some("CUDA error");
        let m = h.message(1_500_000_000);
        assert_eq!(m.status[0].level.0, 2);
        assert_eq!(m.status[0].name, "neuroburst: /robot1/brain1");
        assert!(m.status[0].values.iter().any(|v| v.key == "fired all" && v.value == "3"));
        assert!(m.status[0].values.iter().any(|v| v.key == "received /scan" && v.value == "7"));
    }
}
