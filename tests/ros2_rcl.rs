//! The r2r node on a real ROS 2 Jazzy (rcl, Fast DDS, rclpy from PyPI wheels), against a real rclpy
//! robot (tests/python/rcl_robot.py), everything inside `unshare -n`. `tests/run.sh` (the README's
//! test command, and CI) builds the colcon workspace (neuroburst_msgs, then neuroburst with
//! `--features ros2`) and sets NEUROBURST_ROS2_ENV; without it these tests say why on stderr and
//! pass, unless NEUROBURST_REQUIRE_ROS2=1 (CI) makes that a failure.

use crate::common;

use std::path::Path;

use serde_json::Value;

/// Run the robot scenario with the installed r2r node (`node_args` after `node --genome ...`).
fn scenario(env: &Path, robot_args: &[&str], node_args: &[&str], extra_env: &[(&str, &str)]) -> (Value, String, Vec<(f64, f64, f64)>) {
    let root = common::root();
    let exe = env.parent().unwrap().join("install/neuroburst/lib/neuroburst/neuroburst");
    let node = format!(
        "{} node --genome {} --config {} {}",
        exe.display(),
        root.join("tests/ros2/robot.yaml").display(),
        root.join("tests/ros2/node.yaml").display(),
        node_args.join(" ")
    );
    let run = common::rcl::run(env, robot_args, &node, extra_env);
    let twists = run.twists();
    (run.v, run.node_log, twists)
}

/// The robot feeds five sensor kinds, goes silent, feeds again, and the node is stopped by
/// `signal` while fed: the node is in the graph under its remapped name, Twists flow while fed,
/// a zero Twist comes within stale_after + one burst of silence, diagnostics and stats arrive,
/// and the last Twist is zero.
fn robot_run(signal: &str) {
    let Some(env) = common::ros2_env() else { return };
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path().join("params.yaml");
    std::fs::write(&params, "/**:\n  ros__parameters:\n    node:\n      stats_topic: ~/burst_stats\n").unwrap();
    let params = params.display().to_string();
    let node_args = [
        "--ros-args",
        "-r",
        "__node:=brain1",
        "-r",
        "__ns:=/robot1",
        "-r",
        "/robot1/cmd_vel:=/robot1/diff/cmd_vel",
        "--params-file",
        &params,
        "-p",
        "node.stats_rate_hz:=5.0",
    ];
    let robot_args =
        ["--scenario", "robot", "--cmd-vel", "/robot1/diff/cmd_vel", "--stats", "/robot1/brain1/burst_stats", "--signal", signal];
    let (v, log, tw) = scenario(&env, &robot_args, &node_args, &[]);
    let ctx = format!("{v:#}\n--- node log ---\n{log}");
    assert_eq!(v["started"], true, "no Twist from the node: {ctx}");
    assert!(v["graph"].as_array().unwrap().iter().any(|n| n == "/robot1/brain1"), "node not in the graph: {ctx}");
    assert!(log.contains("/robot1/brain1"), "the log does not name the node /robot1/brain1:\n{log}");
    let (fed, silent, signal_at) =
        (v["fed_until"].as_f64().unwrap(), v["silent_until"].as_f64().unwrap(), v["signal_at"].as_f64().unwrap());
    let moving_while_fed = tw.iter().filter(|t| t.0 < fed && t.1 > 0.0).count();
    assert!(moving_while_fed > 20, "{moving_while_fed} forward Twists while fed: {ctx}");
    // safe stop on silence: stale_after 0.5 s + one burst (20 ms) + 150 ms for DDS and scheduling
    let first_zero = tw.iter().find(|t| t.0 > fed && t.1 == 0.0 && t.2 == 0.0).map(|t| t.0);
    let first_zero = first_zero.unwrap_or_else(|| panic!("no zero Twist after the sensors went silent: {ctx}"));
    assert!(first_zero - fed <= 0.5 + 0.02 + 0.15, "zero Twist {:.3} s after the last sensor message: {ctx}", first_zero - fed);
    assert!(tw.iter().filter(|t| t.0 > first_zero + 0.05 && t.0 < silent).all(|t| t.1 == 0.0), "moving while blind: {ctx}");
    assert!(tw.iter().any(|t| t.0 > silent + 0.2 && t.0 < signal_at && t.1 > 0.0), "no forward Twist once fed again: {ctx}");
    // safe stop on the signal: the last message is zero, and it came after the signal
    let last = tw.last().unwrap();
    assert!(last.0 > signal_at && last.1 == 0.0 && last.2 == 0.0, "last Twist {last:?} (signal at {signal_at:.3}): {ctx}");
    assert_eq!(v["node_rc"], 0, "{ctx}");
    println!(
        "{signal}: zero Twist {:.3} s after the last sensor message; last Twist {:.3} s after the signal",
        first_zero - fed,
        last.0 - signal_at
    );
    // health and stats
    let diags = v["diagnostics"].as_array().unwrap();
    let d = diags
        .iter()
        .rev()
        .find(|d| d["name"] == "neuroburst: /robot1/brain1" && d["level"] == 0)
        .unwrap_or_else(|| panic!("no /diagnostics: {ctx}"));
    for topic in ["scan", "camera/image_raw", "imu", "joint_states", "points"] {
        let n: u64 = d["values"][format!("received /robot1/{topic}")].as_str().unwrap_or("0").parse().unwrap();
        assert!(n > 10, "{topic}: {n} messages received by the node: {ctx}");
    }
    assert!(
        diags.iter().any(|d| d["level"] == 1 && d["message"].as_str().unwrap().contains("no sensor input")),
        "no WARN while blind: {ctx}"
    );
    assert_eq!(diags.last().unwrap()["message"], "stopped: stop commands sent", "the last status: {ctx}");
    // -p node.stats_rate_hz:=5 (default 1): about 10 bursts per period at 50 Hz
    let bursts: u64 = d["values"]["bursts in period"].as_str().unwrap().parse().unwrap();
    assert!((5..=20).contains(&bursts), "{bursts} bursts per stats period: {ctx}");
    let stats = v["stats"].as_array().unwrap();
    assert!(
        stats.len() >= 3 && stats.last().unwrap()["burst"].as_u64().unwrap() > 50,
        "BurstStats (neuroburst_msgs) on ~/burst_stats: {ctx}"
    );
}

