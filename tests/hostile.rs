//! Hostile genomes, configurations and command lines (issue 59's reproductions among them): each
//! is refused by the `neuroburst` binary with exit status 2 and an error that names the file and
//! the area, field or key, under a 4 GB address-space limit, within seconds: never a panic, an
//! out-of-memory kill or a process that hangs.

use std::os::unix::process::CommandExt;
use std::process::Command;

use super::common::repo;

/// Run the binary with `args` (a 4 GB address space, 60 s): (status code, stderr).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new("timeout");
    cmd.arg("60").arg(env!("CARGO_BIN_EXE_neuroburst")).args(args);
    // SAFETY: setrlimit between fork and exec touches only this process's limits.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 4 << 30, rlim_max: 4 << 30 };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
}

fn refused(args: &[&str], parts: &[&str]) {
    let (code, err) = run(args);
    assert_eq!(code, Some(2), "{args:?} must be refused with status 2: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for p in parts {
        assert!(err.contains(p), "{args:?}: expected {p:?} in: {err}");
    }
}

const GENOMES: &[(&str, &str, &[&str])] = &[
    // the product of the dims wraps a u64 to 0 (it passed the neuron cap and ate all memory)
    ("wrap.yaml", "areas: [{id: a, kind: sensor, dims: [4194304, 2097152, 2097152]}]", &["area 'a'", "`dims`"]),
    ("max.yaml", "areas: [{id: a, kind: sensor, dims: [4294967295, 4294967295, 4294967295]}]", &["area 'a'", "`dims`"]),
    ("npv.yaml", "areas: [{id: a, kind: sensor, dims: [2, 1, 1], neurons_per_voxel: 4294967295}]", &["area 'a'", "`neurons_per_voxel`"]),
    ("sum.yaml", "areas: [{id: a, kind: sensor, dims: [65536, 65535, 1]}, {id: b, kind: motor, dims: [65536, 2, 1]}]", &["area 'b'"]),
    // a rate whose period panicked the node's burst thread, and its opposites
    ("slow.yaml", "burst_rate_hz: 1.0e-20\nareas: [{id: a, kind: sensor, dims: [2, 2, 1]}]", &["burst_rate_hz", "0.001..=100000"]),
    ("fast.yaml", "burst_rate_hz: 1.0e300\nareas: [{id: a, kind: sensor, dims: [2, 2, 1]}]", &["burst_rate_hz"]),
    ("nan.yaml", "burst_rate_hz: .nan\nareas: [{id: a, kind: sensor, dims: [2, 2, 1]}]", &["burst_rate_hz"]),
    (
        "vector.yaml",
        "areas: [{id: a, kind: sensor, dims: [2, 1, 1]}]\nmorphologies: {m: {vectors: [[9223372036854775807, 0, 0]]}}\nmappings: [{source: a, destination: a, morphology: m, scalar: [2147483647, 1, 1]}]",
        &["morphology 'm'", "vectors[0]"],
    ),
    (
        "pattern.yaml",
        "areas: [{id: a, kind: sensor, dims: [2, 1, 1]}]\nmorphologies: {m: {patterns: [[[-9223372036854775808, 0, 0], ['*', 0, 0]]]}}\nmappings: [{source: a, destination: a, morphology: m}]",
        &["morphology 'm'", "patterns[0]"],
    ),
    (
        "tile.yaml",
        "areas: [{id: a, kind: sensor, dims: [4, 1, 1]}]\nmorphologies: {m: {tile: {src_seed: [2, 1, 1], src_pattern: [[9223372036854775807, 1]], mapper: projector}}}\nmappings: [{source: a, destination: a, morphology: m}]",
        &["morphology 'm'", "tile.src_pattern"],
    ),
    (
        "fanout.yaml",
        "areas: [{id: a, kind: sensor, dims: [1000, 1000, 1]}]\nmorphologies: {m: {random: {fanout: 4294967295}}}\nmappings: [{source: a, destination: a, morphology: m}]",
        &["morphology 'm'", "random.fanout"],
    ),
    (
        "window.yaml",
        "areas: [{id: a, kind: sensor, dims: [4, 1, 1]}]\nmappings: [{source: a, destination: a, morphology: projector, plasticity: {constant: 1.0e300, window: 4294967295}}]",
        &["mapping #0 (a -> a)", "plasticity"],
    ),
    (
        "synapses.yaml",
        "areas: [{id: a, kind: sensor, dims: [4, 1, 1]}]\nmappings: [{source: a, destination: a, morphology: projector, plasticity: {constant: 1, window: 2}, synapses: [[4294967295, 0, 1]]}]",
        &["mapping #0 (a -> a)", "synapses[0]"],
    ),
];

