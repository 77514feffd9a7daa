//! Choosing and opening a transport from the configuration.

use super::zenoh::ZenohTransport;
use super::TransportKind;
use super::{Transport, TransportError};
use crate::config::Config;

/// Open the transport that `config.node.transport` names.
pub fn open(config: &Config) -> Result<Box<dyn Transport>, TransportError> {
    let n = &config.node;
    let namespace = super::names::normalize_namespace(&n.namespace).map_err(TransportError::Unsupported)?;
    match n.transport {
        TransportKind::Zenoh => Ok(Box::new(ZenohTransport::open(&config.zenoh, n.domain, &namespace, &n.name)?)),
        TransportKind::Ros2 => open_ros2(&n.name, &namespace, n.domain),
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
