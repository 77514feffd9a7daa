//! The fuzz targets' bodies: each takes arbitrary bytes and feeds them to one entry point of
//! neuroburst the way hostile input would reach it. A panic, an abort, an allocation beyond the
//! fuzzer's limit or a hang is a bug. The coverage-guided fuzzers (`tests/fuzz/fuzz_targets/`,
//! libFuzzer through cargo-fuzz) and the regular test suite (`tests/fuzz_regressions.rs`, every
//! input under `tests/fuzz/regressions/<target>/`) call these same functions.

#![allow(dead_code)]

use neuroburst::backend::{open::open, BackendConfig, Readback};
use neuroburst::checkpoint::Checkpoint;
use neuroburst::cluster::inbox::SharedInbox;
use neuroburst::cluster::wire::{DataKind, Keys};
use neuroburst::encode::{Encoder, EncoderConfig};
use neuroburst::genome::Genome;
use neuroburst::model::Layout;
use neuroburst::ros::registry;

/// A target: its name and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target by name, as `tests/fuzz/run.sh` and the regression test know them.
pub const TARGETS: &[Target] = &[
    ("ros_messages", ros_messages),
    ("encoders", encoders),
    ("cluster_inbox", cluster_inbox),
    ("genome_yaml", genome_yaml),
    ("genome_feagi", genome_feagi),
    ("checkpoint", checkpoint),
    ("bag", bag),
];

/// The most host memory a build here may take: the capacity check refuses what is larger, as it
/// does on a host with this much memory.
const HOST_LIMIT: u64 = 64 << 20;

/// Every message type's decoder.
pub fn ros_messages(data: &[u8]) {
    for name in registry::type_names() {
        if let Some(Err(e)) = registry::check(name, data) {
            assert!(e.to_string().starts_with(name), "{e}");
        }
    }
}

/// The sensor areas the encoders inject into.
pub const SENSORS: &str = "name: fuzz
areas:
  - {id: vis, kind: sensor, dims: [4, 3, 3]}
  - {id: scan, kind: sensor, dims: [8, 1, 5]}
  - {id: imu, kind: sensor, dims: [6, 1, 4]}
  - {id: joints, kind: sensor, dims: [4, 1, 8], neurons_per_voxel: 2}
  - {id: odom, kind: sensor, dims: [12, 1, 4]}
  - {id: cloud, kind: sensor, dims: [4, 4, 2]}
";

const ENCODERS: &str = "- {kind: image, topic: /a, area: vis, change_threshold: 0.1}
- {kind: laser_scan, topic: /b, area: scan}
- {kind: imu, topic: /c, angular_velocity_area: imu, linear_acceleration_area: imu}
- {kind: joint_state, topic: /d, area: joints}
- {kind: range, topic: /e, area: scan, max_range: 4.0}
- {kind: float_array, topic: /f, area: joints}
- {kind: point_cloud, topic: /g, area: cloud, min: [-1, -1, -1], max: [1, 1, 1]}
- {kind: depth_image, topic: /h, area: vis, max_range: 5.0}
- {kind: odometry, topic: /i, area: odom}
";

