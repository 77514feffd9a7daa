//! JointState -> proprioception area: one joint per x (in `joints` order, or the message's order
//! when `joints` is empty), the position as a position on z between `min` and `max`.

use serde::{Deserialize, Serialize};

use super::{z_position, AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::decode;
use crate::ros::sensor_msgs::JointState;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JointsConfig {
    pub topic: String,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
    pub area: String,
    /// Joint names, one per x; empty = the message's order.
    #[serde(default)]
    pub joints: Vec<String>,
    /// Position at z = 0 (rad or m).
    #[serde(default = "minus_pi")]
    pub min: f64,
    /// Position at the top of z.
    #[serde(default = "pi")]
    pub max: f64,
    #[serde(default = "one")]
    pub potential: f64,
}

fn minus_pi() -> f64 {
    -std::f64::consts::PI
}
fn pi() -> f64 {
    std::f64::consts::PI
}
fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct JointsEncoder {
    cfg: JointsConfig,
    target: AreaTarget,
}

impl JointsEncoder {
    pub fn new(cfg: JointsConfig, target: AreaTarget) -> Self {
        JointsEncoder { cfg, target }
    }

    pub fn encode(&mut self, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let js: JointState = decode(payload)?;
        let mut out = Vec::new();
        for (i, &pos) in js.position.iter().enumerate() {
            let x =
                if self.cfg.joints.is_empty() { Some(i) } else { js.name.get(i).and_then(|n| self.cfg.joints.iter().position(|j| j == n)) };
            if let (Some(x), Some(z)) = (x, z_position(pos, self.cfg.min, self.cfg.max, self.target.dims[2])) {
                self.target.inject(&mut out, [x as u32, 0, z], self.cfg.potential);
            }
        }
        Ok(out)
    }
}