#[test]
fn hostile_genomes_are_refused_naming_the_area_and_field() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body, parts) in GENOMES {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("name: hostile\n{body}\n")).unwrap();
        let g = path.to_str().unwrap();
        let mut expected = parts.to_vec();
        expected.push(name);
        refused(&["run", "--genome", g, "--bursts", "2", "--backend", "cpu"], &expected);
        refused(&["node", "--genome", g, "--check"], &expected);
        refused(&["inspect", "--genome", g], &expected);
    }
}

#[test]
fn hostile_feagi_genomes_are_refused_naming_the_key() {
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("tests/fixtures/feagi/barebones_genome.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (timestep, key) in [(1e300, "simulation_timestep"), (1e-30, "simulation_timestep"), (-1.0, "simulation_timestep")] {
        let mut g = base.clone();
        g["physiology"]["simulation_timestep"] = serde_json::json!(timestep);
        let path = dir.path().join("feagi.json");
        std::fs::write(&path, g.to_string()).unwrap();
        refused(&["run", "--genome", path.to_str().unwrap(), "--bursts", "2"], &["feagi.json", key]);
    }
}

#[test]
fn hostile_configurations_and_command_lines_are_refused_naming_the_key() {
    let genome = repo().join("examples/genomes/reflex.yaml");
    let g = genome.to_str().unwrap();
    for (set, key) in [
        ("node.rate_hz=1e-20", "node.rate_hz"),
        ("node.stats_rate_hz=1e-300", "node.stats_rate_hz"),
        ("view.rate_hz=1e-300", "view.rate_hz"),
        ("replay.pace=1e-300", "replay.pace"),
        ("cluster.rate_hz=1e-20", "cluster.rate_hz"),
        ("node.max_message_size=1e12", "node.max_message_size"),
    ] {
        refused(&["node", "--genome", g, "--check", "--set", set], &[key]);
    }
    // a decoder's moving average keeps its window's bursts: a window of 2^32 grew without end
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("window.yaml");
    std::fs::write(
        &config,
        "decoders:\n  - {kind: twist, area: o__mot, topic: /cmd_vel, axes: [{axis: linear_x, scale: 0.5, limit: 1.0}], output: {window: 4294967295}}\n",
    )
    .unwrap();
    let (bag, genome, out) =
        (repo().join("examples/diffdrive/input.mcap"), repo().join("examples/diffdrive/genome.yaml"), dir.path().join("o.mcap"));
    let [bag, genome, config, out] = [&bag, &genome, &config, &out].map(|p| p.to_str().unwrap().to_string());
    refused(&["replay", "--bag", &bag, "--genome", &genome, "--config", &config, "--out", &out], &["/cmd_vel", "output.window"]);
    for (args, what) in [
        (&["bench", "--backend", "cpu", "--neurons", "1000", "--fanout", "4294967295", "--bursts", "1"][..], "random.fanout"),
        (&["bench", "--backend", "cpu", "--neurons", "1000", "--fanout", "10", "--hz", "1e-30", "--bursts", "1"][..], "--hz"),
        (&["bench", "--backend", "cpu", "--neurons", "1000", "--fanout", "10", "--rate", "NaN", "--bursts", "1"][..], "rho"),
        (&["bench-loop", "--backend", "cpu", "--neurons", "1000", "--duration", "1e300"][..], "--duration"),
        (&["bench-loop", "--backend", "cpu", "--neurons", "1000", "--rate", "1e-9"][..], "--rate"),
    ] {
        refused(args, &[what]);
    }
}
