//! One brain over three hosts: `neuroburst shard` processes, each in a network namespace of its
//! own on a private bridge (10.77.0.x; made by the test, removed after it), or on 127.0.0.1 where
//! namespaces cannot be made (the test prints why; NEUROBURST_TEST_LOOPBACK=1 forces it). The
//! brain is W(20k, 100, 1%); the io shard records a hash of the whole brain's fired ids every
//! burst, and the test compares them with the same brain run in this process.
//!
//! - the fired sets of 1,000 bursts equal one process's;
//! - `degraded`: shard 2 killed (SIGKILL) is detected at once (its Zenoh link and token go), the
//!   others go on with its spikes counting as none; restarted with --resume it rejoins, the
//!   whole brain rolls back to its checkpoint, and every burst again equals one process's;
//! - `stop`: shard 1 stalled (SIGSTOP) is detected within burst_timeout_ms, the others stop with
//!   status 3 naming it; all three restarted with --resume finish the run, equal to one process;
//! - `degraded`: shard 1 stalled (SIGSTOP) is left out after burst_timeout_ms; woken up it finds
//!   the others ahead and exits with status 4; restarted with --resume it rejoins;
//! - `degraded`, namespaces only: shard 2's cable cut (its bridge port down) is detected within
//!   burst_timeout_ms, the others go on, shard 2 (which cannot reach the io shard) stops with
//!   status 3; with the cable back it is restarted with --resume and rejoins;
//! - the diffdrive bag of README command 1 replayed by the io shard (`--bag`, `--record
//!   OUT.mcap`) records the same messages (topics, bag times, CDR bytes; the same file) as
//!   `neuroburst replay` in one process, read with the project's reader and with rosbags;
//! - the io shard as the live node (`--transport zenoh`, on 127.0.0.1): tests/python/robot.py, an
//!   eclipse-zenoh peer, sends LaserScan and Image and receives Twist and BurstStats (rmw_zenoh
//!   keys, attachments and graph tokens);
//! - GPU shards (`--backend cuda`, where a GPU is usable; else it says so and skips): shard 1 on
//!   one GPU, shard 2 split over two (GPUs 0 and 1, or twice GPU 0 on a machine with one), the io
//!   shard on the CPU, 1,000 bursts equal to one process.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::Proc;
use neuroburst::backend::cpu::CpuBackend;
use neuroburst::backend::{Backend, Readback};
use neuroburst::brain::Brain;
use neuroburst::cluster::netns::Hosts;
use neuroburst::cluster::record::{self, Line};
use neuroburst::connectome::even_ranges;
use neuroburst::model::Injections;
use neuroburst::workload::Workload;

const W: Workload = Workload { neurons: 20_000, fanout: 100, rate: 0.01, seed: 1 };
const WORKLOAD: &str = "20000,100,0.01,1";
const BURSTS: u64 = 1000;
const SHARDS: usize = 3;

/// Per burst (index t - 1): hash of the fired ids, fired count, fired per shard, motor fired.
type Reference = Vec<(u64, u64, Vec<u64>, u64)>;

fn reference() -> &'static Reference {
    static R: OnceLock<Reference> = OnceLock::new();
    R.get_or_init(|| {
        let brain = Brain::build(&W.genome(), 2, false);
        let mut b = CpuBackend::new(brain, Readback::All);
        let ranges = even_ranges(W.neurons, SHARDS);
        let mut inj = Injections::new();
        (1..=BURSTS)
            .map(|t| {
                W.injection(t, &mut inj);
                let out = b.burst(inj.as_slice()).unwrap();
                let per = ranges
                    .iter()
                    .map(|r| (out.fired.partition_point(|&x| x < r.end) - out.fired.partition_point(|&x| x < r.start)) as u64)
                    .collect();
                let motor = out.fired.partition_point(|&x| x < W.motor().end) as u64;
                (record::fired_hash(out.fired), out.fired.len() as u64, per, motor)
            })
            .collect()
    })
}

fn hosts(tag: &str) -> Hosts {
    if std::env::var_os("NEUROBURST_TEST_LOOPBACK").is_some() {
        println!("hosts: loopback (NEUROBURST_TEST_LOOPBACK is set)");
        return Hosts::loopback(SHARDS);
    }
    let (h, why) = Hosts::netns_or_loopback(SHARDS, tag);
    match why {
        Some(e) => println!("hosts: network namespaces cannot be made here ({e}); running on loopback instead"),
        None => println!("hosts: {}", h.describe()),
    }
    h
}

