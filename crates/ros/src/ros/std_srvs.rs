//! std_srvs: `Trigger`, a call without arguments that answers whether it worked and what it did
//! (the node's `~/save_checkpoint`).

use super::typesys::ros_service;

ros_service! {
    /// Do it: success, and a message (the checkpoint's path, or why not).
    Trigger = "std_srvs/srv/Trigger" {
        TriggerRequest = "std_srvs/srv/Trigger_Request" {}
        TriggerResponse = "std_srvs/srv/Trigger_Response" { success: bool, message: String }
        TriggerEvent = "std_srvs/srv/Trigger_Event"
    }
}
