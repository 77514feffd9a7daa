//! Decoders: the firing of one motor area in one burst -> a motor message, following FEAGI's
//! conventions (signed values: even x positive, odd x negative; magnitude from the z position or
//! from the firing count). Configured per area (`decoders:` in the configuration), with smoothing
//! over a window of bursts and an output rate.
//!
//! Safe stops: while the brain is blind (every sensor topic stale) and when the node stops, a
//! decoder sends its stop command instead (`output.stop`: a zero Twist, the joints held where they
//! are), so a robot whose sensors died, or whose brain went away, does not keep moving.

mod activation;
mod joints;
mod smoothing;
mod twist;

use serde::{Deserialize, Serialize};

pub use activation::{column_activation, Magnitude};
pub use joints::{JointsMessage, Precision};
pub use smoothing::{RateGate, Smoother};
pub use twist::{Axis, TwistAxis};

use crate::model::Layout;

/// The longest moving average of a decoder's output, in bursts.
pub const MAX_WINDOW: usize = 100_000;

/// One decoder of the configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DecoderConfig {
    /// geometry_msgs/Twist or TwistStamped from a signed motor area.
    Twist(twist::TwistConfig),
    /// sensor_msgs/JointState or std_msgs/Float64MultiArray, one joint per x.
    Joints(joints::JointCommandConfig),
    /// std_msgs/Float32MultiArray or Float64MultiArray, one value per x.
    FloatArray(joints::ArrayCommandConfig),
}

impl DecoderConfig {
    /// The motor area it reads.
    pub fn area(&self) -> &str {
        match self {
            DecoderConfig::Twist(c) => &c.area,
            DecoderConfig::Joints(c) => &c.area,
            DecoderConfig::FloatArray(c) => &c.area,
        }
    }
    /// The topic it publishes.
    pub fn topic(&self) -> &str {
        match self {
            DecoderConfig::Twist(c) => &c.topic,
            DecoderConfig::Joints(c) => &c.topic,
            DecoderConfig::FloatArray(c) => &c.topic,
        }
    }

    /// The topic, to rename it (ROS remappings).
    pub fn topic_mut(&mut self) -> &mut String {
        match self {
            DecoderConfig::Twist(c) => &mut c.topic,
            DecoderConfig::Joints(c) => &mut c.topic,
            DecoderConfig::FloatArray(c) => &mut c.topic,
        }
    }

    /// The message type it publishes (`pkg/msg/Type`).
    pub fn message_type(&self) -> &'static str {
        use crate::ros::builtin::{Float32MultiArray, Float64MultiArray};
        use crate::ros::geometry_msgs::{Twist, TwistStamped};
        use crate::ros::sensor_msgs::JointState;
        use crate::ros::RosMessage;
        match self {
            DecoderConfig::Twist(t) if t.stamped => TwistStamped::TYPE,
            DecoderConfig::Twist(_) => Twist::TYPE,
            DecoderConfig::Joints(j) => match j.message {
                JointsMessage::JointState => JointState::TYPE,
                JointsMessage::Float64MultiArray => Float64MultiArray::TYPE,
            },
            DecoderConfig::FloatArray(f) => match f.precision {
                Precision::Float32 => Float32MultiArray::TYPE,
                Precision::Float64 => Float64MultiArray::TYPE,
            },
        }
    }
}

/// A message produced by a decoder.
#[derive(Clone, Debug, PartialEq)]
pub struct MotorMessage {
    /// `pkg/msg/Type`.
    pub type_name: &'static str,
    /// CDR payload, header included.
    pub payload: Vec<u8>,
    /// The decoded values (Twist: the configured axes in order), for summaries and plots.
    pub values: Vec<f64>,
}

/// Window, rate and magnitude settings common to every decoder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Moving average over this many bursts (1 = none).
    #[serde(default = "one")]
    pub window: usize,
    /// Messages per second of (bag) time; 0 = one per burst.
    #[serde(default)]
    pub rate_hz: f64,
    /// Where a column's magnitude comes from: `z` (position of the highest fired voxel) or
    /// `count` (fraction of the column's neurons that fired).
    #[serde(default)]
    pub magnitude: Magnitude,
    /// The command sent while every sensor topic is stale and when the node stops: `zero` (every
    /// value 0: a zero Twist), `hold` (the last values again: joints stay where they are; nothing
    /// if none was sent yet) or `none` (no safe stop: the brain's commands go on while blind, and
    /// nothing is sent at the stop). Default: `zero` for twist and float_array, `hold` for joints.
    #[serde(default)]
    pub stop: Option<StopCommand>,
}

impl Default for Output {
    fn default() -> Self {
        Output { window: 1, rate_hz: 0.0, magnitude: Magnitude::default(), stop: None }
    }
}

