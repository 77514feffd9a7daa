//! nav_msgs.

use super::builtin::Header;
use super::geometry_msgs::{PoseWithCovariance, TwistWithCovariance};
use super::typesys::ros_message;

ros_message! {
    Odometry = "nav_msgs/msg/Odometry" {
        header: Header,
        child_frame_id: String,
        pose: PoseWithCovariance,
        twist: TwistWithCovariance,
    }
}
