//! service_msgs: what every service's event message carries (ROS 2 service introspection), part
//! of every service's type description and so of its RIHS01 hash.

use super::builtin::Time;
use super::typesys::{ros_message, Array};

ros_message! {
    /// Who called, when, and which call (event_type: 0 request sent, 1 request received,
    /// 2 response sent, 3 response received).
    ServiceEventInfo = "service_msgs/msg/ServiceEventInfo" {
        event_type: u8,
        stamp: Time,
        // `char[16]` in the .msg, described (and sent) as uint8[16]
        client_gid: Array<u8, 16>,
        sequence_number: i64
    }
}
