//! The DDS robot path on real DDS: a real rclpy robot on Fast DDS (ROS 2 Jazzy from PyPI) <->
//! zenoh-bridge-ros2dds (the crates.io plugin, Cyclone DDS inside, tests/ros2/bridge) with the
//! shipped `config/robot_bridge_ros2dds.json5` <-> the node as its Zenoh client in the `ros2dds`
//! format, all inside `unshare -n`. `tests/run.sh` builds the bridge and sets
//! NEUROBURST_ROS2DDS_BRIDGE; without it (or without the ROS 2 workspace) the test says why and
//! passes, unless NEUROBURST_REQUIRE_ROS2=1 (CI).

use crate::common;

use std::path::PathBuf;

fn bridge() -> Option<PathBuf> {
    common::required_file("NEUROBURST_ROS2DDS_BRIDGE", "no zenoh-bridge-ros2dds", "tests/run.sh builds tests/ros2/bridge and sets it")
}

#[test]
fn rclpy_robot_on_fast_dds_through_the_shipped_bridge_config() {
    let Some(env) = common::ros2_env() else { return };
    let Some(bridge) = bridge() else { return };
    let root = common::root();
    let bridge_cmd = format!("{} -c {}", bridge.display(), root.join("config/robot_bridge_ros2dds.json5").display());
    // the shipped config's router listens on tcp/127.0.0.1:7447 (inside the namespace)
    let node = format!(
        "{} node --genome {} --config {} --transport zenoh --zenoh-format ros2dds --zenoh-mode client \
         --zenoh-connect tcp/127.0.0.1:7447",
        env!("CARGO_BIN_EXE_neuroburst"),
        root.join("tests/ros2/robot.yaml").display(),
        root.join("tests/ros2/node.yaml").display(),
    );
    let robot = [
        "--scenario",
        "robot",
        "--ns",
        "/",
        "--cmd-vel",
        "/cmd_vel",
        "--signal",
        "SIGTERM",
        "--startup",
        "40",
        "--before",
        &format!("'{bridge_cmd}'"),
    ];
    let run = common::rcl::run(&env, &robot, &node, &[("RUST_LOG", "info,zenoh=warn")]);
    let ctx = run.context();
    let v = &run.v;
    assert_eq!(v["started"], true, "no Twist through the bridge: {ctx}");
    let (fed, silent, signal_at) =
        (v["fed_until"].as_f64().unwrap(), v["silent_until"].as_f64().unwrap(), v["signal_at"].as_f64().unwrap());
    let tw = run.twists();
    // sensors in (the bridged /scan and /camera/image_raw), Twists out
    let moving = tw.iter().filter(|t| t.0 < fed && t.1 > 0.0).count();
    assert!(moving > 20, "{moving} forward Twists while fed: {ctx}");
    // silence: a zero Twist within stale_after (0.5 s) + one burst (20 ms) + 250 ms for two DDS hops and the bridge
    let first_zero = tw.iter().find(|t| t.0 > fed && t.1 == 0.0).map(|t| t.0).unwrap_or_else(|| panic!("no zero Twist when blind: {ctx}"));
    assert!(first_zero - fed <= 0.5 + 0.02 + 0.25, "zero Twist {:.3} s after the last sensor message: {ctx}", first_zero - fed);
    assert!(tw.iter().any(|t| t.0 > silent + 0.3 && t.0 < signal_at && t.1 > 0.0), "no forward Twist once fed again: {ctx}");
    // the stop: the last Twist is zero and came after SIGTERM
    let last = tw.last().unwrap();
    assert!(last.0 > signal_at && last.1 == 0.0 && last.2 == 0.0, "last Twist {last:?} (SIGTERM at {signal_at:.3}): {ctx}");
    assert_eq!(v["node_rc"], 0, "{ctx}");
    println!("{} Twists through the bridge; zero {:.3} s after the sensors went silent", tw.len(), first_zero - fed);
}
