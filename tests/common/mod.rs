//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod python;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    let ex = root().join("examples/diffdrive");
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
    for s in sets {
        args.push("--set");
        args.push(s);
    }
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
