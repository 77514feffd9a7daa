//! diagnostic_msgs: node health on `/diagnostics`, as rqt_robot_monitor, Foxglove and the
//! diagnostic aggregator read it.

use super::builtin::Header;
use super::typesys::{ros_message, Byte};

ros_message! {
    /// One named value of a status.
    KeyValue = "diagnostic_msgs/msg/KeyValue" { key: String, value: String }
}

ros_message! {
    /// The state of one component: level, a one-line message, and values.
    DiagnosticStatus = "diagnostic_msgs/msg/DiagnosticStatus", constants ["byte OK=0", "byte WARN=1", "byte ERROR=2", "byte STALE=3"] {
        level: Byte,
        name: String,
        message: String,
        hardware_id: String,
        values: Vec<KeyValue>,
    }
}

ros_message! {
    /// The statuses published together on `/diagnostics`.
    DiagnosticArray = "diagnostic_msgs/msg/DiagnosticArray" { header: Header, status: Vec<DiagnosticStatus> }
}

/// `DiagnosticStatus.level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `OK`.
    Ok = 0,
    /// `WARN`.
    Warn = 1,
    /// `ERROR`.
    Error = 2,
    /// `STALE`.
    Stale = 3,
}

impl From<Level> for Byte {
    fn from(l: Level) -> Byte {
        Byte(l as u8)
    }
}
