//! Encoders: one sensor message -> the injection of one (or two) sensor areas, following FEAGI's
//! conventions (pixels on x, y with channels on z; a scalar as a position along z; signed values
//! split over even/odd x). Configured per topic (`encoders:` in the configuration).
//!
//! An encoder is stateful (change detection); it is fed every message of its topic, in bag order,
//! and returns the injection that stands until its topic's next message, or until the topic has
//! been silent for the encoder's `stale_after` seconds (a dead sensor is not injected forever).

mod depth;
mod float_array;
mod image;
mod imu;
mod joints;
mod odometry;
mod pointcloud;
mod range;
mod scalar;
mod scan;

use serde::{Deserialize, Serialize};

use crate::model::{Injection, Layout};
use crate::ros::MsgError;

pub use scalar::{z_position, AreaTarget};

/// One encoder of the configuration: a topic, the area(s) it drives, and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum EncoderConfig {
    /// sensor_msgs/Image (mono8, mono16, rgb8, bgr8, rgba8, bgra8) or CompressedImage (jpeg, png).
    Image(image::ImageConfig),
    /// sensor_msgs/LaserScan.
    LaserScan(scan::ScanConfig),
    /// sensor_msgs/Imu.
    Imu(imu::ImuConfig),
    /// sensor_msgs/JointState.
    JointState(joints::JointsConfig),
    /// sensor_msgs/Range.
    Range(range::RangeConfig),
    /// std_msgs/Float32MultiArray or Float64MultiArray.
    FloatArray(float_array::FloatArrayConfig),
    /// sensor_msgs/PointCloud2 (3-D lidar, depth cameras): points binned into the area's voxels.
    PointCloud(pointcloud::PointCloudConfig),
    /// sensor_msgs/Image of depths (16UC1 mm, 32FC1 m): nearest depth per tile on z.
    DepthImage(depth::DepthConfig),
    /// nav_msgs/Odometry: the body's linear and angular velocity, signed columns.
    Odometry(odometry::OdometryConfig),
}

/// The largest message of `type_name` a sensor topic takes unless configured otherwise
/// (`zenoh.max_message_size: 0`): a 4K RGBA camera frame, a 128-beam lidar's cloud, a long scan.
pub fn default_max_message_bytes(type_name: &str) -> u64 {
    use crate::ros::builtin::{Float32MultiArray, Float64MultiArray};
    use crate::ros::sensor_msgs::{CompressedImage, Image, JointState, LaserScan, PointCloud2};
    use crate::ros::RosMessage;
    match type_name {
        t if t == Image::TYPE => 40 << 20,
        t if t == PointCloud2::TYPE => 32 << 20,
        t if t == CompressedImage::TYPE => 16 << 20,
        t if [LaserScan::TYPE, JointState::TYPE, Float32MultiArray::TYPE, Float64MultiArray::TYPE].contains(&t) => 4 << 20,
        _ => 1 << 20,
    }
}

/// `stale_after` when the configuration does not say: half a second.
pub fn stale_default() -> f64 {
    0.5
}

/// Apply `$e` to the variant's configuration, whatever its kind.
macro_rules! each_kind {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            EncoderConfig::Image($c) => $e,
            EncoderConfig::LaserScan($c) => $e,
            EncoderConfig::Imu($c) => $e,
            EncoderConfig::JointState($c) => $e,
            EncoderConfig::Range($c) => $e,
            EncoderConfig::FloatArray($c) => $e,
            EncoderConfig::PointCloud($c) => $e,
            EncoderConfig::DepthImage($c) => $e,
            EncoderConfig::Odometry($c) => $e,
        }
    };
}

impl EncoderConfig {
    /// The topic it reads.
    pub fn topic(&self) -> &str {
        each_kind!(self, c => &c.topic)
    }

    /// The topic, to rename it (ROS remappings).
    pub fn topic_mut(&mut self) -> &mut String {
        each_kind!(self, c => &mut c.topic)
    }

    /// Seconds of silence after which the topic's injection stops (0 = never).
    pub fn stale_after(&self) -> f64 {
        each_kind!(self, c => c.stale_after)
    }

    /// The message types this encoder accepts (`pkg/msg/Type`); the first is what the live node
    /// subscribes with unless `node.input_types` says otherwise.
    pub fn message_types(&self) -> &'static [&'static str] {
        match self {
            EncoderConfig::Image(_) => &["sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage"],
            EncoderConfig::LaserScan(_) => &["sensor_msgs/msg/LaserScan"],
            EncoderConfig::Imu(_) => &["sensor_msgs/msg/Imu"],
            EncoderConfig::JointState(_) => &["sensor_msgs/msg/JointState"],
            EncoderConfig::Range(_) => &["sensor_msgs/msg/Range"],
            EncoderConfig::FloatArray(_) => &["std_msgs/msg/Float32MultiArray", "std_msgs/msg/Float64MultiArray"],
            EncoderConfig::PointCloud(_) => &["sensor_msgs/msg/PointCloud2"],
            EncoderConfig::DepthImage(_) => &["sensor_msgs/msg/Image"],
            EncoderConfig::Odometry(_) => &["nav_msgs/msg/Odometry"],
        }
    }
}

