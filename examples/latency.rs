//! End-to-end latency of the live node, sensor sample -> motor sample, on loopback:
//! a robot (a second Zenoh session in this process, rmw_zenoh format: keys, attachments) publishes
//! a LaserScan with an obstacle on the right and times the first Twist that turns; the node bursts
//! at 1 kHz on the CPU with a W(100k, 100, 1%) brain (driven every burst as docs/performance.md
//! says) plus the scan and motor areas of examples/genomes/rover.yaml, through the same encoders
//! and decoders as `neuroburst node` and `replay`. The motor fires one burst after the sensor (the
//! model's synaptic delay). Before every trial the robot clears the obstacle and waits for a
//! still Twist (an encoder's injection stands until its topic's next message).
//!
//!   cargo run --release --example latency -- [--trials 1000] [--rate 1000] [--neurons 100000]

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use neuroburst::config::Config;
use neuroburst::genome::Genome;
use neuroburst::live::{self, Control};
use neuroburst::model::Injections;
use neuroburst::ros::builtin::{Header, Time};
use neuroburst::ros::geometry_msgs::Twist;
use neuroburst::ros::sensor_msgs::LaserScan;
use neuroburst::ros::{decode, encode, type_hash};
use neuroburst::transport::zenoh::{attachment, ZenohConfig, ZenohTransport};
use neuroburst::workload::Workload;
use zenoh::Wait;

fn arg(name: &str, default: f64) -> f64 {
    let a: Vec<String> = std::env::args().collect();
    a.iter().position(|x| x == name).and_then(|i| a.get(i + 1)).map_or(default, |v| v.parse().expect(name))
}

/// 16 rays over 3 rad; an obstacle at 0.2 m on the right (the first 4 rays) or nothing within 9 m.
fn scan(near: bool) -> Vec<u8> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    encode(&LaserScan {
        header: Header { stamp: Time::from_nanos(now), frame_id: "laser".into() },
        angle_min: -1.5,
        angle_max: 1.5,
        angle_increment: 0.2,
        time_increment: 0.0,
        scan_time: 0.1,
        range_min: 0.1,
        range_max: 10.0,
        ranges: (0..16).map(|i| if near && i < 4 { 0.2 } else { 9.0 }).collect(),
        intensities: vec![],
    })
}

/// The node's configuration (keys of config/neuroburst.yaml), as config/node.yaml without the camera.
const CONFIG: &str = r#"
backend: {kind: cpu}
node: {stats_topic: ""}
encoders:
  - {kind: laser_scan, topic: scan, area: scan, max_range: 2.0}
decoders:
  - kind: twist
    area: motor
    topic: cmd_vel
    axes: [{axis: linear_x, scale: 0.5, limit: 0.5}, {axis: angular_z, scale: 1.0, limit: 1.0}]
    output: {window: 1, rate_hz: 0, magnitude: count}
checkpoint: {on_shutdown: false, trigger_topic: ""}
"#;

