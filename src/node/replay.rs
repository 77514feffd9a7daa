//! Replay: a bag drives the brain, lock-stepped to bag time. With `r` = the genome's
//! `burst_rate_hz` and `t0` the first message's log time, burst k (k = 1, 2, ...) runs at bag time
//! `t_k = t0 + (k - 1) / r` on the latest message of each topic logged before `t_k`; its motor
//! messages and its activity message are recorded at `t_k`. Bursts continue until every message
//! has been offered (one burst after the last). Nothing depends on the wall clock, so two runs
//! (and the CPU and CUDA backends) write the same bytes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::Backend;
use crate::bag::qos::Qos;
use crate::bag::{Bag, BagError, BagWriter};
use crate::model::Layout;
use crate::node::intake::{Intake, TopicStats};
use crate::node::outputs::Outputs;
use crate::ros::neuroburst_msgs::BurstActivity;
use crate::ros::{encode, registry, RosMessage};

/// Per-burst record for plots.
#[derive(Clone, Debug, PartialEq)]
pub struct BurstRecord {
    /// Seconds since the first message.
    pub t: f64,
    pub fired_per_area: Vec<u32>,
    /// Latest values of every decoder (its configured components), held between messages.
    pub motor: Vec<Vec<f64>>,
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
    pub inputs: BTreeMap<String, TopicStats>,
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
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Bag(#[from] BagError),
    #[error(transparent)]
    Intake(#[from] super::intake::IntakeError),
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
    if !(opts.burst_rate_hz > 0.0 && opts.burst_rate_hz.is_finite()) {
        return Err(ReplayError::Config(format!("burst_rate_hz must be > 0, not {}", opts.burst_rate_hz)));
    }
    let mut intake = Intake::new(&config.encoders, layout)?;
    let mut outputs = Outputs::new(&config.decoders, layout).map_err(ReplayError::Config)?;

    // Check the configured topics against the bag before anything runs.
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

    // Output channels, in configuration order.
    let mut channels = Vec::new();
    let mut motor: Vec<MotorStats> = Vec::new();
    for d in &outputs.decoders {
        let type_name = d.config.message_type();
        let info = registry::lookup(type_name).expect("decoder types are registered");
        channels.push(writer.add_topic(d.config.topic(), &info, Qos::COMMANDS)?);
        motor.push(MotorStats {
            topic: d.config.topic().into(),
            type_name: type_name.into(),
            labels: labels(&d.config, layout),
            ..Default::default()
        });
    }
    let activity_channel = if opts.activity_topic.is_empty() {
        None
    } else {
        Some(writer.add_topic(&opts.activity_topic, &BurstActivity::info(), Qos::COMMANDS)?)
    };

    let mut summary = ReplaySummary { motor, ..Default::default() };
    let Some(first) = bag.messages.first() else {
        return Ok(summary);
    };
    let t0 = first.log_time;
    let t_last = bag.messages.last().map_or(t0, |m| m.log_time);
    let period_ns = 1e9 / opts.burst_rate_hz;
    let burst_time = |k: u64| t0 + ((k - 1) as f64 * period_ns).round() as u64;
    // bursts up to the first one that starts after the last message
    let mut total = ((t_last - t0) as f64 / period_ns).floor() as u64 + 2;
    if opts.max_bursts > 0 {
        total = total.min(opts.max_bursts);
    }

    let bar = if opts.progress { indicatif::ProgressBar::new(total) } else { indicatif::ProgressBar::hidden() };
    bar.set_style(
        indicatif::ProgressStyle::with_template("replay {bar:40} {pos}/{len} bursts ({msg})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );

    let mut fired = vec![0u64; layout.meta.len()];
    let mut last_values: Vec<Vec<f64>> = summary.motor.iter().map(|m| vec![0.0; m.labels.len()]).collect();
    let mut sums: Vec<Vec<f64>> = last_values.clone();
    let mut next = 0usize;
    let started = std::time::Instant::now();
    for k in 1..=total {
        if opts.stop.load(Ordering::SeqCst) {
            summary.interrupted = true;
            break;
        }
        let t_k = burst_time(k);
        if opts.pace > 0.0 {
            let due = std::time::Duration::from_secs_f64((t_k - t0) as f64 * 1e-9 / opts.pace);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        while next < bag.messages.len() && bag.messages[next].log_time < t_k {
            let m = &bag.messages[next];
            let topic = &bag.topics[m.topic];
            if !intake.offer(&topic.name, &topic.type_name, &m.data) {
                *summary.ignored.entry(topic.name.clone()).or_default() += 1;
            }
            next += 1;
        }
        let injection = intake.injection();
        let out = backend.burst(&injection).map_err(|e| ReplayError::Backend { burst: k, message: e.to_string() })?;
        let products = outputs.burst(&out, layout, t_k);
        for (i, m) in &products.motor {
            writer.write(channels[*i], t_k, &m.payload)?;
            summary.motor[*i].messages += 1;
            for (s, v) in sums[*i].iter_mut().zip(&m.values) {
                *s += v;
            }
            last_values[*i] = m.values.clone();
        }
        if let Some(ch) = activity_channel {
            writer.write(ch, t_k, &encode(&outputs.activity(&products, t_k)))?;
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
        bar.inc(1);
        if k % 16 == 0 {
            bar.set_message(format!("bag time {:.2} s", (t_k - t0) as f64 * 1e-9));
        }
    }
    bar.finish_and_clear();
    summary.duration_s = (t_last - t0) as f64 * 1e-9;
    for (m, s) in summary.motor.iter_mut().zip(sums) {
        m.mean = s.iter().map(|v| if m.messages > 0 { v / m.messages as f64 } else { 0.0 }).collect();
    }
    summary.inputs = intake.stats.clone();
    summary.first_errors = intake.first_errors.clone();
    summary.fired = layout.meta.iter().map(|m| m.id.clone()).zip(fired).collect();
    Ok(summary)
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
