//! The bag replay (`neuroburst replay`): a bag drives the brain through the run loop
//! ([`crate::run::bursts`]), lock-stepped to bag time (on the clock's grid at the genome's
//! `burst_rate_hz`, or in reflex mode at the messages' log times too); each burst's motor
//! messages and activity message are recorded at its bag time. Nothing depends on the wall
//! clock, so two runs (and the CPU and CUDA backends) write the same bytes. [`bag_io`] is the
//! bag as the loop's input and output (the io shard of a distributed brain replays with it too);
//! [`plot`] draws what a replay did.

pub mod bag_io;
pub mod plot;

pub use bag_io::BagIo;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use crate::backend::Backend;
use crate::bag::{Bag, BagError, BagWriter};
use crate::decode::DecoderConfig;
use crate::encode::EncoderConfig;
use crate::genome::Genome;
use crate::model::Layout;
use crate::ros::neuroburst_msgs::BurstActivity;
use crate::ros::qos::Qos;
use crate::ros::{encode, registry, RosMessage};
use crate::run::intake::{self, Intake, TopicCounters};
use crate::run::outputs::{BurstProducts, Outputs};
use crate::run::pace::{Mode, ReflexConfig};
use crate::view::scene::Geometry;
use crate::view::{View, ViewConfig, POINTS_TOPIC, SCENE_TOPIC};
use foxglove::Encode;

/// Settings of `neuroburst replay` (the configuration's `replay` section).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayConfig {
    /// Topic of the per-burst activity (neuroburst_msgs/msg/BurstActivity); empty = not recorded.
    pub activity_topic: String,
    /// Stop after this many bursts; 0 = until the end of the bag.
    pub max_bursts: u64,
    /// Pace of the replay against the wall clock: 0 = as fast as possible, 1 = bag time, 2 = twice
    /// as fast. Never changes the output.
    pub pace: f64,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig { activity_topic: "/neuroburst/activity".into(), max_bursts: 0, pace: 0.0 }
    }
}

/// The sections of the configuration a replay reads.
#[derive(Clone, Debug)]
pub struct ReplaySetup {
    pub encoders: Vec<EncoderConfig>,
    pub decoders: Vec<DecoderConfig>,
    /// `node.mode` and `node.reflex`: a replay bursts as the node would.
    pub mode: Mode,
    pub reflex: ReflexConfig,
    pub replay: ReplayConfig,
    pub view: ViewConfig,
}

/// Per-burst record for plots.
#[derive(Clone, Debug, PartialEq)]
pub struct BurstRecord {
    /// Seconds since the first message.
    pub t: f64,
    pub fired_per_area: Vec<u32>,
    /// Latest values of every decoder (its configured components), held between messages.
    pub motor: Vec<Vec<f64>>,
}

/// What the plastic mappings held at one moment of a replay (a brain that learns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LearnPoint {
    /// Seconds since the first message.
    pub t: f64,
    /// Per plastic mapping (as [`ReplaySummary::learning_labels`]): its synapses and their mean weight.
    pub synapses: Vec<u64>,
    pub mean: Vec<f64>,
}

/// Samples of what a brain learns over a replay: about this many.
const LEARN_SAMPLES: u64 = 200;

/// The plastic mappings of `genome`: genome index and label.
fn plastic_mappings(genome: &Genome) -> Vec<(u32, String)> {
    let assoc = |m: &crate::genome::Mapping| if m.morphology == "associative_memory" { " (associative)" } else { "" };
    genome
        .mappings
        .iter()
        .enumerate()
        .filter(|(_, m)| m.plasticity.is_some())
        .map(|(i, m)| (i as u32, format!("{} -> {}{}", m.source, m.destination, assoc(m))))
        .collect()
}

/// One sample of what the brain has learned.
fn learn_point(backend: &mut dyn Backend, mappings: &[(u32, String)], t: f64, burst: u64) -> anyhow::Result<LearnPoint> {
    let st = backend.snapshot().map_err(|e| anyhow::anyhow!("burst {burst}: {e}"))?;
    let mut p = LearnPoint { t, synapses: vec![0; mappings.len()], mean: vec![0.0; mappings.len()] };
    for s in &st.learned.synapses {
        if let Some(j) = mappings.iter().position(|m| m.0 == s.mapping) {
            p.synapses[j] += 1;
            p.mean[j] += s.weight as f64;
        }
    }
    for (m, &n) in p.mean.iter_mut().zip(&p.synapses) {
        *m /= n.max(1) as f64;
    }
    Ok(p)
}

/// Counters of one motor topic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MotorStats {
    pub topic: String,
    pub type_name: String,
    pub messages: u64,
    /// Mean of each value over the messages.
    pub mean: Vec<f64>,
    /// Names of the values (Twist axes, joints, x columns).
    pub labels: Vec<String>,
}

