//! Sensor intake: the latest message of every configured topic wins; at each burst the new ones are
//! encoded, and each encoder's injection stands until its topic's next message. A message that
//! cannot be decoded is dropped and counted (the first error of each topic is logged with the
//! topic's name); the previous injection of that topic stays. A topic silent for its encoder's
//! `stale_after` seconds stops being injected until its next message (counted, logged once): a
//! dead sensor is not injected forever. Times are nanoseconds of the caller's clock (bag time in a
//! replay, ROS or simulation time in the live node).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::encode::{Encoder, EncoderConfig};
use crate::model::{Injection, Injections, Layout};

/// A count that the intake's threads share (the live node's transport callbacks and encoder
/// threads count beside the burst thread).
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
}

impl Clone for Counter {
    fn clone(&self) -> Self {
        Counter(AtomicU64::new(self.get()))
    }
}

impl PartialEq for Counter {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// The counters of one input topic: the one set, whatever feeds the intake (a bag, the live
/// node's slots, the io shard).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopicCounters {
    /// Messages received.
    pub received: Counter,
    /// Messages encoded into an injection that a burst took.
    pub encoded: Counter,
    /// Messages (or their encodings) replaced by a newer one before a burst used them.
    pub replaced: Counter,
    /// Messages that could not be decoded or encoded: dropped.
    pub malformed: Counter,
    /// rmw_zenoh samples without a (well-formed) attachment: dropped before decoding.
    pub bad_attachment: Counter,
    /// Times the topic went stale (silent for `stale_after`) and stopped being injected.
    pub went_stale: Counter,
}

impl TopicCounters {
    /// Messages lost before a burst used them: replaced, malformed, or without a valid attachment.
    pub fn lost(&self) -> u64 {
        self.replaced.get() + self.bad_attachment.get() + self.malformed.get()
    }
}

/// Why the intake cannot start.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("{0}")]
    Config(String),
    #[error("topic {topic}: type {found} is not one the {kind} encoder accepts ({accepted})")]
    WrongType { topic: String, found: String, kind: String, accepted: String },
}

pub struct Intake {
    configs: Vec<EncoderConfig>,
    /// The encoders (None: taken out to run on a thread of their own, [`Intake::take_encoders`]).
    encoders: Vec<Option<Encoder>>,
    /// Encoder indices per topic.
    by_topic: BTreeMap<String, Vec<usize>>,
    /// Latest unencoded message per topic: (type, payload).
    pending: BTreeMap<String, (String, Vec<u8>)>,
    held: Vec<Vec<Injection>>,
    /// Per topic, shared with whatever feeds it ([`Intake::counters`]).
    pub stats: BTreeMap<String, Arc<TopicCounters>>,
    /// Errors of the first dropped message of each topic.
    pub first_errors: BTreeMap<String, String>,
    /// Error of the latest dropped message of each topic.
    pub last_errors: BTreeMap<String, String>,
    /// Log the first error of each topic (the live node logs its own way: [`Intake::quiet`]).
    log_errors: bool,
    /// Per encoder: the time of its topic's latest message (read every burst: no topic lookup).
    last_at: Vec<Option<u64>>,
    /// Per encoder: whether it was stale at the last injection.
    stale: Vec<bool>,
    /// Encoder indices in the order their injections are emitted (by first neuron).
    order: Vec<usize>,
}

impl Intake {
    pub fn new(configs: &[EncoderConfig], layout: &Layout) -> Result<Intake, IntakeError> {
        let mut encoders = Vec::new();
        let mut by_topic: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for c in configs {
            let e = Encoder::new(c, layout).map_err(|e| IntakeError::Config(e.to_string()))?;
            by_topic.entry(c.topic().to_string()).or_default().push(encoders.len());
            encoders.push(Some(e));
        }
        let stats = by_topic.keys().map(|t| (t.clone(), Arc::default())).collect();
        let held = vec![Vec::new(); encoders.len()];
        let stale = vec![false; encoders.len()];
        Ok(Intake {
            order: (0..encoders.len()).collect(),
            configs: configs.to_vec(),
            last_at: vec![None; encoders.len()],
            stale,
            encoders,
            by_topic,
            pending: BTreeMap::new(),
            held,
            stats,
            first_errors: BTreeMap::new(),
            last_errors: BTreeMap::new(),
            log_errors: true,
        })
    }

    /// Do not log errors (they are still recorded and counted).
    pub fn quiet(mut self) -> Intake {
        self.log_errors = false;
        self
    }

