//! Bad genomes, configs and command lines give an error naming the file and the area, field or
//! line, never a panic: checked through the library and through the `neuroburst` binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use neuroburst::genome::Genome;

const GOOD: &str = "name: t
areas:
  - id: a
    kind: sensor
    dims: [2, 2, 1]
  - id: b
    kind: motor
    dims: [2, 1, 1]
mappings:
  - {source: a, destination: b, morphology: projector}
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Load `text` as a genome file and return the error message (which must exist).
fn load_err(name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, text);
    let e = Genome::load(&p).expect_err("the genome must be refused").to_string();
    assert!(e.contains(name), "the error must name the file {name}: {e}");
    e
}

fn assert_has(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "expected {p:?} in: {e}");
    }
}

#[test]
fn the_good_genome_loads() {
    let dir = tempfile::tempdir().unwrap();
    Genome::load(&write(dir.path(), "good.yaml", GOOD)).unwrap();
}

#[test]
fn unknown_morphology() {
    let e = load_err("m.yaml", &GOOD.replace("morphology: projector", "morphology: spiral"));
    assert_has(&e, &["mapping #0 (a -> b)", "`morphology`", "spiral"]);
}

#[test]
fn mapping_to_a_missing_area() {
    let e = load_err("d.yaml", &GOOD.replace("destination: b", "destination: zz"));
    assert_has(&e, &["mapping #0 (a -> zz)", "`destination`", "'zz'"]);
}

#[test]
fn parameter_out_of_range() {
    let e = load_err("p.yaml", &GOOD.replace("dims: [2, 1, 1]", "dims: [2, 1, 1]\n    neuron: {excitability: 1.5}"));
    assert_has(&e, &["area 'b'", "`neuron.excitability`", "1.5"]);
    let e = load_err("w.yaml", &GOOD.replace("morphology: projector", "morphology: projector, weight: 300"));
    assert_has(&e, &["mapping #0", "`weight`", "300"]);
    let e = load_err("l.yaml", &GOOD.replace("dims: [2, 1, 1]", "dims: [2, 1, 1]\n    neuron: {leak: {fraction: 2.0}}"));
    assert_has(&e, &["area 'b'", "`neuron.leak.fraction`"]);
    let e = load_err("r.yaml", &GOOD.replace("dims: [2, 1, 1]", "dims: [2, 1, 1]\n    neuron: {refractory_period: 70000}"));
    assert_has(&e, &["area 'b'", "refractory_period"]);
}

#[test]
fn zero_dimensions() {
    let e = load_err("z.yaml", &GOOD.replace("dims: [2, 2, 1]", "dims: [2, 0, 1]"));
    assert_has(&e, &["area 'a'", "`dims`", "at least 1"]);
}

#[test]
fn yaml_syntax_error_names_the_line() {
    let e = load_err("s.yaml", &GOOD.replace("  - id: b\n", "  - id: b\n   oops: [\n"));
    assert_has(&e, &["line"]);
}

#[test]
fn unknown_field_names_the_field_and_line() {
    let e = load_err("u.yaml", &GOOD.replace("    kind: motor", "    kind: motor\n    colour: red"));
    assert_has(&e, &["unknown field `colour`", "line 8"]);
}

#[test]
fn wrong_types_and_negative_numbers() {
    let e = load_err("n.yaml", &GOOD.replace("dims: [2, 2, 1]", "dims: [2, -2, 1]"));
    assert_has(&e, &["line"]);
    let e = load_err("k.yaml", &GOOD.replace("kind: sensor", "kind: eye"));
    assert_has(&e, &["unknown variant `eye`"]);
}

#[test]
fn truncated_feagi_json_names_the_line() {
    let full = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/feagi/essential_genome.json"))
        .expect("tests/fixtures/feagi/essential_genome.json must be present");
    let e = load_err("cut.json", &full[..3000]);
    assert_has(&e, &["line"]);
}

#[test]
fn missing_file_is_named() {
    let e = Genome::load(Path::new("/nonexistent/brain.yaml")).unwrap_err().to_string();
    assert_has(&e, &["/nonexistent/brain.yaml"]);
}

