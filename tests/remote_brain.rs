//! The remote brain, both sides as separate hosts: the robot (a Zenoh router with the shipped
//! config/robot_router.json5, and the robot's nodes played by tests/python/robot.py, an
//! independent eclipse-zenoh 1.10.2 peer speaking rmw_zenoh or the zenoh-bridge-ros2dds format)
//! in one network namespace, `neuroburst node` with config/remote_brain.yaml (a Zenoh client of
//! the robot's router, no ROS) in another, joined by a private bridge. Where namespaces cannot be
//! made (or NEUROBURST_TEST_LOOPBACK=1), both sides run on 127.0.0.1 and the test says so.

use crate::common;

use std::process::Command;

use common::{repo, venv, Proc, PY_PACKAGES};
use neuroburst::cluster::netns::Hosts;

const RATE: f64 = 200.0;

fn hosts(tag: &str) -> Hosts {
    if std::env::var_os("NEUROBURST_TEST_LOOPBACK").is_some() {
        println!("hosts: loopback (NEUROBURST_TEST_LOOPBACK is set)");
        return Hosts::loopback(2);
    }
    let (h, why) = Hosts::netns_or_loopback(2, tag);
    match why {
        Some(e) => println!("hosts: network namespaces cannot be made here ({e}); running on loopback instead"),
        None => println!("hosts: {}", h.describe()),
    }
    h
}

fn remote_brain(format: &str, tag: &str) {
    let python = venv("pyenv", PY_PACKAGES);
    let hosts = hosts(tag);
    let dir = tempfile::tempdir().unwrap();
    // Host 0 is the robot: its router on its own address.
    let router_ep = hosts.endpoint(0);
    let mut rcmd = hosts.command(0, &python);
    rcmd.arg(repo().join("tests/python/router.py")).arg(&router_ep).arg(repo().join("config/robot_router.json5"));
    let router = Proc::spawn(&mut rcmd, dir.path().join("router.log"));
    assert!(router.wait_for("router up"), "the router did not start: {}", router.log());
    // Host 1 is the GPU host: the node, a client of the robot's router.
    let mut ncmd = hosts.command(1, env!("CARGO_BIN_EXE_neuroburst"));
    ncmd.arg("node")
        .arg("--genome")
        .arg(repo().join("examples/genomes/rover.yaml"))
        .arg("--config")
        .arg(repo().join("config/remote_brain.yaml"))
        .args(["--zenoh-connect", &router_ep, "--zenoh-format", format])
        .args(["--set", &format!("node.rate_hz={RATE}"), "--set", "node.stats_rate_hz=10", "--set", "backend.kind=cpu"])
        .arg("--set")
        .arg(format!("checkpoint.path={}", dir.path().join("ckpt").display()))
        .env("RUST_LOG", "info,zenoh=warn");
    let mut node = Proc::spawn(&mut ncmd, dir.path().join("node.log"));
    // The robot's nodes: a peer of its router on the robot.
    let out = hosts
        .command(0, &python)
        .arg(repo().join("tests/python/robot.py"))
        .args(["--connect", &router_ep, "--format", format, "--scenario", "basic", "--rate", &RATE.to_string()])
        .arg("--msg-dir")
        .arg(repo().join("msg"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let status = node.stop();
    assert!(
        out.status.success() && stdout.contains("\"ok\": true"),
        "robot ({format}) failed:\n{stdout}\n{}\nnode log:\n{}\nrouter log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        node.log(),
        router.log()
    );
    println!("{stdout}");
    assert!(status.is_some_and(|s| s.success()), "the node did not stop cleanly: {status:?}\n{}", node.log());
    let log = node.log();
    assert!(log.contains("Client") || log.contains("client"), "the node is not a Zenoh client:\n{log}");
    assert!(log.contains(&router_ep), "the node did not name the robot's router {router_ep}:\n{log}");
}

#[test]
fn remote_brain_drives_an_rmw_zenoh_robot_through_its_router() {
    remote_brain("rmw", "r");
}

#[test]
fn remote_brain_drives_a_dds_robot_through_zenoh_bridge_ros2dds_keys() {
    remote_brain("ros2dds", "d");
}

#[test]
fn the_robot_side_launch_file_starts_rmw_zenohd_with_the_shipped_router_config() {
    let script = r#"
import importlib.util, json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tests/python/launch_stubs"))
from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable
from launch_ros.actions import Node
spec = importlib.util.spec_from_file_location("l", os.path.join(sys.argv[1], "launch/robot_router.launch.py"))
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
ld = m.generate_launch_description()
class Ctx:
    def __init__(self): self.args = {}
    def share(self, p): return sys.argv[1]
    def resolve(self, v):
        if isinstance(v, str): return v
        return v.perform(self)
ctx = Ctx()
for e in ld.entities:
    if isinstance(e, DeclareLaunchArgument): ctx.args[e.name] = e.default_value
env = {e.name: ctx.resolve(e.value) for e in ld.entities if isinstance(e, SetEnvironmentVariable)}
nodes = [(e.package, e.executable) for e in ld.entities if isinstance(e, Node)]
print(json.dumps({"env": env, "nodes": nodes}))
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(repo()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["nodes"], serde_json::json!([["rmw_zenoh_cpp", "rmw_zenohd"]]));
    let cfg = v["env"]["ZENOH_ROUTER_CONFIG_URI"].as_str().unwrap();
    assert!(std::path::Path::new(cfg).is_file(), "{cfg}");
}
