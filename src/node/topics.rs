//! The live node's topics around the brain: the encoders' sensor topics in (latest message wins),
//! the decoders' motor topics out (their stop commands when every sensor is stale and when the
//! node stops), `/diagnostics` and BurstStats out, `/clock` in under `use_sim_time`, the burst
//! pacing and the problem log: the live node as the run loop's input and output
//! ([`crate::run::Io`]). `neuroburst node` and the io shard of a distributed brain run it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;

use super::control::Update;
use super::fatal::Fatal;
use super::problems::ProblemLog;
use super::publish::{MotorPublisher, OutputSide, PublishJob, PublisherLink};
use super::settings::{input_type, topic_max_bytes, topic_spec, Mode, NodeSetup};
use super::slots::{Input, Sensors, Slot, Trigger};
use super::Drive;
use crate::model::{Injections, Layout};
use crate::ros::diagnostic_msgs::DiagnosticArray;
use crate::ros::neuroburst_msgs::BurstStats;
use crate::ros::rosgraph_msgs::Clock as ClockMsg;
use crate::ros::RosMessage;
use crate::run::pace::{Pace, SimTime, Wake};
use crate::run::{BurstProducts, Intake, Io, Outputs};
use crate::transport::{names, Publisher, Qos, SampleHandler, Subscription, Transport};

pub struct LiveTopics {
    pub intake: Intake,
    pub outputs: Outputs,
    /// The sensor topics' slots and encoders.
    pub sensors: Sensors,
    /// The publisher thread (motor topics, stats, `/diagnostics`).
    pub publisher: PublisherLink,
    /// The node's fully qualified name (`/neuroburst`, `/robot1/brain1`).
    pub fqn: String,
    /// The backend's device, for `/diagnostics` (set before [`LiveTopics::start_publisher`]).
    pub hardware: String,
    /// The decoders' areas, whose firing the stats count.
    stat_areas: Vec<usize>,
    /// When the bursts run, and their ROS time.
    pub pace: Pace,
    rate: f64,
    /// The ROS time of the current burst.
    now_ns: u64,
    blind: bool,
    layout: Layout,
    /// Missed deadlines, for observers.
    missed: Arc<AtomicU64>,
    /// Extra input every burst (`bench-loop`'s W drive).
    drive: Option<Drive>,
    /// The live view's feed of fired neurons.
    feed: Option<crate::view::Feed>,
    /// The live view, for the topics of `view.topics`, and those topics (name, type).
    view: (ViewCell, Vec<(String, String)>),
    /// Settings that take effect at the next burst (dynamic parameters).
    updates: Option<Arc<std::sync::Mutex<Option<Update>>>>,
    /// The subscriptions feeding the slots and the clock: they end with these topics.
    _subscriptions: Vec<Subscription>,
    /// The transport, when this owns it (the io shard): its subscriptions feed the slots.
    transport: Option<Box<dyn Transport>>,
    describe: String,
    /// The first failure of the encoders or the publisher: it ends the bursts.
    fatal: Arc<Fatal>,
}

/// How long a burst under simulated time waits for the messages before its clock to be encoded.
const SETTLE: Duration = Duration::from_secs(1);

/// The node's fully qualified name: `/name` or `/namespace/name`.
pub fn fully_qualified(namespace: &str, name: &str) -> String {
    match names::normalize_namespace(namespace) {
        Ok(ns) if ns != "/" => format!("{ns}/{name}"),
        _ => format!("/{name}"),
    }
}

/// Announce a publisher of `type_name` on `topic`, or say why not: the error names the topic, the
/// type and the package that provides it.
fn announce(
    transport: &mut dyn Transport,
    topic: &str,
    nc: &super::NodeConfig,
    type_name: &str,
    qos: Qos,
) -> anyhow::Result<Box<dyn Publisher>> {
    let spec = topic_spec(topic, nc, type_name, qos)?;
    transport.publisher(&spec).map_err(|e| anyhow!("cannot publish {} ({type_name}): {e}", spec.name))
}

/// Where the live view will be once there is one.
type ViewCell = Arc<std::sync::OnceLock<Arc<crate::view::View>>>;

