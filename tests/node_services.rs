//! The node's services over the rmw_zenoh format, against an rmw_zenoh client played by a Python
//! eclipse-zenoh peer (tests/python/lifecycle_client.py): a managed node's lifecycle walk
//! (configure, activate and Twists, a parameter set that limits them at the next burst and one
//! refused with its reason, deactivate with a zero Twist and no more, ~/save_checkpoint, activate
//! again, cleanup, shutdown), each call with rmw_zenoh's key and attachment and the reply matched
//! by them. The same walk on real rcl is tests/ros2_rcl.rs's.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{free_port, repo, venv, Proc, PY_PACKAGES};

#[test]
fn a_managed_node_walks_its_lifecycle_for_an_rmw_zenoh_client() {
    walk("rmw");
}

/// The zenoh-bridge-ros2dds format: the queries the bridge makes of a DDS client's calls (plain
/// service name, plain CDR). A DDS robot's clients reach them through the bridge when they run on
/// Cyclone DDS (the bridge reads the request's id from the payload, where rmw_cyclonedds puts it;
/// Fast DDS sends it beside the payload, and the bridge drops such calls).
#[test]
fn a_managed_node_walks_its_lifecycle_for_the_dds_bridges_queries() {
    walk("ros2dds");
}

/// The rover's managed node, a Zenoh peer listening on a free loopback port (its own connect
/// endpoint leads nowhere), unconfigured; returns it and the endpoint to connect to.
fn managed_node(dir: &Path, extra: &[&str]) -> (Proc, String) {
    let listen = format!("tcp/127.0.0.1:{}", free_port());
    let nowhere = format!("tcp/127.0.0.1:{}", free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neuroburst"));
    cmd.arg("node")
        .arg("--genome")
        .arg(repo().join("examples/genomes/rover.yaml"))
        .arg("--config")
        .arg(repo().join("config/node.yaml"))
        .args(["--zenoh-listen", &listen, "--zenoh-connect", &nowhere])
        .args(["--set", "node.rate_hz=200", "--set", "node.lifecycle=true"])
        .args(extra)
        .env("RUST_LOG", "info,zenoh=warn");
    let node = Proc::spawn(&mut cmd, dir.join("node.log"));
    assert!(node.wait_for("a managed node, unconfigured"), "{}", node.log());
    (node, listen)
}

fn walk(format: &str) {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("ckpt");
    let (mut node, listen) =
        managed_node(dir.path(), &["--zenoh-format", format, "--set", &format!("checkpoint.path={}", checkpoint.display())]);
    let out = Command::new(&python)
        .arg(repo().join("tests/python/lifecycle_client.py"))
        .args(["--connect", &listen, "--format", format])
        .arg("--checkpoint")
        .arg(&checkpoint)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}\nnode log:\n{}", String::from_utf8_lossy(&out.stderr), node.log());
    println!("{stdout}");
    // shutdown ends the process, cleanly
    let status = (0..100).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        node.child.try_wait().ok().flatten()
    });
    assert!(status.is_some_and(|s| s.success()), "the node did not end after shutdown: {status:?}\n{}", node.log());
    let log = node.log();
    for line in ["lifecycle: configure -> inactive", "lifecycle: deactivate -> inactive", "lifecycle: shutdown -> finalized"] {
        assert!(log.contains(line), "{line:?} not in the node's log:\n{log}");
    }
    assert!(log.contains("node.rate_hz is read at configure"), "{log}");
}

/// A managed node on the GPU: configure builds the brain there, cleanup releases it, and a second
/// configure builds it again; Twists flow while active, none after deactivate. Driven in-process
/// by a Zenoh session speaking rmw_zenoh (the Python client above checks the wire against an
/// independent peer); skips without a GPU.
#[test]
fn a_managed_node_builds_and_releases_its_brain_on_the_gpu() {
    use neuroburst::ros::lifecycle_msgs::{ChangeState, ChangeStateRequest, ChangeStateResponse, Transition};
    use neuroburst::ros::{decode, encode, RosService};
    use zenoh::Wait;
    if !common::gpus(1) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut node, listen) = managed_node(dir.path(), &["--set", "backend.kind=cuda"]);
    let mut conf = zenoh::Config::default();
    for (k, v) in
        [("mode", "\"peer\"".to_string()), ("scouting/multicast/enabled", "false".into()), ("connect/endpoints", format!("[\"{listen}\"]"))]
    {
        conf.insert_json5(k, &v).unwrap();
    }
    let session = zenoh::open(conf).wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let hash = neuroburst::ros::type_hash::<ChangeState>();
    let key = format!("0/neuroburst/change_state/lifecycle_msgs::srv::dds_::ChangeState_/{hash}");
    let gid = [7u8; 16];
    let change = |seq: i64, id: u8| -> bool {
        let request = encode(&ChangeStateRequest { transition: Transition { id, label: String::new() } });
        let att = neuroburst::transport::zenoh::attachment::encode(seq, 0, &gid).to_vec();
        let replies = session.get(&key).payload(request).attachment(att).timeout(std::time::Duration::from_secs(60)).wait().unwrap();
        let reply = replies.recv().expect("an answer");
        let sample = reply.result().expect("a reply, not an error");
        decode::<<ChangeState as RosService>::Response>(&sample.payload().to_bytes()).map(|r: ChangeStateResponse| r.success).unwrap()
    };
    let twists = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let t = twists.clone();
    let _sub = session
        .declare_subscriber("0/cmd_vel/**")
        .callback(move |_| {
            t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .wait()
        .unwrap();
    let count = || twists.load(std::sync::atomic::Ordering::Relaxed);
    let mut seq = 0;
    let mut step = |id: u8| {
        seq += 1;
        assert!(change(seq, id), "transition {id} failed:\n{}", node.log());
    };
    for round in 0..2 {
        step(1); // configure: the brain built on the GPU
        step(3); // activate
        std::thread::sleep(std::time::Duration::from_millis(500));
        let active = count();
        assert!(active > 20, "round {round}: {active} Twists in 0.5 s of activity");
        step(4); // deactivate
        std::thread::sleep(std::time::Duration::from_millis(300));
        let stopped = count();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(count(), stopped, "Twists after deactivate");
        step(2); // cleanup: the GPU's brain released
    }
    step(5); // shutdown: the process ends
    let status = (0..100).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        node.child.try_wait().ok().flatten()
    });
    assert!(status.is_some_and(|s| s.success()), "{status:?}\n{}", node.log());
    let log = node.log();
    assert!(log.matches("lifecycle: configure -> inactive").count() == 2 && log.to_lowercase().contains("cuda"), "{log}");
}
