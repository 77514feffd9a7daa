//! The node against a robot played by a Python eclipse-zenoh 1.10.2 peer (tests/python/robot.py):
//! rmw_zenoh keys, attachments and liveliness tokens; the zenoh-bridge-ros2dds format; bad input;
//! a router that stops and comes back. Everything on 127.0.0.1, multicast scouting off.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{free_port, repo, venv, Proc, PY_PACKAGES};

const RATE: f64 = 200.0;

/// Start the node with the rover genome; `endpoint` flags as given.
fn node(dir: &Path, format: &str, zenoh: &[&str], extra: &[&str]) -> Proc {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neuroburst"));
    cmd.arg("node")
        .arg("--genome")
        .arg(repo().join("examples/genomes/rover.yaml"))
        .arg("--config")
        .arg(repo().join("config/node.yaml"))
        .args(["--zenoh-format", format])
        .args(zenoh)
        .args(["--set", &format!("node.rate_hz={RATE}"), "--set", "node.stats_rate_hz=10", "--set", "node.log_interval_s=600"])
        .arg("--set")
        .arg(format!("checkpoint.path={}", dir.join("ckpt").display()))
        .args(extra)
        .env("RUST_LOG", "info,zenoh=warn");
    Proc::spawn(&mut cmd, dir.join("node.log"))
}

/// The node as a peer listening on a free loopback port (the robot connects there; the node's own
/// connect endpoint leads nowhere); returns it and the endpoint.
fn peer_node(dir: &Path, format: &str, extra: &[&str]) -> (Proc, String) {
    let listen = format!("tcp/127.0.0.1:{}", free_port());
    let nowhere = format!("tcp/127.0.0.1:{}", free_port());
    (node(dir, format, &["--zenoh-listen", &listen, "--zenoh-connect", &nowhere], extra), listen)
}

fn robot(python: &Path, connect: &str, format: &str, scenario: &str) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(repo().join("tests/python/robot.py"))
        .args(["--connect", connect, "--format", format, "--scenario", scenario, "--rate", &RATE.to_string()])
        .arg("--msg-dir")
        .arg(repo().join("msg"));
    cmd
}

fn run_robot(python: &Path, node: &mut Proc, connect: &str, format: &str, scenario: &str) -> String {
    run_robot_cmd(robot(python, connect, format, scenario), node, &format!("{scenario}/{format}"))
}

/// Run the robot, then stop the node; both must succeed.
fn run_robot_cmd(mut robot: Command, node: &mut Proc, what: &str) -> String {
    let out = robot.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let status = node.stop();
    assert!(out.status.success(), "robot {what} failed:\n{stdout}\n{}\nnode log:\n{}", String::from_utf8_lossy(&out.stderr), node.log());
    assert!(status.is_some_and(|s| s.success()), "the node did not stop cleanly on SIGTERM: {status:?}\n{}", node.log());
    println!("{stdout}");
    stdout
}

fn basic(format: &str) {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let (mut n, listen) = peer_node(dir.path(), format, &[]);
    let out = run_robot(&python, &mut n, &listen, format, "basic");
    assert!(out.contains("\"ok\": true"), "{out}");
    // Clean shutdown wrote a checkpoint.
    assert!(dir.path().join("ckpt").exists(), "no checkpoint at shutdown:\n{}", n.log());
}

#[test]
fn rmw_format_graph_sensors_in_twist_out() {
    basic("rmw");
}

#[test]
fn ros2dds_format_sensors_in_twist_out() {
    basic("ros2dds");
}

#[test]
fn bad_input_is_counted_logged_once_and_the_node_keeps_bursting() {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let (mut n, listen) = peer_node(dir.path(), "rmw", &[]);
    let out = run_robot(&python, &mut n, &listen, "rmw", "bad");
    let log = n.log();
    // One line per topic and kind within the (long) log interval, however many bad messages.
    for kind in ["malformed messages dropped", "without a valid rmw_zenoh attachment", "replaced by a newer one"] {
        let lines = log.lines().filter(|l| l.contains("/scan") && l.contains(kind)).count();
        assert_eq!(lines, 1, "{kind}: {lines} log lines, expected 1:\n{log}\n{out}");
    }
}