/// Subscribe the topics of `view.topics`: each message to the view once there is one, else nowhere.
/// Returns the topics (full name, type).
fn subscribe_view_topics(
    config: &NodeSetup,
    transport: &mut dyn Transport,
    view: &ViewCell,
    subscriptions: &mut Vec<Subscription>,
) -> anyhow::Result<Vec<(String, String)>> {
    let (nc, mut topics) = (config.node, vec![]);
    for t in &config.view.topics {
        let full = crate::ros::registry::lookup(&t.type_name).map_or(t.type_name.clone(), |i| i.name.to_string());
        let spec = topic_spec(&t.topic, nc, &full, Qos::SENSOR)?;
        let (cell, name, type_name) = (view.clone(), spec.name.clone(), spec.type_name.clone());
        let shown: SampleHandler = Arc::new(move |s| {
            if let Some(v) = cell.get() {
                v.ros(&name, &type_name, &s.payload, crate::run::pace::system_now_ns(), true);
            }
        });
        subscriptions.push(transport.subscribe(&spec, shown).map_err(|e| anyhow!("view.topics: cannot subscribe to {}: {e}", spec.name))?);
        tracing::info!("view only: {} ({})", spec.name, t.type_name);
        topics.push((spec.name, spec.type_name));
    }
    Ok(topics)
}

/// When the bursts run: on `/clock` (subscribed here, into `subscriptions`) under `use_sim_time`,
/// in reflex mode as soon as a trigger's message is encoded (`triggers` moves), else on the wall
/// clock's grid; `rate` bursts per (simulated) second.
fn pace_for(
    nc: &super::NodeConfig,
    rate: f64,
    triggers: Arc<Wake>,
    transport: &mut dyn Transport,
    subscriptions: &mut Vec<Subscription>,
) -> anyhow::Result<Pace> {
    Ok(if nc.use_sim_time {
        if nc.mode == Mode::Reflex {
            return Err(anyhow!("node.mode: reflex runs on the wall clock; with use_sim_time the bursts follow /clock (mode: clock)"));
        }
        let time = SimTime::new();
        let spec = topic_spec("/clock", nc, ClockMsg::TYPE, Qos::CLOCK)?;
        subscriptions
            .push(transport.subscribe(&spec, time.handler()).map_err(|e| anyhow!("cannot subscribe to /clock ({}): {e}", ClockMsg::TYPE))?);
        tracing::info!("use_sim_time: the bursts follow /clock at {rate} per simulated second");
        Pace::sim(rate, time)
    } else if nc.mode == Mode::Reflex {
        let r = &nc.reflex;
        let by = if r.triggers.is_empty() { "any input".to_string() } else { r.triggers.join(", ") };
        let news = if r.on_change { " that differs from its topic's last" } else { "" };
        tracing::info!(
            "reflex mode: {} bursts as soon as a message of {by}{news} is encoded, at most {} ahead of the {rate} Hz clock",
            r.bursts,
            r.lead
        );
        Pace::reflex(rate, r.bursts, r.lead, triggers, nc.realtime.busy_poll)
    } else {
        Pace::wall(rate, nc.realtime.busy_poll)
    })
}

