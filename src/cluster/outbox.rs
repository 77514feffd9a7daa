//! What a shard sends to its peers: the put itself, and the last messages kept for resending.

use ::zenoh::qos::{CongestionControl, Priority};
use ::zenoh::sample::Locality;
use ::zenoh::{Session, Wait};

use super::options::ClusterError;

/// Put `bytes` on `key` for the peers: reliable, real-time priority, not batched.
pub(super) fn put(session: &Session, key: &str, bytes: &[u8]) -> Result<(), ClusterError> {
    session
        .put(key, bytes)
        .congestion_control(CongestionControl::Block)
        .priority(Priority::RealTime)
        .express(true)
        .allowed_destination(Locality::Remote)
        .wait()
        .map_err(|e| ClusterError::Zenoh(format!("put {key}: {e}")))
}

/// The messages a shard sent last, kept encoded so that they can be sent again: its spikes of
/// the last two bursts and, on the io shard, the last two inputs of each shard. A peer that missed
/// one is at most one burst behind, and receivers drop what they already have.
pub(super) struct Outbox {
    /// (key, bytes) by burst % 2.
    pub spikes: [(String, Vec<u8>); 2],
    /// inputs[k][burst % 2]: (key, bytes).
    pub inputs: Vec<[(String, Vec<u8>); 2]>,
}

impl Outbox {
    pub fn new(n: usize) -> Outbox {
        Outbox { spikes: Default::default(), inputs: vec![Default::default(); n] }
    }

    /// Forget everything (a new epoch: what was sent before is of no use to anyone).
    pub fn clear(&mut self) {
        for (k, _) in self.spikes.iter_mut().chain(self.inputs.iter_mut().flatten()) {
            k.clear();
        }
    }

    pub fn all(&self) -> impl Iterator<Item = &(String, Vec<u8>)> {
        self.spikes.iter().chain(self.inputs.iter().flatten()).filter(|(k, _)| !k.is_empty())
    }
}
