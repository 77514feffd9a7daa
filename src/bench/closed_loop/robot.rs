//! The robot of `neuroburst bench-loop`: its own Zenoh session (rmw_zenoh keys and attachments,
//! loopback), publishing a camera (Image 640x480 rgb8), an IMU (Imu) and a laser scan (LaserScan)
//! at their rates (each scan period stretched by a random 0-2 ms, so that the stimuli fall at
//! every phase of the node's clock), and timing the reflex: on a scan tick it shows an obstacle on the right and
//! measures the time from that publication to the first Twist that turns; then it clears the
//! obstacle and waits for a still Twist before the next trial.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use zenoh::Wait;

use crate::ros::builtin::{Header, Time};
use crate::ros::geometry_msgs::{Quaternion, Twist, Vector3};
use crate::ros::sensor_msgs::{Image, Imu, LaserScan};
use crate::ros::{decode, encode, type_hash, RosMessage};
use crate::run::pace::system_now_ns;
use crate::run::trace::Durations;
use crate::transport::zenoh::{attachment, ZenohConfig};

/// Sensor rates (messages per second).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Rates {
    pub image_hz: f64,
    pub scan_hz: f64,
    pub imu_hz: f64,
}

impl Default for Rates {
    fn default() -> Self {
        Rates { image_hz: 30.0, scan_hz: 40.0, imu_hz: 200.0 }
    }
}

/// What the robot measured.
#[derive(Default)]
pub struct RobotReport {
    /// Stimulus -> first turning Twist, nanoseconds (trials after the warm-up).
    pub latency: Durations,
    /// Per answered trial: the Twists (one a burst) received from the stimulus's publication to
    /// the answer, the answer's included: the bursts the answer took (at most one more, in flight).
    pub answer_bursts: Vec<u32>,
    /// Trials whose Twist never turned within the timeout.
    pub lost: u64,
    /// Messages published per topic.
    pub published: Vec<(String, u64)>,
    /// Twists received.
    pub twists: u64,
}

/// The trial in progress, shared with the Twist callback.
#[derive(Default)]
struct Trial {
    /// When the stimulus was published, while waiting for the answer.
    stimulus: Option<Instant>,
    /// The answer's arrival.
    answered: Option<Instant>,
    /// Twists received since the stimulus, up to the answer.
    since: u32,
    /// Still Twists received since the obstacle was cleared.
    still: u32,
    twists: u64,
    /// Started while counting.
    counted: bool,
}

fn key<M: RosMessage>(domain: u32, topic: &str) -> String {
    format!("{domain}/{topic}/{}/{}", M::TYPE.replace("/msg/", "::msg::dds_::") + "_", type_hash::<M>())
}

fn header(frame: &str) -> Header {
    Header { stamp: Time::from_nanos(system_now_ns()), frame_id: frame.into() }
}

