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

/// Largest image accepted, raw or decoded (pixels: 4096 x 4096), checked before anything is
/// allocated for it: a small compressed message must not decode into gigabytes.
pub const MAX_PIXELS: u64 = 1 << 24;

#[derive(Debug)]
pub struct ImageEncoder {
    cfg: ImageConfig,
    target: AreaTarget,
    previous: Option<Vec<f32>>,
}

/// An image's samples as they came (8 or 16 bits a channel, no copy of a raw image), read as
/// intensities 0..1 one at a time.
struct Pixels<'a> {
    width: u32,
    height: u32,
    /// Channels in R, G, B(, A) order, or 1 for grey.
    channels: usize,
    samples: Samples<'a>,
}

enum Samples<'a> {
    /// 8-bit samples: row `r` starts at `r * step`; channel `ch` of a pixel is byte `order[ch]`.
    Bytes { data: std::borrow::Cow<'a, [u8]>, step: usize, stride: usize, order: &'static [usize] },
    /// 16-bit samples (raw: two bytes each, in the message's byte order).
    Raw16 { data: &'a [u8], step: usize, stride: usize, order: &'static [usize], big_endian: bool },
    /// Decoded 16-bit samples, RGB.
    Wide(Vec<u16>),
}

impl Pixels<'_> {
    /// Channel `ch` of pixel (row `r`, column `c`), 0..1.
    fn value(&self, r: usize, c: usize, ch: usize) -> f32 {
        match &self.samples {
            Samples::Bytes { data, step, stride, order } => data[r * step + c * stride + order[ch]] as f32 / 255.0,
            Samples::Raw16 { data, step, stride, order, big_endian } => {
                let i = r * step + c * stride + 2 * order[ch];
                let b = [data[i], data[i + 1]];
                (if *big_endian { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) }) as f32 / 65535.0
            }
            Samples::Wide(v) => v[(r * self.width as usize + c) * 3 + ch] as f32 / 65535.0,
        }
    }
}

impl ImageEncoder {
    pub fn new(cfg: ImageConfig, target: AreaTarget) -> Self {
        ImageEncoder { cfg, target, previous: None }
    }

    pub fn encode(&mut self, type_name: &str, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        let grid = if type_name == CompressedImage::TYPE {
            self.resize(&from_compressed(&decode::<CompressedImage>(payload)?)?)
        } else {
            let image = decode::<Image>(payload)?;
            self.resize(&from_raw(&image)?)
        };
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
                    for r in r0 as usize..r1 as usize {
                        for c in c0 as usize..c1 as usize {
                            let v = if dz < 3 || px.channels < 3 {
                                // grey: mean of the colour channels
                                let k = px.channels.min(3);
                                (0..k).map(|ch| px.value(r, c, ch)).sum::<f32>() / k as f32
                            } else if (z as usize) < 3 {
                                px.value(r, c, z as usize)
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

fn from_raw(img: &Image) -> Result<Pixels<'_>, EncodeError> {
    let (channels, bytes_per, order): (usize, usize, &'static [usize]) = match img.encoding.as_str() {
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
        return Err(content(format!("image size {w}x{h} is empty or larger than {MAX_PIXELS} pixels")));
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
    let (step, stride) = (img.step as usize, channels * bytes_per);
    let samples = if bytes_per == 1 {
        Samples::Bytes { data: std::borrow::Cow::Borrowed(&img.data), step, stride, order }
    } else {
        Samples::Raw16 { data: &img.data, step, stride, order, big_endian: img.is_bigendian != 0 }
    };
    Ok(Pixels { width: w as u32, height: h as u32, channels, samples })
}

fn from_compressed(img: &CompressedImage) -> Result<Pixels<'static>, EncodeError> {
    let err = |message: String| EncodeError::Content { type_name: CompressedImage::TYPE, message };
    let f = img.format.to_ascii_lowercase();
    let format = if f.contains("jpeg") || f.contains("jpg") {
        image::ImageFormat::Jpeg
    } else if f.contains("png") {
        image::ImageFormat::Png
    } else {
        return Err(err(format!("unsupported format {:?} (supported: jpeg, png)", img.format)));
    };
    let reader = || image::ImageReader::with_format(std::io::Cursor::new(&img.data), format);
    // the size its header announces, checked before a byte is decoded
    let (width, height) = reader().into_dimensions().map_err(|e| err(format!("cannot read the {format:?} header: {e}")))?;
    if width == 0 || height == 0 || width as u64 * height as u64 > MAX_PIXELS {
        return Err(err(format!("image size {width}x{height} is empty or larger than {MAX_PIXELS} pixels")));
    }
    let mut reader = reader();
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(width);
    limits.max_image_height = Some(height);
    limits.max_alloc = Some(MAX_PIXELS * 8 + (1 << 20));
    reader.limits(limits);
    let decoded = reader.decode().map_err(|e| err(format!("cannot decode the {format:?} data: {e}")))?;
    if (decoded.width(), decoded.height()) != (width, height) {
        return Err(err(format!("the header says {width}x{height}, the data decodes to {}x{}", decoded.width(), decoded.height())));
    }
    let samples = match decoded.color().bytes_per_pixel() / decoded.color().channel_count().max(1) {
        1 => Samples::Bytes {
            data: std::borrow::Cow::Owned(decoded.into_rgb8().into_raw()),
            step: width as usize * 3,
            stride: 3,
            order: &[0, 1, 2],
        },
        _ => Samples::Wide(decoded.into_rgb16().into_raw()),
    };
    Ok(Pixels { width, height, channels: 3, samples })
}
