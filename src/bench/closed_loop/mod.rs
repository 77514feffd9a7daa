//! `neuroburst bench-loop`: the closed loop as a robot gets it. A robot ([`robot`], its own Zenoh
//! session, rmw_zenoh format, loopback) publishes a camera, an IMU and a laser scan at realistic
//! rates, and times a reflex (an obstacle in the scan -> a turning Twist); the node
//! ([`crate::node::run`], the same code as `neuroburst node`) runs W(N, K, rho) or a given genome,
//! plus the sensory and motor areas of `sensors.yaml`.
//!
//! The W drive stands for sensors the robot does not publish, and is not charged to the loop as
//! host work it would not be: the injections of bursts 1..=[`DRIVE_POOL`] are generated before
//! the node starts, and burst `t` copies those of burst `(t - 1) % DRIVE_POOL + 1`, a copy the
//! size of a sensor's injection (timed as the `drive` phase).

pub mod robot;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use serde::Serialize;

use crate::backend::BackendConfig;
use crate::checkpoint::CheckpointConfig;
use crate::decode::DecoderConfig;
use crate::encode::EncoderConfig;
use crate::genome::Genome;
use crate::model::Injections;
use crate::node::{self, Control};
use crate::run::trace::{Percentiles, PhaseSummary};
use crate::transport::zenoh::{ZenohConfig, ZenohTransport};
use crate::workload::{Learning, Workload, DRIVE_POOL};

/// The bench's sensory and motor areas.
const SENSORS: &str = include_str!("sensors.yaml");

/// The bench's encoders and decoder (keys of config/neuroburst.yaml).
const TOPICS: &str = r#"
encoders:
  - {kind: laser_scan, topic: scan, area: loop_scan, max_range: 2.0}
  - {kind: image, topic: camera/image_raw, area: loop_camera}
  - {kind: imu, topic: imu, angular_velocity_area: loop_gyro, linear_acceleration_area: loop_accel}
decoders:
  - kind: twist
    area: loop_motor
    topic: cmd_vel
    axes: [{axis: linear_x, scale: 0.5, limit: 0.5}, {axis: angular_z, scale: 1.0, limit: 1.0}]
    output: {window: 1, rate_hz: 0, magnitude: count}
"#;

/// Median, 99th percentile and maximum of per-trial burst counts.
#[derive(Debug, Default, Serialize)]
pub struct BurstCounts {
    pub p50: u32,
    pub p99: u32,
    pub max: u32,
}

