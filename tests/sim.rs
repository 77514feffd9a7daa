//! A robot in the loop (examples/sim, issue 45, in progress): the MuJoCo robot of
//! examples/sim/bridge.py, lock-stepped to the node's bursts on simulated time over Zenoh (the
//! rmw_zenoh format), driven by examples/sim/avoider.yaml for 120 simulated seconds in the
//! bundled arena and in a world the brain was not tuned in: no collision, a distance covered
//! above a floor, and a Twist for every burst (the bursts per simulated second as configured).

use crate::common;

use std::process::Command;

use common::{repo, venv, PY_PACKAGES};

#[test]
fn the_avoider_drives_the_simulated_robot_without_a_collision_in_two_worlds() {
    let mut packages = PY_PACKAGES.to_vec();
    packages.push("mujoco==4.0.0");
    let python = venv("simenv", &packages);
    for (world, pose) in [("arena.xml", "0,0,0"), ("room2.xml", "-1,0,0.3")] {
        let dir = tempfile::tempdir().unwrap();
        let config = repo().join("examples/sim/config.yaml");
        let args = ["--config", config.to_str().unwrap()];
        let (mut node, listen) = common::loopback_node(dir.path(), &repo().join("examples/sim/avoider.yaml"), &args, "bursting at");
        let out = Command::new(&python)
            .arg(repo().join("examples/sim/bridge.py"))
            .arg("--world")
            .arg(repo().join("examples/sim").join(world))
            .arg(format!("--pose={pose}"))
            .args(["--connect", &listen, "--duration", "120", "--rate", "50", "--wait", "5"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{world}: {stdout}\n{}\nnode log:\n{}", String::from_utf8_lossy(&out.stderr), node.log());
        let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
        println!("{world}: {r}");
        assert_eq!(r["collisions"], 0, "{world}: {r}");
        assert!(r["distance_m"].as_f64().unwrap() > 10.0, "{world}: {r}");
        assert_eq!(r["twists"], r["bursts"], "{world}: a Twist for every burst: {r}");
        node.stop();
        assert!(node.log().contains("stopped after 6000 bursts"), "{world}: 50 bursts per simulated second:\n{}", node.log());
        // lock-stepped: every burst took the scan published before its clock, none was replaced
        assert!(node.log().contains(" 0 dropped messages"), "{world}: a scan missed its burst:\n{}", node.log());
    }
}
