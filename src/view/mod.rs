//! The live view: a Foxglove WebSocket server (the `foxglove` SDK) that shows the brain beside the
//! robot: the scene of the areas and the neurons that fired ([`scene`]), the motor commands,
//! `BurstStats` / the activity, and the sensor messages the node decoded, each on its ROS topic
//! with its `ros2msg` schema. Open Foxglove (or Lichtblick), "Open connection",
//! `ws://127.0.0.1:8765`.
//!
//! The view never slows a burst: the burst thread hands a frame over only when the view asks for
//! one (at `view.rate_hz`, while a client is subscribed) and never waits ([`Feed`]); the SDK drops
//! messages a slow client cannot take. Frames a replay records are chosen on bag time, so the
//! output bag is the same bytes with or without a client.

pub mod scene;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use foxglove::messages::{PointCloud, SceneUpdate};
use foxglove::websocket::{ChannelView, Client, ServerListener};
use foxglove::{Channel, ChannelBuilder, Context, RawChannel, Schema, WebSocketServer, WebSocketServerHandle};
use serde::{Deserialize, Serialize};

use crate::genome::Genome;
use crate::model::Layout;
use crate::ros::registry;
use crate::ros::typesys::msg_definition;
use scene::Geometry;

/// The view's default address: Foxglove's default connection.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8765";
/// Topics of the scene and of the fired neurons.
pub const SCENE_TOPIC: &str = "/neuroburst/scene";
pub const POINTS_TOPIC: &str = "/neuroburst/fired";

/// Settings of the live view and of the scene a replay records (`view:` in the configuration).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ViewConfig {
    /// Scene frames per second (live: wall clock; replay: bag time), and the most messages per
    /// second of each sensor topic shown.
    pub rate_hz: f64,
    /// The most fired neurons drawn per frame (beyond: an even subsample).
    pub max_points: usize,
    /// `replay --out` records the scene and the fired neurons (Foxglove schemas) at `rate_hz`.
    pub record: bool,
    /// Topics the live node shows beside the brain that no encoder reads (e.g. the robot's
    /// `/odom`: where the robot is while the brain drives it), at most `rate_hz` a second each.
    pub topics: Vec<ViewTopic>,
}

/// A topic for the view only: its name and ROS 2 type (`nav_msgs/msg/Odometry`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewTopic {
    pub topic: String,
    #[serde(rename = "type")]
    pub type_name: String,
}

impl Default for ViewConfig {
    fn default() -> Self {
        ViewConfig { rate_hz: 30.0, max_points: 50_000, record: false, topics: vec![] }
    }
}

impl ViewConfig {
    /// Checks the values: Err((key, why)).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.rate_hz > 0.0 && self.rate_hz <= 1000.0) {
            return Err(("view.rate_hz", format!("{} is not in (0, 1000]", self.rate_hz)));
        }
        if self.max_points == 0 {
            return Err(("view.max_points", "must be at least 1".into()));
        }
        if let Some(t) = self.topics.iter().find(|t| registry::lookup(&t.type_name).is_none()) {
            let known = registry::type_names().join(", ");
            return Err(("view.topics", format!("{}: unknown message type {:?} (known: {known})", t.topic, t.type_name)));
        }
        Ok(())
    }
}

/// `host:port` of `--view` (empty: the default).
pub fn parse_addr(addr: &str) -> anyhow::Result<(String, u16)> {
    let addr = if addr.is_empty() { DEFAULT_ADDR } else { addr };
    let (host, port) = addr.rsplit_once(':').with_context(|| format!("--view {addr}: expected HOST:PORT, e.g. {DEFAULT_ADDR}"))?;
    let port = port.parse().with_context(|| format!("--view {addr}: {port:?} is not a port number"))?;
    Ok((host.trim_matches(['[', ']']).to_string(), port))
}

/// Counts the subscriptions of the view's clients.
#[derive(Default)]
struct Subscribed(AtomicBool);

impl ServerListener for Subscribed {
    fn on_subscribe(&self, _: Client, _: ChannelView) {
        self.0.store(true, Ordering::Release);
    }
}

/// A ROS topic's channel and when it last showed a message.
type Shown = (Arc<RawChannel>, Option<Instant>);

/// A running view.
pub struct View {
    server: Option<WebSocketServerHandle>,
    ctx: Arc<Context>,
    scene: Channel<SceneUpdate>,
    points: Channel<PointCloud>,
    raw: Mutex<BTreeMap<String, Shown>>,
    subscribed: Arc<Subscribed>,
    geometry: Geometry,
    layout: Layout,
    pub config: ViewConfig,
    url: String,
}

