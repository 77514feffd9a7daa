//! The live node's sensor slots, off the burst thread. Per subscribed topic: a slot where the
//! latest sample wins (transport callbacks put samples in), and a thread that encodes the latest
//! sample with the topic's encoders as soon as it arrives and leaves the result in a cell, where
//! the latest result wins too. The burst thread only takes the results out (a pointer swap): a
//! camera frame's decoding and encoding never delays a burst, and a transport callback never
//! shares a lock with the burst thread. Samples and results that never reach a burst are counted.
//! Under simulated time a burst first lets every slot settle ([`Slot::settle`]): the samples that
//! came before the clock that lets it run are encoded, so the burst takes them, run after run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::fatal::Fatal;
use crate::encode::{encode_sorted, Encoder, News};
use crate::model::Injection;
use crate::run::intake::TopicCounters;
use crate::run::pace::Wake;
use crate::transport::{AttachmentStatus, Sample, SampleHandler};

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A sensor message encoded: one injection per encoder of its topic (configuration order), or
/// the error that dropped it.
pub struct Encoded {
    pub injections: Result<Vec<Vec<Injection>>, String>,
    /// When the transport handed the sample over.
    pub received: Instant,
}

/// A topic whose messages start reflex bursts: the encoder wakes `wake` (reflex mode's) after
/// each, or with `on_change` after each whose encoding differs from the last that did.
pub struct Trigger {
    pub wake: Arc<Wake>,
    pub on_change: bool,
}

pub struct Slot {
    pub topic: String,
    latest: Mutex<Option<Sample>>,
    arrived: Condvar,
    /// A sample waits in `latest` (what a busy-polling encoder watches).
    ready: AtomicBool,
    closed: AtomicBool,
    /// Samples stored in `latest`, and of those, the ones encoded or replaced unencoded: the slot
    /// has settled when the two are equal.
    stored: AtomicU64,
    settled: AtomicU64,
    encoded: Mutex<Option<Encoded>>,
    /// The topic's counters, shared with the intake.
    pub counters: Arc<TopicCounters>,
    /// The latest encoding error.
    pub last_error: Mutex<Option<String>>,
    /// The live view, shown every message the encoder read (at most `view.rate_hz` per second).
    pub view: std::sync::OnceLock<Arc<crate::view::View>>,
    /// The largest message taken (`node.max_message_size`): a larger one is dropped undecoded.
    max_bytes: u64,
}

impl Slot {
    /// The slot of `topic`, whose messages are at most `max_bytes` long.
    pub fn new(topic: &str, counters: Arc<TopicCounters>, max_bytes: u64) -> Arc<Slot> {
        Arc::new(Slot {
            topic: topic.to_string(),
            latest: Mutex::new(None),
            arrived: Condvar::new(),
            ready: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            stored: AtomicU64::new(0),
            settled: AtomicU64::new(0),
            encoded: Mutex::new(None),
            counters,
            last_error: Mutex::new(None),
            view: std::sync::OnceLock::new(),
            max_bytes,
        })
    }

