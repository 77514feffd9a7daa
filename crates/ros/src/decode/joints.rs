//! Joint commands and float arrays: column x's activation `a` in 0..1 maps to
//! `min + a · (max − min)`; a column that did not fire holds its last value (`min` at first).

use serde::{Deserialize, Serialize};

use super::{MotorMessage, Output};
use crate::ros::builtin::{Float32MultiArray, Float64MultiArray, Header, MultiArrayLayout, Time};
use crate::ros::sensor_msgs::JointState;
use crate::ros::{encode, RosMessage};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JointCommandConfig {
    pub area: String,
    pub topic: String,
    /// `joint_state` (positions, with names) or `float64_multi_array`.
    #[serde(default)]
    pub message: JointsMessage,
    /// Joint names, one per x column.
    pub joints: Vec<String>,
    /// Command at activation 0 (per joint, or one value for all).
    #[serde(default)]
    pub min: Vec<f64>,
    /// Command at activation 1.
    #[serde(default)]
    pub max: Vec<f64>,
    /// Smoothing window, output rate and magnitude source.
    #[serde(default)]
    pub output: Output,
    #[serde(skip)]
    pub hold: Vec<f64>,
}

/// Which message a joints decoder publishes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JointsMessage {
    #[default]
    /// `sensor_msgs/msg/JointState` (positions by joint name).
    JointState,
    /// `std_msgs/msg/Float64MultiArray` (as ros2_control's forward controllers take).
    Float64MultiArray,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayCommandConfig {
    pub area: String,
    pub topic: String,
    /// `float32` (Float32MultiArray) or `float64` (Float64MultiArray).
    #[serde(default)]
    pub precision: Precision,
    #[serde(default)]
    pub min: Vec<f64>,
    #[serde(default)]
    pub max: Vec<f64>,
    /// Smoothing window, output rate and magnitude source.
    #[serde(default)]
    pub output: Output,
    #[serde(skip)]
    pub hold: Vec<f64>,
}

/// The float width of a float-array decoder's message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    #[default]
    /// `std_msgs/msg/Float32MultiArray`.
    Float32,
    /// `std_msgs/msg/Float64MultiArray`.
    Float64,
}

fn pick(v: &[f64], i: usize, default: f64) -> f64 {
    v.get(i).or(v.last()).copied().unwrap_or(default)
}

pub fn joint_values(min: &[f64], max: &[f64], hold: &mut Vec<f64>, act: &[f64]) -> Vec<f64> {
    hold.resize(act.len(), f64::NAN);
    for (i, &a) in act.iter().enumerate() {
        let (lo, hi) = (pick(min, i, 0.0), pick(max, i, 1.0));
        if a > 0.0 {
            hold[i] = lo + a * (hi - lo);
        } else if hold[i].is_nan() {
            hold[i] = lo;
        }
    }
    hold.clone()
}

pub fn joints_message(c: &JointCommandConfig, values: &[f64], time_ns: u64) -> MotorMessage {
    let values: Vec<f64> = values.iter().copied().take(c.joints.len()).collect();
    let (type_name, payload) = match c.message {
        JointsMessage::JointState => {
            let m = JointState {
                header: Header { stamp: Time::from_nanos(time_ns), frame_id: String::new() },
                name: c.joints.clone(),
                position: values.clone(),
                ..Default::default()
            };
            (JointState::TYPE, encode(&m))
        }
        JointsMessage::Float64MultiArray => {
            let m = Float64MultiArray { layout: MultiArrayLayout::vector("joints", values.len()), data: values.clone() };
            (Float64MultiArray::TYPE, encode(&m))
        }
    };
    MotorMessage { type_name, payload, values }
}

pub fn array_message(c: &ArrayCommandConfig, values: &[f64]) -> MotorMessage {
    let (type_name, payload) = match c.precision {
        Precision::Float32 => {
            let data: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            (Float32MultiArray::TYPE, encode(&Float32MultiArray { layout: MultiArrayLayout::vector("x", data.len()), data }))
        }
        Precision::Float64 => (
            Float64MultiArray::TYPE,
            encode(&Float64MultiArray { layout: MultiArrayLayout::vector("x", values.len()), data: values.to_vec() }),
        ),
    };
    MotorMessage { type_name, payload, values: values.to_vec() }
}
