//! The live view against a WebSocket client of its own (tests/python/view_client.py, PyPI
//! `websockets`, speaking `foxglove.sdk.v1` from the protocol's spec): `replay --view` advertises
//! the scene, the fired neurons, the motor, activity and sensor topics with their schemas, and
//! what the client receives is what the replay records (same log times, same bytes). And the
//! `--plot` picture explains itself. Everything on 127.0.0.1.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::{free_port, repo, root, rover_node, venv, Proc};
use sha2::{Digest, Sha256};

/// (topic -> (schema name, schema encoding, message encoding)), (topic -> {(log time, sha256)})
type Recorded = (BTreeMap<String, (String, String, String)>, BTreeMap<String, BTreeSet<(u64, String)>>);

fn recorded(path: &Path) -> Recorded {
    let bytes = std::fs::read(path).unwrap();
    let (mut channels, mut messages) = (BTreeMap::new(), BTreeMap::<String, BTreeSet<_>>::new());
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        let c = &m.channel;
        let (name, enc) = c.schema.as_ref().map_or((String::new(), String::new()), |s| (s.name.clone(), s.encoding.clone()));
        channels.insert(c.topic.clone(), (name, enc, c.message_encoding.clone()));
        let hash: String = Sha256::digest(&m.data).iter().map(|b| format!("{b:02x}")).collect();
        messages.entry(c.topic.clone()).or_default().insert((m.log_time, hash));
    }
    (channels, messages)
}

/// tests/python/view_client.py on the view at `port` for at most `seconds` (it ends earlier when
/// the server closes), its findings in `out`: (success, what it said).
pub fn client(python: &Path, port: u16, seconds: u32, out: &Path) -> (bool, String) {
    let run = std::process::Command::new("timeout")
        .arg((seconds + 60).to_string())
        .arg(python)
        .arg(repo().join("tests/python/view_client.py"))
        .args(["--url", &format!("ws://127.0.0.1:{port}"), "--seconds", &seconds.to_string(), "--out"])
        .arg(out)
        .output()
        .unwrap();
    (run.status.success(), String::from_utf8_lossy(&run.stdout).to_string() + &String::from_utf8_lossy(&run.stderr))
}

#[test]
fn a_foxglove_client_sees_the_replay_as_it_is_recorded() {
    let python = venv("viewenv", &["websockets==15.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.mcap");
    let port = free_port();
    let ex = root().join("examples/diffdrive");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_neuroburst"));
    cmd.arg("replay")
        .arg("--bag")
        .arg(ex.join("input.mcap"))
        .arg("--genome")
        .arg(ex.join("genome.yaml"))
        .arg("--config")
        .arg(ex.join("config.yaml"))
        .arg("--out")
        .arg(&out)
        .arg("--view")
        .arg(format!("127.0.0.1:{port}"))
        .args(["--set", "view.record=true", "--set", "replay.pace=4"])
        .env("RUST_LOG", "info");
    let replay = Proc::spawn(&mut cmd, dir.path().join("replay.log"));
    assert!(replay.wait_for("waiting for a client"), "the view did not start:\n{}", replay.log());

    let got = dir.path().join("client.json");
    let (ok, said) = client(&python, port, 60, &got);
    assert!(ok, "the client:\n{said}\nreplay:\n{}", replay.log());
    println!("{said}");
    let mut replay = replay;
    let status = replay.child.wait().ok();
    assert!(status.is_some_and(|s| s.success()), "the replay: {status:?}\n{}", replay.log());

    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&got).unwrap()).unwrap();
    let (channels, messages) = recorded(&out);
    // advertised with their schemas, as recorded
    let advertised: BTreeMap<String, &serde_json::Value> =
        v["channels"].as_array().unwrap().iter().map(|c| (c["topic"].as_str().unwrap().to_string(), c)).collect();
    for (topic, schema, schema_encoding, encoding) in [
        ("/neuroburst/scene", "foxglove.SceneUpdate", "protobuf", "protobuf"),
        ("/neuroburst/fired", "foxglove.PointCloud", "protobuf", "protobuf"),
        ("/cmd_vel", "geometry_msgs/msg/Twist", "ros2msg", "cdr"),
        ("/neuroburst/activity", "neuroburst_msgs/msg/BurstActivity", "ros2msg", "cdr"),
        ("/scan", "sensor_msgs/msg/LaserScan", "ros2msg", "cdr"),
    ] {
        let c = advertised.get(topic).unwrap_or_else(|| panic!("{topic} not advertised: {:?}", advertised.keys()));
        assert_eq!((c["schemaName"].as_str(), c["encoding"].as_str()), (Some(schema), Some(encoding)), "{topic}");
        assert_eq!(c["schemaEncoding"].as_str(), Some(schema_encoding), "{topic}");
        assert!(c["schemaBytes"].as_u64().unwrap() > 0, "{topic} without its schema");
        if topic != "/scan" {
            let r = &channels[topic];
            assert_eq!((r.0.as_str(), r.1.as_str(), r.2.as_str()), (schema, schema_encoding, encoding), "{topic} recorded");
        }
    }
    // what arrives is what was recorded, at the same log times
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for m in v["messages"].as_array().unwrap() {
        let topic = m["topic"].as_str().unwrap();
        let key = (m["log_time"].as_u64().unwrap(), m["sha256"].as_str().unwrap().to_string());
        if let Some(rec) = messages.get(topic) {
            assert!(rec.contains(&key), "{topic} at {}: not what the replay recorded", key.0);
            *seen.entry(topic.to_string()).or_default() += 1;
        }
    }
    for topic in ["/neuroburst/scene", "/neuroburst/fired", "/cmd_vel"] {
        let (n, of) = (seen.get(topic).copied().unwrap_or(0), messages[topic].len());
        assert!(n * 10 >= of * 9, "{topic}: the client got {n} of the {of} recorded");
    }
}

