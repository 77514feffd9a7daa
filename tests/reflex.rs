//! When the brain answers, counted in bursts (docs/realtime.md): a replay of a scan that shows an
//! obstacle on the right, through the rover's one-synapse reflex (scan -> motor). In clock mode the
//! stimulus waits at most one period for a burst and the motor answers one burst later; in reflex
//! mode the stimulus starts two bursts at its own time and the second answers. A reflex replay
//! writes the same bytes run to run. The live node's reflex mode runs the same schedule on the
//! wall clock (`neuroburst bench-loop --mode reflex` times it; a test below runs it briefly).

use crate::common;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use neuroburst::backend::open::open;
use neuroburst::backend::Readback;
use neuroburst::bag::{Bag, BagMessage, Topic};
use neuroburst::config::Config;
use neuroburst::genome::Genome;
use neuroburst::model::Layout;
use neuroburst::replay::{replay, ReplayOptions};
use neuroburst::ros::builtin::{Header, Time};
use neuroburst::ros::geometry_msgs::Twist;
use neuroburst::ros::neuroburst_msgs::BurstActivity;
use neuroburst::ros::sensor_msgs::LaserScan;
use neuroburst::ros::{decode, encode, RosMessage};

const T0: u64 = 1_700_000_000_000_000_000;
const MS: u64 = 1_000_000;

fn scan(t: u64, near: bool) -> Vec<u8> {
    encode(&LaserScan {
        header: Header { stamp: Time::from_nanos(t), frame_id: "laser".into() },
        angle_min: -1.5,
        angle_max: 1.5,
        angle_increment: 0.2,
        time_increment: 0.0,
        scan_time: 0.025,
        range_min: 0.1,
        range_max: 10.0,
        ranges: (0..16).map(|i| if near && i < 4 { 0.2 } else { 9.0 }).collect(),
        intensities: vec![],
    })
}

/// Clear scans every 25 ms for 0.5 s, except the one at `stimulus_ms` (an obstacle on the right),
/// which stands until the scan after it.
fn bag(stimulus_ms: u64) -> Bag {
    let topic = Topic { name: "/scan".into(), type_name: LaserScan::TYPE.into(), encoding: "cdr".into() };
    let mut times: Vec<u64> = (0..20).map(|k| k * 25).collect();
    times.push(stimulus_ms);
    times.sort_unstable();
    times.dedup();
    let messages =
        times.iter().map(|&ms| BagMessage { topic: 0, log_time: T0 + ms * MS, data: scan(T0 + ms * MS, ms == stimulus_ms) }).collect();
    Bag { topics: vec![topic], messages, files: vec![] }
}

const CONFIG: &str = r#"
backend: {kind: cpu}
log: {progress: false}
encoders:
  - {kind: laser_scan, topic: /scan, area: scan, max_range: 2.0, stale_after: 0}
decoders:
  - kind: twist
    area: motor
    topic: /cmd_vel
    axes: [{axis: linear_x, scale: 0.5, limit: 0.5}, {axis: angular_z, scale: 1.0, limit: 1.0}]
    output: {window: 1, rate_hz: 0, magnitude: count}
"#;

/// Replay `bag` through the rover (100 bursts/s) with `node.mode` = `mode`; the output bag's
/// bytes and, per burst, (burst number, bag time, turning).
fn run(bag: &Bag, mode: &str) -> (Vec<u8>, Vec<(u64, u64, bool)>) {
    run_with(bag, mode, |_| {})
}