    /// Store `sample`, replacing an unencoded older one.
    pub fn put(&self, sample: Sample) {
        self.counters.received.add(1);
        if matches!(sample.attachment, AttachmentStatus::Missing | AttachmentStatus::Malformed) {
            self.counters.bad_attachment.add(1);
            return;
        }
        if sample.payload.len() as u64 > self.max_bytes {
            self.counters.malformed.add(1);
            let why = format!("a message of {} bytes, more than node.max_message_size ({} bytes)", sample.payload.len(), self.max_bytes);
            *locked(&self.last_error) = Some(why);
            return;
        }
        self.stored.fetch_add(1, Ordering::AcqRel);
        let old = {
            let mut g = locked(&self.latest);
            self.ready.store(true, Ordering::Release);
            g.replace(sample)
        };
        self.arrived.notify_one();
        if old.is_some() {
            self.counters.replaced.add(1);
            self.settled.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Wait until every sample stored so far has been encoded (or replaced), at most until
    /// `until`; whether it settled. `wake` is the encoders' (it moves after each encoding).
    pub fn settle(&self, wake: &Wake, until: Instant) -> bool {
        let stored = self.stored.load(Ordering::Acquire);
        loop {
            let seen = wake.seq();
            if self.settled.load(Ordering::Acquire) >= stored {
                return true;
            }
            if self.closed.load(Ordering::Relaxed) || Instant::now() >= until {
                return false;
            }
            wake.wait(seen, until);
        }
    }

    /// The next sample to encode; None once the slot is closed. `busy`: spin until it comes
    /// instead of sleeping.
    fn next(&self, busy: bool) -> Option<Sample> {
        while busy && !self.ready.load(Ordering::Acquire) && !self.closed.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        let mut g = locked(&self.latest);
        loop {
            if self.closed.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(s) = g.take() {
                self.ready.store(false, Ordering::Release);
                return Some(s);
            }
            g = self.arrived.wait_timeout(g, Duration::from_millis(100)).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// The latest encoded message, if one came since the last call.
    pub fn take(&self) -> Option<Encoded> {
        locked(&self.encoded).take()
    }

    fn set_encoded(&self, e: Encoded) {
        if locked(&self.encoded).replace(e).is_some() {
            self.counters.replaced.add(1);
        }
    }

    /// Stop the slot's encoder thread.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let _g = locked(&self.latest);
        self.arrived.notify_all();
    }

    /// The transport callback feeding this slot.
    pub fn handler(self: &Arc<Self>) -> SampleHandler {
        let slot = self.clone();
        Arc::new(move |s| slot.put(s))
    }

    /// Start the thread that encodes this slot's samples with `encoders` (messages of type
    /// `type_name`) and wakes `wake` after each, and `trigger`'s after each that starts a reflex;
    /// `busy`: it polls for samples instead of sleeping.
    pub fn spawn_encoder(
        self: &Arc<Self>,
        mut encoders: Vec<Encoder>,
        type_name: &'static str,
        (wake, trigger): (Arc<Wake>, Option<Trigger>),
        busy: bool,
        fatal: Arc<Fatal>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let slot = self.clone();
        let name = format!("encode {}", self.topic);
        let mut news = News::default();
        std::thread::Builder::new().name(name.chars().take(15).collect()).spawn(move || {
            let who = format!("the encoder of {}", slot.topic);
            fatal.guard(&who, || slot.encode_all(&mut encoders, type_name, (&wake, &trigger), busy, &mut news));
            // a dead encoder settles nothing more: a burst waiting for it goes on (and ends)
            slot.close();
            wake.notify();
        })
    }

    /// The encoder thread's loop: every sample, until the slot is closed.
    fn encode_all(
        &self,
        encoders: &mut [Encoder],
        type_name: &'static str,
        (wake, trigger): (&Wake, &Option<Trigger>),
        busy: bool,
        news: &mut News,
    ) {
        let slot = self;
        while let Some(sample) = slot.next(busy) {
            // sorted here, off the burst thread
            let injections = encode_sorted(encoders, type_name, &sample.payload).map_err(|e| e.to_string());
            if let Err(e) = &injections {
                slot.counters.malformed.add(1);
                *locked(&slot.last_error) = Some(e.clone());
            }
            let starts = match (&trigger, &injections) {
                (Some(t), Ok(now)) => !t.on_change || news.changed(now),
                _ => false,
            };
            slot.set_encoded(Encoded { injections, received: sample.received });
            slot.settled.fetch_add(1, Ordering::AcqRel);
            wake.notify();
            if let (true, Some(t)) = (starts, &trigger) {
                t.wake.notify();
            }
            if let Some(view) = slot.view.get() {
                view.ros(&slot.topic, type_name, &sample.payload, crate::run::pace::system_now_ns(), true);
            }
        }
    }
}

/// A subscribed sensor topic: the intake's key, its slot, its encoder thread.
pub struct Input {
    /// The topic as configured: the intake's key.
    pub key: String,
    /// The topic's ROS type.
    pub type_name: &'static str,
    pub slot: Arc<Slot>,
    pub(super) encoder: Option<std::thread::JoinHandle<()>>,
}

/// The subscribed sensor topics, and what the current burst took from them.
pub struct Sensors {
    pub inputs: Vec<Input>,
    /// Moves after every sensor message encoded.
    wake: Arc<Wake>,
    /// Arrivals of the messages taken for the current burst.
    arrivals: Vec<Instant>,
}

impl Sensors {
    /// The topics of `inputs`, whose encoders move `wake`.
    pub fn new(inputs: Vec<Input>, wake: Arc<Wake>) -> Sensors {
        Sensors { inputs, wake, arrivals: Vec::with_capacity(64) }
    }

    /// Hand `intake` the messages encoded since the last burst (at ROS time `now_ns`).
    pub fn take_latest(&mut self, intake: &mut crate::run::Intake, now_ns: u64) {
        self.arrivals.clear();
        for input in &self.inputs {
            if let Some(e) = input.slot.take() {
                self.arrivals.push(e.received);
                intake.offer_encoded(&input.key, e.injections, now_ns);
            }
        }
    }

    /// Arrivals of the messages the current burst took.
    pub fn arrivals(&self) -> &[Instant] {
        &self.arrivals
    }

    /// Wait until every message received so far is encoded, at most `wait` (burst `t` goes on
    /// without one still being encoded then, said in a warning).
    pub fn settle(&self, t: u64, wait: Duration) {
        let until = Instant::now() + wait;
        for i in &self.inputs {
            if !i.slot.settle(&self.wake, until) {
                tracing::warn!("{}: a message still being encoded after {wait:?}: burst {t} goes on without it", i.slot.topic);
            }
        }
    }

    /// Close every slot and wait for the encoder threads.
    pub fn close(&mut self) {
        for i in &mut self.inputs {
            i.slot.close();
            if let Some(t) = i.encoder.take() {
                let _ = t.join();
            }
        }
    }

    /// Show every sensor message in the live view.
    pub fn set_view(&self, view: &Arc<crate::view::View>) {
        for i in &self.inputs {
            view.advertise(&i.slot.topic, i.type_name);
            let _ = i.slot.view.set(view.clone());
        }
    }

    /// Sensor messages dropped and, of those, malformed, since the start.
    pub fn dropped(&self) -> (u64, u64) {
        let slots = self.inputs.iter().map(|i| &i.slot);
        (slots.clone().map(|s| s.counters.lost()).sum(), slots.map(|s| s.counters.malformed.get()).sum())
    }

    /// Messages received per topic.
    pub fn received(&self) -> serde_json::Map<String, serde_json::Value> {
        self.inputs.iter().map(|i| (i.slot.topic.clone(), i.slot.counters.received.get().into())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::EncoderConfig;
    use crate::model::Layout;

    fn sample(a: AttachmentStatus, p: u8) -> Sample {
        Sample { topic: "/scan".into(), payload: vec![p], attachment: a, received: Instant::now() }
    }

    #[test]
    fn latest_wins_and_losses_are_counted() {
        let s = Slot::new("/scan", Arc::default(), 4);
        // a message larger than the topic takes: dropped undecoded, counted, said why
        s.put(Sample { payload: vec![0; 5], ..sample(AttachmentStatus::NotExpected, 0) });
        assert_eq!(s.counters.malformed.get(), 1);
        assert!(locked(&s.last_error).as_ref().unwrap().contains("5 bytes"));
        assert!(locked(&s.latest).is_none());
        s.put(sample(AttachmentStatus::NotExpected, 1));
        s.put(sample(AttachmentStatus::NotExpected, 2));
        s.put(sample(AttachmentStatus::Missing, 3));
        s.put(sample(AttachmentStatus::Malformed, 4));
        // a busy-polling encoder sees the waiting sample; then the slot is empty again
        assert_eq!(s.next(true).unwrap().payload, vec![2]);
        assert!(!s.ready.load(Ordering::Acquire));
        assert_eq!(s.counters.replaced.get(), 1);
        assert_eq!(s.counters.bad_attachment.get(), 2);
        assert_eq!(s.counters.lost(), 4);
        // two samples stored, one replaced: one is still to be encoded, and nothing encodes it
        assert!(!s.settle(&Wake::new(), Instant::now() + Duration::from_millis(20)));
    }

    #[test]
    fn the_encoder_thread_encodes_and_wakes() {
        let genome =
            crate::genome::Genome::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/genomes/rover.yaml"))).unwrap();
        let layout = Layout::from_genome(&genome);
        let config: EncoderConfig = serde_yaml::from_str("{kind: laser_scan, topic: scan, area: scan, max_range: 2.0}").unwrap();
        let encoder = Encoder::new(&config, &layout).unwrap();
        let (slot, wake) = (Slot::new("/scan", Arc::default(), 1 << 20), Wake::new());
        let thread = slot
            .spawn_encoder(vec![encoder], "sensor_msgs/msg/LaserScan", (wake.clone(), None), false, Arc::new(Fatal::new(Arc::default())))
            .unwrap();
        let seen = wake.seq();
        slot.put(sample(AttachmentStatus::NotExpected, 7));
        wake.wait(seen, Instant::now() + Duration::from_secs(10));
        assert_eq!(wake.seq(), seen + 1);
        let e = slot.take().expect("encoded");
        assert!(e.injections.is_err(), "one byte is no LaserScan");
        assert_eq!(slot.counters.malformed.get(), 1);
        assert!(slot.last_error.lock().unwrap().is_some());
        // under simulated time a burst waits for what came before its clock to be encoded
        slot.put(sample(AttachmentStatus::NotExpected, 8));
        assert!(slot.settle(&wake, Instant::now() + Duration::from_secs(10)));
        assert!(slot.take().is_some(), "settled: the sample is encoded");
        slot.close();
        thread.join().unwrap();
    }
}
