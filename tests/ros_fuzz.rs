//! Random bytes never make a decoder or an encoder panic: every message type's decoder and every
//! encoder kind get arbitrary payloads, with and without a valid CDR header, and must answer with
//! a value or an error that names the type.

use neuroburst::encode::{Encoder, EncoderConfig};
use neuroburst::genome::Genome;
use neuroburst::model::Layout;
use neuroburst::ros::registry;
use proptest::prelude::*;

const GENOME: &str = "name: fuzz
areas:
  - {id: vis, kind: sensor, dims: [4, 3, 3]}
  - {id: scan, kind: sensor, dims: [8, 1, 5]}
  - {id: imu, kind: sensor, dims: [6, 1, 4]}
  - {id: joints, kind: sensor, dims: [4, 1, 8], neurons_per_voxel: 2}
";

fn encoders() -> Vec<Encoder> {
    let genome: Genome = serde_yaml::from_str(GENOME).unwrap();
    let layout = Layout::from_genome(&genome);
    let configs: Vec<EncoderConfig> = serde_yaml::from_str(
        "- {kind: image, topic: /a, area: vis, change_threshold: 0.1}
- {kind: laser_scan, topic: /b, area: scan}
- {kind: imu, topic: /c, angular_velocity_area: imu, linear_acceleration_area: imu}
- {kind: joint_state, topic: /d, area: joints}
- {kind: range, topic: /e, area: scan}
- {kind: float_array, topic: /f, area: joints}
",
    )
    .unwrap();
    configs.iter().map(|c| Encoder::new(c, &layout).unwrap()).collect()
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        prop::collection::vec(any::<u8>(), 0..600).prop_map(|mut v| {
            v.splice(0..0, [0u8, 1, 0, 0]);
            v
        }),
        // small counts and lengths, so that decoding goes deep
        prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(2u8), Just(3u8), any::<u8>()], 0..400).prop_map(|mut v| {
            v.splice(0..0, [0u8, 1, 0, 0]);
            v
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn message_decoders_never_panic(bytes in payload()) {
        for name in registry::type_names() {
            if let Some(Err(e)) = registry::check(name, &bytes) {
                prop_assert!(e.to_string().starts_with(name), "{e}");
            }
        }
    }

    #[test]
    fn encoders_never_panic(bytes in payload()) {
        let mut encs = encoders();
        for e in &mut encs {
            for t in e.config.message_types() {
                let _ = e.encode(t, &bytes);
            }
        }
    }
}

#[test]
fn short_payloads_and_wrong_headers_are_named_errors() {
    use neuroburst::ros::decode;
    use neuroburst::ros::sensor_msgs::Imu;
    let e = decode::<Imu>(&[0, 1]).unwrap_err().to_string();
    assert!(e.contains("sensor_msgs/msg/Imu") && e.contains("shorter than the 4-byte CDR header"), "{e}");
    let e = decode::<Imu>(&[0, 0, 0, 0, 1, 2, 3]).unwrap_err().to_string();
    assert!(e.contains("sensor_msgs/msg/Imu") && e.contains("not CDR little endian"), "{e}");
    let e = decode::<Imu>(&[0, 1, 0, 0, 1, 2, 3]).unwrap_err().to_string();
    assert!(e.contains("sensor_msgs/msg/Imu") && e.contains("payload ends"), "{e}");
}

#[test]
fn bad_images_are_named_errors() {
    use neuroburst::ros::encode;
    use neuroburst::ros::sensor_msgs::{CompressedImage, Image};
    let mut e = encoders().remove(0);
    let img = |enc: &str, w: u32, h: u32, step: u32, n: usize| {
        encode(&Image { height: h, width: w, encoding: enc.into(), step, data: vec![200; n], ..Default::default() })
    };
    let err = e.encode("sensor_msgs/msg/Image", &img("yuv422", 4, 4, 8, 32)).unwrap_err().to_string();
    assert!(err.contains("unsupported encoding \"yuv422\""), "{err}");
    let err = e.encode("sensor_msgs/msg/Image", &img("rgb8", 4, 4, 12, 47)).unwrap_err().to_string();
    assert!(err.contains("data has 47 bytes"), "{err}");
    let err = e.encode("sensor_msgs/msg/Image", &img("rgb8", 4, 4, 6, 24)).unwrap_err().to_string();
    assert!(err.contains("step 6"), "{err}");
    assert_eq!(e.encode("sensor_msgs/msg/Image", &img("rgb8", 4, 4, 12, 48)).unwrap().len(), 4 * 3 * 3);
    let bad = encode(&CompressedImage { format: "jpeg".into(), data: vec![1, 2, 3], ..Default::default() });
    let err = e.encode("sensor_msgs/msg/CompressedImage", &bad).unwrap_err().to_string();
    assert!(err.contains("CompressedImage") && err.contains("Jpeg"), "{err}");
    let bad = encode(&CompressedImage { format: "tiff".into(), data: vec![1, 2, 3], ..Default::default() });
    let err = e.encode("sensor_msgs/msg/CompressedImage", &bad).unwrap_err().to_string();
    assert!(err.contains("unsupported format"), "{err}");
}