    /// The message types the encoders of `topic` accept (those of its first encoder).
    pub fn message_types(&self, topic: &str) -> &'static [&'static str] {
        self.by_topic.get(topic).and_then(|v| v.first()).map_or(&[], |&i| self.configs[i].message_types())
    }

    /// The configured input topics.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.by_topic.keys().map(String::as_str)
    }

    /// Check a topic's type before any message arrives (bag metadata, ROS discovery).
    pub fn check_type(&self, topic: &str, type_name: &str) -> Result<(), IntakeError> {
        for &i in self.by_topic.get(topic).into_iter().flatten() {
            let accepted = self.configs[i].message_types();
            if !accepted.contains(&type_name) {
                let kind = serde_yaml::to_value(&self.configs[i])
                    .ok()
                    .and_then(|v| v.get("kind").and_then(|k| k.as_str().map(String::from)))
                    .unwrap_or_default();
                return Err(IntakeError::WrongType { topic: topic.into(), found: type_name.into(), kind, accepted: accepted.join(", ") });
            }
        }
        Ok(())
    }

    /// A message arrived at `at_ns`. Returns false when no encoder listens to `topic`.
    pub fn offer(&mut self, topic: &str, type_name: &str, payload: &[u8], at_ns: u64) -> bool {
        let Some(stats) = self.stats.get(topic) else { return false };
        stats.received.add(1);
        for &i in &self.by_topic[topic] {
            self.last_at[i] = Some(at_ns);
        }
        if self.pending.insert(topic.to_string(), (type_name.to_string(), payload.to_vec())).is_some() {
            stats.replaced.add(1);
        }
        true
    }

    /// Encode what arrived since the last burst; `out` becomes the injection of the burst at
    /// `now_ns` (stale topics left out).
    pub fn injection(&mut self, out: &mut Injections, now_ns: u64) {
        out.clear();
        self.append_injection(out, now_ns);
    }

    /// [`Intake::injection`] added to what `out` holds. The encoders' injections come in the
    /// order of their first neuron: sorted injections onto distinct areas make an ascending
    /// whole, which a backend takes fastest (the order never changes the result).
    pub fn append_injection(&mut self, out: &mut Injections, now_ns: u64) {
        self.advance(now_ns);
        let held = &self.held;
        self.order.sort_unstable_by_key(|&i| held[i].first().map_or(u32::MAX, |x| x.neuron));
        for &i in &self.order {
            if !self.stale[i] {
                for x in &held[i] {
                    out.push(x.neuron, x.potential);
                }
            }
        }
    }

    /// Whether every input is stale at the last injection: the brain is blind, and the decoders
    /// send their stop commands. False without encoders (a brain with no inputs is never blind).
    pub fn blind(&self) -> bool {
        !self.stale.is_empty() && self.stale.iter().all(|&s| s)
    }

    /// Per topic (in the order of [`Intake::topics`]): whether one of its encoders was stale at
    /// the last injection.
    pub fn stale_flags(&self) -> Vec<bool> {
        self.by_topic.values().map(|ids| ids.iter().any(|&i| self.stale[i])).collect()
    }

    /// Mark the encoders whose topic has been silent for their `stale_after` (never heard counts
    /// as silent); count and log each change.
    fn update_stale(&mut self, now_ns: u64) {
        for (i, c) in self.configs.iter().enumerate() {
            let after = c.stale_after();
            let topic = c.topic();
            let last = self.last_at[i];
            let stale = after > 0.0 && last.is_none_or(|t| now_ns.saturating_sub(t) as f64 > after * 1e9);
            if stale == self.stale[i] {
                continue;
            }
            self.stale[i] = stale;
            if stale && last.is_some() {
                self.stats[topic].went_stale.add(1);
                tracing::warn!("topic {topic}: no message for {after} s: not injected until the next one");
            } else if !stale && self.stats[topic].went_stale.get() > 0 {
                tracing::info!("topic {topic}: messages again");
            }
        }
    }

    /// Move the encoders' state on to the burst at `now_ns` without building its injection (what
    /// [`Intake::injection`] does first): encode the new messages, mark the stale topics.
    pub fn advance(&mut self, now_ns: u64) {
        self.encode_pending();
        self.update_stale(now_ns);
    }

    /// Take the encoders of `topic` out, in configuration order, to encode its messages elsewhere
    /// (the live node runs them on a thread per topic); their results come back through
    /// [`Intake::offer_encoded`].
    pub fn take_encoders(&mut self, topic: &str) -> Vec<Encoder> {
        let Some(ids) = self.by_topic.get(topic) else { return vec![] };
        ids.iter().filter_map(|&i| self.encoders[i].take()).collect()
    }

    /// The counters of `topic`, for whatever feeds it from elsewhere (the live node's slots count
    /// the messages received, replaced and malformed where they arrive and are encoded).
    pub fn counters(&self, topic: &str) -> Option<Arc<TopicCounters>> {
        self.stats.get(topic).cloned()
    }

    /// A message of `topic` that arrived at `at_ns`, encoded elsewhere by the encoders of
    /// [`Intake::take_encoders`] (one injection each, same order), or the error that dropped it
    /// (the previous injections stand). Its arrival and a failed encoding were counted where they
    /// happened ([`Intake::counters`]); this counts it encoded. Returns false when no encoder
    /// listens to `topic`.
    pub fn offer_encoded(&mut self, topic: &str, encoded: Result<Vec<Vec<Injection>>, String>, at_ns: u64) -> bool {
        let Some(ids) = self.by_topic.get(topic) else { return false };
        for &i in ids {
            self.last_at[i] = Some(at_ns);
        }
        match encoded {
            Ok(injections) => {
                self.stats[topic].encoded.add(1);
                for (&i, inj) in ids.iter().zip(injections) {
                    self.held[i] = inj;
                }
            }
            Err(e) => {
                self.first_errors.entry(topic.to_string()).or_insert_with(|| e.clone());
                self.last_errors.insert(topic.to_string(), e);
            }
        }
        true
    }

    /// Encode the latest message of every topic that received one since the last burst.
    fn encode_pending(&mut self) {
        for (topic, (type_name, payload)) in std::mem::take(&mut self.pending) {
            let stats = &self.stats[&topic];
            let mut ok = true;
            for &i in &self.by_topic[&topic] {
                let Some(encoder) = self.encoders[i].as_mut() else { continue };
                match encoder.encode(&type_name, &payload) {
                    Ok(inj) => self.held[i] = inj,
                    Err(e) => {
                        ok = false;
                        if !self.first_errors.contains_key(&topic) {
                            if self.log_errors {
                                tracing::warn!("topic {topic}: message dropped: {e}");
                            }
                            self.first_errors.insert(topic.clone(), e.to_string());
                        }
                        self.last_errors.insert(topic.clone(), e.to_string());
                    }
                }
            }
            if ok {
                stats.encoded.add(1);
            } else {
                stats.malformed.add(1);
            }
        }
    }
}
