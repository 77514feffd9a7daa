//! neuroburst's own messages, defined in `msg/` (the `.msg` files are the source of truth for the
//! robot's rosidl package; a test checks that these definitions match them).

use super::builtin::Time;
use super::typesys::ros_message;

ros_message! {
    /// What one burst did (`msg/BurstActivity.msg`): published once per burst.
    BurstActivity = "neuroburst/msg/BurstActivity" {
        burst: u64,
        stamp: Time,
        fired_total: u64,
        area_ids: Vec<String>,
        fired: Vec<u32>,
    }
}
