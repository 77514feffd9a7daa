//! The node's services over the rmw_zenoh format, against an rmw_zenoh client played by a Python
//! eclipse-zenoh peer (tests/python/lifecycle_client.py): a managed node's lifecycle walk
//! (configure, activate and Twists, a parameter set that limits them at the next burst and one
//! refused with its reason, deactivate with a zero Twist and no more, ~/save_checkpoint, activate
//! again, cleanup, shutdown), each call with rmw_zenoh's key and attachment and the reply matched
//! by them. The same walk on real rcl is tests/ros2_rcl.rs's.

use crate::common;

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

fn walk(format: &str) {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("tcp/127.0.0.1:{}", free_port());
    let nowhere = format!("tcp/127.0.0.1:{}", free_port());
    let checkpoint = dir.path().join("ckpt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neuroburst"));
    cmd.arg("node")
        .arg("--genome")
        .arg(repo().join("examples/genomes/rover.yaml"))
        .arg("--config")
        .arg(repo().join("config/node.yaml"))
        .args(["--zenoh-listen", &listen, "--zenoh-connect", &nowhere, "--zenoh-format", format])
        .args(["--set", "node.rate_hz=200", "--set", "node.lifecycle=true"])
        .arg("--set")
        .arg(format!("checkpoint.path={}", checkpoint.display()))
        .env("RUST_LOG", "info,zenoh=warn");
    let mut node = Proc::spawn(&mut cmd, dir.path().join("node.log"));
    assert!(node.wait_for("a managed node, unconfigured"), "{}", node.log());
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
