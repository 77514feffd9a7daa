//! Bad bags through `neuroburst replay`: truncated or corrupt files and an unknown message type on
//! a configured topic are errors that name the file or the topic (exit status 2, never a panic);
//! bad messages (unsupported image encoding, image data not matching its size, CDR payloads that
//! are too short or have a wrong header) are dropped, counted per topic and named in the summary.

use crate::common;

use std::path::Path;

use common::{make_bag, ok, python, replay};

fn fails_naming(o: std::process::Output, parts: &[&str]) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "expected a clean error (status 2), got {}: {stderr}", o.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    for p in parts {
        assert!(stderr.contains(p), "expected {p:?} in: {stderr}");
    }
}

#[test]
fn truncated_and_corrupt_bags_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.mcap");
    make_bag(&good, &[]);
    let bytes = std::fs::read(&good).unwrap();
    let out = dir.path().join("out.mcap");

    for (name, cut) in [("truncated.mcap", bytes.len() * 6 / 10), ("header-only.mcap", 20), ("empty.mcap", 0)] {
        let p = dir.path().join(name);
        std::fs::write(&p, &bytes[..cut]).unwrap();
        fails_naming(replay(&p, &out, &[]), &[name, "not a readable bag"]);
    }
    let mut flipped = bytes.clone();
    for b in &mut flipped[bytes.len() / 3..bytes.len() / 3 + 64] {
        *b ^= 0x5a;
    }
    let p = dir.path().join("flipped.mcap");
    std::fs::write(&p, &flipped).unwrap();
    let o = replay(&p, &out, &[]);
    // corrupted record bytes are either refused with the file's name or dropped as bad messages
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    if !o.status.success() {
        fails_naming(o, &["flipped.mcap"]);
    }

    let p = dir.path().join("garbage.db3");
    std::fs::write(&p, vec![0x42u8; 5000]).unwrap();
    fails_naming(replay(&p, &out, &[]), &["garbage.db3", "not a readable bag"]);

    let bagdir = dir.path().join("baddir");
    std::fs::create_dir(&bagdir).unwrap();
    std::fs::write(bagdir.join("metadata.yaml"), "rosbag2_bagfile_information: {version: 9}\n").unwrap();
    fails_naming(replay(&bagdir, &out, &[]), &["metadata.yaml", "relative_file_paths"]);

    fails_naming(replay(Path::new("/nonexistent/bag.mcap"), &out, &[]), &["/nonexistent/bag.mcap"]);
}

const BAD_MESSAGES: &str = r#"
import sys
import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
ts = get_typestore(Stores.ROS2_JAZZY)
T = ts.types
Image, Imu, String = T['sensor_msgs/msg/Image'], T['sensor_msgs/msg/Imu'], T['std_msgs/msg/String']
Header, Time = T['std_msgs/msg/Header'], T['builtin_interfaces/msg/Time']
mode = sys.argv[2]
with Writer(sys.argv[1], version=9, storage_plugin=StoragePlugin.MCAP) as w:
    if mode == 'unknown-type':
        c = w.add_connection('/camera/image_raw', 'std_msgs/msg/String', typestore=ts)
        w.write(c, 10**9, ts.serialize_cdr(String(data='hello'), 'std_msgs/msg/String'))
    else:
        cam = w.add_connection('/camera/image_raw', 'sensor_msgs/msg/Image', typestore=ts)
        imu = w.add_connection('/imu', 'sensor_msgs/msg/Imu', typestore=ts)
        other = w.add_connection('/chatter', 'std_msgs/msg/String', typestore=ts)
        h = Header(stamp=Time(sec=1, nanosec=0), frame_id='c')
        def img(t, enc, n, step=12):
            m = Image(header=h, height=4, width=4, encoding=enc, is_bigendian=0, step=step, data=np.full(n, 200, dtype=np.uint8))
            w.write(cam, t, ts.serialize_cdr(m, 'sensor_msgs/msg/Image'))
        img(10**9, 'yuv422', 32, 8)                      # unsupported encoding
        img(10**9 + 200_000_000, 'rgb8', 47)             # data length does not match 4 x 12
        img(10**9 + 400_000_000, 'rgb8', 48)             # good
        w.write(imu, 10**9 + 100_000_000, bytes([0, 1, 0, 0, 1, 2]))          # too short
        w.write(imu, 10**9 + 300_000_000, bytes([0, 0, 0, 0]) + bytes(400))   # big-endian header
        w.write(other, 10**9 + 50_000_000, ts.serialize_cdr(String(data='x'), 'std_msgs/msg/String'))
"#;

#[test]
fn rosbag2_compressed_bags_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("zbag");
    python::run(
        r#"
import sys
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
ts = get_typestore(Stores.ROS2_JAZZY)
w = Writer(sys.argv[1], version=9, storage_plugin=StoragePlugin.MCAP)
w.set_compression(CompressionMode.FILE, CompressionFormat.ZSTD)
with w:
    c = w.add_connection('/imu', 'sensor_msgs/msg/Imu', typestore=ts)
    w.write(c, 10**9, bytes([0, 1, 0, 0, 0]))
"#,
        &[bag.to_str().unwrap()],
    );
    fails_naming(replay(&bag, &dir.path().join("o.mcap"), &[]), &["metadata.yaml", "compressed by rosbag2", "zstd"]);
}

#[test]
fn unknown_type_on_a_configured_topic_names_the_topic() {
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("bag");
    python::run(BAD_MESSAGES, &[bag.to_str().unwrap(), "unknown-type"]);
    let out = dir.path().join("out.mcap");
    fails_naming(replay(&bag, &out, &[]), &["/camera/image_raw", "std_msgs/msg/String", "image encoder"]);
}

#[test]
fn bad_messages_are_dropped_counted_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("bag");
    python::run(BAD_MESSAGES, &[bag.to_str().unwrap(), "bad-messages"]);
    let out = dir.path().join("out.mcap");
    let s = ok(replay(&bag, &out, &[]));
    let row = |topic: &str| s.lines().find(|l| l.starts_with(topic)).unwrap_or_else(|| panic!("no row for {topic}: {s}")).to_string();
    let cols = |topic: &str| row(topic).split_whitespace().skip(1).map(String::from).collect::<Vec<_>>();
    // received, encoded, replaced, malformed
    assert_eq!(cols("/camera/image_raw"), ["3", "1", "0", "2"], "{s}");
    assert_eq!(cols("/imu"), ["2", "0", "0", "2"], "{s}");
    assert!(row("/chatter").contains("(no encoder)"), "{s}");
    assert!(s.contains("first error on /camera/image_raw: sensor_msgs/msg/Image: unsupported encoding \"yuv422\""), "{s}");
    assert!(s.contains("first error on /imu: sensor_msgs/msg/Imu:"), "{s}");
    // the output is still a valid bag
    let (conns, _) = python::read_bag(&out);
    assert_eq!(conns.len(), 2);
}
