//! A thread that dies stops the node: the publisher thread panics once (a transport's publisher
//! that panics on a burst's Twist); the node does not stay up with a silent motor topic: its
//! bursts end with the cause, every motor topic gets its stop command (the zero Twist), and
//! /diagnostics says ERROR with the cause, the last message the robot hears. A managed node goes
//! through ErrorProcessing to unconfigured instead, and can be shut down.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use neuroburst::config::Config;
use neuroburst::genome::Genome;
use neuroburst::node::{self, Control};
use neuroburst::ros::diagnostic_msgs::DiagnosticArray;
use neuroburst::ros::geometry_msgs::Twist;
use neuroburst::ros::{decode, RosMessage};
use neuroburst::transport::{CallHandler, Publisher, SampleHandler, Subscription, TopicSpec, Transport, TransportError};

const GENOME: &str = "name: drive
burst_rate_hz: 200
areas:
  - {id: _power, kind: core, dims: [1, 1, 1], neuron: {threshold: 0.1}}
  - {id: mot, kind: motor, dims: [2, 1, 1]}
morphologies:
  forward: {patterns: [[[0, 0, 0], [0, 0, 0]]]}
mappings:
  - {source: _power, destination: mot, morphology: forward, weight: 2}
";

const CONFIG: &str = "
decoders:
  - {kind: twist, area: mot, topic: cmd_vel, axes: [{axis: linear_x, scale: 0.5, limit: 1.0}]}
checkpoint: {on_shutdown: false, trigger_topic: ''}
node: {stats_rate_hz: 50}
backend: {kind: cpu, cpu_threads: 1}
";

type Log = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A transport whose `/cmd_vel` publisher panics on its `panic_at`-th message (only then).
struct Flaky {
    log: Log,
    panic_at: u64,
}

struct Pub {
    topic: String,
    log: Log,
    count: Arc<AtomicU64>,
    panic_at: u64,
}

impl Publisher for Pub {
    fn publish(&mut self, cdr: &[u8]) -> Result<(), TransportError> {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if self.topic == "/cmd_vel" && n == self.panic_at {
            panic!("the transport broke on message {n}");
        }
        self.log.lock().unwrap().push((self.topic.clone(), cdr.to_vec()));
        Ok(())
    }
}

impl Transport for Flaky {
    fn describe(&self) -> String {
        "flaky".into()
    }
    fn publisher(&mut self, t: &TopicSpec) -> Result<Box<dyn Publisher>, TransportError> {
        Ok(Box::new(Pub { topic: t.name.clone(), log: self.log.clone(), count: Arc::default(), panic_at: self.panic_at }))
    }
    fn subscribe(&mut self, _t: &TopicSpec, _handler: SampleHandler) -> Result<Subscription, TransportError> {
        Ok(Subscription::new(()))
    }
    fn serve(&mut self, _t: &TopicSpec, _handler: CallHandler) -> Result<(), TransportError> {
        Ok(())
    }
}

