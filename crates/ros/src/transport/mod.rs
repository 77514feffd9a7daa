//! Transports move CDR bytes between the node and the robot. They all implement [`Transport`]:
//! publish the CDR bytes of one message type on a topic, and deliver the samples of a subscribed
//! topic to a callback. Nothing here knows the message contents; the codecs do.
//!
//! - [`zenoh`]: a Zenoh session in the rmw_zenoh format (ROS 2 Jazzy+ robots) or the
//!   zenoh-bridge-ros2dds format;
//! - `r2r` (cargo feature `ros2`): the robot's own ROS 2 through rcl.

pub mod names;
#[cfg(feature = "ros2")]
pub mod r2r;
pub mod select;
pub mod topic;
pub mod zenoh;

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use topic::{Qos, Reliability, TopicSpec};

/// Which transport carries the node's topics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// A Zenoh session (see the `zenoh` section); no ROS install needed.
    #[default]
    Zenoh,
    /// The robot's ROS 2 through r2r (needs the `ros2` cargo feature and a sourced ROS 2).
    Ros2,
}

/// The rmw_zenoh attachment of a received sample, or why there is none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachmentStatus {
    /// The transport carries no attachment (zenoh-bridge-ros2dds, r2r).
    NotExpected,
    /// A well-formed 33-byte rmw_zenoh attachment.
    /// A well-formed 33-byte rmw_zenoh attachment.
    Valid {
        /// The publisher's sequence number.
        seq: i64,
        /// When it was published (ns).
        source_timestamp_ns: i64,
        /// The publisher's gid.
        gid: [u8; 16],
    },
    /// rmw_zenoh format, but the sample had no attachment.
    Missing,
    /// rmw_zenoh format, but the attachment is not the 33-byte layout.
    Malformed,
}

/// One received message: its topic, its CDR bytes (header included) and what came with it.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The topic as subscribed (the resolved ROS name, e.g. `/scan`).
    pub topic: Arc<str>,
    /// The CDR bytes, header included.
    pub payload: Vec<u8>,
    /// The rmw_zenoh attachment, as found.
    pub attachment: AttachmentStatus,
    /// When the transport handed the sample over.
    pub received: Instant,
}

/// Called from the transport's own threads for every sample of a subscribed topic; must not block.
pub type SampleHandler = Arc<dyn Fn(Sample) + Send + Sync>;

/// A subscription: its samples stop coming when it is dropped.
pub struct Subscription(#[allow(dead_code)] Box<dyn std::any::Any + Send>);

impl Subscription {
    /// A subscription whose samples stop when `holds` (the transport's handle) is dropped.
    pub fn new(holds: impl std::any::Any + Send) -> Subscription {
        Subscription(Box::new(holds))
    }
}

/// One call of a served service: the request's CDR bytes (header included) and the answer's way
/// back, to be taken once, from any thread, now or later (a configure that builds the brain
/// answers seconds later).
pub struct Call {
    /// The request's CDR bytes, header included.
    pub request: Vec<u8>,
    /// Sends the reply's CDR bytes (once).
    pub reply: Box<dyn FnOnce(Vec<u8>) + Send>,
}

/// Called from the transport's own threads for every call of a served service; must not block
/// (it answers through [`Call::reply`]).
pub type CallHandler = Arc<dyn Fn(Call) + Send + Sync>;

/// Errors of the transports.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("zenoh: {0}")]
    /// Zenoh failed.
    Zenoh(String),
    #[error("ros2: {0}")]
    /// r2r (rcl) failed.
    Ros2(String),
    #[error("topic {topic:?}: {message}")]
    /// A topic could not be created or used.
    Topic {
        /// The topic.
        topic: String,
        /// What failed.
        message: String,
    },
    #[error("{0}")]
    /// The transport cannot do what was asked.
    Unsupported(String),
}

/// Why a ROS 2 build (r2r) cannot create a topic of `type_name`, and the package that provides it.
pub fn missing_type(type_name: &str) -> String {
    let pkg = type_name.split('/').next().unwrap_or_default();
    format!(
        "type {type_name} is not in this build of r2r: install the ROS 2 package {pkg} (e.g. ros-$ROS_DISTRO-{}), source it, and \
         rebuild neuroburst (r2r generates its bindings from the sourced ROS 2 at build time)",
        pkg.replace('_', "-")
    )
}

/// Publishes the CDR bytes of one topic.
pub trait Publisher: Send {
    /// Publish one message (CDR bytes, header included).
    fn publish(&mut self, cdr: &[u8]) -> Result<(), TransportError>;
}

/// The one small trait every transport implements.
pub trait Transport: Send {
    /// A one-line description for the logs (mode, endpoints, format).
    fn describe(&self) -> String;
    /// Announce a publisher of `topic` (liveliness token, rcl publisher, ...).
    fn publisher(&mut self, topic: &TopicSpec) -> Result<Box<dyn Publisher>, TransportError>;
    /// Deliver every sample of `topic` to `handler` until the subscription is dropped.
    fn subscribe(&mut self, topic: &TopicSpec, handler: SampleHandler) -> Result<Subscription, TransportError>;
    /// Serve `service` (its `type_name` a `pkg/srv/Type`, its type hash the service's): every
    /// call goes to `handler`.
    fn serve(&mut self, service: &TopicSpec, handler: CallHandler) -> Result<(), TransportError>;
    /// How often the transport lost every connection to the robot (router and peers) so far;
    /// None where it cannot tell (rcl keeps that to itself).
    fn link_losses(&self) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_missing_type_names_the_package_to_install() {
        let m = super::missing_type("diagnostic_msgs/msg/DiagnosticArray");
        assert!(m.contains("diagnostic_msgs/msg/DiagnosticArray") && m.contains("ros-$ROS_DISTRO-diagnostic-msgs"), "{m}");
    }
}
