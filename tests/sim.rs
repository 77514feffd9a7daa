//! A robot in the loop (examples/sim, issue 45): the MuJoCo robot of examples/sim/bridge.py,
//! lock-stepped to the node's bursts on simulated time over Zenoh (the rmw_zenoh format), driven
//! by examples/sim/avoider.yaml for 120 simulated seconds in the bundled arena and in a world the
//! brain was not tuned in: no collision, a distance covered above a floor, a Twist for every
//! burst (the bursts per simulated second as configured), every scan taken by its burst. On a
//! GPU, the CUDA backend drives the robot along the CPU backend's path, step for step.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{repo, venv, PY_PACKAGES};

/// The bridge's Python (MuJoCo, Zenoh, rosbags).
fn python() -> std::path::PathBuf {
    let mut packages = PY_PACKAGES.to_vec();
    packages.push("mujoco==4.0.0");
    venv("simenv", &packages)
}

/// What the robot did in `world` (from `pose`) with the node on `backend`: the bridge's report
/// and the node's log; the path goes to `trace`.
fn drive(python: &Path, world: &str, pose: &str, backend: &str, trace: &Path) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = repo().join("examples/sim/config.yaml");
    let kind = format!("backend.kind={backend}");
    let args = ["--config", config.to_str().unwrap(), "--set", &kind];
    let (mut node, listen) = common::loopback_node(dir.path(), &repo().join("examples/sim/avoider.yaml"), &args, "bursting at");
    let out = Command::new(python)
        .arg(repo().join("examples/sim/bridge.py"))
        .arg("--world")
        .arg(repo().join("examples/sim").join(world))
        .arg(format!("--pose={pose}"))
        .args(["--connect", &listen, "--duration", "120", "--rate", "50", "--wait", "5", "--trace"])
        .arg(trace)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{world}: {stdout}\n{}\nnode log:\n{}", String::from_utf8_lossy(&out.stderr), node.log());
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    println!("{world} on {backend}: {r}");
    node.stop();
    (r, node.log())
}

#[test]
fn the_avoider_drives_the_simulated_robot_without_a_collision_in_two_worlds() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    for (world, pose) in [("arena.xml", "0,0,0"), ("room2.xml", "-1,0,0.3")] {
        let (r, log) = drive(&python, world, pose, "cpu", &dir.path().join("trace.csv"));
        assert_eq!(r["collisions"], 0, "{world}: {r}");
        assert!(r["distance_m"].as_f64().unwrap() > 10.0, "{world}: {r}");
        assert_eq!(r["twists"], r["bursts"], "{world}: a Twist for every burst: {r}");
        assert!(log.contains("stopped after 6000 bursts"), "{world}: 50 bursts per simulated second:\n{log}");
        // lock-stepped: every burst took the scan published before its clock, none was replaced
        assert!(log.contains(" 0 dropped messages"), "{world}: a scan missed its burst:\n{log}");
    }
}

#[test]
fn the_cuda_backend_drives_the_robot_along_the_cpu_path() {
    if !common::gpus(1) {
        return;
    }
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let (cpu, gpu) = (dir.path().join("cpu.csv"), dir.path().join("cuda.csv"));
    let (r_cpu, _) = drive(&python, "arena.xml", "0,0,0", "cpu", &cpu);
    let (r_gpu, log) = drive(&python, "arena.xml", "0,0,0", "cuda", &gpu);
    assert!(log.contains("stopped after 6000 bursts") && log.contains(" 0 dropped messages"), "{log}");
    let (a, b) = (std::fs::read_to_string(&cpu).unwrap(), std::fs::read_to_string(&gpu).unwrap());
    assert_eq!(a.lines().count(), 6000, "a pose per burst");
    if let Some((i, (x, y))) = a.lines().zip(b.lines()).enumerate().find(|(_, (x, y))| x != y) {
        panic!("the paths part at burst {}: cpu {x}, cuda {y}", i + 1);
    }
    assert_eq!(a, b, "the same path, burst for burst");
    assert_eq!(r_cpu["distance_m"], r_gpu["distance_m"]);
}