/// Every encoder kind, with every message type it takes: the first byte picks the encoder and
/// the type, the rest is the payload.
pub fn encoders(data: &[u8]) {
    let Some((&pick, payload)) = data.split_first() else { return };
    let genome: Genome = serde_yaml::from_str(SENSORS).unwrap();
    let layout = Layout::from_genome(&genome);
    let configs: Vec<EncoderConfig> = serde_yaml::from_str(ENCODERS).unwrap();
    let pairs: Vec<(usize, &'static str)> =
        configs.iter().enumerate().flat_map(|(i, c)| c.message_types().iter().map(move |t| (i, *t))).collect();
    let (i, type_name) = pairs[pick as usize % pairs.len()];
    let mut encoder = Encoder::new(&configs[i], &layout).unwrap();
    // twice: an encoder with memory (change_threshold) compares with the first
    for _ in 0..2 {
        if let Ok(injections) = encoder.encode(type_name, payload) {
            assert!(injections.iter().all(|j| j.neuron < layout.neurons), "an injection outside the brain");
        }
    }
}

/// The cluster's inbox, as a shard's Zenoh callbacks feed it: a sequence of messages, each a
/// kind byte, a length byte and that many bytes (spikes and inputs with keys built from the
/// message's own first bytes, directives, member tokens).
pub fn cluster_inbox(data: &[u8]) {
    let keys = Keys::new("f");
    let inbox = SharedInbox::new(1, 0, vec![0..10, 10..20, 20..30], keys.clone());
    inbox.lock().rebase(1, 0);
    let mut rest = data;
    let mut key = String::new();
    while let [kind, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let (msg, next) = tail.split_at(n);
        rest = next;
        let burst = msg.get(1).copied().unwrap_or(0) as u64 % 8;
        let shard = msg.get(2).copied().unwrap_or(0) as usize % 4;
        match kind % 6 {
            0 => {
                keys.data(DataKind::Spikes, burst, shard, &mut key);
                inbox.on_data(&key, msg);
            }
            1 => {
                keys.data(DataKind::Input, burst, shard, &mut key);
                inbox.on_data(&key, msg);
            }
            2 => inbox.on_control(&keys.control(), msg),
            3 => inbox.on_token(&String::from_utf8_lossy(msg), burst.is_multiple_of(2)),
            4 => inbox.on_data(&String::from_utf8_lossy(msg), msg),
            _ => {
                // the burst thread takes what is complete, as a shard does
                let mut g = inbox.lock();
                let b = g.epoch() as u64;
                let _ = g.missing(b, 0b111);
                let mut out = vec![Vec::new(); 3];
                let mut input = Vec::new();
                if g.missing(0, 0b111) == 0 {
                    g.take(0, 0b111, &mut out);
                    g.take_input(1, &mut input);
                    assert!(out.iter().enumerate().all(|(k, v)| v.iter().all(|&n| n >= 10 * k as u32 && n < 10 * (k as u32 + 1))));
                    assert!(input.iter().all(|i| (10..20).contains(&i.neuron)));
                }
            }
        }
    }
}

/// A genome that loads is built and runs a few bursts on the CPU (what `neuroburst run` does),
/// or is refused: never a panic, never an allocation beyond the capacity check's limit.
fn build_and_run(genome: &Genome) {
    let layout = Layout::from_genome(genome);
    let limit = neuroburst::capacity::Available { bytes: HOST_LIMIT, from: "the fuzz target's limit".into() };
    if neuroburst::capacity::check_build(genome, &layout, false, &limit).is_err() {
        return;
    }
    let cfg: BackendConfig = serde_yaml::from_str("{kind: cpu, cpu_threads: 1, connectome: stored}").expect("the backend configuration");
    let Ok(mut opened) = open(genome, &cfg, Readback::All, false) else { return };
    let mut injection = neuroburst::model::Injections::new();
    opened.backend.prepare_input(&mut injection);
    for t in 0..3u32 {
        injection.clear();
        if layout.neurons > 0 {
            injection.push(t % layout.neurons, neuroburst::model::Potential::from_f64(1.0));
        }
        let out = opened.backend.burst(injection.as_slice()).expect("a burst");
        assert!(out.fired.iter().all(|&n| n < layout.neurons));
    }
}

/// The project's YAML genome: parsed, validated, built, run.
pub fn genome_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(genome) = Genome::from_yaml_str(text) {
        build_and_run(&genome);
    }
}

/// A FEAGI JSON genome: imported, validated, built, run.
pub fn genome_feagi(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(imported) = neuroburst::genome::feagi::import_str(text) {
        if imported.genome.validate().is_ok() {
            build_and_run(&imported.genome);
        }
    }
}

const SMALL: &str = "name: ckpt
areas:
  - {id: a, kind: sensor, dims: [4, 2, 1]}
  - {id: b, kind: motor, dims: [2, 2, 1]}
mappings:
  - {source: a, destination: b, morphology: all_to_all, plasticity: {constant: 2, window: 2}}
";

/// A checkpoint file's bytes: read, and restored into a small learning brain (what `--resume`
/// does once the fingerprint matched).
pub fn checkpoint(data: &[u8]) {
    let path = std::path::Path::new("fuzz.ckpt");
    // the header's magic and version and the trailing checksum made right, so that the fuzzer
    // explores what lies between (a file corrupted on disk fails its checksum)
    let mut bytes = neuroburst::checkpoint::MAGIC.to_vec();
    bytes.extend_from_slice(&neuroburst::checkpoint::VERSION.to_le_bytes());
    bytes.extend_from_slice(data);
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    let Ok(c) = Checkpoint::from_bytes(path, &bytes) else { return };
    let genome = Genome::from_yaml_str(SMALL).unwrap();
    let cfg: BackendConfig = serde_yaml::from_str("{kind: cpu, cpu_threads: 1}").unwrap();
    let mut opened = open(&genome, &cfg, Readback::All, false).unwrap();
    if opened.backend.restore(&c.state).is_ok() {
        let mut injection = neuroburst::model::Injections::new();
        opened.backend.prepare_input(&mut injection);
        opened.backend.burst(injection.as_slice()).expect("a burst after a restore");
        opened.backend.snapshot().expect("a snapshot after a restore");
    }
}

/// A bag file: the first byte picks how it is stored (an `.mcap` file, a `.db3` file, or a bag
/// directory whose `metadata.yaml` is the bytes), then it is opened and read whole.
pub fn bag(data: &[u8]) {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = match pick % 3 {
        0 => dir.path().join("b.mcap"),
        1 => dir.path().join("b.db3"),
        _ => {
            std::fs::write(dir.path().join("x.mcap"), b"").unwrap();
            dir.path().join("metadata.yaml")
        }
    };
    std::fs::write(&path, bytes).unwrap();
    let target = if pick % 3 == 2 { dir.path().to_path_buf() } else { path };
    if let Ok(bag) = neuroburst::bag::open(&target) {
        assert!(bag.messages.iter().all(|m| m.topic < bag.topics.len()));
    }
}
