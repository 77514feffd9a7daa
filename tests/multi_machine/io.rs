//! The io shard: a bag replayed through three hosts, the live node's topics in and out, a rejoin
//! during a replay, the shipped cluster config and bad io options.

use super::*;

/// A file of the diffdrive example that README command 1 replays.
pub fn diffdrive(file: &str) -> PathBuf {
    common::root().join("examples/diffdrive").join(file)
}

/// Every message of a bag read with the project's reader: (topic, type), (topic, log time, CDR).
pub type BagContents = (Vec<(String, String)>, Vec<(String, u64, Vec<u8>)>);

pub fn contents(path: &Path) -> BagContents {
    let bag = neuroburst::bag::open(path).unwrap_or_else(|e| panic!("{e}"));
    let topics = bag.topics.iter().map(|t| (t.name.clone(), t.type_name.clone())).collect();
    let messages = bag.messages.iter().map(|m| (bag.topics[m.topic].name.clone(), m.log_time, m.data.clone())).collect();
    (topics, messages)
}

/// Every message of a bag as rosbags reads it: one line per connection, then per message its
/// topic, log time and CDR bytes (hex).
pub const ROSBAGS_RAW: &str = r#"
import sys
from rosbags.rosbag2 import Reader
with Reader(sys.argv[1]) as r:
    for c in sorted(r.connections, key=lambda c: c.topic):
        print("connection", c.topic, c.msgtype)
    for c, t, raw in r.messages():
        print(c.topic, t, bytes(raw).hex())
"#;

/// Replay `example`'s bag through three hosts (the io shard records) and in one process; check
/// that both record the same messages, byte for byte. Returns the cluster's output and its bursts.
fn replay_through_three_hosts(tag: &str, example: &str) -> (Cluster, PathBuf, usize) {
    let ex = |f: &str| common::root().join("examples").join(example).join(f);
    let mut c = Cluster::with(hosts(tag), tag, Some(&ex("config.yaml")), "");
    let (genome, bag) = (ex("genome.yaml"), ex("input.mcap"));
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
    common::ok(common::replay_example(example, &bag, &one, &[]));

    let (ours, theirs) = (contents(&out), contents(&one));
    assert_eq!(ours.0, theirs.0, "topics");
    assert_eq!(ours.1.len(), theirs.1.len(), "message count");
    for (i, (a, b)) in ours.1.iter().zip(&theirs.1).enumerate() {
        assert_eq!(a, b, "message {i} differs from one process's");
    }
    let count = |topic: &str| ours.1.iter().filter(|m| m.0 == topic).count();
    let bursts = read_record(&text).len();
    println!(
        "{example}: {bursts} bursts: {} /cmd_vel and {} activity messages, equal to one process's",
        count("/cmd_vel"),
        count("/neuroburst/activity")
    );
    assert!(bursts > 100 && count("/neuroburst/activity") == bursts && count("/cmd_vel") > 10, "{bursts} bursts");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&one).unwrap(), "the two output files are byte for byte the same");
    (c, out, bursts)
}

#[test]
pub fn a_learning_brain_over_three_hosts_learns_what_one_process_learns() {
    // the conditioning example: a plastic synapse in one shard, its source's spikes from another
    replay_through_three_hosts("l", "conditioning");
}

#[test]
pub fn a_bag_replayed_through_three_hosts_records_what_one_process_records() {
    let (_c, out, bursts) = replay_through_three_hosts("g", "diffdrive");
    let one = _c.dir.path().join("one.mcap");
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
pub fn live_topics_in_and_out_through_the_io_shard_of_three_shards() {
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
pub fn degraded_a_cut_link_is_detected_and_the_shard_rejoins_once_it_is_restored() {
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
    // Shard 2 cannot reach the io shard: it stops (status 3), as documented (waiting for its
    // input, it gives the io shard twice the timeout; then 2 s to close its session).
    let dt = c.time_to(2, "lost at burst", cut, Duration::from_secs(10));
    println!("shard 2 noticed that it cannot reach the others after {dt:?}");
    assert!(dt < Duration::from_millis(2 * timeout_ms + 1500), "detection took {dt:?}, the timeout is {timeout_ms} ms");
    let s = c.wait(2, Duration::from_secs(10));
    println!("shard 2 ended {:?} after the cut: {s}", cut.elapsed());
    assert!(cut.elapsed() < Duration::from_millis(2 * timeout_ms + 5000), "shard 2 took {:?} to stop", cut.elapsed());
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
pub fn degraded_a_rejoin_during_a_bag_replay_still_records_what_one_process_records() {
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
pub fn the_shipped_diffdrive_cluster_config_replays_like_the_example() {
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
pub fn bad_io_options_are_errors_naming_the_thing() {
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
