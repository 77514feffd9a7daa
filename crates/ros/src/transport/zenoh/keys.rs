//! Zenoh key expressions: data keys in the rmw_zenoh and zenoh-bridge-ros2dds formats, and the
//! rmw_zenoh liveliness tokens (graph discovery) with their QoS field.

use serde::{Deserialize, Serialize};

use super::super::{Qos, Reliability, TopicSpec};

/// How ROS topics appear as Zenoh keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum KeyFormat {
    /// rmw_zenoh (ROS 2 Jazzy+): `<domain>/<topic>/<type>/<hash>`, attachment on every sample,
    /// liveliness tokens.
    #[default]
    Rmw,
    /// zenoh-bridge-ros2dds: `<topic>` (the namespace included), plain CDR, no attachment.
    Ros2dds,
}

/// Data key of `topic` for publishing.
pub fn data_key(format: KeyFormat, domain: u32, topic: &TopicSpec) -> String {
    let name = topic.name.trim_start_matches('/');
    match format {
        KeyFormat::Rmw => format!("{domain}/{name}/{}/{}", topic.dds_type(), topic.type_hash),
        KeyFormat::Ros2dds => name.to_string(),
    }
}

/// Data key of `topic` for subscribing: rmw_zenoh accepts any hash (`*`), so a robot on a
/// slightly different message definition is still heard (and its hash shows in the graph).
pub fn subscription_key(format: KeyFormat, domain: u32, topic: &TopicSpec) -> String {
    let name = topic.name.trim_start_matches('/');
    match format {
        KeyFormat::Rmw => format!("{domain}/{name}/{}/*", topic.dds_type()),
        KeyFormat::Ros2dds => name.to_string(),
    }
}

/// `/robot1/scan` -> `%robot1%scan`; empty -> `%`.
pub fn mangle(name: &str) -> String {
    if name.is_empty() || name == "/" {
        return "%".into();
    }
    name.replace('/', "%")
}

/// The QoS field of a liveliness token: a delta from rmw_zenoh's defaults (reliable, volatile,
/// keep last 42, infinite deadline, lifespan and lease), so reliable depth 10 is `::,10:,:,:,,`.
pub fn qos_field(qos: &Qos) -> String {
    let reliability = match qos.reliability {
        Reliability::Reliable => "",
        Reliability::BestEffort => "2",
    };
    let depth = if qos.depth == 42 { String::new() } else { qos.depth.to_string() };
    format!("{reliability}::,{depth}:,:,:,,")
}

/// The node's identity in the graph.
#[derive(Clone, Debug)]
pub struct NodeIdentity {
    /// The ROS domain id.
    pub domain: u32,
    /// The session's Zenoh id, hex.
    pub zid: String,
    /// The node's id within the session.
    pub node_id: u64,
    /// `/` or `/robot1`.
    pub namespace: String,
    /// The node's name.
    pub name: String,
}

/// Entity kinds of rmw_zenoh liveliness tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityKind {
    /// A publisher.
    Publisher,
    /// A subscription.
    Subscription,
    /// A service server (a queryable).
    Service,
}

impl NodeIdentity {
    /// `@ros2_lv/<domain>/<zid>/<nid>/<nid>/NN/%/<ns>/<node>`.
    pub fn node_token(&self) -> String {
        format!("@ros2_lv/{}/{}/{}/{}/NN/%/{}/{}", self.domain, self.zid, self.node_id, self.node_id, mangle(&self.namespace), self.name)
    }

    /// `@ros2_lv/<domain>/<zid>/<nid>/<eid>/<MP|MS|SS>/%/<ns>/<node>/<topic>/<type>/<hash>/<qos>`.
    pub fn entity_token(&self, entity_id: u64, kind: EntityKind, topic: &TopicSpec) -> String {
        let kind = match kind {
            EntityKind::Publisher => "MP",
            EntityKind::Subscription => "MS",
            EntityKind::Service => "SS",
        };
        format!(
            "@ros2_lv/{}/{}/{}/{}/{}/%/{}/{}/{}/{}/{}/{}",
            self.domain,
            self.zid,
            self.node_id,
            entity_id,
            kind,
            mangle(&self.namespace),
            self.name,
            mangle(&topic.name),
            topic.dds_type(),
            topic.type_hash,
            qos_field(&topic.qos)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWIST: &str = "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a";

    #[test]
    fn data_keys() {
        let t = TopicSpec::new("/cmd_vel", "geometry_msgs/msg/Twist", TWIST, Qos::COMMAND);
        assert_eq!(data_key(KeyFormat::Rmw, 0, &t), format!("0/cmd_vel/geometry_msgs::msg::dds_::Twist_/{TWIST}"));
        assert_eq!(subscription_key(KeyFormat::Rmw, 3, &t), "3/cmd_vel/geometry_msgs::msg::dds_::Twist_/*");
        let t = TopicSpec::new("/robot1/cmd_vel", "geometry_msgs/msg/Twist", TWIST, Qos::COMMAND);
        assert_eq!(data_key(KeyFormat::Ros2dds, 0, &t), "robot1/cmd_vel");
    }

    #[test]
    fn qos_fields() {
        assert_eq!(qos_field(&Qos::COMMAND), "::,10:,:,:,,");
        assert_eq!(qos_field(&Qos::SENSOR), "2::,5:,:,:,,");
    }

    #[test]
    fn tokens() {
        let id = NodeIdentity { domain: 0, zid: "a1b2".into(), node_id: 0, namespace: "/".into(), name: "brain".into() };
        assert_eq!(id.node_token(), "@ros2_lv/0/a1b2/0/0/NN/%/%/brain");
        let t = TopicSpec::new("/cmd_vel", "geometry_msgs/msg/Twist", TWIST, Qos::COMMAND);
        assert_eq!(
            id.entity_token(3, EntityKind::Publisher, &t),
            format!("@ros2_lv/0/a1b2/0/3/MP/%/%/brain/%cmd_vel/geometry_msgs::msg::dds_::Twist_/{TWIST}/::,10:,:,:,,")
        );
        let s = TopicSpec::new("/brain/get_state", "lifecycle_msgs/srv/GetState", "RIHS01_x", Qos::COMMAND);
        assert_eq!(
            id.entity_token(4, EntityKind::Service, &s),
            "@ros2_lv/0/a1b2/0/4/SS/%/%/brain/%brain%get_state/lifecycle_msgs::srv::dds_::GetState_/RIHS01_x/::,10:,:,:,,"
        );
        assert_eq!(data_key(KeyFormat::Rmw, 0, &s), "0/brain/get_state/lifecycle_msgs::srv::dds_::GetState_/RIHS01_x");
        let id = NodeIdentity { namespace: "/robot1".into(), ..id };
        assert_eq!(id.node_token(), "@ros2_lv/0/a1b2/0/0/NN/%/%robot1/brain");
    }
}