/// Why a message could not be encoded, or an encoder not built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EncodeError {
    #[error(transparent)]
    /// The payload is not a valid message of its type.
    Message(#[from] MsgError),
    #[error("{type_name}: {message}")]
    /// A valid message whose content the encoder cannot take (e.g. an image of another size).
    Content {
        /// The message type.
        type_name: &'static str,
        /// What the encoder cannot take.
        message: String,
    },
    #[error("type {0} is not handled by this encoder")]
    /// A message of another type than the encoder's.
    WrongType(String),
    #[error("{0}")]
    /// The encoder's configuration is wrong.
    Config(String),
}

/// A built encoder.
#[derive(Debug)]
pub struct Encoder {
    /// Its configuration.
    pub config: EncoderConfig,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Image(image::ImageEncoder),
    Scan(scan::ScanEncoder),
    Imu(imu::ImuEncoder),
    Joints(joints::JointsEncoder),
    Range(range::RangeEncoder),
    FloatArray(float_array::FloatArrayEncoder),
    PointCloud(pointcloud::PointCloudEncoder),
    Depth(depth::DepthEncoder),
    Odometry(odometry::OdometryEncoder),
}

impl Encoder {
    /// Resolve the configured area(s) in `layout`; errors name the topic and the area.
    pub fn new(config: &EncoderConfig, layout: &Layout) -> Result<Encoder, EncodeError> {
        let topic = config.topic().to_string();
        let target = |area: &str| AreaTarget::resolve(layout, area).map_err(|e| EncodeError::Config(format!("encoder of {topic}: {e}")));
        if config.stale_after().is_nan() || config.stale_after() < 0.0 {
            return Err(EncodeError::Config(format!("encoder of {topic}: stale_after must be >= 0 seconds")));
        }
        let inner = match config {
            EncoderConfig::Image(c) => Inner::Image(image::ImageEncoder::new(c.clone(), target(&c.area)?)),
            EncoderConfig::LaserScan(c) => Inner::Scan(scan::ScanEncoder::new(c.clone(), target(&c.area)?)),
            EncoderConfig::Imu(c) => {
                let gyro = c.angular_velocity_area.as_deref().map(target).transpose()?;
                let accel = c.linear_acceleration_area.as_deref().map(target).transpose()?;
                for t in gyro.iter().chain(accel.iter()) {
                    if t.dims[0] < 6 {
                        return Err(EncodeError::Config(format!(
                            "encoder of {topic}: area {} needs x >= 6 (axis x, y, z, each positive and negative)",
                            t.id
                        )));
                    }
                }
                Inner::Imu(imu::ImuEncoder::new(c.clone(), gyro, accel))
            }
            EncoderConfig::JointState(c) => Inner::Joints(joints::JointsEncoder::new(c.clone(), target(&c.area)?)),
            EncoderConfig::Range(c) => Inner::Range(range::RangeEncoder::new(c.clone(), target(&c.area)?)),
            EncoderConfig::FloatArray(c) => Inner::FloatArray(float_array::FloatArrayEncoder::new(c.clone(), target(&c.area)?)),
            EncoderConfig::PointCloud(c) => {
                Inner::PointCloud(pointcloud::PointCloudEncoder::new(c.clone(), target(&c.area)?).map_err(EncodeError::Config)?)
            }
            EncoderConfig::DepthImage(c) => {
                Inner::Depth(depth::DepthEncoder::new(c.clone(), target(&c.area)?).map_err(EncodeError::Config)?)
            }
            EncoderConfig::Odometry(c) => {
                Inner::Odometry(odometry::OdometryEncoder::new(c.clone(), target(&c.area)?).map_err(EncodeError::Config)?)
            }
        };
        Ok(Encoder { config: config.clone(), inner })
    }

    /// Encode one message of type `type_name` (CDR payload with header) into injections.
    pub fn encode(&mut self, type_name: &str, payload: &[u8]) -> Result<Vec<Injection>, EncodeError> {
        if !self.config.message_types().contains(&type_name) {
            return Err(EncodeError::WrongType(type_name.to_string()));
        }
        match &mut self.inner {
            Inner::Image(e) => e.encode(type_name, payload),
            Inner::Scan(e) => e.encode(payload),
            Inner::Imu(e) => e.encode(payload),
            Inner::Joints(e) => e.encode(payload),
            Inner::Range(e) => e.encode(payload),
            Inner::FloatArray(e) => e.encode(type_name, payload),
            Inner::PointCloud(e) => e.encode(payload),
            Inner::Depth(e) => e.encode(payload),
            Inner::Odometry(e) => e.encode(payload),
        }
    }
}

/// One message by each of a topic's `encoders` (configuration order), each sorted by neuron
/// (ascending injections are a backend's fastest).
pub fn encode_sorted(encoders: &mut [Encoder], type_name: &str, payload: &[u8]) -> Result<Vec<Vec<Injection>>, EncodeError> {
    encoders
        .iter_mut()
        .map(|e| {
            let mut v = e.encode(type_name, payload)?;
            v.sort_by_key(|x| x.neuron);
            Ok(v)
        })
        .collect()
}

/// Whether a topic's encoded message is news: it differs from the last one that was (what starts
/// a reflex under `node.reflex.on_change`, live and in a replay's plan).
#[derive(Default)]
pub struct News(Option<Vec<Vec<Injection>>>);

impl News {
    /// Whether `now` differs from the injections last seen (and remember it).
    pub fn changed(&mut self, now: &[Vec<Injection>]) -> bool {
        let news = self.0.as_deref() != Some(now);
        if news {
            self.0 = Some(now.to_vec());
        }
        news
    }
}
