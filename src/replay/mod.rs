//! The bag replay, and the loop's pieces that the live node (`src/node/`) shares: [`intake`]
//! (latest message per topic wins, encoded into injections), [`outputs`] (motor areas decoded into
//! messages, the per-burst activity), [`schedule`] (which bursts run at which bag time) and
//! [`plot`]. The replay itself, below:
//!
//! Replay: a bag drives the brain, lock-stepped to bag time ([`BagSchedule`]: on the clock's grid
//! at the genome's `burst_rate_hz`, or in reflex mode at the messages' log times too); each
//! burst's motor messages and activity message are recorded at its bag time. Nothing depends on
//! the wall clock, so two runs (and the CPU and CUDA backends) write the same bytes.

pub mod intake;
pub mod outputs;
pub mod plot;
pub mod schedule;

pub use schedule::BagSchedule;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::Backend;
use crate::bag::qos::Qos;
use crate::bag::{Bag, BagError, BagWriter};
use crate::genome::Genome;
use crate::model::{Injections, Layout};
use crate::ros::neuroburst_msgs::BurstActivity;
use crate::ros::{encode, registry, RosMessage};
use crate::view::scene::Geometry;
use crate::view::{View, POINTS_TOPIC, SCENE_TOPIC};
use foxglove::Encode;
use intake::{Intake, TopicCounts};
use outputs::{BurstProducts, Outputs};

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
fn learn_point(backend: &mut dyn Backend, mappings: &[(u32, String)], t: f64, burst: u64) -> Result<LearnPoint, ReplayError> {
    let st = backend.snapshot().map_err(|e| ReplayError::Backend { burst, message: e.to_string() })?;
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
    pub inputs: BTreeMap<String, TopicCounts>,
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
    #[error("burst {burst}: {message}")]
    Backend { burst: u64, message: String },
}

/// Options of a replay.
pub struct ReplayOptions<'a> {
    pub burst_rate_hz: f64,
    pub max_bursts: u64,
    pub activity_topic: String,
    pub progress: bool,
    /// 0 = as fast as possible; else bag seconds per wall-clock second (never changes the output).
    pub pace: f64,
    /// Set (by a SIGINT handler) to stop after the current burst and finish the output.
    pub stop: &'a AtomicBool,
    /// The live view, if served.
    pub view: Option<&'a View>,
    pub genome: &'a Genome,
}

/// The scene frames of a replay: recorded (`view.record`) and sent to the view, every
/// 1 / `view.rate_hz` of bag time.
struct Frames {
    geometry: Geometry,
    channels: Option<(u16, u16)>,
    period_ns: u64,
    next_ns: u64,
    max_points: usize,
}

impl Frames {
    fn new(writer: &mut BagWriter, config: &crate::config::Config, genome: &Genome, t0: u64) -> Result<Frames, ReplayError> {
        let channels = if config.view.record {
            let scene = foxglove::messages::SceneUpdate::get_schema().expect("foxglove messages have schemas");
            let points = foxglove::messages::PointCloud::get_schema().expect("foxglove messages have schemas");
            let encoding = foxglove::messages::SceneUpdate::get_message_encoding();
            Some((writer.add_foreign_topic(SCENE_TOPIC, &scene, &encoding)?, writer.add_foreign_topic(POINTS_TOPIC, &points, &encoding)?))
        } else {
            None
        };
        Ok(Frames {
            geometry: Geometry::new(genome),
            channels,
            period_ns: (1e9 / config.view.rate_hz) as u64,
            next_ns: t0,
            max_points: config.view.max_points,
        })
    }

