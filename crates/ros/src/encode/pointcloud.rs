//! PointCloud2 -> occupancy area (3-D lidar, depth cameras): the points inside a box (`min`..`max`,
//! metres, in the cloud's frame) are binned into the area's x, y, z voxels; every voxel with at
//! least `min_points` points is injected once. Points with a NaN or infinite coordinate, or
//! outside the box, are skipped. x, y and z may be FLOAT32 or FLOAT64, either byte order.

use serde::{Deserialize, Serialize};

use super::{AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::decode;
use crate::ros::sensor_msgs::{PointCloud2, PointField};
use crate::ros::RosMessage;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointCloudConfig {
    pub topic: String,
    pub area: String,
    /// The box's lower corner (x, y, z in metres): voxel (0, 0, 0) starts here.
    pub min: [f64; 3],
    /// The box's upper corner.
    pub max: [f64; 3],
    /// Points a voxel needs to be injected (filters lone returns).
    #[serde(default = "one_point")]
    pub min_points: u32,
    /// Potential injected into an occupied voxel.
    #[serde(default = "one")]
    pub potential: f64,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
}

fn one_point() -> u32 {
    1
}
fn one() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct PointCloudEncoder {
    cfg: PointCloudConfig,
    target: AreaTarget,
    counts: Vec<u32>,
}

/// Where a coordinate lies in each point, and how to read it.
#[derive(Clone, Copy)]
struct Coord {
    offset: usize,
    double: bool,
}

fn err(message: String) -> EncodeError {
    EncodeError::Content { type_name: PointCloud2::TYPE, message }
}

fn coord(fields: &[PointField], name: &str) -> Result<Coord, EncodeError> {
    let f = fields.iter().find(|f| f.name == name).ok_or_else(|| err(format!("no field {name:?}")))?;
    match f.datatype {
        7 => Ok(Coord { offset: f.offset as usize, double: false }),
        8 => Ok(Coord { offset: f.offset as usize, double: true }),
        d => Err(err(format!("field {name:?} has datatype {d}; x, y and z must be FLOAT32 (7) or FLOAT64 (8)"))),
    }
}

impl PointCloudEncoder {
    pub fn new(cfg: PointCloudConfig, target: AreaTarget) -> Result<Self, String> {
        if (0..3).any(|i| !cfg.min[i].is_finite() || !cfg.max[i].is_finite() || cfg.max[i] <= cfg.min[i]) {
            return Err(format!("encoder of {}: max must be above min on every axis (min {:?}, max {:?})", cfg.topic, cfg.min, cfg.max));
        }
        let [dx, dy, dz] = target.dims;
        Ok(PointCloudEncoder { cfg, counts: vec![0; (dx * dy * dz) as usize], target })
    }

    pub fn encode(&mut self, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let cloud: PointCloud2 = decode(payload)?;
        let xyz = [coord(&cloud.fields, "x")?, coord(&cloud.fields, "y")?, coord(&cloud.fields, "z")?];
        let step = cloud.point_step as usize;
        let points = cloud.width as usize * cloud.height as usize;
        let row = cloud.row_step as usize;
        let width = cloud.width as usize;
        let need = xyz.iter().map(|c| c.offset + if c.double { 8 } else { 4 }).max().unwrap_or(0);
        if step < need {
            return Err(err(format!("point_step {step} is shorter than the x, y, z fields ({need} bytes)")));
        }
        // in checked arithmetic: every size comes from the message
        let fits = (|| {
            let last_row = row.checked_mul((cloud.height as usize).checked_sub(1)?)?;
            let used = last_row.checked_add(width.checked_mul(step)?)?;
            Some(row >= width * step && cloud.data.len() >= used)
        })();
        if points == 0 {
            return Ok(Vec::new());
        }
        if fits != Some(true) || points > cloud.data.len() / step.max(1) {
            return Err(err(format!(
                "{points} points of {step} bytes in rows of {row} bytes do not fit in {} bytes of data",
                cloud.data.len()
            )));
        }
        let read = |p: &[u8], c: Coord| -> f64 {
            let o = c.offset;
            match (c.double, cloud.is_bigendian) {
                (false, false) => f32::from_le_bytes(p[o..o + 4].try_into().unwrap()) as f64,
                (false, true) => f32::from_be_bytes(p[o..o + 4].try_into().unwrap()) as f64,
                (true, false) => f64::from_le_bytes(p[o..o + 8].try_into().unwrap()),
                (true, true) => f64::from_be_bytes(p[o..o + 8].try_into().unwrap()),
            }
        };
        let dims = self.target.dims;
        self.counts.fill(0);
        for r in 0..cloud.height as usize {
            for i in 0..width {
                let start = r * row + i * step;
                let p = &cloud.data[start..start + step];
                let mut v = [0u32; 3];
                let mut inside = true;
                for a in 0..3 {
                    let f = (read(p, xyz[a]) - self.cfg.min[a]) / (self.cfg.max[a] - self.cfg.min[a]);
                    // NaN fails both comparisons
                    if !(0.0..1.0).contains(&f) {
                        inside = false;
                        break;
                    }
                    v[a] = ((f * dims[a] as f64) as u32).min(dims[a] - 1);
                }
                if inside {
                    self.counts[((v[0] * dims[1] + v[1]) * dims[2] + v[2]) as usize] += 1;
                }
            }
        }
        let mut out = Vec::new();
        for (voxel, &n) in self.counts.iter().enumerate() {
            if n >= self.cfg.min_points.max(1) {
                let voxel = voxel as u32;
                let xyz = [voxel / (dims[1] * dims[2]), voxel / dims[2] % dims[1], voxel % dims[2]];
                self.target.inject(&mut out, xyz, self.cfg.potential);
            }
        }
        Ok(out)
    }
}
