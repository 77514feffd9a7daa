//! End-to-end latency of the live node, sensor sample -> motor sample, on loopback:
//! a robot (a second Zenoh session in this process, rmw_zenoh format) publishes a LaserScan with
//! an obstacle and times the first Twist that moves; the node bursts at 1 kHz on the CPU with a
//! W(100k, 100, 1%) brain (driven every burst as spec/performance.md says) plus a scan sensor
//! area and a motor area. The motor fires one burst after the sensor (the model's synaptic delay).
//!
//!   cargo run --release --example latency -- [--trials 1000] [--rate 1000] [--neurons 100000]

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use neuroburst::config::Config;
use neuroburst::genome::Genome;
use neuroburst::live::cdr::{Reader, Writer};
use neuroburst::live::{self, Control, InputConfig, OutputConfig};
use neuroburst::model::Injection;
use neuroburst::transport::zenoh::{attachment, ZenohConfig, ZenohTransport};
use neuroburst::workload::Workload;
use zenoh::Wait;

fn arg(name: &str, default: f64) -> f64 {
    let a: Vec<String> = std::env::args().collect();
    a.iter().position(|x| x == name).and_then(|i| a.get(i + 1)).map_or(default, |v| v.parse().expect(name))
}

fn scan(near: bool) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(0);
    w.u32(0);
    w.string("laser");
    for v in [-1.5f32, 1.5, 0.2, 0.0, 0.1, 0.1, 10.0] {
        w.f32(v);
    }
    w.u32(16);
    for i in 0..16 {
        w.f32(if near && i >= 12 { 0.2 } else { 9.0 });
    }
    w.u32(0);
    w.finish()
}

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
    genome.mappings.extend(rover.mappings.iter().filter(|m| m.source == "scan").cloned());
    genome.name = format!("{} + scan -> motor", genome.name);

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let mut config = Config::default();
    config.backend.kind = neuroburst::backend::BackendKind::Cpu;
    config.node.rate_hz = rate;
    config.node.stats_topic = String::new();
    config.node.inputs = vec![InputConfig {
        topic: "scan".into(),
        type_name: "sensor_msgs/msg/LaserScan".into(),
        area: "scan".into(),
        gain: 1.0,
        hold: false,
    }];
    config.node.outputs = vec![OutputConfig {
        topic: "cmd_vel".into(),
        type_name: "geometry_msgs/msg/Twist".into(),
        area: "motor".into(),
        max_linear: 1.0,
        max_angular: 1.0,
    }];
    config.checkpoint.on_shutdown = false;
    config.checkpoint.trigger_topic = String::new();
    config.zenoh = ZenohConfig { listen: vec![endpoint.clone()], connect: vec![], ..ZenohConfig::default() };

    let control = Arc::new(Control::default());
    let c = control.clone();
    let node_thread = std::thread::spawn(move || -> anyhow::Result<live::Summary> {
        let mut t = ZenohTransport::open(&config.zenoh, 0, "/", "neuroburst")?;
        let mut buf = Vec::new();
        let drive: live::Drive = Box::new(move |burst, inj: &mut Vec<Injection>| {
            w.injection(burst, &mut buf);
            inj.extend_from_slice(&buf);
        });
        live::run(&genome, &config, false, &mut t, c, Some(drive))
    });

    // The robot.
    let robot = ZenohConfig { listen: vec![], connect: vec![endpoint], ..ZenohConfig::default() };
    let session = zenoh::open(robot.session_config()?).wait().map_err(|e| anyhow::anyhow!("{e}"))?;
    let scan_key = "0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828";
    let twist_key = "0/cmd_vel/geometry_msgs::msg::dds_::Twist_/*";
    let publisher = session.declare_publisher(scan_key).wait().map_err(|e| anyhow::anyhow!("{e}"))?;
    let (tx, rx) = mpsc::channel::<(Instant, f64)>();
    let _sub = session
        .declare_subscriber(twist_key)
        .callback(move |s| {
            let now = Instant::now();
            let bytes = s.payload().to_bytes();
            if let Ok(mut r) = Reader::new(&bytes) {
                let _ = tx.send((now, r.f64().unwrap_or(0.0)));
            }
        })
        .wait()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let gid = attachment::gid("latency robot");
    // Wait for the node to be up and the route established.
    rx.recv_timeout(Duration::from_secs(120)).map_err(|_| anyhow::anyhow!("no Twist from the node within 120 s"))?;
    std::thread::sleep(Duration::from_secs(1));
    let near = scan(true);
    let mut lat = Vec::with_capacity(trials);
    let mut lost = 0;
    for seq in 0..(trials + 50) as i64 {
        while rx.try_recv().is_ok() {}
        let t0 = Instant::now();
        publisher.put(near.clone()).attachment(attachment::encode(seq, 0, &gid).to_vec()).wait().map_err(|e| anyhow::anyhow!("{e}"))?;
        let deadline = t0 + Duration::from_millis(100);
        let mut got = None;
        while let Ok((t, x)) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if x > 0.0 {
                got = Some(t - t0);
                break;
            }
        }
        match got {
            Some(d) if seq >= 50 => lat.push(d.as_secs_f64() * 1e6),
            Some(_) => {}
            None => lost += 1,
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    control.stop.store(true, Ordering::Relaxed);
    let summary = node_thread.join().unwrap()?;
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| lat.get(((lat.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "W({neurons}, 100, 1%) + scan -> motor at {rate} Hz on the CPU: {} trials, p50 {:.0} us, p99 {:.0} us, max {:.0} us; \
         {lost} without a response; node: {} bursts, {} missed deadlines",
        lat.len(),
        q(0.5),
        q(0.99),
        q(1.0),
        summary.bursts,
        summary.missed_deadlines
    );
    Ok(())
}
