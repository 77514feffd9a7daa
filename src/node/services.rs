//! The node's ROS 2 services, on every transport (rcl through r2r, rmw_zenoh's queryables, the
//! DDS bridge's):
//! - the lifecycle's (`node.lifecycle`; lifecycle_msgs): `~/change_state`, `~/get_state`,
//!   `~/get_available_states`, `~/get_available_transitions`, and `~/transition_event`;
//! - the parameters' (rcl_interfaces): `~/list_parameters`, `~/get_parameters`,
//!   `~/set_parameters`, `~/set_parameters_atomically`, `~/describe_parameters`,
//!   `~/get_parameter_types`, and `/parameter_events`;
//! - `~/save_checkpoint` (std_srvs/Trigger), answered with the file written.
//!
//! A call is answered on the transport's thread from the shared state, but a transition and a
//! checkpoint: the burst thread does those ([`super::managed`]) and answers when done.

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use super::control::{Control, Update};
use super::lifecycle::{LifecycleState, Machine, Transition};
use super::settings::NodeSections;
use crate::ros::builtin::Time;
use crate::ros::lifecycle_msgs::{self as lc, TransitionEvent};
use crate::ros::rcl_interfaces::{self as rp, ListParametersResult, Parameter, ParameterDescriptor, ParameterEvent, ParameterValue};
use crate::ros::std_srvs::{Trigger, TriggerResponse};
use crate::ros::{decode, encode, RosMessage, RosService};
use crate::transport::{Call, CallHandler, Publisher, Qos, TopicSpec, Transport};

/// The node's parameters as ROS sees them: the configuration's keys (the command line
/// implements it over the configuration).
pub trait Parameters: Send {
    /// Every name, sorted.
    fn names(&self) -> Vec<String>;
    fn get(&self, name: &str) -> Option<ParameterValue>;
    fn describe(&self, name: &str) -> Option<ParameterDescriptor>;
    /// Set every one of `changes`, or none. `configured`: a brain is built, and only the keys that
    /// may change while it runs may; the others are read at the next configure. The refusal
    /// names the key and why.
    fn set(&mut self, changes: &[Parameter], configured: bool) -> Result<(), String>;
    /// The sections the node reads, as they are now.
    fn sections(&self) -> NodeSections;
    /// The genome file (the parameter `genome`).
    fn genome(&self) -> Option<PathBuf>;
    /// Whether configure restores the brain from the checkpoint (`--resume`).
    fn resume(&self) -> bool;
}

/// A transition asked for, for the burst thread; `reply` takes whether it succeeded.
pub struct TransitionRequest {
    pub transition: Transition,
    pub reply: Box<dyn FnOnce(bool) + Send>,
}

/// What the services and the burst thread share.
pub struct Shared {
    pub machine: Mutex<Machine>,
    pub params: Mutex<Box<dyn Parameters>>,
    pub control: Arc<Control>,
    pub fqn: String,
    commands: Mutex<Sender<TransitionRequest>>,
    transition_events: Mutex<Option<Box<dyn Publisher>>>,
    parameter_events: Mutex<Option<Box<dyn Publisher>>>,
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now() -> Time {
    Time::from_nanos(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64))
}

fn state_msg(s: LifecycleState) -> lc::State {
    lc::State { id: s.id(), label: s.label().into() }
}

fn transition_msg(t: Transition) -> lc::Transition {
    lc::Transition { id: t.id(), label: t.label().into() }
}

impl Shared {
    pub fn new(params: Box<dyn Parameters>, control: Arc<Control>, fqn: String, commands: Sender<TransitionRequest>) -> Shared {
        Shared {
            machine: Mutex::new(Machine::default()),
            params: Mutex::new(params),
            control,
            fqn,
            commands: Mutex::new(commands),
            transition_events: Mutex::new(None),
            parameter_events: Mutex::new(None),
        }
    }

    pub fn state(&self) -> LifecycleState {
        lock(&self.machine).state()
    }