fn neuroburst(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn the_binary_reports_errors_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.yaml", &GOOD.replace("destination: b", "destination: nowhere"));
    let good = write(dir.path(), "good.yaml", GOOD);
    let bad_cfg = write(dir.path(), "bad_cfg.yaml", "backend:\n  kind: quantum\n");
    let bad = bad.to_str().unwrap();
    let good = good.to_str().unwrap();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (vec!["run", "--genome", bad, "--bursts", "3"], vec!["bad.yaml", "nowhere", "`destination`"]),
        (vec!["inspect", "--genome", bad], vec!["bad.yaml", "nowhere"]),
        (vec!["convert", "--genome", bad], vec!["bad.yaml"]),
        (vec!["run", "--genome", good, "--bursts", "3", "--set", "backend.kind=quantum"], vec!["backend.kind=quantum", "unknown variant"]),
        (vec!["run", "--genome", good, "--bursts", "3", "--set", "nokey"], vec!["nokey", "key=value"]),
        (vec!["run", "--genome", good, "--bursts", "3", "--config", bad_cfg.to_str().unwrap()], vec!["bad_cfg.yaml", "quantum"]),
        (vec!["run", "--genome", good, "--bursts", "3", "--spikes-out", "/nonexistent/dir/s.jsonl"], vec!["/nonexistent/dir/s.jsonl"]),
        (vec!["run", "--genome", good, "--bursts", "3", "--backend", "cuda"], vec!["CUDA backend was asked for"]),
        (vec!["bench", "--backend", "cpu", "--neurons", "100", "--rate", "2"], vec!["--rate"]),
        (vec!["bench", "--backend", "cpu", "--neurons", "100", "--attractivity", "150"], vec!["--attractivity", "0..=100"]),
    ];
    for (args, expect) in cases {
        let (code, _, err) = neuroburst(&args);
        assert_eq!(code, 2, "{args:?} should exit with 2; stderr: {err}");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        for e in expect {
            assert!(err.contains(e), "{args:?}: expected {e:?} in stderr: {err}");
        }
    }
    // each cause is said once (the message of a missing file used to name the OS error twice)
    for args in
        [vec!["run", "--genome", "/nonexistent/brain.yaml", "--bursts", "1"], vec!["inspect", "--genome", "/nonexistent/brain.yaml"]]
    {
        let (code, _, err) = neuroburst(&args);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.matches("/nonexistent/brain.yaml").count(), 1, "{args:?}: {err}");
        assert_eq!(err.matches("No such file or directory").count(), 1, "{args:?} says the cause twice: {err}");
    }
    // clap's own usage errors exit with 2 as well
    let (code, _, err) = neuroburst(&["run", "--bursts", "x"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_brain_too_big_for_the_host_is_refused_before_the_build() {
    // W(100M, 100): 1e10 synapses on a 24 GB machine, and W(100k) under an artificially low limit,
    // every synapse to be stored (`auto` would draw them again: below)
    for (limit, neurons, synapses) in [("24000000000", "100000000", "10000000000"), ("50000000", "100000", "10000000")] {
        let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
            .args(["bench", "--backend", "cpu", "--neurons", neurons, "--fanout", "100", "--rate", "0.01", "--bursts", "1"])
            .args(["--set", "backend.connectome=stored"])
            .env("NEUROBURST_HOST_MEM_LIMIT", limit)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        for part in [limit, synapses, "NEUROBURST_HOST_MEM_LIMIT", "the largest brain of this shape that fits"] {
            assert!(err.contains(part), "expected {part:?} in: {err}");
        }
    }
    // `auto` (the default) stores what fits, draws the rest again, and says so
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["bench", "--backend", "cpu", "--neurons", "100000", "--fanout", "100", "--bursts", "5", "--warmup", "1", "--json"])
        .env("NEUROBURST_HOST_MEM_LIMIT", "180000000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("connectome: auto") && err.contains("NEUROBURST_HOST_MEM_LIMIT") && err.contains("drawn again"), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"synapses\":0") && stdout.contains("\"procedural_synapses\":10000000"), "{stdout}");
    // one shard of two keeps half of W(10M): refused under a 1 GB limit, before its build
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "c.yaml", "cluster:\n  endpoints: [tcp/127.0.0.1:7991, tcp/127.0.0.1:7992]\n");
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["shard", "--index", "0", "--workload", "10000000,100,0.01,1", "--bursts", "1", "--config", cfg.to_str().unwrap()])
        .env("NEUROBURST_HOST_MEM_LIMIT", "1000000000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("keeps about 50%") && err.contains("1000000000"), "{err}");
}

#[test]
fn a_value_outside_its_range_is_refused_from_every_source() {
    let dir = tempfile::tempdir().unwrap();
    let genome = write(dir.path(), "g.yaml", GOOD);
    let genome = genome.to_str().unwrap();
    let cfg = write(dir.path(), "c.yaml", "node:\n  realtime:\n    priority: 150\n");
    let cfg = cfg.to_str().unwrap();
    let refused = |args: &[&str], key: &str, range: &str| {
        let (code, _, err) = neuroburst(args);
        assert_ne!(code, 0, "{args:?} must be refused");
        assert!(err.contains(key) && err.contains(range) && !err.contains("panicked"), "{args:?}: {err}");
    };
    // --set, a configuration file, a ROS parameter (`--ros-args -p`)
    refused(&["node", "--genome", genome, "--set", "node.rate_hz=-5", "--check"], "node.rate_hz", "[0, 100000]");
    refused(&["node", "--genome", genome, "--config", cfg, "--check"], "node.realtime.priority", "[0, 99]");
    refused(&["node", "--genome", genome, "--check", "--ros-args", "-p", "node.stats_rate_hz:=0.0"], "node.stats_rate_hz", "[0.001, 1000]");
    let (code, out, err) = neuroburst(&["node", "--genome", genome, "--set", "node.rate_hz=250", "--check"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("rate_hz: 250.0"), "{out}");
}
