//! Image -> vision area: the image is resized (area average) to the area's x, y; channels go on z
//! (z = 1: grey, z >= 3: red, green, blue on z = 0, 1, 2); intensity 0..1 is scaled to a potential.
//! Image row 0 (the top) is the area's highest y (FEAGI's y points up). With a positive
//! `change_threshold` only voxels whose intensity changed by more than it since the previous frame
//! are injected, so a still scene stops firing.

use serde::{Deserialize, Serialize};

use super::{AreaTarget, EncodeError};
use crate::model::Injection;
use crate::ros::sensor_msgs::{CompressedImage, Image};
use crate::ros::{decode, RosMessage};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageConfig {
    pub topic: String,
    /// Seconds without a message after which the topic stops being injected (0 = never).
    #[serde(default = "super::stale_default")]
    pub stale_after: f64,
    /// The vision area.
    pub area: String,
    /// Potential injected for full intensity (1.0); scaled linearly.
    #[serde(default = "one")]
    pub potential: f64,
    /// Intensities below this (0..1) inject nothing.
    #[serde(default)]
    pub min_intensity: f64,
    /// 0 = off; else only voxels whose intensity changed by more than this since the last frame.
    #[serde(default)]
    pub change_threshold: f64,
}

fn one() -> f64 {
    1.0
}

/// Largest image accepted (pixels), against absurd sizes in corrupt messages.
const MAX_PIXELS: u64 = 64 << 20;

#[derive(Debug)]
pub struct ImageEncoder {
    cfg: ImageConfig,
    target: AreaTarget,
    previous: Option<Vec<f32>>,
}

/// An image as 8- or 16-bit channels, normalised to 0..1 on access.
struct Pixels {
    width: u32,
    height: u32,
    /// Channels in R, G, B(, A) order, or 1 for grey.
    channels: usize,
    values: Vec<f32>,
}

impl ImageEncoder {
    pub fn new(cfg: ImageConfig, target: AreaTarget) -> Self {
        ImageEncoder { cfg, target, previous: None }
    }

    pub fn encode(&mut self, type_name: &str, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let px = if type_name == CompressedImage::TYPE {
            from_compressed(&decode::<CompressedImage>(payload)?)?
        } else {
            from_raw(&decode::<Image>(payload)?)?
        };
        let grid = self.resize(&px);
        let mut out = Vec::new();
        for (i, &v) in grid.iter().enumerate() {
            if let Some(prev) = &self.previous {
                if self.cfg.change_threshold > 0.0 && ((v - prev[i]).abs() as f64) <= self.cfg.change_threshold {
                    continue;
                }
            }
            if (v as f64) < self.cfg.min_intensity || v <= 0.0 {
                continue;
            }
            let [_, dy, dz] = self.target.dims;
            let (x, y, z) = (i as u32 / (dy * dz), (i as u32 / dz) % dy, i as u32 % dz);
            self.target.inject(&mut out, [x, y, z], v as f64 * self.cfg.potential);
        }
        if self.cfg.change_threshold > 0.0 {
            self.previous = Some(grid);
        }
        Ok(out)
    }

    /// Area-averaged intensity per voxel, in voxel order (x, y, z).
    fn resize(&self, px: &Pixels) -> Vec<f32> {
        let [dx, dy, dz] = self.target.dims;
        let mut out = vec![0f32; (dx * dy * dz) as usize];
        for x in 0..dx {
            let c0 = (x as u64 * px.width as u64 / dx as u64) as u32;
            let c1 = (((x as u64 + 1) * px.width as u64).div_ceil(dx as u64) as u32).max(c0 + 1).min(px.width);
            for y in 0..dy {
                // y = 0 is the bottom row of the image
                let row_top = dy - 1 - y;
                let r0 = (row_top as u64 * px.height as u64 / dy as u64) as u32;
                let r1 = (((row_top as u64 + 1) * px.height as u64).div_ceil(dy as u64) as u32).max(r0 + 1).min(px.height);
                for z in 0..dz {
                    let mut sum = 0f64;
                    let mut n = 0u32;
                    for r in r0..r1 {
                        for c in c0..c1 {
                            let base = (r as usize * px.width as usize + c as usize) * px.channels;
                            let v = if dz < 3 || px.channels < 3 {
                                // grey: mean of the colour channels
                                let k = px.channels.min(3);
                                px.values[base..base + k].iter().sum::<f32>() / k as f32
                            } else if (z as usize) < 3 {
                                px.values[base + z as usize]
                            } else {
                                continue;
                            };
                            sum += v as f64;
                            n += 1;
                        }
                    }
                    let i = ((x * dy + y) * dz + z) as usize;
                    out[i] = if n > 0 { (sum / n as f64) as f32 } else { 0.0 };
                }
            }
        }
        out
    }
}

