//! lifecycle_msgs: a managed node's states and transitions (`~/transition_event`, and the
//! answers of its lifecycle services).

use super::typesys::ros_message;

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
