//! The managed node's states and transitions, as ROS 2 defines them (design article "Managed
//! nodes", lifecycle_msgs): the ids and labels of lifecycle_msgs/msg/State and
//! lifecycle_msgs/msg/Transition, which transitions each primary state offers, and where a
//! transition goes on success and on failure. Pure: the node runs the work of each transition
//! (configure: the brain built and the subscriptions made; activate: the bursts start; ...) and
//! tells the machine how it went.

/// A state (lifecycle_msgs/msg/State ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LifecycleState {
    Unconfigured = 1,
    Inactive = 2,
    Active = 3,
    Finalized = 4,
    Configuring = 10,
    CleaningUp = 11,
    ShuttingDown = 12,
    Activating = 13,
    Deactivating = 14,
    ErrorProcessing = 15,
}

impl LifecycleState {
    pub fn id(self) -> u8 {
        self as u8
    }

    pub fn label(self) -> &'static str {
        match self {
            LifecycleState::Unconfigured => "unconfigured",
            LifecycleState::Inactive => "inactive",
            LifecycleState::Active => "active",
            LifecycleState::Finalized => "finalized",
            LifecycleState::Configuring => "configuring",
            LifecycleState::CleaningUp => "cleaningup",
            LifecycleState::ShuttingDown => "shuttingdown",
            LifecycleState::Activating => "activating",
            LifecycleState::Deactivating => "deactivating",
            LifecycleState::ErrorProcessing => "errorprocessing",
        }
    }

    /// Every state, primary first (what `~/get_available_states` answers).
    pub const ALL: [LifecycleState; 10] = [
        LifecycleState::Unconfigured,
        LifecycleState::Inactive,
        LifecycleState::Active,
        LifecycleState::Finalized,
        LifecycleState::Configuring,
        LifecycleState::CleaningUp,
        LifecycleState::ShuttingDown,
        LifecycleState::Activating,
        LifecycleState::Deactivating,
        LifecycleState::ErrorProcessing,
    ];
}

/// A transition a client may ask for (lifecycle_msgs/msg/Transition ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Transition {
    Configure = 1,
    Cleanup = 2,
    Activate = 3,
    Deactivate = 4,
    UnconfiguredShutdown = 5,
    InactiveShutdown = 6,
    ActiveShutdown = 7,
}

impl Transition {
    pub fn id(self) -> u8 {
        self as u8
    }

    pub fn label(self) -> &'static str {
        match self {
            Transition::Configure => "configure",
            Transition::Cleanup => "cleanup",
            Transition::Activate => "activate",
            Transition::Deactivate => "deactivate",
            Transition::UnconfiguredShutdown | Transition::InactiveShutdown | Transition::ActiveShutdown => "shutdown",
        }
    }

    /// The primary state it starts from, the intermediate state it runs in, and where it goes
    /// on success.
    pub fn path(self) -> (LifecycleState, LifecycleState, LifecycleState) {
        match self {
            Transition::Configure => (LifecycleState::Unconfigured, LifecycleState::Configuring, LifecycleState::Inactive),
            Transition::Cleanup => (LifecycleState::Inactive, LifecycleState::CleaningUp, LifecycleState::Unconfigured),
            Transition::Activate => (LifecycleState::Inactive, LifecycleState::Activating, LifecycleState::Active),
            Transition::Deactivate => (LifecycleState::Active, LifecycleState::Deactivating, LifecycleState::Inactive),
            Transition::UnconfiguredShutdown => (LifecycleState::Unconfigured, LifecycleState::ShuttingDown, LifecycleState::Finalized),
            Transition::InactiveShutdown => (LifecycleState::Inactive, LifecycleState::ShuttingDown, LifecycleState::Finalized),
            Transition::ActiveShutdown => (LifecycleState::Active, LifecycleState::ShuttingDown, LifecycleState::Finalized),
        }
    }

    pub const ALL: [Transition; 7] = [
        Transition::Configure,
        Transition::Cleanup,
        Transition::Activate,
        Transition::Deactivate,
        Transition::UnconfiguredShutdown,
        Transition::InactiveShutdown,
        Transition::ActiveShutdown,
    ];
}

