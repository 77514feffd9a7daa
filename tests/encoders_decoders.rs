//! Encoders and decoders by value: FEAGI's conventions (pixels on x, y with channels on z and the
//! image's top row at the highest y; scalars as a position on z; signed values on even/odd x).

use neuroburst::decode::{Decoder, DecoderConfig};
use neuroburst::encode::{Encoder, EncoderConfig};
use neuroburst::genome::Genome;
use neuroburst::model::{Injection, Layout};
use neuroburst::ros::builtin::Float64MultiArray;
use neuroburst::ros::geometry_msgs::{Twist, Vector3};
use neuroburst::ros::sensor_msgs::{Image, Imu, JointState, LaserScan};
use neuroburst::ros::{decode, encode};

const GENOME: &str = "name: t
areas:
  - {id: rgb, kind: sensor, dims: [2, 2, 3]}
  - {id: grey, kind: sensor, dims: [2, 2, 1]}
  - {id: scan, kind: sensor, dims: [4, 1, 5]}
  - {id: gyro, kind: sensor, dims: [6, 1, 4]}
  - {id: joints, kind: sensor, dims: [2, 1, 4]}
  - {id: mot, kind: motor, dims: [4, 1, 4]}
";

fn layout() -> Layout {
    Layout::from_genome(&serde_yaml::from_str::<Genome>(GENOME).unwrap())
}

fn encoder(yaml: &str) -> Encoder {
    Encoder::new(&serde_yaml::from_str::<EncoderConfig>(yaml).unwrap(), &layout()).unwrap()
}