/// The publisher thread's state: the decoders' motor topics, `/diagnostics` and BurstStats
/// announced on `transport`, the stats of the decoders' areas, the sensor topics' `slots`.
fn output_side(
    nc: &super::NodeConfig,
    outputs: &Outputs,
    transport: &mut dyn Transport,
    fqn: &str,
    slots: Vec<Arc<Slot>>,
    fatal: Arc<Fatal>,
) -> anyhow::Result<OutputSide> {
    let mut pubs = vec![];
    for d in &outputs.decoders {
        let publisher = announce(transport, d.config.topic(), nc, d.config.message_type(), Qos::COMMAND)?;
        let topic = topic_spec(d.config.topic(), nc, d.config.message_type(), Qos::COMMAND)?.name;
        tracing::info!("output area {} -> {topic} ({})", d.config.area(), d.config.message_type());
        pubs.push(MotorPublisher { topic, type_name: d.config.message_type(), publisher, published: 0, errors: 0, last_error: None });
    }
    let diagnostics_pub = match nc.diagnostics_topic.as_str() {
        "" => None,
        t => Some(announce(transport, t, nc, DiagnosticArray::TYPE, Qos::COMMAND)?),
    };
    // BurstStats is neuroburst's own type: a ROS 2 build without the neuroburst_msgs package
    // cannot publish it, and the node goes on with /diagnostics.
    let stats_pub = match nc.stats_topic.as_str() {
        "" => None,
        t => match announce(transport, t, nc, BurstStats::TYPE, Qos::COMMAND) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(
                    "{}; the stats go to {} only (build the neuroburst_msgs package beside neuroburst to get them)",
                    crate::errors::said_once(&e),
                    nc.diagnostics_topic
                );
                None
            }
        },
    };
    let stats = BurstStats {
        area_ids: outputs.decoders.iter().map(|d| d.config.area().to_string()).chain(["all".to_string()]).collect(),
        ..Default::default()
    };
    Ok(OutputSide {
        pubs,
        fqn: fqn.to_string(),
        hardware: String::new(),
        slots,
        stats_topic: names::resolve(&nc.stats_topic, &nc.namespace, &nc.name).unwrap_or_else(|_| nc.stats_topic.clone()),
        stats_pub,
        diagnostics_topic: nc.diagnostics_topic.clone(),
        diagnostics_pub,
        stats,
        stats_period: crate::time::seconds(1.0 / nc.stats_rate_hz),
        busy: nc.realtime.busy_poll,
        problems: ProblemLog::new(crate::time::seconds(nc.log_interval_s)),
        dropped_records: Arc::new(AtomicU64::new(0)),
        view: None,
        fatal,
    })
}

impl LiveTopics {
    /// Check the encoders and decoders of `config`, subscribe the encoders' topics and announce
    /// the decoders' (and BurstStats) on `transport`; the clock paces `rate` bursts per second.
    /// `who` names the process in the warnings ("the node", "the io shard").
    /// A helper thread that fails (an encoder, the publisher) raises `fatal`, which ends the bursts.
    pub fn open(
        config: &NodeSetup,
        layout: &Layout,
        transport: &mut dyn Transport,
        rate: f64,
        who: &str,
        fatal: Arc<Fatal>,
    ) -> anyhow::Result<LiveTopics> {
        let nc = config.node;
        crate::time::check_rate(rate, "node.rate_hz (or the genome's burst_rate_hz)").map_err(anyhow::Error::msg)?;
        if config.encoders.is_empty() && config.decoders.is_empty() {
            tracing::warn!("no encoders and no decoders in the configuration: {who} subscribes to nothing and publishes only its stats");
        }
        let mut intake = Intake::new(config.encoders, layout)?.quiet();
        let outputs = Outputs::new(config.decoders, layout).map_err(anyhow::Error::msg)?;
        for topic in nc.input_types.keys() {
            if !intake.topics().any(|t| t == topic) {
                return Err(anyhow!("node.input_types: no encoder reads topic {topic}"));
            }
        }
        let fqn = fully_qualified(&nc.namespace, &nc.name);
        tracing::info!("node {fqn}");
        let (wake, triggers) = (Wake::new(), Wake::new());
        if nc.mode == Mode::Reflex {
            nc.reflex.check(&intake.topics().collect::<Vec<_>>()).map_err(anyhow::Error::msg)?;
        }
        let (mut inputs, mut subscriptions) = (vec![], vec![]);
        for key in intake.topics().map(String::from).collect::<Vec<_>>() {
            let type_name = input_type(nc, &intake, &key)?;
            intake.check_type(&key, type_name)?;
            let spec = topic_spec(&key, nc, type_name, Qos::SENSOR)?;
            let slot = Slot::new(&spec.name, intake.counters(&key).expect("the intake's topic"), topic_max_bytes(nc, type_name));
            let trigger = (nc.mode == Mode::Reflex && !nc.use_sim_time && nc.reflex.triggered_by(&key))
                .then(|| Trigger { wake: triggers.clone(), on_change: nc.reflex.on_change });
            let encoder =
                slot.spawn_encoder(intake.take_encoders(&key), type_name, (wake.clone(), trigger), nc.realtime.busy_poll, fatal.clone())?;
            inputs.push(Input { key, type_name, slot: slot.clone(), encoder: Some(encoder) });
            subscriptions.push(
                transport.subscribe(&spec, slot.handler()).map_err(|e| anyhow!("cannot subscribe to {} ({type_name}): {e}", spec.name))?,
            );
            tracing::info!("input {} ({type_name})", spec.name);
        }
        let view = Arc::new(std::sync::OnceLock::<Arc<crate::view::View>>::new());
        let view = (view.clone(), subscribe_view_topics(config, transport, &view, &mut subscriptions)?);
        let pace = pace_for(nc, rate, triggers, transport, &mut subscriptions)?;
        let side = output_side(nc, &outputs, transport, &fqn, inputs.iter().map(|i| i.slot.clone()).collect(), fatal.clone())?;
        Ok(LiveTopics {
            stat_areas: outputs.decoders.iter().map(|d| d.area).collect(),
            intake,
            outputs,
            sensors: Sensors::new(inputs, wake),
            fqn,
            hardware: String::new(),
            publisher: PublisherLink::new(side),
            pace,
            rate,
            now_ns: 0,
            blind: false,
            layout: layout.clone(),
            missed: Arc::default(),
            drive: None,
            feed: None,
            view,
            updates: None,
            _subscriptions: subscriptions,
            transport: None,
            describe: format!("live topics at {rate} Hz over {}", transport.describe()),
            fatal,
        })
    }

