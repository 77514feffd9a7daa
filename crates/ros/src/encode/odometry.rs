//! Odometry -> velocity area, the IMU's signed convention: the body's linear velocity
//! (`twist.twist.linear`) on columns 0..6 and its angular velocity (`twist.twist.angular`) on
//! columns 6..12 of one area (x = 2·axis for positive, 2·axis + 1 for negative; the magnitude as a
//! position on z, 0 .. `max_*` mapping to 0 .. top z).

use serde::{Deserialize, Serialize};

use super::imu::signed;
use super::{AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::decode;
use crate::ros::nav_msgs::Odometry;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OdometryConfig {
    pub topic: String,
    /// The area (x >= 12: linear x, y, z then angular x, y, z, each positive and negative).
    pub area: String,
    /// Linear speed at the top of z (m/s).
    #[serde(default = "max_linear")]
    pub max_linear_velocity: f64,
    /// Angular speed at the top of z (rad/s).
    #[serde(default = "max_angular")]
    pub max_angular_velocity: f64,
    /// Potential injected.
    #[serde(default = "one")]
    pub potential: f64,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
}

fn max_linear() -> f64 {
    1.0
}
fn max_angular() -> f64 {
    2.0
}
fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct OdometryEncoder {
    cfg: OdometryConfig,
    linear: AreaTarget,
    angular: AreaTarget,
}

impl OdometryEncoder {
    pub fn new(cfg: OdometryConfig, target: AreaTarget) -> Result<Self, String> {
        if target.dims[0] < 12 {
            return Err(format!("encoder of {}: area {} needs x >= 12 (linear and angular x, y, z, each + and -)", cfg.topic, target.id));
        }
        // The angular half: the same area seen from column 6 on.
        let mut angular = target.clone();
        angular.first += 6 * target.dims[1] * target.dims[2] * target.neurons_per_voxel;
        angular.dims[0] -= 6;
        Ok(OdometryEncoder { cfg, linear: target, angular })
    }

    pub fn encode(&mut self, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let odom: Odometry = decode(payload)?;
        let t = &odom.twist.twist;
        let mut out = Vec::new();
        signed(&self.linear, &t.linear, self.cfg.max_linear_velocity, self.cfg.potential, &mut out);
        signed(&self.angular, &t.angular, self.cfg.max_angular_velocity, self.cfg.potential, &mut out);
        Ok(out)
    }
}