#[test]
fn the_plot_has_a_title_axes_and_a_legend() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("plot.png");
    let ex = root().join("examples/diffdrive");
    let (bag, genome, config, out) = (ex.join("input.mcap"), ex.join("genome.yaml"), ex.join("config.yaml"), dir.path().join("o.mcap"));
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let args = [
        "replay",
        "--bag",
        &path(&bag),
        "--genome",
        &path(&genome),
        "--config",
        &path(&config),
        "--out",
        &path(&out),
        "--plot",
        &path(&png),
    ];
    common::ok(common::neuroburst(&args));
    let img = image::open(&png).unwrap().to_rgb8();
    assert_eq!(img.dimensions(), (1200, 800));
    // text is dark grey/black anti-aliased pixels: the title band, the axis labels (left) and the
    // legend box (upper right of the top panel) all hold some
    let dark = |x0: u32, y0: u32, x1: u32, y1: u32| {
        (y0..y1).flat_map(|y| (x0..x1).map(move |x| (x, y))).filter(|&(x, y)| img.get_pixel(x, y).0.iter().all(|&c| c < 90)).count()
    };
    assert!(dark(200, 0, 1000, 30) > 200, "no title");
    assert!(dark(0, 100, 40, 300) > 50, "no axis description on the left");
    assert!(dark(300, 395, 800, 425) > 50, "no heat map caption");
    assert!(dark(840, 70, 1060, 115) > 100, "no legend in the top panel");
}

#[test]
fn the_foxglove_layout_shows_topics_of_the_diffdrive_replay() {
    let dir = tempfile::tempdir().unwrap();
    let ex = root().join("examples/diffdrive");
    let out = dir.path().join("o.mcap");
    common::ok(common::replay(&ex.join("input.mcap"), &out, &["view.record=true"]));
    let mut topics: BTreeSet<String> = recorded(&out).0.into_keys().collect();
    topics.extend(neuroburst::bag::open(&ex.join("input.mcap")).unwrap().topics.into_iter().map(|t| t.name));
    let layout: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(ex.join("foxglove-layout.json")).unwrap()).unwrap();
    let mut named = Vec::new();
    for panel in layout["configById"].as_object().unwrap().values() {
        if let Some(t) = panel["topics"].as_object() {
            named.extend(t.keys().cloned());
        }
        for key in ["topicPath", "imageMode"] {
            let v = if key == "imageMode" { &panel[key]["imageTopic"] } else { &panel[key] };
            named.extend(v.as_str().map(String::from));
        }
        for p in panel["paths"].as_array().into_iter().flatten() {
            let path = p["value"].as_str().unwrap();
            named.push(path.split('.').next().unwrap().to_string());
        }
    }
    assert!(named.len() >= 6, "{named:?}");
    for t in &named {
        assert!(topics.contains(t), "the layout shows {t}, which the replay does not have: {topics:?}");
    }
}

#[test]
fn the_live_node_shows_its_brain_and_stats() {
    let python = venv("viewenv", &["websockets==15.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let args = [
        "--zenoh-mode".to_string(),
        "peer".into(),
        "--zenoh-listen".into(),
        format!("tcp/127.0.0.1:{}", free_port()),
        "--set".into(),
        "zenoh.connect=[]".into(),
        "--view".into(),
        format!("127.0.0.1:{port}"),
    ];
    let mut node = rover_node(dir.path(), &args);
    let got = dir.path().join("client.json");
    let (ok, said) = client(&python, port, 4, &got);
    assert!(ok, "the client:\n{said}\nnode:\n{}", node.log());
    println!("{said}");
    let status = node.stop();
    assert!(status.is_some_and(|s| s.success()), "the node: {status:?}\n{}", node.log());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&got).unwrap()).unwrap();
    let count = |topic: &str| v["messages"].as_array().unwrap().iter().filter(|m| m["topic"] == topic).count();
    let schema = |topic: &str| {
        v["channels"].as_array().unwrap().iter().find(|c| c["topic"] == topic).map(|c| c["schemaName"].as_str().unwrap().to_string())
    };
    assert_eq!(schema("/neuroburst/stats").as_deref(), Some("neuroburst_msgs/msg/BurstStats"), "{said}");
    assert_eq!(schema("/neuroburst/scene").as_deref(), Some("foxglove.SceneUpdate"), "{said}");
    // 30 frames a second for 4 s; stats at 10 Hz
    assert!(count("/neuroburst/scene") >= 40, "{said}");
    assert!(count("/neuroburst/stats") >= 10, "{said}");
}