/// Why a transition was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("transition {asked} is not available in state {state}")]
    NotAvailable { asked: String, state: &'static str },
    #[error("transition {0} is already under way")]
    Busy(&'static str),
}

/// Where the node is.
#[derive(Clone, Debug)]
pub struct Machine {
    state: LifecycleState,
}

impl Default for Machine {
    fn default() -> Self {
        Machine { state: LifecycleState::Unconfigured }
    }
}

impl Machine {
    pub fn state(&self) -> LifecycleState {
        self.state
    }

    /// The transitions the current state offers (what `~/get_available_transitions` answers).
    pub fn available(&self) -> Vec<Transition> {
        Transition::ALL.into_iter().filter(|t| t.path().0 == self.state).collect()
    }

    /// A client asks for transition `id` (a shutdown may be asked by any of its three ids, or by
    /// the label `shutdown`); the transition begins: the node is in its intermediate state.
    pub fn begin(&mut self, id: u8, label: &str) -> Result<Transition, Refused> {
        let primary = !matches!(self.state.id(), 10..=15);
        if !primary {
            return Err(Refused::Busy(self.state.label()));
        }
        let asked = if id == 0 && !label.is_empty() { label.to_string() } else { id.to_string() };
        let found = self.available().into_iter().find(|t| {
            let shutdown = matches!(id, 5..=7) && t.label() == "shutdown";
            t.id() == id || shutdown || (id == 0 && t.label() == label)
        });
        let t = found.ok_or(Refused::NotAvailable { asked, state: self.state.label() })?;
        self.state = t.path().1;
        Ok(t)
    }

    /// A failure outside any transition (the bursts ended with an error): from its primary state
    /// the node enters ErrorProcessing; the state it left.
    pub fn fail(&mut self) -> LifecycleState {
        std::mem::replace(&mut self.state, LifecycleState::ErrorProcessing)
    }

    /// The error was processed: unconfigured when the brain was released (`ok`), else finalized.
    pub fn recovered(&mut self, ok: bool) -> LifecycleState {
        self.state = if ok { LifecycleState::Unconfigured } else { LifecycleState::Finalized };
        self.state
    }

    /// The node's work for `t` ended: `Ok` takes it to the transition's goal; an error leaves it
    /// where it started (a configure that failed stays unconfigured, and says why), but a
    /// shutdown, which always finalizes.
    pub fn end(&mut self, t: Transition, ok: bool) -> LifecycleState {
        let (start, _, goal) = t.path();
        self.state = if ok || goal == LifecycleState::Finalized { goal } else { start };
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_walk_and_a_failed_configure() {
        let mut m = Machine::default();
        assert_eq!(m.available(), [Transition::Configure, Transition::UnconfiguredShutdown]);
        assert!(matches!(m.begin(3, ""), Err(Refused::NotAvailable { .. })));
        let t = m.begin(1, "").unwrap();
        assert_eq!(m.state(), LifecycleState::Configuring);
        assert!(matches!(m.begin(1, ""), Err(Refused::Busy("configuring"))));
        assert_eq!(m.end(t, false), LifecycleState::Unconfigured);
        let t = m.begin(0, "configure").unwrap();
        assert_eq!(m.end(t, true), LifecycleState::Inactive);
        let t = m.begin(Transition::Activate.id(), "").unwrap();
        assert_eq!(m.end(t, true), LifecycleState::Active);
        let t = m.begin(4, "").unwrap();
        assert_eq!(m.end(t, true), LifecycleState::Inactive);
        let t = m.begin(3, "").unwrap();
        assert_eq!(m.end(t, true), LifecycleState::Active);
        // any of the three shutdown ids from any primary state, and a shutdown always finalizes
        let t = m.begin(5, "").unwrap();
        assert_eq!(t, Transition::ActiveShutdown);
        assert_eq!(m.end(t, false), LifecycleState::Finalized);
        assert!(m.available().is_empty());
    }

    #[test]
    fn a_failure_while_active_is_processed_into_unconfigured() {
        let mut m = Machine::default();
        for id in [1, 3] {
            let t = m.begin(id, "").unwrap();
            m.end(t, true);
        }
        assert_eq!(m.fail(), LifecycleState::Active);
        assert_eq!(m.state(), LifecycleState::ErrorProcessing);
        assert!(matches!(m.begin(4, ""), Err(Refused::Busy("errorprocessing"))));
        assert_eq!(m.recovered(true), LifecycleState::Unconfigured);
        assert_eq!(m.available(), [Transition::Configure, Transition::UnconfiguredShutdown]);
    }

    #[test]
    fn ids_and_labels_are_lifecycle_msgs() {
        let ids: Vec<(u8, &str)> = LifecycleState::ALL.iter().map(|s| (s.id(), s.label())).collect();
        assert_eq!(ids[..4], [(1, "unconfigured"), (2, "inactive"), (3, "active"), (4, "finalized")]);
        assert_eq!(ids[9], (15, "errorprocessing"));
        assert_eq!(Transition::ActiveShutdown.id(), 7);
    }
}
