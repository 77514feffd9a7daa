//! ROS 2 on the wire for neuroburst, without a ROS install: messages as CDR bytes, bags, the
//! transports that move them, and the encoders and decoders between messages and a brain.
//!
//! - [`ros`]: ROS 2 messages as CDR bytes, type hashes, `.msg` definitions;
//! - [`bag`]: rosbag2 bags (MCAP, sqlite3) read and MCAP written;
//! - [`transport`]: topics as CDR bytes over Zenoh (rmw_zenoh, zenoh-bridge-ros2dds) or r2r
//!   (feature `ros2`);
//! - [`encode`] / [`decode`]: sensor messages -> a cortical area's injections, motor firing ->
//!   messages.
//!
//! The model's modules are re-exported ([`model`], [`time`], ...).

#![warn(missing_docs)]

pub use neuroburst_model::{errors, genome, memory, model, progress, time};

pub mod bag;
pub mod decode;
pub mod encode;
pub mod ros;
pub mod transport;
