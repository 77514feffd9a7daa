//! geometry_msgs.

use super::builtin::Header;
use super::typesys::{ros_message, Array};

ros_message! {
    Vector3 = "geometry_msgs/msg/Vector3" { x: f64, y: f64, z: f64 }
}

ros_message! {
    Point = "geometry_msgs/msg/Point" { x: f64, y: f64, z: f64 }
}

ros_message! {
    /// Note: `Default` is all zeros (ROS's default has w = 1).
    Quaternion = "geometry_msgs/msg/Quaternion" { x: f64, y: f64, z: f64, w: f64 }
}

ros_message! {
    Pose = "geometry_msgs/msg/Pose" { position: Point, orientation: Quaternion }
}

ros_message! {
    PoseWithCovariance = "geometry_msgs/msg/PoseWithCovariance" { pose: Pose, covariance: Array<f64, 36> }
}

ros_message! {
    /// Velocity: linear (m/s) and angular (rad/s).
    Twist = "geometry_msgs/msg/Twist" { linear: Vector3, angular: Vector3 }
}

ros_message! {
    TwistStamped = "geometry_msgs/msg/TwistStamped" { header: Header, twist: Twist }
}

ros_message! {
    TwistWithCovariance = "geometry_msgs/msg/TwistWithCovariance" { twist: Twist, covariance: Array<f64, 36> }
}
