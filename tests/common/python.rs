//! Python with rosbags for the tests: a virtual environment created once under
//! `target/pyenv` (`python3 -m venv`, then `pip install rosbags==0.11.9 mcap==1.6.0`), guarded by a
//! lock directory so parallel tests do not race. If PyPI cannot be reached the tests FAIL (they
//! never skip): they are what checks neuroburst against an independent implementation.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

const PACKAGES: [&str; 2] = ["rosbags==0.11.9", "mcap==1.6.0"];

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// The venv's python, created and filled on first use.
pub fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(setup).clone()
}

fn setup() -> PathBuf {
    let dir = target_dir().join("pyenv");
    let py = dir.join("bin/python");
    let ready = dir.join(format!(".ready-{}", PACKAGES.join("-")));
    if ready.exists() {
        return py;
    }
    std::fs::create_dir_all(target_dir()).unwrap();
    let lock = target_dir().join("pyenv.lock");
    let start = Instant::now();
    loop {
        match std::fs::create_dir(&lock) {
            Ok(()) => break,
            Err(_) => {
                // another test (or test binary) is installing; a lock older than 15 minutes is stale
                let stale = std::fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .map(|t| SystemTime::now().duration_since(t).unwrap_or_default() > Duration::from_secs(900))
                    .unwrap_or(false);
                if stale {
                    let _ = std::fs::remove_dir(&lock);
                }
                if ready.exists() {
                    return py;
                }
                assert!(start.elapsed() < Duration::from_secs(1200), "timed out waiting for {}", lock.display());
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    let result = (|| -> Result<(), String> {
        if ready.exists() {
            return Ok(());
        }
        if !py.exists() {
            let st = Command::new("python3").args(["-m", "venv"]).arg(&dir).status().map_err(|e| format!("cannot run python3: {e}"))?;
            if !st.success() {
                return Err(format!("python3 -m venv {} failed", dir.display()));
            }
        }
        let out = Command::new(&py)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "-q"])
            .args(PACKAGES)
            .output()
            .map_err(|e| format!("cannot run pip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "pip install {} failed; these tests need PyPI (rosbags is the independent reference for bags, CDR and type hashes):\n{}",
                PACKAGES.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::write(&ready, "").map_err(|e| e.to_string())
    })();
    let _ = std::fs::remove_dir(&lock);
    if let Err(e) = result {
        panic!("{e}");
    }
    py
}

/// Run a Python script given as text, with arguments; returns stdout, panics with stderr.
pub fn run(script: &str, args: &[&str]) -> String {
    let out = Command::new(python()).arg("-c").arg(script).args(args).output().expect("cannot run python");
    assert!(out.status.success(), "python failed:\n{}\n--- script ---\n{script}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Run a Python file with arguments (the first element is the file); returns stdout.
pub fn run_file(args: &[&str]) -> String {
    let out = Command::new(python()).args(args).output().expect("cannot run python");
    assert!(out.status.success(), "python {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Python that prints the messages of an output bag as JSON lines: {"topic", "t", "msg"} with the
/// message as a dict (custom neuroburst types registered from the bag's own schema).
pub const READ_BAG: &str = r#"
import json, sys
import numpy as np
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore, get_types_from_msg
ts = get_typestore(Stores.ROS2_JAZZY)
def todict(m):
    if hasattr(m, '__dataclass_fields__'):
        return {k: todict(getattr(m, k)) for k in m.__dataclass_fields__ if k != '__msgtype__'}
    if isinstance(m, np.ndarray):
        return m.tolist()
    if isinstance(m, list):
        return [todict(x) for x in m]
    return m
with Reader(sys.argv[1]) as r:
    for c in r.connections:
        if c.msgtype not in ts.types:
            ts.register(get_types_from_msg(c.msgdef.data, c.msgtype))
        print(json.dumps({'connection': c.topic, 'type': c.msgtype, 'qos': len(c.ext.offered_qos_profiles)}))
    for c, t, raw in r.messages():
        print(json.dumps({'topic': c.topic, 't': t, 'msg': todict(ts.deserialize_cdr(raw, c.msgtype))}))
"#;

/// The messages of a bag read with rosbags: (connections, messages) as JSON values.
pub fn read_bag(path: &std::path::Path) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let out = run(READ_BAG, &[path.to_str().unwrap()]);
    let all: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    all.into_iter().partition(|v| v.get("connection").is_some())
}
