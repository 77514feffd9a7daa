//! The node's built-in sensor encoders and motor decoders: LaserScan and Image in, Twist out.
//! Deliberately small; issue 4's encoders/decoders take over once merged.

use super::cdr::{CdrError, Reader, Writer};
use crate::model::{Injection, Layout, Potential};

pub const LASER_SCAN: &str = "sensor_msgs/msg/LaserScan";
pub const IMAGE: &str = "sensor_msgs/msg/Image";
pub const TWIST: &str = "geometry_msgs/msg/Twist";
pub const EMPTY: &str = "std_msgs/msg/Empty";
pub const BURST_STATS: &str = "neuroburst/msg/BurstStats";

/// RIHS01 hashes (REP-2011), computed with `rosbags` (`hash_rihs01`, ROS 2 Jazzy type store).
pub fn type_hash(type_name: &str) -> Option<&'static str> {
    Some(match type_name {
        LASER_SCAN => "RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828",
        IMAGE => "RIHS01_d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47",
        TWIST => "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a",
        EMPTY => "RIHS01_20b625256f32d5dbc0d04fee44f43c41e51c70d3502f84b4a08e7a9c26a96312",
        BURST_STATS => "RIHS01_a3ab4720d4dc0a4ef3e0d7fa7ccab283fbae08dbe6c465f260085ef09139f841",
        _ => return None,
    })
}

/// Turns one sensor message into injections into its area.
pub struct SensorEncoder {
    type_name: &'static str,
    area: usize,
    gain: f64,
}

impl SensorEncoder {
    pub fn new(type_name: &str, area: usize, gain: f64) -> Result<SensorEncoder, String> {
        let type_name = match type_name {
            LASER_SCAN => LASER_SCAN,
            IMAGE => IMAGE,
            other => return Err(format!("no built-in encoder for {other:?} (known: {LASER_SCAN}, {IMAGE})")),
        };
        Ok(SensorEncoder { type_name, area, gain })
    }

    pub fn encode(&self, layout: &Layout, payload: &[u8], out: &mut Vec<Injection>) -> Result<(), CdrError> {
        let mut r = Reader::new(payload)?;
        let [dx, dy, _] = layout.params[self.area].dims;
        // Strength per voxel (x, y), in 0..=1.
        let mut strength = vec![0f64; (dx * dy) as usize];
        match self.type_name {
            LASER_SCAN => {
                r.header()?;
                for _ in 0..5 {
                    r.f32()?; // angle_min, angle_max, angle_increment, time_increment, scan_time
                }
                let (lo, hi) = (r.f32()? as f64, r.f32()? as f64);
                let ranges = r.f32_seq()?;
                r.f32_seq()?; // intensities
                let span = (hi - lo).max(1e-9);
                for (i, &range) in ranges.iter().enumerate() {
                    let x = i * dx as usize / ranges.len();
                    let closeness = if range.is_finite() { ((hi - range as f64) / span).clamp(0.0, 1.0) } else { 0.0 };
                    strength[x] = strength[x].max(closeness);
                }
            }
            _ => {
                r.header()?;
                let (h, w) = (r.u32()? as usize, r.u32()? as usize);
                let encoding = r.string()?;
                r.u8()?;
                let step = r.u32()? as usize;
                let n = r.len(1)?;
                let data = r.bytes(n)?;
                let channels = match encoding.as_str() {
                    "mono8" | "8UC1" => 1,
                    "rgb8" | "bgr8" | "8UC3" => 3,
                    "rgba8" | "bgra8" | "8UC4" => 4,
                    e => return Err(CdrError(format!("image encoding {e:?} is not supported (mono8, rgb8, bgr8, rgba8, bgra8)"))),
                };
                if step < w * channels || data.len() < step * h {
                    return Err(CdrError(format!("image {w}x{h} {encoding}, step {step}: data has {} bytes", data.len())));
                }
                let mut count = vec![0u32; strength.len()];
                for py in 0..h {
                    for px in 0..w {
                        let p = &data[py * step + px * channels..][..channels];
                        let v = p[..channels.min(3)].iter().map(|&c| c as f64).sum::<f64>() / (255.0 * channels.min(3) as f64);
                        let i = (px * dx as usize / w) * dy as usize + py * dy as usize / h;
                        strength[i] += v;
                        count[i] += 1;
                    }
                }
                strength.iter_mut().zip(&count).for_each(|(s, &c)| *s /= c.max(1) as f64);
            }
        }
        let params = &layout.params[self.area];
        let [_, _, dz] = params.dims;
        for (i, &s) in strength.iter().enumerate() {
            if s <= 0.0 {
                continue;
            }
            let potential = Potential::from_f64(s * self.gain);
            let (x, y) = (i as u32 / dy, i as u32 % dy);
            for z in 0..dz {
                for k in 0..params.neurons_per_voxel {
                    if let Some(neuron) = layout.neuron_id(self.area, [x, y, z, k]) {
                        out.push(Injection { neuron, potential });
                    }
                }
            }
        }
        Ok(())
    }
}

/// Turns the fired neurons of a motor area into a Twist: linear.x = max_linear x the fraction of
/// the area that fired; angular.z = max_angular x (right half - left half) / half the area.
pub struct TwistDecoder {
    pub area: usize,
    pub max_linear: f64,
    pub max_angular: f64,
}

impl TwistDecoder {
    /// `fired`: the fired neurons of the burst (any areas, ascending).
    pub fn decode(&self, layout: &Layout, fired: &[u32]) -> Vec<u8> {
        let params = &layout.params[self.area];
        let total = params.count.max(1) as f64;
        let half = params.dims[0] / 2;
        let (mut all, mut right) = (0u32, 0i64);
        for &n in fired {
            let c = layout.coord(n);
            if c.area == self.area {
                all += 1;
                right += if c.xyzk[0] >= half.max(1) { 1 } else { -1 };
            }
        }
        let mut w = Writer::new();
        w.f64(self.max_linear * all as f64 / total);
        w.f64(0.0);
        w.f64(0.0);
        w.f64(0.0);
        w.f64(0.0);
        w.f64(self.max_angular * right as f64 / (total / 2.0).max(1.0));
        w.finish()
    }
}