fn main() -> anyhow::Result<()> {
    let trials = arg("--trials", 1000.0) as usize;
    let rate = arg("--rate", 1000.0);
    let neurons = arg("--neurons", 100_000.0) as u32;
    let _ = tracing_subscriber::fmt().with_env_filter("info,zenoh=warn").with_writer(std::io::stderr).try_init();

    let w = Workload { neurons, fanout: 100, rate: 0.01, seed: 1 };
    let mut genome = w.genome();
    let mut rover_path = std::path::PathBuf::from("examples/genomes/rover.yaml");
    if !rover_path.exists() {
        rover_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&rover_path);
    }
    let rover = Genome::load(&rover_path)?;
    genome.areas.extend(rover.areas.iter().filter(|a| a.id == "scan" || a.id == "motor").cloned());
    let scan_mappings: Vec<_> = rover.mappings.iter().filter(|m| m.source == "scan").cloned().collect();
    for m in &scan_mappings {
        if let Some(morphology) = rover.morphologies.get(&m.morphology) {
            genome.morphologies.insert(m.morphology.clone(), morphology.clone());
        }
    }
    genome.mappings.extend(scan_mappings);
    genome.name = format!("{} + scan -> motor", genome.name);

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let mut config: Config = serde_yaml::from_str(CONFIG)?;
    config.node.rate_hz = rate;
    config.zenoh = ZenohConfig { listen: vec![endpoint.clone()], connect: vec![], ..ZenohConfig::default() };

    let control = Arc::new(Control::default());
    let c = control.clone();
    let node_thread = std::thread::spawn(move || -> anyhow::Result<live::Summary> {
        let mut t = ZenohTransport::open(&config.zenoh, 0, "/", "neuroburst")?;
        let mut buf = Injections::new();
        let drive: live::Drive = Box::new(move |burst, inj: &mut Injections| {
            w.injection(burst, &mut buf);
            inj.extend_from(buf.as_slice());
        });
        live::run(&genome, &config, false, &mut t, c, Some(drive))
    });

    // The robot.
    let robot = ZenohConfig { listen: vec![], connect: vec![endpoint], ..ZenohConfig::default() };
    let session = zenoh::open(robot.session_config()?).wait().map_err(|e| anyhow::anyhow!("{e}"))?;
    let scan_key = format!("0/scan/sensor_msgs::msg::dds_::LaserScan_/{}", type_hash::<LaserScan>());
    let twist_key = "0/cmd_vel/geometry_msgs::msg::dds_::Twist_/*";
    let publisher = session.declare_publisher(scan_key).wait().map_err(|e| anyhow::anyhow!("{e}"))?;
    // (received, turning)
    let (tx, rx) = mpsc::channel::<(Instant, bool)>();
    let _sub = session
        .declare_subscriber(twist_key)
        .callback(move |s| {
            let now = Instant::now();
            if let Ok(t) = decode::<Twist>(&s.payload().to_bytes()) {
                let _ = tx.send((now, t.angular.z != 0.0 || t.linear.x != 0.0));
            }
        })
        .wait()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let gid = attachment::gid("latency robot");
    let mut seq = 0i64;
    let mut put = |near: bool| {
        seq += 1;
        publisher.put(scan(near)).attachment(attachment::encode(seq, 0, &gid).to_vec()).wait().map_err(|e| anyhow::anyhow!("{e}"))
    };
    // Wait for the node to be up and the route established.
    rx.recv_timeout(Duration::from_secs(120)).map_err(|_| anyhow::anyhow!("no Twist from the node within 120 s"))?;
    std::thread::sleep(Duration::from_secs(1));
    let mut lat = Vec::with_capacity(trials);
    let (mut lost, mut not_still) = (0, 0);
    for trial in 0..trials + 50 {
        // Clear the obstacle; wait for two still Twists in a row.
        put(false)?;
        let deadline = Instant::now() + Duration::from_millis(200);
        let mut still = 0;
        while still < 2 {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok((_, turning)) => still = if turning { 0 } else { still + 1 },
                Err(_) => break,
            }
        }
        if still < 2 {
            not_still += 1;
            continue;
        }
        while rx.try_recv().is_ok() {}
        let t0 = Instant::now();
        put(true)?;
        let deadline = t0 + Duration::from_millis(100);
        let mut got = None;
        while let Ok((t, turning)) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if turning {
                got = Some(t - t0);
                break;
            }
        }
        match got {
            Some(d) if trial >= 50 => lat.push(d.as_secs_f64() * 1e6),
            Some(_) => {}
            None => lost += 1,
        }
    }
    control.stop.store(true, Ordering::Relaxed);
    let summary = node_thread.join().unwrap()?;
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| lat.get(((lat.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "W({neurons}, 100, 1%) + scan -> motor at {rate} Hz on the CPU: {} trials, p50 {:.0} us, p99 {:.0} us, max {:.0} us; \
         {lost} without a response, {not_still} skipped (no still Twist after clearing); node: {} bursts, {} missed deadlines",
        lat.len(),
        q(0.5),
        q(0.99),
        q(1.0),
        summary.bursts,
        summary.missed_deadlines
    );
    Ok(())
}
