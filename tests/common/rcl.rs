//! The rclpy robot of tests/python/rcl_robot.py on the ROS 2 Jazzy that `tests/run.sh` installs:
//! the robot, the node it starts (and, for the DDS path, the bridge it starts first) share one
//! `unshare -n` network namespace, so DDS never leaves it.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// What one robot run saw (its JSON), with the node's log and the bridge's.
pub struct Run {
    pub v: Value,
    pub node_log: String,
    pub before_log: String,
}

impl Run {
    /// (seconds since the robot started, linear.x, angular.z) of every Twist the robot got.
    pub fn twists(&self) -> Vec<(f64, f64, f64)> {
        let t = self.v["twists"].as_array().unwrap();
        t.iter().map(|t| (t[0].as_f64().unwrap(), t[1].as_f64().unwrap(), t[2].as_f64().unwrap())).collect()
    }

    /// Everything, for assertion messages.
    pub fn context(&self) -> String {
        format!("{:#}\n--- node log ---\n{}\n--- bridge log ---\n{}", self.v, self.node_log, self.before_log)
    }
}

/// Run the robot with `robot_args`, starting `node` (a command line, shell words) after `--`;
/// `env` is the workspace's environment file (sourced first).
pub fn run(env: &Path, robot_args: &[&str], node: &str, extra_env: &[(&str, &str)]) -> Run {
    run_script("rcl_robot.py", env, robot_args, node, extra_env)
}

/// [`run`] with another script of tests/python/ playing the robot's side.
pub fn run_script(script: &str, env: &Path, robot_args: &[&str], node: &str, extra_env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (log, before) = (dir.path().join("node.log"), dir.path().join("before.log"));
    let script = format!(
        ". {env}\nexec unshare -n python3 {robot} {robot_args} -- {node}\n",
        env = env.display(),
        robot = super::root().join("tests/python").join(script).display(),
        robot_args = robot_args.join(" "),
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(&script).current_dir(dir.path()).env("ROBOT_NODE_LOG", &log).env("ROBOT_BEFORE_LOG", &before);
    // DDS discovery by unicast on 127.0.0.1 (no multicast), for the robot, the node and the bridge
    cmd.env("RUST_LOG", "info").env_remove("ROS_DOMAIN_ID").env("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let node_log = std::fs::read_to_string(&log).unwrap_or_default();
    let before_log = std::fs::read_to_string(&before).unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let logs = format!("--- node log ---\n{node_log}\n--- bridge log ---\n{before_log}");
    assert!(out.status.success(), "the robot failed:\n{stdout}\n{}\n{logs}", String::from_utf8_lossy(&out.stderr));
    let v = stdout.lines().last().and_then(|l| serde_json::from_str(l).ok());
    let v = v.unwrap_or_else(|| panic!("no JSON from the robot:\n{stdout}\n{logs}"));
    Run { v, node_log, before_log }
}
