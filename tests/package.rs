//! The ROS 2 package: launch files checked against stub `launch`/`launch_ros` modules (the
//! command lines they produce must be accepted by the node), and a colcon build with
//! colcon-ros-cargo + cargo-ament-build (PyPI) that installs the layout `ros2 launch` expects.

mod common;

use std::path::Path;
use std::process::Command;

use common::{repo, venv};

/// Run tests/python/check_launch.py on both launch files; run every command with `--check` and
/// return the resolved configurations.
fn check_launch_files(python: &Path, share: &Path, lib: &Path) -> Vec<String> {
    let genome = repo().join("examples/genomes/rover.yaml");
    let out = Command::new(python)
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
        let out = Command::new(&cmd[0]).args(&cmd[1..ros]).arg("--check").args(&cmd[ros..]).output().unwrap();
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
    // remote_brain.launch.py: Zenoh client of the robot's router.
    assert!(remote.contains("mode: client") && remote.contains("transport: zenoh"), "{remote}");
}

#[test]
fn launch_files_run_against_stub_launch_modules() {
    let python = Path::new("python3");
    let lib = Path::new(env!("CARGO_BIN_EXE_neuroburst")).parent().unwrap().to_path_buf();
    let configs = check_launch_files(python, &repo(), &lib);
    assert_launch_results(&configs);
}

#[test]
fn colcon_builds_the_package_with_the_ament_layout() {
    let python = venv("colcon-env", &["colcon-core==0.21.3", "colcon-ros-cargo==0.2.0", "cargo-ament-build==0.1.11"]);
    let bin = python.parent().unwrap();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    // colcon must not crawl the build trees under target/.
    std::fs::write(target.parent().unwrap().join("COLCON_IGNORE"), "").unwrap();
    let ws = target.join("colcon-ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let link = ws.join("src/neuroburst");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(repo(), &link).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    // A persistent build base: only the first run compiles everything.
    let out = Command::new(bin.join("colcon"))
        .current_dir(&ws)
        .args(["build", "--base-paths", "src", "--packages-select", "neuroburst", "--event-handlers", "console_direct-"])
        .arg("--build-base")
        .arg(ws.join("build"))
        .arg("--install-base")
        .arg(ws.join("install"))
        .env("PATH", path)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "colcon build failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // colcon's default (isolated) layout: one prefix per package.
    let install = ws.join("install/neuroburst");
    let exe = install.join("lib/neuroburst/neuroburst");
    assert!(exe.is_file(), "{} missing", exe.display());
    for f in [
        "package.xml",
        "launch/brain.launch.py",
        "launch/remote_brain.launch.py",
        "config/params.yaml",
        "config/node.yaml",
        "config/neuroburst.yaml",
        "msg/BurstStats.msg",
    ] {
        let p = install.join("share/neuroburst").join(f);
        assert!(p.is_file(), "{} missing", p.display());
    }
    let configs = check_launch_files(&python, &install.join("share"), &install.join("lib/neuroburst"));
    assert_launch_results(&configs);
}