/// 16 rays over 3 rad; an obstacle at 0.2 m on the right (the first 4 rays) or nothing within 9 m.
fn scan(near: bool) -> Vec<u8> {
    encode(&LaserScan {
        header: header("laser"),
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

fn imu(k: u64) -> Vec<u8> {
    let s = (k as f64 * 0.01).sin();
    encode(&Imu {
        header: header("imu"),
        orientation: Quaternion { x: 0.0, y: 0.0, z: 0.0, w: 1.0 },
        orientation_covariance: Default::default(),
        angular_velocity: Vector3 { x: 0.1 * s, y: -0.2 * s, z: 0.5 * s },
        angular_velocity_covariance: Default::default(),
        linear_acceleration: Vector3 { x: 1.0 * s, y: 0.5, z: 9.81 },
        linear_acceleration_covariance: Default::default(),
    })
}

/// A 640x480 rgb8 frame (a gradient that moves with `k`).
fn image(k: u64) -> Vec<u8> {
    let (w, h) = (640u32, 480u32);
    let data = (0..h).flat_map(|y| (0..w).flat_map(move |x| [(x + k as u32) as u8, y as u8, 128])).collect();
    encode(&Image { header: header("camera"), height: h, width: w, encoding: "rgb8".into(), is_bigendian: 0, step: 3 * w, data })
}

/// Run the robot against a node listening on `endpoint` until `stop`; only trials that start
/// while `counting` is set are counted. `ready` is set when the first Twist arrived (the route is
/// up).
pub fn run(
    endpoint: &str,
    domain: u32,
    rates: Rates,
    stop: &AtomicBool,
    ready: &AtomicBool,
    counting: &AtomicBool,
) -> anyhow::Result<RobotReport> {
    let config = ZenohConfig { connect: vec![endpoint.to_string()], listen: vec![], ..ZenohConfig::default() };
    let session = zenoh::open(config.session_config()?).wait().map_err(|e| anyhow!("robot session: {e}"))?;
    let zerr = |e: zenoh::Error| anyhow!("robot: {e}");
    // The stimulus goes express, as a reflex sensor's publisher should: under the back-pressure of
    // camera frames on the same link, Zenoh may otherwise hold a small sample up to its batching
    // time limit (1 ms by default) to batch it.
    let scan_pub = session.declare_publisher(key::<LaserScan>(domain, "scan")).express(true).wait().map_err(zerr)?;
    let imu_pub = session.declare_publisher(key::<Imu>(domain, "imu")).wait().map_err(zerr)?;
    let image_pub = session.declare_publisher(key::<Image>(domain, "camera/image_raw")).wait().map_err(zerr)?;
    let trial = Arc::new(Mutex::new(Trial::default()));
    let t = trial.clone();
    let _twists = session
        .declare_subscriber(format!("{domain}/cmd_vel/geometry_msgs::msg::dds_::Twist_/*"))
        .callback(move |s| {
            let now = Instant::now();
            let Ok(twist) = decode::<Twist>(&s.payload().to_bytes()) else { return };
            let turning = twist.angular.z != 0.0 || twist.linear.x != 0.0;
            let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
            t.twists += 1;
            if t.stimulus.is_some() {
                if t.answered.is_none() {
                    t.since += 1;
                    if turning {
                        t.answered = Some(now);
                    }
                }
            } else if turning {
                t.still = 0;
            } else {
                t.still += 1;
            }
        })
        .wait()
        .map_err(zerr)?;

    let gid = attachment::gid("neuroburst bench-loop robot");
    let mut seq = 0i64;
    let mut put = |p: &zenoh::pubsub::Publisher<'_>, payload: Vec<u8>| {
        seq += 1;
        p.put(payload).attachment(attachment::encode(seq, system_now_ns() as i64, &gid).to_vec()).wait().map_err(zerr)
    };
    let period = |hz: f64| crate::time::seconds(1.0 / hz);
    let (image_p, scan_p, imu_p) = (period(rates.image_hz), period(rates.scan_hz), period(rates.imu_hz));
    let start = Instant::now();
    let (mut next_image, mut next_scan, mut next_imu) = (start, start, start);
    let mut counts = [0u64; 3];
    let mut report = RobotReport::default();
    let timeout = Duration::from_millis(100);
    let mut near = false;
    // the scans' phase wanders against the node's clock (a real sensor's clock is its own)
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut jitter = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        Duration::from_nanos(rng % 2_000_000)
    };
    let frames: Vec<Vec<u8>> = (0..4).map(|k| image(k * 8)).collect();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let due = next_image.min(next_scan).min(next_imu);
        if now < due {
            std::thread::sleep(due - now);
            continue;
        }
        if now >= next_imu {
            put(&imu_pub, imu(counts[2]))?;
            counts[2] += 1;
            next_imu += imu_p;
        }
        if now >= next_image {
            put(&image_pub, frames[counts[0] as usize % frames.len()].clone())?;
            counts[0] += 1;
            next_image += image_p;
        }
        if now >= next_scan {
            next_scan += scan_p + jitter();
            counts[1] += 1;
            let mut t = trial.lock().unwrap_or_else(|p| p.into_inner());
            if t.twists > 0 {
                ready.store(true, Ordering::Relaxed);
            }
            match (t.stimulus, t.answered) {
                // answered: count it, clear the obstacle
                (Some(s), Some(a)) => {
                    if t.counted {
                        report.latency.record((a - s).as_nanos() as u64);
                        report.answer_bursts.push(t.since);
                    }
                    *t = Trial { twists: t.twists, ..Trial::default() };
                    near = false;
                }
                (Some(s), None) if now - s > timeout => {
                    if t.counted {
                        report.lost += 1;
                    }
                    *t = Trial { twists: t.twists, ..Trial::default() };
                    near = false;
                }
                (Some(_), None) => {}
                // still since the obstacle was cleared: the next stimulus
                (None, _) if t.still >= 2 && !near => {
                    near = true;
                    drop(t);
                    let payload = scan(true);
                    let at = Instant::now();
                    let mut t = trial.lock().unwrap_or_else(|p| p.into_inner());
                    (t.stimulus, t.counted) = (Some(at), counting.load(Ordering::Relaxed));
                    drop(t);
                    put(&scan_pub, payload)?;
                    continue;
                }
                (None, _) => {}
            }
            drop(t);
            put(&scan_pub, scan(near))?;
        }
    }
    report.twists = trial.lock().unwrap_or_else(|p| p.into_inner()).twists;
    report.published = vec![("camera/image_raw".into(), counts[0]), ("scan".into(), counts[1]), ("imu".into(), counts[2])];
    Ok(report)
}
