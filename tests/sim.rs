//! A robot in the loop (examples/sim): the MuJoCo robot of examples/sim/bridge.py,
//! lock-stepped to the node's bursts on simulated time over Zenoh (the rmw_zenoh format), driven
//! by examples/sim/avoider.yaml for 120 simulated seconds in the bundled arena and in a world the
//! brain was not tuned in: no collision, a distance covered above a floor, a Twist for every
//! burst (the bursts per simulated second as configured), every scan taken by its burst. The same
//! over a real ROS 2 (the bridge on rclpy, the node on r2r, Fast DDS inside `unshare -n`). On a
//! GPU, the CUDA backend drives the robot along the CPU backend's path, step for step. And
//! examples/conditioning's brain learns live: the robot's camera sees a light (the cue) with an
//! obstacle ahead six times, and then backs away from the light alone.

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
        // the bridge dialled the node and said goodbye: no link of the node's was lost
        assert!(log.contains(" 0 link losses"), "{world}: a peer's goodbye counted as a link loss:\n{log}");
    }
}

/// The lesson of `bridge.py --lesson` (examples/conditioning's protocol, live): before the
/// pairings the cue alone leaves the robot standing, the obstacle (with the cue) backs it away, and
/// after six pairings the cue alone backs it away too.
#[test]
fn the_conditioning_brain_learns_live_to_back_away_from_the_cue_alone() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let config = repo().join("examples/sim/conditioning.yaml");
    let args = ["--config", config.to_str().unwrap()];
    let genome = repo().join("examples/conditioning/genome.yaml");
    let (mut node, listen) = common::loopback_node(dir.path(), &genome, &args, "bursting at");
    let out = Command::new(&python)
        .arg(repo().join("examples/sim/bridge.py"))
        .arg("--world")
        .arg(repo().join("examples/sim/lesson.xml"))
        .args(["--lesson", "--connect", &listen, "--duration", "30", "--rate", "10", "--camera-hz", "10", "--wait", "5"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ctx = format!("{stdout}\n{}\nnode log:\n{}", String::from_utf8_lossy(&out.stderr), node.log());
    assert!(out.status.success(), "{ctx}");
    node.stop();
    let r: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    println!("the lesson: {r}");
    assert_eq!(r["camera"], true, "the cue is seen by the camera: offscreen rendering (EGL) must work here: {ctx}");
    let trials = r["trials"].as_array().unwrap();
    let backed: Vec<f64> = trials.iter().map(|t| t["backed_m"].as_f64().unwrap()).collect();
    let paired: Vec<bool> = trials.iter().map(|t| t["obstacle"].as_bool().unwrap()).collect();
    assert_eq!(paired, [false, true, true, true, true, true, true, false, false], "{r}");
    assert!(backed[0] < 0.02, "before the lesson the cue alone moved the robot {} m: {r}", backed[0]);
    assert!(backed[1..7].iter().all(|&b| b > 0.1), "the obstacle's reflex backs the robot: {r}");
    assert!(backed[7..].iter().all(|&b| b > 0.1), "after six pairings the cue alone backs the robot: {r}");
    assert_eq!(r["collisions"], 0, "{r}");
}

/// `--view`: Foxglove sees the brain and the robot's pose (`view.topics`: /odom, which no encoder
/// reads) while the robot drives in real time, and every topic the layout
/// examples/sim/foxglove-layout.json shows.
#[test]
fn the_view_shows_the_robot_beside_the_brain() {
    let (python, client_python) = (python(), venv("viewenv", &["websockets==15.0.1"]));
    let dir = tempfile::tempdir().unwrap();
    let config = repo().join("examples/sim/config.yaml");
    let port = common::free_port();
    let view = format!("127.0.0.1:{port}");
    let args = ["--config", config.to_str().unwrap(), "--view", &view];
    let (mut node, listen) = common::loopback_node(dir.path(), &repo().join("examples/sim/avoider.yaml"), &args, "bursting at");
    let got = dir.path().join("client.json");
    let client = std::thread::spawn(move || {
        let (ok, said) = crate::view::client(&client_python, port, 6, &got);
        (ok, said + &std::fs::read_to_string(&got).unwrap_or_default())
    });
    let out = Command::new(&python)
        .arg(repo().join("examples/sim/bridge.py"))
        .args(["--connect", &listen, "--duration", "5", "--pace", "1", "--wait", "5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let (ok, said) = client.join().unwrap();
    node.stop();
    assert!(ok, "the client (an error status is a subscription the server refused):\n{said}\nnode log:\n{}", node.log());
    let v: serde_json::Value = serde_json::from_str(said.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {said}"));
    let schema = |topic: &str| v["channels"].as_array().unwrap().iter().find(|c| c["topic"] == topic).map(|c| c["schemaName"].clone());
    let count = |topic: &str| v["messages"].as_array().unwrap().iter().filter(|m| m["topic"] == topic).count();
    assert_eq!(schema("/odom"), Some("nav_msgs/msg/Odometry".into()), "{said}\n{}", node.log());
    assert!(count("/odom") >= 20 && count("/neuroburst/scene") >= 20, "{said}");
    let layout: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("examples/sim/foxglove-layout.json")).unwrap()).unwrap();
    for panel in layout["configById"].as_object().unwrap().values() {
        let mut named: Vec<String> = panel["topics"].as_object().map(|t| t.keys().cloned().collect()).unwrap_or_default();
        named.extend(panel["topicPath"].as_str().map(|p| p.split('.').next().unwrap().to_string()));
        named.extend(
            panel["paths"].as_array().into_iter().flatten().map(|p| p["value"].as_str().unwrap().split('.').next().unwrap().to_string()),
        );
        for t in named {
            assert!(count(&t) > 0, "the layout shows {t}, which the view did not serve: {said}\nnode log:\n{}", node.log());
        }
    }
}

/// The r2r node (the colcon workspace tests/run.sh builds) and the bridge on rclpy, in the
/// workspace's venv (MuJoCo and rosbags added to it), inside a network namespace of their own:
/// 120 simulated seconds in the arena over Fast DDS.
#[test]
fn the_avoider_drives_the_simulated_robot_over_real_ros2() {
    let Some(env) = common::ros2_env() else { return };
    let sourced = common::sourced(&env);
    let run = |script: &str| {
        let mut c = Command::new("bash");
        c.arg("-c").arg(script).env_clear().envs(sourced.iter().cloned());
        c
    };
    let has = run("python3 -c 'import mujoco, rosbags'").output().unwrap().status.success();
    if !has {
        let out = run("python3 -m pip install -q --disable-pip-version-check mujoco==4.0.0 rosbags==0.11.9").output().unwrap();
        assert!(out.status.success(), "pip install mujoco rosbags into the ROS 2 venv: {}", String::from_utf8_lossy(&out.stderr));
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = env.parent().unwrap().join("install/neuroburst/lib/neuroburst/neuroburst");
    let sim = repo().join("examples/sim");
    let script = format!(
        "ip link set lo up\n\
         {exe} node --genome {sim}/avoider.yaml --config {sim}/config.yaml --set node.transport=ros2 > node.log 2>&1 &\n\
         python3 {sim}/bridge.py --ros rclpy --world {sim}/arena.xml --duration 120 --rate 50 --wait 5 --trace trace.csv\n\
         rc=$?\nkill -INT $!\nwait $!\necho node_rc=$?\nexit $rc\n",
        exe = exe.display(),
        sim = sim.display()
    );
    let out = run(&format!("exec unshare -n bash -c {}", shell_quote(&script)))
        .current_dir(dir.path())
        .env("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let (stdout, log) = (String::from_utf8_lossy(&out.stdout), std::fs::read_to_string(dir.path().join("node.log")).unwrap_or_default());
    let ctx = format!("{stdout}\n{}\nnode log:\n{log}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{ctx}");
    let r: serde_json::Value = serde_json::from_str(stdout.lines().find(|l| l.starts_with('{')).unwrap_or("")).unwrap();
    println!("arena over rclpy and r2r: {r}");
    assert_eq!(r["collisions"], 0, "{ctx}");
    assert!(r["distance_m"].as_f64().unwrap() > 10.0, "{ctx}");
    assert_eq!(r["twists"], r["bursts"], "a Twist for every burst: {ctx}");
    assert!(stdout.contains("node_rc=0") && log.contains("stopped after 6000 bursts"), "50 bursts per simulated second: {ctx}");
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn the_cuda_backend_drives_the_robot_along_the_cpu_path() {
    if common::gpus(1) {
        drives_along_the_cpu_path("cuda");
    }
}

#[test]
fn the_wgpu_backend_drives_the_robot_along_the_cpu_path() {
    if common::wgpu_device().is_some() {
        drives_along_the_cpu_path("wgpu");
    }
}

fn drives_along_the_cpu_path(kind: &str) {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let (cpu, gpu) = (dir.path().join("cpu.csv"), dir.path().join(format!("{kind}.csv")));
    let (r_cpu, _) = drive(&python, "arena.xml", "0,0,0", "cpu", &cpu);
    let (r_gpu, log) = drive(&python, "arena.xml", "0,0,0", kind, &gpu);
    assert!(log.contains("stopped after 6000 bursts") && log.contains(" 0 dropped messages"), "{log}");
    let (a, b) = (std::fs::read_to_string(&cpu).unwrap(), std::fs::read_to_string(&gpu).unwrap());
    assert_eq!(a.lines().count(), 6000, "a pose per burst");
    if let Some((i, (x, y))) = a.lines().zip(b.lines()).enumerate().find(|(_, (x, y))| x != y) {
        panic!("the paths part at burst {}: cpu {x}, {kind} {y}", i + 1);
    }
    assert_eq!(a, b, "the same path, burst for burst");
    assert_eq!(r_cpu["distance_m"], r_gpu["distance_m"]);
}
