//! Imu -> angular velocity and linear acceleration areas, FEAGI's signed convention: column
//! x = 2·axis (positive) or 2·axis + 1 (negative) for axis x, y, z; the magnitude as a position on
//! z (0 .. `max_*` maps to 0 .. top z). Values below half a z step inject nothing.

use serde::{Deserialize, Serialize};

use super::{z_position, AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::decode;
use crate::ros::geometry_msgs::Vector3;
use crate::ros::sensor_msgs::Imu;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImuConfig {
    pub topic: String,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
    /// Area for the angular velocity (x >= 6), or none.
    #[serde(default)]
    pub angular_velocity_area: Option<String>,
    /// Area for the linear acceleration (x >= 6), or none.
    #[serde(default)]
    pub linear_acceleration_area: Option<String>,
    /// Angular speed at the top of z (rad/s).
    #[serde(default = "max_gyro")]
    pub max_angular_velocity: f64,
    /// Acceleration at the top of z (m/s²).
    #[serde(default = "max_accel")]
    pub max_linear_acceleration: f64,
    /// Potential injected.
    #[serde(default = "one")]
    pub potential: f64,
}

fn max_gyro() -> f64 {
    2.0
}
fn max_accel() -> f64 {
    20.0
}
fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct ImuEncoder {
    cfg: ImuConfig,
    gyro: Option<AreaTarget>,
    accel: Option<AreaTarget>,
}

impl ImuEncoder {
    pub fn new(cfg: ImuConfig, gyro: Option<AreaTarget>, accel: Option<AreaTarget>) -> Self {
        ImuEncoder { cfg, gyro, accel }
    }

    pub fn encode(&mut self, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let imu: Imu = decode(payload)?;
        let mut out = Vec::new();
        if let Some(t) = &self.gyro {
            signed(t, &imu.angular_velocity, self.cfg.max_angular_velocity, self.cfg.potential, &mut out);
        }
        if let Some(t) = &self.accel {
            signed(t, &imu.linear_acceleration, self.cfg.max_linear_acceleration, self.cfg.potential, &mut out);
        }
        Ok(out)
    }
}

/// Three signed values on columns 0..6 (even positive, odd negative), magnitude on z.
pub fn signed(t: &AreaTarget, v: &Vector3, max: f64, potential: f64, out: &mut Vec<Injection>) {
    let dz = t.dims[2];
    for (axis, value) in [v.x, v.y, v.z].into_iter().enumerate() {
        if !value.is_finite() || value.abs() < max / (2.0 * dz as f64) {
            continue;
        }
        let x = 2 * axis as u32 + u32::from(value < 0.0);
        if let Some(z) = z_position(value.abs(), 0.0, max, dz) {
            t.inject(out, [x, 0, z], potential);
        }
    }
}
