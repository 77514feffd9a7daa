//! Random bytes never make a decoder or an encoder panic: every message type's decoder and every
//! encoder kind get arbitrary payloads, with and without a valid CDR header, and must answer with
//! a value or an error that names the type. A compressed image that announces more pixels than an
//! image may have is refused from its header, before it is decoded.

use neuroburst::encode::{Encoder, EncoderConfig};
use neuroburst::genome::Genome;
use neuroburst::model::Layout;
use proptest::prelude::*;

use super::fuzz_regressions::targets;

/// The image encoder of the fuzz targets' sensors (area `vis`, 4 x 3 x 3).
fn image_encoder() -> Encoder {
    let genome: Genome = serde_yaml::from_str(targets::SENSORS).unwrap();
    let config: EncoderConfig = serde_yaml::from_str("{kind: image, topic: /a, area: vis, change_threshold: 0.1}").unwrap();
    Encoder::new(&config, &Layout::from_genome(&genome)).unwrap()
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        prop::collection::vec(any::<u8>(), 0..4096).prop_map(|mut v| {
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

    // the coverage-guided fuzzers' bodies (tests/fuzz/targets.rs), on structured payloads up to
    // 4 KiB: every message type's decoder, and every encoder kind with every type it takes
    #[test]
    fn message_decoders_never_panic(bytes in payload()) {
        targets::ros_messages(&bytes);
    }

    #[test]
    fn encoders_never_panic(pick in any::<u8>(), bytes in payload()) {
        let mut data = vec![pick];
        data.extend_from_slice(&bytes);
        targets::encoders(&data);
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
    let mut e = image_encoder();
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

/// A PNG of a few bytes whose header announces `w` x `h` pixels (no image data).
fn png_header(w: u32, h: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in bytes {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    // IHDR, then an IDAT of an empty zlib stream (its header is what a decoder waits for), IEND
    let idat = [b"IDAT".as_slice(), &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]].concat();
    for chunk in [ihdr, idat, b"IEND".to_vec()] {
        png.extend_from_slice(&(chunk.len() as u32 - 4).to_be_bytes());
        png.extend_from_slice(&chunk);
        png.extend_from_slice(&crc32(&chunk).to_be_bytes());
    }
    png
}

#[test]
fn a_compressed_image_too_large_is_refused_before_it_is_decoded() {
    use neuroburst::ros::encode;
    use neuroburst::ros::sensor_msgs::CompressedImage;
    let mut e = image_encoder();
    let started = std::time::Instant::now();
    for (w, h) in [(20_000, 20_000), (1, 1 << 30), (16_384, 16_384)] {
        let msg = encode(&CompressedImage { format: "png".into(), data: png_header(w, h), ..Default::default() });
        let err = e.encode("sensor_msgs/msg/CompressedImage", &msg).unwrap_err().to_string();
        assert!(err.contains(&format!("{w}x{h}")) && err.contains("16777216 pixels"), "{err}");
    }
    // a size that fits is decoded (and this one has no data: an error of the decoder, not the size)
    let msg = encode(&CompressedImage { format: "png".into(), data: png_header(64, 48), ..Default::default() });
    let err = e.encode("sensor_msgs/msg/CompressedImage", &msg).unwrap_err().to_string();
    assert!(err.contains("cannot decode"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
}
