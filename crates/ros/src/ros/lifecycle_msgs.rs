//! lifecycle_msgs: a managed node's states and transitions (`~/transition_event`, and the
//! answers of its lifecycle services).

use super::typesys::{ros_message, ros_service};

ros_message! {
    /// A state: its id (lifecycle_msgs/msg/State's constants) and label.
    State = "lifecycle_msgs/msg/State" { id: u8, label: String }
}

ros_message! {
    /// A transition: its id (lifecycle_msgs/msg/Transition's constants) and label.
    Transition = "lifecycle_msgs/msg/Transition" { id: u8, label: String }
}

ros_message! {
    /// A transition a state offers, and where it goes.
    TransitionDescription = "lifecycle_msgs/msg/TransitionDescription" { transition: Transition, start_state: State, goal_state: State }
}

ros_message! {
    /// A transition taken (`~/transition_event`); `timestamp` in nanoseconds.
    TransitionEvent = "lifecycle_msgs/msg/TransitionEvent" { timestamp: u64, transition: Transition, start_state: State, goal_state: State }
}

ros_service! {
    /// `~/change_state`: take a transition (by id, or by label when the id is 0).
    ChangeState = "lifecycle_msgs/srv/ChangeState" {
        ChangeStateRequest = "lifecycle_msgs/srv/ChangeState_Request" { transition: Transition }
        ChangeStateResponse = "lifecycle_msgs/srv/ChangeState_Response" { success: bool }
        ChangeStateEvent = "lifecycle_msgs/srv/ChangeState_Event"
    }
}

ros_service! {
    /// `~/get_state`.
    GetState = "lifecycle_msgs/srv/GetState" {
        GetStateRequest = "lifecycle_msgs/srv/GetState_Request" {}
        GetStateResponse = "lifecycle_msgs/srv/GetState_Response" { current_state: State }
        GetStateEvent = "lifecycle_msgs/srv/GetState_Event"
    }
}

ros_service! {
    /// `~/get_available_states`.
    GetAvailableStates = "lifecycle_msgs/srv/GetAvailableStates" {
        GetAvailableStatesRequest = "lifecycle_msgs/srv/GetAvailableStates_Request" {}
        GetAvailableStatesResponse = "lifecycle_msgs/srv/GetAvailableStates_Response" { available_states: Vec<State> }
        GetAvailableStatesEvent = "lifecycle_msgs/srv/GetAvailableStates_Event"
    }
}

ros_service! {
    /// `~/get_available_transitions`: those of the current state.
    GetAvailableTransitions = "lifecycle_msgs/srv/GetAvailableTransitions" {
        GetAvailableTransitionsRequest = "lifecycle_msgs/srv/GetAvailableTransitions_Request" {}
        GetAvailableTransitionsResponse = "lifecycle_msgs/srv/GetAvailableTransitions_Response" {
            available_transitions: Vec<TransitionDescription>
        }
        GetAvailableTransitionsEvent = "lifecycle_msgs/srv/GetAvailableTransitions_Event"
    }
}