/// A decoder's safe-stop command (`output.stop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCommand {
    /// Every value zero (a Twist that stops the robot).
    Zero,
    /// The last command again.
    Hold,
    /// Nothing is sent.
    None,
}

fn one() -> usize {
    1
}

/// A built decoder.
#[derive(Debug)]
pub struct Decoder {
    /// Its configuration.
    pub config: DecoderConfig,
    /// Index of the motor area in the layout.
    pub area: usize,
    dims: [u32; 3],
    neurons_per_voxel: u32,
    smoother: Smoother,
    gate: RateGate,
    stop: StopCommand,
    /// The values of the last message sent.
    last: Option<Vec<f64>>,
}

impl Decoder {
    /// Resolve the area; errors name the topic and the area.
    pub fn new(config: &DecoderConfig, layout: &Layout) -> Result<Decoder, String> {
        let topic = config.topic();
        let area =
            layout.area_index(config.area()).ok_or_else(|| format!("decoder of {topic}: the genome has no area {:?}", config.area()))?;
        let p = &layout.params[area];
        let out = match config {
            DecoderConfig::Twist(c) => {
                if p.dims[0] < 2 * c.axes.len() as u32 {
                    return Err(format!(
                        "decoder of {topic}: area {} has {} x columns; {} axes need {}",
                        c.area,
                        p.dims[0],
                        c.axes.len(),
                        2 * c.axes.len()
                    ));
                }
                &c.output
            }
            DecoderConfig::Joints(c) => &c.output,
            DecoderConfig::FloatArray(c) => &c.output,
        };
        // the window's bursts are kept: bounded, so that a long run's memory is too
        if !(1..=MAX_WINDOW).contains(&out.window) || out.rate_hz.is_nan() || out.rate_hz < 0.0 || out.rate_hz > crate::time::MAX_RATE_HZ {
            return Err(format!(
                "decoder of {topic}: output.window must be 1..={MAX_WINDOW} bursts and output.rate_hz 0..={} (0: every burst)",
                crate::time::MAX_RATE_HZ
            ));
        }
        let stop = out.stop.unwrap_or(match config {
            DecoderConfig::Joints(_) => StopCommand::Hold,
            DecoderConfig::Twist(_) | DecoderConfig::FloatArray(_) => StopCommand::Zero,
        });
        Ok(Decoder {
            config: config.clone(),
            area,
            dims: p.dims,
            neurons_per_voxel: p.neurons_per_voxel,
            smoother: Smoother::new(out.window),
            gate: RateGate::new(out.rate_hz),
            stop,
            last: None,
        })
    }

    /// Decode one burst: `fired` are the area's fired neurons as `[x, y, z, k]`, `time_ns` the
    /// burst's time. Returns a message when the output rate says one is due: the stop command
    /// while the brain is `blind` (every sensor topic stale).
    pub fn burst(&mut self, fired: &[[u32; 4]], time_ns: u64, blind: bool) -> Option<MotorMessage> {
        let (magnitude, columns) = match &self.config {
            DecoderConfig::Twist(c) => (c.output.magnitude, 2 * c.axes.len()),
            DecoderConfig::Joints(c) => (c.output.magnitude, self.dims[0] as usize),
            DecoderConfig::FloatArray(c) => (c.output.magnitude, self.dims[0] as usize),
        };
        let act = column_activation(fired, self.dims, self.neurons_per_voxel, magnitude, columns);
        let raw = match &mut self.config {
            DecoderConfig::Twist(c) => twist::values(c, &act),
            DecoderConfig::Joints(c) => joints::joint_values(&c.min, &c.max, &mut c.hold, &act),
            DecoderConfig::FloatArray(c) => joints::joint_values(&c.min, &c.max, &mut c.hold, &act),
        };
        let values = self.smoother.push(raw);
        if !self.gate.due(time_ns) {
            return None;
        }
        if blind && self.stop != StopCommand::None {
            return self.stop_message(time_ns);
        }
        self.last = Some(values.clone());
        Some(self.message(&values, time_ns))
    }

    /// The stop command at `time_ns` (`output.stop`); None for `none`, and for `hold` before any
    /// message was sent.
    pub fn stop_message(&self, time_ns: u64) -> Option<MotorMessage> {
        let values = match self.stop {
            StopCommand::None => return None,
            StopCommand::Hold => self.last.clone()?,
            StopCommand::Zero => vec![
                0.0;
                match &self.config {
                    DecoderConfig::Twist(c) => c.axes.len(),
                    _ => self.dims[0] as usize,
                }
            ],
        };
        Some(self.message(&values, time_ns))
    }

    fn message(&self, values: &[f64], time_ns: u64) -> MotorMessage {
        match &self.config {
            DecoderConfig::Twist(c) => twist::message(c, values, time_ns),
            DecoderConfig::Joints(c) => joints::joints_message(c, values, time_ns),
            DecoderConfig::FloatArray(c) => joints::array_message(c, values),
        }
    }
}