    /// Record and send the frame of a burst at `t_k`, if one is due.
    fn burst(
        &mut self,
        writer: &mut BagWriter,
        view: Option<&View>,
        layout: &Layout,
        t_k: u64,
        out: (&[u32], &[u32]),
    ) -> Result<(), ReplayError> {
        if t_k < self.next_ns || (self.channels.is_none() && view.is_none()) {
            return Ok(());
        }
        while self.next_ns <= t_k {
            self.next_ns += self.period_ns.max(1);
        }
        let per_area: Vec<Option<u32>> = out.0.iter().map(|&n| Some(n)).collect();
        let (scene, points) = crate::view::frame_messages(&self.geometry, layout, self.max_points, t_k, &per_area, out.1);
        if let Some((s, p)) = self.channels {
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
            motor.push(writer.add_topic(d.config.topic(), &info, Qos::COMMANDS)?);
        }
        let activity =
            if activity_topic.is_empty() { None } else { Some(writer.add_topic(activity_topic, &BurstActivity::info(), Qos::COMMANDS)?) };
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

/// Replay `bag` through `backend` (which must read back every fired neuron, or at least the
/// motor areas), writing motor and activity messages to `writer`.
pub fn replay(
    bag: &Bag,
    layout: &Layout,
    backend: &mut dyn Backend,
    config: &crate::config::Config,
    writer: &mut BagWriter,
    opts: &ReplayOptions<'_>,
) -> Result<ReplaySummary, ReplayError> {
    let mut intake = Intake::new(&config.encoders, layout)?;
    let schedule = BagSchedule::for_mode(bag, opts.burst_rate_hz, opts.max_bursts, (config.node.mode, &config.node.reflex), &intake)?;
    let mut outputs = Outputs::new(&config.decoders, layout).map_err(ReplayError::Config)?;
    check_topics(bag, &intake)?;
    let channels = OutputChannels::add(writer, &outputs, &opts.activity_topic)?;
    let motor = outputs
        .decoders
        .iter()
        .map(|d| MotorStats {
            topic: d.config.topic().into(),
            type_name: d.config.message_type().into(),
            labels: labels(&d.config, layout),
            ..Default::default()
        })
        .collect();

    let plastic = plastic_mappings(opts.genome);
    let learning_labels = plastic.iter().map(|m| m.1.clone()).collect();
    let mut summary = ReplaySummary { motor, learning_labels, ..Default::default() };
    let Some(mut schedule) = schedule else {
        return Ok(summary);
    };
    let t0 = schedule.t0();
    let total = schedule.total();
    let mut frames = Frames::new(writer, config, opts.genome, t0)?;

    let bar = crate::progress::Progress::new("replay", "bursts", total, opts.progress);

    let mut fired = vec![0u64; layout.meta.len()];
    let mut last_values: Vec<Vec<f64>> = summary.motor.iter().map(|m| vec![0.0; m.labels.len()]).collect();
    let mut sums: Vec<Vec<f64>> = last_values.clone();
    let started = std::time::Instant::now();
    let mut injection = Injections::new();
    backend.prepare_input(&mut injection);
    let learn_every = (total / LEARN_SAMPLES).max(1);
    if !plastic.is_empty() {
        summary.learning.push(learn_point(backend, &plastic, 0.0, 0)?);
    }
    for k in 1..=total {
        if opts.stop.load(Ordering::SeqCst) {
            summary.interrupted = true;
            break;
        }
        let t_k = schedule.time(k);
        if opts.pace > 0.0 {
            let due = std::time::Duration::from_secs_f64((t_k - t0) as f64 * 1e-9 / opts.pace);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        let first = schedule.position();
        schedule.offer(bag, k, &mut intake, &mut summary.ignored);
        if let Some(v) = opts.view {
            show_inputs(v, bag, first..schedule.position(), &intake);
        }
        intake.injection(&mut injection, t_k);
        let out = backend.burst(injection.as_slice()).map_err(|e| ReplayError::Backend { burst: k, message: e.to_string() })?;
        let products = outputs.burst(&out, layout, t_k, intake.blind());
        channels.messages(&products, &outputs, t_k, |ch, data| writer.write(ch, t_k, data))?;
        frames.burst(writer, opts.view, layout, t_k, (&products.fired_per_area, out.fired))?;
        if let Some(v) = opts.view {
            show_outputs(v, &products, &outputs, &opts.activity_topic, t_k);
        }
        for (i, m) in &products.motor {
            summary.motor[*i].messages += 1;
            for (s, v) in sums[*i].iter_mut().zip(&m.values) {
                *s += v;
            }
            last_values[*i] = m.values.clone();
        }
        if channels.activity.is_some() {
            summary.activity_messages += 1;
        }
        for (f, &n) in fired.iter_mut().zip(&products.fired_per_area) {
            *f += n as u64;
        }
        summary.records.push(BurstRecord {
            t: (t_k - t0) as f64 * 1e-9,
            fired_per_area: products.fired_per_area,
            motor: last_values.clone(),
        });
        summary.bursts = k;
        if !plastic.is_empty() && (k % learn_every == 0 || k == total) {
            summary.learning.push(learn_point(backend, &plastic, (t_k - t0) as f64 * 1e-9, k)?);
        }
        if k % 16 == 0 {
            bar.message(format!("bag time {:.2} s", (t_k - t0) as f64 * 1e-9));
        }
        bar.inc(1);
    }
    bar.finish();
    summary.duration_s = schedule.duration_s();
    for (m, s) in summary.motor.iter_mut().zip(sums) {
        m.mean = s.iter().map(|v| if m.messages > 0 { v / m.messages as f64 } else { 0.0 }).collect();
    }
    summary.inputs = intake.stats.clone();
    summary.first_errors = intake.first_errors.clone();
    summary.fired = layout.meta.iter().map(|m| m.id.clone()).zip(fired).collect();
    Ok(summary)
}

/// The sensor messages of `range` that an encoder read, to the view (at most `view.rate_hz` per
/// topic).
fn show_inputs(view: &View, bag: &Bag, range: std::ops::Range<usize>, intake: &Intake) {
    for m in &bag.messages[range] {
        let t = &bag.topics[m.topic];
        if intake.topics().any(|x| x == t.name) {
            view.ros(&t.name, &t.type_name, &m.data, m.log_time, true);
        }
    }
}

/// A burst's motor and activity messages, to the view.
fn show_outputs(view: &View, products: &BurstProducts, outputs: &Outputs, activity_topic: &str, t_k: u64) {
    for (i, m) in &products.motor {
        let d = &outputs.decoders[*i];
        view.ros(d.config.topic(), d.config.message_type(), &m.payload, t_k, false);
    }
    if !activity_topic.is_empty() {
        view.ros(activity_topic, BurstActivity::TYPE, &encode(&outputs.activity(products, t_k)), t_k, false);
    }
}

fn labels(c: &crate::decode::DecoderConfig, layout: &Layout) -> Vec<String> {
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
