//! One slot per subscribed topic, where the latest sample wins: transport callbacks put samples
//! in, the burst loop takes them out (and hands them to the encoders of [`crate::node::intake`]).
//! Samples that never reach a burst are counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::transport::{AttachmentStatus, Sample, SampleHandler};

/// Counters of one topic (totals since start).
#[derive(Debug, Default)]
pub struct TopicCounters {
    pub received: AtomicU64,
    /// Replaced by a newer sample before a burst took it.
    pub replaced: AtomicU64,
    /// rmw_zenoh samples without a (well-formed) attachment: dropped.
    pub bad_attachment: AtomicU64,
}

pub struct Slot {
    pub topic: String,
    latest: Mutex<Option<Sample>>,
    pub counters: TopicCounters,
}

impl Slot {
    pub fn new(topic: &str) -> Arc<Slot> {
        Arc::new(Slot { topic: topic.to_string(), latest: Mutex::new(None), counters: TopicCounters::default() })
    }

    /// Store `sample`, replacing an unused older one.
    pub fn put(&self, sample: Sample) {
        self.counters.received.fetch_add(1, Ordering::Relaxed);
        if matches!(sample.attachment, AttachmentStatus::Missing | AttachmentStatus::Malformed) {
            self.counters.bad_attachment.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let old = self.latest.lock().unwrap_or_else(|p| p.into_inner()).replace(sample);
        if old.is_some() {
            self.counters.replaced.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Take the latest sample, if a new one arrived since the last call.
    pub fn take(&self) -> Option<Sample> {
        self.latest.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The transport callback feeding this slot.
    pub fn handler(self: &Arc<Self>) -> SampleHandler {
        let slot = self.clone();
        Arc::new(move |s| slot.put(s))
    }

    /// Messages lost before any encoder saw them: replaced, or without a valid attachment.
    pub fn lost(&self) -> u64 {
        let c = &self.counters;
        c.replaced.load(Ordering::Relaxed) + c.bad_attachment.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sample(a: AttachmentStatus, p: u8) -> Sample {
        Sample { topic: "/scan".into(), payload: vec![p], attachment: a, received: Instant::now() }
    }

    #[test]
    fn latest_wins_and_losses_are_counted() {
        let s = Slot::new("/scan");
        s.put(sample(AttachmentStatus::NotExpected, 1));
        s.put(sample(AttachmentStatus::NotExpected, 2));
        s.put(sample(AttachmentStatus::Missing, 3));
        s.put(sample(AttachmentStatus::Malformed, 4));
        assert_eq!(s.take().unwrap().payload, vec![2]);
        assert!(s.take().is_none());
        assert_eq!(s.counters.replaced.load(Ordering::Relaxed), 1);
        assert_eq!(s.counters.bad_attachment.load(Ordering::Relaxed), 2);
        assert_eq!(s.lost(), 3);
    }
}