/// [`run`], the configuration changed by `change` first.
fn run_with(bag: &Bag, mode: &str, change: impl FnOnce(&mut Config)) -> (Vec<u8>, Vec<(u64, u64, bool)>) {
    let genome = Genome::load(&common::root().join("examples/genomes/rover.yaml")).unwrap();
    let layout = Layout::from_genome(&genome);
    let mut config: Config = serde_yaml::from_str(CONFIG).unwrap();
    config.node.mode = serde_yaml::from_str(mode).unwrap();
    change(&mut config);
    let mut opened = open(&genome, &config.backend, Readback::All, false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.mcap");
    let stop = AtomicBool::new(false);
    let opts = ReplayOptions { burst_rate_hz: genome.burst_rate_hz, progress: false, stop: &stop, view: None, genome: &genome };
    replay(bag.clone(), Path::new("test.mcap"), &layout, opened.backend.as_mut(), config.replay_setup(), &out, &opts).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let recorded = neuroburst::bag::open(&out).unwrap();
    let index = |name: &str| recorded.topics.iter().position(|t| t.name.trim_start_matches('/') == name).unwrap();
    let (cmd, act) = (index("cmd_vel"), index("neuroburst/activity"));
    // each burst writes its Twist, then its activity message
    let mut bursts = vec![];
    let mut turning = None;
    for m in &recorded.messages {
        if m.topic == cmd {
            turning = Some(decode::<Twist>(&m.data).unwrap().angular.z > 0.0);
        } else if m.topic == act {
            let a: BurstActivity = decode(&m.data).unwrap();
            bursts.push((a.burst, m.log_time, turning.take().expect("a Twist every burst")));
        }
    }
    (bytes, bursts)
}

/// The first burst that takes the stimulus (at or after its time) and the first that turns.
fn answer(bursts: &[(u64, u64, bool)], stimulus: u64, reflex: bool) -> ((u64, u64), (u64, u64)) {
    let takes = bursts.iter().find(|b| if reflex { b.1 >= stimulus } else { b.1 > stimulus }).unwrap();
    let turns = bursts.iter().find(|b| b.2).expect("the reflex answers");
    assert!(bursts.iter().take_while(|b| !b.2).all(|b| b.1 <= takes.1 || b.0 < turns.0));
    ((takes.0, takes.1), (turns.0, turns.1))
}

#[test]
fn clock_mode_answers_within_one_period_and_one_burst() {
    let period = 10 * MS;
    // stimuli at every phase of the 10 ms grid
    for offset in [251, 253, 255, 258, 260] {
        let stimulus = T0 + offset * MS;
        let (_, bursts) = run(&bag(offset), "clock");
        let ((b_in, t_in), (b_out, t_out)) = answer(&bursts, stimulus, false);
        assert!(t_in - stimulus <= period, "offset {offset}: the stimulus waited {} ms", (t_in - stimulus) / MS);
        assert_eq!(b_out, b_in + 1, "offset {offset}: the motor answers one burst after the scan's");
        assert_eq!(t_out - t_in, period);
    }
}

#[test]
fn reflex_mode_answers_in_two_bursts_at_the_stimulus_time() {
    for offset in [251, 253, 255, 258, 260] {
        let stimulus = T0 + offset * MS;
        let (_, bursts) = run(&bag(offset), "reflex");
        let ((b_in, t_in), (b_out, t_out)) = answer(&bursts, stimulus, true);
        assert_eq!(t_in, stimulus, "offset {offset}: a burst starts at the stimulus");
        assert_eq!((b_out, t_out), (b_in + 1, stimulus), "offset {offset}: the second burst answers, at the same time");
        // the grid goes on at 100 Hz on average: as many bursts as the clock's, give or take the lead
        let (_, clock) = run(&bag(offset), "clock");
        assert!(bursts.len().abs_diff(clock.len()) <= 8, "{} reflex bursts, {} clock bursts", bursts.len(), clock.len());
    }
}

/// [`bag`] with a second scanner, `/other`, flooding every 2 ms with scans that see nothing near
/// (all beyond max_range, so they encode alike).
fn flooded(stimulus_ms: u64) -> Bag {
    let mut b = bag(stimulus_ms);
    b.topics.push(Topic { name: "/other".into(), type_name: LaserScan::TYPE.into(), encoding: "cdr".into() });
    for ms in (1..250).map(|k| k * 2 + 1) {
        let t = T0 + ms * MS;
        b.messages.push(BagMessage { topic: 1, log_time: t, data: scan(t, false) });
    }
    b.messages.sort_by_key(|m| m.log_time);
    b
}

#[test]
fn a_reflex_answers_in_two_bursts_when_other_inputs_flood_only_with_triggers_or_news() {
    let offset = 253;
    let stimulus = T0 + offset * MS;
    let reflex = |yaml: &'static str| {
        move |c: &mut Config| {
            c.encoders.push(serde_yaml::from_str("{kind: laser_scan, topic: /other, area: scan, max_range: 2.0, stale_after: 0}").unwrap());
            c.node.reflex = serde_yaml::from_str(yaml).unwrap();
        }
    };
    // every message starts two bursts: the flood (1000 bursts/s asked of a 100 Hz grid) spends the
    // lead, and the stimulus waits for the grid
    let (_, bursts) = run_with(&flooded(offset), "reflex", reflex("{triggers: [], on_change: false}"));
    let ((_, t_in), _) = answer(&bursts, stimulus, true);
    assert!(t_in > stimulus, "the lead was spent on the flood, yet the stimulus did not wait");
    // only the scan triggers, or only news does: the stimulus starts two bursts at its own time
    for yaml in ["{triggers: [/scan], on_change: false}", "{triggers: [], on_change: true}"] {
        let (_, bursts) = run_with(&flooded(offset), "reflex", reflex(yaml));
        let ((b_in, t_in), (b_out, t_out)) = answer(&bursts, stimulus, true);
        assert_eq!((t_in, b_out, t_out), (stimulus, b_in + 1, stimulus), "{yaml}");
    }
}

#[test]
fn a_reflex_replay_writes_the_same_bytes_every_run() {
    let b = bag(253);
    let (first, _) = run(&b, "reflex");
    let (second, _) = run(&b, "reflex");
    assert!(first == second, "two reflex replays of one bag differ");
}

#[test]
fn bench_loop_runs_both_modes_and_reports_the_loop() {
    for mode in ["clock", "reflex"] {
        let out = common::ok(common::neuroburst(&[
            "bench-loop",
            "--backend",
            "cpu",
            "--neurons",
            "2000",
            "--rate",
            "200",
            "--mode",
            mode,
            "--duration",
            "2",
            "--warmup",
            "0.5",
            "--json",
        ]));
        let r: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(r["mode"], mode);
        assert!(r["trials"].as_u64().unwrap() > 0, "{out}");
        assert!(r["bursts"].as_u64().unwrap() > 100, "{out}");
        let phases: Vec<&str> = r["phases"]["phases"].as_array().unwrap().iter().map(|p| p[0].as_str().unwrap()).collect();
        assert_eq!(phases, ["wait", "intake", "drive", "burst", "decode", "handoff"]);
        assert!(r["latency"]["p50_us"].as_f64().unwrap() > 0.0);
        assert!(r["answer_bursts"]["p50"].as_u64().unwrap() >= 1, "{out}");
    }
}