/// What a replay did.
#[derive(Clone, Debug, Default)]
pub struct ReplaySummary {
    pub bursts: u64,
    /// Bag seconds covered.
    pub duration_s: f64,
    pub inputs: BTreeMap<String, TopicCounters>,
    /// Messages on topics no encoder listens to, per topic.
    pub ignored: BTreeMap<String, u64>,
    pub first_errors: BTreeMap<String, String>,
    pub motor: Vec<MotorStats>,
    pub activity_messages: u64,
    /// Fired neurons per area over the replay (area id, count).
    pub fired: Vec<(String, u64)>,
    /// Stopped early by Ctrl-C.
    pub interrupted: bool,
    pub records: Vec<BurstRecord>,
    /// The plastic mappings (`source -> destination`), and what they held over bag time.
    pub learning_labels: Vec<String>,
    pub learning: Vec<LearnPoint>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Bag(#[from] BagError),
    #[error(transparent)]
    Intake(#[from] intake::IntakeError),
    #[error("{0}")]
    Config(String),
}

/// Options of a replay.
pub struct ReplayOptions<'a> {
    pub burst_rate_hz: f64,
    pub progress: bool,
    /// Set (by a SIGINT handler) to stop after the current burst and finish the output.
    pub stop: &'a AtomicBool,
    /// The live view, if served.
    pub view: Option<&'a View>,
    pub genome: &'a Genome,
}

/// The scene frames of a replay: recorded (`view.record`) and sent to the view, every
/// 1 / `view.rate_hz` of bag time.
pub(crate) struct Frames {
    geometry: Geometry,
    channels: Option<(u16, u16)>,
    period_ns: u64,
    next_ns: u64,
    max_points: usize,
}

fn foreign(s: &foxglove::Schema) -> crate::bag::writer::ForeignSchema<'_> {
    crate::bag::writer::ForeignSchema { name: &s.name, encoding: &s.encoding, data: &s.data }
}

impl Frames {
    pub(crate) fn new(writer: Option<&mut BagWriter>, config: &ViewConfig, genome: &Genome, t0: u64) -> anyhow::Result<Frames> {
        let channels = match writer.filter(|_| config.record) {
            Some(writer) => {
                let scene = foxglove::messages::SceneUpdate::get_schema().expect("foxglove messages have schemas");
                let points = foxglove::messages::PointCloud::get_schema().expect("foxglove messages have schemas");
                let encoding = foxglove::messages::SceneUpdate::get_message_encoding();
                Some((
                    writer.add_foreign_topic(SCENE_TOPIC, foreign(&scene), &encoding)?,
                    writer.add_foreign_topic(POINTS_TOPIC, foreign(&points), &encoding)?,
                ))
            }
            None => None,
        };
        Ok(Frames {
            geometry: Geometry::new(genome),
            channels,
            period_ns: (1e9 / config.rate_hz) as u64,
            next_ns: t0,
            max_points: config.max_points,
        })
    }

    /// Record and send the frame of a burst at `t_k`, if one is due.
    pub(crate) fn burst(
        &mut self,
        writer: Option<&mut BagWriter>,
        view: Option<&View>,
        layout: &Layout,
        t_k: u64,
        out: (&[u32], &[u32]),
    ) -> anyhow::Result<()> {
        if t_k < self.next_ns || (self.channels.is_none() && view.is_none()) {
            return Ok(());
        }
        while self.next_ns <= t_k {
            self.next_ns += self.period_ns.max(1);
        }
        let per_area: Vec<Option<u32>> = out.0.iter().map(|&n| Some(n)).collect();
        let (scene, points) = crate::view::frame_messages(&self.geometry, layout, self.max_points, t_k, &per_area, out.1);
        if let (Some((s, p)), Some(writer)) = (self.channels, writer) {
            writer.write(s, t_k, &crate::view::scene::bytes(&scene))?;
            writer.write(p, t_k, &crate::view::scene::bytes(&points))?;
        }
        if let Some(v) = view {
            v.send(&scene, &points, t_k);
        }
        Ok(())
    }
}

/// Check the configured encoders' topics against the bag before anything runs: their types,
/// their encoding (cdr); a configured topic missing from the bag is a warning.
pub fn check_topics(bag: &Bag, intake: &Intake) -> Result<(), ReplayError> {
    for t in &bag.topics {
        if intake.topics().any(|x| x == t.name) {
            intake.check_type(&t.name, &t.type_name)?;
            if t.encoding != "cdr" {
                return Err(ReplayError::Config(format!("topic {}: message encoding {:?} is not cdr", t.name, t.encoding)));
            }
        }
    }
    for topic in intake.topics() {
        if bag.topic_index(topic).is_none() {
            tracing::warn!("topic {topic} (configured encoder) is not in the bag");
        }
    }
    Ok(())
}

/// The channels of a replay's output bag: one per decoder, in configuration order, then the
/// activity topic (none when `activity_topic` is empty).
#[derive(Clone, Debug)]
pub struct OutputChannels {
    pub motor: Vec<u16>,
    pub activity: Option<u16>,
}

impl OutputChannels {
    pub fn add(writer: &mut BagWriter, outputs: &Outputs, activity_topic: &str) -> Result<OutputChannels, ReplayError> {
        let mut motor = Vec::new();
        for d in &outputs.decoders {
            let info = registry::lookup(d.config.message_type()).expect("decoder types are registered");
            motor.push(writer.add_topic(d.config.topic(), &info, Qos::COMMAND)?);
        }
        let activity =
            if activity_topic.is_empty() { None } else { Some(writer.add_topic(activity_topic, &BurstActivity::info(), Qos::COMMAND)?) };
        Ok(OutputChannels { motor, activity })
    }