fn content(message: String) -> EncodeError {
    EncodeError::Content { type_name: Image::TYPE, message }
}

fn from_raw(img: &Image) -> Result<Pixels, EncodeError> {
    let (channels, bytes_per, order): (usize, usize, &[usize]) = match img.encoding.as_str() {
        "mono8" | "8UC1" => (1, 1, &[0]),
        "mono16" | "16UC1" => (1, 2, &[0]),
        "rgb8" => (3, 1, &[0, 1, 2]),
        "bgr8" => (3, 1, &[2, 1, 0]),
        "rgba8" => (4, 1, &[0, 1, 2, 3]),
        "bgra8" => (4, 1, &[2, 1, 0, 3]),
        other => return Err(content(format!("unsupported encoding {other:?} (supported: mono8, mono16, rgb8, bgr8, rgba8, bgra8)"))),
    };
    let (w, h) = (img.width as u64, img.height as u64);
    if w == 0 || h == 0 || w * h > MAX_PIXELS {
        return Err(content(format!("image size {w}x{h} is empty or too large")));
    }
    let row = w * (channels * bytes_per) as u64;
    if (img.step as u64) < row {
        return Err(content(format!("step {} is shorter than a row of {w} pixels ({row} bytes)", img.step)));
    }
    if img.data.len() as u64 != img.step as u64 * h {
        return Err(content(format!(
            "data has {} bytes, but {w}x{h} {} with step {} needs {}",
            img.data.len(),
            img.encoding,
            img.step,
            img.step as u64 * h
        )));
    }
    let mut values = Vec::with_capacity((w * h) as usize * channels);
    for r in 0..h as usize {
        let line = &img.data[r * img.step as usize..];
        for c in 0..w as usize {
            let p = &line[c * channels * bytes_per..];
            for &ch in order {
                let v = if bytes_per == 1 {
                    p[ch] as f32 / 255.0
                } else {
                    let b = [p[2 * ch], p[2 * ch + 1]];
                    let raw = if img.is_bigendian != 0 { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) };
                    raw as f32 / 65535.0
                };
                values.push(v);
            }
        }
    }
    Ok(Pixels { width: w as u32, height: h as u32, channels, values })
}

fn from_compressed(img: &CompressedImage) -> Result<Pixels, EncodeError> {
    let err = |message: String| EncodeError::Content { type_name: CompressedImage::TYPE, message };
    let f = img.format.to_ascii_lowercase();
    let format = if f.contains("jpeg") || f.contains("jpg") {
        image::ImageFormat::Jpeg
    } else if f.contains("png") {
        image::ImageFormat::Png
    } else {
        return Err(err(format!("unsupported format {:?} (supported: jpeg, png)", img.format)));
    };
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(&img.data), format);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(512 << 20);
    limits.max_image_width = Some(16384);
    limits.max_image_height = Some(16384);
    reader.limits(limits);
    let decoded = reader.decode().map_err(|e| err(format!("cannot decode the {format:?} data: {e}")))?;
    let rgb = decoded.to_rgb32f();
    let (width, height) = rgb.dimensions();
    if width == 0 || height == 0 {
        return Err(err("empty image".into()));
    }
    Ok(Pixels { width, height, channels: 3, values: rgb.into_raw() })
}