impl View {
    /// Serve the view of `genome` on `addr` (`host:port`; port 0 picks a free one).
    pub fn start(addr: &str, genome: &Genome, config: &ViewConfig) -> anyhow::Result<View> {
        let (host, port) = parse_addr(addr)?;
        let ctx = Context::new();
        let subscribed = Arc::new(Subscribed::default());
        let server = WebSocketServer::new()
            .name("neuroburst")
            .bind(host.clone(), port)
            .context(&ctx)
            .listener(subscribed.clone())
            .start_blocking()
            .with_context(|| format!("--view: cannot serve on {host}:{port}"))?;
        let url = format!("ws://{host}:{}", server.port());
        tracing::info!("view: Foxglove WebSocket on {url} (Foxglove: Open connection)");
        Ok(View {
            scene: ChannelBuilder::new(SCENE_TOPIC).context(&ctx).build(),
            points: ChannelBuilder::new(POINTS_TOPIC).context(&ctx).build(),
            ctx,
            server: Some(server),
            raw: Mutex::new(BTreeMap::new()),
            subscribed,
            geometry: Geometry::new(genome),
            layout: Layout::from_genome(genome),
            config: config.clone(),
            url,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether a client is subscribed to the scene or the fired neurons.
    pub fn watched(&self) -> bool {
        self.scene.has_sinks() || self.points.has_sinks()
    }

    /// Wait until a client has subscribed to a channel (or `stop` is set).
    pub fn wait_for_client(&self, stop: &AtomicBool) {
        tracing::info!("view: waiting for a client on {}", self.url);
        while !self.subscribed.0.load(Ordering::Acquire) && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // the rest of the client's subscriptions arrive with the first
        std::thread::sleep(Duration::from_millis(300));
    }

    /// One frame: the scene (fired count per area, None where not read back) and the fired
    /// neurons (read back, ascending).
    pub fn frame(&self, time_ns: u64, per_area: &[Option<u32>], fired: &[u32]) {
        let (scene, points) = frame_messages(&self.geometry, &self.layout, self.config.max_points, time_ns, per_area, fired);
        self.send(&scene, &points, time_ns);
    }

    /// Send a frame built elsewhere (a replay records the same one).
    pub fn send(&self, scene: &SceneUpdate, points: &PointCloud, time_ns: u64) {
        self.scene.log_with_time(scene, time_ns);
        self.points.log_with_time(points, time_ns);
    }

    /// Advertise `topic` (ROS type `type_name`) to the clients now. Call it for every topic the
    /// view will show before a client connects: foxglove 0.30's server sends a new channel's
    /// advertisement to the connected clients before it records the channel as theirs, so a client
    /// that answers at once is refused ("Unknown channel ID") and never sees the topic; channels
    /// that exist when a client connects are advertised before its requests are read.
    pub fn advertise(&self, topic: &str, type_name: &str) {
        if let Ok(mut raw) = self.raw.lock() {
            Self::channel(&self.ctx, &mut raw, topic, type_name);
        }
    }

    /// The channel of `topic`, made (and advertised) the first time.
    fn channel<'a>(ctx: &Arc<Context>, raw: &'a mut BTreeMap<String, Shown>, topic: &str, type_name: &str) -> Option<&'a mut Shown> {
        if !raw.contains_key(topic) {
            let Some(info) = registry::lookup(type_name) else {
                tracing::warn!("view: {topic}: no schema for {type_name}");
                return None;
            };
            let schema = Schema::new(info.name, "ros2msg", msg_definition(&info).into_bytes());
            match ChannelBuilder::new(topic).context(ctx).message_encoding("cdr").schema(schema).build_raw() {
                Ok(c) => {
                    raw.insert(topic.to_string(), (c, None));
                }
                Err(e) => {
                    tracing::warn!("view: cannot advertise {topic}: {e}");
                    return None;
                }
            }
        }
        raw.get_mut(topic)
    }

    /// A ROS message (CDR) on `topic` of type `type_name` (advertised the first time: see
    /// [`View::advertise`]); `limit`: at most `rate_hz` per second on this topic (sensor
    /// streams), the rest skipped.
    pub fn ros(&self, topic: &str, type_name: &str, cdr: &[u8], time_ns: u64, limit: bool) {
        let Ok(mut raw) = self.raw.lock() else { return };
        let Some(entry) = Self::channel(&self.ctx, &mut raw, topic, type_name) else { return };
        if !entry.0.has_sinks() {
            return;
        }
        if limit {
            let now = Instant::now();
            if entry.1.is_some_and(|t| now - t < crate::time::seconds(1.0 / self.config.rate_hz)) {
                return;
            }
            entry.1 = Some(now);
        }
        entry.0.log_with_meta(cdr, foxglove::PartialMetadata { log_time: Some(time_ns) });
    }
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "View({})", self.url)
    }
}

impl Drop for View {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            // give the clients the last messages, then close
            std::thread::sleep(Duration::from_millis(200));
            let _ = s.stop();
        }
    }
}

/// The scene and points of a frame (what [`View::frame`] sends and a replay records).
pub fn frame_messages(
    g: &Geometry,
    layout: &Layout,
    max_points: usize,
    time_ns: u64,
    per_area: &[Option<u32>],
    fired: &[u32],
) -> (SceneUpdate, PointCloud) {
    (scene::scene(g, time_ns, per_area), scene::points(g, layout, time_ns, fired, max_points))
}