    /// Hand `write` the messages of one burst at bag time `t_k`, in the order a replay records
    /// them: the motor messages (decoder order), then the activity message.
    pub fn messages<E>(
        &self,
        products: &BurstProducts,
        outputs: &Outputs,
        t_k: u64,
        mut write: impl FnMut(u16, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for (i, m) in &products.motor {
            write(self.motor[*i], &m.payload)?;
        }
        if let Some(ch) = self.activity {
            write(ch, &encode(&outputs.activity(products, t_k)))?;
        }
        Ok(())
    }
}

/// Replay `bag` (read from `bag_path`) through `backend` (which must read back every fired
/// neuron, or at least the motor areas), recording the motor and activity messages to `out`. The
/// output bag is finished whatever happens, so it stays readable.
pub fn replay(
    bag: Bag,
    bag_path: &Path,
    layout: &Layout,
    backend: &mut dyn Backend,
    setup: ReplaySetup,
    out: &Path,
    opts: &ReplayOptions<'_>,
) -> anyhow::Result<ReplaySummary> {
    let mut io = BagIo::new(bag, bag_path, layout.clone(), setup, opts.burst_rate_hz, Some(out), false, Some((opts.genome, opts.view)))?;
    let plastic = plastic_mappings(opts.genome);
    let total = io.bursts();
    let t0 = io.t0();
    let bar = crate::progress::Progress::new("replay", "bursts", total, opts.progress);
    let learn_every = (total / LEARN_SAMPLES).max(1);
    let mut learning = Vec::new();
    let ran = (|| {
        if !plastic.is_empty() && total > 0 {
            learning.push(learn_point(backend, &plastic, 0.0, 0)?);
        }
        let times = io.times();
        crate::run::bursts(&mut io, backend, opts.stop, |k, backend| {
            let t = (times[k as usize - 1] - t0) as f64 * 1e-9;
            if !plastic.is_empty() && (k % learn_every == 0 || k == total) {
                learning.push(learn_point(backend, &plastic, t, k)?);
            }
            if k % 16 == 0 {
                bar.message(format!("bag time {t:.2} s"));
            }
            bar.inc(1);
            Ok(false)
        })
    })();
    bar.finish();
    let finished = crate::run::Io::finish(&mut io, None);
    let ran = ran?;
    finished?;
    let mut summary = io.summary();
    summary.interrupted = ran.interrupted;
    summary.learning_labels = plastic.iter().map(|m| m.1.clone()).collect();
    summary.learning = learning;
    Ok(summary)
}

/// Advertise to the view every topic a replay of `bag` will show (before a client connects: see
/// [`View::advertise`]): the bag's topics an encoder reads, the decoders' and the activity topic.
pub(crate) fn advertise_shown(view: &View, bag: &Bag, setup: &ReplaySetup) {
    for t in bag.topics.iter().filter(|t| setup.encoders.iter().any(|e| e.topic() == t.name)) {
        view.advertise(&t.name, &t.type_name);
    }
    for d in &setup.decoders {
        view.advertise(d.topic(), d.message_type());
    }
    if !setup.replay.activity_topic.is_empty() {
        view.advertise(&setup.replay.activity_topic, BurstActivity::TYPE);
    }
}

/// The sensor messages of `range` that an encoder read, to the view (at most `view.rate_hz` per
/// topic).
pub(crate) fn show_inputs(view: &View, bag: &Bag, range: std::ops::Range<usize>, intake: &Intake) {
    for m in &bag.messages[range] {
        let t = &bag.topics[m.topic];
        if intake.topics().any(|x| x == t.name) {
            view.ros(&t.name, &t.type_name, &m.data, m.log_time, true);
        }
    }
}

/// A burst's motor and activity messages, to the view.
pub(crate) fn show_outputs(view: &View, products: &BurstProducts, outputs: &Outputs, activity_topic: &str, t_k: u64) {
    for (i, m) in &products.motor {
        let d = &outputs.decoders[*i];
        view.ros(d.config.topic(), d.config.message_type(), &m.payload, t_k, false);
    }
    if !activity_topic.is_empty() {
        view.ros(activity_topic, BurstActivity::TYPE, &encode(&outputs.activity(products, t_k)), t_k, false);
    }
}

pub(crate) fn labels(c: &crate::decode::DecoderConfig, layout: &Layout) -> Vec<String> {
    use crate::decode::DecoderConfig as D;
    match c {
        D::Twist(t) => t
            .axes
            .iter()
            .map(|a| serde_yaml::to_value(a.axis).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default())
            .collect(),
        D::Joints(j) => j.joints.clone(),
        D::FloatArray(f) => {
            let x = layout.area_index(&f.area).map_or(0, |i| layout.params[i].dims[0]);
            (0..x).map(|i| format!("x{i}")).collect()
        }
    }
}
