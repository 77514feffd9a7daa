//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod certs;
pub mod python;
pub mod rcl;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// The file that environment variable `var` names, or None after saying on stderr why it is not
/// there (`what` is missing; `how` gets it); with NEUROBURST_REQUIRE_ROS2=1 (CI) that is a failure.
pub fn required_file(var: &str, what: &str, how: &str) -> Option<PathBuf> {
    let why = match std::env::var_os(var).map(PathBuf::from) {
        Some(p) if p.is_file() => return Some(p),
        Some(p) => format!("{var}={} is not a file", p.display()),
        None => format!("{var} is not set ({how})"),
    };
    assert!(std::env::var("NEUROBURST_REQUIRE_ROS2").as_deref() != Ok("1"), "NEUROBURST_REQUIRE_ROS2=1 but {why}");
    skip(&format!("{what}: {why}"));
    None
}

/// The gate of every GPU test: true when GPU `device` (NEUROBURST_DEVICE overrides 0) is usable
/// and at least `need` GPUs are; otherwise says why on the real stderr and returns false. With
/// NEUROBURST_REQUIRE_GPU=1 (a GPU machine) a skip is a failure instead.
pub fn gpus(need: usize) -> bool {
    let device = test_device();
    let why = match neuroburst::backend::cuda::probe(device) {
        neuroburst::backend::GpuProbe::Unavailable(why) => format!("no usable GPU {device} ({why})"),
        neuroburst::backend::GpuProbe::Available(_) => match neuroburst::backend::cuda::device_count() {
            n if n >= need => return true,
            n => format!("{n} GPU(s) here, the test needs {need}"),
        },
    };
    assert!(std::env::var("NEUROBURST_REQUIRE_GPU").as_deref() != Ok("1"), "NEUROBURST_REQUIRE_GPU=1 but {why}");
    skip(&why);
    false
}

/// The gate of every wgpu test: the wgpu device's name, or None after saying why there is none.
/// With NEUROBURST_REQUIRE_WGPU=1 (.ci/run: the test command installs lavapipe) that is a failure.
pub fn wgpu_device() -> Option<String> {
    match neuroburst::backend::wgpu::probe() {
        neuroburst::backend::GpuProbe::Available(name) => Some(name),
        neuroburst::backend::GpuProbe::Unavailable(why) => {
            assert!(std::env::var("NEUROBURST_REQUIRE_WGPU").as_deref() != Ok("1"), "NEUROBURST_REQUIRE_WGPU=1 but {why}");
            skip(&format!("no wgpu device ({why})"));
            None
        }
    }
}

/// The GPU the GPU tests run on: NEUROBURST_DEVICE, default 0.
pub fn test_device() -> usize {
    std::env::var("NEUROBURST_DEVICE").ok().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Say why a test skips, on the real stderr: libtest captures `println!` and `eprintln!` of passing
/// tests, and a skip must never pass silently.
pub fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "skipping: {why}");
}

/// The environment file of the ROS 2 colcon workspace that `tests/run.sh` builds
/// (NEUROBURST_ROS2_ENV), or None after saying why.
pub fn ros2_env() -> Option<PathBuf> {
    required_file("NEUROBURST_ROS2_ENV", "no ROS 2 workspace", "tests/run.sh builds the ROS 2 workspace and sets it")
}