#[test]
fn the_router_stops_and_comes_back() {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let router_ep = format!("tcp/127.0.0.1:{}", free_port());
    let router = |i: u32| {
        Proc::spawn(
            Command::new(&python).arg(repo().join("tests/python/router.py")).arg(&router_ep),
            dir.path().join(format!("router{i}.log")),
        )
    };
    let mut r = router(0);
    assert!(r.wait_for("router up"), "the router did not start: {}", r.log());
    // The remote-brain setup: the node and the robot are clients of the router, so everything
    // goes through it (peers would also talk directly and never notice the router's absence).
    let mut n = node(dir.path(), "rmw", &["--zenoh-mode", "client", "--zenoh-connect", &router_ep], &[]);
    let mut robot = robot(&python, &router_ep, "rmw", "router");
    robot.args(["--mode", "client"]);
    let mut child = robot.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Wait for the robot to be ready, then stop the router for 3 s.
    use std::io::BufRead;
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("ready"), "robot: {line}");
    r.child.kill().unwrap();
    r.child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let r1 = router(1);
    assert!(r1.wait_for("router up"), "the router did not restart: {}", r1.log());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let node_status = n.stop();
    let log = n.log();
    assert!(status.success(), "robot: {rest}\n{err}\nnode log:\n{log}");
    assert!(node_status.is_some_and(|s| s.success()), "node: {node_status:?}\n{log}");
    // The node noticed: one line for the loss, one for the reconnection, the loss counted.
    let lines = |text: &str| log.lines().filter(|l| l.contains(text)).count();
    assert_eq!(lines(&format!("lost every link to [\"{router_ep}\"] (loss 1)")), 1, "{log}");
    assert_eq!(lines("zenoh: connected again after"), 1, "{log}");
    assert!(log.contains("1 link losses"), "{log}");
    println!("{rest}");
}

/// Safe stops on Zenoh: a zero Twist within stale_after + one burst of the last sensor message,
/// and, after SIGTERM, a zero Twist as the last message the robot gets.
#[test]
fn safe_stop_when_blind_and_on_sigterm() {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let (mut n, listen) = peer_node(dir.path(), "rmw", &[]);
    let mut cmd = robot(&python, &listen, "rmw", "safestop");
    cmd.args(["--kill-pid", &n.child.id().to_string()]);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let status = n.stop();
    let log = n.log();
    assert!(out.status.success(), "robot: {stdout}\n{}\nnode log:\n{log}", String::from_utf8_lossy(&out.stderr));
    assert!(status.is_some_and(|s| s.success()), "the node did not stop cleanly on SIGTERM: {status:?}\n{log}");
    assert!(log.contains("stop commands sent on /cmd_vel"), "{log}");
    println!("{stdout}");
}

/// Sim time on Zenoh: with `use_sim_time:=true` the bursts follow /clock (rosgraph_msgs/Clock from
/// a Python peer at 10x real time): 50 per simulated second, none while the clock is paused.
#[test]
fn sim_time_bursts_follow_clock() {
    let python = venv("pyenv", PY_PACKAGES);
    let dir = tempfile::tempdir().unwrap();
    let (mut n, listen) = peer_node(dir.path(), "rmw", &["--set", "node.rate_hz=50", "--ros-args", "-p", "use_sim_time:=true"]);
    let mut cmd = robot(&python, &listen, "rmw", "simtime");
    cmd.args(["--rate", "50"]);
    let out = run_robot_cmd(cmd, &mut n, "simtime");
    assert!(out.contains("\"ok\": true"), "{out}");
    assert!(n.log().contains("use_sim_time: the bursts follow /clock"), "{}", n.log());
}