/// (area id, [x, y, z], potential) of each injection, sorted.
fn voxels(inj: &[Injection]) -> Vec<(String, [u32; 3], f64)> {
    let l = layout();
    let mut v: Vec<_> = inj
        .iter()
        .map(|i| {
            let c = l.coord(i.neuron);
            (l.meta[c.area].id.clone(), [c.xyzk[0], c.xyzk[1], c.xyzk[2]], i.potential.to_f64())
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

/// A 4x4 rgb8 image: the top-left quarter is pure red, the rest black.
fn red_corner() -> Vec<u8> {
    let mut data = vec![0u8; 4 * 4 * 3];
    for r in 0..2 {
        for c in 0..2 {
            data[(r * 4 + c) * 3] = 255;
        }
    }
    encode(&Image { height: 4, width: 4, encoding: "rgb8".into(), step: 12, data, ..Default::default() })
}

#[test]
fn image_channels_on_z_and_the_top_row_at_the_highest_y() {
    let mut e = encoder("{kind: image, topic: /c, area: rgb, potential: 2.0}");
    assert_eq!(voxels(&e.encode("sensor_msgs/msg/Image", &red_corner()).unwrap()), [("rgb".into(), [0, 1, 0], 2.0)]);
    let mut e = encoder("{kind: image, topic: /c, area: grey}");
    let v = voxels(&e.encode("sensor_msgs/msg/Image", &red_corner()).unwrap());
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].1, [0, 1, 0]);
    assert!((v[0].2 - 1.0 / 3.0).abs() < 1e-3, "{v:?}");
    // bgr8: the same bytes are blue
    let msg: Image = decode(&red_corner()).unwrap();
    let bgr = encode(&Image { encoding: "bgr8".into(), ..msg });
    let mut e = encoder("{kind: image, topic: /c, area: rgb}");
    assert_eq!(voxels(&e.encode("sensor_msgs/msg/Image", &bgr).unwrap())[0].1, [0, 1, 2]);
}

#[test]
fn a_still_scene_stops_firing_with_a_change_threshold() {
    let mut e = encoder("{kind: image, topic: /c, area: grey, change_threshold: 0.05}");
    assert_eq!(e.encode("sensor_msgs/msg/Image", &red_corner()).unwrap().len(), 1);
    assert!(e.encode("sensor_msgs/msg/Image", &red_corner()).unwrap().is_empty(), "an unchanged frame injects nothing");
    let white = encode(&Image { height: 4, width: 4, encoding: "mono8".into(), step: 4, data: vec![255; 16], ..Default::default() });
    assert_eq!(e.encode("sensor_msgs/msg/Image", &white).unwrap().len(), 4);
}

#[test]
fn scan_bins_on_x_and_distance_on_z() {
    let mut e = encoder("{kind: laser_scan, topic: /s, area: scan, max_range: 5.0}");
    let scan = LaserScan {
        range_min: 0.1,
        range_max: 10.0,
        ranges: vec![0.2, 9.0, 2.4, 2.6, f32::INFINITY, f32::NAN, 4.9, 20.0],
        ..Default::default()
    };
    let v = voxels(&e.encode("sensor_msgs/msg/LaserScan", &encode(&scan)).unwrap());
    // bins of two rays: nearest 0.2 -> z 0; 2.4 -> z 2; none valid; 4.9 -> z 4
    let got: Vec<[u32; 3]> = v.iter().map(|x| x.1).collect();
    assert_eq!(got, [[0, 0, 0], [1, 0, 2], [3, 0, 4]]);
}

#[test]
fn imu_is_signed_on_x_with_the_magnitude_on_z() {
    let mut e = encoder("{kind: imu, topic: /i, angular_velocity_area: gyro, max_angular_velocity: 2.0}");
    let imu = Imu { angular_velocity: Vector3 { x: 0.6, y: 0.0, z: -2.0 }, ..Default::default() };
    let got: Vec<[u32; 3]> = voxels(&e.encode("sensor_msgs/msg/Imu", &encode(&imu)).unwrap()).iter().map(|x| x.1).collect();
    assert_eq!(got, [[0, 0, 1], [5, 0, 3]]);
}

#[test]
fn joint_positions_on_z_by_name() {
    let mut e = encoder("{kind: joint_state, topic: /j, area: joints, joints: [elbow, shoulder], min: 0.0, max: 1.0}");
    let js =
        JointState { name: vec!["shoulder".into(), "wrist".into(), "elbow".into()], position: vec![0.9, 0.5, 0.1], ..Default::default() };
    let got: Vec<[u32; 3]> = voxels(&e.encode("sensor_msgs/msg/JointState", &encode(&js)).unwrap()).iter().map(|x| x.1).collect();
    assert_eq!(got, [[0, 0, 0], [1, 0, 3]]);
    assert!(e.encode("sensor_msgs/msg/Imu", &encode(&Imu::default())).is_err());
}

fn decoder(yaml: &str) -> Decoder {
    Decoder::new(&serde_yaml::from_str::<DecoderConfig>(yaml).unwrap(), &layout()).unwrap()
}

#[test]
fn twist_even_columns_positive_odd_negative() {
    let mut d = decoder(
        "{kind: twist, area: mot, topic: /cmd_vel, axes: [{axis: linear_x, scale: 1.0, limit: 0.8}, {axis: angular_z, scale: 2.0, limit: 5.0}]}",
    );
    // x = 0 at z = 3 (full), x = 3 at z = 1 (half): linear.x = +1 clamped to 0.8, angular.z = -1
    let m = d.burst(&[[0, 0, 3, 0], [0, 0, 1, 0], [3, 0, 1, 0]], 0, false).unwrap();
    let t: Twist = decode(&m.payload).unwrap();
    assert_eq!((t.linear.x, t.angular.z), (0.8, -1.0));
    // opposite columns cancel
    let t: Twist = decode(&d.burst(&[[0, 0, 3, 0], [1, 0, 3, 0]], 1, false).unwrap().payload).unwrap();
    assert_eq!(t.linear.x, 0.0);
}

#[test]
fn smoothing_window_and_rate() {
    let mut d = decoder(
        "{kind: twist, area: mot, topic: /cmd_vel, axes: [{axis: linear_x, scale: 1.0, limit: 1.0}], output: {window: 2, rate_hz: 10, magnitude: count}}",
    );
    // 4 neurons per column: one fired = 0.25
    let a = d.burst(&[[0, 0, 0, 0]], 0, false).unwrap();
    assert_eq!(a.values, [0.25]);
    assert!(d.burst(&[[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 2, 0]], 50_000_000, false).is_none(), "10 Hz: one message per 100 ms");
    let c = d.burst(&[], 100_000_000, false).unwrap();
    assert_eq!(c.values, [0.375], "mean of the last two bursts (0.75, 0)");
}

#[test]
fn joint_commands_hold_silent_columns() {
    let mut d = decoder("{kind: joints, area: mot, topic: /j, message: float64_multi_array, joints: [a, b, c, d], min: [0.0], max: [2.0]}");
    let m = d.burst(&[[1, 0, 1, 0]], 0, false).unwrap();
    let arr: Float64MultiArray = decode(&m.payload).unwrap();
    assert_eq!(arr.data, [0.0, 1.0, 0.0, 0.0]);
    let m = d.burst(&[[0, 0, 3, 0]], 1, false).unwrap();
    let arr: Float64MultiArray = decode(&m.payload).unwrap();
    assert_eq!(arr.data, [2.0, 1.0, 0.0, 0.0], "column 1 holds its value");
    let mut d = decoder("{kind: joints, area: mot, topic: /j, joints: [a, b], min: [-1.0], max: [1.0]}");
    let js: JointState = decode(&d.burst(&[[1, 0, 3, 0]], 5, false).unwrap().payload).unwrap();
    assert_eq!((js.name, js.position, js.header.stamp.nanosec), (vec!["a".to_string(), "b".to_string()], vec![-1.0, 1.0], 5));
}

#[test]
fn blind_decoders_send_their_stop_commands() {
    // a Twist goes to zero, whatever fired
    let mut d = decoder("{kind: twist, area: mot, topic: /cmd_vel, axes: [{axis: linear_x, scale: 1.0, limit: 1.0}]}");
    let t: Twist = decode(&d.burst(&[[0, 0, 3, 0]], 0, false).unwrap().payload).unwrap();
    assert_eq!(t.linear.x, 1.0);
    let t: Twist = decode(&d.burst(&[[0, 0, 3, 0]], 1, true).unwrap().payload).unwrap();
    assert_eq!(t.linear.x, 0.0);
    // joints hold where the last command left them (and send nothing before the first)
    let mut d = decoder("{kind: joints, area: mot, topic: /j, message: float64_multi_array, joints: [a, b, c, d], min: [0.0], max: [2.0]}");
    assert!(d.burst(&[[1, 0, 1, 0]], 0, true).is_none(), "nothing to hold yet");
    d.burst(&[[1, 0, 1, 0]], 1, false).unwrap();
    let arr: Float64MultiArray = decode(&d.burst(&[[0, 0, 3, 0]], 2, true).unwrap().payload).unwrap();
    assert_eq!(arr.data, [0.0, 1.0, 0.0, 0.0]);
    // `output.stop: none` turns the safe stop off: the brain's commands go on while blind, and
    // nothing is sent at the stop; `zero` overrides the joints' hold
    let mut d = decoder("{kind: twist, area: mot, topic: /c, axes: [{axis: linear_x, scale: 1.0, limit: 1.0}], output: {stop: none}}");
    let t: Twist = decode(&d.burst(&[[0, 0, 3, 0]], 0, true).unwrap().payload).unwrap();
    assert_eq!(t.linear.x, 1.0);
    assert!(d.stop_message(1).is_none());
    let mut d = decoder(
        "{kind: joints, area: mot, topic: /j, message: float64_multi_array, joints: [a, b], min: [0.5], max: [2.0], output: {stop: zero}}",
    );
    let arr: Float64MultiArray = decode(&d.burst(&[], 0, true).unwrap().payload).unwrap();
    assert_eq!(arr.data, [0.0, 0.0]);
}
