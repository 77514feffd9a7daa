//! Choosing and opening a transport from the configuration.

use super::zenoh::{ZenohConfig, ZenohTransport};
use super::TransportKind;
use super::{Transport, TransportError};

/// Open a transport of `kind` for the node `name` in `namespace` on ROS domain `domain` (Zenoh's
/// session from the `zenoh` section).
pub fn open(
    kind: TransportKind,
    zenoh: &ZenohConfig,
    name: &str,
    namespace: &str,
    domain: u32,
) -> Result<Box<dyn Transport>, TransportError> {
    let namespace = super::names::normalize_namespace(namespace).map_err(TransportError::Unsupported)?;
    match kind {
        TransportKind::Zenoh => Ok(Box::new(ZenohTransport::open(zenoh, domain, &namespace, name)?)),
        TransportKind::Ros2 => open_ros2(name, &namespace, domain),
    }
}

#[cfg(feature = "ros2")]
fn open_ros2(name: &str, namespace: &str, domain: u32) -> Result<Box<dyn Transport>, TransportError> {
    Ok(Box::new(super::r2r::R2rTransport::open(name, namespace, domain)?))
}

#[cfg(not(feature = "ros2"))]
fn open_ros2(_name: &str, _namespace: &str, _domain: u32) -> Result<Box<dyn Transport>, TransportError> {
    Err(TransportError::Unsupported(
        "this neuroburst was built without the ros2 transport: rebuild with `--features ros2` in a shell with a sourced ROS 2, \
         or use --transport zenoh"
            .into(),
    ))
}
