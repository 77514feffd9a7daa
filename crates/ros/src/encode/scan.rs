//! LaserScan -> range area: the scan's angle span is cut into x bins (x = 0 at `angle_min`, the
//! right side for a counter-clockwise scan); each bin's nearest valid range becomes a position on
//! z (FEAGI's scalar-on-z: z = 0 near, top z far). Bins without a valid range inject nothing.

use serde::{Deserialize, Serialize};

use super::{z_position, AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::decode;
use crate::ros::sensor_msgs::LaserScan;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanConfig {
    pub topic: String,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
    pub area: String,
    /// Distance mapped to the top of z (m); 0 = the scan's own `range_max`.
    #[serde(default)]
    pub max_range: f64,
    /// Potential injected into the bin's voxel.
    #[serde(default = "one")]
    pub potential: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct ScanEncoder {
    cfg: ScanConfig,
    target: AreaTarget,
}

impl ScanEncoder {
    pub fn new(cfg: ScanConfig, target: AreaTarget) -> Self {
        ScanEncoder { cfg, target }
    }

    pub fn encode(&mut self, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let scan: LaserScan = decode(payload)?;
        let [dx, _, dz] = self.target.dims;
        let n = scan.ranges.len();
        let hi = if self.cfg.max_range > 0.0 { self.cfg.max_range } else { scan.range_max as f64 };
        let lo = (scan.range_min as f64).max(0.0);
        let mut nearest = vec![f64::INFINITY; dx as usize];
        for (i, &r) in scan.ranges.iter().enumerate() {
            let r = r as f64;
            if !r.is_finite() || r < scan.range_min as f64 || r > scan.range_max as f64 {
                continue;
            }
            let bin = (i * dx as usize / n.max(1)).min(dx as usize - 1);
            nearest[bin] = nearest[bin].min(r);
        }
        let mut out = Vec::new();
        for (x, &r) in nearest.iter().enumerate() {
            if let Some(z) = z_position(r, lo, hi, dz) {
                self.target.inject(&mut out, [x as u32, 0, z], self.cfg.potential);
            }
        }
        Ok(out)
    }
}