    /// Begin transition `id` (or `label`); the burst thread gets it, and `reply` its outcome.
    /// Refused: `reply` hears false at once, and the error says why.
    pub fn begin(&self, id: u8, label: &str, reply: Box<dyn FnOnce(bool) + Send>) -> Result<(), String> {
        let t = match lock(&self.machine).begin(id, label) {
            Ok(t) => t,
            Err(e) => {
                reply(false);
                return Err(e.to_string());
            }
        };
        let (start, middle, _) = t.path();
        self.transition_event(transition_msg(t), start, middle);
        if start == LifecycleState::Active {
            self.control.interrupt.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        lock(&self.commands).send(TransitionRequest { transition: t, reply }).map_err(|e| {
            (e.0.reply)(false);
            "the node is stopping".to_string()
        })
    }

    /// The burst thread ended transition `t`: the node is in its goal (or back where it began).
    pub fn end(&self, t: Transition, ok: bool) -> LifecycleState {
        let middle = t.path().1;
        let state = lock(&self.machine).end(t, ok);
        // rcl_lifecycle's own transitions out of an intermediate state
        let (id, label) = if ok { (97, "transition_success") } else { (98, "transition_failure") };
        self.transition_event(lc::Transition { id, label: label.into() }, middle, state);
        tracing::info!("lifecycle: {} -> {}", t.label(), state.label());
        state
    }

    /// The bursts failed outside any transition (`cause`): ErrorProcessing, then `release` (the
    /// brain's stop commands and status), then unconfigured (finalized where `release` failed),
    /// each step published on `~/transition_event` as rcl_lifecycle does.
    pub fn error_processing(&self, cause: &str, release: impl FnOnce() -> bool) -> LifecycleState {
        let from = lock(&self.machine).fail();
        tracing::error!("lifecycle: {} failed: {cause}: processing the error (the brain is released)", from.label());
        self.transition_event(lc::Transition { id: 99, label: "transition_error".into() }, from, LifecycleState::ErrorProcessing);
        let ok = release();
        let state = lock(&self.machine).recovered(ok);
        let (id, label) = if ok { (97, "transition_success") } else { (98, "transition_failure") };
        self.transition_event(lc::Transition { id, label: label.into() }, LifecycleState::ErrorProcessing, state);
        tracing::info!("lifecycle: error processed -> {}", state.label());
        state
    }

    fn transition_event(&self, transition: lc::Transition, start: LifecycleState, goal: LifecycleState) {
        if let Some(p) = lock(&self.transition_events).as_mut() {
            let e =
                TransitionEvent { timestamp: now().nanos() as u64, transition, start_state: state_msg(start), goal_state: state_msg(goal) };
            if let Err(e) = p.publish(&encode(&e)) {
                tracing::warn!("{}/transition_event: {e}", self.fqn);
            }
        }
    }

    /// Whether a brain is built (only dynamic keys may change).
    fn configured(&self) -> bool {
        !matches!(self.state(), LifecycleState::Unconfigured | LifecycleState::Finalized)
    }

    /// Set `changes` (all or none), publish them on `/parameter_events`, and hand a running
    /// brain the settings that change.
    fn set(&self, changes: &[Parameter]) -> Result<(), String> {
        let configured = self.configured();
        let mut params = lock(&self.params);
        params.set(changes, configured)?;
        if configured {
            let s = params.sections();
            *lock(&self.control.update) = Some(Update { decoders: s.decoders, log_interval_s: s.node.log_interval_s });
            if changes.iter().any(|p| p.name == "backend.learning") {
                self.control.request_learning(s.backend.learning);
            }
        }
        drop(params);
        for p in changes {
            tracing::info!("parameter {} set", p.name);
        }
        if let Some(p) = lock(&self.parameter_events).as_mut() {
            let e = ParameterEvent { stamp: now(), node: self.fqn.clone(), changed_parameters: changes.to_vec(), ..Default::default() };
            if let Err(e) = p.publish(&encode(&e)) {
                tracing::warn!("/parameter_events: {e}");
            }
        }
        Ok(())
    }
}

/// A handler of service `S`: the request decoded, the answer encoded. A request that does not
/// decode is dropped (and logged).
fn typed<S: RosService>(f: impl Fn(S::Request, Box<dyn FnOnce(S::Response) + Send>) + Send + Sync + 'static) -> CallHandler {
    Arc::new(move |call: Call| match decode::<S::Request>(&call.request) {
        Ok(request) => {
            let reply = call.reply;
            f(request, Box::new(move |response| reply(encode(&response))))
        }
        Err(e) => tracing::warn!("a call that is not a {} request, dropped: {e}", S::TYPE),
    })
}

fn spec<S: RosService>(fqn: &str, name: &str) -> TopicSpec {
    TopicSpec::new(format!("{fqn}/{name}"), S::TYPE, crate::ros::type_hash::<S>(), Qos::COMMAND)
}

fn serve<S: RosService>(
    transport: &mut dyn Transport,
    fqn: &str,
    name: &str,
    f: impl Fn(S::Request, Box<dyn FnOnce(S::Response) + Send>) + Send + Sync + 'static,
) -> anyhow::Result<()> {
    let s = spec::<S>(fqn, name);
    transport.serve(&s, typed::<S>(f)).map_err(|e| anyhow::anyhow!("cannot serve {} ({}): {e}", s.name, S::TYPE))?;
    tracing::debug!("service {} ({})", s.name, S::TYPE);
    Ok(())
}

/// Serve the parameters' services and `~/save_checkpoint`, and with `lifecycle` the lifecycle's.
pub fn start(transport: &mut dyn Transport, shared: &Arc<Shared>, lifecycle: bool) -> anyhow::Result<()> {
    let fqn = shared.fqn.clone();
    let events =
        TopicSpec::new("/parameter_events", ParameterEvent::TYPE, crate::ros::type_hash::<ParameterEvent>(), Qos::PARAMETER_EVENTS);
    *lock(&shared.parameter_events) = Some(transport.publisher(&events)?);
    parameters(transport, shared)?;
    let s = shared.clone();
    serve::<Trigger>(transport, &fqn, "save_checkpoint", move |_, reply| {
        if !s.configured() {
            let message = format!("no brain to save: the node is {}", s.state().label());
            return reply(TriggerResponse { success: false, message });
        }
        s.control.request_save(Some(Box::new(move |written| {
            reply(match written {
                Ok(path) => TriggerResponse { success: true, message: path.display().to_string() },
                Err(why) => TriggerResponse { success: false, message: why },
            })
        })));
    })?;
    if lifecycle {
        lifecycle_services(transport, shared)?;
    }
    Ok(())
}

fn lifecycle_services(transport: &mut dyn Transport, shared: &Arc<Shared>) -> anyhow::Result<()> {
    let fqn = shared.fqn.clone();
    let events =
        TopicSpec::new(format!("{fqn}/transition_event"), TransitionEvent::TYPE, crate::ros::type_hash::<TransitionEvent>(), Qos::COMMAND);
    *lock(&shared.transition_events) = Some(transport.publisher(&events)?);
    let s = shared.clone();
    serve::<lc::ChangeState>(transport, &fqn, "change_state", move |r, reply| {
        let answer = Box::new(move |success| reply(lc::ChangeStateResponse { success }));
        if let Err(why) = s.begin(r.transition.id, &r.transition.label, answer) {
            tracing::warn!("{}/change_state: {why}", s.fqn);
        }
    })?;
    let s = shared.clone();
    serve::<lc::GetState>(transport, &fqn, "get_state", move |_, reply| {
        reply(lc::GetStateResponse { current_state: state_msg(s.state()) })
    })?;
    serve::<lc::GetAvailableStates>(transport, &fqn, "get_available_states", move |_, reply| {
        reply(lc::GetAvailableStatesResponse { available_states: LifecycleState::ALL.iter().map(|&s| state_msg(s)).collect() })
    })?;
    let s = shared.clone();
    serve::<lc::GetAvailableTransitions>(transport, &fqn, "get_available_transitions", move |_, reply| {
        let available = lock(&s.machine).available();
        let available_transitions = available
            .into_iter()
            .map(|t| lc::TransitionDescription {
                transition: transition_msg(t),
                start_state: state_msg(t.path().0),
                goal_state: state_msg(t.path().1),
            })
            .collect();
        reply(lc::GetAvailableTransitionsResponse { available_transitions })
    })?;
    Ok(())
}

/// `name` is listed under `prefixes` (all when empty), at most `depth` levels below (0: all).
fn listed(name: &str, prefixes: &[String], depth: u64) -> bool {
    let below = |rest: &str| depth == 0 || rest.split('.').count() as u64 <= depth;
    if prefixes.is_empty() {
        return below(name);
    }
    prefixes.iter().any(|p| name.strip_prefix(p.as_str()).and_then(|r| r.strip_prefix('.')).is_some_and(below))
}

fn parameters(transport: &mut dyn Transport, shared: &Arc<Shared>) -> anyhow::Result<()> {
    let fqn = shared.fqn.clone();
    let s = shared.clone();
    serve::<rp::ListParameters>(transport, &fqn, "list_parameters", move |r, reply| {
        let names: Vec<String> = lock(&s.params).names().into_iter().filter(|n| listed(n, &r.prefixes, r.depth)).collect();
        let mut prefixes: Vec<String> = names.iter().filter_map(|n| n.rsplit_once('.').map(|(p, _)| p.to_string())).collect();
        prefixes.dedup();
        reply(rp::ListParametersResponse { result: ListParametersResult { names, prefixes } })
    })?;
    let s = shared.clone();
    serve::<rp::GetParameters>(transport, &fqn, "get_parameters", move |r, reply| {
        let p = lock(&s.params);
        reply(rp::GetParametersResponse { values: r.names.iter().map(|n| p.get(n).unwrap_or_default()).collect() })
    })?;
    let s = shared.clone();
    serve::<rp::DescribeParameters>(transport, &fqn, "describe_parameters", move |r, reply| {
        let p = lock(&s.params);
        let descriptors = r
            .names
            .iter()
            .map(|n| p.describe(n).unwrap_or_else(|| ParameterDescriptor { name: n.clone(), ..Default::default() }))
            .collect();
        reply(rp::DescribeParametersResponse { descriptors })
    })?;
    let s = shared.clone();
    serve::<rp::GetParameterTypes>(transport, &fqn, "get_parameter_types", move |r, reply| {
        let p = lock(&s.params);
        reply(rp::GetParameterTypesResponse { types: r.names.iter().map(|n| p.get(n).map_or(0, |v| v.r#type)).collect() })
    })?;
    let s = shared.clone();
    serve::<rp::SetParameters>(transport, &fqn, "set_parameters", move |r, reply| {
        let results = r.parameters.iter().map(|p| answer(s.set(std::slice::from_ref(p)))).collect();
        reply(rp::SetParametersResponse { results })
    })?;
    let s = shared.clone();
    serve::<rp::SetParametersAtomically>(transport, &fqn, "set_parameters_atomically", move |r, reply| {
        reply(rp::SetParametersAtomicallyResponse { result: answer(s.set(&r.parameters)) })
    })?;
    Ok(())
}

fn answer(r: Result<(), String>) -> rp::SetParametersResult {
    match r {
        Ok(()) => rp::SetParametersResult { successful: true, reason: String::new() },
        Err(reason) => {
            tracing::warn!("parameter refused: {reason}");
            rp::SetParametersResult { successful: false, reason }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn listing_follows_prefixes_and_depth() {
        let l = super::listed;
        assert!(l("node.rate_hz", &[], 0) && l("node.rate_hz", &[], 2) && !l("node.reflex.bursts", &[], 2));
        assert!(l("node.reflex.bursts", &["node".into()], 0) && !l("node.reflex.bursts", &["node".into()], 1));
        assert!(!l("nodes.x", &["node".into()], 0) && l("node.x", &["node".into()], 1));
    }
}
