//! rosgraph_msgs: `/clock`, the simulation's time (`use_sim_time`).

use super::builtin::Time;
use super::typesys::ros_message;

ros_message! {
    /// The current simulated time, published by the simulator (or `ros2 bag play --clock`).
    Clock = "rosgraph_msgs/msg/Clock" { clock: Time }
}