#[test]
fn a_publisher_that_panics_stops_the_node_with_its_stop_commands_and_the_cause() {
    let genome: Genome = Genome::from_yaml_str(GENOME).unwrap();
    let config: Config = serde_yaml::from_str(CONFIG).unwrap();
    let log = Log::default();
    let mut transport = Flaky { log: log.clone(), panic_at: 20 };
    let control = Arc::new(Control::default());
    let started = std::time::Instant::now();
    let result = node::run(&genome, config.node_setup(), false, &mut transport, control.clone(), None);
    let e = format!("{:#}", result.expect_err("the node must stop with the publisher's failure"));
    assert!(e.contains("the publisher thread") && e.contains("the transport broke on message 20"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the node took {:?} to stop", started.elapsed());
    let log = log.lock().unwrap();
    let twists: Vec<f64> = log.iter().filter(|(t, _)| t == "/cmd_vel").map(|(_, b)| decode::<Twist>(b).unwrap().linear.x).collect();
    // (the first burst carries _power's spikes to the motor area)
    assert!(twists.len() >= 19 && twists[1..19].iter().all(|&x| x > 0.0), "the brain drove before: {twists:?}");
    assert_eq!(twists.last(), Some(&0.0), "the last Twist is the stop command: {twists:?}");
    let (topic, last) = log.last().unwrap();
    assert_eq!(topic, "/diagnostics", "the final status is the last message");
    let d = decode::<DiagnosticArray>(last).unwrap();
    assert_eq!(d.status[0].level.0, 2, "ERROR: {d:?}");
    assert!(d.status[0].message.contains("the transport broke"), "{:?}", d.status[0].message);
    println!("stopped with: {e}; {} Twists, the last {:?}; {}", twists.len(), twists.last(), DiagnosticArray::TYPE);
}

/// The node's parameters for a managed run: the configuration's sections and the genome file.
struct Params {
    config: Config,
    genome: std::path::PathBuf,
}

impl neuroburst::node::services::Parameters for Params {
    fn names(&self) -> Vec<String> {
        vec![]
    }
    fn get(&self, _name: &str) -> Option<neuroburst::ros::rcl_interfaces::ParameterValue> {
        None
    }
    fn describe(&self, _name: &str) -> Option<neuroburst::ros::rcl_interfaces::ParameterDescriptor> {
        None
    }
    fn set(&mut self, _changes: &[neuroburst::ros::rcl_interfaces::Parameter], _configured: bool) -> Result<(), String> {
        Err("read-only here".into())
    }
    fn sections(&self) -> node::NodeSections {
        self.config.node_sections()
    }
    fn genome(&self) -> Option<std::path::PathBuf> {
        Some(self.genome.clone())
    }
    fn resume(&self) -> bool {
        false
    }
}

#[test]
fn a_managed_node_whose_publisher_panics_goes_through_error_processing_to_unconfigured() {
    use neuroburst::node::lifecycle::LifecycleState;
    use neuroburst::node::services::Shared;
    use neuroburst::ros::lifecycle_msgs::TransitionEvent;
    let dir = tempfile::tempdir().unwrap();
    let genome = dir.path().join("drive.yaml");
    std::fs::write(&genome, GENOME).unwrap();
    let config: Config = serde_yaml::from_str(CONFIG).unwrap();
    let log = Log::default();
    let mut transport = Flaky { log: log.clone(), panic_at: 20 };
    let control = Arc::new(Control::default());
    let (commands, requests) = std::sync::mpsc::channel();
    let shared = Arc::new(Shared::new(Box::new(Params { config, genome }), control.clone(), "/brain".into(), commands));
    node::services::start(&mut transport, &shared, true).unwrap();
    let s = shared.clone();
    let burster = std::thread::spawn(move || node::managed::run(s, &mut transport, requests, true));
    let wait_for = |want: LifecycleState| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while shared.state() != want {
            assert!(std::time::Instant::now() < end, "the node is {:?}, not {want:?}", shared.state());
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    shared.begin(1, "", Box::new(|_| {})).unwrap();
    wait_for(LifecycleState::Inactive);
    shared.begin(3, "", Box::new(|_| {})).unwrap();
    // the 20th Twist's publish panics: error processing, the brain released, unconfigured
    wait_for(LifecycleState::Unconfigured);
    let events: Vec<(u8, u8, u8)> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|(t, _)| t == "/brain/transition_event")
        .map(|(_, b)| decode::<TransitionEvent>(b).unwrap())
        .map(|e| (e.transition.id, e.start_state.id, e.goal_state.id))
        .collect();
    let (active, errorprocessing, unconfigured) =
        (LifecycleState::Active.id(), LifecycleState::ErrorProcessing.id(), LifecycleState::Unconfigured.id());
    assert!(events.contains(&(99, active, errorprocessing)) && events.contains(&(97, errorprocessing, unconfigured)), "{events:?}");
    let twists: Vec<f64> =
        log.lock().unwrap().iter().filter(|(t, _)| t == "/cmd_vel").map(|(_, b)| decode::<Twist>(b).unwrap().linear.x).collect();
    assert_eq!(twists.last(), Some(&0.0), "the stop command after the failure: {twists:?}");
    // still a node its manager can shut down
    shared.begin(5, "", Box::new(|_| {})).unwrap();
    burster.join().unwrap().expect("a managed node that processed its error ends cleanly at shutdown");
    assert_eq!(shared.state(), LifecycleState::Finalized);
}
