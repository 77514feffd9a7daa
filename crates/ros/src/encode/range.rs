//! Range -> a distance area: the reading as a position on z between the message's `min_range`
//! and `max_range` (or the configured `max_range`), on every x column. Out-of-range readings
//! (no echo) inject nothing.

use serde::{Deserialize, Serialize};

use super::{z_position, AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::decode;
use crate::ros::sensor_msgs::Range;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeConfig {
    pub topic: String,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
    pub area: String,
    /// Distance at the top of z (m); 0 = the message's `max_range`.
    #[serde(default)]
    pub max_range: f64,
    #[serde(default = "one")]
    pub potential: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct RangeEncoder {
    cfg: RangeConfig,
    target: AreaTarget,
}

impl RangeEncoder {
    pub fn new(cfg: RangeConfig, target: AreaTarget) -> Self {
        RangeEncoder { cfg, target }
    }

    pub fn encode(&mut self, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let r: Range = decode(payload)?;
        let mut out = Vec::new();
        let v = r.range as f64;
        if !(v >= r.min_range as f64 && v <= r.max_range as f64) {
            return Ok(out);
        }
        let hi = if self.cfg.max_range > 0.0 { self.cfg.max_range } else { r.max_range as f64 };
        if let Some(z) = z_position(v, r.min_range as f64, hi, self.target.dims[2]) {
            for x in 0..self.target.dims[0] {
                self.target.inject(&mut out, [x, 0, z], self.cfg.potential);
            }
        }
        Ok(out)
    }
}