/// The environment that sourcing `env` (a workspace's env.sh) gives, to run its programs.
pub fn sourced(env: &Path) -> Vec<(String, String)> {
    let out = Command::new("bash").arg("-c").arg(format!(". {} && env -0", env.display())).output().unwrap();
    assert!(out.status.success(), "cannot source {}: {}", env.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.split('\0').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run `neuroburst` with `args`; returns the output (whatever the status).
pub fn neuroburst(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuroburst")).args(args).env("RUST_LOG", "warn").output().expect("cannot start neuroburst")
}

/// `neuroburst replay` of `bag` through the diffdrive example into `out`, with `--set` overrides.
pub fn replay(bag: &Path, out: &Path, sets: &[&str]) -> Output {
    let sets: Vec<String> = sets.iter().flat_map(|s| ["--set".to_string(), s.to_string()]).collect();
    replay_example("diffdrive", bag, out, &sets.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `neuroburst replay` of `bag` through `examples/<example>`'s genome and configuration into
/// `out`, with more arguments (`--set k=v`, `--backend cuda`, `--checkpoint FILE`, ...).
pub fn replay_example(example: &str, bag: &Path, out: &Path, extra: &[&str]) -> Output {
    let ex = root().join("examples").join(example);
    let (g, c) = (ex.join("genome.yaml"), ex.join("config.yaml"));
    let mut args = vec![
        "replay",
        "--bag",
        bag.to_str().unwrap(),
        "--genome",
        g.to_str().unwrap(),
        "--config",
        c.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "log.progress=false",
    ];
    args.extend_from_slice(extra);
    neuroburst(&args)
}

/// Panic with the command's output unless it succeeded; returns stdout.
pub fn ok(o: Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "command failed ({}):\nstdout:\n{stdout}\nstderr:\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    stdout
}

/// Make a bag with `examples/diffdrive/make_bag.py` (rosbags) and these arguments.
pub fn make_bag(out: &Path, args: &[&str]) {
    let script = root().join("examples/diffdrive/make_bag.py");
    let mut all = vec![script.to_str().unwrap(), "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    python::run_file(&all);
}

// ---- helpers of the node tests (Python Zenoh peers, child processes) ----

/// The Python packages the node tests use (eclipse-zenoh: the same minor version as the crate).
pub const PY_PACKAGES: &[&str] = &["eclipse-zenoh==1.10.2", "rosbags==0.11.9", "xxhash==4.1.0"];

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A venv under target/ with `packages` installed (created once, shared by the test binaries
/// under a file lock). Fails clearly when PyPI cannot be reached.
pub fn venv(name: &str, packages: &[&str]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    let lock = std::fs::File::create(dir.with_extension("lock")).unwrap();
    // SAFETY: flock on a file descriptor we own; released when `lock` is dropped.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
    let marker = dir.join(format!("installed-{}", packages.join(",").replace(['=', '/'], "_")));
    let python = dir.join("bin/python");
    if !marker.exists() {
        let ok = Command::new("python3").args(["-m", "venv"]).arg(&dir).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "cannot create a Python venv in {} (is python3 with venv installed?)", dir.display());
        let out =
            Command::new(&python).args(["-m", "pip", "install", "--disable-pip-version-check", "-q"]).args(packages).output().unwrap();
        assert!(
            out.status.success(),
            "pip install {} failed (is PyPI reachable?):\n{}",
            packages.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&marker, "").unwrap();
    }
    python
}

/// A loopback port free for TCP and UDP (`quic/` endpoints too), below the ephemeral range and
/// never handed out twice in this test process: `neuroburst::cluster::netns::loopback_port`.
pub fn free_port() -> u16 {
    neuroburst::cluster::netns::loopback_port()
}

/// `neuroburst node` with `genome` and `args`, a Zenoh peer listening on a free loopback port
/// (its own connect endpoint leads nowhere), its log in `dir`; returned once `ready` is in its
/// log, with the endpoint to connect to.
pub fn loopback_node(dir: &Path, genome: &Path, args: &[&str], ready: &str) -> (Proc, String) {
    let listen = format!("tcp/127.0.0.1:{}", free_port());
    let nowhere = format!("tcp/127.0.0.1:{}", free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neuroburst"));
    cmd.arg("node")
        .arg("--genome")
        .arg(genome)
        .args(["--zenoh-listen", &listen, "--zenoh-connect", &nowhere])
        .args(args)
        .env("RUST_LOG", "info,zenoh=warn");
    let node = Proc::spawn(&mut cmd, dir.join("node.log"));
    assert!(node.wait_for(ready), "{}", node.log());
    (node, listen)
}

/// `neuroburst node` with the rover genome and config/remote_brain.yaml on the CPU at 200 Hz
/// (stats at 10 Hz, its checkpoint and log in `dir`), plus `args`; returned once bursting.
pub fn rover_node(dir: &Path, args: &[String]) -> Proc {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neuroburst"));
    cmd.arg("node")
        .arg("--genome")
        .arg(repo().join("examples/genomes/rover.yaml"))
        .arg("--config")
        .arg(repo().join("config/remote_brain.yaml"))
        .args(["--set", "node.rate_hz=200", "--set", "node.stats_rate_hz=10", "--set", "backend.kind=cpu"])
        .arg("--set")
        .arg(format!("checkpoint.path={}", dir.join("ckpt").display()))
        .args(args)
        .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or("info,zenoh=warn".into()));
    let node = Proc::spawn(&mut cmd, dir.join("node.log"));
    assert!(node.wait_for("bursting at"), "the node did not start:\n{}", node.log());
    node
}

/// A child process killed (SIGTERM, then SIGKILL) when dropped.
pub struct Proc {
    pub child: Child,
    pub stderr: PathBuf,
}

impl Proc {
    pub fn spawn(cmd: &mut Command, stderr: PathBuf) -> Proc {
        let err = std::fs::File::create(&stderr).unwrap();
        let child = cmd.stdout(err.try_clone().unwrap()).stderr(err).spawn().unwrap();
        Proc { child, stderr }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// SIGTERM, then wait up to 10 s.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        self.signal(libc::SIGTERM);
        for _ in 0..200 {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        None
    }

    /// Wait up to 30 s for `text` in the output.
    pub fn wait_for(&self, text: &str) -> bool {
        for _ in 0..300 {
            if self.log().contains(text) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        false
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.signal(libc::SIGTERM);
            std::thread::sleep(std::time::Duration::from_millis(300));
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The GPU's stored rows (`CudaBackend::stored_rows`) are `part`'s: row pointers, targets and
/// codes (`name` says which brain). Returns the synapses compared.
pub fn assert_rows(rows: (Vec<u64>, Vec<u32>, Vec<u32>), part: &neuroburst::connectome::Part, name: &str) -> usize {
    let (row_ptr, targets, codes) = rows;
    assert_eq!(row_ptr, part.row_ptr, "{name}: row pointers");
    assert_eq!(targets, part.targets, "{name}: targets");
    assert_eq!(codes, (0..part.codes.len()).map(|i| part.codes.get(i)).collect::<Vec<_>>(), "{name}: codes");
    targets.len()
}
