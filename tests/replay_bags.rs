//! `neuroburst replay` against bags written by rosbags (PyPI), outputs read back with rosbags:
//! the Twist commands follow the camera (checked by value), two runs give the same bytes, a bag
//! directory with a .db3 and a split MCAP directory replay like the single file, and Ctrl-C leaves a
//! readable bag.

use crate::common;

use std::path::Path;

use common::{make_bag, ok, python, replay, root};

/// (bag seconds, linear.x) of every /cmd_vel message, read with rosbags.
fn cmd_vel(out: &Path) -> Vec<(f64, f64)> {
    let (conns, msgs) = python::read_bag(out);
    let topics: Vec<&str> = conns.iter().map(|c| c["connection"].as_str().unwrap()).collect();
    assert_eq!(topics, ["/cmd_vel", "/neuroburst/activity"]);
    assert!(conns.iter().all(|c| c["qos"] == 1), "every channel carries offered_qos_profiles: {conns:?}");
    let t0 = 1_700_000_000.0;
    msgs.iter()
        .filter(|m| m["topic"] == "/cmd_vel")
        .map(|m| (m["t"].as_u64().unwrap() as f64 * 1e-9 - t0, m["msg"]["linear"]["x"].as_f64().unwrap()))
        .collect()
}

fn mean_between(v: &[(f64, f64)], a: f64, b: f64) -> f64 {
    let sel: Vec<f64> = v.iter().filter(|(t, _)| *t >= a && *t < b).map(|p| p.1).collect();
    assert!(sel.len() > 10, "too few commands between {a} and {b} s: {v:?}");
    sel.iter().sum::<f64>() / sel.len() as f64
}

#[test]
fn bright_ahead_drives_forward_dark_backs_and_the_output_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("in.mcap");
    make_bag(&bag, &[]);
    let (a, b) = (dir.path().join("a.mcap"), dir.path().join("b.mcap"));
    let summary = ok(replay(&bag, &a, &[]));
    assert!(summary.contains("/camera/image_raw") && summary.contains("/cmd_vel"), "{summary}");
    ok(replay(&bag, &b, &[]));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "two replays must write the same bytes");

    let v = cmd_vel(&a);
    // 6 s at 20 bursts/s: one command per burst
    assert_eq!(v.len(), 121);
    // bright forward tiles (first 3 s): full speed ahead once the window has filled
    assert!((mean_between(&v, 0.5, 2.9) - 0.5).abs() < 1e-9, "{v:?}");
    // dark (last 3 s): backing at full speed
    assert!((mean_between(&v, 3.6, 6.1) + 0.5).abs() < 1e-9, "{v:?}");

    // the same scene in the other order gives the opposite commands
    let rev = dir.path().join("rev.mcap");
    make_bag(&rev, &["--dark-first"]);
    let c = dir.path().join("c.mcap");
    ok(replay(&rev, &c, &[]));
    let v = cmd_vel(&c);
    assert!(mean_between(&v, 0.5, 2.9) < -0.45 && mean_between(&v, 3.6, 6.1) > 0.45, "{v:?}");

    // the activity topic: one message per burst, the motor area's firing matches the commands
    let (_, msgs) = python::read_bag(&a);
    let act: Vec<&serde_json::Value> = msgs.iter().filter(|m| m["topic"] == "/neuroburst/activity").collect();
    assert_eq!(act.len(), 121);
    assert_eq!(act[0]["msg"]["burst"], 1);
    let ids: Vec<&str> = act[0]["msg"]["area_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(ids.last(), Some(&"o__mot"));
}

#[test]
fn bundled_example_replays_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.mcap");
    let png = dir.path().join("o.png");
    let ex = root().join("examples/diffdrive");
    let o = common::neuroburst(&[
        "replay",
        "--bag",
        ex.join("input.mcap").to_str().unwrap(),
        "--genome",
        ex.join("genome.yaml").to_str().unwrap(),
        "--config",
        ex.join("config.yaml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
    ]);
    let s = ok(o);
    assert!(s.contains("121 bursts"), "{s}");
    let img = image::open(&png).unwrap();
    assert_eq!((img.width(), img.height()), (1200, 800));
    let v = cmd_vel(&out);
    assert!((mean_between(&v, 0.5, 2.9) - 0.5).abs() < 1e-9);

    // the mcap tools (PyPI `mcap`) read it as a ros2 bag: profile, schemas, channels, hashes
    let info = python::run(MCAP_INFO, &[out.to_str().unwrap()]);
    assert_eq!(
        info.trim(),
        "ros2 242\n\
         /cmd_vel geometry_msgs/msg/Twist ros2msg cdr RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a 121\n\
         /neuroburst/activity neuroburst_msgs/msg/BurstActivity ros2msg cdr RIHS01_"
            .to_string()
            + &neuroburst::ros::type_hash::<neuroburst::ros::neuroburst_msgs::BurstActivity>()[7..]
            + " 121"
    );
}

