//! builtin_interfaces and std_msgs.

use super::typesys::ros_message;

ros_message! {
    /// A point in time: seconds and nanoseconds since the epoch (for bags: the log time).
    Time = "builtin_interfaces/msg/Time" { sec: i32, nanosec: u32 }
}

impl Time {
    /// From nanoseconds (negative times are clamped to 0).
    pub fn from_nanos(ns: u64) -> Time {
        Time { sec: i32::try_from(ns / 1_000_000_000).unwrap_or(i32::MAX), nanosec: (ns % 1_000_000_000) as u32 }
    }
    /// The time in nanoseconds.
    pub fn nanos(&self) -> i64 {
        self.sec as i64 * 1_000_000_000 + self.nanosec as i64
    }
}

ros_message! {
    /// Stamp and coordinate frame of a measurement.
    Header = "std_msgs/msg/Header" { stamp: Time, frame_id: String }
}

ros_message! {
    /// No content: a trigger (`~/save_checkpoint`). One padding byte on the wire.
    Empty = "std_msgs/msg/Empty" {}
}

ros_message! {
    /// One dimension of a multi-array.
    MultiArrayDimension = "std_msgs/msg/MultiArrayDimension" { label: String, size: u32, stride: u32 }
}

ros_message! {
    /// Shape of a multi-array.
    MultiArrayLayout = "std_msgs/msg/MultiArrayLayout" { dim: Vec<MultiArrayDimension>, data_offset: u32 }
}

ros_message! {
    Float32MultiArray = "std_msgs/msg/Float32MultiArray" { layout: MultiArrayLayout, data: Vec<f32> }
}

ros_message! {
    Float64MultiArray = "std_msgs/msg/Float64MultiArray" { layout: MultiArrayLayout, data: Vec<f64> }
}

impl MultiArrayLayout {
    /// A one-dimensional layout of `n` elements named `label`.
    pub fn vector(label: &str, n: usize) -> MultiArrayLayout {
        MultiArrayLayout { dim: vec![MultiArrayDimension { label: label.into(), size: n as u32, stride: n as u32 }], data_offset: 0 }
    }
}
