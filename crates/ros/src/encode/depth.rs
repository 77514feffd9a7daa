//! Depth image (sensor_msgs/Image, `16UC1` in millimetres or `32FC1` in metres) -> range area,
//! the laser scan's convention in two dimensions: the image is cut into the area's x, y tiles
//! (x left to right; the top row at the highest y, as the image encoder does, so a camera's colour
//! and depth areas line up); each tile's nearest valid depth becomes a position on z
//! (z = 0 near, top z at `max_range`). Zero, NaN and infinite depths are invalid (the REP-118
//! conventions); a tile with none injects nothing.

use serde::{Deserialize, Serialize};

use super::{z_position, AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::decode;
use crate::ros::sensor_msgs::Image;
use crate::ros::RosMessage;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DepthConfig {
    pub topic: String,
    pub area: String,
    /// Depths below this are invalid (m).
    #[serde(default)]
    pub min_range: f64,
    /// Depth mapped to the top of z (m); farther depths are invalid.
    pub max_range: f64,
    /// Potential injected into the tile's voxel.
    #[serde(default = "one")]
    pub potential: f64,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct DepthEncoder {
    cfg: DepthConfig,
    target: AreaTarget,
    nearest: Vec<f64>,
}

impl DepthEncoder {
    pub fn new(cfg: DepthConfig, target: AreaTarget) -> Result<Self, String> {
        if cfg.max_range.is_nan() || cfg.max_range <= cfg.min_range.max(0.0) {
            return Err(format!("encoder of {}: max_range must be above min_range and 0", cfg.topic));
        }
        Ok(DepthEncoder { cfg, target, nearest: Vec::new() })
    }

    pub fn encode(&mut self, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let img: Image = decode(payload)?;
        let err = |message: String| EncodeError::Content { type_name: Image::TYPE, message };
        let (bytes, scale) = match img.encoding.as_str() {
            "16UC1" | "mono16" => (2, 1e-3),
            "32FC1" => (4, 1.0),
            e => return Err(err(format!("encoding {e:?} is not a depth image (16UC1 or 32FC1)"))),
        };
        let (w, h, step) = (img.width as usize, img.height as usize, img.step as usize);
        if w as u64 * h as u64 > super::image::MAX_PIXELS {
            return Err(err(format!("image size {w}x{h} is larger than {} pixels", super::image::MAX_PIXELS)));
        }
        if step < w * bytes || img.data.len() < step * h {
            return Err(err(format!("{w}x{h} pixels of {bytes} bytes in rows of {step} bytes need more than {} bytes", img.data.len())));
        }
        let [dx, dy, dz] = self.target.dims;
        self.nearest.clear();
        self.nearest.resize((dx * dy) as usize, f64::INFINITY);
        let (lo, hi) = (self.cfg.min_range.max(0.0), self.cfg.max_range);
        for y in 0..h {
            let row = &img.data[y * step..y * step + w * bytes];
            let ty = dy as usize - 1 - (y * dy as usize / h).min(dy as usize - 1);
            for x in 0..w {
                let p = &row[x * bytes..(x + 1) * bytes];
                let d = match (bytes, img.is_bigendian != 0) {
                    (2, false) => u16::from_le_bytes([p[0], p[1]]) as f64,
                    (2, true) => u16::from_be_bytes([p[0], p[1]]) as f64,
                    (_, false) => f32::from_le_bytes(p.try_into().unwrap()) as f64,
                    (_, true) => f32::from_be_bytes(p.try_into().unwrap()) as f64,
                } * scale;
                if !d.is_finite() || d <= 0.0 || d < lo || d > hi {
                    continue;
                }
                let tx = (x * dx as usize / w).min(dx as usize - 1);
                let t = &mut self.nearest[tx * dy as usize + ty];
                *t = t.min(d);
            }
        }
        let mut out = Vec::new();
        for tx in 0..dx {
            for ty in 0..dy {
                if let Some(z) = z_position(self.nearest[(tx * dy + ty) as usize], lo, hi, dz) {
                    self.target.inject(&mut out, [tx, ty, z], self.cfg.potential);
                }
            }
        }
        Ok(out)
    }
}
