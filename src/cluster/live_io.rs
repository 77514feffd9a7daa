//! The io shard as the live node: the configuration's `encoders` read their sensor topics and its
//! `decoders` publish their motor topics over the node's transport (`node` and `zenoh` sections,
//! as `neuroburst node`), while the brain is spread over the shards. The same pieces as the live
//! node ([`crate::node`]): a slot per topic where the latest sample wins, the intake's encoders,
//! the outputs' decoders, BurstStats on `node.stats_topic`, problems logged once per interval.
//!
//! Bursts run on the live node's drift-free clock at `cluster.rate_hz`, else `node.rate_hz`, else
//! the genome's `burst_rate_hz`. A burst's motor messages go out once every shard's spikes of it
//! have come in. After a rollback (a rejoin) the brain resumes from its checkpoint while the
//! topics go on: the robot's world does not roll back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::json;

use super::io::{sort_injection, ShardIo};
use super::options::ClusterError;
use crate::config::Config;
use crate::model::{Injection, Layout};
use crate::node::topics::LiveTopics;
use crate::transport::Transport;

pub struct LiveIo {
    layout: Layout,
    topics: LiveTopics,
    rate: f64,
    burst_start: Instant,
    describe: String,
    /// Last: its subscriptions feed the slots until it is dropped.
    transport: Box<dyn Transport>,
}

impl LiveIo {
    /// Subscribe the encoders' topics and announce the decoders' on `transport`; bursts at
    /// `rate` per second.
    pub fn new(config: &Config, layout: Layout, mut transport: Box<dyn Transport>, rate: f64) -> Result<LiveIo, ClusterError> {
        let topics = LiveTopics::open(config, &layout, transport.as_mut(), rate, "the io shard")
            .map_err(|e| ClusterError::Io(format!("live topics: {}", crate::errors::said_once(&e))))?;
        Ok(LiveIo { layout, topics, rate, burst_start: Instant::now(), describe: transport.describe(), transport })
    }
}

impl ShardIo for LiveIo {
    fn describe(&self) -> String {
        format!("live topics at {} Hz over {}", self.rate, self.describe)
    }

    fn start(&mut self, c: u64) -> Result<(), ClusterError> {
        if c > 0 {
            tracing::info!("the brain resumes from burst {c}; the live topics go on");
        }
        // the publisher thread (first call), and the clock from now
        self.topics.start().map_err(|e| ClusterError::Io(format!("live topics: cannot start the publisher: {e}")))
    }

    fn pace(&mut self, _t: u64) {
        // The shard loop stops between bursts; a simulation clock that stands still holds it here.
        static NEVER: AtomicBool = AtomicBool::new(false);
        self.topics.wait(&NEVER);
        self.burst_start = Instant::now();
    }

    fn injection(&mut self, _t: u64, out: &mut Vec<Injection>) -> Result<(), ClusterError> {
        self.topics.injection_vec(out);
        sort_injection(out);
        Ok(())
    }

    fn fired(&mut self, t: u64, fired: &[u32]) -> Result<(), ClusterError> {
        let (now, blind) = (self.topics.now_ns(), self.topics.blind());
        let products = self.topics.outputs.decode(t, fired, fired.len() as u64, &self.layout, now, blind);
        self.topics.publish(products, self.burst_start);
        Ok(())
    }

    fn finish(&mut self) -> Result<serde_json::Value, ClusterError> {
        self.topics.stop(None);
        let (dropped, malformed) = self.topics.dropped();
        let published: serde_json::Map<String, serde_json::Value> =
            self.topics.report.published.iter().map(|(t, p, e)| (t.clone(), json!({"published": p, "errors": e}))).collect();
        let received: serde_json::Map<String, serde_json::Value> =
            self.topics.inputs.iter().map(|i| (i.slot.topic.clone(), i.slot.counters.received.load(Ordering::Relaxed).into())).collect();
        Ok(json!({
            "transport": self.describe,
            "received": received,
            "published": published,
            "missed_deadlines": self.topics.pace.missed(),
            "dropped_messages": dropped,
            "malformed_messages": malformed,
            "link_losses": self.transport.link_losses(),
        }))
    }
}
