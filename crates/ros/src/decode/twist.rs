//! Twist from a signed motor area: axis i is driven by columns 2i (positive) and 2i + 1
//! (negative): `value = scale · (a(2i) − a(2i+1))`, clamped to ±limit.

use serde::{Deserialize, Serialize};

use super::{MotorMessage, Output};
use crate::ros::builtin::{Header, Time};
use crate::ros::geometry_msgs::{Twist, TwistStamped, Vector3};
use crate::ros::{encode, RosMessage};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwistConfig {
    pub area: String,
    pub topic: String,
    /// Publish geometry_msgs/TwistStamped (stamped with the burst time) instead of Twist.
    #[serde(default)]
    pub stamped: bool,
    /// `frame_id` of TwistStamped.
    #[serde(default)]
    pub frame_id: String,
    /// The axes driven by column pairs (0, 1), (2, 3), ... in order.
    pub axes: Vec<TwistAxis>,
    /// Smoothing window, output rate and magnitude source.
    #[serde(default)]
    pub output: Output,
}

/// One Twist component.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwistAxis {
    /// linear_x | linear_y | linear_z | angular_x | angular_y | angular_z
    pub axis: Axis,
    /// Value at full activation (m/s or rad/s).
    pub scale: f64,
    /// |value| is clamped to this.
    pub limit: f64,
}

/// One of a Twist's six values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// `linear.x`.
    LinearX,
    /// `linear.y`.
    LinearY,
    /// `linear.z`.
    LinearZ,
    /// `angular.x`.
    AngularX,
    /// `angular.y`.
    AngularY,
    /// `angular.z`.
    AngularZ,
}

pub fn values(c: &TwistConfig, act: &[f64]) -> Vec<f64> {
    c.axes
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let pos = act.get(2 * i).copied().unwrap_or(0.0);
            let neg = act.get(2 * i + 1).copied().unwrap_or(0.0);
            (a.scale * (pos - neg)).clamp(-a.limit.abs(), a.limit.abs())
        })
        .collect()
}

pub fn message(c: &TwistConfig, values: &[f64], time_ns: u64) -> MotorMessage {
    let mut t = Twist::default();
    for (a, &v) in c.axes.iter().zip(values) {
        let (vec, i): (&mut Vector3, usize) = match a.axis {
            Axis::LinearX => (&mut t.linear, 0),
            Axis::LinearY => (&mut t.linear, 1),
            Axis::LinearZ => (&mut t.linear, 2),
            Axis::AngularX => (&mut t.angular, 0),
            Axis::AngularY => (&mut t.angular, 1),
            Axis::AngularZ => (&mut t.angular, 2),
        };
        *[&mut vec.x, &mut vec.y, &mut vec.z][i] = v;
    }
    let (type_name, payload) = if c.stamped {
        let m = TwistStamped { header: Header { stamp: Time::from_nanos(time_ns), frame_id: c.frame_id.clone() }, twist: t };
        (TwistStamped::TYPE, encode(&m))
    } else {
        (Twist::TYPE, encode(&t))
    };
    MotorMessage { type_name, payload, values: values.to_vec() }
}