#[test]
fn robot_on_real_rcl_sigint() {
    robot_run("SIGINT");
}

#[test]
fn robot_on_real_rcl_sigterm() {
    robot_run("SIGTERM");
}

/// `use_sim_time:=true`: /clock at 10x real time; the bursts follow it, stamped with it.
#[test]
fn sim_time_follows_clock() {
    let Some(env) = common::ros2_env() else { return };
    let (v, log, tw) = scenario(
        &env,
        &["--scenario", "simtime", "--feed", "1.5"],
        &["--ros-args", "-r", "__ns:=/robot1", "-p", "use_sim_time:=true"],
        &[],
    );
    let ctx = format!("{v:#}\n--- node log ---\n{log}");
    assert_eq!(v["started"], true, "{ctx}");
    let (wall, sim) = (v["wall_s"].as_f64().unwrap(), v["sim_s"].as_f64().unwrap());
    assert!(sim > 8.0 * wall, "the clock ran {sim} s in {wall} s: {ctx}");
    // 50 bursts per simulated second, one Twist each: ~10x what the wall clock would give
    let n = tw.len() as f64;
    assert!(n > 0.7 * 50.0 * sim && n < 1.2 * 50.0 * sim, "{n} Twists in {sim} simulated s ({wall} s): {ctx}");
    println!("sim time: {n} Twists in {sim:.2} simulated s ({wall:.2} s wall): {:.1} per simulated s", n / sim);
    // diagnostics are stamped with simulated time; the clock runs on at 10x until the signal
    // lands, and the last status is stamped when the node stops (100 ms of wall time allowed)
    let end = v["sim_end"].as_f64().unwrap();
    let d = v["diagnostics"].as_array().unwrap();
    assert!(!d.is_empty() && d.iter().all(|d| (1000.0..=end + 1.0).contains(&d["stamp"].as_f64().unwrap())), "{ctx}");
}

/// ROS_DOMAIN_ID: a robot on domain 7 does not hear a node on domain 0, and does when both are 7.
#[test]
fn ros_domain_id() {
    let Some(env) = common::ros2_env() else { return };
    // the node on domain 0 (--domain 0 wins over the environment's 7), the robot on 7
    let ns = ["--ros-args", "-r", "__ns:=/robot1"];
    let (v, log, tw) =
        scenario(&env, &["--scenario", "domain", "--feed", "4"], &[&["--domain", "0"], &ns[..]].concat(), &[("ROS_DOMAIN_ID", "7")]);
    assert!(tw.is_empty() && v["diagnostics"].as_array().unwrap().is_empty(), "heard across domains: {v:#}\n{log}");
    let (v, log, tw) = scenario(&env, &["--scenario", "domain", "--feed", "4"], &ns, &[("ROS_DOMAIN_ID", "7")]);
    assert!(tw.iter().any(|t| t.1 > 0.0), "not heard on domain 7: {v:#}\n{log}");
}

