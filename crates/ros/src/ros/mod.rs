//! ROS 2 messages as CDR bytes, without ROS: typed messages ([`sensor_msgs`], [`geometry_msgs`],
//! [`builtin`] (std_msgs), [`nav_msgs`], [`lifecycle_msgs`], [`rcl_interfaces`], [`diagnostic_msgs`], [`rosgraph_msgs`], our own
//! [`neuroburst_msgs`]), their codec ([`cdr`]),
//! their `.msg` definitions and RIHS01 type hashes ([`typesys`]), and a registry by type name
//! ([`registry`]).
//!
//! Nothing here knows about the brain; the encoders and decoders translate.

pub mod builtin;
pub mod cdr;
pub mod diagnostic_msgs;
pub mod geometry_msgs;
pub mod lifecycle_msgs;
pub mod nav_msgs;
pub mod neuroburst_msgs;
pub mod qos;
pub mod rcl_interfaces;
pub mod registry;
pub mod rosgraph_msgs;
pub mod sensor_msgs;
pub mod service_msgs;
pub mod std_srvs;
pub mod typesys;

pub use cdr::CdrError;
pub use typesys::TypeInfo;

/// A message type with a CDR codec and a type description.
pub trait RosMessage: typesys::CdrField + Clone + Default + PartialEq + std::fmt::Debug {
    /// `pkg/msg/Type`.
    const TYPE: &'static str;
    /// The type's description (its fields, nested types, constants): what its hash covers.
    fn info() -> TypeInfo;
}

/// A service type (`pkg/srv/Type`): its request and response messages. Its [`RosMessage`] side
/// is its type description (request, response and event messages as fields), what its RIHS01
/// hash covers; no value of it goes on the wire.
pub trait RosService: RosMessage {
    /// The request message.
    type Request: RosMessage;
    /// The response message.
    type Response: RosMessage;
}

/// A payload that is not a valid message of the type it should be.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{type_name}: {error}")]
pub struct MsgError {
    /// `pkg/msg/Type`.
    pub type_name: &'static str,
    /// What was wrong.
    pub error: CdrError,
}

/// Serialize `msg` as CDR little endian, header included (what rmw and bags carry).
pub fn encode<M: RosMessage>(msg: &M) -> Vec<u8> {
    let mut w = cdr::CdrWriter::new();
    msg.write(&mut w);
    w.finish()
}

/// Deserialize a CDR payload (header included); never panics.
pub fn decode<M: RosMessage>(payload: &[u8]) -> Result<M, MsgError> {
    let err = |error| MsgError { type_name: M::TYPE, error };
    let mut r = cdr::CdrReader::new(payload).map_err(err)?;
    M::read(&mut r).map_err(err)
}

/// The RIHS01 type hash of `M` (REP-2011).
pub fn type_hash<M: RosMessage>() -> String {
    typesys::rihs01(&M::info())
}

/// The `ros2msg` definition of `M` with its dependencies (the MCAP schema).
pub fn definition<M: RosMessage>() -> String {
    typesys::msg_definition(&M::info())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_type_hashes() {
        assert_eq!(type_hash::<geometry_msgs::Twist>(), "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a");
        assert_eq!(type_hash::<sensor_msgs::LaserScan>(), "RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828");
    }

    #[test]
    fn definitions_list_dependencies_after_80_equals() {
        let d = definition::<geometry_msgs::TwistStamped>();
        assert!(d.starts_with("std_msgs/Header header\ngeometry_msgs/Twist twist\n"), "{d}");
        assert!(d.contains(&format!("{}\nMSG: builtin_interfaces/Time\nint32 sec\n", "=".repeat(80))), "{d}");
    }

    #[test]
    fn own_messages_match_the_msg_files() {
        fn check<M: RosMessage>(file: &str) {
            let lines: Vec<&str> = file.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
            let def = definition::<M>();
            let ours: Vec<&str> = def.split(&"=".repeat(80)).next().unwrap().lines().collect();
            assert_eq!(lines, ours, "{}", M::TYPE);
        }
        check::<neuroburst_msgs::BurstActivity>(include_str!("../../msg/BurstActivity.msg"));
        check::<neuroburst_msgs::BurstStats>(include_str!("../../msg/BurstStats.msg"));
    }

    #[test]
    fn empty_and_burst_stats_hashes() {
        // Both computed by rosbags 0.11.9 (`hash_rihs01`; BurstStats registered from msg/).
        assert_eq!(type_hash::<builtin::Empty>(), "RIHS01_20b625256f32d5dbc0d04fee44f43c41e51c70d3502f84b4a08e7a9c26a96312");
        assert_eq!(type_hash::<neuroburst_msgs::BurstStats>(), "RIHS01_88c2ba1c4c3bc698738b7eeea5c52f7bbf78593bcad8d1806aa49c043dd974ce");
        assert_eq!(encode(&builtin::Empty {}), vec![0, 1, 0, 0, 0]);
    }

    #[test]
    fn round_trip_and_errors_name_the_type() {
        let m = sensor_msgs::JointState { name: vec!["a".into(), "bc".into()], position: vec![1.0, 2.0], ..Default::default() };
        assert_eq!(decode::<sensor_msgs::JointState>(&encode(&m)).unwrap(), m);
        let e = decode::<sensor_msgs::Imu>(&[0, 1, 0, 0, 1]).unwrap_err().to_string();
        assert!(e.starts_with("sensor_msgs/msg/Imu: "), "{e}");
    }
}