    /// Count the missed deadlines into `missed` too, after every burst.
    pub fn count_missed(&mut self, missed: Arc<AtomicU64>) {
        self.missed = missed;
    }

    /// Add `drive` to every burst's input, before the sensors'.
    pub fn set_drive(&mut self, drive: Option<Drive>) {
        self.drive = drive;
    }

    /// Offer the live view every burst's fired neurons.
    pub fn set_feed(&mut self, feed: Option<crate::view::Feed>) {
        self.feed = feed;
    }

    /// Hold the transport whose subscriptions feed the slots (the io shard owns no other).
    pub fn keep(&mut self, transport: Box<dyn Transport>) {
        self.transport = Some(transport);
    }

    /// Show the sensor messages, motor messages and stats in the live view (before [`start`]).
    pub fn set_view(&mut self, view: &Arc<crate::view::View>) {
        for (topic, type_name) in &self.view.1 {
            view.advertise(topic, type_name);
        }
        let _ = self.view.0.set(view.clone());
        self.sensors.set_view(view);
        self.publisher.set_view(view);
    }

    /// Start the publisher thread (once; before the burst thread takes its real-time settings,
    /// so that the publisher does not inherit them).
    pub fn start_publisher(&mut self) -> anyhow::Result<()> {
        self.publisher.start(&self.hardware)
    }

    /// Bursts per (simulated) second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The ROS time of the current burst (bag time's counterpart: what outputs are stamped with).
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Whether every sensor topic is stale (the decoders send their stop commands).
    pub fn blind(&self) -> bool {
        self.blind
    }

    fn note_blind(&mut self) {
        let blind = self.intake.blind();
        if blind != self.blind {
            self.blind = blind;
            if blind {
                tracing::warn!("{}: every sensor topic is stale: the motor topics get their stop commands", self.fqn);
            } else {
                tracing::info!("{}: sensor input again: the brain drives the motor topics", self.fqn);
            }
        }
    }

    /// The node stops (a signal, or a fatal error): every motor topic gets its stop command (a
    /// zero Twist, the joints held), the last message the robot hears from this node; a fatal
    /// error goes to `/diagnostics` as ERROR. Waits for the publisher thread to send them.
    pub fn stop(&mut self, fatal: Option<&str>) {
        let time_ns = self.pace.now_ns();
        self.publisher.stop(self.outputs.stop_messages(time_ns), time_ns, fatal);
        self.sensors.close();
    }

    /// The bursts pause (deactivate): every motor topic gets its stop command; the publisher
    /// thread goes on, and the next activation bursts again.
    pub fn pause(&mut self) {
        let time_ns = self.pace.now_ns();
        self.publisher.pause(self.outputs.stop_messages(time_ns), time_ns);
    }

    /// Look for new settings before every burst's decoding.
    pub fn take_updates(&mut self, updates: Arc<std::sync::Mutex<Option<Update>>>) {
        self.updates = Some(updates);
    }

