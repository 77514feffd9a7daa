//! The ROS 2 packages: launch files checked against stub `launch`/`launch_ros` modules (the
//! command lines they produce must be accepted by the node), and the colcon workspace that
//! `tests/run.sh` builds (colcon-ros-cargo + cargo-ament-build and rosidl, against ROS 2 Jazzy
//! from PyPI) installs the layout `ros2 launch` and rclpy expect.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::repo;

/// Run tests/python/check_launch.py on both launch files; run every command with `--check` and
/// return the resolved configurations.
fn check_launch_files(python: &Path, share: &Path, lib: &Path, env: &[(String, String)]) -> Vec<String> {
    let genome = repo().join("examples/genomes/rover.yaml");
    let out = Command::new(python)
        .envs(env.iter().cloned())
        .arg(repo().join("tests/python/check_launch.py"))
        .arg(share)
        .arg(lib)
        .arg(repo().join("launch/brain.launch.py"))
        .arg(repo().join("launch/remote_brain.launch.py"))
        .arg("--")
        .arg(format!("genome:={}", genome.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "check_launch.py:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let mut configs = vec![];
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let cmd: Vec<String> = serde_json::from_value(v["cmd"].clone()).unwrap();
        // `--check` goes before the `--ros-args` that launch_ros appends.
        let ros = cmd.iter().position(|a| a == "--ros-args").unwrap_or(cmd.len());
        let out = Command::new(&cmd[0]).args(&cmd[1..ros]).arg("--check").args(&cmd[ros..]).envs(env.iter().cloned()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{}: {:?}\n{text}\n{}", v["launch"], cmd, String::from_utf8_lossy(&out.stderr));
        configs.push(format!("{}\n{text}", v["launch"]));
    }
    assert_eq!(configs.len(), 2);
    configs
}

fn assert_launch_results(configs: &[String]) {
    let (brain, remote) = (&configs[0], &configs[1]);
    // brain.launch.py: params file applied (rate 1000), remappings kept, peer of the local router.
    assert!(brain.contains("rate_hz: 1000.0") && brain.contains("mode: peer") && brain.contains("tcp/127.0.0.1:7447"), "{brain}");
    assert!(brain.contains("topic: scan") && brain.contains("topic: cmd_vel") && brain.contains("name: neuroburst"), "{brain}");
    // lifecycle:=false (the default): configured and active at once
    assert!(brain.contains("lifecycle: false"), "{brain}");
    // remote_brain.launch.py: Zenoh client of the robot's router.
    assert!(remote.contains("mode: client") && remote.contains("transport: zenoh"), "{remote}");
}

#[test]
fn launch_files_run_against_stub_launch_modules() {
    let python = Path::new("python3");
    let lib = Path::new(env!("CARGO_BIN_EXE_neuroburst")).parent().unwrap().to_path_buf();
    let configs = check_launch_files(python, &repo(), &lib, &[]);
    assert_launch_results(&configs);
}

/// The colcon workspace that `tests/run.sh` builds against ROS 2 Jazzy (neuroburst_msgs, then
/// neuroburst with `--features ros2`, in the tests' `ci` build profile): colcon's isolated layout, one
/// prefix per package, with what `ros2 launch` and `ros2 interface` look for.
#[test]
fn colcon_installs_both_packages_with_the_ament_layout() {
    let Some(env) = common::ros2_env() else { return };
    let install = env.parent().unwrap().join("install");
    let exe = install.join("neuroburst/lib/neuroburst/neuroburst");
    assert!(exe.is_file(), "{} missing", exe.display());
    for f in [
        "neuroburst/share/neuroburst/package.xml",
        "neuroburst/share/neuroburst/launch/brain.launch.py",
        "neuroburst/share/neuroburst/launch/remote_brain.launch.py",
        "neuroburst/share/neuroburst/config/params.yaml",
        "neuroburst/share/neuroburst/config/node.yaml",
        "neuroburst/share/neuroburst/config/neuroburst.yaml",
        "neuroburst/share/ament_index/resource_index/packages/neuroburst",
        "neuroburst_msgs/share/neuroburst_msgs/msg/BurstStats.msg",
        "neuroburst_msgs/share/neuroburst_msgs/msg/BurstActivity.msg",
        "neuroburst_msgs/share/neuroburst_msgs/msg/BurstStats.json",
        "neuroburst_msgs/share/ament_index/resource_index/rosidl_interfaces/neuroburst_msgs",
    ] {
        let p = install.join(f);
        assert!(p.exists(), "{} missing", p.display());
    }
    // rosidl's type description (what rmw uses for the RIHS01 hash) has ours
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(install.join("neuroburst_msgs/share/neuroburst_msgs/msg/BurstStats.json")).unwrap())
            .unwrap();
    let hash = json["type_hashes"].as_array().unwrap().iter().find(|h| h["type_name"] == "neuroburst_msgs/msg/BurstStats").unwrap();
    assert_eq!(hash["hash_string"], neuroburst::ros::type_hash::<neuroburst::ros::neuroburst_msgs::BurstStats>());
    // the r2r executable runs in the workspace's environment (rcl's libraries)
    let sourced = common::sourced(&env);
    let configs =
        check_launch_files(Path::new("python3"), &install.join("neuroburst/share"), &install.join("neuroburst/lib/neuroburst"), &sourced);
    assert_launch_results(&configs);
}