const MCAP_INFO: &str = r#"
import sys
from mcap.reader import make_reader
with open(sys.argv[1], 'rb') as f:
    r = make_reader(f)
    s = r.get_summary()
    print(r.get_header().profile, s.statistics.message_count)
    for cid, c in sorted(s.channels.items()):
        sc = s.schemas[c.schema_id]
        assert 'offered_qos_profiles' in c.metadata
        print(c.topic, sc.name, sc.encoding, c.message_encoding, c.metadata['topic_type_hash'], s.statistics.channel_message_counts[cid])
    n = sum(1 for _ in r.iter_messages())
    assert n == s.statistics.message_count
"#;

#[test]
fn db3_directory_and_split_mcap_directory_replay_like_the_single_file() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single.mcap");
    make_bag(&single, &[]);
    let db3 = dir.path().join("db3bag");
    make_bag(&db3, &["--storage", "sqlite3"]);
    assert!(std::fs::read_dir(&db3).unwrap().any(|e| e.unwrap().path().extension().is_some_and(|x| x == "db3")));
    let split = dir.path().join("splitbag");
    make_bag(&split, &["--split", "3"]);
    let mcaps = std::fs::read_dir(&split).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "mcap")).count();
    assert_eq!(mcaps, 3);

    // the same messages in an MCAP file with zstd-compressed chunks (written by the `mcap` package)
    let zstd = dir.path().join("zstd.mcap");
    python::run(RECOMPRESS, &[single.to_str().unwrap(), zstd.to_str().unwrap()]);

    let outs: Vec<Vec<u8>> = [&single, &db3, &split, &zstd]
        .iter()
        .enumerate()
        .map(|(i, bag)| {
            let out = dir.path().join(format!("out{i}.mcap"));
            ok(replay(bag, &out, &[]));
            std::fs::read(&out).unwrap()
        })
        .collect();
    assert_eq!(outs[0], outs[1], "the .db3 directory must replay exactly like the .mcap file");
    assert_eq!(outs[0], outs[2], "the split directory must replay exactly like the .mcap file");
    assert_eq!(outs[0], outs[3], "zstd chunks must replay exactly like the plain .mcap file");
}

const RECOMPRESS: &str = r#"
import sys
from mcap.reader import make_reader
from mcap.writer import Writer, CompressionType
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as o:
    r = make_reader(f)
    w = Writer(o, compression=CompressionType.ZSTD)
    w.start(profile='ros2', library='test')
    schemas, channels = {}, {}
    for schema, channel, message in r.iter_messages():
        if schema.id not in schemas:
            schemas[schema.id] = w.register_schema(schema.name, schema.encoding, schema.data)
        if channel.id not in channels:
            channels[channel.id] = w.register_channel(channel.topic, channel.message_encoding, schemas[schema.id], channel.metadata)
        w.add_message(channels[channel.id], message.log_time, message.data, message.publish_time, message.sequence)
    w.finish()
"#;

#[test]
fn ctrl_c_leaves_a_readable_bag() {
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("in.mcap");
    make_bag(&bag, &[]);
    let out = dir.path().join("out.mcap");
    let ex = root().join("examples/diffdrive");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["replay", "--bag", bag.to_str().unwrap(), "--genome"])
        .arg(ex.join("genome.yaml"))
        .arg("--config")
        .arg(ex.join("config.yaml"))
        .arg("--out")
        .arg(&out)
        .args(["--set", "log.progress=false", "--set", "replay.pace=2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // 6 s of bag at pace 2 take 3 s: interrupt after about 1.5 s
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let st = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let v = cmd_vel(&out);
    assert!(v.len() > 5 && v.len() < 121, "an interrupted replay has part of the commands: {}", v.len());
}
