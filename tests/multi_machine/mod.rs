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
//!
//! The cluster harness (hosts, shard processes, the one-process reference) is in harness.rs; the
//! bag and live-topic tests through the io shard are in io.rs.

use crate::common;
mod harness;
mod io;
mod secure;

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

use harness::*;

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
    if !common::gpus(1) {
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