/// A frame handed from the burst thread to the view's thread.
struct Frame {
    time_ns: u64,
    fired: Vec<u32>,
}

/// The burst thread's side of the live view: [`Feed::wanted`] is one atomic load; a frame (the
/// fired ids, copied) is handed over only when the view asked for one, never waiting.
pub struct Feed {
    want: Arc<AtomicBool>,
    tx: SyncSender<Frame>,
}

impl Feed {
    pub fn wanted(&self) -> bool {
        self.want.load(Ordering::Relaxed)
    }

    /// Hand over a frame: the burst's time and the fired neurons read back (ascending).
    pub fn offer(&self, time_ns: u64, fired: &[u32]) {
        self.want.store(false, Ordering::Relaxed);
        let _ = self.tx.try_send(Frame { time_ns, fired: fired.to_vec() });
    }
}

/// Fired neurons per area: counted where `read_back[a]`, None elsewhere.
fn per_area(layout: &Layout, read_back: &[bool], fired: &[u32]) -> Vec<Option<u32>> {
    let mut counts: Vec<Option<u32>> = read_back.iter().map(|&r| r.then_some(0)).collect();
    for &n in fired {
        if let Some(c) = counts.get_mut(layout.area_of(n)).and_then(|c| c.as_mut()) {
            *c += 1;
        }
    }
    counts
}

/// Start the view's thread for a live node: every 1 / `rate_hz`, while a client watches, it asks
/// the burst thread for a frame, counts it per area and sends it. `read_back`: the areas the
/// backend reads back.
pub fn feed(view: Arc<View>, read_back: Vec<bool>, stop: Arc<AtomicBool>) -> anyhow::Result<Feed> {
    let (tx, rx) = sync_channel::<Frame>(1);
    let want = Arc::new(AtomicBool::new(false));
    let w = want.clone();
    std::thread::Builder::new()
        .name("view".into())
        .spawn(move || run(view, rx, w, stop, read_back))
        .context("cannot start the view's thread")?;
    Ok(Feed { want, tx })
}

fn run(view: Arc<View>, rx: Receiver<Frame>, want: Arc<AtomicBool>, stop: Arc<AtomicBool>, read_back: Vec<bool>) {
    let period = crate::time::seconds(1.0 / view.config.rate_hz);
    while !stop.load(Ordering::Relaxed) {
        if !view.watched() {
            std::thread::sleep(period);
            continue;
        }
        want.store(true, Ordering::Relaxed);
        let asked = Instant::now();
        match rx.recv_timeout(period.max(Duration::from_millis(100))) {
            Ok(f) => view.frame(f.time_ns, &per_area(&view.layout, &read_back, &f.fired), &f.fired),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if let Some(rest) = period.checked_sub(asked.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_topics_name_a_known_type() {
        let ok: ViewConfig = serde_yaml::from_str("topics: [{topic: /odom, type: nav_msgs/msg/Odometry}]").unwrap();
        assert!(ok.check().is_ok());
        let bad: ViewConfig = serde_yaml::from_str("topics: [{topic: /odom, type: nav_msgs/msg/Odometr}]").unwrap();
        let (key, why) = bad.check().unwrap_err();
        assert_eq!(key, "view.topics");
        assert!(why.starts_with("/odom: unknown message type \"nav_msgs/msg/Odometr\""), "{why}");
    }

    #[test]
    fn a_frame_counts_the_fired_neurons_of_the_areas_read_back() {
        let genome = Genome::from_yaml_str(include_str!("../../examples/diffdrive/genome.yaml")).unwrap();
        let layout = Layout::from_genome(&genome);
        let (tx, rx) = sync_channel(1);
        let read_back: Vec<bool> = (0..layout.meta.len()).map(|a| a % 2 == 0).collect();
        let feed = Feed { want: Arc::new(AtomicBool::new(true)), tx };
        assert!(feed.wanted());
        let fired: Vec<u32> = (0..layout.meta.len()).filter(|a| a % 2 == 0).map(|a| layout.params[a].first).collect();
        feed.offer(7, &fired);
        assert!(!feed.wanted(), "one frame per request");
        let f = rx.try_recv().unwrap();
        assert_eq!(f.time_ns, 7);
        for (a, c) in per_area(&layout, &read_back, &f.fired).iter().enumerate() {
            assert_eq!(*c, read_back[a].then_some(1), "area {a}");
        }
        // a full slot drops the frame instead of waiting
        feed.offer(8, &fired);
        feed.offer(9, &fired);
        assert_eq!(rx.try_recv().unwrap().time_ns, 8);
    }

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("").unwrap(), ("127.0.0.1".into(), 8765));
        assert_eq!(parse_addr("[::1]:9000").unwrap(), ("::1".into(), 9000));
        assert!(parse_addr("localhost").is_err());
    }
}