impl BurstCounts {
    fn of(mut v: Vec<u32>) -> BurstCounts {
        v.sort_unstable();
        let at = |q: f64| v.get(((v.len() as f64 * q).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0);
        BurstCounts { p50: at(0.5), p99: at(0.99), max: v.last().copied().unwrap_or(0) }
    }
}

/// The brain beside the sensory areas.
pub enum BrainSpec {
    /// W, learning as the benchmarks' `--plastic` says.
    Workload(Workload, Learning),
    Genome(Genome),
}

pub struct Options {
    pub brain: BrainSpec,
    /// Counted time, after the warm-up.
    pub duration: Duration,
    pub warmup: Duration,
    pub rates: robot::Rates,
}

#[derive(Debug, Serialize)]
pub struct LoopReport {
    pub brain: String,
    pub neurons: u32,
    pub hardware: String,
    pub mode: String,
    pub rate_hz: f64,
    pub duration_s: f64,
    pub sensors: robot::Rates,
    /// Trials answered (counted after the warm-up), and those never answered within 100 ms.
    pub trials: u64,
    pub lost: u64,
    /// Stimulus published -> turning Twist received, at the robot.
    pub latency: Percentiles,
    /// The bursts the answer took: Twists (one a burst) from the stimulus to the answer.
    pub answer_bursts: BurstCounts,
    /// Reflex mode's settings (the bench's scan triggers where the configuration names none).
    pub reflex: Option<node::ReflexConfig>,
    /// The node's own measure over the whole run (BurstStats' latency): a message's arrival to the
    /// publication of the burst after its own.
    pub node_latency: Percentiles,
    /// Over the counted time.
    pub bursts: u64,
    pub missed_deadlines: u64,
    pub dropped_messages: u64,
    /// Where the bursts' periods went (counted time).
    pub phases: PhaseSummary,
    pub published: Vec<(String, u64)>,
    pub twists: u64,
    pub drive: String,
}

/// The genome the bench runs: the brain's areas, then the sensory and motor areas.
pub fn genome(brain: &BrainSpec) -> anyhow::Result<Genome> {
    let sensors = Genome::from_yaml_str(SENSORS).context("bench-loop's sensors.yaml")?;
    let mut g = match brain {
        BrainSpec::Workload(w, learning) => w.learning_genome(learning),
        BrainSpec::Genome(g) => g.clone(),
    };
    if let Some(a) = g.areas.iter().find(|a| sensors.area(&a.id).is_some()) {
        return Err(anyhow!("the genome has an area {:?}, a name bench-loop's own areas use", a.id));
    }
    g.areas.extend(sensors.areas);
    g.morphologies.extend(sensors.morphologies);
    g.mappings.extend(sensors.mappings);
    g.name = format!("{} + bench-loop sensors", g.name);
    g.validate().context("the genome with bench-loop's sensors")?;
    Ok(g)
}

/// The drive of bursts 1..=DRIVE_POOL of `w`, and a closure that injects it cyclically.
fn drive(w: &Workload) -> node::Drive {
    let pool = w.drive_pool(&Learning::default(), DRIVE_POOL as u64);
    Box::new(move |t, inj: &mut Injections| inj.extend_from(Workload::drive_at(&pool, t).as_slice()))
}

/// The bench's topics: its encoders and decoder.
#[derive(serde::Deserialize)]
struct Topics {
    encoders: Vec<EncoderConfig>,
    decoders: Vec<DecoderConfig>,
}

/// Run the bench: the user's `node` and `backend` sections (node.mode, node.realtime, ...); the
/// encoders, decoders and Zenoh endpoints are the bench's, and it writes no checkpoints.
pub fn run(mut nc: node::NodeConfig, backend: BackendConfig, opts: Options) -> anyhow::Result<LoopReport> {
    // the scan is the robot's reflex sensor; the camera and the IMU wait for the grid
    if nc.reflex.triggers.is_empty() {
        nc.reflex.triggers = vec!["scan".into()];
    }
    let reflex = (nc.mode == node::Mode::Reflex).then(|| nc.reflex.clone());
    let genome = genome(&opts.brain)?;
    let topics: Topics = serde_yaml::from_str(TOPICS).expect("bench-loop's topics parse");
    let checkpoint = CheckpointConfig { on_shutdown: false, trigger_topic: String::new(), ..CheckpointConfig::default() };
    let port = crate::cluster::netns::loopback_port();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let zenoh = ZenohConfig { listen: vec![endpoint.clone()], connect: vec![], ..ZenohConfig::default() };
    let rate = if nc.rate_hz > 0.0 { nc.rate_hz } else { genome.burst_rate_hz };
    let (drive, drive_note) = match &opts.brain {
        BrainSpec::Workload(w, _) => {
            (Some(drive(w)), format!("W's injections of bursts 1..={DRIVE_POOL} generated before the start, copied in cyclically"))
        }
        BrainSpec::Genome(_) => (None, "none (the genome's own `_power` areas only)".into()),
    };
    let neurons = crate::model::Layout::from_genome(&genome).neurons;
    let brain = genome.name.clone();
    let mode = nc.mode_name().to_string();

    let control = Arc::new(Control::default());
    let c = control.clone();
    let domain = nc.domain;
    let node = std::thread::Builder::new().name("burst".into()).spawn(move || -> anyhow::Result<node::Summary> {
        let view = crate::view::ViewConfig::default();
        let (encoders, decoders) = (&topics.encoders, &topics.decoders);
        let setup = node::NodeSetup { node: &nc, encoders, decoders, backend: &backend, checkpoint: &checkpoint, view: &view };
        let zenoh = ZenohConfig { max_message_size: node::max_message_size(&setup), ..zenoh };
        let mut t = ZenohTransport::open(&zenoh, nc.domain, "/", &nc.name)?;
        let r = node::run(&genome, setup, false, &mut t, c.clone(), drive);
        c.request_stop();
        r
    })?;

    let stop = Arc::new(AtomicBool::new(false));
    let (ready, counting) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let (s, r, k, rates, domain) = (stop.clone(), ready.clone(), counting.clone(), opts.rates, domain);
    let robot = std::thread::Builder::new().name("robot".into()).spawn(move || robot::run(&endpoint, domain, rates, &s, &r, &k))?;

    // the node builds its brain and the route comes up: the first Twist
    let give_up = std::time::Instant::now() + Duration::from_secs(600);
    while !ready.load(Ordering::Relaxed) {
        if control.stop.load(Ordering::Relaxed) || robot.is_finished() || std::time::Instant::now() > give_up {
            stop.store(true, Ordering::Relaxed);
            control.request_stop();
            let node_result = node.join().map_err(|_| anyhow!("the burst thread panicked"))?;
            robot.join().map_err(|_| anyhow!("the robot thread panicked"))??;
            node_result?;
            return Err(anyhow!("no Twist from the node within 600 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(opts.warmup);
    let (bursts0, missed0) = (control.burst.load(Ordering::Relaxed), control.missed.load(Ordering::Relaxed));
    control.reset_trace.store(true, Ordering::Relaxed);
    counting.store(true, Ordering::Relaxed);
    std::thread::sleep(opts.duration);
    let (bursts1, missed1) = (control.burst.load(Ordering::Relaxed), control.missed.load(Ordering::Relaxed));
    stop.store(true, Ordering::Relaxed);
    let robot_report = robot.join().map_err(|_| anyhow!("the robot thread panicked"))??;
    control.request_stop();
    let summary = node.join().map_err(|_| anyhow!("the burst thread panicked"))??;
    Ok(LoopReport {
        brain,
        neurons,
        hardware: summary.hardware.clone(),
        mode,
        rate_hz: rate,
        duration_s: opts.duration.as_secs_f64(),
        sensors: opts.rates,
        trials: robot_report.latency.len(),
        lost: robot_report.lost,
        latency: robot_report.latency.percentiles(),
        answer_bursts: BurstCounts::of(robot_report.answer_bursts),
        reflex,
        node_latency: summary.latency.clone(),
        bursts: bursts1 - bursts0,
        missed_deadlines: missed1 - missed0,
        dropped_messages: summary.dropped_messages,
        phases: summary.phases,
        published: robot_report.published,
        twists: robot_report.twists,
        drive: drive_note,
    })
}