struct Cluster {
    // Fields drop in order: the processes before the namespaces they run in.
    procs: Vec<Option<Proc>>,
    hosts: Hosts,
    dir: tempfile::TempDir,
    config: PathBuf,
    starts: usize,
}

impl Cluster {
    fn new(tag: &str, settings: &str) -> Cluster {
        Cluster::with(hosts(tag), tag, None, settings)
    }

    /// A cluster on `hosts`; its configuration is `base` (a configuration file) with the test's
    /// `backend`, `log` and `cluster` settings (`settings`: more lines of the cluster section).
    fn with(hosts: Hosts, tag: &str, base: Option<&Path>, settings: &str) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let eps: Vec<String> = (0..SHARDS).map(|i| hosts.endpoint(i)).collect();
        let config = dir.path().join("cluster.yaml");
        let yaml = format!(
            "backend:\n  kind: cpu\n  cpu_threads: 1\nlog:\n  progress: false\ncluster:\n  name: w{tag}\n  endpoints: [{}]\n  io_shard: 0\n  checkpoint_dir: {}\n  startup_timeout_s: 60\n{settings}",
            eps.join(", "),
            dir.path().join("ckpt").display()
        );
        let mut merged: serde_yaml::Mapping = match base {
            Some(p) => serde_yaml::from_str(&std::fs::read_to_string(p).unwrap()).unwrap(),
            None => Default::default(),
        };
        let ours: serde_yaml::Mapping = serde_yaml::from_str(&yaml).unwrap();
        for (k, v) in ours {
            match (merged.get_mut(&k), v) {
                (Some(serde_yaml::Value::Mapping(old)), serde_yaml::Value::Mapping(new)) => old.extend(new),
                (_, v) => {
                    merged.insert(k, v);
                }
            }
        }
        std::fs::write(&config, serde_yaml::to_string(&merged).unwrap()).unwrap();
        Cluster { procs: (0..SHARDS).map(|_| None).collect(), hosts, dir, config, starts: 0 }
    }

    fn record(&self, run: usize) -> PathBuf {
        self.dir.path().join(format!("record{run}.txt"))
    }

    /// Shard `k` of W, recording to record `run`.
    fn spawn(&mut self, k: usize, resume: bool, run: usize) {
        let (record, bursts) = (self.record(run), BURSTS.to_string());
        let args: [&OsStr; 6] =
            ["--workload".as_ref(), WORKLOAD.as_ref(), "--bursts".as_ref(), bursts.as_ref(), "--record".as_ref(), record.as_ref()];
        self.spawn_with(k, &args, resume);
    }

    /// Shard `k` with these arguments after `shard --index k --config ...`.
    fn spawn_with(&mut self, k: usize, args: &[impl AsRef<OsStr>], resume: bool) {
        // NEUROBURST_BIN: the binary to run (e.g. a copy on another machine), else cargo's
        let bin = std::env::var_os("NEUROBURST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_neuroburst")), PathBuf::from);
        let mut cmd = self.hosts.command(k, bin);
        cmd.args(["shard", "--index", &k.to_string()])
            .arg("--config")
            .arg(&self.config)
            .args(args.iter().map(AsRef::as_ref))
            .env("RUST_LOG", std::env::var("NEUROBURST_TEST_LOG").unwrap_or_else(|_| "info,zenoh=warn".into()));
        if resume {
            cmd.arg("--resume");
        }
        self.starts += 1;
        let log = self.dir.path().join(format!("shard{k}-{}.log", self.starts));
        self.procs[k] = Some(Proc::spawn(&mut cmd, log));
    }

    fn proc(&self, k: usize) -> &Proc {
        self.procs[k].as_ref().unwrap()
    }

    /// Wait for shard `k` to exit.
    fn wait(&mut self, k: usize, timeout: Duration) -> ExitStatus {
        let end = Instant::now() + timeout;
        let p = self.procs[k].as_mut().unwrap();
        loop {
            if let Some(s) = p.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < end, "shard {k} did not finish within {timeout:?}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for (k, p) in self.procs.iter().enumerate() {
            if let Some(p) = p {
                s += &format!("--- shard {k} ({}) ---\n{}\n", p.stderr.display(), p.log());
            }
        }
        s
    }

    /// The latest checkpoint burst of shard `k`.
    fn checkpoint(&self, k: usize) -> u64 {
        let prefix = format!("shard{k}-");
        std::fs::read_dir(self.dir.path().join("ckpt"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let rest = &name[name.find(&prefix)? + prefix.len()..];
                rest.strip_suffix(".ckpt")?.parse().ok()
            })
            .max()
            .unwrap_or(0)
    }

    fn wait_checkpoint(&self, k: usize, at_least: u64) {
        let end = Instant::now() + Duration::from_secs(60);
        while self.checkpoint(k) < at_least {
            assert!(Instant::now() < end, "no checkpoint {at_least} of shard {k}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Time until `text` shows in shard `k`'s log.
    fn time_to(&self, k: usize, text: &str, from: Instant, timeout: Duration) -> Duration {
        loop {
            if self.proc(k).log().contains(text) {
                return from.elapsed();
            }
            assert!(from.elapsed() < timeout, "shard {k} did not log {text:?} within {timeout:?}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The complete lines of a record (the io shard may be writing the next one).
fn read_record(p: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    record::parse(complete).unwrap()
}

/// Every burst 1..=BURSTS of `lines` (the line that counts) equals one process.
fn assert_matches_reference(lines: &[Line], logs: &str) {
    let reference = reference();
    let finals = record::final_lines(lines);
    assert_eq!(finals.len() as u64, BURSTS, "record has {} bursts, expected {BURSTS}\n{logs}", finals.len());
    for (t, l) in &finals {
        let (hash, fired, per, motor) = &reference[*t as usize - 1];
        assert_eq!(
            (l.hash, l.fired, &l.per_shard, l.motor),
            (*hash, *fired, per, *motor),
            "burst {t} (epoch {}) differs from one process\n{logs}",
            l.epoch
        );
    }
    // A brain that neither falls silent nor fires everything: every burst tells shards apart.
    let active: u64 = finals.values().map(|l| l.fired).sum();
    assert!(active > BURSTS * 100 && active < BURSTS * W.neurons as u64 / 10, "{active} spikes in {BURSTS} bursts");
}

#[test]
fn three_hosts_fire_exactly_as_one_process() {
    let mut c = Cluster::new("a", "  checkpoint_interval: 250\n");
    for k in 0..SHARDS {
        c.spawn(k, false, 0);
    }
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    let lines = read_record(&c.record(0));
    assert!(lines.iter().all(|l| l.epoch == 1), "one epoch without faults");
    assert_matches_reference(&lines, &c.logs());
    assert_eq!(c.checkpoint(2), 1000);
    for k in 0..SHARDS {
        assert!(c.proc(k).log().contains("\"outcome\":\"completed\""), "{}", c.logs());
    }
}

#[test]
fn gpu_shards_fire_exactly_as_one_process() {
    if let neuroburst::backend::GpuProbe::Unavailable(why) = neuroburst::backend::cuda::probe(0) {
        common::skip(&format!("no usable GPU ({why})"));
        return;
    }
    let mut c = Cluster::new("g", "");
    let two = format!("backend.gpus=[0, {}]", neuroburst::backend::cuda::device_count().min(2) - 1);
    for k in 0..SHARDS {
        let (record, bursts) = (c.record(0), BURSTS.to_string());
        let mut args: Vec<&OsStr> =
            vec!["--workload".as_ref(), WORKLOAD.as_ref(), "--bursts".as_ref(), bursts.as_ref(), "--record".as_ref(), record.as_ref()];
        if k > 0 {
            args.extend([OsStr::new("--backend"), OsStr::new("cuda")]);
        }
        if k == 2 {
            args.extend([OsStr::new("--set"), OsStr::new(&two)]);
        }
        c.spawn_with(k, &args, false);
    }
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    for k in 1..SHARDS {
        assert!(c.proc(k).log().contains("cuda engine"), "shard {k} is not on the GPU:\n{}", c.logs());
    }
    assert!(c.proc(2).log().contains("; "), "shard 2 is not on two GPUs:\n{}", c.logs());
    assert_matches_reference(&read_record(&c.record(0)), &c.logs());
}

#[test]
fn degraded_a_killed_shard_is_detected_and_rejoins_from_its_checkpoint() {
    let timeout_ms = 1000;
    let mut c = Cluster::new(
        "b",
        &format!("  on_shard_loss: degraded\n  burst_timeout_ms: {timeout_ms}\n  checkpoint_interval: 100\n  rate_hz: 100\n"),
    );
    for k in 0..SHARDS {
        c.spawn(k, false, 0);
    }
    c.wait_checkpoint(2, 200);
    let killed = Instant::now();
    c.procs[2].as_mut().unwrap().child.kill().unwrap();
    c.procs[2].as_mut().unwrap().child.wait().unwrap();
    for k in [0, 1] {
        let dt = c.time_to(k, "shard 2 (", killed, Duration::from_secs(10));
        println!("shard {k} noticed the loss of shard 2 after {dt:?}");
        assert!(dt < Duration::from_millis(timeout_ms), "detection took {dt:?}, the timeout is {timeout_ms} ms");
        assert!(c.proc(k).log().contains("continuing degraded"), "{}", c.logs());
    }
    // The others go on without shard 2: its spikes count as none.
    let end = Instant::now() + Duration::from_secs(20);
    while !read_record(&c.record(0)).iter().rev().take(20).any(|l| l.per_shard[2] == 0 && l.burst > 210) {
        assert!(Instant::now() < end, "no degraded bursts in the record\n{}", c.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
    let ckpt = c.checkpoint(2);
    c.spawn(2, true, 0);
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    let log0 = c.proc(0).log();
    assert!(log0.contains(&format!("every shard resumes from burst {ckpt}")), "rejoin from {ckpt}:\n{}", c.logs());
    let lines = read_record(&c.record(0));
    let degraded: Vec<&Line> = lines.iter().filter(|l| l.epoch == 1 && l.burst > ckpt && l.per_shard[2] == 0).collect();
    assert!(degraded.len() > 10, "bursts without shard 2 in epoch 1: {}", degraded.len());
    assert!(lines.iter().any(|l| l.epoch == 2 && l.burst == ckpt + 1), "epoch 2 starts after burst {ckpt}");
    assert_matches_reference(&lines, &c.logs());
}

#[test]
fn stop_a_stalled_shard_stops_the_others_and_all_resume_from_the_checkpoint() {
    let timeout_ms = 500;
    let mut c = Cluster::new(
        "c",
        &format!("  on_shard_loss: stop\n  burst_timeout_ms: {timeout_ms}\n  checkpoint_interval: 100\n  rate_hz: 100\n"),
    );
    for k in 0..SHARDS {
        c.spawn(k, false, 0);
    }
    c.wait_checkpoint(1, 200);
    let stalled = Instant::now();
    c.proc(1).signal(libc::SIGSTOP);
    for k in [0, 2] {
        let s = c.wait(k, Duration::from_secs(10));
        let dt = stalled.elapsed();
        println!("shard {k} stopped {dt:?} after shard 1 stalled: {s}");
        assert_eq!(s.code(), Some(3), "shard {k} should stop with status 3\n{}", c.logs());
        let log = c.proc(k).log();
        assert!(log.contains("shard 1 (") && log.contains(&format!("within {timeout_ms} ms")), "{}", c.logs());
        assert!(dt < Duration::from_millis(timeout_ms + 2000), "stop took {dt:?}");
    }
    c.proc(1).signal(libc::SIGKILL);
    c.wait(1, Duration::from_secs(10));
    let first = read_record(&c.record(0));
    let stopped_at = first.last().unwrap().burst;
    for k in 0..SHARDS {
        c.spawn(k, true, 1);
    }
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    let second = read_record(&c.record(1));
    let resumed = second.first().unwrap().burst - 1;
    println!("stopped at burst {stopped_at}, resumed from {resumed}");
    assert!(resumed.is_multiple_of(100) && resumed >= 200 && resumed <= stopped_at, "resumed from {resumed}");
    // The second run's lines count over the first run's.
    let mut all = first;
    all.extend(second.into_iter().map(|l| Line { epoch: l.epoch + 1000, ..l }));
    assert_matches_reference(&all, &c.logs());
}

#[test]
fn a_bad_cluster_config_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.yaml");
    std::fs::write(&cfg, "cluster:\n  endpoints: [tcp/127.0.0.1:7600]\n  io_shard: 3\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["shard", "--index", "0", "--workload", "100,5,0.1"])
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cluster.io_shard"), "{err}");
    std::fs::write(&cfg, "cluster:\n  endpoints: [tcp/127.0.0.1:7600]\n  on_shard_loss: retry\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["shard", "--index", "0", "--workload", "100,5,0.1", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("on_shard_loss") && err.contains("line 3"), "{err}");
}

#[test]
fn degraded_a_stalled_shard_is_left_behind_exits_and_rejoins() {
    let timeout_ms = 500;
    let mut c = Cluster::new(
        "e",
        &format!("  on_shard_loss: degraded\n  burst_timeout_ms: {timeout_ms}\n  checkpoint_interval: 100\n  rate_hz: 100\n"),
    );
    for k in 0..SHARDS {
        c.spawn(k, false, 0);
    }
    c.wait_checkpoint(1, 200);
    let stalled = Instant::now();
    c.proc(1).signal(libc::SIGSTOP);
    for k in [0, 2] {
        let dt = c.time_to(k, "continuing degraded", stalled, Duration::from_secs(10));
        println!("shard {k} went on without the stalled shard 1 after {dt:?}");
        assert!(c.proc(k).log().contains("no spikes of burst"), "{}", c.logs());
        assert!(dt < Duration::from_millis(timeout_ms + 2000), "detection took {dt:?}");
    }
    // Woken up (well inside Zenoh's 10 s lease), it finds the others bursts ahead and leaves.
    std::thread::sleep(Duration::from_millis(1000));
    c.proc(1).signal(libc::SIGCONT);
    let s = c.wait(1, Duration::from_secs(20));
    assert_eq!(s.code(), Some(4), "the stalled shard should exit with status 4\n{}", c.logs());
    assert!(c.proc(1).log().contains("left behind"), "{}", c.logs());
    c.spawn(1, true, 0);
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    assert!(c.proc(0).log().contains("rejoin"), "{}", c.logs());
    assert_matches_reference(&read_record(&c.record(0)), &c.logs());
}

/// A file of the diffdrive example that README command 1 replays.
fn diffdrive(file: &str) -> PathBuf {
    common::root().join("examples/diffdrive").join(file)
}

/// Every message of a bag read with the project's reader: (topic, type), (topic, log time, CDR).
type BagContents = (Vec<(String, String)>, Vec<(String, u64, Vec<u8>)>);

fn contents(path: &Path) -> BagContents {
    let bag = neuroburst::bag::open(path).unwrap_or_else(|e| panic!("{e}"));
    let topics = bag.topics.iter().map(|t| (t.name.clone(), t.type_name.clone())).collect();
    let messages = bag.messages.iter().map(|m| (bag.topics[m.topic].name.clone(), m.log_time, m.data.clone())).collect();
    (topics, messages)
}

/// Every message of a bag as rosbags reads it: one line per connection, then per message its
/// topic, log time and CDR bytes (hex).
const ROSBAGS_RAW: &str = r#"
import sys
from rosbags.rosbag2 import Reader
with Reader(sys.argv[1]) as r:
    for c in sorted(r.connections, key=lambda c: c.topic):
        print("connection", c.topic, c.msgtype)
    for c, t, raw in r.messages():
        print(c.topic, t, bytes(raw).hex())
"#;

#[test]
fn a_bag_replayed_through_three_hosts_records_what_one_process_records() {
    let mut c = Cluster::with(hosts("g"), "g", Some(&diffdrive("config.yaml")), "");
    let (genome, bag) = (diffdrive("genome.yaml"), diffdrive("input.mcap"));
    let (out, text) = (c.dir.path().join("cluster.mcap"), c.record(0));
    for k in 0..SHARDS {
        // The same command on every host; --record only means something on the io shard.
        let mut args: Vec<&OsStr> = vec!["--genome".as_ref(), genome.as_ref(), "--bag".as_ref(), bag.as_ref()];
        if k == 0 {
            args.extend::<[&OsStr; 4]>(["--record".as_ref(), out.as_ref(), "--record".as_ref(), text.as_ref()]);
        }
        c.spawn_with(k, &args, false);
    }
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
        assert!(c.proc(k).log().contains("\"outcome\":\"completed\""), "{}", c.logs());
    }
    assert!(c.proc(1).log().contains("the io shard's input ends at burst"), "{}", c.logs());

    // The same bag, genome and configuration in one process.
    let one = c.dir.path().join("one.mcap");
    common::ok(common::replay(&bag, &one, &[]));

    let (ours, theirs) = (contents(&out), contents(&one));
    assert_eq!(ours.0, theirs.0, "topics");
    assert_eq!(ours.1.len(), theirs.1.len(), "message count");
    for (i, (a, b)) in ours.1.iter().zip(&theirs.1).enumerate() {
        assert_eq!(a, b, "message {i} differs from one process's");
    }
    let count = |topic: &str| ours.1.iter().filter(|m| m.0 == topic).count();
    let bursts = read_record(&text).len();
    println!(
        "{bursts} bursts: {} /cmd_vel and {} activity messages, equal to one process's",
        count("/cmd_vel"),
        count("/neuroburst/activity")
    );
    assert!(bursts > 100 && count("/neuroburst/activity") == bursts && count("/cmd_vel") > 10, "{bursts} bursts");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&one).unwrap(), "the two output files are byte for byte the same");

    // rosbags, the real peer, reads the same messages from both.
    let a = common::python::run(ROSBAGS_RAW, &[out.to_str().unwrap()]);
    let b = common::python::run(ROSBAGS_RAW, &[one.to_str().unwrap()]);
    assert!(a.lines().count() > bursts, "{a}");
    assert_eq!(a, b, "rosbags reads different messages");
    let (conns, msgs) = common::python::read_bag(&out);
    assert_eq!(conns.len(), 2, "{conns:?}");
    let moving = msgs.iter().filter(|m| m["topic"] == "/cmd_vel" && m["msg"]["linear"]["x"].as_f64().unwrap() != 0.0).count();
    assert!(moving > 0, "rosbags decodes no /cmd_vel that moves");
}

#[test]
fn live_topics_in_and_out_through_the_io_shard_of_three_shards() {
    let python = common::venv("pyenv", common::PY_PACKAGES);
    // The robot and the cluster on 127.0.0.1, the spike exchange on ports of its own.
    let rate = 200.0;
    let mut c = Cluster::with(
        Hosts::loopback(SHARDS),
        "h",
        Some(&common::root().join("config/node.yaml")),
        &format!("  rate_hz: {rate}\n  on_shard_loss: degraded\n"),
    );
    let listen = format!("tcp/127.0.0.1:{}", common::free_port());
    let nowhere = format!("tcp/127.0.0.1:{}", common::free_port());
    let genome = common::root().join("examples/genomes/rover.yaml");
    for k in 0..SHARDS {
        let args: [&OsStr; 16] = [
            "--genome".as_ref(),
            genome.as_ref(),
            "--transport".as_ref(),
            "zenoh".as_ref(),
            "--zenoh-format".as_ref(),
            "rmw".as_ref(),
            "--zenoh-listen".as_ref(),
            listen.as_ref(),
            "--zenoh-connect".as_ref(),
            nowhere.as_ref(),
            "--set".as_ref(),
            "node.stats_rate_hz=10".as_ref(),
            "--set".as_ref(),
            "node.log_interval_s=600".as_ref(),
            "--set".as_ref(),
            "log.level=info".as_ref(),
        ];
        c.spawn_with(k, &args, false);
    }
    c.time_to(0, "all 3 shards are up", Instant::now(), Duration::from_secs(60));
    let out = Command::new(&python)
        .arg(common::root().join("tests/python/robot.py"))
        .args(["--connect", &listen, "--format", "rmw", "--scenario", "basic", "--rate", &rate.to_string()])
        .arg("--msg-dir")
        .arg(common::root().join("msg"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "robot failed:\n{stdout}\n{}\n{}", String::from_utf8_lossy(&out.stderr), c.logs());
    assert!(stdout.contains("\"ok\": true"), "{stdout}");
    println!("robot: {stdout}");
    // Stop the shards (the io shard last: the others leave, it goes on degraded, then stops).
    for k in [2, 1, 0] {
        c.proc(k).signal(libc::SIGTERM);
        let s = c.wait(k, Duration::from_secs(20));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    let log0 = c.proc(0).log();
    assert!(log0.contains("io shard: live topics at 200 Hz"), "{log0}");
    assert!(log0.contains("\"published\""), "{log0}");
    for k in [1, 2] {
        assert!(c.proc(k).log().contains("is not the io shard"), "{}", c.logs());
    }
}

#[test]
fn degraded_a_cut_link_is_detected_and_the_shard_rejoins_once_it_is_restored() {
    let h = hosts("i");
    if !h.is_netns() {
        common::skip("a cable can only be cut between network namespaces, and these hosts are processes on 127.0.0.1");
        return;
    }
    let timeout_ms = 1000;
    let mut c = Cluster::with(
        h,
        "i",
        None,
        &format!("  on_shard_loss: degraded\n  burst_timeout_ms: {timeout_ms}\n  checkpoint_interval: 100\n  rate_hz: 100\n"),
    );
    for k in 0..SHARDS {
        c.spawn(k, false, 0);
    }
    c.wait_checkpoint(2, 200);
    let cut = Instant::now();
    c.hosts.set_link(2, false).unwrap();
    println!("cut the cable of shard 2 (10.77.0.3)");
    for k in [0, 1] {
        let dt = c.time_to(k, "shard 2 (", cut, Duration::from_secs(10));
        println!("shard {k} noticed the loss of shard 2 after {dt:?}");
        let log = c.proc(k).log();
        assert!(log.contains("continuing degraded") && log.contains(&format!("within {timeout_ms} ms")), "{}", c.logs());
        assert!(dt < Duration::from_millis(timeout_ms + 1500), "detection took {dt:?}, the timeout is {timeout_ms} ms");
    }
    // Shard 2 cannot reach the io shard: it stops (status 3), as documented.
    let dt = c.time_to(2, "lost at burst", cut, Duration::from_secs(10));
    println!("shard 2 noticed that it cannot reach the others after {dt:?}");
    assert!(dt < Duration::from_millis(timeout_ms + 1500), "detection took {dt:?}, the timeout is {timeout_ms} ms");
    let s = c.wait(2, Duration::from_secs(10));
    println!("shard 2 ended {:?} after the cut: {s}", cut.elapsed());
    assert!(cut.elapsed() < Duration::from_millis(timeout_ms + 4000), "shard 2 took {:?} to stop", cut.elapsed());
    assert_eq!(s.code(), Some(3), "{}", c.logs());
    assert!(c.proc(2).log().contains("the io shard carries the sensor input"), "{}", c.logs());
    // The others go on without it, for 4 s more with the cable still cut (long enough to fill
    // every queue towards shard 2's dead link: they must not stall on it).
    let end = Instant::now() + Duration::from_secs(30);
    while !read_record(&c.record(0)).iter().rev().take(20).any(|l| l.per_shard[2] == 0 && l.burst > 650) {
        assert!(Instant::now() < end, "no degraded bursts up to 650 in the record\n{}", c.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
    for k in [0, 1] {
        assert!(c.procs[k].as_mut().unwrap().child.try_wait().unwrap().is_none(), "shard {k} stopped\n{}", c.logs());
    }
    c.hosts.set_link(2, true).unwrap();
    let ckpt = c.checkpoint(2);
    println!("restored the cable {:?} after the cut; restarting shard 2 from its checkpoint {ckpt}", cut.elapsed());
    c.spawn(2, true, 0);
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(240));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    assert!(c.proc(0).log().contains(&format!("every shard resumes from burst {ckpt}")), "{}", c.logs());
    assert_matches_reference(&read_record(&c.record(0)), &c.logs());
}

#[test]
fn degraded_a_rejoin_during_a_bag_replay_still_records_what_one_process_records() {
    // Bag time (pace 1): 121 bursts in 6 s, a checkpoint every 20.
    let mut c = Cluster::with(
        hosts("j"),
        "j",
        Some(&diffdrive("config.yaml")),
        "  on_shard_loss: degraded\n  burst_timeout_ms: 1000\n  checkpoint_interval: 20\n",
    );
    let (genome, bag) = (diffdrive("genome.yaml"), diffdrive("input.mcap"));
    let out = c.dir.path().join("cluster.mcap");
    let args = |k: usize| -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> =
            vec!["--genome".into(), genome.clone().into(), "--bag".into(), bag.clone().into(), "--set".into(), "replay.pace=1".into()];
        if k == 0 {
            a.extend(["--record".into(), out.clone().into()]);
        }
        a
    };
    for k in 0..SHARDS {
        c.spawn_with(k, &args(k), false);
    }
    c.wait_checkpoint(2, 40);
    c.procs[2].as_mut().unwrap().child.kill().unwrap();
    c.procs[2].as_mut().unwrap().child.wait().unwrap();
    c.time_to(0, "continuing degraded", Instant::now(), Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));
    c.spawn_with(2, &args(2), true);
    for k in 0..SHARDS {
        let s = c.wait(k, Duration::from_secs(120));
        assert!(s.success(), "shard {k}: {s}\n{}", c.logs());
    }
    let log0 = c.proc(0).log();
    assert!(log0.contains("rejoin") && log0.contains("replay rolls back to burst"), "{}", c.logs());
    let one = c.dir.path().join("one.mcap");
    common::ok(common::replay(&bag, &one, &[]));
    let (ours, theirs) = (contents(&out), contents(&one));
    assert_eq!(ours.0, theirs.0, "topics");
    assert_eq!(ours.1.len(), theirs.1.len(), "message count\n{}", c.logs());
    for (i, (a, b)) in ours.1.iter().zip(&theirs.1).enumerate() {
        assert_eq!(a, b, "message {i} differs from one process's\n{}", c.logs());
    }
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&one).unwrap(), "the same file");
}

#[test]
fn the_shipped_diffdrive_cluster_config_replays_like_the_example() {
    use neuroburst::config::Config;
    let cluster = Config::load(Some(&common::root().join("config/cluster_diffdrive.yaml")), &[]).unwrap();
    let example = Config::load(Some(&diffdrive("config.yaml")), &[]).unwrap();
    assert_eq!(cluster.encoders, example.encoders);
    assert_eq!(cluster.decoders, example.decoders);
    assert_eq!(cluster.replay, example.replay);
    cluster.cluster.validate(Some(2)).unwrap();
    assert!(cluster.cluster.endpoints.iter().all(|e| e.starts_with("tcp/127.0.0.1:")), "shipped endpoints stay on loopback");
}

#[test]
fn bad_io_options_are_errors_naming_the_thing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.yaml");
    let port = common::free_port();
    std::fs::write(&cfg, format!("log:\n  progress: false\ncluster:\n  endpoints: [tcp/127.0.0.1:{port}]\n  startup_timeout_s: 5\n"))
        .unwrap();
    let genome = diffdrive("genome.yaml");
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
            .args(["shard", "--index", "0", "--bursts", "1", "--config", cfg.to_str().unwrap(), "--genome", genome.to_str().unwrap()])
            .args(extra)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    let missing = dir.path().join("missing.mcap");
    let e = run(&["--bag", missing.to_str().unwrap()]);
    assert!(e.contains("missing.mcap"), "{e}");
    let e = run(&["--record", "out.mcap"]);
    assert!(e.contains("--record out.mcap") && e.contains("--bag"), "{e}");
    let e = run(&["--bag", diffdrive("input.mcap").to_str().unwrap(), "--resume"]);
    assert!(e.contains("--resume") && e.contains("--bag"), "{e}");
    let e = run(&["--record", "a.mcap", "--record", "b.mcap"]);
    assert!(e.contains("--record a.mcap and --record b.mcap"), "{e}");
    // The example's bag with encoders that expect other types.
    let wrong = dir.path().join("wrong.yaml");
    std::fs::write(
        &wrong,
        format!(
            "log:\n  progress: false\nencoders:\n  - {{kind: laser_scan, topic: /imu, area: i__scn, max_range: 4.0}}\ncluster:\n  endpoints: [tcp/127.0.0.1:{port}]\n"
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["shard", "--index", "0", "--config", wrong.to_str().unwrap(), "--genome", genome.to_str().unwrap(), "--bag"])
        .arg(diffdrive("input.mcap"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("/imu") && e.contains("input.mcap"), "{e}");
    // A live rate faster than the burst timeout allows.
    let e = run(&["--transport", "zenoh", "--set", "cluster.burst_timeout_ms=5", "--set", "node.rate_hz=100"]);
    assert!(e.contains("cluster.burst_timeout_ms"), "{e}");
    let e = run(&["--transport", "zenoh", "--zenoh-connect", "nonsense"]);
    assert!(e.contains("transport") || e.contains("nonsense"), "{e}");
    // --bag and --workload together
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["shard", "--index", "0", "--config", cfg.to_str().unwrap(), "--workload", "100,5,0.1", "--bag", "x.mcap"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bag"));
}