/// A managed node (`node.lifecycle`) on real rcl, walked by an rclpy lifecycle manager and
/// parameter client (tests/python/rcl_lifecycle.py): a configure that fails on a missing genome
/// and says why, `checkpoint.path` and `genome` pointed outside `node.parameter_files_dir`
/// (refused, and nothing written there), the `genome` parameter set inside it, configure, parameters listed, described and read,
/// activate and Twists, a decoder's limit set and obeyed at once, a read-only key refused with
/// the reason, /parameter_events, deactivate (a zero Twist, then none), ~/save_checkpoint (a
/// checkpoint `--resume` loads), activate again, cleanup and shutdown ending the process.
#[test]
fn a_managed_node_on_real_rcl() {
    let Some(env) = common::ros2_env() else { return };
    let root = common::root();
    let dir = tempfile::tempdir().unwrap();
    // the directory a client may point file parameters into, and a file outside it
    let files = dir.path().join("brains");
    std::fs::create_dir(&files).unwrap();
    let ckpt = files.join("brain.ckpt");
    let genome = files.join("robot.yaml");
    std::fs::copy(root.join("tests/ros2/robot.yaml"), &genome).unwrap();
    let outside = dir.path().join("elsewhere.ckpt");
    let exe = env.parent().unwrap().join("install/neuroburst/lib/neuroburst/neuroburst");
    let node = format!(
        "{} node --config {} --ros-args -r __node:=brain -p node.lifecycle:=true -p genome:=/nonexistent/genome.yaml -p checkpoint.path:={} \
         -p node.parameter_files_dir:={}",
        exe.display(),
        root.join("tests/ros2/node.yaml").display(),
        ckpt.display(),
        files.display()
    );
    let (genome_arg, outside_arg) = (genome.display().to_string(), outside.display().to_string());
    let run = common::rcl::run_script("rcl_lifecycle.py", &env, &["--genome", &genome_arg, "--outside", &outside_arg], &node, &[]);
    let (v, log) = (&run.v, &run.node_log);
    let ctx = format!("{v:#}\n--- node log ---\n{log}");
    assert_eq!(v["ok"], true, "{ctx}");
    assert_eq!(v["node_rc"], 0, "{ctx}");
    assert!(
        log.contains("lifecycle: configure failed") && log.contains("/nonexistent/genome.yaml"),
        "the failed configure does not say why: {ctx}"
    );
    assert!(v["refused"].as_str().unwrap().contains("node.rate_hz"), "{ctx}");
    assert!(v["refused_file"].as_str().unwrap().contains("outside node.parameter_files_dir"), "{ctx}");
    assert!(!outside.exists(), "the node wrote {}, where a client pointed checkpoint.path", outside.display());
    let events: Vec<String> = v["events"].as_array().unwrap().iter().map(|e| e[0].as_str().unwrap().to_string()).collect();
    for t in ["configure", "activate", "deactivate", "cleanup", "shutdown", "transition_success", "transition_failure"] {
        assert!(events.iter().any(|e| e == t), "no {t} on ~/transition_event: {events:?}");
    }
    // the checkpoint the service wrote is one --resume loads
    let g = neuroburst::genome::Genome::load(&genome).unwrap();
    let c = neuroburst::checkpoint::Checkpoint::load(&ckpt, &g).unwrap_or_else(|e| panic!("{}: {e}", ckpt.display()));
    assert!(c.state.burst > 10, "checkpoint of burst {}", c.state.burst);
    println!(
        "managed node on rcl: {} parameters, {} Twists while active, checkpoint of burst {}",
        v["parameters"], v["twists_active"], c.state.burst
    );
}

/// The service types' RIHS01 hashes are those of the distro's own type descriptions
/// (share/<pkg>/srv/<Type>.json of the installed wheels): what rmw_zenoh's service keys carry.
#[test]
fn service_type_hashes_are_the_distros() {
    let Some(env) = common::ros2_env() else { return };
    // the workspace's env.sh sources the venv's first
    let text = std::fs::read_to_string(&env).unwrap();
    let venv_env = text.lines().find_map(|l| l.strip_prefix(". \"")?.strip_suffix('"').map(String::from)).unwrap();
    let share = Path::new(&venv_env).parent().unwrap().join("share");
    for (name, hash) in neuroburst::ros::registry::service_types() {
        let (pkg, ty) = (name.split('/').next().unwrap(), name.rsplit('/').next().unwrap());
        let file = share.join(pkg).join("srv").join(format!("{ty}.json"));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))).unwrap();
        let theirs = v["type_hashes"].as_array().unwrap().iter().find(|h| h["type_name"] == name).unwrap()["hash_string"].clone();
        assert_eq!(theirs, hash.as_str(), "{name} ({})", file.display());
    }
}