    /// Take new settings (dynamic parameters) from the next burst on: the decoders' scales and
    /// limits, the problem log's interval.
    pub fn apply(&mut self, u: &Update) {
        for (d, new) in self.outputs.decoders.iter_mut().zip(&u.decoders) {
            if d.config.area() == new.area() && d.config.topic() == new.topic() {
                d.config = new.clone();
            }
        }
        self.publisher.set_log_interval(crate::time::seconds(u.log_interval_s));
    }

    /// Hand a burst's products (begun at `start`) to the publisher thread and close the burst on
    /// the clock. Never waits: a record the publisher has no room for is dropped and counted.
    pub fn publish(&mut self, products: BurstProducts, start: Instant) {
        let record = PublishJob {
            burst: products.burst,
            time_ns: self.now_ns,
            fired: self.stat_areas.iter().map(|&a| products.fired_per_area[a]).chain([products.fired_total as u32]).collect(),
            motor: products.motor,
            arrivals: self.sensors.arrivals().to_vec(),
            work_us: start.elapsed().as_secs_f32() * 1e6,
            missed: self.pace.missed(),
            stale: self.intake.stale_flags(),
            blind: self.blind,
        };
        self.publisher.burst(record);
        self.pace.finished(Instant::now());
        self.missed.store(self.pace.missed(), Ordering::Relaxed);
    }

    /// Sensor messages dropped and, of those, malformed, since the start.
    pub fn dropped(&self) -> (u64, u64) {
        self.sensors.dropped()
    }
}

impl Io for LiveTopics {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn failed(&self) -> Option<String> {
        self.fatal.cause().map(String::from)
    }

    fn start(&mut self, c: u64) -> anyhow::Result<()> {
        if c > 0 {
            tracing::info!("the brain resumes from burst {c}; the live topics go on");
        }
        self.start_publisher()?;
        self.pace.start(0);
        Ok(())
    }

    /// Under simulated time, the burst also waits for the sensor messages that came before the
    /// clock that lets it run to be encoded (a transport hands them over in the order they were
    /// published): the burst takes them, whatever the threads' timing, so a simulation
    /// lock-stepped to the node runs the same way every time.
    fn wait(&mut self, t: u64, stop: &AtomicBool) -> Option<u64> {
        self.now_ns = self.pace.wait(t, stop)?;
        if matches!(self.pace, Pace::Sim { .. }) {
            self.sensors.settle(t, SETTLE);
        }
        Some(self.now_ns)
    }

    fn drive(&mut self, t: u64, out: &mut Injections) {
        if let Some(d) = self.drive.as_mut() {
            d(t, out);
        }
    }

    /// The latest message of every sensor topic, encoded.
    fn injection(&mut self, _t: u64, out: &mut Injections) -> anyhow::Result<()> {
        self.sensors.take_latest(&mut self.intake, self.now_ns);
        self.intake.append_injection(out, self.now_ns);
        self.note_blind();
        Ok(())
    }

    fn decode(&mut self, t: u64, fired: &[u32], fired_total: u64) -> anyhow::Result<BurstProducts> {
        if let Some(u) = self.updates.as_ref().and_then(|m| m.try_lock().ok()?.take()) {
            self.apply(&u);
        }
        if let Some(f) = self.feed.as_ref().filter(|f| f.wanted()) {
            f.offer(self.now_ns, fired);
        }
        Ok(self.outputs.decode(t, fired, fired_total, &self.layout, self.now_ns, self.blind))
    }

    fn hand_over(&mut self, _t: u64, products: BurstProducts, _fired: &[u32], started: Instant) -> anyhow::Result<()> {
        self.publish(products, started);
        Ok(())
    }

    fn finish(&mut self, fatal: Option<&str>) -> anyhow::Result<serde_json::Value> {
        self.stop(fatal);
        let (dropped, malformed) = self.dropped();
        let published: serde_json::Map<String, serde_json::Value> =
            self.publisher.report.published.iter().map(|(t, p, e)| (t.clone(), serde_json::json!({"published": p, "errors": e}))).collect();
        let received = self.sensors.received();
        Ok(serde_json::json!({
            "transport": self.describe,
            "received": received,
            "published": published,
            "missed_deadlines": self.pace.missed(),
            "dropped_messages": dropped,
            "malformed_messages": malformed,
            "link_losses": self.transport.as_ref().and_then(|t| t.link_losses()),
        }))
    }
}
