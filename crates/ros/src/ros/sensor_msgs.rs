//! sensor_msgs.

use super::builtin::Header;
use super::geometry_msgs::{Quaternion, Vector3};
use super::typesys::{ros_message, Array};

ros_message! {
    /// An uncompressed image; `data` holds `height` rows of `step` bytes.
    Image = "sensor_msgs/msg/Image" {
        header: Header,
        height: u32,
        width: u32,
        encoding: String,
        is_bigendian: u8,
        step: u32,
        data: Vec<u8>,
    }
}

ros_message! {
    /// A JPEG or PNG image (`format` e.g. `jpeg`, `png`, `rgb8; jpeg compressed bgr8`).
    CompressedImage = "sensor_msgs/msg/CompressedImage" { header: Header, format: String, data: Vec<u8> }
}

ros_message! {
    /// A planar laser scan; ranges outside `[range_min, range_max]` are invalid.
    LaserScan = "sensor_msgs/msg/LaserScan" {
        header: Header,
        angle_min: f32,
        angle_max: f32,
        angle_increment: f32,
        time_increment: f32,
        scan_time: f32,
        range_min: f32,
        range_max: f32,
        ranges: Vec<f32>,
        intensities: Vec<f32>,
    }
}

ros_message! {
    Imu = "sensor_msgs/msg/Imu" {
        header: Header,
        orientation: Quaternion,
        orientation_covariance: Array<f64, 9>,
        angular_velocity: Vector3,
        angular_velocity_covariance: Array<f64, 9>,
        linear_acceleration: Vector3,
        linear_acceleration_covariance: Array<f64, 9>,
    }
}

ros_message! {
    JointState = "sensor_msgs/msg/JointState" {
        header: Header,
        name: Vec<String>,
        position: Vec<f64>,
        velocity: Vec<f64>,
        effort: Vec<f64>,
    }
}

ros_message! {
    /// One distance reading (ultrasound or infrared).
    Range = "sensor_msgs/msg/Range", constants ["uint8 ULTRASOUND=0", "uint8 INFRARED=1"] {
        header: Header,
        radiation_type: u8,
        field_of_view: f32,
        min_range: f32,
        max_range: f32,
        range: f32,
        variance: f32,
    }
}

ros_message! {
    /// One field of a point cloud's points: its name, byte offset, type and count.
    PointField = "sensor_msgs/msg/PointField", constants [
        "uint8 INT8=1", "uint8 UINT8=2", "uint8 INT16=3", "uint8 UINT16=4",
        "uint8 INT32=5", "uint8 UINT32=6", "uint8 FLOAT32=7", "uint8 FLOAT64=8"
    ] {
        name: String,
        offset: u32,
        datatype: u8,
        count: u32,
    }
}

ros_message! {
    /// Points (3-D lidar, depth cameras): `height` rows of `width` points, `point_step` bytes each.
    PointCloud2 = "sensor_msgs/msg/PointCloud2" {
        header: Header,
        height: u32,
        width: u32,
        fields: Vec<PointField>,
        is_bigendian: bool,
        point_step: u32,
        row_step: u32,
        data: Vec<u8>,
        is_dense: bool,
    }
}
