//! Float32MultiArray / Float64MultiArray -> an area: element i on x = i, its value as a position
//! on z between `min` and `max`. Elements beyond the area's x are ignored.

use serde::{Deserialize, Serialize};

use super::{z_position, AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::builtin::{Float32MultiArray, Float64MultiArray};
use crate::ros::{decode, RosMessage};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FloatArrayConfig {
    pub topic: String,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
    pub area: String,
    #[serde(default)]
    pub min: f64,
    #[serde(default = "one")]
    pub max: f64,
    #[serde(default = "one")]
    pub potential: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct FloatArrayEncoder {
    cfg: FloatArrayConfig,
    target: AreaTarget,
}

impl FloatArrayEncoder {
    pub fn new(cfg: FloatArrayConfig, target: AreaTarget) -> Self {
        FloatArrayEncoder { cfg, target }
    }

    pub fn encode(&mut self, type_name: &str, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let values: Vec<f64> = if type_name == Float32MultiArray::TYPE {
            decode::<Float32MultiArray>(payload)?.data.into_iter().map(f64::from).collect()
        } else {
            decode::<Float64MultiArray>(payload)?.data
        };
        let mut out = Vec::new();
        for (x, v) in values.into_iter().enumerate().take(self.target.dims[0] as usize) {
            if let Some(z) = z_position(v, self.cfg.min, self.cfg.max, self.target.dims[2]) {
                self.target.inject(&mut out, [x as u32, 0, z], self.cfg.potential);
            }
        }
        Ok(out)
    }
}
