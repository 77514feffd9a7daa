//! What a transport needs to know about a topic: its resolved name, its ROS type name and RIHS01
//! hash, and its QoS.

pub use crate::ros::qos::{Qos, Reliability};

/// One topic as the transports see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicSpec {
    /// Fully resolved ROS name, starting with '/', e.g. `/robot1/scan` (see [`super::names`]).
    pub name: String,
    /// `pkg/msg/Type`, e.g. `sensor_msgs/msg/LaserScan`.
    pub type_name: String,
    /// `RIHS01_<64 hex>` (REP-2011).
    pub type_hash: String,
    /// Its QoS.
    pub qos: Qos,
}

impl TopicSpec {
    /// A topic of `type_name` (with its RIHS01 `type_hash`) at `qos`.
    pub fn new(name: impl Into<String>, type_name: impl Into<String>, type_hash: impl Into<String>, qos: Qos) -> TopicSpec {
        TopicSpec { name: name.into(), type_name: type_name.into(), type_hash: type_hash.into(), qos }
    }

    /// The DDS type name: `sensor_msgs/msg/LaserScan` -> `sensor_msgs::msg::dds_::LaserScan_`.
    pub fn dds_type(&self) -> String {
        let mut parts: Vec<&str> = self.type_name.split('/').collect();
        let ty = parts.pop().unwrap_or_default();
        format!("{}::dds_::{}_", parts.join("::"), ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dds_type_names() {
        let t = TopicSpec::new("/cmd_vel", "geometry_msgs/msg/Twist", "RIHS01_x", Qos::COMMAND);
        assert_eq!(t.dds_type(), "geometry_msgs::msg::dds_::Twist_");
    }
}
